"""A pytest plugin: each xdist worker's notebooks get a database of their own (``-p tools.worker_db``).

Loaded by the test command (``tools/testrun.py``) for the notebooks on a server (``mongodb``):
two notebooks run at once, as two learners would, each in ``<WORKBOOK_DB>_<worker>`` (e.g.
``wbtest_1a2b3c4d5e_gw0``); the kernels nbval starts inherit the worker's environment. Without
xdist (one worker) the database is ``WORKBOOK_DB`` itself. The test command drops every one of
them afterwards (:func:`is_worker_database` finds them). With :data:`WORKER_URIS` set (the servers
the test command started, space-separated), worker ``gw<n>`` also gets a server of its own: the
``n``-th, as its ``MONGODB_URI`` (:func:`worker_uri`).
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

__all__ = ["WORKER_URIS", "is_worker_database", "this_workers_uri", "worker_database", "worker_uri"]

#: the environment variable naming a server for each worker (set by the test command only)
WORKER_URIS = "WBTEST_WORKER_URIS"


def worker_database(base: str, worker: str | None) -> str:
    """The database of one xdist worker (``gw0``, ``gw1``, ...), or ``base`` without xdist."""
    return f"{base}_{worker}" if worker else base


def is_worker_database(name: str, base: str) -> bool:
    """True for a worker's database of ``base`` (``<base>_gw<n>``), whatever the worker's number."""
    return re.fullmatch(re.escape(base) + r"_gw[0-9]+", name) is not None


def worker_uri(uris: list[str], worker: str | None) -> str | None:
    """The server of worker ``gw<n>``: ``uris[n]`` (round the list if it is shorter); None without
    xdist or without servers."""
    if not uris or not worker or not re.fullmatch(r"gw[0-9]+", worker):
        return None
    return uris[int(worker[2:]) % len(uris)]


def this_workers_uri(run_uri: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """This xdist worker's own server (:func:`worker_uri` of :data:`WORKER_URIS` and
    ``PYTEST_XDIST_WORKER``), or None: the unit tests' ``test_uri`` and the notebooks' kernels.
    Only the servers of the run whose server is ``run_uri`` count: the test command lists that one
    first, so a list left in a shell never sends tests to a server nobody chose."""
    uris = environ.get(WORKER_URIS, "").split()
    if not uris or uris[0] != run_uri:
        return None
    return worker_uri(uris, environ.get("PYTEST_XDIST_WORKER"))


def pytest_configure(config: Any) -> None:
    base = os.environ.get("WORKBOOK_DB")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if base and worker:
        os.environ["WORKBOOK_DB"] = worker_database(base, worker)
    uri = this_workers_uri(os.environ.get("MONGODB_URI"))
    if uri:
        os.environ["MONGODB_URI"] = uri
