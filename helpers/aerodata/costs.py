"""The measured cost of notebook 04's tracker workload: every design's every operation, in each form a
competent engineer could write (notebook 04).

Five designs: three collections (airlines, aircraft, reports), the single collection (``ingest``), it
with the fleet's fields in its second index (:data:`WIDE`), the single collection with the subset pattern in each aircraft (``ingest(..., keep_last=n)``), and
with the subset in the airline (:data:`IN_AIRLINE`: its fleet's latest positions, one document for the map). :func:`tracker_costs`
gives ``{design: {operation: Forms}}`` for :meth:`helpers.workload.Workload.weigh`, ``contest`` and
``pick``: the bill prices each design at its cheapest form, and shows the others as counter-examples.
Every read sets its batch size; every write counts the index keys it writes
(``count_commands(index_keys=...)``); where the engine explains (``caps.explain``), each form carries
the keys and documents the server examined (an insert refused as a duplicate: its ``_id`` key), with a
note where the engine's plan is not a real MongoDB's. The lesson imports it from :mod:`helpers.aerodata`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..backends import info_of
from ..counting import count_commands
from ..plans import plan_summary
from ..safety import check_copies, fresh_collection, track_collection, workbook_collection
from ..workload import Forms, cost_of
from .geo import GEO_FIELD, geo_point
from .keys import (
    AIRCRAFT,
    QUERY_BATCH,
    REPORT,
    _airline_doc,
    airline_of_callsign,
    make_id,
    prefix_bounds,
)
from .messages import (
    RECEIVER_BATCH,
    IngestResult,
    message_number,
    validate_message,
)
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
from .writers import (
    _bulk_write,
    _ingest_writer,
    _single_new_writer,
    _statements_writer,
    _update_filters,
    airline_fleet_statements,
    subset_statements,
)

__all__ = ["tracker_costs", "subset_statements", "airline_fleet_statements", "IN_AIRLINE", "PARENTS_EACH_BATCH", "PARENTS_HOURLY", "ID_ONLY", "ID_TRACK", "ON_ID_ONLY", "ID_RANGE_TRACK", "WIDE", "WIDE_INDEX", "AIRLINE_UPSERTS", "NEW", "LOOP", "LOOKUP", "GROUP", "DISTINCT", "BULK", "UPSERTS"]

#: the forms of "latest position of a fleet", as the bill labels them
LOOP = "the fleet, then a find_one per aircraft"
LOOKUP = "one aggregate: the fleet's keys, $lookup ... $limit 1"
GROUP = "one aggregate: the reports, $sort + $group $first"
#: three collections: the same $group, sorted in the index's order reversed (a real MongoDB's DISTINCT_SCAN)
DISTINCT = "one aggregate: the index backwards, $group $first (DISTINCT_SCAN)"
#: a batch stored by one client bulkWrite command (MongoDB 8.0+), where the engine has it
BULK = "one bulkWrite a batch (MongoDB 8.0+)"
#: the subset's batch as one update command: an upsert per document (one collection, any version)
UPSERTS = "one update command a batch (an upsert per document)"


#: the subset held by the airline: one document for the whole fleet's map
IN_AIRLINE = "one collection + subset in the airline"
#: one collection whose second index is {recordType, airline, icao24, _id} (the fleet's fields) in place of
#: {recordType, _id}: the same keys written, and the DISTINCT_SCAN map of three collections
WIDE_INDEX = [("recordType", 1), ("airline", 1), ("icao24", 1), ("_id", 1)]
WIDE = "one collection (fleet index)"
AIRLINE_UPSERTS = "one update command a batch (an upsert per document, a pipeline per airline)"
#: a store form whose writer remembers the parents it stored: it sends an airline or aircraft only when new
#: (none refused), in the same command
NEW = ", parents only when new to the writer"
REPORTS_AN_HOUR = 2_500_000 / 24  #: the workload's reports an hour (2.5 M a day)
#: three collections without client bulkWrite: the reports each batch, parents new to the writer once an hour
HOURLY = "one insert of reports a batch, new parents flushed once an hour"
#: the three collections' layouts of freshness: every batch's new parents stored with it (the aircraft collection as
#: fresh as the reports, a map read from it current to the batch), or new aircraft stored once an hour (HOURLY: the
#: aircraft collection up to an hour behind, so only a map read from the reports alone is as fresh as the batch)
PARENTS_EACH_BATCH = "new parents stored with their batch"
PARENTS_HOURLY = "new aircraft stored once an hour"
#: what one flight's track draws of each report: an inclusion projection
TRACK = {"_id": 0, "timestamp": 1, "lat": 1, "lon": 1, "altitude": 1}
#: the layouts of the subset in the airline, whose map and everything-for-an-airline read only the _id index: that
#: index alone (the track an _id range, a document per report), or beside a second index (one more key a report)
ID_ONLY = "the _id index alone"
ID_TRACK = "the _id index and {recordType, _id}, or it widened with the track's fields (the same keys written)"
#: a store form measured on ID_ONLY, the label's suffix
ON_ID_ONLY = ", on the _id index alone"
ID_RANGE_TRACK = "{_id range}, the track's fields (the _id index alone)"
_ALONE = ("no second index: a key a report fewer, billed only beside the track read as an _id range "
          "(a document a report, where the covered track reads none)")
_ID_RANGE = ("{engine} scans the collection for an _id range (docs/ENGINES.md); counted as a real MongoDB "
             "reads it: the range of the _id index, one key and one document per match")
_WHOLE = "counter-example: every field of every report, where the track draws four"
_ID_PREFIX = ("{engine} scans the collection for an _id prefix (docs/ENGINES.md); counted as a real MongoDB "
              "reads it: the prefix's range of the _id index, one key and one document per match")
_LIMIT_ONE = ("{engine} sorts each aircraft's whole range for limit 1 (docs/ENGINES.md); counted as a real MongoDB "
              "reads it: backwards, one key and one document per aircraft")
_DISTINCT_SCAN = ("modelled: {engine} plans FETCH > IXSCAN without counts, and no real MongoDB's count was measured; "
                  "counted as the least a DISTINCT_SCAN reads: one key and one document per aircraft")
#: the track's fields widening a design's second index: it covers the track and the map (the same keys written)
WIDER = [("timestamp", 1), ("lat", 1), ("lon", 1), ("altitude", 1)]
COVERED_TRACK = "covered: the second index widened with timestamp, lat, lon, altitude"
COVERED_MAP = "covered: DISTINCT_SCAN on the second index widened with lat, lon, altitude"
_COVERED = ("{engine} fetches the documents of a covered read (probed: caps.covered_query, docs/ENGINES.md); the "
            "fleet's keys counted as a real MongoDB reads them: from its index alone, no document fetched")
_COVERED_READ = _COVERED.replace("the fleet's keys counted as a real MongoDB reads them", "counted as a real MongoDB reads it")


class _Work:
    """The server's work of each form, from explains where the engine has them (``caps.explain``),
    else nothing (never zero). Where the engine's plan is not a real MongoDB's (an ``_id`` prefix
    scanned, a limit-one read that sorts the whole range, a read the index could cover) the work is
    counted as a real MongoDB does it, and :meth:`note` says so beside the form."""

    def __init__(self, db: Any) -> None:
        info = info_of(db)
        self.on, self.engine = bool(info and info.caps.explain), info.engine if info else "this engine"
        self.id_range = bool(info and info.caps.id_range_index)
        self.bulk = bool(info and info.caps.client_bulk_write)
        self.covers = bool(info and info.caps.covered_query)

    def find(self, coll: Any, filter: Mapping[str, Any], sort: Any = None,
             projection: Mapping[str, Any] | None = None) -> dict[str, int]:
        """Keys and documents examined by ``coll.find(filter, projection).sort(sort)``, from its explain
        (a read whose order comes from its index, or that returns every match, examines the same
        without the sort: only a limited read needs it)."""
        if not self.on:
            return {}
        cursor = coll.find(dict(filter), projection)
        _, keys, docs = plan_summary((cursor.sort(sort) if sort else cursor).explain())
        return {"keys examined": keys or 0, "docs examined": docs or 0}

    def covered(self, coll: Any, filter: Mapping[str, Any], projection: Mapping[str, Any]) -> tuple[dict[str, int], bool]:
        """The work of ``filter`` read for ``projection``, fields its index holds (a covered read: its
        keys, no document), from that find's explain; and whether it is the model (no document) because
        this engine was probed to fetch the documents of a covered read (``caps.covered_query`` False)."""
        work = self.find(coll, filter, projection=projection)
        modelled = bool(work) and not self.covers and work["docs examined"] > 0
        return ({**work, "docs examined": 0} if modelled else work), modelled

    def newest(self, coll: Any, filters: Sequence[Mapping[str, Any]], sort: Any) -> tuple[dict[str, int], bool]:
        """The work of reading the newest document of each of ``filters`` (``sort``, limit 1), from the
        explain of the first (each is the same index read); and whether it is the model (one key and
        one document each: the range read backwards) because this engine examined more."""
        work = self.find(coll, filters[0], sort) if filters else {}
        modelled = bool(work) and work["docs examined"] > 1
        return ({k: len(filters) for k in ("keys examined", "docs examined")} if modelled else
                {k: v * len(filters) for k, v in work.items()}), modelled

    def id_prefix(self, coll: Any, filter: Mapping[str, Any], matches: int) -> tuple[dict[str, int], bool]:
        """The work of an anchored ``_id`` prefix read returning ``matches`` documents; and whether it
        is the model (the prefix's range of the ``_id`` index: a key and a document per match) because
        this engine scans the collection (``caps.id_range_index`` False)."""
        if not self.on or self.id_range:
            return self.find(coll, filter), False
        return {"keys examined": matches, "docs examined": matches}, True

    def note(self, text: str) -> str:
        return text.format(engine=self.engine)


def _add(*works: Mapping[str, int]) -> dict[str, int]:
    return {k: sum(w[k] for w in works) for k in works[0]} if works and all(works) else {}


def _read(fn: Callable[[], Any], work: Mapping[str, int]) -> tuple[dict[str, Any], Any]:
    """One read, counted, with the server's work found for it; and its answer."""
    with count_commands() as c:
        answer = fn()
    return {**cost_of(c), **work}, answer


def _store(write: Callable[[list], Any], batches: list[list], index_keys: Any, work: _Work,
           updated: Any = None) -> dict[str, float]:
    """Storing ``batches``, every report's share: commands, documents and index keys written per report.
    An insert finds nothing first (no keys examined); an update statement (on ``updated``) finds its
    document by its ``_id``, as that filter's explain shows, and an upsert that finds none examines
    nothing (a real MongoDB's ``_id`` lookup misses: no key, no document). An insert refused as a
    duplicate (code 11000: a parent sent again, a re-sent report) writes nothing but is not free: it is
    billed one key examined (its ``_id``), in the batch's round trip, a lower bound: a real MongoDB inserts
    a command's documents in groups (up to 64, ``internalInsertMaxBatchSize``) and, when one fails, undoes
    the group and inserts its documents one at a time (``insertBatchAndHandleErrors`` in the server's
    ``write_ops_exec.cpp``), so a duplicate also redoes its group's writes. ``write(batch)`` returns ``(found, refused)``: how many of its update statements found
    their document (None: all of them), and how many of its inserts were refused."""
    n = sum(len(b) for b in batches)
    found = refused = 0
    with count_commands(keep_commands=updated is not None, index_keys=index_keys) as c:
        for batch in batches:
            sent = len(c.command_documents)
            hit, dup = write(batch)
            found += hit if hit is not None else len(_update_filters(c.command_documents[sent:]))
            refused += dup
    cost = {k: v / n for k, v in cost_of(c).items()}
    if work.on:
        filters = _update_filters(c.command_documents)
        one = work.find(updated, filters[0]) if filters else {"keys examined": 0, "docs examined": 0}
        cost.update({k: v * found / n for k, v in one.items()})
        cost["keys examined"] += refused / n  # a unique-index lookup each (_id), no document
    return cost


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
                  batches: Sequence[Sequence[Mapping[str, Any]]] | None = None, batch_size: int = RECEIVER_BATCH,
                  counted: int = 3, keep_last: int = 1, single: str | None = None,
                  three: tuple[str, str, str] | None = None, new_aircraft: float | None = None) -> dict[str, dict[str, Forms]]:
    """Every form of every operation of notebook 04's tracker workload, per design, measured:
    ``{design: {operation: Forms}}`` for :meth:`helpers.workload.Workload.weigh`.

    Storing is counted per report over ``batches`` (the whole receiver's traffic, e.g.
    :func:`receiver_batches`; by default the last ``counted`` batches of ``batch_size`` of ``messages``)
    in fresh workbook collections (``aero_cost_*``) that already hold the batches' airlines and aircraft
    but one, the aircraft heard first last (a tracker that has been running), with the indexes the
    reads need (no ``2dsphere``: the workload
    has no geo query; it would add one key per report to every design alike); creating them is not
    counted. Each read is counted once on collections holding ``messages`` (one airline's reports, in
    arrival order): ``single`` and the three names in ``three`` where the caller already stored them
    that way (else fresh copies), a fresh subset copy (``keep_last`` reports per aircraft) for the
    subset design. The reads: one aircraft's reports (``icao24``), the latest position of every
    aircraft of the fleet, everything for the airline. The subsets are kept for ``airline`` alone, the
    map the workload reads (another airline's aircraft and airline are plain inserts). ``new_aircraft``:
    how many aircraft new to the tracker the batches hold at the day's rate (e.g. the day's airframes
    over its flights, a fraction); each store form is then measured with that aircraft new and with
    none, and weighed between (the default: the one new aircraft as measured). The subset in the airline,
    whose reads need no index but ``_id``, has each store form measured on the ``_id`` index alone too
    (:data:`ID_ONLY`) and its track read as an ``_id`` range; the three collections' hourly flush of new
    aircraft is billed only beside a map read from the reports (:data:`PARENTS_HOURLY`). Notebook 04."""
    docs = [clean for clean, _ in map(validate_message, messages) if clean is not None]
    if batches is None:
        cut = max(len(docs) - counted * batch_size, 0)
        batches = [docs[i:i + batch_size] for i in range(cut, len(docs), batch_size)]
    batches = [[clean for clean, _ in map(validate_message, b) if clean is not None] for b in batches]
    names = {k: f"aero_cost_{k}" for k in ("airlines", "aircraft", "reports", "single", "subset", "in_airline", "wide",
                                           "cover", "id_only")}
    for name in names.values():  # the workbook's own names: refused if somebody else's, before any drop
        workbook_collection(db, name, create=False)
    work = _Work(db)
    every_parent = list(batch_documents(list(enumerate(d for b in batches for d in b)), IngestResult())[0].values())
    planes = [p for p in every_parent if p["recordType"] == AIRCRAFT]  # the one heard first last is new to the tracker
    new = max(planes, key=lambda p: (p["first_seen"], p["_id"]))["_id"] if len(planes) > 1 else None

    def indexed(name: str) -> Any:  # the design's second index: the fleet's fields for WIDE, none on ID_ONLY
        coll = fresh_collection(db, name)
        if name == names["wide"]:
            coll.create_index(WIDE_INDEX)
        elif name != names["id_only"]:
            ensure_indexes(db, name)
        return coll

    def measure(new: str | None) -> dict[str, dict[str, dict[str, float]]]:
        """Every design's store forms, the batches' parents stored before them but the aircraft ``new``."""
        parents = [p for p in every_parent if p["_id"] != new]
        stores = {"three collections": _three_collections(db, airline, docs, batches, icao24, names, three, work, new,
                                                          stores_only=True)}

        def fresh(name: str) -> Any:  # a store starts from the same state: the batches' parents stored
            coll = indexed(name)
            insert_new(coll, [dict(p) for p in parents])
            return coll

        known = {p["_id"] for p in parents}  # what a writer that remembers has stored before the batches
        followed = {airline}  # the subsets the workload reads: the followed airline's map, kept for it alone

        def in_aircraft(part: list) -> list:
            return subset_statements(part, keep_last, followed)

        def in_airline(part: list) -> list:
            return airline_fleet_statements(part, followed)

        for design, forms in (
                ("one collection", (("one insert a batch", lambda c: _ingest_writer(c, 0), False),
                                    ("one insert a batch" + NEW, lambda c: _single_new_writer(c, set(known)), False))),
                (WIDE, (("one insert a batch", lambda c: _ingest_writer(c, 0), False),
                        ("one insert a batch" + NEW, lambda c: _single_new_writer(c, set(known)), False))),
                ("one collection + subset", (
                    *(((BULK, lambda c: _statements_writer(db, c, in_aircraft, "bulk"), True),
                       (BULK + NEW, lambda c: _statements_writer(db, c, in_aircraft, "bulk", set(known)), True))
                      if work.bulk else ()),
                    (UPSERTS, lambda c: _statements_writer(db, c, in_aircraft, "upserts"), True),
                    (UPSERTS + NEW, lambda c: _statements_writer(db, c, in_aircraft, "upserts", set(known)), True),
                    ("one insert and one $push a batch", lambda c: _ingest_writer(c, keep_last, followed), True))),
                (IN_AIRLINE, (
                    *(((BULK, lambda c: _statements_writer(db, c, in_airline, "bulk"), True),
                       (BULK + NEW, lambda c: _statements_writer(db, c, in_airline, "bulk", set(known)), True))
                      if work.bulk else ()),
                    (AIRLINE_UPSERTS, lambda c: _statements_writer(db, c, in_airline, "upserts"), True),
                    (AIRLINE_UPSERTS + NEW, lambda c: _statements_writer(db, c, in_airline, "upserts", set(known)), True)))):
            name = names[{"one collection": "single", WIDE: "wide", IN_AIRLINE: "in_airline"}.get(design, "subset")]
            stores[design] = {}
            for label, make, updates in forms:
                coll = fresh(name)
                stores[design][label] = _store(make(coll), batches, [coll], work, updated=coll if updates else None)
                if design == IN_AIRLINE:  # its reads need no second index: each form on the _id index alone too
                    coll = fresh(names["id_only"])
                    stores[design][label + ON_ID_ONLY] = _store(make(coll), batches, [coll], work,
                                                                updated=coll if updates else None)
        return stores

    # the measured batches hold one aircraft new to the tracker; the day's share, where given, weighs it
    measured = measure(new)
    if new is not None and new_aircraft is not None and new_aircraft != 1:
        none = measure(None)
        measured = {d: {label: {k: none[d][label][k] + new_aircraft * (v - none[d][label][k]) for k, v in cost.items()}
                        for label, cost in forms.items()} for d, forms in measured.items()}
    out = {"three collections": _fresh_alike(measured["three collections"],
                                             _three_collections(db, airline, docs, batches, icao24, names, three, work, new))}
    latest: dict[str, dict] = {}
    load = max(map(len, batches), default=1)  # read copies are stored in the measured batches' size
    for design, keep, reads_from in (("one collection", 0, single), (WIDE, 0, None),
                                     ("one collection + subset", keep_last, None), (IN_AIRLINE, 0, None)):
        if reads_from is None:  # a fresh copy of the airline's reports to read from, stored uncounted
            reads_from = names[{IN_AIRLINE: "in_airline", WIDE: "wide"}.get(design, "subset" if keep else "single")]
            coll, stored = indexed(reads_from), IngestResult()
            fleet_map = _statements_writer(db, coll, airline_fleet_statements, "upserts") if design == IN_AIRLINE else None
            for i in range(0, len(docs), load):
                if fleet_map is not None:
                    fleet_map(docs[i:i + load])
                else:
                    ingest_batch(coll, list(enumerate(docs[i:i + load], start=i)), stored, keep)
        latest[design], reads = (_wide_reads(db[reads_from], airline, icao24, work) if design == WIDE else
                                 _single_reads(db[reads_from], airline, icao24, bool(keep), work,
                                               in_airline=design == IN_AIRLINE))
        store = measured[design]
        alone = [label for label in store if label.endswith(ON_ID_ONLY)]
        out[design] = {"store a report": Forms(store, layouts={label: ID_ONLY if label in alone else ID_TRACK
                                                               for label in store} if design == IN_AIRLINE else None,
                                               teaching={label: _ALONE for label in alone}),
                       **reads}
    _same(latest, "latest position of a fleet, one collection with and without the subset")
    return out


def _fresh_alike(store: Mapping[str, Mapping[str, float]], reads: dict[str, Forms]) -> dict[str, Forms]:
    """The three collections' forms, each with the freshness it stands on: the store that flushes new aircraft
    once an hour (:data:`HOURLY`) is never billed beside a map read from the aircraft collection (the
    ``$lookup`` from the fleet, the loop), which would miss an aircraft heard within the hour for up to an
    hour, where the map is asked to be 10 s fresh; a map read from the reports alone fits either store."""
    latest = reads["latest position of a fleet"]
    from_fleet = (LOOKUP, LOOP)
    return {"store a report": Forms(store, layouts={label: PARENTS_HOURLY if label == HOURLY else PARENTS_EACH_BATCH
                                                    for label in store}),
            **reads,
            "latest position of a fleet": Forms(latest.forms, teaching=latest.teaching, layouts={
                label: PARENTS_EACH_BATCH if label in from_fleet else {PARENTS_EACH_BATCH, PARENTS_HOURLY}
                for label in latest.forms})}


def _latest_notes(work: _Work, modelled: bool, covered: bool = False) -> dict[str, str]:
    """The notes beside the forms of "latest position of a fleet": the loop a counter-example, and
    where the engine's plan is not a real MongoDB's, what the bill counts instead."""
    notes = {LOOP: "counter-example: the obvious form, a round trip per aircraft",
             GROUP: "counter-example: its sort mixes the index's directions, a blocking sort of every report"}
    said = [work.note(t) for t, on in ((_COVERED, covered), (_LIMIT_ONE, modelled)) if on]
    if said:
        notes[LOOKUP] = "; ".join(said)
    if modelled:
        notes[LOOP] += "; " + work.note(_LIMIT_ONE)
    return notes


def _single_reads(coll: Any, airline: str, icao24: str, subset: bool, work: _Work,
                  in_airline: bool = False) -> tuple[dict, dict[str, Forms]]:
    """The three reads of the single collection (``subset``: with the subset pattern in each aircraft;
    ``in_airline``: in the airline document), every form; and the latest positions they found."""
    ranged = id_range(REPORT, make_id(airline, icao24) + "_")  # 4.7's form, a range on every engine
    reports = Forms({label: _read(lambda p=p: list(coll.find(ranged, p, sort=[("recordType", 1), ("_id", 1)],
                                                             batch_size=QUERY_BATCH)), work.find(coll, ranged))[0]
                     for label, p in (("{recordType: 3, _id range}, the track's fields", TRACK),
                                      ("{recordType: 3, _id range}, whole reports", None))},
                    teaching={"{recordType: 3, _id range}, whole reports": _WHOLE})
    fleet = id_range(AIRCRAFT, make_id(airline) + "_")
    if in_airline:
        by_id = [("recordType", 1), ("_id", 1)]
        reports = _with(reports, *(lambda m, n: (m["one aircraft's reports"], n))(*_covered_forms(coll, by_id + WIDER, ranged, by_id, work)))
        reports = _id_only_track(coll, airline, icao24, reports, work)

        def map_read() -> dict[str, tuple]:
            doc = coll.find_one({"_id": make_id(airline)}, {"_id": 0, "fleet": 1}) or {}
            return {k: (v["timestamp"], v["lat"], v["lon"]) for k, v in sorted(doc.get("fleet", {}).items())}
        cost, answer = _read(map_read, work.find(coll, {"_id": make_id(airline)}))
        latest = Forms({"one find_one: the airline's fleet": cost})
    elif subset:
        cost, answer = _read(lambda: _positions(coll.aggregate(subset_latest_pipeline(airline), batchSize=QUERY_BATCH)),
                             work.find(coll, fleet))
        latest = Forms({"one aggregate: the fleet's last_reports": cost})
    else:
        latest, answer = _single_latest(coll, airline, fleet, work)
    with count_commands() as c:
        everything = airline_all(coll.database, airline, collection=coll.name)
    prefix, modelled = work.id_prefix(coll, {"_id": prefix_regex(make_id(airline))}, len(everything))
    return answer, {"one aircraft's reports": reports, "latest position of a fleet": latest,
                    "everything for an airline": Forms({"one find on the _id prefix": {**cost_of(c), **prefix}},
                                                       teaching={"one find on the _id prefix": work.note(_ID_PREFIX)}
                                                       if modelled else None)}


def _id_only_track(coll: Any, airline: str, icao24: str, reports: Forms, work: _Work) -> Forms:
    """The subset in the airline's track read on a copy of ``coll`` with the ``_id`` index alone
    (:data:`ID_ONLY`): the aircraft's ``_id`` range (the trailing ``_`` leaves its aircraft document out),
    the track's fields, a key and a document a report; added to ``reports``, each form with its layout
    (the ``_id`` range reads on either, every other form needs the second index: :data:`ID_TRACK`)."""
    with check_copies(coll.database, "aero_cost_id_only") as (name,):  # one per call, dropped after
        copy = fresh_collection(coll.database, name)
        insert_new(copy, list(coll.find({}, sort=[("_id", 1)], batch_size=QUERY_BATCH)))
        lo, hi = prefix_bounds(make_id(airline, icao24) + "_")
        ranged = {"_id": {"$gte": lo, "$lt": hi}}
        answer = list(copy.find(ranged, TRACK, sort=[("_id", 1)], batch_size=QUERY_BATCH))
        w, modelled = work.id_prefix(copy, ranged, len(answer))
        cost, _ = _read(lambda: list(copy.find(ranged, TRACK, sort=[("_id", 1)], batch_size=QUERY_BATCH)), w)
    teaching = {**(reports.teaching or {}), **({ID_RANGE_TRACK: work.note(_ID_RANGE)} if modelled else {})}
    return Forms({**reports.forms, ID_RANGE_TRACK: cost}, teaching=teaching,
                 layouts={**{label: ID_TRACK for label in reports.forms}, ID_RANGE_TRACK: {ID_ONLY, ID_TRACK}})


def _uses_index(db: Any, coll: Any, pipeline: list, name: str) -> bool:
    """Whether the explain of ``pipeline`` on ``coll`` names the index ``name``."""
    return f"'{name}'" in str(db.command("aggregate", coll.name, pipeline=pipeline, explain=True))


def _covered_forms(coll: Any, index: list, track: Mapping[str, Any], sort: list, work: _Work,
                   distinct: list | None = None, planes: int = 0) -> tuple[dict[str, Forms], dict[str, str]]:
    """The track (and the map's ``distinct``) read on a copy of ``coll`` indexed ``index`` alone: covered reads
    (:meth:`_Work.covered`; the map a covered DISTINCT_SCAN, a key an aircraft). ``{op: {form: cost}}``, notes."""
    copy = fresh_collection(db := coll.database, "aero_cost_cover")
    name, _ = copy.create_index(index), insert_new(copy, list(coll.find({}, batch_size=QUERY_BATCH)))
    w, modelled = work.covered(copy, track, TRACK)
    out = {"one aircraft's reports": {COVERED_TRACK: _read(
        lambda: list(copy.find(track, TRACK, sort=sort, batch_size=QUERY_BATCH)), w)[0]}}
    notes = {COVERED_TRACK: work.note(_COVERED_READ)} if modelled else {}
    if distinct is not None and work.on and _uses_index(db, copy, distinct, name):
        out["latest position of a fleet"] = {COVERED_MAP: _read(lambda: _positions(copy.aggregate(
            distinct, batchSize=QUERY_BATCH)), {"keys examined": planes, "docs examined": 0})[0]}
        notes[COVERED_MAP] = work.note(_DISTINCT_SCAN).replace("one key and one document", "one key and no document")
    return out, notes


def _with(forms: Forms, more: Mapping[str, Any], notes: Mapping[str, str]) -> Forms:  # ``more`` forms added
    return Forms({**forms.forms, **more}, teaching={**(forms.teaching or {}), **{k: v for k, v in notes.items() if k in more}})


def _wide_reads(coll: Any, airline: str, icao24: str, work: _Work) -> tuple[dict, dict[str, Forms]]:
    """The three reads of one collection indexed ``{recordType, airline, icao24, _id}`` (:data:`WIDE_INDEX`,
    in place of ``{recordType, _id}``: the same keys written), every form; and the latest positions.
    The map's ``$group``, sorted in the index's order reversed, is a DISTINCT_SCAN on a real MongoDB,
    modelled (one key and one document per aircraft) only where this engine's explain plans it on that
    index; else billed as the engine read it."""
    order = [k for k, _ in WIDE_INDEX]
    one = {"recordType": REPORT, "airline": airline, "icao24": icao24}
    whole = "{recordType: 3, airline, icao24}, whole reports"
    reports = Forms({label: _read(lambda p=p: list(coll.find(one, p, sort=[(k, 1) for k in order], batch_size=QUERY_BATCH)),
                                  work.find(coll, one))[0]
                     for label, p in (("{recordType: 3, airline, icao24}, the track's fields", TRACK), (whole, None))},
                    teaching={whole: _WHOLE})
    fleet = {"recordType": AIRCRAFT, "airline": airline}
    planes = [d["icao24"] for d in coll.find(fleet, {"_id": 0, "icao24": 1}, sort=[(k, 1) for k in order[:3]],
                                             batch_size=QUERY_BATCH)]
    backwards = {k: -1 for k in order}
    lasts, modelled = work.newest(coll, [{**one, "icao24": p} for p in planes], list(backwards.items()))
    keys, covered = work.covered(coll, fleet, {"_id": 0, "icao24": 1})
    last = {"timestamp": "$last.timestamp", "lat": "$last.lat", "lon": "$last.lon"}
    lookup = [{"$match": fleet}, {"$sort": {k: 1 for k in order[:3]}}, {"$project": {"_id": 0, "icao24": 1}},
              {"$lookup": {"from": coll.name, "localField": "icao24", "foreignField": "icao24", "as": "last",
                           "pipeline": [{"$match": {"recordType": REPORT, "airline": airline}}, {"$sort": backwards},
                                        {"$limit": 1}, {"$project": {"_id": 0, "timestamp": 1, "lat": 1, "lon": 1}}]}},
              {"$unwind": "$last"}, {"$project": {"_id": "$icao24", **last}}]
    distinct = [{"$match": {"recordType": REPORT, "airline": airline}}, {"$sort": backwards},
                {"$group": {"_id": "$icao24", **{f: {"$first": f"${f}"} for f in ("timestamp", "lat", "lon")}}}]
    name = "_".join(f"{k}_{d}" for k, d in WIDE_INDEX)
    planned = work.on and _uses_index(coll.database, coll, distinct, name)
    scan = ({"keys examined": len(planes), "docs examined": len(planes)} if planned else
            work.find(coll, {"recordType": REPORT, "airline": airline}))
    forms, answers = {}, {}
    for label, fn, w in ((LOOKUP, lambda: _positions(coll.aggregate(lookup, batchSize=QUERY_BATCH)), _add(keys, lasts)),
                         (DISTINCT, lambda: _positions(coll.aggregate(distinct, batchSize=QUERY_BATCH)), scan)):
        forms[label], answers[label] = _read(fn, w)
    _same(answers, "latest position of a fleet (one collection, the fleet's index)")
    notes = _latest_notes(work, modelled, covered)
    notes.pop(LOOP)
    notes.pop(GROUP)
    if planned:
        notes[DISTINCT] = work.note(_DISTINCT_SCAN)
    with count_commands() as c:
        everything = airline_all(coll.database, airline, collection=coll.name)
    prefix, by_model = work.id_prefix(coll, {"_id": prefix_regex(make_id(airline))}, len(everything))
    more, said = _covered_forms(coll, WIDE_INDEX + WIDER, one, [(k, 1) for k in order], work, distinct, len(planes))
    reports = _with(reports, more["one aircraft's reports"], said)
    latest = _with(Forms(forms, teaching=notes), more.get("latest position of a fleet", {}), said)
    return answers[DISTINCT], {"one aircraft's reports": reports, "latest position of a fleet": latest,
                               "everything for an airline": Forms({"one find on the _id prefix": {**cost_of(c), **prefix}},
                                                                  teaching={"one find on the _id prefix": work.note(_ID_PREFIX)}
                                                                  if by_model else None)}


def _single_latest(coll: Any, airline: str, fleet: Mapping[str, Any], work: _Work) -> tuple[Forms, dict]:
    """Latest position of a fleet on the single collection: the ``$lookup`` (the fleet's keys from
    the index, each aircraft's newest report), the ``$group``, the loop."""
    planes = [d["_id"] for d in coll.find(fleet, {"_id": 1}, sort=[("_id", 1)], batch_size=QUERY_BATCH)]
    lasts, modelled = work.newest(coll, [id_range(REPORT, p + "_") for p in planes], [("recordType", -1), ("_id", -1)])
    keys, covered = work.covered(coll, fleet, {"_id": 1})
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
            (LOOKUP, lambda: _positions(coll.aggregate(fleet_latest_pipeline(airline, coll.name), batchSize=QUERY_BATCH)),
             _add(keys, lasts)),
            (GROUP, lambda: _positions(coll.aggregate(fleet_latest_group_pipeline(airline), batchSize=QUERY_BATCH)),
             work.find(coll, id_range(REPORT, make_id(airline) + "_"))),
            (LOOP, loop, _add(work.find(coll, fleet), lasts))):
        forms[label], answers[label] = _read(fn, w)
    _same(answers, "latest position of a fleet")
    return Forms(forms, teaching=_latest_notes(work, modelled, covered)), answers[LOOKUP]


def _three_collections(db: Any, airline: str, docs: list, batches: list[list], icao24: str,
                       names: Mapping[str, str], three: tuple[str, str, str] | None, work: _Work,
                       new: str | None, stores_only: bool = False) -> Any:
    """The three-collection design: with ``stores_only`` its store in every form (the batch's parents sent
    with every batch, or only those new to the writer; one client ``bulkWrite`` where the engine has
    it), the batches' parents stored before them but for the aircraft ``new``; else its reads in every
    form (on ``three``, else on fresh copies of ``docs``)."""
    known_airlines, known_planes = _parents([d for b in batches for d in b])  # stored before the batches
    known_planes = {p for p in known_planes if make_id(*p) != new}

    def trio(airlines: Any = (), planes: Any = ()) -> tuple[Any, Any, Any]:
        a, p, r = (fresh_collection(db, names[k]) for k in ("airlines", "aircraft", "reports"))
        p.create_index([("airline", 1), ("icao24", 1)])  # the fleet's query, and its icao24: a covered read
        r.create_index([("airline", 1), ("icao24", 1), ("timestamp", 1)])
        insert_new(a, [{k: v for k, v in _airline_doc(code).items() if k != "recordType"} for code in sorted(airlines)])
        insert_new(p, [{"_id": make_id(x, y), "airline": x, "icao24": y} for x, y in sorted(planes)])
        return a, p, r

    def writer(colls: tuple[Any, Any, Any], seen: set | None) -> Callable[[list], tuple[None, int]]:
        a, p, r = colls

        def write(part: list[dict[str, Any]]) -> tuple[None, int]:
            airlines, planes = _parents(part)
            airlines, planes = sorted(airlines - (seen or set())), sorted(planes - (seen or set()))
            refused = sum(insert_new(c, docs)[1] for c, docs in (
                (a, [{k: v for k, v in _airline_doc(code).items() if k != "recordType"} for code in airlines]),
                (p, [{"_id": make_id(x, y), "airline": x, "icao24": y} for x, y in planes]),
                (r, _three_reports(part))))
            if seen is not None:
                seen.update(airlines, planes)
            return None, refused
        return write

    def bulk_writer(colls: tuple[Any, Any, Any], seen: set | None = None) -> Callable[[list], tuple[int, int]]:
        from pymongo import InsertOne

        a, p, r = (f"{db.name}.{c.name}" for c in colls)

        def write(part: list[dict[str, Any]]) -> tuple[int, int]:  # the batch's parents and reports, one command
            airlines, planes = _parents(part)
            if seen is not None:
                airlines, planes = airlines - seen, planes - seen
                seen.update(airlines, planes)
            return _bulk_write(db, [InsertOne({k: v for k, v in _airline_doc(code).items() if k != "recordType"}, namespace=a)
                             for code in sorted(airlines)] +
                        [InsertOne({"_id": make_id(x, y), "airline": x, "icao24": y}, namespace=p) for x, y in sorted(planes)] +
                        [InsertOne(doc, namespace=r) for doc in _three_reports(part)])
        return write

    def deferred_writer(colls: tuple[Any, Any, Any], seen: set, flushes: list[int]) -> Callable[[list], tuple[None, int]]:
        a, p, r = colls
        pending, done = (set(), set()), [0]

        def write(part: list[dict[str, Any]]) -> tuple[None, int]:  # the reports; new parents kept for the hour's flush
            airlines, planes = _parents(part)
            pending[0].update(airlines - seen), pending[1].update(planes - seen)
            seen.update(airlines, planes)
            refused = insert_new(r, _three_reports(part))[1]
            done[0] += 1
            if done[0] == len(batches):
                parents = ((a, [{k: v for k, v in _airline_doc(code).items() if k != "recordType"} for code in sorted(pending[0])]),
                           (p, [{"_id": make_id(x, y), "airline": x, "icao24": y} for x, y in sorted(pending[1])]))
                flushes.append(sum(bool(d) for _, d in parents))
                refused += sum(insert_new(c, d)[1] for c, d in parents)
            return None, refused
        return write

    if not stores_only:
        return _three_read_copies(db, docs, three, trio, writer, airline, icao24, work)
    every = trio(known_airlines, known_planes)
    store = {"three inserts a batch": _store(writer(every, None), batches, list(every), work)}
    if work.bulk:
        colls = trio(known_airlines, known_planes)  # fresh again: each form starts from the same state
        store[BULK] = _store(bulk_writer(colls), batches, list(colls), work)
        colls = trio(known_airlines, known_planes)
        store[BULK + NEW] = _store(bulk_writer(colls, set(known_airlines) | set(known_planes)), batches, list(colls), work)
    colls = trio(known_airlines, known_planes)
    seen: set = set(known_airlines) | set(known_planes)
    store["parents only when new to the writer"] = _store(writer(colls, seen), batches, list(colls), work)
    colls, flushes = trio(known_airlines, known_planes), []
    hourly = _store(deferred_writer(colls, set(known_airlines) | set(known_planes), flushes), batches, list(colls), work)
    # the flush measured once, billed one command an hour (at the day's rate every hour has new aircraft)
    store[HOURLY] = {**hourly, "round trips": hourly["round trips"] + 1 / REPORTS_AN_HOUR - sum(flushes) / sum(map(len, batches))}
    return store


def _three_read_copies(db: Any, docs: list, three: tuple[str, str, str] | None, trio: Callable, writer: Callable,
                       airline: str, icao24: str, work: _Work) -> dict[str, Forms]:
    """The three collections' reads, on ``three``, else on fresh copies of ``docs`` stored uncounted."""
    if three is None:
        colls = trio()
        writer(colls, set())(docs)
        three = tuple(c.name for c in colls)  # type: ignore[assignment]
    a_c, p_c, r_c = (track_collection(db, n) for n in three)  # type: ignore[union-attr]
    return _three_reads(a_c, p_c, r_c, airline, icao24, work)


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
    track = {label: _read(lambda p=p: list(r_c.find({"airline": airline, "icao24": icao24}, p, sort=by_time,
                                                    batch_size=QUERY_BATCH)),
                          work.find(r_c, {"airline": airline, "icao24": icao24}))[0]
             for label, p in (("one find on {airline, icao24, timestamp}, the track's fields", TRACK),
                              ("one find on {airline, icao24, timestamp}, whole reports", None))}
    newest = [("airline", 1), ("icao24", 1), ("timestamp", -1)]
    planes = [d["icao24"] for d in p_c.find({"airline": airline}, {"icao24": 1}, sort=[("_id", 1)], batch_size=QUERY_BATCH)]
    lasts, modelled = work.newest(r_c, [{"airline": airline, "icao24": p} for p in planes], newest)
    per_plane = _add(work.find(p_c, {"airline": airline}), lasts)
    keys, covered = work.covered(p_c, {"airline": airline}, {"_id": 0, "icao24": 1})
    last = {"timestamp": "$last.timestamp", "lat": "$last.lat", "lon": "$last.lon"}
    lookup = [{"$match": {"airline": airline}}, {"$sort": {"airline": 1, "icao24": 1}},  # the index's order
              {"$project": {"_id": 0, "icao24": 1}},  # fields of {airline, icao24}: covered
              {"$lookup": {"from": r_c.name, "localField": "icao24", "foreignField": "icao24", "as": "last",
                           "pipeline": [{"$match": {"airline": airline}}, {"$sort": dict(newest)}, {"$limit": 1},
                                        {"$project": {"_id": 0, "timestamp": 1, "lat": 1, "lon": 1}}]}},
              {"$unwind": "$last"}, {"$project": {"_id": "$icao24", **last}}]
    group = [{"$match": {"airline": airline}}, {"$sort": {"airline": 1, "icao24": 1, "timestamp": -1}},
             {"$group": {"_id": "$icao24", **{f: {"$first": f"${f}"} for f in ("timestamp", "lat", "lon")}}},
             {"$sort": {"_id": 1}}]
    distinct = [{"$match": {"airline": airline}}, {"$sort": {"airline": -1, "icao24": -1, "timestamp": -1}},
                {"$group": {"_id": "$icao24", **{f: {"$first": f"${f}"} for f in ("timestamp", "lat", "lon")}}}]
    # a real MongoDB answers it with a DISTINCT_SCAN: the index backwards, skipping to each aircraft's newest key
    scan = {"keys examined": len(planes), "docs examined": len(planes)} if work.on else {}

    def loop() -> dict[str, tuple]:
        return {p["icao24"]: (d["timestamp"], d["lat"], d["lon"]) for p in p_c.find(
            {"airline": airline}, {"icao24": 1}, sort=[("_id", 1)], batch_size=QUERY_BATCH)
            for d in [r_c.find_one({"airline": airline, "icao24": p["icao24"]}, {"timestamp": 1, "lat": 1, "lon": 1},
                                   sort=newest)] if d is not None}

    forms, answers = {}, {}
    for label, fn, w in ((LOOKUP, lambda: _positions(p_c.aggregate(lookup, batchSize=QUERY_BATCH)), _add(keys, lasts)),
                         (GROUP, lambda: _positions(r_c.aggregate(group, batchSize=QUERY_BATCH)),
                          work.find(r_c, {"airline": airline})),
                         (DISTINCT, lambda: _positions(r_c.aggregate(distinct, batchSize=QUERY_BATCH)), scan),
                         (LOOP, loop, per_plane)):
        forms[label], answers[label] = _read(fn, w)
    _same(answers, "latest position of a fleet (three collections)")
    notes = _latest_notes(work, modelled, covered)
    if work.on:
        notes[DISTINCT] = work.note(_DISTINCT_SCAN)
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
    more, said = _covered_forms(r_c, by_time + WIDER[1:], {"airline": airline, "icao24": icao24}, by_time, work,
                                distinct, len(planes))
    return {"one aircraft's reports": _with(Forms(track, teaching={
                "one find on {airline, icao24, timestamp}, whole reports": _WHOLE}), more["one aircraft's reports"], said),
            "latest position of a fleet": _with(Forms(forms, teaching=notes), more.get("latest position of a fleet", {}), said),
            "everything for an airline": Forms(everything, teaching={
                "three queries": "counter-example: a round trip per collection"})}
