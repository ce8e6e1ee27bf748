"""Aircraft tracking in one polymorphic collection (notebook 04): airlines, aircraft, position reports.

Introduced in notebook 04 (``notebooks/04_single_collection_aerodata.ipynb``). One collection,
``aerodata``, holds three record types with hierarchical ``_id`` values::

    DAL                          recordType 1: the airline (ICAO designator)
    DAL_a36f7e                   recordType 2: an aircraft of that airline (icao24 address)
    DAL_a36f7e_1533099600000     recordType 3: one position report (message number)

The message number is the report's UTC time in epoch milliseconds, zero-padded to 13 digits, so
that string order is number order (``_0000000000002`` sorts before ``_0000000000010``), re-sending
the same message produces the same ``_id`` (never a duplicate), and two reports of one aircraft in
the same second (a raw feed hears a position about twice a second) keep two keys. Every part has a
fixed width (3, 6, 13 characters), so a prefix like ``^DAL`` can never leak into a longer airline code.

Aircraft whose callsign does not start with a known airline designator (private flights,
registrations as callsigns, operators missing from OpenFlights) are filed under the airline
``000`` (:data:`NO_AIRLINE`): a code no ICAO designator can have (designators are letters), which
keeps every ``_id`` the same shape.

Three parts live apart and are imported from here: the incoming messages (validation, message
number, the Stratux feed) in :mod:`helpers.aerodata_messages`, GeoJSON points and great-circle
distance in :mod:`helpers.aerodata_geo`, and the tracker workload's measured costs
(:func:`tracker_costs`) in :mod:`helpers.aerodata_costs`. What an engine can show, from the probe
made on connect (the lesson's labelled lines), lives in :mod:`helpers.aerodata_probe`.
"""
from __future__ import annotations

import bisect
import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from pymongo import DeleteMany, DeleteOne, UpdateOne
from pymongo.errors import BulkWriteError

from . import settings
from .aerodata_costs import tracker_costs
from .aerodata_geo import EARTH_RADIUS_KM, GEO_FIELD, distance_km, geo_point
from .aerodata_messages import (
    IngestResult,
    Rejected,
    message_number,
    parse_stratux,
    to_stratux_json,
    validate_message,
)
from .aerodata_probe import (
    TransactionMode,
    explain_lines,
    geo_notes,
    insert_or_refusal,
    prefix_scan_note,
    range_forms_note,
    transaction_mode,
    validation_levels,
    validator_on,
)
from .safety import track_collection, workbook_collection

__all__ = [
    "COLLECTION", "NO_AIRLINE", "SEQ_DIGITS", "AIRLINE", "AIRCRAFT", "REPORT",
    "IdParts", "make_id", "parse_id", "airline_table", "airline_of_callsign",
    "Rejected", "IngestResult", "validate_message", "ingest", "ingest_batch", "insert_new", "ensure_indexes",
    "prefix_regex", "airline_all", "airline", "fleet", "aircraft", "reports", "latest_report",
    "latest_positions", "tracker_costs",
    "to_stratux_json", "parse_stratux",
    "Airline", "Aircraft", "Report", "from_document",
    "prefix_bounds", "keys_in_bounds", "rekey_aircraft", "shard_writes",
    "GEO_FIELD", "EARTH_RADIUS_KM", "message_number", "geo_point", "distance_km", "nearest",
    "within_km", "ensure_geo_index",
    "aerodata_schema", "apply_validator", "invalid_documents", "why_refused",
    "prefix_scan_note", "range_forms_note", "explain_lines", "geo_notes", "TransactionMode",
    "transaction_mode", "validator_on", "insert_or_refusal", "validation_levels",
]

COLLECTION = "aerodata"
NO_AIRLINE = "000"  # aircraft with no known airline: not a possible ICAO designator (those are letters)
SEQ_DIGITS = 13  # epoch milliseconds fit in 13 digits until the year 2286
AIRLINE, AIRCRAFT, REPORT = 1, 2, 3  # recordType values
QUERY_BATCH = 100_000  # first batch of each query: one round trip while the answer fits in 16 MiB

_AIRLINE_RE = re.compile(r"[A-Z0-9]{3}")
_ICAO24_RE = re.compile(r"[0-9a-f]{6}")
_ID_RE = re.compile(r"(?P<airline>[A-Z0-9]{3})(?:_(?P<icao24>[0-9a-f]{6})(?:_(?P<seq>[0-9]{%d}))?)?"
                    % SEQ_DIGITS)
_CALLSIGN_RE = re.compile(r"([A-Z]{3})[0-9]")  # ICAO airline callsign: designator + flight number


# ------------------------------------------------------------------------------------------
# Keys
# ------------------------------------------------------------------------------------------
class IdParts(NamedTuple):
    """The parts of an ``aerodata`` ``_id``: airline, then icao24 and message number (or None)."""

    airline: str
    icao24: str | None = None
    seq: int | None = None


def make_id(airline: str, icao24: str | None = None, seq: int | None = None) -> str:
    """``make_id("DAL")`` -> ``"DAL"``; ``("DAL", "a36f7e")`` -> ``"DAL_a36f7e"``;
    ``("DAL", "a36f7e", 2)`` -> ``"DAL_a36f7e_0000000000002"``. The inverse of :func:`parse_id`.

    ``airline``: 3 upper-case letters or digits; ``icao24``: 6 lower-case hex digits; ``seq``: the
    message number (:func:`message_number`: epoch milliseconds), an integer 0 <= seq < 10**13,
    zero-padded so string order is number order.
    Introduced in notebook 04.
    """
    if not isinstance(airline, str) or not _AIRLINE_RE.fullmatch(airline):
        raise ValueError(f"make_id: airline={airline!r} must be 3 upper-case letters or digits, "
                         f"e.g. 'DAL' (or NO_AIRLINE={NO_AIRLINE!r} for aircraft without an airline)")
    if icao24 is None:
        if seq is not None:
            raise ValueError(f"make_id: seq={seq!r} needs an icao24: a report belongs to an aircraft; "
                             f"call make_id(airline, icao24, seq)")
        return airline
    if not isinstance(icao24, str) or not _ICAO24_RE.fullmatch(icao24):
        raise ValueError(f"make_id: icao24={icao24!r} must be 6 lower-case hex digits, e.g. 'a36f7e' "
                         f"(use icao24.lower() for an upper-case address)")
    if seq is None:
        return f"{airline}_{icao24}"
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 10 ** SEQ_DIGITS:
        raise ValueError(f"make_id: seq={seq!r} must be an integer from 0 to {10 ** SEQ_DIGITS - 1} "
                         f"(the report's epoch millisecond, message_number(timestamp))")
    return f"{airline}_{icao24}_{seq:0{SEQ_DIGITS}d}"


def parse_id(id: str) -> IdParts:  # noqa: A002 - the issue's name
    """``"DAL_a36f7e_0000000002"`` -> ``IdParts("DAL", "a36f7e", 2)``. The inverse of :func:`make_id`.

    Raises ``ValueError`` naming the expected shape if ``id`` is not an ``aerodata`` key.
    Introduced in notebook 04.
    """
    m = _ID_RE.fullmatch(id) if isinstance(id, str) else None
    if m is None:
        raise ValueError(f"parse_id: {id!r} is not an aerodata _id; expected 'AAA', 'AAA_hhhhhh' or "
                         f"'AAA_hhhhhh_{'n' * SEQ_DIGITS}' (airline, icao24, {SEQ_DIGITS}-digit message "
                         f"number), as make_id builds them")
    seq = m["seq"]
    return IdParts(m["airline"], m["icao24"], int(seq) if seq is not None else None)


# ------------------------------------------------------------------------------------------
# Airlines from the shipped OpenFlights table
# ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _airline_table(folder: str) -> dict[str, dict[str, Any]]:
    from pathlib import Path

    from .datasets import AIRLINE_FIELDS, read_rows, verify_file  # checked: clear errors on bad files

    path = verify_file(Path(folder), "openflights_airlines.csv")
    best: dict[str, dict[str, Any]] = {}
    for _, row in read_rows(path, AIRLINE_FIELDS):
        code = row.get("icao", "")
        if not re.fullmatch(r"[A-Z]{3}", code):  # OpenFlights also has 'N/A', '---', ...
            continue
        # a code listed twice (a renamed or defunct airline): the active one, then the lowest id
        rank = (not row["active"], row["airline_id"])
        if code not in best or rank < best[code]["_rank"]:
            best[code] = {"_rank": rank, **row}
    return {code: {k: v for k, v in row.items() if k != "_rank"} for code, row in best.items()}


def airline_table() -> dict[str, dict[str, Any]]:
    """ICAO designator -> OpenFlights row (name, iata, callsign, country, active, airline_id).

    Read once from ``datasets/openflights_airlines.csv`` (checksum verified). Introduced in notebook 04.
    """
    from .datasets import datasets_dir

    return _airline_table(str(datasets_dir()))


def airline_of_callsign(callsign: str | None) -> str:
    """The airline code of a callsign: its ICAO prefix if that is a known airline, else ``NO_AIRLINE``.

    ``"DAL123"`` -> ``"DAL"``; ``"HBZZA"`` (a registration) or ``"NJE520P"`` (not in OpenFlights)
    -> ``"000"``. Introduced in notebook 04.
    """
    m = _CALLSIGN_RE.match(callsign or "")
    if m and m[1] in airline_table():
        return m[1]
    return NO_AIRLINE


def _airline_doc(code: str) -> dict[str, Any]:
    if code == NO_AIRLINE:
        return {"_id": code, "recordType": AIRLINE, "airline": code,
                "name": "no airline (private or unknown operator)"}
    row = airline_table()[code]
    doc = {"_id": code, "recordType": AIRLINE, "airline": code, "name": row["name"]}
    for key in ("iata", "callsign", "country"):
        if row.get(key) and row[key] not in ("-", "\\N"):
            doc[key] = row[key]
    doc["openflights_id"] = row["airline_id"]
    return doc


def ensure_indexes(db: Any, collection: str = COLLECTION) -> str:
    """Create the ``{recordType: 1, _id: 1}`` index (``_id`` is always indexed); return its name."""
    return track_collection(db, collection).create_index([("recordType", 1), ("_id", 1)])


def without_gc_pauses(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn`` with Python's cycle collector paused (reference counting still frees memory).

    A bulk write makes a few short-lived dicts per message and no reference cycles, yet those
    allocations trigger full collections that walk every object the process holds: with the mock,
    every stored document (0.8 s of 4.2 s for 139,098 messages). Not about MongoDB at all."""
    import gc

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        was_on = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return wrapper


@without_gc_pauses
def ingest(db: Any, messages: Iterable[Any], *, collection: str = COLLECTION, batch_size: int = 1_000,
           progress: bool = False, keep_last: int = 0) -> IngestResult:
    """Store position-report messages in the single ``aerodata`` collection; works on an empty database.

    Each good message becomes a report document (``recordType`` 3, the message's field names, and its
    position as GeoJSON in ``geoPoint``) keyed ``make_id(airline, icao24, message_number(timestamp))``;
    its airline (from the callsign's ICAO prefix, known from
    the shipped OpenFlights table, else :data:`NO_AIRLINE`) and aircraft documents are created on
    first sight (never twice). Re-sending a message never duplicates a report: it is
    counted in ``duplicates``. A malformed message (or a value BSON cannot hold) is counted in
    ``rejected`` with its reason and the rest of the batch goes on. Per batch, two commands: one
    unordered insert of the batch's airlines and aircraft, one of its reports; the ``_id`` index
    refuses what is already stored (code 11000), so there is no read before the writes.
    ``keep_last=n`` adds the subset pattern: each aircraft document keeps its last ``n`` reports
    (``last_reports``: ``_id``, time and position, an extended reference to each report), updated by
    one more command per batch (a ``$push`` with ``$sort`` and ``$slice`` per aircraft).
    Introduced in notebook 04.
    """
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
        raise ValueError(f"ingest: keep_last={keep_last!r} must be a whole number >= 0 (0: no subset)")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"ingest: batch_size={batch_size!r} must be a positive integer (default 1000)")
    if isinstance(messages, (str, bytes, Mapping)):
        raise TypeError("ingest: messages must be an iterable of message dicts (a list, a generator); "
                        "for one message pass [message]; for Stratux JSON use parse_stratux first")
    coll = track_collection(db, collection)
    ensure_indexes(db, collection)
    result = IngestResult()
    total = len(messages) if hasattr(messages, "__len__") else None  # type: ignore[arg-type]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, desc="ingest", unit=" msg", disable=not settings.progress_bars())
    batch: list[tuple[int, Any]] = []
    try:
        for index, message in enumerate(messages):
            batch.append((index, message))
            if len(batch) >= batch_size:
                ingest_batch(coll, batch, result, keep_last)
                if bar is not None:
                    bar.update(len(batch))
                batch = []
        if batch:
            ingest_batch(coll, batch, result, keep_last)
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return result


def ingest_batch(coll: Any, batch: list[tuple[int, Any]], result: IngestResult, keep_last: int = 0) -> None:
    """One batch of ``ingest``: validate, key, insert the batch's parents, insert the reports, and with
    ``keep_last`` push the new ones onto their aircraft's ``last_reports`` (notebook 04)."""
    reports: dict[str, dict[str, Any]] = {}
    parents: dict[str, dict[str, Any]] = {}
    airline_codes: dict[Any, str] = {}  # callsign -> airline code, once per callsign in the batch
    for index, message in batch:
        clean, reason = validate_message(message)
        if clean is None:
            result.rejected.append(Rejected(index, reason or "invalid", message))
            continue
        callsign = clean.get("callsign")
        code = airline_codes.get(callsign)
        if code is None:
            code = airline_codes[callsign] = airline_of_callsign(callsign)
        icao24 = clean["icao24"]
        rid = make_id(code, icao24, message_number(clean["timestamp"]))
        if rid in reports:  # the same message twice in one batch
            result.duplicates += 1
            continue
        reports[rid] = {"_id": rid, "recordType": REPORT, "airline": code, **clean,
                        GEO_FIELD: geo_point(clean["lon"], clean["lat"])}
        if code not in parents:
            parents[code] = _airline_doc(code)
        aid = f"{code}_{icao24}"  # make_id(code, icao24): both parts checked just above
        if aid not in parents:
            parents[aid] = {"_id": aid, "recordType": AIRCRAFT, "airline": code, "icao24": icao24,
                            **({"callsign": clean["callsign"]} if "callsign" in clean else {}),
                            "first_seen": clean["timestamp"]}
    if not reports:
        return
    # the parents this batch needs, inserted unordered: the _id index refuses those already
    # stored (by an earlier batch or another writer), so each is created once, with no read first
    created, _ = insert_new(coll, [parents[pid] for pid in sorted(parents)])
    result.airlines_created += sum(1 for d in created if d["recordType"] == AIRLINE)
    result.aircraft_created += sum(1 for d in created if d["recordType"] == AIRCRAFT)
    inserted, duplicates = insert_new(coll, [reports[rid] for rid in sorted(reports)])
    result.inserted += len(inserted)
    result.duplicates += duplicates
    if keep_last and inserted:  # only new reports: a re-sent one is never pushed twice
        latest: dict[str, list[dict[str, Any]]] = {}
        for d in inserted:
            latest.setdefault(f"{d['airline']}_{d['icao24']}", []).append(
                {"_id": d["_id"], "timestamp": d["timestamp"], "lat": d["lat"], "lon": d["lon"]})
        coll.bulk_write([UpdateOne({"_id": aid}, {"$push": {"last_reports": {
            "$each": items, "$sort": {"timestamp": 1}, "$slice": -keep_last}}}) for aid, items in sorted(latest.items())],
            ordered=False)


def insert_new(coll: Any, docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Insert ``docs`` unordered; the ``_id`` index refuses those that exist (code 11000).

    Returns the documents inserted and the number refused as duplicates; any other error is raised.
    """
    if not docs:
        return [], 0
    try:
        coll.insert_many(docs, ordered=False)
        return docs, 0
    except BulkWriteError as e:
        errors = e.details.get("writeErrors", [])
        if any(w.get("code") != 11000 for w in errors):
            raise
        refused = {w["index"] for w in errors}
        return [d for i, d in enumerate(docs) if i not in refused], len(refused)


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


def latest_positions(db: Any, airline: str, *, collection: str = COLLECTION,
                     subset: bool = False) -> dict[str, tuple]:
    """``{icao24: (timestamp, lat, lon)}`` of each aircraft's latest report. ``subset``: read them from
    the aircraft documents' ``last_reports`` (``ingest(..., keep_last=n)``: one query); else the fleet,
    then :func:`latest_report` per aircraft (one more query each). Notebook 04."""
    out = {}
    for plane in fleet(db, airline, collection=collection):
        if subset:
            last = (plane.get("last_reports") or [None])[-1]
        else:
            last = latest_report(db, airline, plane["icao24"], collection=collection,
                                 projection={"timestamp": 1, "lat": 1, "lon": 1})
        if last is not None:
            out[plane["icao24"]] = (last["timestamp"], last["lat"], last["lon"])
    return out


# Python objects for polymorphic documents (the counterpart of the article's Spring Data part)
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


# ------------------------------------------------------------------------------------------
# Index bounds (the model), re-keying, sharding (notebook 04, sections 7 and 9)
# ------------------------------------------------------------------------------------------
def prefix_bounds(prefix: str) -> tuple[str, str]:
    """The index bounds ``[prefix, next)`` of an anchored, case-sensitive prefix regex ``^prefix``.

    ``"DAL_"`` -> ``("DAL_", "DAL`")``: the last character incremented, as the query planner does.
    """
    if not prefix:
        raise ValueError("prefix_bounds: the prefix is empty; an empty prefix has no bounds (it scans all keys)")
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def keys_in_bounds(sorted_keys: Sequence[str], bounds: tuple[str, str]) -> int:
    """How many of ``sorted_keys`` (ascending) fall in ``[low, high)``: the keys an index scan visits."""
    lo, hi = bounds
    return bisect.bisect_left(sorted_keys, hi) - bisect.bisect_left(sorted_keys, lo)


_DELETE_LIST = 200  # ids per delete statement (see _rekey_round)


def _rekey_round(coll: Any, old: str, new_airline: str, session: Any = None,
                 during_move: Callable[[], Any] | None = None,
                 parent: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """One round of :func:`rekey_aircraft`: copy what is under ``old`` now, then delete exactly those ids.

    ``parent``: the new airline's document, created in this round if it does not exist yet (first round).
    """
    lo, hi = prefix_bounds(old + "_")  # its reports: one range of the {recordType, _id} index (fast everywhere)
    aircraft_doc = coll.find_one({"_id": old}, session=session)
    reports = list(coll.find({"recordType": REPORT, "_id": {"$gte": lo, "$lt": hi}}, sort=[("_id", 1)],
                             batch_size=QUERY_BATCH, session=session))
    docs = ([aircraft_doc] if aircraft_doc else []) + reports
    if not docs:
        return 0, 0
    if parent is not None:  # the new airline, unless it is there already
        coll.update_one({"_id": parent["_id"]}, {"$setOnInsert": {k: v for k, v in parent.items() if k != "_id"}},
                        upsert=True, session=session)
    copies = []
    for d in docs:
        parts = parse_id(d["_id"])
        copies.append({**d, "_id": make_id(new_airline, parts.icao24, parts.seq), "airline": new_airline})
    try:  # unordered: a copy left by a crashed earlier run is refused (11000) and counts as copied
        coll.insert_many(copies, ordered=False, session=session)
    except BulkWriteError as e:
        if any(w.get("code") != 11000 for w in e.details.get("writeErrors", [])):
            raise
    if during_move is not None:
        during_move()
    # exactly the ids copied, in one delete command of lists of _DELETE_LIST ids (an _id lookup each;
    # short lists, because an engine may test each document against the list id by id). The airline
    # and icao24 conditions change nothing on a server; an engine without indexes uses them to skip
    # the other aircraft's documents before the list. A document stored without them goes by _id alone.
    parts = parse_id(old)
    usual = {"airline": parts.airline, "icao24": parts.icao24}
    ids = [d["_id"] for d in docs if all(d.get(k) == v for k, v in usual.items())]
    deletes = [DeleteMany({**usual, "_id": {"$in": ids[i:i + _DELETE_LIST]}}) for i in range(0, len(ids), _DELETE_LIST)]
    deletes += [DeleteOne({"_id": d["_id"]}) for d in docs if any(d.get(k) != v for k, v in usual.items())]
    deleted = coll.bulk_write(deletes, ordered=False, session=session).deleted_count
    return len(copies), deleted


def rekey_aircraft(db: Any, old_airline: str, icao24: str, new_airline: str, *,
                   collection: str = COLLECTION, transaction: bool = False,
                   during_move: Callable[[], Any] | None = None) -> dict[str, int]:
    """Move an aircraft and all its reports to another airline's key space, losing nothing.

    ``_id`` is immutable, so every document is copied under its new key and the old one deleted: the
    cost grows with the aircraft's history. Safe against the two failures of "insert all, then delete
    the old range": the delete names exactly the ids copied (a report that arrives during the move is
    never deleted uncopied: the next round moves it), and re-running after a crash finishes the move
    without duplicates. ``transaction=True`` (where the backend has transactions) runs each round in one
    transaction: no reader sees a round half done (before the commit only the old keys exist, after it
    only the new ones), and a crash leaves the old keys alone. The new airline's document is created in
    the first round, only once there is something to move. ``during_move``: called once between the first copy and its delete (a
    stand-in for another writer, used by notebook 04 and the tests). Returns the documents copied and
    deleted and the rounds it took. Introduced in notebook 04.
    """
    coll = track_collection(db, collection)
    old = make_id(old_airline, icao24)
    if new_airline not in (NO_AIRLINE,) and new_airline not in airline_table():
        raise ValueError(f"rekey_aircraft: new_airline={new_airline!r} is not in the OpenFlights table")
    totals = {"inserted": 0, "deleted": 0, "rounds": 0}
    hook, parent = during_move, _airline_doc(new_airline)
    while True:
        if transaction:
            with db.client.start_session() as session:
                copied, deleted = session.with_transaction(
                    lambda s, h=hook, p=parent: _rekey_round(coll, old, new_airline, s, h, p))
        else:
            copied, deleted = _rekey_round(coll, old, new_airline, None, hook, parent)
        if not copied:
            if totals["rounds"] == 0:  # nothing was written
                raise ValueError(f"rekey_aircraft: no aircraft {old!r} in {collection!r}; "
                                 f"check the airline and icao24")
            return totals
        hook = parent = None
        totals["inserted"] += copied
        totals["deleted"] += deleted
        totals["rounds"] += 1
        if totals["rounds"] > 100:  # a writer that keeps filing reports under the old key
            raise RuntimeError(f"rekey_aircraft: reports keep arriving under {old!r}; route new reports to "
                               f"{new_airline!r} first, then run rekey_aircraft again")


# ------------------------------------------------------------------------------------------
# Schema validation (notebook 04, section 4.10)
# ------------------------------------------------------------------------------------------
def aerodata_schema() -> dict[str, Any]:
    """The ``$jsonSchema`` of ``aerodata``: one ``oneOf`` branch per ``recordType`` (notebook 04).

    Airline: a 3-character ``_id`` and a name. Aircraft: ``AAA_hhhhhh`` and its icao24. Report: the
    full key, a timestamp, ``lat`` in [-90, 90], ``lon`` in [-180, 180] and a GeoJSON point.
    """
    num = ["double", "int", "long", "decimal"]
    return {"$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "recordType", "airline"],
        "properties": {"recordType": {"enum": [AIRLINE, AIRCRAFT, REPORT]},
                       "airline": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}$"}},
        "oneOf": [
            {"title": "airline", "required": ["name"],
             "properties": {"recordType": {"enum": [AIRLINE]}, "_id": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}$"},
                            "name": {"bsonType": "string", "minLength": 1}}},
            {"title": "aircraft", "required": ["icao24"],
             "properties": {"recordType": {"enum": [AIRCRAFT]},
                            "_id": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}_[0-9a-f]{6}$"},
                            "icao24": {"bsonType": "string", "pattern": "^[0-9a-f]{6}$"}}},
            {"title": "position report", "required": ["icao24", "timestamp", "lat", "lon", GEO_FIELD],
             "properties": {
                 "recordType": {"enum": [REPORT]},
                 "_id": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}_[0-9a-f]{6}_[0-9]{%d}$" % SEQ_DIGITS},
                 "icao24": {"bsonType": "string", "pattern": "^[0-9a-f]{6}$"},
                 "timestamp": {"bsonType": num, "minimum": 0},
                 "lat": {"bsonType": num, "minimum": -90, "maximum": 90},
                 "lon": {"bsonType": num, "minimum": -180, "maximum": 180},
                 GEO_FIELD: {"bsonType": "object", "required": ["type", "coordinates"],
                             "properties": {"type": {"enum": ["Point"]},
                                            "coordinates": {"bsonType": "array", "minItems": 2, "maxItems": 2,
                                                            "items": {"bsonType": num}}}},
             }},
        ],
    }}


def apply_validator(db: Any, *, level: str = "strict", action: str = "error",
                    collection: str = COLLECTION) -> dict[str, Any]:
    """Put :func:`aerodata_schema` on the collection with ``collMod`` (existing documents are not checked).

    ``level``: "strict" (every insert and update) or "moderate" (updates of documents that already
    break the rules pass); ``action``: "error" (refuse, code 121) or "warn" (accept and log). Returns
    the collection's validation options as the server lists them. Refuses (``ForeignCollectionError``)
    a collection the workbook did not create. Introduced in notebook 04.
    """
    if level not in ("strict", "moderate", "off") or action not in ("error", "warn"):
        raise ValueError(f"apply_validator: level={level!r} must be 'strict', 'moderate' or 'off'; "
                         f"action={action!r} must be 'error' or 'warn'")
    workbook_collection(db, collection)  # as schema.set_validator: never somebody else's collection
    db.command("collMod", collection, validator=aerodata_schema(), validationLevel=level,
               validationAction=action)
    info = db.command("listCollections", filter={"name": collection})["cursor"]["firstBatch"][0]
    opts = info.get("options", {})
    return {"validationLevel": opts.get("validationLevel"), "validationAction": opts.get("validationAction")}


def why_refused(err_info: Mapping[str, Any]) -> list[str]:
    """The gist of a code-121 ``errInfo``: one line per rule broken, in the branch of the document's own
    ``recordType`` (the other ``oneOf`` branches fail on ``recordType`` alone and are left out).
    Introduced in notebook 04."""
    titles = [b.get("title", str(i)) for i, b in enumerate(aerodata_schema()["$jsonSchema"]["oneOf"])]
    out: list[str] = []

    def leaves(node: Any, where: str, prop: str | None) -> Iterable[str]:
        if isinstance(node, list):
            for n in node:
                yield from leaves(n, where, prop)
        elif isinstance(node, Mapping):
            prop = node.get("propertyName", prop)
            if "missingProperties" in node:
                yield f"{where}: missing {', '.join(node['missingProperties'])}"
            elif "reason" in node:
                value = f" ({node['consideredValue']!r})" if "consideredValue" in node else ""
                yield f"{where}: {prop or 'document'} {node.get('operatorName', '')}: {node['reason']}{value}"
            for key in ("details", "propertiesNotSatisfied", "schemaRulesNotSatisfied", "itemsNotSatisfied"):
                if key in node:
                    yield from leaves(node[key], where, prop)
            for branch in node.get("schemasNotSatisfied", []):
                lines = list(leaves(branch.get("details", []), titles[branch.get("index", 0)], None))
                if not any(": recordType " in line for line in lines):
                    yield from lines

    out.extend(leaves(err_info.get("details", {}), "document", None))
    return out


def invalid_documents(db: Any, *, collection: str = COLLECTION) -> list[dict[str, Any]]:
    """The documents that break :func:`aerodata_schema` (a query: ``{$nor: [schema]}``), in ``_id`` order."""
    return list(db[collection].find({"$nor": [aerodata_schema()]}, sort=[("_id", 1)]))


# ------------------------------------------------------------------------------------------
# Geo (notebook 04, section 4.11)
# ------------------------------------------------------------------------------------------
def _caps(coll: Any) -> Any:
    """The probed capabilities of the engine behind ``coll`` (None for a client the workbook did not open)."""
    from .backends import info_of

    info = info_of(coll)
    return None if info is None else info.caps


def within_km(coll: Any, point: Mapping[str, Any], km: float) -> dict[str, Any]:
    """The filter for the reports within ``km`` of a GeoJSON ``point``: ``$geoWithin`` with
    ``$centerSphere`` (its radius in radians: km / :data:`EARTH_RADIUS_KM`), or, on an engine
    without ``$centerSphere`` (``caps.geo_center_sphere``), the same set with ``$near`` and
    ``$maxDistance`` in metres. Introduced in notebook 04."""
    caps = _caps(coll)
    if caps is None or caps.geo_center_sphere:
        return {"recordType": REPORT,
                GEO_FIELD: {"$geoWithin": {"$centerSphere": [list(point["coordinates"]), km / EARTH_RADIUS_KM]}}}
    return {"recordType": REPORT, GEO_FIELD: {"$near": {"$geometry": dict(point), "$maxDistance": km * 1000}}}


def ensure_geo_index(coll: Any) -> str | None:
    """Create the ``2dsphere`` index on :data:`GEO_FIELD`, or find it if it exists (under any name);
    returns its name, or None on an engine without geo indexes (``caps.geo_index``). Introduced in
    notebook 04."""
    caps = _caps(coll)
    if caps is not None and not caps.geo_index:
        return None
    key = [(GEO_FIELD, "2dsphere")]
    for name, spec in coll.index_information().items():  # there already: a cell run twice, say
        if list(spec["key"]) == key:  # a server says "already exists"; SecantusDB refuses (docs/ENGINES.md)
            return name
    return coll.create_index(key)


def nearest(coll: Any, point: Sequence[float], k: int, *, max_km: float, near_sorted: bool | None = None
            ) -> list[dict[str, Any]]:
    """The ``k`` reports nearest to ``point`` (``[lon, lat]``) within ``max_km``, nearest first.

    One ``$near`` query (``$maxDistance`` in metres, on the 2dsphere index). A server returns them
    nearest first, so ``limit(k)`` is enough; where ``near_sorted`` is False (an engine whose
    ``$near`` order is not by distance, probed as ``caps.near_sorted``) it fetches every report within
    ``max_km`` and sorts them client-side by :func:`distance_km`; None: as the engine was probed.
    Introduced in notebook 04.
    """
    if near_sorted is None:
        caps = _caps(coll)
        near_sorted = caps is None or caps.near_sorted
    query = {"recordType": REPORT, GEO_FIELD: {"$near": {"$geometry": {"type": "Point", "coordinates": list(point)},
                                                          "$maxDistance": max_km * 1000}}}
    if near_sorted:
        return list(coll.find(query).limit(k))
    found = list(coll.find(query, batch_size=QUERY_BATCH))
    found.sort(key=lambda d: (distance_km(point, d[GEO_FIELD]["coordinates"]), d["_id"]))
    return found[:k]


def _hash64(key: str) -> int:
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:8], "big")


def shard_writes(existing_keys: Sequence[Any], new_keys: Iterable[Any], shards: int, how: str = "range") -> list[int]:
    """Simulate where new writes land when a key space is split over ``shards`` shards.

    ``how="range"``: chunks split at the quantiles of ``existing_keys`` (what a balanced cluster had
    when the new keys arrive); a key past the last split point goes to the last shard.
    ``how="hash"``: shard = 64 bits of the key's md5 (a stand-in for MongoDB's hashed index) mod
    ``shards``. Returns the number of ``new_keys`` per shard. A model, not a cluster.
    """
    if not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shard_writes: shards={shards!r} must be a positive integer")
    counts = [0] * shards
    if how == "hash":
        for key in new_keys:
            counts[_hash64(str(key)) % shards] += 1
        return counts
    if how != "range":
        raise ValueError(f"shard_writes: how={how!r} must be 'range' or 'hash'")
    ordered = sorted(existing_keys)
    if not ordered:
        raise ValueError("shard_writes: existing_keys is empty; range chunks are split at existing keys")
    splits = [ordered[i * len(ordered) // shards] for i in range(1, shards)]
    for key in new_keys:
        counts[bisect.bisect_right(splits, key)] += 1
    return counts
