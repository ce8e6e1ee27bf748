"""Backends: choice by environment, the 5-second failure, redaction, probed capabilities."""
from __future__ import annotations

import time

import pytest

from engines import embedded
from engines.embedded import free_port  # nothing listens on it: the unreachable server
from helpers import backends
from helpers.backends import BackendError, connect, redact_uri
from helpers.capabilities import CAPABILITIES


@pytest.fixture
def quick_timeout(monkeypatch):
    """A server that cannot be reached is given up after 0.3 s instead of 4 (what is asserted is the
    message, which does not depend on the wait; the 5-second promise has a test of its own)."""
    from helpers import backends

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT_MS", 300)


def test_unreachable_uri_fails_fast_and_never_shows_the_password():
    secret = "s3cr%21t-Pa55"
    uri = f"mongodb://teacher:{secret}@127.0.0.1:{free_port()}/?authSource=admin"
    t0 = time.monotonic()
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=uri, db_name="wbtest_unreachable")
    elapsed = time.monotonic() - t0
    message = str(err.value)
    assert elapsed < 5.0, f"took {elapsed:.1f} s"
    assert "MONGODB_URI" in message
    assert "teacher:****@127.0.0.1" in message
    assert secret not in message and "s3cr!t-Pa55" not in message
    assert "WORKBOOK_BACKEND=embedded" in message  # says how to run offline
    assert err.value.__cause__ is None and err.value.__suppress_context__  # raised `from None`


@pytest.mark.parametrize("password", ["p@ss/wo:rd", "x/y", "q"])
def test_a_malformed_uri_never_shows_its_password(password, quick_timeout):
    uri = f"mongodb://alice:{password}@127.0.0.1:{free_port()}/"
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=uri, db_name="wbtest_badurl")
    message = str(err.value)
    assert "alice:****@127.0.0.1" in message
    assert f":{password}@" not in message
    if len(password) >= 3:  # a one-letter password is any "q" in the text: the URI part is what matters
        assert password not in message


def test_auto_with_unreachable_uri_does_not_silently_go_offline(monkeypatch, quick_timeout):
    monkeypatch.setenv("MONGODB_URI", f"mongodb://127.0.0.1:{free_port()}")
    monkeypatch.delenv("WORKBOOK_BACKEND", raising=False)
    with pytest.raises(BackendError, match="MONGODB_URI"):
        connect(db_name="wbtest_auto")


@pytest.mark.parametrize("uri, shown", [
    ("mongodb://u:p@h:1/db", "mongodb://u:****@h:1/db"),
    ("mongodb+srv://user:pa%40ss@cluster0.example.net/?retryWrites=true",
     "mongodb+srv://user:****@cluster0.example.net/?retryWrites=true"),
    ("mongodb://localhost:27017", "mongodb://localhost:27017"),
    ("mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:x&password=abc",
     "mongodb://h/?authMechanismProperties=****&password=****"),
    # unescaped '@', '/' and ':' in a password: pymongo refuses these URIs, and its error must not show them
    ("mongodb://alice:p@ss@h/", "mongodb://alice:****@h/"),
    ("mongodb://alice:pa/ss@h:27017/db", "mongodb://alice:****@h:27017/db"),
    ("mongodb://alice:a:b@h/", "mongodb://alice:****@h/"),
    ("mongodb://alice@h/?appName=x@y", "mongodb://alice@h/?appName=x@y"),
])
def test_redact_uri(uri, shown):
    assert redact_uri(uri) == shown


def test_bad_backend_and_db_names_are_explained(monkeypatch):
    with pytest.raises(BackendError, match="WORKBOOK_BACKEND='sqlite'"):
        connect("sqlite")
    monkeypatch.setenv("WORKBOOK_DB", "admin")
    with pytest.raises(BackendError, match="WORKBOOK_DB 'admin'"):
        connect("mock")
    monkeypatch.delenv("MONGODB_URI", raising=False)
    with pytest.raises(BackendError, match="needs MONGODB_URI"):
        connect("mongodb", db_name="wbtest_x")


def test_auto_falls_back_to_mock_when_embedded_cannot_start(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)

    def broken():
        raise OSError("no wheel for this platform")

    monkeypatch.setattr(embedded, "start_embedded", broken)
    conn = connect("auto", db_name="wbtest_fallback")
    try:
        assert conn.info.name == "mock"
        assert "fell back to the mock" in conn.info.note
    finally:
        conn.close()
    with pytest.raises(BackendError, match="WORKBOOK_BACKEND=mock"):
        connect("embedded", db_name="wbtest_fallback")


# What each engine's probes find, measured (docs/ENGINES.md), as each capability declares it. A real
# MongoDB passes every probe (transactions, snapshot sessions: only a replica set or Atlas; client_bulk_write: 8.0
# and later).
PINNED = {
    "mongomock-ng": {c.name: c.mock[0] for c in CAPABILITIES if not c.limit},
    "SecantusDB": {c.name: c.embedded[0] for c in CAPABILITIES if not c.limit},
}


def test_capabilities_match_backends_md(backend):
    """The probes find what docs/ENGINES.md measured for each engine, field by field."""
    caps, info = backend.info.caps, backend.info
    assert info.banner().startswith(f"Backend: {info.name} (")
    assert info.database in info.banner() and "WORKBOOK_BACKEND" in info.banner()
    yes_no = {k: v for k, v in caps.as_dict().items() if isinstance(v, bool)}  # the pass/fail probes
    if info.engine == "MongoDB":
        assert all(v for k, v in yes_no.items() if k not in ("transactions", "transaction_isolation", "snapshot_session",
                                                                   "client_bulk_write")), caps
    else:
        assert yes_no == PINNED[info.engine]
    # the probes clean up after themselves: no probe collection and no registry entry is left
    assert not [n for n in backend.db.list_collection_names() if n.startswith("workbook_probe")]
    assert backend.db["workbook_registry"].count_documents({"_id": {"$regex": "^workbook_probe"}}) == 0


def test_every_label_comes_from_a_probe(backend):
    """``cannot_show`` and the banner's warnings change with the probed capabilities, not the engine's name."""
    import dataclasses

    info = backend.info
    yes_no = [k for k, v in info.caps.as_dict().items() if isinstance(v, bool)]
    limits = ("graph_max_depth", "regex_max_length")  # numeric: None is "no cap met"
    perfect = dataclasses.replace(info, caps=dataclasses.replace(
        info.caps, **{k: True for k in yes_no}, **{k: None for k in limits}))
    assert perfect.cannot_show() == [] and perfect.warnings() == []
    for name in limits:  # a cap met has its own label, naming the number the probe found
        capped = dataclasses.replace(perfect, caps=dataclasses.replace(perfect.caps, **{name: 100}))
        assert len(capped.cannot_show()) == 1 and "100" in capped.cannot_show()[0], name
    for name in yes_no:
        if name == "indexes":
            continue
        one_off = dataclasses.replace(perfect, caps=dataclasses.replace(perfect.caps, **{name: False}))
        assert len(one_off.cannot_show()) == 1, name  # each capability has its own label
    no_bare = dataclasses.replace(perfect, caps=dataclasses.replace(perfect.caps, bare_regex_indexed=False))
    (warning,) = no_bare.warnings()
    assert "\n" not in warning and '{"$regex"' in warning and info.engine in warning
    lines = info.cannot_show()
    assert ("16 MiB" in " ".join(lines)) == (not info.caps.max_document_size)
    assert not any("16 MB" in line for line in lines)
    assert (len(info.warnings()) == 1) == (not info.caps.bare_regex_indexed)


def test_the_banner_warns_when_a_bare_regex_on_an_index_matches_nothing(monkeypatch, backend):
    monkeypatch.setattr(backends._SHARED, "current", backend)
    text = backends.banner()
    assert text.splitlines()[0] == backend.info.banner()
    assert ("$regex" in text) == (not backend.info.caps.bare_regex_indexed)


def test_get_db_is_one_process_wide_connection(monkeypatch):
    monkeypatch.setenv("WORKBOOK_BACKEND", "mock")
    monkeypatch.setenv("WORKBOOK_DB", "wbtest_global")
    backends.close()
    try:
        db = backends.get_db()
        assert db is backends.get_db()
        assert db.name == "wbtest_global"
        assert backends.backend_info().name == "mock"
        assert backends.banner().splitlines()[0] == backends.backend_info().banner()
        assert backends.current_connection().db is db
    finally:
        backends.close()
    assert backends.current_connection() is None  # closed, and asking does not connect


def test_a_process_wide_connection_opens_once_across_threads_and_closes():
    """One home for MongoDB's and Redis's process-wide connection (helpers.kv.redis_backend uses it too)."""
    import threading

    class Conn:
        closed = False

        def close(self):
            self.closed = True

    opened = []
    shared = backends.ProcessWide(lambda: opened.append(Conn()) or opened[-1])
    assert shared.current is None
    got = []
    threads = [threading.Thread(target=lambda: got.append(shared.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 1 and all(g is opened[0] for g in got) and len(got) == 8
    shared.close()
    assert opened[0].closed and shared.current is None
    shared.close()  # closing twice is harmless
    assert shared.get() is not opened[0] and len(opened) == 2


def test_the_collation_probe(backend):
    """A case-insensitive index keeps its collation and a query honours it on a server; the mock ignores both."""
    assert backend.info.caps.collation is (backend.info.name != "mock")
    assert ("collations (case-insensitive indexes and queries)" in backend.info.cannot_show()) is \
        (backend.info.name == "mock")


# --- the error says which of the failures it is (a wrong password, a malformed URI, a missing TLS file, no server)

def test_a_wrong_password_says_authentication_failed(auth_server):
    login, _admin = auth_server
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=login("student", "Wrong-Pw-9"), db_name="wbtest_auth")
    message = str(err.value)
    assert "authentication failed" in message.lower() and "cannot reach" not in message.lower()
    assert "Wrong-Pw-9" not in message and "student:****@" in message
    conn = connect("mongodb", uri=login("teacher"), db_name="wbtest_auth_ok", probe=False)
    conn.close()


@pytest.mark.parametrize("uri", [
    "127.0.0.1:27017",  # the scheme forgotten
    "student:Hunter2Secret@127.0.0.1:27017",
    "mongodb://a:b:Hunter2Secret@127.0.0.1/",  # an unescaped ':' in the password
    "mongodb://127.0.0.1:99999/",
    "mongodb://127.0.0.1/?tlsInsecure=true&tlsAllowInvalidCertificates=true",
])
def test_a_malformed_uri_says_it_is_malformed(uri):
    t0 = time.monotonic()
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=uri, db_name="wbtest_malformed")
    message = str(err.value)
    assert time.monotonic() - t0 < 2  # found at once, never after a timeout
    assert "not a valid" in message and "cannot reach" not in message.lower()
    assert "Hunter2Secret" not in message


@pytest.mark.parametrize("option", ["tlsCAFile", "tlsCertificateKeyFile", "tlsCRLFile"])
def test_a_missing_tls_file_is_named(option, tmp_path):
    missing = tmp_path / "nope.pem"
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=f"mongodb://127.0.0.1:{free_port()}/?tls=true&{option}={missing}",
                db_name="wbtest_tls")
    message = str(err.value)
    assert option in message and str(missing) in message and "does not exist" in message


def test_an_unreachable_server_says_unreachable(quick_timeout):
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=f"mongodb://127.0.0.1:{free_port()}/", db_name="wbtest_unreach")
    assert "cannot reach" in str(err.value).lower() and "authentication" not in str(err.value).lower()


def test_engine_limits_are_probed_and_known_for_any_client(backend):
    """SecantusDB's $graphLookup stops at depth 100 and refuses regexes over 1,000
    characters; the mock meets no cap (docs/ENGINES.md)."""
    caps = backend.info.caps
    expected = {"SecantusDB": (100, 1000), "mongomock-ng": (None, None)}.get(backend.info.engine)
    limits = {"SecantusDB": "embedded", "mongomock-ng": "mock"}  # the declarations say the same
    if expected is not None:
        assert tuple(getattr(c, limits[backend.info.engine])[0] for c in CAPABILITIES if c.limit) == expected
    if expected is not None:
        assert (caps.graph_max_depth, caps.regex_max_length) == expected
    assert backends.engine_limits(backend.db) == (caps.graph_max_depth, caps.regex_max_length)
    if backend.info.name != "mock":  # a client the workbook did not make: probed on first need
        import pymongo

        other = pymongo.MongoClient(backend.client.address and f"mongodb://{backend.client.address[0]}:"
                                                                f"{backend.client.address[1]}/")
        try:
            assert backends.engine_limits(other[backend.db.name]) == (caps.graph_max_depth, caps.regex_max_length)
            assert not [n for n in other[backend.db.name].list_collection_names() if n.startswith("workbook_probe")]
        finally:
            other.close()


def test_a_bad_database_name_names_where_it_came_from(monkeypatch):
    from helpers.backends import BackendError, connect

    monkeypatch.setenv("WORKBOOK_DB", "bad name")
    with pytest.raises(BackendError, match=r"^WORKBOOK_DB 'bad name' is not usable"):
        connect("mock")
    with pytest.raises(BackendError, match=r"^the database name 'admin' is not usable"):
        connect("mock", db_name="admin")


def test_a_busy_embedded_server_is_not_declared_down_after_four_seconds(backend):
    """pymongo reads its monitor's heartbeat with the connect timeout: at 4 s the in-process
    SecantusDB, busy with one long command, got its pool cleared and the command interrupted (its
    retried insert then met its own first attempt: E11000). The embedded connection waits 20 s; a
    server behind MONGODB_URI keeps 4 s (it also bounds a mongodb+srv:// lookup). Selection gives up
    within 4 s on both."""
    from helpers import backends

    if backend.info.engine == "mongomock-ng":
        pytest.skip("the mock has no server to monitor")
    options = backend.client.options
    assert options.server_selection_timeout == backends.CONNECT_TIMEOUT_MS / 1000 == 4
    expected = backends.SOCKET_CONNECT_TIMEOUT_MS if backend.info.name == "embedded" else backends.CONNECT_TIMEOUT_MS
    assert options.pool_options.connect_timeout == expected / 1000


@pytest.mark.parametrize("port", ["9" * 5000, "99999", "0"])
def test_a_port_of_thousands_of_digits_gets_the_workbooks_sentence(port, quick_timeout):
    # Python's int() refuses over 4,300 digits with its own advice (sys.set_int_max_str_digits): the
    # sentence names the variable and the ports allowed, and does not echo the digits
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=f"mongodb://alice:pw-secret@127.0.0.1:{port}/", db_name="wbtest_badport")
    message = str(err.value)
    assert "MONGODB_URI" in message and "1 to 65535" in message and len(message) < 800, message
    assert "set_int_max_str_digits" not in message and "pw-secret" not in message
