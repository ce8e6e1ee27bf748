"""Backends: the one place where the workbook connects to a database.

Introduced in notebook 00. ``WORKBOOK_BACKEND`` chooses the engine:

* ``auto`` (default): ``mongodb`` when ``MONGODB_URI`` is set, else ``embedded``, else ``mock``;
* ``mongodb``: the server in ``MONGODB_URI`` (local mongod, Docker, Atlas) through pymongo;
* ``embedded``: a SecantusDB server started here on a free loopback port (a real MongoDB
  wire-protocol server: the same ``pymongo.MongoClient`` path), stopped when the kernel exits;
* ``mock``: mongomock-ng, in process, with a counter that stands in for command monitoring.

Capabilities are *probed* on connect (explain, ``$bsonSize``, validators, the 16 MiB limit,
transactions, regex and geo queries, ...), so notebooks branch on what the engine does, not on its
name, and every label of a deviation (``BackendInfo.cannot_show``, the banner) comes from the probes,
each capability declared once in ``helpers.capabilities``.
"""
from __future__ import annotations

import contextlib
import gc
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from . import capabilities as _capabilities
from . import safety as _safety
from . import settings
from . import uri as _uri
from .capabilities import Capabilities
from .counting import attach_listener_client, recorder

__all__ = [
    "BackendError",
    "Capabilities",
    "BackendInfo",
    "Connection",
    "connect",
    "get_db",
    "backend_info",
    "banner",
    "info_of",
    "redact_uri",
    "close",
    "CONNECT_TIMEOUT_MS",
    "SOCKET_CONNECT_TIMEOUT_MS",
    "DEFAULT_DB",
    "steady_gc",
    "STEADY_GC_THRESHOLDS",
    "timed_on",
    "engine_limits",
    "ProcessWide",
    "current_connection",
    "connect_uri",
]

DEFAULT_DB = settings.DEFAULT_DB
CONNECT_TIMEOUT_MS = 4000  # server selection: + our own overhead stays under the promised 5 seconds
#: the embedded server's socket connect timeout, which pymongo also gives its monitor's heartbeat
#: (hello) as a read timeout: the in-process SecantusDB, busy with one long command, holds Python's
#: GIL and can miss a 4 s heartbeat; the driver then declares it down, clears the pool and interrupts
#: the command, and the retried insert meets its own first attempt (E11000; docs/ENGINES.md). A
#: server behind MONGODB_URI keeps CONNECT_TIMEOUT_MS: pymongo also bounds a mongodb+srv:// DNS
#: lookup with it, and a real MongoDB's streaming heartbeat waits that plus heartbeatFrequencyMS.
SOCKET_CONNECT_TIMEOUT_MS = 20_000
BACKENDS = settings.BACKENDS
T = TypeVar("T")
SWITCH_HINT = "switch with WORKBOOK_BACKEND=mongodb|embedded|mock (mongodb needs MONGODB_URI)"

class BackendError(RuntimeError):
    """The chosen backend cannot be used; the message says which variable to change and how."""


@dataclass(frozen=True)
class BackendInfo:
    """Which engine the notebooks talk to, and what it can show."""

    name: str  # mongodb | embedded | mock
    engine: str  # MongoDB | SecantusDB | mongomock-ng
    version: str  # server version as reported by the engine
    database: str
    uri: str | None  # redacted: never contains a password
    caps: Capabilities
    note: str | None = None  # e.g. why auto fell back to the mock

    def banner(self) -> str:
        where = f" at {self.uri}" if self.uri and self.name == "mongodb" else ""
        return (
            f"Backend: {self.name} ({self.engine} {self.version}){where} | database: {self.database} "
            f"| {SWITCH_HINT}"
        )

    def warnings(self) -> list[str]:
        """Deviations that give a learner's own query a wrong answer without an error (for the banner)."""
        return [f"Warning: {line} (docs/ENGINES.md)" for line in _capabilities.warnings(self.caps, self.engine)]

    def cannot_show(self) -> list[str]:
        """Plain-language list of what this engine cannot show that a real server would, from the probes."""
        return _capabilities.cannot_show(self.caps)


@dataclass
class Connection:
    client: Any
    db: Any
    info: BackendInfo
    server: Any = None  # the embedded server, if we started one
    _closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _OPEN.pop(id(self.client), None)
        try:
            self.client.close()
        finally:
            if self.server is not None:
                from engines.embedded import stop_embedded

                try:
                    stop_embedded(self.server)  # server.stop() alone waits 2 s for its accept thread
                except Exception:  # pragma: no cover - best effort at exit
                    pass


def redact_uri(uri: str) -> str:
    """The URI with any password replaced by ``****`` (and secret query options too)."""
    return _uri.redact(uri)


# ---------------------------------------------------------------------------------------------
# the engine's limits, for code that meets them with any client

#: the limits of each client's engine, from its connect probe or probed on first need
_LIMITS: "weakref.WeakKeyDictionary[Any, tuple[int | None, int | None]]" = weakref.WeakKeyDictionary()
_LIMITS_LOCK = threading.Lock()


def engine_limits(db: Any) -> tuple[int | None, int | None]:
    """``(graph_max_depth, regex_max_length)`` of the engine behind ``db`` (see :class:`Capabilities`).

    Known from the connect probe for a connection this module made; for any other client,
    probed once on first need (in a throwaway collection) and remembered.
    """
    client = getattr(db, "client", None)
    with _LIMITS_LOCK:
        try:
            return _LIMITS[client]
        except (KeyError, TypeError):
            pass
    found = _capabilities.probe(db, is_mock=False, names=_capabilities.LIMITS)
    limits = (found["graph_max_depth"], found["regex_max_length"])
    with _LIMITS_LOCK, contextlib.suppress(TypeError):
        _LIMITS[client] = limits
    return limits


# ---------------------------------------------------------------------------------------------
# the three ways to connect

#: the URI options that name a file pymongo must read (a missing one is named, not a traceback)
_FILE_OPTIONS = ("tlscafile", "tlscertificatekeyfile", "tlscrlfile", "sslcafile", "sslpemkeyfile", "sslcrlfile")
_OFFLINE = "Or run offline: unset MONGODB_URI (or set WORKBOOK_BACKEND=embedded or mock)."


def _malformed(shown: str, detail: str) -> BackendError:
    return BackendError(
        f"MONGODB_URI={shown} is not a valid MongoDB connection string ({detail}).\n"
        f"Fix: write it as mongodb://user:password@host:27017/?authSource=admin or "
        f"mongodb+srv://user:password@cluster.example.net/; a password containing @ : / ? # [ ] or % "
        f"must be percent-encoded (urllib.parse.quote_plus).\n" + _OFFLINE)


def _check_uri(uri: str) -> None:
    """What can be told before connecting: not a MongoDB URI at all, or a file it names is missing."""
    from pathlib import Path

    if not _uri.is_uri(uri):
        raise _malformed(_uri.UNPARSABLE, "it must start with mongodb:// or mongodb+srv://; it is not "
                                          "shown, in case it holds a password")
    port = _uri.port_problem(uri)
    if port:
        raise _malformed(redact_uri(uri), port)
    for key, value in _uri.options(uri):
        if key.lower() in _FILE_OPTIONS and not Path(value).expanduser().is_file():
            raise BackendError(
                f"MONGODB_URI={redact_uri(uri)} names {key}={value}, which does not exist or is not a "
                f"file (seen from {Path.cwd()}).\nFix: give the full path of the file your server's "
                f"administrator sent you (for Atlas, drop {key}: it needs none), or remove the option.\n"
                + _OFFLINE)


def connect_uri(uri: str, connect_timeout_ms: int = CONNECT_TIMEOUT_MS) -> tuple[Any, str, str]:
    """Connect and ask ``buildInfo``: ``(client, engine, version)``, with no probe (probing writes;
    :func:`connect` probes, ``workbook.py class`` does not). A failure says which it is: a malformed
    URI, a missing file it names, authentication failed, or the server cannot be reached (each a
    :class:`BackendError`)."""
    import warnings

    import pymongo
    from pymongo.errors import ConfigurationError, OperationFailure, PyMongoError

    _check_uri(uri)
    shown = redact_uri(uri)

    def detail_of(e: BaseException) -> str:
        return _uri.scrub(f"{type(e).__name__}: {e}", uri).split(", Timeout:")[0].split(", full error:")[0][:300]

    client = None
    try:
        with warnings.catch_warnings(record=True) as caught:  # pymongo's option warnings, scrubbed below
            warnings.simplefilter("always")
            client = pymongo.MongoClient(
                uri,
                serverSelectionTimeoutMS=CONNECT_TIMEOUT_MS,
                connectTimeoutMS=connect_timeout_ms,
                socketTimeoutMS=None,
                appname="schema-workbook",
                event_listeners=[attach_listener_client()],
            )
    except ConfigurationError as e:
        if "DNS" in str(e) or "resolve" in str(e):  # mongodb+srv:// whose name does not resolve
            raise BackendError(
                f"Cannot reach the MongoDB server in MONGODB_URI={shown}: its host name does not resolve "
                f"({detail_of(e)}).\nFix: check the cluster's host name (Atlas: Connect > Drivers) and "
                f"the network.\n" + _OFFLINE) from None
        raise _malformed(shown, detail_of(e)) from None
    except (ValueError, TypeError, KeyError) as e:
        raise _malformed(shown, detail_of(e)) from None
    except OSError as e:  # a file named by an option, unreadable
        raise BackendError(f"MONGODB_URI={shown}: a file it names cannot be read ({detail_of(e)}).\n"
                           f"Fix: check the tls...File options' paths.\n" + _OFFLINE) from None
    for w in caught:
        warnings.warn(f"MONGODB_URI: {_uri.scrub(str(w.message), uri)}", UserWarning, stacklevel=3)
    try:
        build = client.admin.command("buildInfo")
    except OperationFailure as e:
        client.close()
        if e.code == 18 or "authentication failed" in str(e).lower():
            user = _uri.user_name(uri)
            raise BackendError(
                f"The MongoDB server in MONGODB_URI={shown} was reached, but authentication failed "
                f"(user {user!r}: {detail_of(e)}).\nFix: check the user name, the password and "
                f"authSource (a user created in the admin database needs ?authSource=admin); a password "
                f"containing @ : / ? # [ ] or % must be percent-encoded (urllib.parse.quote_plus).\n"
                + _OFFLINE) from None
        raise BackendError(f"The MongoDB server in MONGODB_URI={shown} refused the first command "
                           f"({detail_of(e)}).\n" + _OFFLINE) from None
    except (PyMongoError, OSError) as e:
        client.close()
        raise BackendError(
            f"Cannot reach the MongoDB server in MONGODB_URI={shown} within "
            f"{CONNECT_TIMEOUT_MS / 1000:.0f} s ({detail_of(e)}).\n"
            f"Fix: check that the server is running and reachable (host, port, network access list on "
            f"Atlas, TLS), or start one with `docker compose up -d mongo` and set "
            f"MONGODB_URI=mongodb://localhost:27017.\n" + _OFFLINE
        ) from None
    engine = "SecantusDB" if "secantusVersion" in build else "MongoDB"
    version = str(build.get("version", "?"))
    if engine == "SecantusDB":  # it reports the MongoDB version it emulates, and its own
        version = f"{build['secantusVersion']}, reports MongoDB {version}"
    return client, engine, version


_EMBEDDED_LOCK = threading.Lock()


def _connect_mock(db_name: str) -> tuple[Any, str]:
    import mongomock_ng

    client = mongomock_ng.MongoClient()
    try:
        from importlib.metadata import version as _v
        ver = _v("mongomock-ng")
    except Exception:  # pragma: no cover
        ver = "?"
    return client, ver


def connect(backend: str | None = None, *, uri: str | None = None, db_name: str | None = None,
            probe: bool = True) -> Connection:
    """Open a new connection to the chosen backend (``get_db`` keeps one per process).

    ``backend`` defaults to ``WORKBOOK_BACKEND`` (``auto``), ``uri`` to ``MONGODB_URI`` and
    ``db_name`` to ``WORKBOOK_DB``, else ``schema_workbook`` offline and, on a server, the
    student's own database (``helpers.settings.student_db_name``).
    """
    backend = (backend or settings.backend()).strip().lower()
    if backend not in BACKENDS:
        raise BackendError(f"WORKBOOK_BACKEND={backend!r} is not one of {', '.join(BACKENDS)}. "
                           f"Unset it for the default (auto).")
    uri = uri if uri is not None else settings.mongodb_uri()
    note = None
    requested = backend
    if backend == "auto":
        backend = "mongodb" if uri else "embedded"
    source = "the database name"  # given by the caller (e.g. `workbook.py advise --database`)
    if not db_name:  # offline engines are private; on a server, a database per student
        db_name = settings.database_name(on_server=backend == "mongodb", uri=uri)
        source = "WORKBOOK_DB" if settings.database_override() else "the database name made from your login"
    _check_db_name(db_name, source)
    if backend == "mongodb":
        if not uri:
            raise BackendError("WORKBOOK_BACKEND=mongodb needs MONGODB_URI, e.g. "
                               "MONGODB_URI=mongodb://localhost:27017 (or unset WORKBOOK_BACKEND to run offline).")
        client, engine, version = connect_uri(uri)
        return _finish(Connection(client, client[db_name], None), "mongodb", engine, version,
                       redact_uri(uri), None, probe)
    if backend == "embedded":
        server = client = None
        try:
            with _EMBEDDED_LOCK:
                from engines.embedded import start_embedded

                server = start_embedded()
            client, engine, version = connect_uri(server.uri, connect_timeout_ms=SOCKET_CONNECT_TIMEOUT_MS)
            return _finish(Connection(client, client[db_name], None, server=server), "embedded",
                           "SecantusDB", version, None, None, probe)
        except Exception as e:
            if client is not None:  # nothing of a failed start is left running
                client.close()
            if server is not None:
                from engines.embedded import stop_embedded

                with contextlib.suppress(Exception):
                    stop_embedded(server)
            if requested == "embedded":
                raise BackendError(f"The embedded SecantusDB server could not start ({type(e).__name__}: {e}). "
                                   f"Install it with `pip install secantusdb==0.7.0b3`, or set "
                                   f"WORKBOOK_BACKEND=mock to use the in-process mock.") from None
            note = (f"embedded server unavailable ({type(e).__name__}: {str(e)[:120]}); "
                    f"fell back to the mock")
            backend = "mock"
    from engines.mock import MockDatabase

    client, ver = _connect_mock(db_name)
    db = MockDatabase(client[db_name], recorder)
    conn = Connection(db.client, db, None)  # the adapter's client: its sessions count their commits
    return _finish(conn, "mock", "mongomock-ng", ver, None, note, probe)


def _check_db_name(name: str, source: str = "WORKBOOK_DB") -> None:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,63}", name) or name.lower() in ("admin", "local", "config"):
        raise BackendError(f"{source} {name!r} is not usable: use letters, digits, '_' or '-' "
                           f"(at most 63), and not admin, local or config in any letter case.")


def _finish(conn: Connection, name: str, engine: str, version: str, uri: str | None,
            note: str | None, probe: bool) -> Connection:
    is_mock = name == "mock"
    if probe:
        caps = Capabilities(**_capabilities.probe(conn.db, is_mock))
    else:
        caps = Capabilities.unprobed(is_mock)
    if probe:
        with _LIMITS_LOCK, contextlib.suppress(TypeError):
            _LIMITS[getattr(conn.db, "client", conn.client)] = (caps.graph_max_depth, caps.regex_max_length)
    conn.info = BackendInfo(name=name, engine=engine, version=version, database=conn.db.name, uri=uri,
                            caps=caps, note=note)
    _OPEN[id(conn.client)] = conn
    return conn


#: every open connection by its client, so that a collection or a database leads back to its engine
_OPEN: dict[int, Connection] = {}


def info_of(obj: Any) -> BackendInfo | None:
    """The backend of a collection, database or client opened by :func:`connect`, else None."""
    for get in (lambda o: o.database.client, lambda o: o.client, lambda o: o):
        try:
            conn = _OPEN.get(id(get(obj)))
        except Exception:
            continue
        if conn is not None and not conn._closed:
            return conn.info
    return None


# ---------------------------------------------------------------------------------------------
# the process-wide connection the notebooks use

class ProcessWide(Generic[T]):
    """One connection per process, opened on first use and shared by every caller (the one home of
    that for MongoDB here and for Redis in ``helpers.kv.redis_backend``)."""

    def __init__(self, open_: Callable[[], T]) -> None:
        self._open = open_
        self._lock = threading.Lock()
        #: the open connection, or None (reading it never connects)
        self.current: T | None = None

    def get(self) -> T:
        with self._lock:
            if self.current is None:
                self.current = self._open()
            return self.current

    def close(self) -> None:
        with self._lock:
            if self.current is not None:
                self.current.close()  # type: ignore[attr-defined]
                self.current = None


#: the garbage collector's thresholds :func:`steady_gc` sets at least (CPython 3.11's defaults,
#: with which it was measured: 700, 10, 10)
STEADY_GC_THRESHOLDS = (2_000, 10, 100)


def steady_gc() -> tuple[int, ...]:
    """Make this process's full garbage collections rarer; return the thresholds now in force.

    A notebook keeps hundreds of thousands of objects alive (its data, pandas and, on the embedded
    engine and the mock, the engine's own), and a full collection walks every container the
    collector tracks. With CPython 3.11's default thresholds notebook 04 ran 19 full collections
    on the embedded engine: 3.3 s of its 21 s, each one landing in whichever cell, and whichever
    timed run, was allocating at that moment. With :data:`STEADY_GC_THRESHOLDS` it ran none. The
    price: memory held in reference cycles is freed later; everything else is still freed at once,
    by reference counting. A threshold the process already set higher is kept, and so is a
    collector turned off (a first threshold of 0). That is the generational collector of Python
    3.11-3.13; Python 3.14's incremental collector ignores the third threshold and already starts
    at 2,000, so there this changes little."""

    now = gc.get_threshold()
    if now[0] == 0:  # collection turned off: left off
        return now
    thresholds = tuple(max(have, least) for have, least in zip(now, STEADY_GC_THRESHOLDS))
    gc.set_threshold(*thresholds)
    return thresholds



_SHARED: ProcessWide[Connection] = ProcessWide(lambda: connect())


def get_db() -> Any:
    """The workbook's database on the configured backend (connecting on first use).

    Every notebook starts with this. See ``backend_info()`` for what the engine can show. It also
    makes the process's full garbage collections rarer (:func:`steady_gc`).
    """

    steady_gc()
    return _SHARED.get().db


def backend_info() -> BackendInfo:
    """Name, version, database and probed capabilities of the current backend."""
    return _SHARED.get().info


def current_connection() -> Connection | None:
    """The process-wide connection if it is open, else None (never connects)."""
    return _SHARED.current


def banner() -> str:
    """The one-line banner every notebook prints first; below it, the engine's silent deviations and,
    for each collection of the database holding part of a load that did not finish (a kernel
    stopped mid-load: ``helpers.safety.incomplete``), what to do."""
    info = backend_info()
    line = info.banner()
    for warning in info.warnings():
        line += f"\n{warning}"
    if info.note:
        line += f"\nNote: {info.note}"
    for note in _half_loaded(_SHARED.get().db):
        line += f"\nNote: {note}"
    return line


def _half_loaded(db: Any) -> list[str]:
    try:
        return _safety.incomplete_notes(db)
    except Exception:  # noqa: BLE001 - a database this login may not read: the banner without it
        return []


def close() -> None:
    """Close the process-wide connection (and stop the embedded server, if any)."""
    _SHARED.close()


def timed_on() -> str:
    """Where a wall time shown now was measured: the engine with its version, and this machine.

    Every timing the workbook shows carries it: a time is one engine's on one machine, never a
    property of the design (notebook 00)."""
    import os
    import platform

    info = backend_info()
    return (f"{info.engine} {info.version}, on this machine ({platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()})")

