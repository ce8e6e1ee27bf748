"""A pytest plugin: each xdist worker's notebooks get a database of their own (``-p tools.worker_db``).

Loaded by the test command (``tools/testrun.py``) for the notebooks on a server (``mongodb``):
two notebooks run at once, as two learners would, each in ``<WORKBOOK_DB>_<worker>`` (e.g.
``wbtest_1a2b3c4d5e_gw0``); the kernels nbval starts inherit the worker's environment. Without
xdist (one worker) the database is ``WORKBOOK_DB`` itself. The test command drops every one of
them afterwards (:func:`is_worker_database` finds them).
"""
from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["is_worker_database", "worker_database"]


def worker_database(base: str, worker: str | None) -> str:
    """The database of one xdist worker (``gw0``, ``gw1``, ...), or ``base`` without xdist."""
    return f"{base}_{worker}" if worker else base


def is_worker_database(name: str, base: str) -> bool:
    """True for a worker's database of ``base`` (``<base>_gw<n>``), whatever the worker's number."""
    return re.fullmatch(re.escape(base) + r"_gw[0-9]+", name) is not None


def pytest_configure(config: Any) -> None:
    base = os.environ.get("WORKBOOK_DB")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if base and worker:
        os.environ["WORKBOOK_DB"] = worker_database(base, worker)
