"""Backends: the one place where the workbook connects to a database.

Introduced in notebook 00. ``WORKBOOK_BACKEND`` chooses the engine:

* ``auto`` (default): ``mongodb`` when ``MONGODB_URI`` is set, else ``embedded``, else ``mock``;
* ``mongodb``: the server in ``MONGODB_URI`` (local mongod, Docker, Atlas) through pymongo;
* ``embedded``: a SecantusDB server started here on a free loopback port (a real MongoDB
  wire-protocol server: the same ``pymongo.MongoClient`` path), stopped when the kernel exits;
* ``mock``: mongomock-ng, in process, with a counter that stands in for command monitoring.

Capabilities are *probed* on connect (explain, ``$bsonSize``, validators, the 16 MiB limit,
transactions, regex and geo queries, ...), so notebooks branch on what the engine does, not on its
name, and every label of a deviation (``BackendInfo.cannot_show``, the banner) comes from the probes.
"""
from __future__ import annotations

import contextlib
import re
import threading
import uuid
import weakref
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
    "info_of",
    "redact_uri",
    "close",
    "CONNECT_TIMEOUT_MS",
    "SOCKET_CONNECT_TIMEOUT_MS",
    "DEFAULT_DB",
    "engine_limits",
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
SWITCH_HINT = "switch with WORKBOOK_BACKEND=mongodb|embedded|mock (mongodb needs MONGODB_URI)"

class BackendError(RuntimeError):
    """The chosen backend cannot be used; the message says which variable to change and how."""


@dataclass(frozen=True)
class Capabilities:
    """What the connected engine really does, probed on connect (see docs/ENGINES.md)."""

    indexes: bool  # queries use indexes (the mock scans every document)
    explain: bool  # explain() shows real plans (IXSCAN vs COLLSCAN) for equality/range queries
    explain_regex: bool  # an anchored prefix regex on a secondary index is an index scan with tight bounds
    bson_size: bool  # server-side $bsonSize
    json_schema: bool  # $jsonSchema validators reject bad documents (code 121)
    max_document_size: bool  # the server itself rejects documents over 16 MiB
    transactions: bool  # multi-document transactions (a standalone mongod has none)
    graph_restrict: bool  # $graphLookup honours restrictSearchWithMatch
    slice_projection: bool  # {"arr": {"$slice": n}} keeps the other fields
    bare_regex_indexed: bool  # a bare regex value (re.compile, bson.Regex) on an indexed field matches like {$regex}
    id_range_index: bool  # an _id range / anchored _id regex is served by the _id index (IXSCAN, bounded keys)
    array_field_path: bool  # "$arr.name" through an array of documents gives the array of values
    graph_missing_start_as: bool  # $graphLookup sets as: [] when startWith is missing
    near_sorted: bool  # $near / $nearSphere return the nearest document first
    geo_center_sphere: bool  # $geoWithin: {$centerSphere: ...} works
    geo_index: bool  # a 2dsphere index can be created and $near runs
    collation: bool = False  # indexes keep their collation and queries honour one (case-insensitive match)
    transaction_isolation: bool = False  # a write inside an open transaction is invisible to others until commit
    concurrent_clients: bool = False  # threads may share the engine: a server behind the wire protocol (the mock is not thread-safe)


    graph_max_depth: int | None = None  # deepest level $graphLookup reaches without maxDepth; None: no cap met
    regex_max_length: int | None = None  # longest $regex pattern accepted; None: no cap met

    def as_dict(self) -> dict[str, Any]:
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
    note: str | None = None  # e.g. why auto fell back to the mock

    def banner(self) -> str:
        where = f" at {self.uri}" if self.uri and self.name == "mongodb" else ""
        return (
            f"Backend: {self.name} ({self.engine} {self.version}){where} | database: {self.database} "
            f"| {SWITCH_HINT}"
        )

    def warnings(self) -> list[str]:
        """Deviations that give a learner's own query a wrong answer without an error (for the banner)."""
        out = []
        if not self.caps.bare_regex_indexed:
            out.append(f"Warning: on {self.engine} a bare regex value (re.compile, bson.Regex) on an indexed "
                       f"field matches nothing: write {{\"field\": {{\"$regex\": \"^...\"}}}} (docs/ENGINES.md)")
        return out

    def cannot_show(self) -> list[str]:
        """Plain-language list of what this engine cannot show that a real server would, from the probes."""
        out = []
        c = self.caps
        if not c.indexes:
            out.append("index effects: it has no indexes, every query scans the collection (an _id equality "
                       "is looked up by key)")
        if not c.explain:
            out.append("query plans: explain() is not faithful here")
        if c.indexes and not c.id_range_index:
            out.append("an _id range or anchored _id regex served by the _id index: here it scans the whole "
                       "collection (its explain's COLLSCAN is the truth); a real MongoDB scans index bounds")
        if c.indexes and not c.explain_regex:
            out.append("a prefix regex on an indexed field served by index bounds: here it scans the collection")
        if not c.bare_regex_indexed:
            out.append("a bare regex value (re.compile, bson.Regex) on an indexed field: it matches nothing here; "
                       "{\"$regex\": ...} works")
        if not c.bson_size:
            out.append("server-side $bsonSize (the workbook computes sizes client-side, same numbers)")
        if not c.json_schema:
            out.append("$jsonSchema validation")
        if not c.max_document_size:
            out.append("the server's own 16 MiB rejection (a labelled client-side check stands in)")
        if not c.transactions:
            out.append("multi-document transactions")
        if not c.concurrent_clients:
            out.append("concurrency: it is not thread-safe, so the demonstrations with several threads are skipped")
        if c.transactions and not c.transaction_isolation:
            out.append("transaction isolation: a write inside an open transaction is visible to other readers "
                       "before it commits (abort still undoes it)")
        if not c.graph_restrict:
            out.append("$graphLookup restrictSearchWithMatch (accepted, ignored)")
        if not c.graph_missing_start_as:
            out.append("$graphLookup's empty 'as' array when startWith is missing (the field is left out)")
        if not c.slice_projection:
            out.append("a $slice projection that keeps the other fields (they are dropped)")
        if not c.array_field_path:
            out.append("an expression field path through an array of documents (\"$arr.name\" is missing)")
        if not c.geo_index:
            out.append("2dsphere indexes and $near")
        elif not c.near_sorted:
            out.append("$near / $nearSphere order: the right documents, not nearest first (sort by distance "
                       "yourself)")
        if not c.geo_center_sphere:
            out.append("$geoWithin with $centerSphere (it raises)")
        if not c.collation:
            out.append("collations (case-insensitive indexes and queries)")
        if c.graph_max_depth is not None:
            out.append(f"$graphLookup beyond depth {c.graph_max_depth} without maxDepth (the workbook's "
                       f"tree walks continue from where it stops, at the cost of more round trips)")
        if c.regex_max_length is not None:
            out.append(f"regex patterns over {c.regex_max_length:,} characters (the workbook's path "
                       f"queries use the equivalent key range instead)")
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
        _OPEN.pop(id(self.client), None)
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

    from .safety import scratch_collection

    name = f"workbook_probe_{uuid.uuid4().hex[:8]}"
    coll = scratch_collection(db, name)
    caps: dict[str, bool] = {}
    try:
        coll.insert_many([{"_id": f"k{i:03d}", "v": i, "s": f"s{i:03d}", "p": None if i == 0 else (i - 1) // 2,
                           "arr": [1, 2, 3], "x": "y", "docs": [{"name": "a"}, {"name": "b"}]}
                          for i in range(64)])
        coll.create_index("v")
        coll.create_index("s")
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
        # an anchored prefix regex on a secondary index: an IXSCAN of the 10 keys in ["s01", "s02")
        caps["explain_regex"] = caps["explain"] and _bounded_ixscan(coll, {"s": {"$regex": "^s01"}})
        # the _id index serves a range and an anchored regex (10 keys in ["k010", "k020"), ["k01", "k02"))
        caps["id_range_index"] = caps["explain"] and _bounded_ixscan(
            coll, {"_id": {"$gte": "k010", "$lt": "k020"}}) and _bounded_ixscan(coll, {"_id": {"$regex": "^k01"}})
        # a bare regex value on an indexed field matches like {"$regex": ...} (10 documents)
        try:
            caps["bare_regex_indexed"] = coll.count_documents({"s": re.compile("^s01")}) == 10 and \
                coll.count_documents({"s": bson.Regex("^s01")}) == 10
        except (OperationFailure, NotImplementedError, TypeError):
            caps["bare_regex_indexed"] = False
        # an expression field path through an array of documents: ["a", "b"]
        try:
            got = list(coll.aggregate([{"$match": {"_id": "k001"}}, {"$project": {"n": "$docs.name"}}]))
            caps["array_field_path"] = bool(got) and got[0].get("n") == ["a", "b"]
        except (OperationFailure, NotImplementedError, TypeError):
            caps["array_field_path"] = False
        # $graphLookup from a document without the startWith field: as is []
        try:
            got = list(coll.aggregate([
                {"$match": {"_id": "k001"}},
                {"$graphLookup": {"from": name, "startWith": "$missing", "connectFromField": "p",
                                  "connectToField": "v", "as": "up"}}]))
            caps["graph_missing_start_as"] = bool(got) and got[0].get("up", None) == []
        except (OperationFailure, NotImplementedError, TypeError):
            caps["graph_missing_start_as"] = False
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
        scratch_collection(db, vname)
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
        scratch_collection(db, cname)
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
        # the server's own 16 MiB limit: grow a 9 MiB document to 18 MiB with $set
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
        caps["transaction_isolation"] = caps["transactions"] and _probe_transaction_isolation(db, coll)
        # several threads at once need a server: a pymongo client talks to one over the wire protocol,
        # each thread on a pooled connection; mongomock-ng's in-process collections have no locks
        import pymongo

        caps["concurrent_clients"] = isinstance(getattr(db, "client", None), pymongo.MongoClient)
        # geo: a 2dsphere index, $near order, $centerSphere
        caps.update(_probe_geo(db, scratch_collection(db, f"{name}_geo")))


        # the engine's limits: how deep $graphLookup walks unasked, how long a regex may be
        coll.delete_many({})
        caps["graph_max_depth"] = _probe_graph_max_depth(coll)
        caps["regex_max_length"] = _probe_regex_max_length(coll)
    finally:
        db.drop_collection(name)
        db.drop_collection(f"{name}_geo")
    return Capabilities(**caps)


def _bounded_ixscan(coll: Any, query: dict) -> bool:
    """Is ``query`` (10 matches in the probe collection) an index scan of about 10 keys?"""
    from pymongo.errors import OperationFailure

    try:
        plan = coll.find(query).explain()
    except (OperationFailure, NotImplementedError, AttributeError, TypeError):
        return False
    stats = plan.get("executionStats", {})
    return "IXSCAN" in str(plan.get("queryPlanner", {}).get("winningPlan")) and \
        stats.get("totalKeysExamined") in (10, 11) and stats.get("nReturned", 10) == 10


def _probe_geo(db: Any, geo: Any) -> dict[str, bool]:
    """``geo_index``, ``near_sorted``, ``geo_center_sphere``: four points on the equator, 0.05 to 0.3
    degrees east of (0, 0), inserted out of distance order."""
    from pymongo.errors import OperationFailure, PyMongoError

    out = {"geo_index": False, "near_sorted": False, "geo_center_sphere": False}
    point = {"type": "Point", "coordinates": [0.0, 0.0]}
    try:
        geo.insert_many([{"_id": i, "loc": {"type": "Point", "coordinates": [x, 0.0]}}
                         for i, x in enumerate([0.3, 0.1, 0.2, 0.05])])
    except (PyMongoError, NotImplementedError):
        return out
    try:
        geo.create_index([("loc", "2dsphere")])
        near = [d["_id"] for d in geo.find({"loc": {"$near": {"$geometry": point, "$maxDistance": 30_000}}})]
        sphere = [d["_id"] for d in geo.find({"loc": {"$nearSphere": {"$geometry": point}}})]
        out["geo_index"] = sorted(near) == [1, 2, 3]  # 0.3 degrees is 33 km: outside 30 km
        out["near_sorted"] = near == [3, 1, 2] and sphere == [3, 1, 2, 0]
    except (OperationFailure, NotImplementedError, TypeError, ValueError):
        pass
    try:  # a radius of 0.15 degrees, in radians: the points at 0.05 and 0.1 degrees
        within = geo.find({"loc": {"$geoWithin": {"$centerSphere": [[0.0, 0.0], 0.15 * 3.141592653589793 / 180]}}})
        out["geo_center_sphere"] = sorted(d["_id"] for d in within) == [1, 3]
    except (OperationFailure, NotImplementedError, TypeError, ValueError):
        pass
    return out


#: the chain the depth probe walks: deeper than any cap it can report (None = no cap up to here)
_PROBE_CHAIN = 130
#: the longest regex pattern the length probe tries (None = accepted): below a real MongoDB's own
#: limit (it refuses longer patterns itself, error 51091), far above anything the workbook sends
_PROBE_REGEX = 16_000


def _probe_graph_max_depth(coll: Any) -> int | None:
    """Walk a chain of :data:`_PROBE_CHAIN` documents with ``$graphLookup`` and no ``maxDepth``:
    the deepest level reached, or None when the whole chain is (no cap met)."""
    from pymongo.errors import OperationFailure

    coll.insert_many([{"_id": f"c{i:04d}", "up": f"c{i - 1:04d}" if i else None} for i in range(_PROBE_CHAIN)])
    try:
        got = list(coll.aggregate([
            {"$match": {"_id": f"c{_PROBE_CHAIN - 1:04d}"}},
            {"$graphLookup": {"from": coll.name, "startWith": "$up", "connectFromField": "up",
                              "connectToField": "_id", "as": "found", "depthField": "d"}},
            {"$project": {"found.d": 1}}]))
    except (OperationFailure, NotImplementedError):
        return None
    found = got[0]["found"] if got else []
    if len(found) >= _PROBE_CHAIN - 1:
        return None
    return max((int(d["d"]) for d in found), default=0)


def _probe_regex_max_length(coll: Any) -> int | None:
    """The longest ``$regex`` pattern the engine accepts, by bisection, or None when a pattern of
    :data:`_PROBE_REGEX` characters is accepted (one query on an engine without a cap)."""
    from pymongo.errors import OperationFailure

    def accepted(n: int) -> bool:
        try:
            coll.find_one({"_id": {"$regex": "^" + "z" * (n - 1)}}, {"_id": 1})
            return True
        except OperationFailure:
            return False

    if accepted(_PROBE_REGEX):
        return None
    lo, hi = 1, _PROBE_REGEX  # lo accepted, hi refused
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if accepted(mid) else (lo, mid)
    return lo


def _probe_limits(db: Any) -> tuple[int | None, int | None]:
    """``(graph_max_depth, regex_max_length)``, measured in a throwaway collection of ``db``."""
    from .safety import scratch_collection

    name = f"workbook_probe_{uuid.uuid4().hex[:8]}"
    coll = scratch_collection(db, name)
    try:
        return _probe_graph_max_depth(coll), _probe_regex_max_length(coll)
    finally:
        db.drop_collection(name)


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
    limits = _probe_limits(db)
    with _LIMITS_LOCK, contextlib.suppress(TypeError):
        _LIMITS[client] = limits
    return limits


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


def _probe_transaction_isolation(db: Any, coll: Any) -> bool:
    """A document inserted in an open transaction is not seen by a read outside it, and abort undoes it."""
    from pymongo.errors import PyMongoError

    try:
        with db.client.start_session() as session:
            session.start_transaction()
            try:
                coll.insert_one({"_id": "txn_iso"}, session=session)
                seen_outside = coll.count_documents({"_id": "txn_iso"})
            finally:
                session.abort_transaction()
        left = coll.count_documents({"_id": "txn_iso"})
        coll.delete_one({"_id": "txn_iso"})
        return seen_outside == 0 and left == 0
    except (PyMongoError, NotImplementedError, AttributeError, TypeError):
        return False


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
    for key, value in _uri.options(uri):
        if key.lower() in _FILE_OPTIONS and not Path(value).expanduser().is_file():
            raise BackendError(
                f"MONGODB_URI={redact_uri(uri)} names {key}={value}, which does not exist or is not a "
                f"file (seen from {Path.cwd()}).\nFix: give the full path of the file your server's "
                f"administrator sent you (for Atlas, drop {key}: it needs none), or remove the option.\n"
                + _OFFLINE)


def _connect_uri(uri: str, db_name: str, name: str = "mongodb",
                 connect_timeout_ms: int = CONNECT_TIMEOUT_MS) -> tuple[Any, str, str]:
    """Connect and ask ``buildInfo``; a failure says which it is: a malformed URI, a missing file
    it names, authentication failed, or the server cannot be reached (each a :class:`BackendError`)."""
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
        client, engine, version = _connect_uri(uri, db_name)
        return _finish(Connection(client, client[db_name], None), "mongodb", engine, version,
                       redact_uri(uri), None, probe)
    if backend == "embedded":
        server = client = None
        try:
            with _EMBEDDED_LOCK:
                from engines.embedded import start_embedded

                server = start_embedded()
            client, engine, version = _connect_uri(server.uri, db_name,
                                                   connect_timeout_ms=SOCKET_CONNECT_TIMEOUT_MS)
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


def _check_db_name(name: str, source: str = "WORKBOOK_DB") -> None:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,63}", name) or name in ("admin", "local", "config"):
        raise BackendError(f"{source} {name!r} is not usable: use letters, digits, '_' or '-' "
                           f"(at most 63), and not admin/local/config.")


def _finish(conn: Connection, name: str, engine: str, version: str, uri: str | None,
            note: str | None, probe: bool) -> Connection:
    is_mock = name == "mock"
    if probe:
        caps = _probe(conn.db, is_mock)
    else:
        caps = Capabilities(indexes=not is_mock, explain=False, explain_regex=False, bson_size=False,
                            json_schema=False, max_document_size=False, transactions=False,
                            graph_restrict=False, slice_projection=False, bare_regex_indexed=False,
                            id_range_index=False, array_field_path=False, graph_missing_start_as=False,
                            near_sorted=False, geo_center_sphere=False, geo_index=False,
                            collation=False)
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
    for warning in info.warnings():
        line += f"\n{warning}"
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
