"""The test command behind ``python3 workbook.py test`` (and CI's ``.ci/run``).

Phases, each a pytest run, with one closing line for all of them:

1. unit tests (``tests/``) on every backend: embedded, mock, and ``mongodb``, which is the server
   in ``MONGODB_URI`` if set, else a SecantusDB *process* started here, so the URI path is real;
2. every notebook (discovered as ``notebooks/[0-9][0-9]_*.ipynb``) executed and compared with
   nbval on the embedded backend, on the mock, and on the ``mongodb`` backend.

Extra arguments go to every pytest run (e.g. ``-x`` or ``-k outlier``).
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def secantus_process() -> Iterator[str]:
    """Start ``secantusd-py`` on a free loopback port (in-memory storage); yield its URI."""
    exe = Path(sys.executable).with_name("secantusd-py")
    port = free_port()
    if os.name == "nt":
        exe = exe.with_suffix(".exe")
    log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty server can never block on it
    proc = subprocess.Popen([str(exe) if exe.exists() else "secantusd-py", "--host", "127.0.0.1",
                             "--port", str(port), "--storage-path", ":memory:", "--log-level", "WARNING"],
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                err = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"secantusd-py did not start on port {port}: {err}")
            time.sleep(0.1)
        yield f"mongodb://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


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
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


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
    # the default run: no backend, database, scale, data folder or demo style from the caller's shell
    base = {k: v for k, v in os.environ.items()
            if k not in ("WORKBOOK_BACKEND", "WORKBOOK_DB", "WORKBOOK_SCALE", "WORKBOOK_DATASETS", "WORKBOOK_DEMO")}
    base.pop("MPLBACKEND", None)
    base["PYTHONHASHSEED"] = "0"
    started = time.monotonic()
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    results: list[tuple[str, int, dict[str, int]]] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
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
        base["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"  # as in scripts/nb.py
        base["WORKBOOK_PROGRESS"] = str(Path(tmp) / "progress.json")  # not the learner's own record
        base["CI"] = base.get("CI") or "true"  # no progress bars in compared outputs (as in scripts/nb.py)
        offline = {k: v for k, v in base.items() if k != "MONGODB_URI"}
        if nbs:
            two = ["-n", "2", "--dist", "loadfile"]  # two notebooks at a time, each in its own kernel
            phases += [
                ("notebooks on embedded", [*two, *nbval], {**offline, "WORKBOOK_BACKEND": "embedded"}),
                ("notebooks on mock", [*two, *nbval], {**offline, "WORKBOOK_BACKEND": "mock"}),
                # one at a time: on a server, the notebooks of one learner share one database
                ("notebooks on mongodb", nbval, {**base, "WORKBOOK_BACKEND": "mongodb", "MONGODB_URI": uri,
                                                 # a database of the test's own, never the learner's
                                                 "WORKBOOK_DB": test_db}),
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
