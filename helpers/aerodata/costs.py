"""The measured cost of notebook 04's tracker workload: every design's every operation, in each form a
competent engineer could write (notebook 04).

Three designs: three collections (airlines, aircraft, reports), the single collection (``ingest``),
and the single collection with the subset pattern (``ingest(..., keep_last=n)``). :func:`tracker_costs`
gives ``{design: {operation: Forms}}`` for :meth:`helpers.workload.Workload.weigh`, ``contest`` and
``pick``: the bill prices each design at its cheapest form, and shows the others as counter-examples.
Every read sets its batch size; every write counts the index keys it writes
(``count_commands(index_keys=...)``); where the engine explains (``caps.explain``), each form carries
the keys and documents the server examined, with a note where the engine's plan is not a real
MongoDB's. The lesson imports it from :mod:`helpers.aerodata`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..backends import info_of
from ..counting import count_commands, paused
from ..plans import plan_summary
from ..safety import fresh_collection, track_collection, workbook_collection
from ..workload import Forms, cost_of
from .geo import GEO_FIELD, geo_point
from .keys import AIRCRAFT, AIRLINE, QUERY_BATCH, REPORT, _airline_doc, airline_of_callsign, make_id
from .messages import IngestResult, message_number, validate_message
from .queries import (
    airline_all,
    fleet_latest_group_pipeline,
    fleet_latest_pipeline,
    id_range,
    latest_report,
    prefix_regex,
    subset_latest_pipeline,
)
from .store import batch_documents, ensure_indexes, ingest_batch, insert_new

__all__ = ["tracker_costs", "LOOP", "LOOKUP", "GROUP", "BULK"]

#: the forms of "latest position of a fleet", as the bill labels them
LOOP = "the fleet, then a find_one per aircraft"
LOOKUP = "one aggregate: the fleet, $lookup ... $limit 1"
GROUP = "one aggregate: the reports, $sort + $group $first"
#: a batch stored by one client bulkWrite command (MongoDB 8.0+), where the engine has it
BULK = "one bulkWrite a batch (MongoDB 8.0+)"
_ID_RANGE = "{engine} does not serve this query from the index (docs/ENGINES.md); a real MongoDB scans only the index bounds"
_LIMIT_ONE = ("{engine} sorts each aircraft's whole range for limit 1 (docs/ENGINES.md); counted as a real MongoDB "
              "reads it: backwards, one key and one document per aircraft")
_DISTINCT = ("{engine} examines every report of the airline; a real MongoDB may skip through the "
             "{{airline, icao24, timestamp}} index instead (a DISTINCT_SCAN): check its explain")


class _Work:
    """The server's work of each form, from explains where the engine has them (``caps.explain``),
    else nothing (never zero); :meth:`note` words what the bill says where the engine's plan is not a
    real MongoDB's."""

    def __init__(self, db: Any) -> None:
        info = info_of(db)
        self.on, self.engine = bool(info and info.caps.explain), info.engine if info else "this engine"
        self.id_range = bool(info and info.caps.id_range_index)

    def find(self, coll: Any, filter: Mapping[str, Any], sort: Any = None) -> dict[str, int]:
        """Keys and documents examined by ``coll.find(filter).sort(sort)``, from its explain (a read
        whose order comes from its index, or that returns every match, examines the same without the
        sort: only a limited read needs it)."""
        if not self.on:
            return {}
        cursor = coll.find(dict(filter))
        _, keys, docs = plan_summary((cursor.sort(sort) if sort else cursor).explain())
        return {"keys examined": keys or 0, "docs examined": docs or 0}

    def newest(self, coll: Any, filters: Sequence[Mapping[str, Any]], sort: Any) -> tuple[dict[str, int], bool]:
        """The work of reading the newest document of each of ``filters`` (``sort``, limit 1), from the
        explain of the first (each is the same index read); and whether it is the model (one key and
        one document each: the range read backwards) because this engine examined more."""
        work = self.find(coll, filters[0], sort) if filters else {}
        modelled = bool(work) and work["docs examined"] > 1
        return ({k: len(filters) for k in ("keys examined", "docs examined")} if modelled else
                {k: v * len(filters) for k, v in work.items()}), modelled

    def note(self, text: str) -> str:
        return text.format(engine=self.engine)


def _add(*works: Mapping[str, int]) -> dict[str, int]:
    return {k: sum(w[k] for w in works) for k in works[0]} if works and all(works) else {}


def _read(fn: Callable[[], Any], work: Mapping[str, int]) -> tuple[dict[str, Any], Any]:
    """One read, counted, with the server's work found for it; and its answer."""
    with count_commands() as c:
        answer = fn()
    return {**cost_of(c), **work}, answer


def _store(write: Callable[[list], None], batches: list[list], index_keys: Any, work: _Work,
           updated: Any = None) -> dict[str, float]:
    """Storing ``batches``, every report's share: commands, documents and index keys written per report.
    An insert finds nothing first (no keys examined); each update statement (on ``updated``) finds its
    document by its filter, as that filter's explain shows."""
    n = sum(len(b) for b in batches)
    with count_commands(keep_commands=updated is not None, index_keys=index_keys) as c:
        for batch in batches:
            write(batch)
    cost = {k: v / n for k, v in cost_of(c).items()}
    if work.on:
        filters = [u["q"] for cmd in c.command_documents if "update" in cmd for u in cmd.get("updates", [])] + \
            [op["filter"] for cmd in c.command_documents if "bulkWrite" in cmd for op in cmd.get("ops", []) if "update" in op]
        one = work.find(updated, filters[0]) if filters else {"keys examined": 0, "docs examined": 0}
        cost.update({k: v * len(filters) / n for k, v in one.items()})
    return cost


def _bulk_write(db: Any, models: list[Any]) -> None:
    """One client ``bulkWrite`` command (MongoDB 8.0+: several collections, inserts and updates
    together), unordered; a document already stored (code 11000) is refused, any other error raised."""
    from pymongo.errors import ClientBulkWriteException

    try:
        db.client.bulk_write(models, ordered=False)
    except ClientBulkWriteException as e:
        if e.error or any((w or {}).get("code") != 11000 for w in (e.write_errors or [])):
            raise


def _has_bulk_write(db: Any, coll: Any) -> bool:
    """Whether this engine takes the client ``bulkWrite`` command (MongoDB 8.0+), tried uncounted with
    an update that matches nothing."""
    from pymongo import MongoClient, UpdateOne

    if not isinstance(getattr(db, "client", None), MongoClient):
        return False
    try:
        with paused():
            db.client.bulk_write([UpdateOne({"_id": "no such document"}, {"$set": {"x": 1}},
                                            namespace=f"{db.name}.{coll.name}")])
        return True
    except Exception:  # noqa: BLE001 - an engine or server without the command: no such form
        return False


def _subset_bulk_writer(db: Any, coll: Any, result: IngestResult) -> Callable[[list], None]:
    """The subset design's batch as one client ``bulkWrite`` (MongoDB 8.0+): the batch's parents and
    reports inserted, and each aircraft's newest report pushed as its ``last_reports``, sorted and sliced
    to the latest one (``keep_last=1``: a re-sent or late report leaves the document as it was)."""
    from pymongo import InsertOne, UpdateOne

    ns = f"{db.name}.{coll.name}"

    def write(part: list[dict[str, Any]]) -> None:
        parents, reports = batch_documents(list(enumerate(part)), result)
        newest: dict[str, dict[str, Any]] = {}
        for r in reports.values():
            aid = make_id(r["airline"], r["icao24"])
            if aid not in newest or r["timestamp"] > newest[aid]["timestamp"]:
                newest[aid] = r
        _bulk_write(db, [InsertOne(d, namespace=ns) for _, d in sorted({**parents, **reports}.items())] + [
            UpdateOne({"_id": aid}, {"$push": {"last_reports": {
                "$each": [{k: r[k] for k in ("_id", "timestamp", "lat", "lon")}], "$sort": {"timestamp": 1},
                "$slice": -1}}}, namespace=ns) for aid, r in sorted(newest.items())])
    return write


def _parents(docs: Sequence[Mapping[str, Any]]) -> tuple[set[str], set[tuple[str, str]]]:
    """The airlines and (airline, icao24) aircraft that ``docs`` (validated messages) belong to."""
    planes = {(airline_of_callsign(d.get("callsign")), d["icao24"]) for d in docs}
    return {a for a, _ in planes}, planes


def _same(answers: Mapping[str, Any], what: str) -> None:
    """Every form of a read must give the same answer: the bill compares work, never answers."""
    first = next(iter(answers.values()))
    wrong = [label for label, a in answers.items() if a != first]
    if wrong:
        raise AssertionError(f"tracker_costs: {what}: the forms {wrong} answer differently from the others")


def _positions(docs: Any) -> dict[str, tuple]:
    return {d["_id"]: (d["timestamp"], d["lat"], d["lon"]) for d in docs}


def tracker_costs(db: Any, airline: str, messages: Sequence[Mapping[str, Any]], icao24: str, *,
                  batch_size: int = 289, counted: int = 3, keep_last: int = 1, single: str | None = None,
                  three: tuple[str, str, str] | None = None) -> dict[str, dict[str, Forms]]:
    """Every form of every operation of notebook 04's tracker workload, per design, measured:
    ``{design: {operation: Forms}}`` for :meth:`helpers.workload.Workload.weigh`.

    Storing is counted per report over the last ``counted`` batches of ``batch_size`` of ``messages``
    (one airline's reports, in arrival order), once the earlier ones are stored: a tracker that has
    been running, whose airlines and aircraft mostly exist. Each design writes to fresh workbook
    collections (``aero_cost_*``; creating them and their indexes is not counted) with the indexes its
    reads need (no ``2dsphere``: the workload has no geo query; it would add one key per report to
    every design alike). Each read is counted once, on collections that hold all of ``messages``:
    ``single`` and the three names in ``three`` where the caller already stored them that way (else
    the fresh copies), the fresh subset copy (``keep_last`` reports per aircraft) for the subset
    design. The reads: one aircraft's reports (``icao24``), the latest position of every aircraft of
    the fleet, everything for the airline. Notebook 04."""
    docs = [clean for clean, _ in map(validate_message, messages) if clean is not None]
    cut = max(len(docs) - counted * batch_size, 0)
    head, batches = docs[:cut], [docs[i:i + batch_size] for i in range(cut, len(docs), batch_size)]
    names = {k: f"aero_cost_{k}" for k in ("airlines", "aircraft", "reports", "single", "subset")}
    for name in names.values():  # the workbook's own names: refused if somebody else's, before any drop
        workbook_collection(db, name, create=False)
    work = _Work(db)
    out = {"three collections": _three_collections(db, airline, head, batches, icao24, names, three, work)}
    # what the counted batches can write: their reports (arrival order is time order) and the parents
    touched = {"$or": [{"timestamp": {"$gte": min((d["timestamp"] for d in docs[cut:]), default=0)}},
                       {"recordType": {"$in": [AIRLINE, AIRCRAFT]}}]}
    latest: dict[str, dict] = {}
    for design, name, keep, reads_from in (("one collection", names["single"], 0, single),
                                           ("one collection + subset", names["subset"], keep_last, None)):
        stores = {}
        coll = fresh_collection(db, name)
        ensure_indexes(db, name)  # set up once, outside the count: the batches are what each report costs
        if keep == 1 and _has_bulk_write(db, coll):  # first on a copy holding the earlier batches' parents
            insert_new(coll, list(batch_documents(list(enumerate(head)), IngestResult())[0].values()))
            stores[BULK] = _store(_subset_bulk_writer(db, coll, IngestResult()), batches, {coll: touched}, work,
                                  updated=coll)
            coll = fresh_collection(db, name)
            ensure_indexes(db, name)
        stored = IngestResult()
        for i in range(0, len(head), batch_size):
            ingest_batch(coll, list(enumerate(head[i:i + batch_size], start=i)), stored, keep)
        stores["one insert and one $push a batch" if keep else "one insert a batch"] = _store(
            lambda b, c=coll, r=stored, k=keep: ingest_batch(c, list(enumerate(b)), r, k), batches,
            {coll: touched}, work, updated=coll if keep else None)
        latest[design], reads = _single_reads(db[reads_from or name], airline, icao24, bool(keep), work)
        out[design] = {"store a report": Forms(stores), **reads}
    _same(latest, "latest position of a fleet, one collection with and without the subset")
    return out


def _single_reads(coll: Any, airline: str, icao24: str, subset: bool, work: _Work) -> tuple[dict, dict[str, Forms]]:
    """The three reads of the single collection (``subset``: with the subset pattern), every form; and
    the latest positions they found."""
    ranged = id_range(REPORT, make_id(airline, icao24) + "_")  # 4.7's form, a range on every engine
    scans = {} if work.id_range or not work.on else None  # None: this engine scans an _id range
    reports = Forms({"{recordType: 3, _id range}": _read(lambda: list(coll.find(
        ranged, sort=[("recordType", 1), ("_id", 1)], batch_size=QUERY_BATCH)),
        work.find(coll, ranged))[0]})
    fleet = id_range(AIRCRAFT, make_id(airline) + "_")
    if subset:
        cost, answer = _read(lambda: _positions(coll.aggregate(subset_latest_pipeline(airline), batchSize=QUERY_BATCH)),
                             work.find(coll, fleet))
        latest = Forms({"one aggregate: the fleet's last_reports": cost})
    else:
        latest, answer = _single_latest(coll, airline, fleet, work)
    everything, _ = _read(lambda: airline_all(coll.database, airline, collection=coll.name),
                          work.find(coll, {"_id": prefix_regex(make_id(airline))}))
    return answer, {"one aircraft's reports": reports, "latest position of a fleet": latest,
            "everything for an airline": Forms({"one find on the _id prefix": everything}, teaching=scans
                                               if scans is not None else {"one find on the _id prefix": work.note(_ID_RANGE)})}


def _single_latest(coll: Any, airline: str, fleet: Mapping[str, Any], work: _Work) -> tuple[Forms, dict]:
    """Latest position of a fleet on the single collection: the loop, the ``$lookup``, the ``$group``."""
    planes = [d["_id"] for d in coll.find(fleet, {"_id": 1}, sort=[("_id", 1)], batch_size=QUERY_BATCH)]
    lasts, modelled = work.newest(coll, [id_range(REPORT, p + "_") for p in planes], [("recordType", -1), ("_id", -1)])
    per_plane = _add(work.find(coll, fleet), lasts)
    projection = {"_id": 0, "timestamp": 1, "lat": 1, "lon": 1}

    def loop() -> dict[str, tuple]:
        out = {}
        for plane in coll.find(fleet, {"icao24": 1}, sort=[("recordType", 1), ("_id", 1)], batch_size=QUERY_BATCH):
            last = latest_report(coll.database, airline, plane["icao24"], collection=coll.name, projection=projection)
            if last is not None:
                out[plane["icao24"]] = (last["timestamp"], last["lat"], last["lon"])
        return out

    forms, answers = {}, {}
    for label, fn, w in (
            (LOOKUP, lambda: _positions(coll.aggregate(fleet_latest_pipeline(airline, coll.name), batchSize=QUERY_BATCH)), per_plane),
            (GROUP, lambda: _positions(coll.aggregate(fleet_latest_group_pipeline(airline), batchSize=QUERY_BATCH)),
             work.find(coll, id_range(REPORT, make_id(airline) + "_"))),
            (LOOP, loop, per_plane)):
        forms[label], answers[label] = _read(fn, w)
    _same(answers, "latest position of a fleet")
    notes = {LOOP: "counter-example: the obvious form, a round trip per aircraft"}
    if modelled:
        notes[LOOKUP] = work.note(_LIMIT_ONE)
        notes[LOOP] += "; " + work.note(_LIMIT_ONE)
    return Forms(forms, teaching=notes), answers[LOOKUP]


def _three_collections(db: Any, airline: str, head: list, batches: list[list], icao24: str,
                       names: Mapping[str, str], three: tuple[str, str, str] | None, work: _Work) -> dict[str, Forms]:
    """The three-collection design: its store in two forms (the batch's parents sent with every batch,
    or only those new to the writer), its reads in every form."""
    known_airlines, known_planes = _parents(head)  # stored before the counted batches

    def trio() -> tuple[Any, Any, Any]:
        a, p, r = (fresh_collection(db, names[k]) for k in ("airlines", "aircraft", "reports"))
        p.create_index("airline")
        r.create_index([("airline", 1), ("icao24", 1), ("timestamp", 1)])
        insert_new(a, [{k: v for k, v in _airline_doc(code).items() if k != "recordType"} for code in sorted(known_airlines)])
        insert_new(p, [{"_id": make_id(x, y), "airline": x, "icao24": y} for x, y in sorted(known_planes)])
        return a, p, r

    def writer(colls: tuple[Any, Any, Any], seen: set | None) -> Callable[[list], None]:
        a, p, r = colls

        def write(part: list[dict[str, Any]]) -> None:
            airlines, planes = _parents(part)
            airlines, planes = sorted(airlines - (seen or set())), sorted(planes - (seen or set()))
            insert_new(a, [{k: v for k, v in _airline_doc(code).items() if k != "recordType"} for code in airlines])
            insert_new(p, [{"_id": make_id(x, y), "airline": x, "icao24": y} for x, y in planes])
            insert_new(r, _three_reports(part))
            if seen is not None:
                seen.update(airlines, planes)
        return write

    def bulk_writer(colls: tuple[Any, Any, Any]) -> Callable[[list], None]:
        from pymongo import InsertOne

        a, p, r = (f"{db.name}.{c.name}" for c in colls)

        def write(part: list[dict[str, Any]]) -> None:  # the batch's parents and reports, one command
            airlines, planes = _parents(part)
            _bulk_write(db, [InsertOne({k: v for k, v in _airline_doc(code).items() if k != "recordType"}, namespace=a)
                             for code in sorted(airlines)] +
                        [InsertOne({"_id": make_id(x, y), "airline": x, "icao24": y}, namespace=p) for x, y in sorted(planes)] +
                        [InsertOne(doc, namespace=r) for doc in _three_reports(part)])
        return write

    every = trio()
    store = {"three inserts a batch": _store(writer(every, None), batches, list(every), work)}
    if _has_bulk_write(db, every[0]):
        colls = trio()  # fresh again: each form starts from the same state
        store[BULK] = _store(bulk_writer(colls), batches, list(colls), work)
    colls = trio()
    seen: set = set(known_airlines) | set(known_planes)
    store["parents only when new to the writer"] = _store(writer(colls, seen), batches, list(colls), work)
    if three is None:
        writer(colls, seen)(head)
        three = tuple(c.name for c in colls)  # type: ignore[assignment]
    a_c, p_c, r_c = (track_collection(db, n) for n in three)  # type: ignore[union-attr]
    return {"store a report": Forms(store), **_three_reads(a_c, p_c, r_c, airline, icao24, work)}


def _three_reports(part: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The three-collection design's report documents for ``part`` (validated messages): the single
    collection's report without ``recordType``."""
    out = []
    for d in part:
        code = airline_of_callsign(d.get("callsign"))
        out.append({"_id": make_id(code, d["icao24"], message_number(d["timestamp"])), "airline": code, **d,
                    GEO_FIELD: geo_point(d["lon"], d["lat"])})
    return out


def _three_reads(a_c: Any, p_c: Any, r_c: Any, airline: str, icao24: str, work: _Work) -> dict[str, Forms]:
    """The three reads of the three-collection design, every form (the same answers as the single
    collection's)."""
    by_time = [("airline", 1), ("icao24", 1), ("timestamp", 1)]
    one, _ = _read(lambda: list(r_c.find({"airline": airline, "icao24": icao24}, sort=by_time, batch_size=QUERY_BATCH)),
                   work.find(r_c, {"airline": airline, "icao24": icao24}))
    newest = [("airline", 1), ("icao24", 1), ("timestamp", -1)]
    planes = [d["icao24"] for d in p_c.find({"airline": airline}, {"icao24": 1}, sort=[("_id", 1)], batch_size=QUERY_BATCH)]
    lasts, modelled = work.newest(r_c, [{"airline": airline, "icao24": p} for p in planes], newest)
    per_plane = _add(work.find(p_c, {"airline": airline}), lasts)
    last = {"timestamp": "$last.timestamp", "lat": "$last.lat", "lon": "$last.lon"}
    lookup = [{"$match": {"airline": airline}}, {"$sort": {"_id": 1}},  # the aircraft's reports, newest first
              {"$lookup": {"from": r_c.name, "localField": "icao24", "foreignField": "icao24", "as": "last",
                           "pipeline": [{"$match": {"airline": airline}}, {"$sort": dict(newest)}, {"$limit": 1}]}},
              {"$unwind": "$last"}, {"$project": {"_id": "$icao24", **last}}]
    group = [{"$match": {"airline": airline}}, {"$sort": {"airline": 1, "icao24": 1, "timestamp": -1}},
             {"$group": {"_id": "$icao24", **{f: {"$first": f"${f}"} for f in ("timestamp", "lat", "lon")}}},
             {"$sort": {"_id": 1}}]

    def loop() -> dict[str, tuple]:
        return {p["icao24"]: (d["timestamp"], d["lat"], d["lon"]) for p in p_c.find(
            {"airline": airline}, {"icao24": 1}, sort=[("_id", 1)], batch_size=QUERY_BATCH)
            for d in [r_c.find_one({"airline": airline, "icao24": p["icao24"]}, {"timestamp": 1, "lat": 1, "lon": 1},
                                   sort=newest)] if d is not None}

    forms, answers = {}, {}
    for label, fn, w in ((LOOKUP, lambda: _positions(p_c.aggregate(lookup, batchSize=QUERY_BATCH)), per_plane),
                         (GROUP, lambda: _positions(r_c.aggregate(group, batchSize=QUERY_BATCH)),
                          work.find(r_c, {"airline": airline})),
                         (LOOP, loop, per_plane)):
        forms[label], answers[label] = _read(fn, w)
    _same(answers, "latest position of a fleet (three collections)")
    notes = {LOOP: "counter-example: the obvious form, a round trip per aircraft"}
    if modelled:
        notes[LOOKUP] = work.note(_LIMIT_ONE)
        notes[LOOP] += "; " + work.note(_LIMIT_ONE)
    if work.on:
        notes[GROUP] = work.note(_DISTINCT)
    union = [{"$match": {"_id": airline}},
             {"$unionWith": {"coll": p_c.name, "pipeline": [{"$match": {"airline": airline}}, {"$sort": {"_id": 1}}]}},
             {"$unionWith": {"coll": r_c.name, "pipeline": [{"$match": {"airline": airline}}, {"$sort": dict(by_time)}]}}]
    all_work = _add(work.find(a_c, {"_id": airline}), work.find(p_c, {"airline": airline}),
                    work.find(r_c, {"airline": airline}))
    everything = {
        "one aggregate with $unionWith": _read(lambda: list(a_c.aggregate(union, batchSize=QUERY_BATCH)), all_work)[0],
        "three queries": _read(lambda: (a_c.find_one({"_id": airline}), list(p_c.find(
            {"airline": airline}, sort=[("_id", 1)], batch_size=QUERY_BATCH)), list(r_c.find(
                {"airline": airline}, sort=by_time, batch_size=QUERY_BATCH))), all_work)[0]}
    return {"one aircraft's reports": Forms({"one find on {airline, icao24, timestamp}": one}),
            "latest position of a fleet": Forms(forms, teaching=notes),
            "everything for an airline": Forms(everything, teaching={
                "three queries": "counter-example: a round trip per collection"})}
