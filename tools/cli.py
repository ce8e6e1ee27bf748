"""The workbook's commands beyond ``lab`` and ``test`` (``python3 workbook.py ...`` runs ``python -m tools.cli ...``).

    student-copies [DIR]      student copies of every notebook (solutions removed) in DIR (student/)
    progress                  which exercises of which notebook pass, for this learner
    class list                the class's workbook databases on MONGODB_URI, with their sizes
    class drop [DB ...] --yes drop the workbook's collections (all databases, or the named ones),
                              and each database left empty; a student's own collections stay
    html [DIR]                a static HTML build of the executed notebooks in DIR (site/)
    advise [--json] [--database NAME] [--profile] [--demo] ...
                              review a database for schema anti-patterns, read only (tools/advise.py)
"""
from __future__ import annotations

import sys
from pathlib import Path

from helpers import settings
from helpers.sizes import human_bytes
from tools import classdb, html, progress, student
from tools.repo import ROOT


def _client():
    from helpers.backends import BackendError, _connect_uri, redact_uri

    uri = settings.mongodb_uri()
    if not uri:
        raise SystemExit("Set MONGODB_URI to the class's server first, e.g. MONGODB_URI=mongodb://lab-server:27017")
    try:
        client, engine, version = _connect_uri(uri, "admin")
    except BackendError as e:
        raise SystemExit(str(e)) from None
    print(f"server: {redact_uri(uri)} ({engine} {version})")
    return client


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "advise":
        from tools import advise
        return advise.main(rest)
    if cmd == "student-copies":
        out = Path(rest[0]) if rest else ROOT / "student"
        for path in student.build_student_copies(out):
            print("wrote", path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
        return 0
    if cmd == "progress":
        print(progress.report())
        return 0
    if cmd == "class" and rest[:1] == ["list"]:
        rows = classdb.workbook_databases(_client())
        for r in rows:
            print(f"{r['database']:<50} {r['collections']:>4} collections  {human_bytes(r['data bytes']):>10} data"
                  f"  {human_bytes(r['storage bytes']):>10} on disk")
        print(f"{len(rows)} workbook databases")
        return 0
    if cmd == "class" and rest[:1] == ["drop"]:
        names = [a for a in rest[1:] if not a.startswith("--")]
        if "--yes" not in rest:
            print("This drops workbook databases for good. Add --yes to confirm (and list names to drop only those).")
            return 2
        kept = classdb.drop_workbook_databases(_client(), names or None)
        for name, others in kept.items():
            print(f"{name}: " + ("dropped" if not others else
                                 f"workbook collections dropped; kept (not the workbook's): {', '.join(others)}"))
        print(f"{len(kept)} workbook databases cleaned")
        return 0
    if cmd == "html":
        out = Path(rest[0]) if rest else ROOT / "site"
        pages = html.build_html(out)
        print(f"wrote {len(pages)} pages; open {pages[0]}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
