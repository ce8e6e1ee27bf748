"""The lesson's five queries on the ``_id`` index, and Python objects for polymorphic documents (notebook 04)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from .keys import (
    AIRCRAFT,
    AIRLINE,
    COLLECTION,
    QUERY_BATCH,
    REPORT,
    make_id,
    prefix_bounds,
)


# ------------------------------------------------------------------------------------------
# The lesson's five queries: each one round trip on the _id index
# ------------------------------------------------------------------------------------------
def prefix_regex(id_prefix: str) -> dict[str, Any]:
    """The condition for "``_id`` starts with ``id_prefix``": an anchored, case-sensitive ``$regex``
    (special characters escaped), the form whose index bounds are a range. Introduced in notebook 04."""
    return {"$regex": "^" + re.escape(id_prefix)}


def airline_all(db: Any, airline: str, *, collection: str = COLLECTION) -> list[dict[str, Any]]:
    """Everything for an airline (the airline, its aircraft, their reports), in ``_id`` order.

    ``{_id: /^DAL/}``: the fixed 3-character airline code means this prefix stops at the airline.
    """
    return list(db[collection].find({"_id": prefix_regex(make_id(airline))}, sort=[("_id", 1)],
                                    batch_size=QUERY_BATCH))


def airline(db: Any, airline: str, *, collection: str = COLLECTION) -> dict[str, Any] | None:
    """The airline document alone (``{_id: "DAL"}``), or None."""
    return db[collection].find_one({"_id": make_id(airline)})


def fleet(db: Any, airline: str, *, collection: str = COLLECTION) -> list[dict[str, Any]]:
    """The airline's aircraft documents, in ``_id`` order: ``{recordType: 2, _id: /^DAL_/}``."""
    return list(db[collection].find({"recordType": AIRCRAFT, "_id": prefix_regex(make_id(airline) + "_")},
                                    sort=[("_id", 1)], batch_size=QUERY_BATCH))


def aircraft(db: Any, airline: str, icao24: str, *, collection: str = COLLECTION) -> dict[str, Any] | None:
    """One aircraft document (``{_id: "DAL_a36f7e"}``), or None."""
    return db[collection].find_one({"_id": make_id(airline, icao24)})


def reports(db: Any, airline: str, icao24: str, *, collection: str = COLLECTION) -> list[dict[str, Any]]:
    """One aircraft's reports in message order: ``{_id: /^DAL_a36f7e_/}`` sorted by ``_id``.

    The trailing ``_`` stops the prefix at the reports: ``^DAL_a36f7e`` would add the aircraft.
    """
    return list(db[collection].find({"_id": prefix_regex(make_id(airline, icao24) + "_")}, sort=[("_id", 1)],
                                    batch_size=QUERY_BATCH))


def latest_report(db: Any, airline: str, icao24: str, *, collection: str = COLLECTION,
                  projection: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """One aircraft's latest report, or None: the aircraft's key range on the ``{recordType, _id}``
    index read backwards, ``limit(1)`` (one key and one document examined, whatever the history's
    length). Introduced in notebook 04 (exercise 4.1)."""
    lo, hi = prefix_bounds(make_id(airline, icao24) + "_")
    return db[collection].find_one({"recordType": REPORT, "_id": {"$gte": lo, "$lt": hi}}, projection,
                                   sort=[("recordType", -1), ("_id", -1)])


def id_range(record_type: int, id_prefix: str) -> dict[str, Any]:
    """``{recordType: record_type, _id: {$gte, $lt}}``: the documents of one record type under an ``_id``
    prefix, as a range of the ``{recordType: 1, _id: 1}`` index (equality first, then the range: a
    bounded index scan on every engine with secondary indexes). Introduced in notebook 04 (4.7)."""
    lo, hi = prefix_bounds(id_prefix)
    return {"recordType": record_type, "_id": {"$gte": lo, "$lt": hi}}


def fleet_latest_pipeline(airline: str, collection: str = COLLECTION) -> list[dict[str, Any]]:
    """One aggregate for the latest report of each aircraft of ``airline``: the fleet's keys (its range
    of the ``{recordType, _id}`` index, which holds all the stage needs: a covered read), then a
    ``$lookup`` whose sub-pipeline reads the aircraft's report range backwards and stops at one
    (``$limit: 1``; from MongoDB 5.0 the ``$gte``/``$lt`` of its ``$expr`` use the index), projected to
    what the map draws. One document per aircraft: ``{_id: icao24, timestamp, lat, lon}``. Notebook 04 (4.12)."""
    return [
        {"$match": id_range(AIRCRAFT, make_id(airline) + "_")},
        {"$sort": {"recordType": 1, "_id": 1}},
        {"$project": {"_id": 1}},  # only the key: the index holds it
        {"$lookup": {"from": collection,  # the bounds of prefix_bounds(aircraft _id + "_")
                     "let": {"lo": {"$concat": ["$_id", "_"]}, "hi": {"$concat": ["$_id", "`"]}},
                     "pipeline": [{"$match": {"recordType": REPORT, "$expr": {"$and": [
                                      {"$gte": ["$_id", "$$lo"]}, {"$lt": ["$_id", "$$hi"]}]}}},
                                  {"$sort": {"recordType": -1, "_id": -1}}, {"$limit": 1},
                                  {"$project": {"_id": 0, "icao24": 1, "timestamp": 1, "lat": 1, "lon": 1}}],
                     "as": "last"}},
        {"$unwind": "$last"},  # an aircraft with no report yet has no position
        {"$project": {"_id": "$last.icao24", "timestamp": "$last.timestamp", "lat": "$last.lat", "lon": "$last.lon"}},
    ]


def fleet_latest_group_pipeline(airline: str) -> list[dict[str, Any]]:
    """The same answer as :func:`fleet_latest_pipeline` from the airline's reports: their range newest
    first, one group per aircraft keeping the first (``$group`` with ``$first``). It reads every report
    of the airline, however long its history. Notebook 04 (4.12)."""
    return [
        {"$match": id_range(REPORT, make_id(airline) + "_")},
        {"$sort": {"recordType": -1, "_id": -1}},
        {"$group": {"_id": "$icao24", "timestamp": {"$first": "$timestamp"}, "lat": {"$first": "$lat"},
                    "lon": {"$first": "$lon"}}},
        {"$sort": {"_id": 1}},
    ]


def subset_latest_pipeline(airline: str) -> list[dict[str, Any]]:
    """The same answer from the subset pattern's aircraft documents (``ingest(..., keep_last=n)``):
    the fleet, each with the last of its ``last_reports``. Notebook 04 (4.12)."""
    return [
        {"$match": {**id_range(AIRCRAFT, make_id(airline) + "_"), "last_reports.0": {"$exists": True}}},
        {"$sort": {"recordType": 1, "_id": 1}},
        {"$project": {"_id": "$icao24", "last": {"$arrayElemAt": ["$last_reports", -1]}}},
        {"$project": {"timestamp": "$last.timestamp", "lat": "$last.lat", "lon": "$last.lon"}},
    ]


def latest_positions(db: Any, airline: str, *, collection: str = COLLECTION,
                     subset: bool = False) -> dict[str, tuple]:
    """``{icao24: (timestamp, lat, lon)}`` of each aircraft's latest report, in one aggregate:
    :func:`fleet_latest_pipeline`, or with ``subset`` :func:`subset_latest_pipeline` (the aircraft
    documents' ``last_reports``). Notebook 04."""
    pipeline = subset_latest_pipeline(airline) if subset else fleet_latest_pipeline(airline, collection)
    return {d["_id"]: (d["timestamp"], d["lat"], d["lon"])
            for d in db[collection].aggregate(pipeline, batchSize=QUERY_BATCH)}


# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Airline:
    """recordType 1."""

    id: str
    airline: str
    name: str
    country: str | None = None
    iata: str | None = None


@dataclass(frozen=True)
class Aircraft:
    """recordType 2."""

    id: str
    airline: str
    icao24: str
    callsign: str | None = None
    first_seen: int | None = None


@dataclass(frozen=True)
class Report:
    """recordType 3."""

    id: str
    airline: str
    icao24: str
    timestamp: int
    lat: float
    lon: float
    callsign: str | None = None
    altitude: float | None = None
    groundspeed: float | None = None
    track: float | None = None
    vertical_rate: float | None = None


_CLASSES: dict[int, type] = {AIRLINE: Airline, AIRCRAFT: Aircraft, REPORT: Report}


def from_document(doc: Mapping[str, Any]) -> Airline | Aircraft | Report:
    """Dispatch on ``recordType``: the dataclass of that record type, built from the document.

    Fields the class does not declare are ignored; an unknown ``recordType`` raises ``ValueError``.
    Introduced in notebook 04.
    """
    kind = doc.get("recordType")
    cls = _CLASSES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"from_document: recordType={kind!r} in document {doc.get('_id')!r} is not one of "
                         f"{sorted(_CLASSES)} (1 airline, 2 aircraft, 3 report)")
    names = {f for f in cls.__dataclass_fields__ if f != "id"}
    return cls(id=doc["_id"], **{k: v for k, v in doc.items() if k in names})



