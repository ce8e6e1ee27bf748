"""Backends: the one place where the workbook connects to a database.

Introduced in notebook 00. ``WORKBOOK_BACKEND`` chooses the engine:

* ``auto`` (default): ``mongodb`` when ``MONGODB_URI`` is set, else ``embedded``, else ``mock``;
* ``mongodb``: the server in ``MONGODB_URI`` (local mongod, Docker, Atlas) through pymongo;
* ``embedded``: a SecantusDB server started here on a free loopback port (a real MongoDB
  wire-protocol server: the same ``pymongo.MongoClient`` path), stopped when the kernel exits;
* ``mock``: mongomock-ng, in process, with a counter that stands in for command monitoring.

Capabilities are *probed* on connect (explain, ``$bsonSize``, validators, the 16 MB limit,
transactions, ...), so notebooks branch on what the engine does, not on its name.
"""
from __future__ import annotations

import contextlib
import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import bson

from . import settings
from . import uri as _uri
from .counting import attach_listener_client

__all__ = [
    "BackendError",
    "Capabilities",
    "BackendInfo",
    "Connection",
    "connect",
    "get_db",
    "backend_info",
    "banner",
    "redact_uri",
    "close",
    "CONNECT_TIMEOUT_MS",
    "DEFAULT_DB",
]

DEFAULT_DB = settings.DEFAULT_DB
CONNECT_TIMEOUT_MS = 4000  # + our own overhead stays under the promised 5 seconds
BACKENDS = settings.BACKENDS
SWITCH_HINT = "switch with WORKBOOK_BACKEND=mongodb|embedded|mock (mongodb needs MONGODB_URI)"

# Known wrong answers, measured: docs/ENGINES.md. Shown next to affected outputs.
KNOWN_WRONG = {
    "mongomock-ng": (
        "no indexes at all: every query scans the collection, so timings say nothing about a server",
        "explain() always reports COLLSCAN with 0 keys examined",
        "$slice projection drops the other fields",
        "$bsonSize and $strLenBytes are not implemented",
        "$jsonSchema validators are not implemented",
        "documents over 16 MB are accepted",
        "$near with $centerSphere fails",
        "collations are ignored: an index loses its collation, a query's collation is not applied",
    ),
    "SecantusDB": (
        "explain() of a regex on an indexed field or of an _id range shows COLLSCAN with made-up key counts",
        "$graphLookup accepts restrictSearchWithMatch but ignores it",
        "$near returns the right documents but not nearest-first",
    ),
    "MongoDB": (),
}


class BackendError(RuntimeError):
    """The chosen backend cannot be used; the message says which variable to change and how."""


@dataclass(frozen=True)
class Capabilities:
    """What the connected engine really does, probed on connect (see docs/ENGINES.md)."""

    indexes: bool  # queries use indexes (the mock scans every document)
    explain: bool  # explain() shows real plans (IXSCAN vs COLLSCAN) for equality/range queries
    explain_regex: bool  # explain() of a prefix regex on an indexed field is faithful
    bson_size: bool  # server-side $bsonSize
    json_schema: bool  # $jsonSchema validators reject bad documents (code 121)
    max_document_size: bool  # the server itself rejects documents over 16 MB
    transactions: bool  # multi-document transactions (a standalone mongod has none)
    graph_restrict: bool  # $graphLookup honours restrictSearchWithMatch
    slice_projection: bool  # {"arr": {"$slice": n}} keeps the other fields
    collation: bool = False  # indexes keep their collation and queries honour one (case-insensitive match)

    def as_dict(self) -> dict[str, bool]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class BackendInfo:
    """Which engine the notebooks talk to, and what it can show."""

    name: str  # mongodb | embedded | mock
    engine: str  # MongoDB | SecantusDB | mongomock-ng
    version: str  # server version as reported by the engine
    database: str
    uri: str | None  # redacted: never contains a password
    caps: Capabilities
    known_wrong: tuple[str, ...] = ()
    note: str | None = None  # e.g. why auto fell back to the mock

    def banner(self) -> str:
        where = f" at {self.uri}" if self.uri and self.name == "mongodb" else ""
        return (
            f"Backend: {self.name} ({self.engine} {self.version}){where} | database: {self.database} "
            f"| {SWITCH_HINT}"
        )

    def cannot_show(self) -> list[str]:
        """Plain-language list of what this engine cannot show that a real server would."""
        out = []
        c = self.caps
        if not c.indexes:
            out.append("index effects: it has no indexes, every query scans the collection")
        if not c.explain:
            out.append("query plans: explain() is not faithful here")
        elif not c.explain_regex:
            out.append("plans of regex and _id-range queries: explain() is not faithful for them here")
        if not c.bson_size:
            out.append("server-side $bsonSize (the workbook computes sizes client-side, same numbers)")
        if not c.json_schema:
            out.append("$jsonSchema validation")
        if not c.max_document_size:
            out.append("the server's own 16 MB rejection (a labelled client-side check stands in)")
        if not c.transactions:
            out.append("multi-document transactions")
        if not c.graph_restrict:
            out.append("$graphLookup restrictSearchWithMatch")
        if not c.collation:
            out.append("collations (case-insensitive indexes and queries)")
        return out


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
        try:
            self.client.close()
        finally:
            if self.server is not None:
                try:
                    self.server.stop()
                except Exception:  # pragma: no cover - best effort at exit
                    pass


def redact_uri(uri: str) -> str:
    """The URI with any password replaced by ``****`` (and secret query options too)."""
    return _uri.redact(uri)


# ---------------------------------------------------------------------------------------------
# capability probes: small experiments in a throwaway collection of the workbook's database

def _probe(db: Any, is_mock: bool) -> Capabilities:
    from pymongo.errors import DocumentTooLarge, OperationFailure, PyMongoError

    from .safety import REGISTRY, track_collection

    name = f"workbook_probe_{uuid.uuid4().hex[:8]}"
    had_registry = REGISTRY in db.list_collection_names()
    coll = track_collection(db, name)
    caps: dict[str, bool] = {}
    try:
        coll.insert_many([{"_id": f"k{i:03d}", "v": i, "p": None if i == 0 else (i - 1) // 2,
                           "arr": [1, 2, 3], "x": "y"} for i in range(64)])
        coll.create_index("v")
        # explain: an equality on an indexed field must be an IXSCAN that examines one key
        try:
            plan = coll.find({"v": 7}).explain()
            stats = plan.get("executionStats", {})
            caps["explain"] = "IXSCAN" in str(plan.get("queryPlanner", {}).get("winningPlan")) and \
                stats.get("totalKeysExamined") == 1
            caps["indexes"] = True if not is_mock else False
        except (OperationFailure, NotImplementedError, AttributeError, TypeError):
            caps["explain"] = False
            caps["indexes"] = not is_mock
        if is_mock:
            caps["indexes"] = False  # mongomock-ng scans every document (docs/ENGINES.md)
        # explain of an anchored prefix regex on _id: 10 keys in ["k01", "k02")
        try:
            plan = coll.find({"_id": {"$regex": "^k01"}}).explain()
            stats = plan.get("executionStats", {})
            caps["explain_regex"] = caps["explain"] and "IXSCAN" in str(
                plan.get("queryPlanner", {}).get("winningPlan")) and stats.get("totalKeysExamined") in (10, 11)
        except (OperationFailure, NotImplementedError, AttributeError, TypeError):
            caps["explain_regex"] = False
        # server-side $bsonSize
        try:
            doc = coll.find_one({"_id": "k001"})
            got = list(coll.aggregate([{"$match": {"_id": "k001"}}, {"$project": {"s": {"$bsonSize": "$$ROOT"}}}]))
            caps["bson_size"] = bool(got) and got[0].get("s") == len(bson.encode(doc))
        except (OperationFailure, NotImplementedError, KeyError, TypeError):
            caps["bson_size"] = False
        # $slice projection keeps other fields
        try:
            d = coll.find_one({"_id": "k001"}, {"arr": {"$slice": 2}})
            caps["slice_projection"] = d.get("arr") == [1, 2] and d.get("x") == "y"
        except (OperationFailure, NotImplementedError):
            caps["slice_projection"] = False
        # $graphLookup restrictSearchWithMatch: walk up from k010 but only through odd v
        try:
            got = list(coll.aggregate([
                {"$match": {"_id": "k010"}},
                {"$graphLookup": {"from": name, "startWith": "$p", "connectFromField": "p",
                                  "connectToField": "v", "as": "up",
                                  "restrictSearchWithMatch": {"v": {"$gt": 3}}}},
            ]))
            ups = sorted(u["v"] for u in got[0]["up"]) if got else None
            caps["graph_restrict"] = ups == [4]
        except (OperationFailure, NotImplementedError):
            caps["graph_restrict"] = False
        # $jsonSchema validator
        vname = f"{name}_v"
        track_collection(db, vname)
        try:
            db.create_collection(vname, validator={"$jsonSchema": {"required": ["a"]}})
            try:
                db[vname].insert_one({"b": 1})
                caps["json_schema"] = False
            except OperationFailure as e:  # WriteError is a subclass
                caps["json_schema"] = getattr(e, "code", None) == 121
        except (OperationFailure, NotImplementedError, TypeError):
            caps["json_schema"] = False
        except Exception:
            caps["json_schema"] = False
        finally:
            db.drop_collection(vname)
        # collation: a case-insensitive index keeps its collation, and a query with it matches "Y" for "y"
        cname = f"{name}_c"
        track_collection(db, cname)
        try:
            strength2 = {"locale": "en", "strength": 2}
            db[cname].insert_many([{"_id": 1, "x": "Y"}, {"_id": 2, "x": "z"}])
            db[cname].create_index("x", collation=strength2)
            kept = any((spec.get("collation") or {}).get("strength") == 2
                       for spec in db[cname].index_information().values())
            caps["collation"] = kept and [d["_id"] for d in db[cname].find({"x": "y"}, collation=strength2)] == [1]
        except (OperationFailure, NotImplementedError, TypeError):
            caps["collation"] = False
        finally:
            db.drop_collection(cname)
        # the server's own 16 MB limit: grow a 9 MB document to 18 MB with $set
        chunk = "x" * (9 * 1024 * 1024)
        try:
            coll.insert_one({"_id": "big", "a": chunk})
            try:
                coll.update_one({"_id": "big"}, {"$set": {"b": chunk}})
                caps["max_document_size"] = False
            except (OperationFailure, DocumentTooLarge):
                caps["max_document_size"] = True
        except (PyMongoError, NotImplementedError):
            caps["max_document_size"] = False
        finally:
            coll.delete_one({"_id": "big"})
        # transactions (a standalone mongod refuses them; Atlas and replica sets have them)
        caps["transactions"] = _probe_transactions(db, coll)
    finally:
        db.drop_collection(name)
        db[REGISTRY].delete_many({"_id": {"$in": [name, f"{name}_v", f"{name}_c"]}})
        if not had_registry:  # leave the database as it was found
            db.drop_collection(REGISTRY)
    return Capabilities(**caps)


def _probe_transactions(db: Any, coll: Any) -> bool:
    from pymongo.errors import PyMongoError

    try:
        client = db.client
        with client.start_session() as session:
            def txn(s: Any) -> None:
                coll.insert_one({"_id": "txn"}, session=s)
            session.with_transaction(txn)
        ok = coll.count_documents({"_id": "txn"}) == 1
        coll.delete_one({"_id": "txn"})
        return ok
    except (PyMongoError, NotImplementedError, AttributeError, TypeError):
        return False


# ---------------------------------------------------------------------------------------------
# the three ways to connect

def _connect_uri(uri: str, db_name: str, name: str = "mongodb") -> tuple[Any, str, str]:
    import pymongo
    from pymongo.errors import ConfigurationError, PyMongoError

    shown = redact_uri(uri)
    try:
        client = pymongo.MongoClient(
            uri,
            serverSelectionTimeoutMS=CONNECT_TIMEOUT_MS,
            connectTimeoutMS=CONNECT_TIMEOUT_MS,
            socketTimeoutMS=None,
            appname="schema-workbook",
            event_listeners=[attach_listener_client()],
        )
        build = client.admin.command("buildInfo")
    except (PyMongoError, ConfigurationError, ValueError) as e:
        if "client" in locals():
            client.close()
        detail = _uri.scrub(f"{type(e).__name__}: {e}", uri)
        detail = detail.split(", Timeout:")[0][:300]
        raise BackendError(
            f"Cannot reach the MongoDB server in MONGODB_URI={shown} within "
            f"{CONNECT_TIMEOUT_MS / 1000:.0f} s ({detail}).\n"
            f"Fix: check that the server is running and reachable (host, port, user, password, "
            f"network access list on Atlas), or start one with `docker compose up -d mongo` "
            f"and set MONGODB_URI=mongodb://localhost:27017.\n"
            f"Or run offline: unset MONGODB_URI (or set WORKBOOK_BACKEND=embedded or mock)."
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
    if not db_name:  # offline engines are private; on a server, a database per student
        db_name = settings.database_name(on_server=backend == "mongodb", uri=uri)
    _check_db_name(db_name)
    if backend == "mongodb":
        if not uri:
            raise BackendError("WORKBOOK_BACKEND=mongodb needs MONGODB_URI, e.g. "
                               "MONGODB_URI=mongodb://localhost:27017 (or unset WORKBOOK_BACKEND to run offline).")
        client, engine, version = _connect_uri(uri, db_name)
        return _finish(Connection(client, client[db_name], None), "mongodb", engine, version,
                       redact_uri(uri), None, probe)
    if backend == "embedded":
        server = client = None
        try:
            with _EMBEDDED_LOCK:
                from engines.embedded import start_embedded

                server = start_embedded()
            client, engine, version = _connect_uri(server.uri, db_name)
            return _finish(Connection(client, client[db_name], None, server=server), "embedded",
                           "SecantusDB", version, None, None, probe)
        except Exception as e:
            if client is not None:  # nothing of a failed start is left running
                client.close()
            if server is not None:
                with contextlib.suppress(Exception):
                    server.stop()
            if requested == "embedded":
                raise BackendError(f"The embedded SecantusDB server could not start ({type(e).__name__}: {e}). "
                                   f"Install it with `pip install secantusdb==0.7.0b3`, or set "
                                   f"WORKBOOK_BACKEND=mock to use the in-process mock.") from None
            note = (f"embedded server unavailable ({type(e).__name__}: {str(e)[:120]}); "
                    f"fell back to the mock")
            backend = "mock"
    from engines.mock import MockDatabase

    client, ver = _connect_mock(db_name)
    conn = Connection(client, MockDatabase(client[db_name]), None)
    return _finish(conn, "mock", "mongomock-ng", ver, None, note, probe)


def _check_db_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,63}", name) or name in ("admin", "local", "config"):
        raise BackendError(f"WORKBOOK_DB={name!r} is not usable: use letters, digits, '_' or '-' "
                           f"(at most 63), and not admin/local/config.")


def _finish(conn: Connection, name: str, engine: str, version: str, uri: str | None,
            note: str | None, probe: bool) -> Connection:
    is_mock = name == "mock"
    if probe:
        caps = _probe(conn.db, is_mock)
    else:
        caps = Capabilities(indexes=not is_mock, explain=False, explain_regex=False, bson_size=False,
                            json_schema=False, max_document_size=False, transactions=False,
                            graph_restrict=False, slice_projection=False, collation=False)
    conn.info = BackendInfo(name=name, engine=engine, version=version, database=conn.db.name, uri=uri,
                            caps=caps, known_wrong=KNOWN_WRONG.get(engine, ()), note=note)
    return conn


# ---------------------------------------------------------------------------------------------
# the process-wide connection the notebooks use

_CURRENT: Connection | None = None
_LOCK = threading.Lock()


def _current() -> Connection:
    global _CURRENT
    with _LOCK:
        if _CURRENT is None:
            _CURRENT = connect()
        return _CURRENT


def get_db() -> Any:
    """The workbook's database on the configured backend (connecting on first use).

    Every notebook starts with this. See ``backend_info()`` for what the engine can show.
    """
    return _current().db


def backend_info() -> BackendInfo:
    """Name, version, database and probed capabilities of the current backend."""
    return _current().info


def banner() -> str:
    """The one-line banner every notebook prints first."""
    info = backend_info()
    line = info.banner()
    if info.note:
        line += f"\nNote: {info.note}"
    return line


def close() -> None:
    """Close the process-wide connection (and stop the embedded server, if any)."""
    global _CURRENT
    with _LOCK:
        if _CURRENT is not None:
            _CURRENT.close()
            _CURRENT = None
