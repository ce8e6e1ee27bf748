"""tools/worker_db.py: each xdist worker's notebooks in a database of their own, all found for the clean-up,
and on a server of their own when the test command started one for each worker."""
from __future__ import annotations

import os

from tools import worker_db
from tools.worker_db import WORKER_URIS, is_worker_database, worker_database, worker_uri


def test_each_worker_has_its_own_database_and_the_clean_up_finds_every_one():
    base = "wbtest_0123456789"
    names = [worker_database(base, w) for w in ("gw0", "gw1", "gw7", None)]
    assert names == [f"{base}_gw0", f"{base}_gw1", f"{base}_gw7", base]
    assert all(is_worker_database(n, base) for n in names[:3])
    # never another run's database, nor one that merely starts alike
    assert not any(is_worker_database(n, base) for n in (base, f"{base}0_gw0", f"{base}_gw", f"{base}_gwx",
                                                         "wbtest_9999999999_gw0", f"x{base}_gw0"))


def test_each_worker_has_its_own_server_when_the_run_started_them():
    uris = ["mongodb://127.0.0.1:1/", "mongodb://127.0.0.1:2/"]
    assert [worker_uri(uris, w) for w in ("gw0", "gw1", "gw2", "gw3")] == [*uris, *uris]
    # no servers, no xdist, or a worker name of another kind: MONGODB_URI stays as it is
    assert worker_uri([], "gw0") is None and worker_uri(uris, None) is None and worker_uri(uris, "master") is None


def test_the_plugin_gives_a_worker_its_database_and_server(monkeypatch):
    run = "mongodb://127.0.0.1:1/"
    uris = f"{run} mongodb://127.0.0.1:2/"
    for env, database, uri in (
            ({"PYTEST_XDIST_WORKER": "gw1", WORKER_URIS: uris}, "wbtest_x_gw1", "mongodb://127.0.0.1:2/"),
            ({"PYTEST_XDIST_WORKER": "gw0", WORKER_URIS: uris}, "wbtest_x_gw0", run),
            ({"PYTEST_XDIST_WORKER": "gw0"}, "wbtest_x_gw0", run),  # the run's one server, for both
            ({WORKER_URIS: uris}, "wbtest_x", run),  # no xdist: nothing changes
            # a list left in a shell, not this run's (its first server is not MONGODB_URI): ignored
            ({"PYTEST_XDIST_WORKER": "gw1", WORKER_URIS: "mongodb://other:1/ mongodb://other:2/"}, "wbtest_x_gw1", run)):
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
        monkeypatch.delenv(WORKER_URIS, raising=False)
        for k, v in {"WORKBOOK_DB": "wbtest_x", "MONGODB_URI": run, **env}.items():
            monkeypatch.setenv(k, v)
        worker_db.pytest_configure(None)
        assert (os.environ["WORKBOOK_DB"], os.environ["MONGODB_URI"]) == (database, uri), env
