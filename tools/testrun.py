"""The test command behind ``python3 workbook.py test`` and CI's ``.ci/run`` (``python -m tools.testrun``).

Phases, each a pytest run, with one closing line for all of them:

1. unit tests (``tests/``) on every backend: embedded, mock, and ``mongodb``, which is the server
   in ``MONGODB_URI`` if set, else a SecantusDB *process* started here, so the URI path is real;
2. every notebook (discovered by ``tools.repo.NOTEBOOK_GLOB``) executed and compared with
   nbval on the embedded backend, on the mock, and on the ``mongodb`` backend.

Extra arguments go to every pytest run (e.g. ``-x`` or ``-k outlier``).
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from engines.embedded import secantus_process
from tools.repo import ROOT, clean_env, notebook_env
from tools.repo import notebooks as _notebooks


REDIS_MISSING = ("redis-server is not installed: the notebook-07 phase against a real Redis is skipped "
                 "(Debian: apt-get install redis-server; .ci/run installs it)")


def redis_server() -> str | None:
    """The ``redis-server`` program, or None when it is not installed."""
    import shutil

    return shutil.which("redis-server")


@contextlib.contextmanager
def redis_process() -> Iterator[str]:
    """Start Debian's ``redis-server`` on a free loopback port (its default persistence settings,
    files in a temporary folder); yield its URL. Raises RuntimeError when it is missing or fails."""
    exe = redis_server()
    if exe is None:
        raise RuntimeError(REDIS_MISSING)
    port = free_port()
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--dir", folder,
                                 "--daemonize", "no", "--logfile", ""], stdout=log, stderr=log, cwd=folder)
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"redis-server did not start on port {port}: "
                                       f"{log.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _drop_database(uri: str, name: str) -> None:
    """Drop a database this test run created (the notebooks' run on the mongodb backend)."""
    import pymongo

    assert name.startswith("wbtest_")
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        client.drop_database(name)
    except pymongo.errors.PyMongoError as e:  # the phases already reported an unreachable server
        print(f"could not drop the test database {name}: {type(e).__name__}")
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


def main(extra: list[str]) -> int:
    started = time.monotonic()
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    results: list[tuple[str, int, dict[str, int]]] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        progress = str(Path(tmp) / "progress.json")  # not the learner's own record
        # the default run: no backend, database, scale, data folder or demo style from the caller's shell
        base = {**clean_env(keep=("MONGODB_URI",)), "WORKBOOK_PROGRESS": progress}
        uri = base.get("MONGODB_URI") or stack.enter_context(secantus_process())
        phases: list[tuple[str, list[str], dict[str, str]]] = [
            ("unit tests, all backends", ["tests", "-q", "-rs", "-n", "2"],
             {**base, "WORKBOOK_TEST_URI": uri, "MPLBACKEND": "Agg"}),
        ]
        nbs = notebooks()
        test_db = f"wbtest_{uuid.uuid4().hex[:10]}"
        stack.callback(_drop_database, uri, test_db)
        nbval = ["--nbval", "-q", "-p", "no:randomly", "--nbval-current-env",
                 "--nbval-sanitize-with", "notebooks/sanitize.cfg", *nbs]
        if nbs:
            two = ["-n", "2", "--dist", "loadfile"]  # two notebooks at a time, each in its own kernel
            phases += [
                ("notebooks on embedded", [*two, *nbval], notebook_env("embedded", WORKBOOK_PROGRESS=progress)),
                ("notebooks on mock", [*two, *nbval], notebook_env("mock", WORKBOOK_PROGRESS=progress)),
                # one at a time: on a server, the notebooks of one learner share one database
                ("notebooks on mongodb", nbval, notebook_env("mongodb", MONGODB_URI=uri, WORKBOOK_PROGRESS=progress,
                                                             # a database of the test's own, never the learner's
                                                             WORKBOOK_DB=test_db)),
            ]
        for i, (name, args, env) in enumerate(phases):
            print(f"\n=== {name} ===", flush=True)
            t = time.monotonic()
            rc, counts = _pytest([*args, *extra], env, Path(tmp) / f"phase{i}.xml")
            print(f"=== {name}: {counts['passed']} passed, {counts['failed']} failed, "
                  f"{counts['skipped']} skipped in {time.monotonic() - t:.0f} s (exit {rc}) ===", flush=True)
            results.append((name, rc, counts))
            for k in totals:
                totals[k] += counts[k]
    failed_phases = [n for n, rc, _ in results if rc != 0]
    print(f"\nAll phases in {time.monotonic() - started:.0f} s; "
          f"{'failed: ' + ', '.join(failed_phases) if failed_phases else 'every phase passed'}")
    failed = totals["failed"] or len(failed_phases)  # a phase can fail before counting a test
    print(f"{totals['passed']} passed, {failed} failed, {totals['skipped']} skipped")
    return 1 if failed_phases or totals["passed"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
