"""The workbook's commands beyond ``lab`` and ``test`` (``python3 workbook.py ...`` runs ``python -m tools.cli ...``).

    student-copies [DIR]      student copies of every notebook (solutions removed) in DIR (student/)
    progress                  which exercises of which notebook pass, for this learner
    class list                the class's workbook databases on MONGODB_URI, with their sizes
    class drop [DB ...]       list what `class drop --yes` would drop (all databases, or the named ones)
    class drop [DB ...] --yes drop the workbook's collections, and each database left empty; a
                              student's own collections stay (an instructor's login only)
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
        try:
            print(progress.report())
        except progress.ProgressError as e:
            print(e, file=sys.stderr)
            return 2
        return 0
    if cmd == "class" and rest[:1] in (["list"], ["drop"]):
        try:
            return _class(rest[0], rest[1:])
        except classdb.ClassError as e:
            print(e, file=sys.stderr)
            return 2
    if cmd == "html":
        out = Path(rest[0]) if rest else ROOT / "site"
        pages = html.build_html(out)
        print(f"wrote {len(pages)} pages; open {pages[0]}")
        return 0
    print(__doc__)
    return 2


def _class(sub: str, rest: list[str]) -> int:
    from pymongo.errors import PyMongoError

    client = _client()
    try:
        if sub == "list":
            rows = classdb.workbook_databases(client)
            for r in rows:
                print(f"{r['database']:<50} {r['collections']:>4} collections  {human_bytes(r['data bytes']):>10} data"
                      f"  {human_bytes(r['storage bytes']):>10} on disk")
            print(f"{len(rows)} workbook databases")
            return 0
        names = [a for a in rest if not a.startswith("--")] or None
        yes = "--yes" in rest
        if yes:  # the login first: a student's is refused before anything is looked at or dropped
            print(classdb.check_instructor(client))
        plan = classdb.drop_plan(client, names)
        if not yes:
            for name, what in plan.items():
                print(f"{name}: would drop {', '.join(what['drop']) or 'no collection'}"
                      + (f"; keeps {', '.join(what['keep'])} (not the workbook's)" if what["keep"] else
                         "; then the database, left empty"))
            print(f"{len(plan)} workbook databases. Nothing was dropped: add --yes to drop exactly these "
                  f"(an instructor's login only).")
            return 2
        kept = classdb.drop_workbook_databases(client, list(plan), check=False)
        for name, others in kept.items():
            print(f"{name}: dropped {', '.join(plan[name]['drop']) or 'no collection'}"
                  + ("; database dropped" if not others else f"; kept (not the workbook's): {', '.join(others)}"))
        print(f"{len(kept)} workbook databases cleaned")
        return 0
    except PyMongoError as e:
        from helpers.uri import scrub

        raise classdb.ClassError(f"The server refused the class command ({type(e).__name__}: "
                                 f"{scrub(str(e), settings.mongodb_uri() or '')[:300]}); nothing more was done.") from None
    finally:
        client.close()


def run(argv: list[str]) -> int:
    """:func:`main`, with a file the command cannot read or write said in a sentence, not a traceback."""
    try:
        return main(argv)
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"{where}{e.strerror or e}. Check the path and its permissions, then run the command again.",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
