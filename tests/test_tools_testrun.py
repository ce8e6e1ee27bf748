"""tools/testrun.py, the test command: which runs it makes, and how it ends (no run of its own here)."""
from __future__ import annotations

from tools import testrun
from tools.worker_db import WORKER_URIS

NBS = ["notebooks/00_start_here.ipynb", "notebooks/07_mongodb_vs_redis.ipynb"]
OWN = {"WORKBOOK_PROGRESS": "/tmp/p.json", "WORKBOOK_CACHE": "/tmp/c"}


def _phases(redis_url=None, nbs=NBS, worker_uris=()):
    return testrun.phases(nbs, base={"PATH": "/bin", **OWN}, own=OWN, uri="mongodb://127.0.0.1:1",
                          test_db="wbtest_x", redis_url=redis_url, worker_uris=worker_uris)


def test_the_phases_unit_tests_then_each_notebook_backend_then_redis():
    names = [name for name, _, _ in _phases(redis_url="redis://127.0.0.1:2/0")]
    assert names == ["unit tests, all backends", "notebooks on embedded", "notebooks on mock",
                     "notebooks on mongodb", "notebooks using Redis, on a real redis-server"]
    assert [name for name, _, _ in _phases()][-1] == "notebooks on mongodb"  # no redis-server: no Redis phase
    assert [name for name, _, _ in _phases(nbs=[])] == ["unit tests, all backends"]


def test_each_phase_runs_on_its_backend_never_the_callers_settings():
    unit, embedded, mock, mongodb, redis = _phases(redis_url="redis://127.0.0.1:2/0")
    assert unit[1][0] == "tests" and unit[2]["WORKBOOK_TEST_URI"] == "mongodb://127.0.0.1:1"
    assert unit[2]["WORKBOOK_TEST_REDIS_URL"] == "redis://127.0.0.1:2/0"
    for (_, args, env), backend in ((embedded, "embedded"), (mock, "mock"), (mongodb, "mongodb")):
        assert env["WORKBOOK_BACKEND"] == backend and env["WORKBOOK_PROGRESS"] == "/tmp/p.json"
        assert "--nbval" in args and args[-len(NBS):] == NBS
        assert args[args.index("--nbval-sanitize-with") + 1] == "notebooks/sanitize.cfg"
    assert "MONGODB_URI" not in embedded[2] and "MONGODB_URI" not in mock[2]
    assert mongodb[2]["MONGODB_URI"] == "mongodb://127.0.0.1:1" and mongodb[2]["WORKBOOK_DB"] == "wbtest_x"
    assert "tools.worker_db" in mongodb[1]
    assert redis[1][-1:] == ["notebooks/07_mongodb_vs_redis.ipynb"]  # only the notebook that uses Redis
    assert redis[2]["REDIS_URL"] == "redis://127.0.0.1:2/0"


def test_the_closing_line_and_the_exit_code():
    ok = {"passed": 5, "failed": 0, "skipped": 1}
    lines, code = testrun.closing([("a", 0, ok), ("b", 0, ok)], skipped_elsewhere=2, seconds=61.4)
    assert lines == ["All phases in 61 s; every phase passed", "10 passed, 0 failed, 4 skipped"] and code == 0
    # a phase that failed before counting a test (a collection error) fails the run, and is counted
    lines, code = testrun.closing([("a", 0, ok), ("notebooks on mock", 2, {"passed": 0, "failed": 0, "skipped": 0})],
                                  skipped_elsewhere=0, seconds=3)
    assert lines == ["All phases in 3 s; failed: notebooks on mock", "5 passed, 1 failed, 1 skipped"] and code == 1
    bad = {"passed": 4, "failed": 2, "skipped": 0}
    assert testrun.closing([("a", 1, bad)], 0, 1)[0][1] == "4 passed, 2 failed, 0 skipped"
    # nothing passed at all is not a pass
    assert testrun.closing([("a", 0, {"passed": 0, "failed": 0, "skipped": 3})], 0, 1)[1] == 1


def test_each_worker_has_a_server_of_its_own_when_the_run_started_them():
    """The unit tests and the notebooks on mongodb, and only they, learn the per-worker servers;
    without them (a caller's MONGODB_URI) both workers share ``uri``."""
    servers = ["mongodb://127.0.0.1:1", "mongodb://127.0.0.1:3"]
    named = [name for name, _, env in _phases(worker_uris=servers) if env.get(WORKER_URIS) == " ".join(servers)]
    assert named == ["unit tests, all backends", "notebooks on mongodb"]
    assert not any(WORKER_URIS in env for _, _, env in _phases())
