"""The test command behind ``python3 workbook.py test`` and CI's ``.ci/run`` (``python -m tools.testrun``).

Phases, each a pytest run, with one closing line for all of them:

1. unit tests (``tests/``) on every backend: embedded, mock, and ``mongodb``, which is the server
   in ``MONGODB_URI`` if set, else a SecantusDB *process* started here for each of the two xdist
   workers (one such process answers one request at a time), so the URI path is real;
2. every notebook (discovered by ``tools.repo.NOTEBOOK_GLOB``) executed and compared with
   nbval on the embedded backend, on the mock, and on the ``mongodb`` backend (Redis: fakeredis),
   two at a time; on ``mongodb`` each of the two workers has a SecantusDB process of its own, or
   both share the server in ``MONGODB_URI``;
3. the notebooks that use Redis (their source imports ``redis_backend``: notebook 07) once more,
   against a real ``redis-server`` started here on a free loopback port (``engines.redis_server``),
   which the Redis unit tests of phase 1 use too; skipped, saying why, when Debian's redis-server is
   not installed. The caller's ``REDIS_URL`` is never used.

Extra arguments go to every pytest run (e.g. ``-x`` or ``-k outlier``).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

from engines.embedded import secantus_process
from engines.redis_server import REDIS_MISSING, redis_process, redis_server
from tools.repo import ROOT, clean_env, notebook_env
from tools.repo import notebooks as _notebooks
from tools.worker_db import WORKER_URIS, is_worker_database


def _drop_databases(uri: str, base: str) -> None:
    """Drop the databases this test run created for the notebooks on the mongodb backend: ``base``
    and every worker's ``<base>_<worker>`` (tools/worker_db.py; xdist may replace a crashed
    worker under a new name). ``base`` holds a random part: no other database has its name."""
    import pymongo

    assert base.startswith("wbtest_")
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        for name in client.list_database_names():
            if name == base or is_worker_database(name, base):
                client.drop_database(name)
    except pymongo.errors.PyMongoError as e:  # the phases already reported an unreachable server
        print(f"could not drop the test databases {base}*: {type(e).__name__}")
    finally:
        client.close()


def notebooks() -> list[str]:
    """Every notebook, as a path relative to the repository's root (for pytest's arguments)."""
    return [str(p.relative_to(ROOT)) for p in _notebooks()]


def _pytest(args: list[str], env: dict[str, str], xml: Path) -> tuple[int, dict[str, int]]:
    rc = subprocess.call([sys.executable, "-m", "pytest", f"--junitxml={xml}", *args], cwd=ROOT, env=env)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    if xml.exists():
        for suite in ET.parse(xml).getroot().iter("testsuite"):
            total = int(suite.get("tests", 0))
            failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skipped = int(suite.get("skipped", 0))
            counts["failed"] += failed
            counts["skipped"] += skipped
            counts["passed"] += total - failed - skipped
    return rc, counts


Phase = tuple[str, list[str], dict[str, str]]


#: the xdist workers of every phase (one per core of the usual 2-core machine): the notebooks run
#: two at a time, each in its own kernel
WORKERS = 2


def phases(nbs: list[str], *, base: dict[str, str], own: dict[str, str], uri: str, test_db: str,
           redis_url: str | None, worker_uris: Sequence[str] = ()) -> list[Phase]:
    """The pytest runs, in order, as ``(name, arguments, environment)``: the unit tests on every backend,
    the notebooks (``nbs``, relative paths) on embedded, mock and ``uri``, and those that use Redis once
    more on the real ``redis_url`` (when there is one). ``worker_uris``: a server for each xdist
    worker (unit tests and notebooks) on the ``mongodb`` backend instead of ``uri`` for all
    (``tools.worker_db``)."""
    servers = {WORKER_URIS: " ".join(worker_uris)} if worker_uris else {}
    unit_env = {**base, "WORKBOOK_TEST_URI": uri, "MPLBACKEND": "Agg", **servers}
    if redis_url:
        unit_env["WORKBOOK_TEST_REDIS_URL"] = redis_url
    out: list[Phase] = [("unit tests, all backends", ["tests", "-q", "-rs", "-n", str(WORKERS)], unit_env)]
    # kernels over ipc sockets (no port to race for) with a bounded retry: tools/nbval_kernels.py
    nbval_options = ["--nbval", "-q", "-p", "no:randomly", "-p", "tools.nbval_kernels", "--nbval-current-env",
                     "--nbval-sanitize-with", "notebooks/sanitize.cfg"]
    nbval = [*nbval_options, *nbs]
    if nbs:
        two = ["-n", str(WORKERS), "--dist", "loadfile"]  # two notebooks at a time
        out += [
            ("notebooks on embedded", [*two, *nbval], notebook_env("embedded", **own)),
            ("notebooks on mock", [*two, *nbval], notebook_env("mock", **own)),
            # two at a time, as two learners: each worker's notebooks share a database of the
            # test's own (tools/worker_db.py), never the learner's; on a server of its own when
            # the run started them (a SecantusDB process answers one request at a time)
            ("notebooks on mongodb", [*two, "-p", "tools.worker_db", *nbval],
             notebook_env("mongodb", MONGODB_URI=uri, **own, WORKBOOK_DB=test_db, **servers)),
        ]
    redis_nbs = redis_notebooks(nbs)
    if redis_nbs and redis_url:
        out.append(("notebooks using Redis, on a real redis-server", [*nbval_options, *redis_nbs],
                    notebook_env("embedded", **own, REDIS_URL=redis_url)))
    return out


def redis_notebooks(nbs: list[str]) -> list[str]:
    """The notebooks that use Redis: their source imports ``redis_backend``."""
    return [nb for nb in nbs if "redis_backend" in (ROOT / nb).read_text(encoding="utf-8")]


def closing(results: list[tuple[str, int, dict[str, int]]], skipped_elsewhere: int,
            seconds: float) -> tuple[list[str], int]:
    """The closing lines of a run and its exit code, from each phase's ``(name, exit code, counts)``.

    The run fails when any phase exited non-zero (a phase can fail before counting a test, e.g. a
    collection error) or when nothing passed at all."""
    totals = {k: sum(counts[k] for _, _, counts in results) for k in ("passed", "failed", "skipped")}
    totals["skipped"] += skipped_elsewhere
    failed_phases = [name for name, rc, _ in results if rc != 0]
    failed = totals["failed"] or len(failed_phases)
    lines = [f"All phases in {seconds:.0f} s; "
             f"{'failed: ' + ', '.join(failed_phases) if failed_phases else 'every phase passed'}",
             f"{totals['passed']} passed, {failed} failed, {totals['skipped']} skipped"]
    return lines, 1 if failed_phases or totals["passed"] == 0 else 0


def phase_line(name: str, counts: dict[str, int], seconds: float, rc: int) -> str:
    """The line that ends a phase (bench/run.py reads the phases' times from these lines)."""
    return (f"=== {name}: {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['skipped']} skipped in {seconds:.0f} s (exit {rc}) ===")


def main(extra: list[str]) -> int:
    started = time.monotonic()
    results: list[tuple[str, int, dict[str, int]]] = []
    skipped = 0
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        # not the learner's own progress record, nor their cache of typed data files (the run
        # starts with an empty cache: its first load types the file, later ones read the copy)
        own = {"WORKBOOK_PROGRESS": str(Path(tmp) / "progress.json"), "WORKBOOK_CACHE": str(Path(tmp) / "cache")}
        # every temporary file of the run in here, removed with it: pytest's folders, and what a
        # killed process leaves (nbval kills each kernel, so an embedded server's scratch folder stays)
        (Path(tmp) / "tmp").mkdir()
        own["TMPDIR"] = os.environ["TMPDIR"] = str(Path(tmp) / "tmp")  # the servers started below too
        # the default run: no backend, database, scale, data folder or demo style from the caller's shell
        base = {**clean_env(keep=("MONGODB_URI",)), **own}
        caller_uri = base.get("MONGODB_URI")
        uri = caller_uri or stack.enter_context(secantus_process())
        # the mongodb backend: the caller's server for both workers, else a SecantusDB process
        # each (one process answers one request at a time: shared by two notebook kernels, it
        # made that phase twice as long as the embedded one)
        worker_uris = [] if caller_uri else [uri, *(stack.enter_context(secantus_process())
                                                   for _ in range(WORKERS - 1))]
        # one real Redis for the run (the Redis unit tests and notebook 07), when Debian's redis-server
        # is installed; never the caller's REDIS_URL (clean_env drops it)
        redis_url = stack.enter_context(redis_process()) if redis_server() else None
        nbs = notebooks()
        test_db = f"wbtest_{uuid.uuid4().hex[:10]}"
        for server in dict.fromkeys([uri, *worker_uris]):  # each server once
            stack.callback(_drop_databases, server, test_db)
        for i, (name, args, env) in enumerate(phases(nbs, base=base, own=own, uri=uri, test_db=test_db,
                                                      redis_url=redis_url, worker_uris=worker_uris)):
            print(f"\n=== {name} ===", flush=True)
            t = time.monotonic()
            rc, counts = _pytest([*args, *extra], env, Path(tmp) / f"phase{i}.xml")
            print(phase_line(name, counts, time.monotonic() - t, rc), flush=True)
            results.append((name, rc, counts))
        redis_nbs = redis_notebooks(nbs)
        if redis_nbs and not redis_url:
            print(f"\n=== notebooks using Redis, on a real redis-server: skipped: {REDIS_MISSING} ===", flush=True)
            skipped = len(redis_nbs)
    lines, code = closing(results, skipped, time.monotonic() - started)
    print("\n" + "\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
