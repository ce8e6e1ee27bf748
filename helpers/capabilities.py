"""Capabilities: what the connected engine really does, each declared once and probed on connect.

Introduced in notebook 00 (``helpers.backend_info().caps``). Every capability is one
:class:`Capability` entry of :data:`CAPABILITIES`: its probe (a small experiment in a throwaway
collection of the workbook's database), what it means, what a real MongoDB does, what each offline
engine was measured to do, the label an output gets where the engine lacks it, and the banner's
warning when the engine's answer is silently wrong. Everything else is derived from that list: the
fields of :class:`Capabilities`, the unprobed stub, ``BackendInfo.cannot_show()`` and
``warnings()``, the note an exercise check adds to an empty answer, the README's table
(``scripts/capabilities.py``) and the check of docs/ENGINES.md's rows (``tests/test_capabilities.py``).

To add one: write its probe (``def _probe_x(p: Probe) -> bool``) and one ``Capability(...)`` entry
below, add its row to docs/ENGINES.md's fidelity table (naming ``caps.<name>``), then run
``python3 scripts/capabilities.py`` to rewrite the README's table.
"""
from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import bson

from .safety import scratch_collection

__all__ = ["Capability", "CAPABILITIES", "Capabilities", "Probe", "probe", "cannot_show", "warnings",
           "BY_NAME", "LIMITS", "readme_table"]


class Probe:
    """One probe run: the database, throwaway collections (never recorded, dropped at the end), the
    results found so far (``found``) and results shared by several probes (``once``)."""

    def __init__(self, db: Any, is_mock: bool) -> None:
        self.db, self.is_mock = db, is_mock
        self.prefix = f"workbook_probe_{uuid.uuid4().hex[:8]}"
        self.found: dict[str, Any] = {}
        self._made: list[str] = []
        self._once: dict[Callable, Any] = {}

    def scratch(self, suffix: str = "") -> Any:
        """A throwaway collection of this run (the same one for the same suffix), never recorded in the
        registry: a connect leaves no registry behind (``helpers.safety.scratch_collection``)."""

        name = f"{self.prefix}_{suffix}" if suffix else self.prefix
        if name not in self._made:
            scratch_collection(self.db, name)
            self._made.append(name)
        return self.db[name]

    @property
    def coll(self) -> Any:
        """64 small documents with indexes on ``v`` and ``s``: ``_id`` ``k000``..``k063``, ``v`` 0..63,
        ``s`` ``s000``..``s063``, ``p`` the parent in a binary tree on ``v``, an array and an array of
        documents."""
        return self.once(_fill)

    def once(self, fn: Callable[[Probe], Any]) -> Any:
        """``fn(self)``, run at most once per probe run (a result several probes share)."""
        if fn not in self._once:
            self._once[fn] = fn(self)
        return self._once[fn]

    def close(self) -> None:
        for name in self._made:
            self.db.drop_collection(name)


@dataclass(frozen=True)
class Capability:
    """One capability, declared once.

    ``probe(p)`` returns True when the engine behaves as MongoDB (a limit returns the number met, or
    None for no cap met); a probe that raises finds the capability missing (False, or None for a
    limit). ``embedded`` and ``mock`` are what each offline engine was measured to do: the value its
    probe returns (``tests/test_backends.py`` asserts it) and the README's cell for it.
    ``label`` is the line ``cannot_show()`` gives when the capability is missing (a limit's ``{value}``: the
    limit met), but only where ``shown_if(caps)`` holds; ``warning`` (``{engine}`` a bare name) goes
    into the banner, and into the note of an exercise check whose answer is an empty result, when
    a missing capability makes a learner's own query silently wrong.
    """

    name: str
    probe: Callable[[Probe], Any]
    meaning: str  # the README's row: what the capability is
    mongodb: str  # what a real MongoDB does (the README's column)
    embedded: tuple[Any, str]  # SecantusDB: (the value its probe finds, the README's cell)
    mock: tuple[Any, str]  # mongomock-ng: (the value its probe finds, the README's cell)
    label: str
    shown_if: Callable[[Any], bool] | None = None
    warning: str | None = None
    limit: bool = False  # a number (None: no cap met) instead of yes/no
    needs_db: bool = True  # False: known without a round trip (the unprobed stub uses it)

    @property
    def default(self) -> Any:
        """The value when it was not or could not be probed: missing (False), or no cap met (None)."""
        return None if self.limit else False

    def missing(self, value: Any) -> bool:
        return value is not None if self.limit else not value


# ---------------------------------------------------------------------------------------------
# the probes

def _fill(p: Probe) -> Any:
    coll = p.scratch()
    coll.insert_many([{"_id": f"k{i:03d}", "v": i, "s": f"s{i:03d}", "p": None if i == 0 else (i - 1) // 2,
                       "arr": [1, 2, 3], "x": "y", "docs": [{"name": "a"}, {"name": "b"}]}
                      for i in range(64)])
    coll.create_index("v")
    coll.create_index("s")
    return coll


def _bounded_ixscan(coll: Any, query: dict) -> bool:
    """Is ``query`` (10 matches in the probe collection) an index scan of about 10 keys?"""
    plan = coll.find(query).explain()
    stats = plan.get("executionStats", {})
    return "IXSCAN" in str(plan.get("queryPlanner", {}).get("winningPlan")) and \
        stats.get("totalKeysExamined") in (10, 11) and stats.get("nReturned", 10) == 10


def _explain(p: Probe) -> bool:
    """An equality on an indexed field is an IXSCAN that examines one key."""
    plan = p.coll.find({"v": 7}).explain()
    return "IXSCAN" in str(plan.get("queryPlanner", {}).get("winningPlan")) and \
        plan.get("executionStats", {}).get("totalKeysExamined") == 1


def _explain_regex(p: Probe) -> bool:
    """An anchored prefix regex on a secondary index: an IXSCAN of the 10 keys in ["s01", "s02")."""
    return p.found["explain"] and _bounded_ixscan(p.coll, {"s": {"$regex": "^s01"}})


def _id_range_index(p: Probe) -> bool:
    """The _id index serves a range and an anchored regex (10 keys in ["k010", "k020"), ["k01", "k02"))."""
    return p.found["explain"] and _bounded_ixscan(p.coll, {"_id": {"$gte": "k010", "$lt": "k020"}}) and \
        _bounded_ixscan(p.coll, {"_id": {"$regex": "^k01"}})


def _covered_query(p: Probe) -> bool:
    """A range on an indexed field projected to that field alone is covered: its 10 keys, no document."""
    if not p.found["explain"]:
        return False
    stats = p.coll.find({"v": {"$gte": 10, "$lt": 20}}, {"_id": 0, "v": 1}).explain().get("executionStats", {})
    return stats.get("totalKeysExamined") == 10 and stats.get("totalDocsExamined") == 0


def _indexed_with_residual(p: Probe) -> bool:
    """An indexed equality with a predicate on another field: an index scan of 1 key, 1 document fetched."""
    if not p.found["explain"]:
        return False
    plan = p.coll.find({"v": 7, "x": "y"}).explain()
    stats = plan.get("executionStats", {})
    return "IXSCAN" in str(plan.get("queryPlanner", {}).get("winningPlan")) and \
        stats.get("totalKeysExamined") == 1 and stats.get("totalDocsExamined") == 1


def _residual_examined(p: Probe) -> bool:
    """A hinted index range with a filter on another field counts what it examines: 10 keys, 10 documents
    for its 1 match."""
    if not p.found["explain"]:
        return False
    stats = p.coll.find({"v": {"$gte": 10, "$lt": 20}, "s": "s015"}).hint([("v", 1)]).explain().get("executionStats", {})
    return stats.get("totalKeysExamined") in (10, 11) and stats.get("totalDocsExamined") == 10


def _bare_regex_indexed(p: Probe) -> bool:
    """A bare regex value on an indexed field matches like {"$regex": ...} (10 documents)."""
    return p.coll.count_documents({"s": re.compile("^s01")}) == 10 and \
        p.coll.count_documents({"s": bson.Regex("^s01")}) == 10


def _bson_size(p: Probe) -> bool:
    doc = p.coll.find_one({"_id": "k001"})
    got = list(p.coll.aggregate([{"$match": {"_id": "k001"}}, {"$project": {"s": {"$bsonSize": "$$ROOT"}}}]))
    return bool(got) and got[0].get("s") == len(bson.encode(doc))


def _json_schema(p: Probe) -> bool:
    """A ``$jsonSchema`` validator rejects a document without its required field, with code 121."""
    from pymongo.errors import OperationFailure

    name = p.scratch("v").name
    p.db.create_collection(name, validator={"$jsonSchema": {"required": ["a"]}})
    try:
        p.db[name].insert_one({"b": 1})
    except OperationFailure as e:  # WriteError is a subclass
        return getattr(e, "code", None) == 121
    return False


def _max_document_size(p: Probe) -> bool:
    """The server's own 16 MiB limit: grow a 9 MiB document to 18 MiB with ``$set``."""
    from pymongo.errors import DocumentTooLarge, OperationFailure

    chunk = "x" * (9 * 1024 * 1024)
    try:
        p.coll.insert_one({"_id": "big", "a": chunk})
        try:
            p.coll.update_one({"_id": "big"}, {"$set": {"b": chunk}})
        except (OperationFailure, DocumentTooLarge):
            return True
        return False
    finally:
        p.coll.delete_one({"_id": "big"})


def _aggregate_result_size(p: Probe) -> bool:
    """The 16 MiB limit on each document an aggregate returns (the manual's result size restriction):
    a 9 MiB document returned with its field twice, 18 MiB, is refused."""
    from pymongo.errors import OperationFailure

    coll = p.scratch("agg16")
    coll.insert_one({"_id": "big", "a": "x" * (9 * 1024 * 1024)})
    try:
        list(coll.aggregate([{"$match": {"_id": "big"}}, {"$project": {"a": 1, "b": "$a"}}]))
    except OperationFailure:
        return True
    return False


def _transactions(p: Probe) -> bool:
    """A multi-document transaction commits (a standalone mongod refuses them)."""
    with p.db.client.start_session() as session:
        session.with_transaction(lambda s: p.coll.insert_one({"_id": "txn"}, session=s))
    ok = p.coll.count_documents({"_id": "txn"}) == 1
    p.coll.delete_one({"_id": "txn"})
    return ok


def _concurrent_clients(p: Probe) -> bool:
    """Several threads at once need a server: a pymongo client talks to one over the wire protocol,
    each thread on a pooled connection; mongomock-ng's in-process collections have no locks."""
    import pymongo

    return isinstance(getattr(p.db, "client", None), pymongo.MongoClient)


def _update_pipeline_strings(p: Probe) -> bool:
    """An update pipeline rebuilds a string on the server: "s001" -> "t001" (a path rewrite's form)."""
    coll = p.scratch("str")
    coll.insert_one({"_id": "k001", "s": "s001"})
    coll.update_one({"_id": "k001"}, [{"$set": {"s": {"$concat": ["t", {"$substrCP": [
        "$s", 1, {"$subtract": [{"$strLenCP": "$s"}, 1]}]}]}}}])
    return (coll.find_one({"_id": "k001"}, {"s": 1}) or {}).get("s") == "t001"


def _timeseries_listing(p: Probe) -> dict[str, Any]:
    """A time series collection with ``expireAfterSeconds``, created and listed (shared by two probes)."""
    ts = p.scratch("ts")
    p.db.create_collection(ts.name, timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"},
                           expireAfterSeconds=3600)
    return next(iter(p.db.list_collections(filter={"name": ts.name})), None) or {}


def _timeseries_option(p: Probe) -> bool:
    """The ``timeseries`` option and ``expireAfterSeconds`` are accepted, and listed as given."""
    options = p.once(_timeseries_listing).get("options") or {}
    return (options.get("timeseries") or {}).get("timeField") == "t" and options.get("expireAfterSeconds") == 3600


def _timeseries_storage(p: Probe) -> bool:
    """``listCollections`` says type ``timeseries``: a real time series collection (internal buckets)."""
    return bool(p.found.get("timeseries_option")) and p.once(_timeseries_listing).get("type") == "timeseries"


def _clustered_collection(p: Probe) -> bool:
    """A collection created with ``clusteredIndex`` on ``_id`` (MongoDB 5.3+) lists its ``_id`` index as
    ``clustered``: the documents stored in ``_id`` order, no separate ``_id`` index."""
    coll = p.scratch("clustered")
    p.db.create_collection(coll.name, clusteredIndex={"key": {"_id": 1}, "unique": True})
    return [i["name"] for i in coll.list_indexes() if i.get("clustered")] == ["_id_"]


def _ttl_task(p: Probe) -> bool:
    """A document already expired under a TTL index (``expireAfterSeconds`` 0, a time of 2000) is still
    there just after its insert: a background task removes it later (a real MongoDB's TTL task runs
    every 60 s), not the next read."""
    import datetime as _dt

    coll = p.scratch("ttl")
    coll.create_index("t", expireAfterSeconds=0)
    coll.insert_one({"_id": "ttl", "t": _dt.datetime(2000, 1, 1)})
    listed = [i.get("expireAfterSeconds") for i in coll.list_indexes() if i["name"] == "t_1"] == [0]
    return listed and coll.count_documents({"_id": "ttl"}) == 1


def _transaction_isolation(p: Probe) -> bool:
    """A document inserted in an open transaction is not seen by a read outside it, and abort undoes it."""
    if not p.found["transactions"]:
        return False
    with p.db.client.start_session() as session:
        session.start_transaction()
        try:
            p.coll.insert_one({"_id": "txn_iso"}, session=session)
            seen_outside = p.coll.count_documents({"_id": "txn_iso"})
        finally:
            session.abort_transaction()
    left = p.coll.count_documents({"_id": "txn_iso"})
    p.coll.delete_one({"_id": "txn_iso"})
    return seen_outside == 0 and left == 0


def _snapshot_session(p: Probe) -> bool:
    """A snapshot session (``start_session(snapshot=True)``, MongoDB 5.0+) reads the point in time of its
    first read: a write made outside it after that read is not seen by its second read."""
    coll = p.scratch("snap")
    coll.insert_one({"_id": 1, "v": 0})
    with p.db.client.start_session(snapshot=True) as session:
        first = coll.find_one({"_id": 1}, session=session)
        coll.update_one({"_id": 1}, {"$set": {"v": 1}})  # outside the session, after its first read
        second = coll.find_one({"_id": 1}, session=session)
    return bool(first and second) and first["v"] == second["v"] == 0


def _client_bulk_write(p: Probe) -> bool:
    """MongoDB 8.0's ``bulkWrite`` command (pymongo's ``client.bulk_write``): one call updates two collections."""
    from pymongo import InsertOne, UpdateOne

    one, two = p.scratch("bw1"), p.scratch("bw2")
    one.insert_one({"_id": 1, "n": 0})
    p.db.client.bulk_write([UpdateOne({"_id": 1}, {"$set": {"n": 1}}, namespace=one.full_name),
                            InsertOne({"_id": 1}, namespace=two.full_name)])
    return one.count_documents({"n": 1}) == 1 and two.count_documents({}) == 1


def _graph_restrict(p: Probe) -> bool:
    """``$graphLookup`` up from k010 (v 10 -> 4 -> 1 -> 0) only through v > 3: just v 4."""
    got = list(p.coll.aggregate([
        {"$match": {"_id": "k010"}},
        {"$graphLookup": {"from": p.coll.name, "startWith": "$p", "connectFromField": "p",
                          "connectToField": "v", "as": "up", "restrictSearchWithMatch": {"v": {"$gt": 3}}}}]))
    return bool(got) and sorted(u["v"] for u in got[0]["up"]) == [4]


def _graph_missing_start_as(p: Probe) -> bool:
    """``$graphLookup`` from a document without the startWith field: ``as`` is []."""
    got = list(p.coll.aggregate([
        {"$match": {"_id": "k001"}},
        {"$graphLookup": {"from": p.coll.name, "startWith": "$missing", "connectFromField": "p",
                          "connectToField": "v", "as": "up"}}]))
    return bool(got) and got[0].get("up", None) == []


def _slice_projection(p: Probe) -> bool:
    d = p.coll.find_one({"_id": "k001"}, {"arr": {"$slice": 2}})
    return d.get("arr") == [1, 2] and d.get("x") == "y"


def _array_field_path(p: Probe) -> bool:
    """An expression field path through an array of documents: ["a", "b"]."""
    got = list(p.coll.aggregate([{"$match": {"_id": "k001"}}, {"$project": {"n": "$docs.name"}}]))
    return bool(got) and got[0].get("n") == ["a", "b"]


def _geo(p: Probe) -> dict[str, bool]:
    """``geo_index``, ``near_sorted``, ``geo_center_sphere``: four points on the equator, 0.05 to 0.3
    degrees east of (0, 0), inserted out of distance order."""
    from pymongo.errors import OperationFailure

    out = {"geo_index": False, "near_sorted": False, "geo_center_sphere": False}
    geo = p.scratch("geo")
    point = {"type": "Point", "coordinates": [0.0, 0.0]}
    geo.insert_many([{"_id": i, "loc": {"type": "Point", "coordinates": [x, 0.0]}}
                     for i, x in enumerate([0.3, 0.1, 0.2, 0.05])])
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


def _collation(p: Probe) -> bool:
    """A case-insensitive index keeps its collation, and a query with it matches "Y" for "y"."""
    coll = p.scratch("c")
    strength2 = {"locale": "en", "strength": 2}
    coll.insert_many([{"_id": 1, "x": "Y"}, {"_id": 2, "x": "z"}])
    coll.create_index("x", collation=strength2)
    kept = any((spec.get("collation") or {}).get("strength") == 2 for spec in coll.index_information().values())
    return kept and [d["_id"] for d in coll.find({"x": "y"}, collation=strength2)] == [1]


#: the chain the depth probe walks: deeper than any cap it can report (None = no cap up to here)
_PROBE_CHAIN = 130
#: the longest regex pattern the length probe tries (None = accepted): below a real MongoDB's own
#: limit (it refuses longer patterns itself, error 51091), far above anything the workbook sends
_PROBE_REGEX = 16_000


def _graph_max_depth(p: Probe) -> int | None:
    """Walk a chain of :data:`_PROBE_CHAIN` documents with ``$graphLookup`` and no ``maxDepth``:
    the deepest level reached, or None when the whole chain is (no cap met)."""
    coll = p.scratch("chain")
    coll.insert_many([{"_id": f"c{i:04d}", "up": f"c{i - 1:04d}" if i else None} for i in range(_PROBE_CHAIN)])
    got = list(coll.aggregate([
        {"$match": {"_id": f"c{_PROBE_CHAIN - 1:04d}"}},
        {"$graphLookup": {"from": coll.name, "startWith": "$up", "connectFromField": "up",
                          "connectToField": "_id", "as": "found", "depthField": "d"}},
        {"$project": {"found.d": 1}}]))
    found = got[0]["found"] if got else []
    if len(found) >= _PROBE_CHAIN - 1:
        return None
    return max((int(d["d"]) for d in found), default=0)


def _regex_max_length(p: Probe) -> int | None:
    """The longest ``$regex`` pattern the engine accepts, by bisection, or None when a pattern of
    :data:`_PROBE_REGEX` characters is accepted (one query on an engine without a cap)."""
    from pymongo.errors import OperationFailure

    coll = p.scratch("chain")

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


# ---------------------------------------------------------------------------------------------
# the declarations: one entry each, in the order of the labels, the README's table and `caps`

_NO_INDEXES = "no indexes"
_BARE_REGEX = ('a bare regex value (re.compile, bson.Regex) on an indexed field matches nothing: '
               'write {"field": {"$regex": "^..."}}')

CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        "indexes", lambda p: not p.is_mock, needs_db=False,  # mongomock-ng has no index at all
        meaning="indexes, index effects on time", mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**no**: every query scans (an `_id` equality is looked up by key)"),
        label="index effects: it has no indexes, every query scans the collection (an _id equality "
              "is looked up by key)"),
    Capability(
        "explain", _explain,
        meaning="`explain()` plans, keys/docs examined", mongodb="yes",
        embedded=(True, "yes (equality and ranges on secondary and compound indexes)"),
        mock=(False, "**no** (always COLLSCAN)"),
        label="query plans: explain() is not faithful here"),
    Capability(
        "id_range_index", _id_range_index, shown_if=lambda c: c.indexes,
        meaning="an `_id` range or anchored `_id` regex served by the `_id` index",
        mongodb="yes (index bounds)",
        embedded=(False, "**no: scans the whole collection** (its COLLSCAN is the truth); a compound index led "
                         "by an equality field is fast on both"),
        mock=(False, _NO_INDEXES),
        label="an _id range or anchored _id regex served by the _id index: here it scans the whole "
              "collection (its explain's COLLSCAN is the truth); a real MongoDB scans index bounds"),
    Capability(
        "explain_regex", _explain_regex, shown_if=lambda c: c.indexes,
        meaning="a prefix regex on an indexed field served by index bounds", mongodb="yes",
        embedded=(False, "**no: scans the collection**"), mock=(False, _NO_INDEXES),
        label="a prefix regex on an indexed field served by index bounds: here it scans the collection"),
    Capability(
        "covered_query", _covered_query, shown_if=lambda c: c.explain,
        meaning="a covered query (filter and projection on an index's fields) examines no document",
        mongodb="yes (`totalDocsExamined` 0)",
        embedded=(False, "**no: fetches each matching document** (FETCH after the IXSCAN)"), mock=(False, _NO_INDEXES),
        label="a covered query: here the engine fetches each matching document; a real MongoDB reads the "
              "index alone"),
    Capability(
        "indexed_with_residual", _indexed_with_residual, shown_if=lambda c: c.explain,
        meaning="an indexed equality with a predicate on another field: the index scan, then that field tested",
        mongodb="yes (IXSCAN, 1 key, 1 document)",
        embedded=(False, "**no: scans the collection** (COLLSCAN, every document examined)"), mock=(False, _NO_INDEXES),
        label="an indexed equality with a predicate on another field: here a collection scan (every document "
              "examined); a real MongoDB scans the index and fetches the matches"),
    Capability(
        "residual_examined", _residual_examined, shown_if=lambda c: c.explain,
        meaning="a hinted index range with a filter on another field counts every key and document it examines",
        mongodb="yes (10 keys, 10 documents for 1 match)",
        embedded=(False, "**no: counts only what passes the filter** (1 key, 1 document)"), mock=(False, _NO_INDEXES),
        label="an index range with a filter on another field: here explain counts only the keys and documents "
              "that pass the filter; a real MongoDB counts every one it examines"),
    Capability(
        "bare_regex_indexed", _bare_regex_indexed,
        meaning="a bare regex value (`re.compile`, `bson.Regex`) on an indexed field",
        mongodb='matches like `{"$regex": ...}`',
        embedded=(False, '**matches nothing** (no error): write `{"$regex": ...}`; the banner warns'),
        mock=(True, "yes"),
        label='a bare regex value (re.compile, bson.Regex) on an indexed field: it matches nothing here; '
              '{"$regex": ...} works',
        warning=_BARE_REGEX),
    Capability(
        "bson_size", _bson_size,
        meaning="`$bsonSize` on the server", mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**no** (client-side sizes stand in; same numbers)"),
        label="server-side $bsonSize (the workbook computes sizes client-side, same numbers)"),
    Capability(
        "json_schema", _json_schema,
        meaning="`$jsonSchema` validation", mongodb="yes", embedded=(True, "yes"), mock=(False, "**no**"),
        label="$jsonSchema validation"),
    Capability(
        "max_document_size", _max_document_size,
        meaning="16 MiB (16,777,216-byte) document limit", mongodb="enforced", embedded=(True, "enforced"),
        mock=(False, "**not enforced** (labelled client-side check)"),
        label="the server's own 16 MiB rejection (a labelled client-side check stands in)"),
    Capability(
        "aggregate_result_size", _aggregate_result_size,
        meaning="16 MiB limit on each document an aggregate returns", mongodb="enforced",
        embedded=(False, "**not enforced**"), mock=(False, "**not enforced**"),
        label="the 16,777,216-byte limit on each document an aggregate returns (a real MongoDB refuses a one-$lookup page past it)"),
    Capability(
        "transactions", _transactions,
        meaning="transactions", mongodb="replica set / Atlas only", embedded=(True, "yes"), mock=(True, "yes"),
        label="multi-document transactions"),
    Capability(
        "concurrent_clients", _concurrent_clients,
        meaning="several threads at once", mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**no**: not thread-safe (the concurrency cells are skipped, saying so)"),
        label="concurrency: it is not thread-safe, so the demonstrations with several threads are skipped"),
    Capability(
        "transaction_isolation", _transaction_isolation, shown_if=lambda c: c.transactions,
        meaning="transaction isolation: a write in an open transaction unseen by others until commit",
        mongodb="yes", embedded=(True, "yes"), mock=(False, "**no**: seen before commit (abort still undoes it)"),
        label="transaction isolation: a write inside an open transaction is visible to other readers "
              "before it commits (abort still undoes it)"),
    Capability(
        "snapshot_session", _snapshot_session,
        meaning="a snapshot session (`start_session(snapshot=True)`): its reads see the point in time of its first",
        mongodb="5.0 and later, on a replica set or a sharded cluster (not a standalone server)",
        embedded=(False, "**no**: a read sees a write made after the session's first read"),
        mock=(False, "**no** (its `start_session` takes no `snapshot`)"),
        label="snapshot sessions: a read in start_session(snapshot=True) sees writes made after the session's first "
              "read (a real MongoDB 5.0+ reads the first read's point in time)"),
    Capability(
        "client_bulk_write", _client_bulk_write,
        meaning="MongoDB 8.0's cross-collection `bulkWrite` (`client.bulk_write`)", mongodb="8.0 and later",
        embedded=(True, "yes"), mock=(False, "**no** (its client has no `bulk_write`)"),
        label="MongoDB 8.0's cross-collection bulkWrite (client.bulk_write): writes to two collections take "
              "a round trip each"),
    Capability(
        "update_pipeline_strings", _update_pipeline_strings,
        meaning="string operators in an update pipeline, `$substrCP`/`$strLenCP`", mongodb="yes",
        embedded=(True, "yes"),
        mock=(False, "**no** (\"not implemented\"): notebook 03's path rewrite reads the subtree into the client "
                     "and writes it back, labelled (its round trips and documents returned differ there)"),
        label="string operators ($substrCP, $strLenCP) in an update pipeline: a path rewrite reads the subtree "
              "into the client and writes it back (a real MongoDB rewrites it on the server)"),
    Capability(
        "timeseries_option", _timeseries_option,
        meaning="time series collections: the `timeseries` option and `expireAfterSeconds` accepted",
        mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**no**: refused (notebook 08 uses a labelled ordinary collection)"),
        label="time series collections: the timeseries option is refused (an ordinary collection stands in, "
              "labelled)"),
    Capability(
        "timeseries_storage", _timeseries_storage, shown_if=lambda c: c.timeseries_option,
        meaning="time series storage: internal buckets, compression", mongodb="yes",
        embedded=(False, "**no**: an ordinary collection (listCollections type `collection`); notebook 08 shows "
                         "no storage figure for it"),
        mock=(False, "no"),
        label="time series storage: the timeseries option is accepted but the documents are stored one by one "
              "in an ordinary collection (no internal buckets, no compression)"),
    Capability(
        "clustered_collection", _clustered_collection,
        meaning="a clustered collection (`clusteredIndex` on `_id`, MongoDB 5.3+): no separate `_id` index",
        mongodb="yes (5.3+)", embedded=(True, "yes (`listIndexes` marks `_id_` clustered)"),
        mock=(False, "**no**: refused (`NotImplementedError`)"),
        label="clustered collections: the clusteredIndex option is refused"),
    Capability(
        "ttl_task", _ttl_task,
        meaning="a TTL index (`expireAfterSeconds`): expired documents removed by a background task",
        mongodb="yes (a pass every 60 s; under load, later)", embedded=(True, "yes (a sweeper every 60 s by default)"),
        mock=(False, "**no task**: an expired document vanishes at the next read"),
        label="a TTL index's background task: an expired document vanishes at the next read, where a real "
              "MongoDB's TTL task removes it at its next pass (every 60 s; later under load)"),
    Capability(
        "graph_restrict", _graph_restrict,
        meaning="`$graphLookup` `restrictSearchWithMatch`", mongodb="yes", embedded=(False, "**ignored**"),
        mock=(True, "yes"),
        label="$graphLookup restrictSearchWithMatch (accepted, ignored)"),
    Capability(
        "graph_missing_start_as", _graph_missing_start_as,
        meaning="`$graphLookup` `as: []` when `startWith` is missing", mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**the `as` field is left out**"),
        label="$graphLookup's empty 'as' array when startWith is missing (the field is left out)"),
    Capability(
        "slice_projection", _slice_projection,
        meaning="`$slice` projection", mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**wrong** (drops other fields)"),
        label="a $slice projection that keeps the other fields (they are dropped)"),
    Capability(
        "array_field_path", _array_field_path,
        meaning='`"$arr.name"` through an array of documents in `$project`/`$addFields`',
        mongodb="the array of values", embedded=(False, "**missing** (the workbook does not use it)"),
        mock=(True, "yes"),
        label='an expression field path through an array of documents ("$arr.name" is missing)'),
    Capability(
        "geo_index", lambda p: p.once(_geo)["geo_index"],
        meaning="a `2dsphere` index and `$near`", mongodb="yes", embedded=(True, "yes"), mock=(True, "yes"),
        label="2dsphere indexes and $near"),
    Capability(
        "near_sorted", lambda p: p.once(_geo)["near_sorted"], shown_if=lambda c: c.geo_index,
        meaning="`$near` / `$nearSphere` order", mongodb="nearest first",
        embedded=(False, "**not nearest first**"), mock=(True, "yes"),
        label="$near / $nearSphere order: the right documents, not nearest first (sort by distance yourself)"),
    Capability(
        "geo_center_sphere", lambda p: p.once(_geo)["geo_center_sphere"],
        meaning="`$geoWithin` `$centerSphere`", mongodb="yes", embedded=(True, "yes"), mock=(False, "**raises**"),
        label="$geoWithin with $centerSphere (it raises)"),
    Capability(
        "collation", _collation,
        meaning="collations: a case-insensitive index and query", mongodb="yes", embedded=(True, "yes"),
        mock=(False, "**ignored** (the index loses it, the query compares case-sensitively)"),
        label="collations (case-insensitive indexes and queries)"),
    Capability(
        "graph_max_depth", _graph_max_depth, limit=True,
        meaning="`$graphLookup` depth without `maxDepth`", mongodb="no cap (only its memory limit)",
        embedded=(100, "**stops at depth 100** (the workbook's tree walks continue from there: more round "
                       "trips, right answers)"),
        mock=(None, "no cap"),
        label="$graphLookup beyond depth {value} without maxDepth (the workbook's tree walks continue from "
              "where it stops, at the cost of more round trips)"),
    Capability(
        "regex_max_length", _regex_max_length, limit=True,
        meaning="regex pattern length", mongodb="probed on connect",
        embedded=(1000, "**at most 1,000 characters** (the workbook's path queries then use the same key range)"),
        mock=(None, "no cap"),
        label="regex patterns over {value:,} characters (the workbook's path queries use the equivalent key "
              "range instead)"),
)

BY_NAME: dict[str, Capability] = {c.name: c for c in CAPABILITIES}
#: the capabilities that are numbers (``helpers.backends.engine_limits``)
LIMITS: tuple[str, ...] = tuple(c.name for c in CAPABILITIES if c.limit)


def _as_dict(self: Any) -> dict[str, Any]:
    return dict(self.__dict__)


def _unprobed(cls: Any, is_mock: bool) -> Any:
    """Every capability missing (limits: none met), except what is known without a round trip."""
    p = Probe(None, is_mock)
    return cls(**{c.name: c.default if c.needs_db else c.probe(p) for c in CAPABILITIES})


Capabilities = dataclasses.make_dataclass(
    "Capabilities",
    [(c.name, "int | None" if c.limit else "bool", dataclasses.field(default=c.default)) for c in CAPABILITIES],
    frozen=True,
    namespace={"as_dict": _as_dict, "unprobed": classmethod(_unprobed), "__module__": __name__},
)
Capabilities.__doc__ = (
    "What the connected engine really does, probed on connect (docs/ENGINES.md); each field is one\n"
    "entry of helpers.capabilities.CAPABILITIES:\n\n"
    + "\n".join(f"* ``{c.name}``: {c.meaning}" + (" (a number; None: no cap met)" if c.limit else "")
                for c in CAPABILITIES))


def probe(db: Any, is_mock: bool, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run the probes (all, or ``names``) in throwaway collections of ``db``, removed afterwards.

    A probe that raises finds its capability missing (a limit: no cap met)."""
    from pymongo.errors import PyMongoError

    p = Probe(db, is_mock)
    try:
        for cap in CAPABILITIES:
            if names is None or cap.name in names:
                try:
                    p.found[cap.name] = cap.probe(p)
                except (PyMongoError, NotImplementedError, AttributeError, TypeError, KeyError, ValueError):
                    p.found[cap.name] = cap.default
    finally:
        p.close()
    return p.found


def cannot_show(caps: Any) -> list[str]:
    """The label of every capability ``caps`` lacks, in declaration order."""
    out = []
    for c in CAPABILITIES:
        value = getattr(caps, c.name)
        if c.missing(value) and (c.shown_if is None or c.shown_if(caps)):
            out.append(c.label.format(value=value) if c.limit else c.label)
    return out


def warnings(caps: Any, engine: str) -> list[str]:
    """``on <engine> <what goes silently wrong>`` for every missing capability that has a warning."""
    return [f"on {engine} {c.warning}" for c in CAPABILITIES if c.warning and c.missing(getattr(caps, c.name))]


def readme_table() -> str:
    """The README's table of what each offline engine cannot show, one row per capability."""
    rows = ["| | real MongoDB | embedded (SecantusDB) | mock (mongomock-ng) |", "|---|---|---|---|"]
    for c in CAPABILITIES:
        rows.append(f"| {c.meaning} (`{c.name}`) | {c.mongodb} | {c.embedded[1]} | {c.mock[1]} |")
    return "\n".join(rows)
