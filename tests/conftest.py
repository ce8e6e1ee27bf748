"""Fixtures: every test that takes ``db`` runs once per backend, on a fresh database.

``mongodb`` uses ``WORKBOOK_TEST_URI`` (set by ``python3 workbook.py test`` to the server in
``MONGODB_URI``, or to a SecantusDB process it started; where it started one for each xdist worker,
the worker's own: ``tools.worker_db``), else ``MONGODB_URI``, else starts a SecantusDB process
here. Each test gets its own database, dropped afterwards: test databases are named
``wbtest_<random>`` and are the only databases the tests ever drop.

``module_backend`` and ``module_db`` are the same per backend, but shared by one module's tests: data
a module fixture loads once for tests that only read it (a test taking them with ``backend`` or
``db`` would pair every backend with every other; use ``module_backend`` alongside).
"""
from __future__ import annotations

import contextlib
import os
import uuid

import pytest

from helpers.backends import Connection, connect

BACKENDS = ["embedded", "mock", "mongodb"]


@pytest.fixture(scope="session", autouse=True)
def _own_cache(tmp_path_factory):
    """Typed copies of the data files in a folder of the run's own (the test command sets one
    too), never the developer's ``~/.schema_workbook/cache``: a run starts from no copy."""
    if not os.environ.get("WORKBOOK_CACHE"):
        os.environ["WORKBOOK_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield


@pytest.fixture(scope="session")
def _stack():
    with contextlib.ExitStack() as stack:
        yield stack


@pytest.fixture(scope="session")
def test_uri(_stack) -> str:
    from tools.worker_db import this_workers_uri

    uri = (this_workers_uri(os.environ.get("WORKBOOK_TEST_URI")) or os.environ.get("WORKBOOK_TEST_URI")
           or os.environ.get("MONGODB_URI"))
    if not uri:
        from engines.embedded import secantus_process
        uri = _stack.enter_context(secantus_process())
    return uri


_CONNECTIONS: dict[str, Connection] = {}


@pytest.fixture(scope="session")
def connections(request):
    yield _CONNECTIONS
    for conn in _CONNECTIONS.values():
        conn.close()


def _connection(name: str, connections: dict, request) -> Connection:
    if name not in connections:
        uri = request.getfixturevalue("test_uri") if name == "mongodb" else None
        connections[name] = connect(name, uri=uri, db_name=f"wbtest_{uuid.uuid4().hex[:10]}")
    return connections[name]


@pytest.fixture(params=BACKENDS)
def backend(request, connections) -> Connection:
    """The connection of one backend (its ``.info`` has the probed capabilities)."""
    return _connection(request.param, connections, request)


@pytest.fixture(params=["embedded", "mongodb"])
def server_backend(request, connections) -> Connection:
    """Only the backends that are real wire-protocol servers (for concurrency tests)."""
    return _connection(request.param, connections, request)


def _fresh_db(conn: Connection):
    name = f"wbtest_{uuid.uuid4().hex[:10]}"
    if conn.info.name == "mock":
        from engines.mock import MockDatabase
        from helpers.counting import recorder
        db = MockDatabase(conn.client[name], recorder)
    else:
        db = conn.client[name]
    return db


@pytest.fixture
def db(backend):
    """A fresh, empty database on each backend, dropped after the test."""
    database = _fresh_db(backend)
    yield database
    backend.client.drop_database(database.name)


@pytest.fixture(scope="module", params=BACKENDS)
def module_backend(request, connections) -> Connection:
    """The connection of one backend, for fixtures a module's tests share (see ``module_db``)."""
    return _connection(request.param, connections, request)


@pytest.fixture(scope="module")
def module_db(module_backend):
    """A fresh database on each backend, shared by one module's tests that only read what a module
    fixture put there; dropped after the module. A test that writes takes ``db``."""
    database = _fresh_db(module_backend)
    yield database
    module_backend.client.drop_database(database.name)


@pytest.fixture
def server_db(server_backend):
    """A fresh database on each server backend (embedded, mongodb), dropped after the test."""
    database = _fresh_db(server_backend)
    yield database
    server_backend.client.drop_database(database.name)


# ---------------------------------------------------------------------------------------------
# Redis (notebook 07): fakeredis in process, and a real redis-server where one is installed

@pytest.fixture(scope="session")
def redis_server_url(_stack) -> str:
    """A real Redis: ``WORKBOOK_TEST_REDIS_URL`` if set, else a redis-server started here (skipped,
    with the reason, when redis-server is not installed)."""
    url = os.environ.get("WORKBOOK_TEST_REDIS_URL")
    if url:
        return url
    from engines.redis_server import REDIS_MISSING, redis_process, redis_server
    if redis_server() is None:
        pytest.skip(REDIS_MISSING)
    return _stack.enter_context(redis_process())


@pytest.fixture(params=["fakeredis", "redis-server"])
def redis_conn(request):
    """A Redis connection on each engine (its ``.info`` has the probed capabilities)."""
    from helpers.kv.redis_backend import connect_redis

    url = request.getfixturevalue("redis_server_url") if request.param == "redis-server" else None
    conn = connect_redis(url, use_setting=False, prefix=f"wbtest_{uuid.uuid4().hex[:10]}:")
    yield conn
    conn.close()


@pytest.fixture
def redis_keys(redis_conn):
    """The keys of one test: a fresh ``wbtest_<random>:`` prefix, deleted afterwards."""
    from helpers.kv.redis_backend import KeySpace

    keys = KeySpace(redis_conn.client, f"wbtest_{uuid.uuid4().hex[:10]}:")
    yield keys
    keys.drop()


#: logins of the ``auth_server`` (SecantusDB with SCRAM authentication): user -> (password, roles)
AUTH_USERS = {
    "teacher": ("teacher-Pw-1", ["root"]),
    "rwany": ("rwany-Pw-1", ["readWriteAnyDatabase"]),
    "student": ("student-Pw-1", [{"role": "readWrite", "db": "schema_workbook_student_0001"}]),
}


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory):
    """A SecantusDB process that requires authentication: ``(login(user) -> URI, admin client)``.

    Users are created on a first, open start; the server is then restarted with ``--auth``.
    """
    import pymongo

    from engines.embedded import secantus_process

    data = str(tmp_path_factory.mktemp("secantus_auth"))
    with secantus_process(storage_path=data) as uri:
        client = pymongo.MongoClient(uri)
        for user, (pwd, roles) in AUTH_USERS.items():
            client.admin.command("createUser", user, pwd=pwd, roles=roles)
        client.close()
    with secantus_process(storage_path=data, auth=True) as uri:
        hostport = uri.split("//", 1)[1].rstrip("/")

        def login(user: str, password: str | None = None) -> str:
            pwd = password if password is not None else AUTH_USERS[user][0]
            return f"mongodb://{user}:{pwd}@{hostport}/?authSource=admin"

        admin = pymongo.MongoClient(login("teacher"))
        yield login, admin
        admin.close()
