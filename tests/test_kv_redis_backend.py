"""Redis for notebook 07: the 5-second failure without the password, probes, counting, the key space."""
from __future__ import annotations

import socket
import time

import pytest

from engines.embedded import free_port  # nothing listens on it: the unreachable server
from helpers.kv import redis_backend as rb
from helpers.kv.redis_backend import KeySpace, RedisBackendError, connect_redis, count_commands, resp_size


def test_unreachable_url_fails_fast_and_never_shows_the_password():
    secret = "s3cr3t-Pa55"
    url = f"redis://teacher:{secret}@127.0.0.1:{free_port()}/0"
    t0 = time.monotonic()
    with pytest.raises(RedisBackendError) as err:
        connect_redis(url)
    elapsed = time.monotonic() - t0
    message = str(err.value)
    assert elapsed < 5.0, f"took {elapsed:.1f} s"
    assert "REDIS_URL" in message and "teacher:****@127.0.0.1" in message
    assert secret not in message
    assert "unset REDIS_URL" in message  # says how to run offline
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_a_password_only_url_is_redacted_too():
    with pytest.raises(RedisBackendError) as err:
        connect_redis(f"redis://:hunter22@127.0.0.1:{free_port()}/0")
    assert "redis://:****@127.0.0.1" in str(err.value) and "hunter22" not in str(err.value)


def test_not_a_redis_url_says_what_to_write():
    with pytest.raises(RedisBackendError, match="redis://") as err:
        connect_redis("mongodb://u:pw123456@localhost:27017")
    assert "pw123456" not in str(err.value)


def test_redis_url_comes_from_the_settings(monkeypatch):
    monkeypatch.setenv("REDIS_URL", f"redis://:topsecret@127.0.0.1:{free_port()}/0")
    with pytest.raises(RedisBackendError, match="REDIS_URL") as err:
        connect_redis()
    assert "topsecret" not in str(err.value)
    monkeypatch.delenv("REDIS_URL")
    conn = connect_redis(probe=False)
    assert conn.info.name == "fakeredis" and conn.info.url is None
    conn.close()


@pytest.mark.parametrize("reply, wire", [
    ("OK", b"+OK\r\n"), (None, b"$-1\r\n"), (42, b":42\r\n"), ("abc", b"$3\r\nabc\r\n"),
    ("", b"$0\r\n\r\n"), (["a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n"), ([], b"*0\r\n"),
    ("é", "$2\r\né\r\n".encode()),
])
def test_resp_size_is_the_length_on_the_wire(reply, wire):
    assert resp_size(reply) == len(wire)


def test_probes(redis_conn):
    info, caps = redis_conn.info, redis_conn.info.caps
    assert caps.geo_search
    if info.name == "fakeredis":
        assert not caps.memory_usage and not caps.object_encoding and not caps.config
        assert not caps.query_engine  # no FT.CREATE: no secondary indexes, as in Redis 7's core
        assert "memory per key (MEMORY USAGE)" in info.cannot_show()
        assert "in this process" in info.banner()
    else:
        assert caps.memory_usage and caps.object_encoding and caps.info and caps.config
        assert info.engine.startswith("Redis ") and info.cannot_show() == []
        assert set(info.persistence) == {"save", "appendonly", "appendfsync"}
    assert not redis_conn.client.keys("*probe*")  # the probe left nothing behind


def test_a_pipeline_is_one_round_trip_and_counts_every_command(redis_keys):
    r = redis_keys.client
    with count_commands() as cost:
        pipe = r.pipeline(transaction=False)
        for i in range(250):
            pipe.set(redis_keys.key("k", i), "v" * i)
        pipe.execute()
    assert (cost.round_trips, cost.commands) == (1, 250)
    assert cost.bytes_received == 250 * len(b"+OK\r\n")
    with count_commands() as cost:
        values = [r.get(redis_keys.key("k", i)) for i in (0, 3, 10)]
        r.get(redis_keys.key("missing"))
    assert values == ["", "vvv", "v" * 10]
    assert (cost.round_trips, cost.commands) == (4, 4)
    assert cost.bytes_received == len(b"$0\r\n\r\n") + len(b"$3\r\nvvv\r\n") + len(b"$10\r\n" + b"v" * 10 + b"\r\n") + 5
    assert cost.names == ["GET"] * 4


def test_counts_are_the_same_on_every_engine(redis_conn):
    keys = KeySpace(redis_conn.client, "wbtest_same:")
    try:
        with count_commands() as cost:
            keys.client.hset(keys.key("h"), mapping={"a": 1.5, "b": "x"})
            keys.client.hgetall(keys.key("h"))
            pipe = keys.client.pipeline(transaction=False)
            pipe.zincrby(keys.key("z"), 1, "m")
            pipe.zrevrange(keys.key("z"), 0, 9, withscores=True)
            pipe.execute()
        # by hand, in RESP: requests 64 + 37 + 51 + 70 bytes; replies ":2", a 4-element array (34 bytes),
        # "$1 1" (7) and a 2-element array (18)
        assert cost.as_dict() == {"round trips": 3, "commands": 4, "bytes sent": 222, "bytes received": 63}
    finally:
        keys.drop()


def test_an_error_reply_is_counted(redis_keys):
    r = redis_keys.client
    r.set(redis_keys.key("s"), "text")
    with count_commands() as cost, pytest.raises(rb.redis.ResponseError):
        r.lpush(redis_keys.key("s"), "x")  # WRONGTYPE
    assert (cost.round_trips, cost.commands) == (1, 1) and cost.bytes_received > 0


def test_the_key_space_deletes_only_its_own_keys(redis_conn):
    r = redis_conn.client
    mine, other = KeySpace(r, "wbtest_mine:"), KeySpace(r, "wbtest_minefield:")
    try:
        r.set(mine.key("a"), 1)
        r.set(mine.key("b", "c"), 2)
        r.set(other.key("a"), 3)
        r.set("wbtest_mine", 4)  # no colon: not under the prefix
        assert mine.keys() == ["wbtest_mine:a", "wbtest_mine:b:c"]
        assert mine.drop() == 2
        assert r.get(other.key("a")) == "3" and r.get("wbtest_mine") == "4"
    finally:
        other.drop()
        r.delete("wbtest_mine")


@pytest.mark.parametrize("prefix", ["", "no_colon", "glob*:", "sp ace:", "q?:"])
def test_a_prefix_that_could_match_other_keys_is_refused(prefix):
    with pytest.raises(ValueError, match="prefix"):
        KeySpace(object(), prefix)


def test_a_databases_key_space_has_one_length_and_its_own_keys():
    a, b = KeySpace.for_database(None, "schema_workbook"), KeySpace.for_database(None, "wbtest_0123456789")
    assert a.prefix != b.prefix and len(a.prefix) == len(b.prefix) == len("wb07:123456:")
    assert a.prefix == KeySpace.for_database(None, "schema_workbook").prefix  # the same every run


def test_two_learners_on_one_redis_with_the_default_database_get_two_prefixes():
    ana = KeySpace.for_database(None, "schema_workbook", learner="schema_workbook_ana_1a2b")
    ben = KeySpace.for_database(None, "schema_workbook", learner="schema_workbook_ben_3c4d")
    assert ana.prefix != ben.prefix and len(ana.prefix) == len(ben.prefix)
    # by default the learner is the login and machine, as the student database is named
    from helpers import settings
    assert KeySpace.for_database(None, "schema_workbook").prefix == \
        KeySpace.for_database(None, "schema_workbook", learner=settings.student_db_name()).prefix


def _refusing_server(reply: bytes):
    """A loopback server that answers every request with ``reply``: a Redis that refuses the login."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    while conn.recv(4096):
                        conn.sendall(reply)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_a_refused_login_is_named_as_such_not_as_unreachable():
    server = _refusing_server(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    try:
        port = server.getsockname()[1]
        with pytest.raises(RedisBackendError) as err:
            connect_redis(f"redis://:N0tThePassword@127.0.0.1:{port}/0")
    finally:
        server.close()
    message = str(err.value)
    assert "refused the login" in message and "password" in message
    assert "within" not in message and "Cannot connect" not in message
    assert "N0tThePassword" not in message and "redis://:****@127.0.0.1" in message


def test_a_closed_port_is_named_as_such_not_as_a_time_limit():
    with pytest.raises(RedisBackendError) as err:
        connect_redis(f"redis://127.0.0.1:{free_port()}/0")
    message = str(err.value)
    assert "connection refused" in message and "within" not in message


def test_a_unix_socket_url_is_shown_with_only_its_password_hidden(tmp_path):
    path = tmp_path / "no-redis.sock"
    with pytest.raises(RedisBackendError) as err:
        connect_redis(f"unix://:s0ck3tpw@{path}?db=0")
    message = str(err.value)
    assert f"unix://:****@{path}?db=0" in message and "s0ck3tpw" not in message
    assert "hidden" not in message and "within" not in message


def test_a_unix_socket_urls_escaped_password_is_hidden_in_both_forms():
    from helpers.kv.redis_backend import _redacted

    shown, scrub = _redacted("unix://:p%40ss%2Fw0rd@/tmp/x.sock?db=0&password=q%26r")
    assert shown == "unix://:****@/tmp/x.sock?db=0&password=****"
    text = scrub("AUTH p@ss/w0rd failed; p%40ss%2Fw0rd; q&r; q%26r")
    assert not any(secret in text for secret in ("p@ss/w0rd", "p%40ss%2Fw0rd", "q&r", "q%26r")), text


@pytest.mark.parametrize("url", ["redis://hunter22@127.0.0.1:{port}/0", "rediss://hunter22@127.0.0.1:{port}/0",
                                 "unix://hunter22@/tmp/no-such-redis-{port}.sock"])
def test_a_password_typed_without_its_colon_is_hidden_too(url):
    """``redis://hunter22@host``: the learner left out the ':' of ``redis://:password@host``. Redis
    reads it as a user name, but a Redis URL's user info is hidden whole either way."""
    url = url.format(port=free_port())
    shown, scrub = rb._redacted(url)
    assert "hunter22" not in shown and "****@" in shown
    assert "hunter22" not in scrub(f"AUTH failed for hunter22 ({url})")
    with pytest.raises(RedisBackendError) as err:
        connect_redis(url)
    assert "hunter22" not in str(err.value)


@pytest.mark.parametrize("port", ["9" * 5000, "99999"])
def test_a_port_of_thousands_of_digits_gets_the_workbooks_sentence(port):
    with pytest.raises(RedisBackendError) as err:
        connect_redis(f"redis://:pw-secret@127.0.0.1:{port}/0")
    message = str(err.value)
    assert "REDIS_URL" in message and "1 to 65535" in message and len(message) < 800, message
    assert "set_int_max_str_digits" not in message and "pw-secret" not in message
