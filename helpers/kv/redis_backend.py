"""Redis for notebook 07: connect, probe what the engine can show, and count commands and round trips.

Introduced in notebook 07 (``notebooks/07_mongodb_vs_redis.ipynb``). The same ladder as MongoDB's:

* ``REDIS_URL`` set (``redis://[:password@]host:port/db``, ``rediss://`` for TLS, ``unix:///path`` for a
  socket): the learner's own Redis (local, Docker, a cloud service). Unusable: :class:`RedisBackendError`
  within 5 seconds, naming ``REDIS_URL`` with its password replaced by ``****`` and saying which it is
  (a refused login, nothing listening at the address, no answer in time, not a Redis URL);
* else fakeredis: a pure-Python Redis inside this process (nothing to install or start).

Capabilities are *probed* on connect (``MEMORY USAGE``, ``OBJECT ENCODING``, ``INFO``, ``CONFIG GET``,
the JSON and time-series modules, the query engine's ``FT._LIST``, ``GEOSEARCH``), so the notebook labels what an engine cannot show
from the probe, never from the engine's name.

Costs, counted the same way on every engine (see :func:`count_commands`): a *round trip* is one
request written to the connection (a pipeline of 1,000 commands is one); *commands* are the replies
read; *bytes sent* is the request exactly as the client encodes it (RESP); *bytes received* is the
RESP2 encoding of each reply, computed from the reply (a real server sends those bytes; fakeredis
sends none, so the same rule gives it the same number).

Safety: the workbook's keys live under one prefix (:class:`KeySpace`); it deletes only keys under
that prefix, never ``FLUSHDB``.
"""
from __future__ import annotations

import hashlib
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import redis

from .. import settings
from .. import uri as _uri
from ..backends import ProcessWide
from ..counting import Counters

__all__ = [
    "RedisBackendError", "RedisCaps", "RedisInfo", "RedisConnection", "RedisCost", "KeySpace",
    "connect_redis", "get_redis", "redis_info", "banner", "count_commands", "resp_size", "close",
    "CONNECT_TIMEOUT_S",
]

CONNECT_TIMEOUT_S = 4.0  # + our own overhead stays under the promised 5 seconds
_STATUS_REPLIES = {"OK", "QUEUED", "PONG"}  # simple-string replies ("+OK\r\n"), not bulk strings


class RedisBackendError(RuntimeError):
    """Redis cannot be used; the message says which variable to change and how."""


# ---------------------------------------------------------------------------------------------
# counting: one mixin for the real connection classes and for fakeredis's

@dataclass
class RedisCost:
    """What a block of code cost in Redis: round trips, commands, bytes each way."""

    round_trips: int = 0
    commands: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    names: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        """The numbers alone (deterministic: the same on every Redis engine)."""
        return {"round trips": self.round_trips, "commands": self.commands,
                "bytes sent": self.bytes_sent, "bytes received": self.bytes_received}


_ACTIVE: Counters[RedisCost] = Counters()
_QUIET = threading.local()  # set while a connection does its own handshake


@contextmanager
def count_commands() -> Iterator[RedisCost]:
    """Count every Redis command and round trip sent inside the ``with`` block (any engine)."""
    with _ACTIVE.opened(RedisCost()) as cost:
        yield cost


def _each(fn: Any) -> None:
    if not getattr(_QUIET, "on", False):
        _ACTIVE.each(fn)


def resp_size(reply: Any) -> int:
    """Bytes of ``reply`` in RESP2, the Redis protocol: ``$3\\r\\nabc\\r\\n``, ``:42\\r\\n``, ``*2\\r\\n...``.

    Status replies (``OK``, ``QUEUED``, ``PONG``) are simple strings (``+OK\\r\\n``); a nil is ``$-1\\r\\n``;
    an error is ``-<message>\\r\\n``.
    """
    if reply is None:
        return 5
    if isinstance(reply, Exception):
        return len(str(reply).encode()) + 3
    if isinstance(reply, bool):
        return 4
    if isinstance(reply, int):
        return len(str(reply)) + 3
    if isinstance(reply, float):
        reply = repr(reply)
    if isinstance(reply, str):
        if reply in _STATUS_REPLIES:
            return len(reply) + 3
        reply = reply.encode()
    if isinstance(reply, (bytes, bytearray, memoryview)):
        n = len(reply)
        return len(str(n)) + 3 + n + 2
    if isinstance(reply, (list, tuple)):
        return len(str(len(reply))) + 3 + sum(resp_size(r) for r in reply)
    if isinstance(reply, dict):  # RESP3 maps never reach here with protocol 2; count as a flat array
        items = [x for kv in reply.items() for x in kv]
        return len(str(len(items))) + 3 + sum(resp_size(r) for r in items)
    return resp_size(str(reply))


class _CountingMixin:
    """Counts round trips and bytes as the client writes requests and reads replies."""

    def on_connect(self, *args: Any, **kwargs: Any) -> Any:
        _QUIET.on = True  # the handshake (HELLO, CLIENT SETINFO, SELECT) is not the learner's command
        try:
            return super().on_connect(*args, **kwargs)  # type: ignore[misc]
        finally:
            _QUIET.on = False

    def send_command(self, *args: Any, **kwargs: Any) -> Any:
        _each(lambda c: c.names.append(str(args[0]).upper()) if args else None)
        return super().send_command(*args, **kwargs)  # type: ignore[misc]

    def pack_commands(self, commands: Any) -> Any:
        commands = list(commands)
        _each(lambda c: c.names.extend(str(a[0]).upper() for a in commands if a))
        return super().pack_commands(commands)  # type: ignore[misc]

    def send_packed_command(self, command: Any, check_health: bool = True) -> Any:
        chunks = [command] if isinstance(command, (str, bytes, bytearray, memoryview)) else list(command)
        sent = sum(len(c.encode() if isinstance(c, str) else c) for c in chunks)

        def add(c: RedisCost) -> None:
            c.round_trips += 1
            c.bytes_sent += sent

        _each(add)
        return super().send_packed_command(chunks, check_health=check_health)  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            reply = super().read_response(*args, **kwargs)  # type: ignore[misc]
        except redis.ResponseError as error:
            error_size = resp_size(error)
            _each(lambda c: (setattr(c, "commands", c.commands + 1),
                             setattr(c, "bytes_received", c.bytes_received + error_size)))
            raise
        size = resp_size(reply)
        _each(lambda c: (setattr(c, "commands", c.commands + 1),
                         setattr(c, "bytes_received", c.bytes_received + size)))
        return reply


class CountingConnection(_CountingMixin, redis.Connection):
    """A TCP connection to a real Redis that counts (``redis://``)."""


class CountingSSLConnection(_CountingMixin, redis.SSLConnection):
    """A TLS connection to a real Redis that counts (``rediss://``)."""


class CountingUnixConnection(_CountingMixin, redis.UnixDomainSocketConnection):
    """A Unix-socket connection to a real Redis that counts (``unix://``)."""


def _fake_connection_class() -> type:
    try:
        from fakeredis import FakeRedisConnection as FakeConnection
    except ImportError:  # fakeredis before FakeRedisConnection's name
        from fakeredis import FakeConnection  # type: ignore[no-redef]

    class CountingFakeConnection(_CountingMixin, FakeConnection):
        """fakeredis's in-process connection, counted by the same rules."""

    return CountingFakeConnection


# ---------------------------------------------------------------------------------------------
# capabilities

@dataclass(frozen=True)
class RedisCaps:
    """What the connected Redis engine can show, probed on connect."""

    memory_usage: bool  # MEMORY USAGE key: bytes a key takes in the server's memory
    object_encoding: bool  # OBJECT ENCODING key: listpack, hashtable, skiplist, ... (faithful values)
    info: bool  # INFO memory / persistence
    config: bool  # CONFIG GET (cloud services often refuse it)
    geo_search: bool  # GEOSEARCH (Redis 6.2+)
    json_module: bool  # JSON.SET (RedisJSON, Redis Stack / Redis 8)
    timeseries_module: bool  # TS.CREATE (RedisTimeSeries)
    query_engine: bool = False  # FT._LIST answers: the Redis Query Engine (secondary indexes; core in Redis 8)

    def as_dict(self) -> dict[str, bool]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RedisInfo:
    """Which Redis engine notebook 07 talks to, and what it can show."""

    name: str  # "redis" (a server from REDIS_URL) or "fakeredis"
    engine: str  # e.g. "Redis 7.0.15", "fakeredis 2.41.0"
    url: str | None  # redacted: never contains a password
    caps: RedisCaps
    persistence: dict[str, str] = field(default_factory=dict)  # CONFIG GET save/appendonly/appendfsync

    def banner(self) -> str:
        where = f" at {self.url}" if self.url else " (in this process)"
        hint = "unset REDIS_URL for the in-process fakeredis" if self.url else \
            "set REDIS_URL=redis://localhost:6379/0 for a real Redis"
        return f"Redis: {self.engine}{where} | {hint}"

    def cannot_show(self) -> list[str]:
        """Plain-language list of what this engine cannot show that a real Redis server would."""
        c, out = self.caps, []
        if not c.memory_usage:
            out.append("memory per key (MEMORY USAGE)")
        if not c.object_encoding:
            out.append("internal encodings (OBJECT ENCODING)")
        if not c.info:
            out.append("server memory and persistence state (INFO)")
        if not c.config:
            out.append("its persistence settings (CONFIG GET)")
        if not c.geo_search:
            out.append("GEOSEARCH")
        return out


@dataclass
class RedisConnection:
    """A Redis client (counted) and what its engine can show."""

    client: Any
    info: RedisInfo
    server: Any = None  # fakeredis's in-process server

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # pragma: no cover - best effort
            pass


def _try(client: Any, *args: Any) -> Any:
    try:
        return client.execute_command(*args)
    except (redis.ResponseError, TypeError, AttributeError, NotImplementedError):
        return None


def _probe(client: Any, prefix: str) -> tuple[RedisCaps, dict[str, str], str | None]:
    """Small experiments under ``<prefix>probe:<random>``, deleted afterwards."""
    base = f"{prefix}probe:{uuid.uuid4().hex[:8]}:"
    small, big, js, ts, geo = (base + k for k in ("small", "big", "json", "ts", "geo"))
    try:
        client.hset(small, mapping={"a": "1", "b": "2"})
        client.hset(big, mapping={f"f{i}": "x" * 100 for i in range(200)})
        usage = _try(client, "MEMORY", "USAGE", small)
        memory_usage = isinstance(usage, int) and usage > 0
        enc_small, enc_big = _try(client, "OBJECT", "ENCODING", small), _try(client, "OBJECT", "ENCODING", big)
        object_encoding = enc_small in ("listpack", "ziplist") and enc_big == "hashtable"
        info = _try(client, "INFO", "server")
        version = None
        if isinstance(info, dict):
            version = info.get("redis_version") or info.get("valkey_version")
        elif isinstance(info, str):
            for line in info.splitlines():
                if line.startswith("redis_version:"):
                    version = line.split(":", 1)[1].strip()
        persistence: dict[str, str] = {}
        config_ok = False
        for name in ("save", "appendonly", "appendfsync"):
            got = _try(client, "CONFIG", "GET", name)
            if isinstance(got, dict) and name in got:
                persistence[name] = str(got[name])
                config_ok = True
            elif isinstance(got, list) and len(got) >= 2:
                persistence[name] = str(got[1])
                config_ok = True
        client.geoadd(geo, (8.5492, 47.4647, "LSZH"))
        geo_ok = _try(client, "GEOSEARCH", geo, "FROMLONLAT", 8.5, 47.45, "BYRADIUS", 10, "km") == ["LSZH"]
        json_ok = _try(client, "JSON.SET", js, "$", '{"a":1}') == "OK"
        ts_ok = _try(client, "TS.CREATE", ts) == "OK"
        query_ok = isinstance(_try(client, "FT._LIST"), (list, set, tuple))
        caps = RedisCaps(memory_usage=memory_usage, object_encoding=object_encoding,
                         info=version is not None, config=config_ok, geo_search=geo_ok,
                         json_module=json_ok, timeseries_module=ts_ok, query_engine=query_ok)
        return caps, persistence, version
    finally:
        client.delete(small, big, js, ts, geo)


# ---------------------------------------------------------------------------------------------
# connecting

_SAFE_UNIX_OPTIONS = {"db"}  # options of a unix:// URL shown in clear; every other value is hidden


def _redacted_unix(url: str) -> tuple[str, list[str]]:
    """``unix://[[user]:password@]/path/to/socket[?db=N&...]`` with its password and option values
    (other than ``db``) hidden, and the secrets it holds."""
    rest = url.strip()[len("unix://"):]
    path, _, query = rest.partition("?")
    secrets: list[str] = []
    shown = "unix://"
    if "@" in path:
        userinfo, path = path.rsplit("@", 1)
        user, sep, password = userinfo.partition(":")
        if not sep:  # `unix://secret@/path`: a password that lost its ':'
            user, password = "****", user
        shown += user + (":****" if sep else "") + "@"
        if password:
            secrets.append(password)
    shown += path
    if query:
        pieces = []
        for piece in query.split("&"):
            name, eq, value = piece.partition("=")
            if eq and name.lower() in _SAFE_UNIX_OPTIONS:
                pieces.append(piece)
            else:
                pieces.append(f"{name}=****" if eq else "****")
                secrets.append(value if eq else piece)
        shown += "?" + "&".join(pieces)
    from urllib.parse import unquote

    # redis-py decodes %XX escapes before it uses a secret: hide the decoded form as well
    return shown, [x for secret in secrets if secret for x in dict.fromkeys((secret, unquote(secret)))]


def _redacted(url: str) -> tuple[str, Any]:
    """(the URL with its password hidden, a scrubber for error texts), from the workbook's URI helpers
    (a ``unix://`` socket URL, which those do not parse, is redacted here)."""
    if url.strip().lower().startswith("unix://"):
        shown, secrets = _redacted_unix(url)

        def scrub(text: str) -> str:
            for secret in sorted(secrets, key=len, reverse=True):
                text = text.replace(secret, "****")
            return text
        return shown, scrub
    return _uri.redact(url), lambda text: _uri.scrub(text, url)


_AUTH_WORDS = ("NOAUTH", "WRONGPASS", "invalid password", "invalid username-password", "Authentication required",
               "AUTH <password> called without any password")


def _connect_error(e: BaseException, shown: str, scrub: Any) -> RedisBackendError:
    """A message that says what went wrong: the login, the address, the time limit, or the URL itself."""
    detail = scrub(f"{type(e).__name__}: {e}")[:300]
    offline = "Or run offline: unset REDIS_URL (notebook 07 then uses the in-process fakeredis)."
    text = str(e)
    if isinstance(e, redis.AuthenticationError) or any(w.lower() in text.lower() for w in _AUTH_WORDS):
        return RedisBackendError(
            f"The Redis server in REDIS_URL={shown} refused the login ({detail}).\n"
            f"Fix: put the right password (and user, for an ACL user) in REDIS_URL: "
            f"redis://[user]:password@host:port/db.\n{offline}")
    if isinstance(e, redis.TimeoutError):
        return RedisBackendError(
            f"The Redis server in REDIS_URL={shown} did not answer within {CONNECT_TIMEOUT_S:.0f} s ({detail}).\n"
            f"Fix: check the host and that a firewall lets you reach it, or start a local server with "
            f"`docker run -d -p 6379:6379 redis:7` and set REDIS_URL=redis://localhost:6379/0.\n{offline}")
    if isinstance(e, ValueError):
        return RedisBackendError(
            f"REDIS_URL={shown} is not a valid Redis URL ({detail}).\n"
            f"Fix: write redis://[:password@]host:port/db, e.g. REDIS_URL=redis://localhost:6379/0.\n{offline}")
    refused = "refused" in text.lower() or "errno 111" in text.lower() or "errno 61" in text.lower()
    where = ("nothing accepts connections at that address (connection refused): check the host and port, "
             "and that the server is running" if refused else "check the host, port or socket path, and that the "
             "server is running")
    return RedisBackendError(
        f"Cannot connect to the Redis server in REDIS_URL={shown} ({detail}).\n"
        f"Fix: {where}; or start one with `docker run -d -p 6379:6379 redis:7` and set "
        f"REDIS_URL=redis://localhost:6379/0.\n{offline}")


def _connect_url(url: str) -> Any:
    shown, scrub = _redacted(url)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    classes = {"redis": CountingConnection, "rediss": CountingSSLConnection, "unix": CountingUnixConnection}
    if scheme not in classes:
        raise RedisBackendError(
            f"REDIS_URL={shown} is not a Redis URL: use redis://[:password@]host:port/db "
            f"(rediss:// for TLS, unix:///path/to/socket), e.g. REDIS_URL=redis://localhost:6379/0; "
            f"or unset REDIS_URL to use the in-process fakeredis.")
    port = _uri.port_problem(url) if scheme != "unix" else None
    if port:  # before redis-py's int(), which refuses a port of over 4,300 digits with advice of its own
        raise RedisBackendError(
            f"REDIS_URL={shown} is not a valid Redis URL ({port}).\n"
            f"Fix: write redis://[:password@]host:port/db, e.g. REDIS_URL=redis://localhost:6379/0.\n"
            f"Or run offline: unset REDIS_URL (notebook 07 then uses the in-process fakeredis).")
    client = None
    try:
        pool = redis.ConnectionPool.from_url(
            url, connection_class=classes[scheme], decode_responses=True, protocol=2,
            socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S,
            retry_on_timeout=False)
        client = redis.Redis(connection_pool=pool)
        client.ping()
        return client
    except (redis.RedisError, ValueError, OSError) as e:
        if client is not None:
            client.close()
        raise _connect_error(e, shown, scrub) from None


def connect_redis(url: str | None = None, *, prefix: str = "schema_workbook:", probe: bool = True,
                  use_setting: bool = True) -> RedisConnection:
    """Open a Redis connection: ``url`` (default ``REDIS_URL``), else an in-process fakeredis.

    ``prefix`` is where the probe's scratch keys go (deleted at once). Introduced in notebook 07.
    """
    if url is None and use_setting:
        url = settings.redis_url()
    server = None
    if url:
        client = _connect_url(url)
        name = "redis"
    else:
        import fakeredis

        server = fakeredis.FakeServer()
        client = fakeredis.FakeRedis(server=server, decode_responses=True, protocol=2,
                                     connection_class=_fake_connection_class())
        client.ping()
        name = "fakeredis"
    if probe:
        caps, persistence, version = _probe(client, prefix)
    else:
        caps = RedisCaps(False, False, False, False, False, False, False)
        persistence, version = {}, None
    if name == "fakeredis":
        from importlib.metadata import version as _v

        engine = f"fakeredis {_v('fakeredis')}"
    else:
        engine = f"Redis {version}" if version else "Redis (version not reported)"
    shown = _redacted(url)[0] if url else None
    info = RedisInfo(name=name, engine=engine, url=shown, caps=caps, persistence=persistence)
    return RedisConnection(client, info, server)


# ---------------------------------------------------------------------------------------------
# the process-wide connection the notebook uses

_SHARED: ProcessWide[RedisConnection] = ProcessWide(lambda: connect_redis())


def get_redis() -> Any:
    """The notebook's Redis client (``REDIS_URL``, else fakeredis), connecting on first use."""
    return _SHARED.get().client


def redis_info() -> RedisInfo:
    """Engine, redacted URL, probed capabilities and persistence settings of the current Redis."""
    return _SHARED.get().info


def banner() -> str:
    """The one-line Redis banner notebook 07 prints beside MongoDB's."""
    return redis_info().banner()


def close() -> None:
    """Close the process-wide Redis connection."""
    _SHARED.close()


# ---------------------------------------------------------------------------------------------
# the workbook's keys

class KeySpace:
    """The workbook's keys in one Redis: ``<prefix>name``; :meth:`drop` deletes only those.

    ``KeySpace(r, "wb07:3fa2c1:")``: ``keys.key("pos", "4b1815")`` -> ``"wb07:3fa2c1:pos:4b1815"``;
    :meth:`for_database` makes the prefix of a learner's database.
    The prefix may contain only letters, digits, ``_``, ``-`` and ``:`` (so it is never a pattern).
    """

    _ALLOWED = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:")

    @classmethod
    def for_database(cls, client: Any, database: str, lesson: str = "07", *,
                     learner: str | None = None) -> "KeySpace":
        """The workbook's keys for this learner's ``database``: ``wb07:<6 hex>:``.

        The 6 hex digits come from the database's name *and* the learner (default: the login and the
        machine, as ``helpers.settings.student_db_name`` names a learner), so two learners sharing one
        Redis do not share keys, even when both use the offline default database ``schema_workbook``
        (a 24-bit tag: two given learners get the same one by chance once in about 16.8 million pairs).
        Every prefix has the same length, so bytes sent are the same for every learner.
        """
        who = learner if learner is not None else settings.student_db_name()
        digest = hashlib.sha256(f"{database}\0{who}".encode()).hexdigest()[:6]
        return cls(client, f"wb{lesson}:{digest}:")

    def __init__(self, client: Any, prefix: str) -> None:
        if not prefix or not set(prefix) <= self._ALLOWED or not prefix.endswith(":"):
            raise ValueError(f"KeySpace: prefix={prefix!r} must be letters, digits, '_', '-' or ':' and end "
                             f"with ':', e.g. 'schema_workbook:07:'")
        self.client = client
        self.prefix = prefix

    def key(self, *parts: Any) -> str:
        """The full key of ``parts`` joined by ``:``, under the prefix."""
        return self.prefix + ":".join(str(p) for p in parts)

    def keys(self, pattern: str = "*") -> list[str]:
        """Keys under the prefix matching ``pattern`` (SCAN, never KEYS), sorted."""
        return sorted(self.client.scan_iter(match=self.prefix + pattern, count=1000))

    def drop(self) -> int:
        """Delete every key under the prefix, and nothing else; returns how many."""
        n = 0
        batch: list[str] = []
        for k in self.client.scan_iter(match=self.prefix + "*", count=1000):
            batch.append(k)
            if len(batch) >= 1000:
                n += self.client.delete(*batch)
                batch = []
        if batch:
            n += self.client.delete(*batch)
        return n

    def __repr__(self) -> str:
        return f"KeySpace({self.prefix!r})"

