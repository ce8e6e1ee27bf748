"""The ingest writers the tracker's bill measures (notebook 04): the statements of a batch for the subset
in the airline and the airline's fleet, and the writers that send them (one ``bulkWrite``, an upsert
per document, parents only when new). A part of the aerodata lesson, imported by
:mod:`helpers.aerodata.costs` and :mod:`helpers.aerodata` (its face)."""
from __future__ import annotations

from typing import Any, Callable, Collection, Mapping, Sequence

from ..writes import only_duplicates
from .keys import AIRCRAFT, AIRLINE, make_id
from .messages import IngestResult
from .store import batch_documents, ingest_batch, insert_new

__all__ = ["subset_statements", "airline_fleet_statements"]


def _update_filters(commands: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The filters of the update statements in ``commands`` (``update`` commands, a ``bulkWrite``'s updates)."""
    return [u["q"] for cmd in commands if "update" in cmd for u in cmd.get("updates", [])] + \
        [op["filter"] for cmd in commands if "bulkWrite" in cmd for op in cmd.get("ops", []) if "update" in op]


def _bulk_write(db: Any, models: list[Any]) -> tuple[int, int]:
    """One client ``bulkWrite`` command (MongoDB 8.0+: several collections, inserts and updates
    together), unordered; a document already stored (code 11000) is refused, any other error raised.
    Returns how many update statements found their document, and how many inserts were refused."""
    from pymongo import InsertOne
    from pymongo.errors import ClientBulkWriteException

    inserts = sum(isinstance(m, InsertOne) for m in models)
    try:
        result = db.client.bulk_write(models, ordered=False)
    except ClientBulkWriteException as e:
        if not only_duplicates(e):
            raise
        result = e.partial_result
        if result is None:
            return 0, inserts
    return result.matched_count, inserts - result.inserted_count


def _ingest_writer(coll: Any, keep_last: int, airlines: Collection[str] | None = None) -> Callable[[list], tuple[None, int]]:
    """``ingest``'s batch (:func:`ingest_batch`, with ``keep_last`` its ``$push``, onto the aircraft of
    ``airlines`` only where given) as a store form: each batch's ``(None, refused)``, the inserts the
    ``_id`` index refused (parents already stored, re-sent reports)."""
    def write(part: list[dict[str, Any]]) -> tuple[None, int]:
        return None, ingest_batch(coll, list(enumerate(part)), IngestResult(), keep_last, airlines)
    return write


def subset_statements(part: list[dict[str, Any]], keep_last: int = 1,
                      airlines: Collection[str] | None = None) -> list[tuple[str, dict, dict | None]]:
    """The subset design's batch ``part`` (validated messages) as statements that may run in any order
    (an unordered bulk promises none): ``("insert", document, None)`` for each airline and report, and
    one ``("upsert", filter, update)`` per aircraft that creates it if new (``$setOnInsert``) and pushes
    its newest reports (``$push`` with ``$sort`` and ``$slice``), so no statement depends on another.
    ``airlines``: the airlines whose maps are read (None: every airline); another airline's aircraft is
    a plain insert, its subset never kept."""
    parents, reports = batch_documents(list(enumerate(part)), IngestResult())
    newest: dict[str, list[dict[str, Any]]] = {}
    for r in reports.values():
        if airlines is None or r["airline"] in airlines:
            newest.setdefault(make_id(r["airline"], r["icao24"]), []).append(
                {k: r[k] for k in ("_id", "timestamp", "lat", "lon")})
    out: list[tuple[str, dict, dict | None]] = [("insert", d, None) for _, d in sorted({
        **{k: v for k, v in parents.items() if v["recordType"] == AIRLINE or k not in newest}, **reports}.items())]
    for aid, items in sorted(newest.items()):
        fields = {k: v for k, v in parents[aid].items() if k != "_id"}
        out.append(("upsert", {"_id": aid}, {"$setOnInsert": fields, "$push": {"last_reports": {
            "$each": sorted(items, key=lambda r: r["timestamp"])[-keep_last:], "$sort": {"timestamp": 1},
            "$slice": -keep_last}}}))
    return out


def airline_fleet_statements(part: list[dict[str, Any]],
                             airlines: Collection[str] | None = None) -> list[tuple[str, dict, Any]]:
    """The subset held by the airline: batch ``part`` (validated messages) as statements that may run in
    any order: ``("insert", document, None)`` for each aircraft and report, and one ``("upsert", filter,
    pipeline)`` per airline that creates it if new (each field ``$ifNull`` its stored value) and sets
    ``fleet.<icao24>`` to the batch's newest report of each of its aircraft unless the stored one is newer
    (a re-sent or late message never moves an aircraft back): ``{timestamp, lat, lon}``, the map's fields.
    ``airlines``: the airlines whose maps are read (None: every airline); another airline is a plain
    insert, its fleet never kept."""
    parents, reports = batch_documents(list(enumerate(part)), IngestResult())
    newest: dict[str, dict[str, dict[str, Any]]] = {}
    for r in sorted(reports.values(), key=lambda r: r["timestamp"]):
        if airlines is None or r["airline"] in airlines:
            newest.setdefault(r["airline"], {})[r["icao24"]] = {k: r[k] for k in ("timestamp", "lat", "lon")}
    out: list[tuple[str, dict, Any]] = [("insert", d, None) for _, d in sorted({
        **{k: v for k, v in parents.items() if v["recordType"] == AIRCRAFT or k not in newest}, **reports}.items())]
    for code, planes in sorted(newest.items()):
        fields = {f: {"$ifNull": [f"${f}", {"$literal": v}]} for f, v in parents[code].items() if f != "_id"}
        fleet = {"$mergeObjects": [{"$ifNull": ["$fleet", {}]}, {plane: {"$cond": [
            {"$gt": [last["timestamp"], {"$ifNull": [f"$fleet.{plane}.timestamp", -1]}]}, {"$literal": last},
            f"$fleet.{plane}"]} for plane, last in sorted(planes.items())}]}
        out.append(("upsert", {"_id": code}, [{"$set": {**fields, "fleet": fleet}}]))
    return out


def _unseen(statements: list[tuple[str, dict, Any]], seen: set | None) -> list[tuple[str, dict, Any]]:
    """``statements`` without the inserts of parents (airlines, aircraft) in ``seen``, the parents the
    writer stored before, which it then adds to ``seen`` (None: every statement kept)."""
    if seen is None:
        return statements
    parent = [k == "insert" and d.get("recordType") in (AIRLINE, AIRCRAFT) for k, d, _ in statements]
    kept = [st for st, p in zip(statements, parent) if not (p and st[1]["_id"] in seen)]
    seen.update(d["_id"] for (_, d, _), p in zip(statements, parent) if p)
    return kept


def _single_new_writer(coll: Any, seen: set) -> Callable[[list], tuple[None, int]]:
    """One collection's batch as one insert whose parents are only those new to the writer (``seen``:
    the ``_id`` values it stored before); a re-sent report is still refused."""
    def write(part: list[dict[str, Any]]) -> tuple[None, int]:
        parents, reports = batch_documents(list(enumerate(part)), IngestResult())
        docs = [parents[k] for k in sorted(parents) if k not in seen] + [reports[k] for k in sorted(reports)]
        seen.update(parents)
        return None, insert_new(coll, docs)[1]
    return write


def _statements_writer(db: Any, coll: Any, statements: Callable[[list], list[tuple[str, dict, Any]]], how: str,
                       seen: set | None = None) -> Callable[[list], tuple[int, int]]:
    """A subset design's batch as one command: ``statements(part)`` (:func:`subset_statements` or
    :func:`airline_fleet_statements`, their arguments bound) without the parents in ``seen``
    (:func:`_unseen`); ``how`` ``"bulk"`` one client ``bulkWrite`` (MongoDB 8.0+; a re-sent report
    refused, code 11000), ``"upserts"`` one ``update`` command (one collection: any version), each insert
    an upsert that sets the document only if it is new (``$setOnInsert``: a re-sent report changes nothing)."""
    from pymongo import InsertOne, UpdateOne

    ns = f"{db.name}.{coll.name}"

    def write(part: list[dict[str, Any]]) -> tuple[int, int]:
        kept = _unseen(statements(part), seen)
        if how == "bulk":
            return _bulk_write(db, [InsertOne(doc, namespace=ns) if kind == "insert" else
                                    UpdateOne(doc, update, upsert=True, namespace=ns) for kind, doc, update in kept])
        models = [UpdateOne({"_id": doc["_id"]}, {"$setOnInsert": {k: v for k, v in doc.items() if k != "_id"}},
                            upsert=True) if kind == "insert" else UpdateOne(doc, update, upsert=True)
                  for kind, doc, update in kept]
        return coll.bulk_write(models, ordered=False).matched_count, 0  # nothing refused: each an upsert
    return write
