"""Classroom kit: a database per student, the instructor's list and drop, student copies, progress.

Used by ``python3 workbook.py student-copies | progress | class list | class drop | html``
(see the README's "Teaching with the workbook"). On a shared server each student's work lives in
its own database, named without any set-up by the student:

* ``schema_workbook_<user>_<4 hex>`` when ``MONGODB_URI`` carries a user name (one login per
  student; the hex digits come from the exact name, so ``Ana`` and ``ana`` never share);
* ``schema_workbook_<os user>_<4 hex of login and machine>`` otherwise (a shared class login on
  thirty lab machines still gives thirty databases).

``WORKBOOK_DB`` overrides the name. Offline engines keep ``schema_workbook``: they are private.
"""
from __future__ import annotations

import copy
import getpass
import hashlib
import json
import os
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .safety import REGISTRY

__all__ = ["DB_PREFIX", "student_db_name", "workbook_databases", "drop_workbook_databases",
           "student_copy", "build_student_copies", "record_progress", "progress", "progress_file",
           "build_html", "simulate_class"]

DB_PREFIX = "schema_workbook"
ROOT = Path(__file__).resolve().parent.parent


def _slug(text: str, n: int = 24) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:n] or "student"


def student_db_name(uri: str | None = None, *, user: str | None = None, host: str | None = None) -> str:
    """The database of this student on a shared server (see the module docstring)."""
    m = re.match(r"^mongodb(?:\+srv)?://([^:@/?]+)(?::[^?]*)?@", (uri or "").strip())
    if m and user is None:
        login = unquote(m.group(1))
        return f"{DB_PREFIX}_{_slug(login, 30)}_{_tag(login)}"
    user = user if user is not None else _os_user()
    host = host if host is not None else socket.gethostname()
    return f"{DB_PREFIX}_{_slug(user)}_{_tag(user + '@' + host)}"


def _tag(text: str) -> str:
    """4 hex digits of the exact text: 'Ana' and 'ana', or 'ana.lopez' and 'ana_lopez', differ."""
    return hashlib.sha256(text.encode()).hexdigest()[:4]


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers)
        return "student"


def workbook_databases(client: Any) -> list[dict[str, Any]]:
    """The workbook's databases on a server: named ``schema_workbook*`` *and* holding the registry.

    A database that merely shares the prefix but was not made by the workbook is never listed.
    """
    out = []
    for name in sorted(client.list_database_names()):
        if not name.startswith(DB_PREFIX):
            continue
        db = client[name]
        if REGISTRY not in db.list_collection_names():
            continue
        stats = db.command("dbStats")
        out.append({"database": name, "collections": len(db[REGISTRY].distinct("_id")),
                    "data bytes": int(stats.get("dataSize", 0)),
                    "storage bytes": int(stats.get("storageSize", 0)) + int(stats.get("indexSize", 0))})
    return out


def drop_workbook_databases(client: Any, names: list[str] | None = None) -> dict[str, list[str]]:
    """End of term: in each listed workbook database (all if ``names`` is None), drop what the
    workbook created; drop the database itself only when nothing else is left in it.

    Returns, per database, the collections kept because the workbook did not create them (a
    database with an empty list is gone). Refuses a name :func:`workbook_databases` does not list.
    """
    from .safety import reset_workbook

    ours = {d["database"] for d in workbook_databases(client)}
    targets = sorted(ours) if names is None else list(names)
    foreign = [n for n in targets if n not in ours]
    if foreign:
        raise ValueError(f"not workbook databases (no {REGISTRY!r} collection or another prefix), "
                         f"left alone: {', '.join(foreign)}")
    kept: dict[str, list[str]] = {}
    for name in targets:
        db = client[name]
        reset_workbook(db)
        kept[name] = sorted(db.list_collection_names())
        if not kept[name]:
            client.drop_database(name)
    return kept


# ---------------------------------------------------------------------------------------------
# student copies

def student_copy(nb: dict) -> dict:
    """The notebook without its ``solution`` cells, outputs cleared; every other cell identical."""
    out = copy.deepcopy(nb)
    out["cells"] = [c for c in out["cells"] if "solution" not in c.get("metadata", {}).get("tags", [])]
    for c in out["cells"]:
        if c["cell_type"] == "code":
            c["outputs"] = []
            c["execution_count"] = None
    return out


def build_student_copies(out_dir: Path | str = ROOT / "student", src_dir: Path | str = ROOT / "notebooks") -> list[Path]:
    """Write a student copy of every notebook into ``out_dir``; returns their paths."""
    out_dir, src_dir = Path(out_dir), Path(src_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted(src_dir.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(src.read_text(encoding="utf-8"))
        dest = out_dir / src.name
        dest.write_text(json.dumps(student_copy(nb), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(dest)
    return written


# ---------------------------------------------------------------------------------------------
# progress: which exercises of which notebook pass

def progress_file() -> Path:
    """``WORKBOOK_PROGRESS`` if set, else ``~/.schema_workbook/progress.json``."""
    return Path(os.environ.get("WORKBOOK_PROGRESS") or Path.home() / ".schema_workbook" / "progress.json")


def _notebook_name(exercise: str) -> str:
    session = os.environ.get("JPY_SESSION_NAME", "")  # set by Jupyter for the notebook's kernel
    if session.endswith(".ipynb"):
        return Path(session).stem
    m = re.match(r"^(\d+)", exercise)
    return f"notebook {int(m.group(1)):02d}" if m else "notebook ?"


def record_progress(exercise: str, passed: bool) -> None:
    """Remember the latest result of an exercise (never raises: progress is a convenience)."""
    try:
        path = progress_file()
        data = json.loads(path.read_text()) if path.exists() else {}
        data.setdefault(_notebook_name(exercise), {})[exercise] = bool(passed)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except Exception:
        pass


def progress() -> dict[str, dict[str, bool]]:
    """Every recorded exercise result, by notebook."""
    path = progress_file()
    return json.loads(path.read_text()) if path.exists() else {}


# ---------------------------------------------------------------------------------------------
# a static, executed HTML build

def build_html(out_dir: Path | str = ROOT / "site", src_dir: Path | str = ROOT / "notebooks") -> list[Path]:
    """Render every committed (executed) notebook to HTML, with an index page."""
    import nbformat
    from nbconvert import HTMLExporter

    out_dir, src_dir = Path(out_dir), Path(src_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter()
    pages = []
    items = []
    for src in sorted(src_dir.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(src, as_version=4)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": src.stem}})
        dest = out_dir / f"{src.stem}.html"
        dest.write_text(body, encoding="utf-8")
        pages.append(dest)
        title = next((c.source.splitlines()[0].lstrip("# ").strip() for c in nb.cells
                      if c.cell_type == "markdown" and c.source.strip()), src.stem)
        items.append(f'<li><a href="{dest.name}">{title}</a></li>')
    index = out_dir / "index.html"
    index.write_text("<!doctype html><meta charset='utf-8'><title>MongoDB schema design, learned by measuring it"
                     "</title><h1>MongoDB schema design, learned by measuring it</h1>"
                     "<p>Executed notebooks, outputs as produced on the embedded backend.</p><ul>"
                     + "".join(items) + "</ul>\n", encoding="utf-8")
    return [index, *pages]


# ---------------------------------------------------------------------------------------------
# can the server take the class? thirty students at once on the outlier notebook's paths

def simulate_class(uri: str, students: int = 30, posts: int = 3, comments: int = 40, threshold: int = 10,
                   prefix: str = "schema_workbook_loadtest") -> dict[str, Any]:
    """Run ``students`` simulated students at once against ``uri``, each in their own database.

    Each student (a thread with its own client, like a kernel) creates ``posts`` posts and adds
    ``comments`` comments to each through the outlier pattern's write path (``threshold``
    embedded, the rest overflowed), reading the post back after every write. Returns what was
    lost or crossed between students (both must be empty), throughput, and latency percentiles.
    The databases are dropped at the end.
    """
    import statistics
    import threading
    import time as _time

    import pymongo

    from .outlier import add_comment, read_comments
    from .safety import workbook_collection

    names = [f"{prefix}_{i:02d}" for i in range(students)]
    probe = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        taken = sorted(set(names) & set(probe.list_database_names()))
    finally:
        probe.close()
    if taken:  # never write into (or drop) a database this run did not create
        raise RuntimeError(f"databases already exist: {', '.join(taken)}; drop them or pick another prefix")
    latencies: list[float] = []
    problems: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(students)

    def student(i: int) -> None:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        db = client[names[i]]
        mine: list[float] = []
        try:
            posts_coll = workbook_collection(db, "posts")
            posts_coll.insert_many([{"_id": p, "title": f"student {i} post {p}"} for p in range(posts)])
            barrier.wait()
            for c in range(comments):
                for p in range(posts):
                    t0 = _time.perf_counter()
                    add_comment(db, p, {"by": f"s{i:02d}", "n": c}, threshold)
                    got = read_comments(db, p)
                    mine.append(_time.perf_counter() - t0)
                    if len(got) != c + 1:
                        problems.append(f"student {i} post {p}: {len(got)} comments after {c + 1} writes")
            for p in range(posts):
                got = read_comments(db, p)
                if [d["n"] for d in got] != list(range(comments)):
                    problems.append(f"student {i} post {p}: comments lost or out of order")
                if {d["by"] for d in got} != {f"s{i:02d}"}:
                    problems.append(f"student {i} post {p}: another student's comment crossed over")
                embedded = len(db["posts"].find_one({"_id": p})["comments"])
                if embedded != min(threshold, comments):
                    problems.append(f"student {i} post {p}: {embedded} embedded, threshold {threshold}")
        except Exception as e:  # report, do not hang the others
            problems.append(f"student {i}: {type(e).__name__}: {e}")
            barrier.abort()
        finally:
            with lock:
                latencies.extend(mine)
            client.close()

    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    t0 = _time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    elapsed = _time.perf_counter() - t0
    cleanup = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        for name in names:
            cleanup.drop_database(name)
    finally:
        cleanup.close()
    lat = sorted(latencies)
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [0.0] * 99
    return {"students": students, "operations": len(lat), "seconds": round(elapsed, 2),
            "ops per second": round(len(lat) / elapsed, 1) if elapsed else 0.0,
            "p50 ms": round(1000 * q[49], 2), "p99 ms": round(1000 * q[98], 2), "problems": problems}
