"""Storing position reports in the single collection: the index, ingest, a batch, new keys only (notebook 04)."""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping

from pymongo import UpdateOne
from pymongo.errors import BulkWriteError

from .. import settings
from ..safety import track_collection
from ..writes import only_duplicates, refused
from .geo import GEO_FIELD, geo_point
from .keys import (
    AIRCRAFT,
    AIRLINE,
    COLLECTION,
    REPORT,
    _airline_doc,
    airline_of_callsign,
    make_id,
)
from .messages import (
    IngestResult,
    Rejected,
    message_number,
    validate_message,
)


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
    ``rejected`` with its reason and the rest of the batch goes on. Per batch, one command: one
    unordered insert of the batch's airlines, aircraft and reports; the ``_id`` index refuses what
    is already stored (code 11000), so there is no read before the write.
    ``keep_last=n`` adds the subset pattern: each aircraft document keeps its last ``n`` reports
    (``last_reports``: ``_id``, time and position, an extended reference to each report), updated by
    one more command per batch (a ``$push`` with ``$sort`` and ``$slice`` per aircraft).
    Introduced in notebook 04.
    """
    _check_ingest_args(messages, batch_size, keep_last)
    coll = track_collection(db, collection)
    ensure_indexes(db, collection)
    result = IngestResult()
    with _progress_bar(messages, progress) as bar:
        for batch in _batches(messages, batch_size, bar):
            ingest_batch(coll, batch, result, keep_last)
    return result


def _check_ingest_args(messages: Any, batch_size: Any, keep_last: Any) -> None:
    """``ingest``'s arguments, checked before anything is written: a ValueError or TypeError names the one
    at fault."""
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
        raise ValueError(f"ingest: keep_last={keep_last!r} must be a whole number >= 0 (0: no subset)")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"ingest: batch_size={batch_size!r} must be a positive integer (default 1000)")
    if isinstance(messages, (str, bytes, Mapping)):
        raise TypeError("ingest: messages must be an iterable of message dicts (a list, a generator); "
                        "for one message pass [message]; for Stratux JSON use parse_stratux first")


@contextlib.contextmanager
def _progress_bar(messages: Iterable[Any], progress: bool) -> Iterator[Any]:
    """``ingest``'s progress bar (tqdm, sized when ``messages`` has a length), or ``None`` without
    ``progress``; closed when the block ends, an error included."""
    total = len(messages) if hasattr(messages, "__len__") else None  # type: ignore[arg-type]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, desc="ingest", unit=" msg", disable=not settings.progress_bars())
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()


def _batches(messages: Iterable[Any], batch_size: int, bar: Any) -> Iterator[list[tuple[int, Any]]]:
    """``messages`` as lists of ``(index, message)``, ``batch_size`` long (the last one shorter); the
    ``bar`` (if any) advanced once each batch has been handled."""
    batch: list[tuple[int, Any]] = []
    for index, message in enumerate(messages):
        batch.append((index, message))
        if len(batch) >= batch_size:
            yield batch
            if bar is not None:
                bar.update(len(batch))
            batch = []
    if batch:
        yield batch
        if bar is not None:
            bar.update(len(batch))


def ingest_batch(coll: Any, batch: list[tuple[int, Any]], result: IngestResult, keep_last: int = 0,
                 airlines: Collection[str] | None = None) -> int:
    """One batch of ``ingest``: validate, key, insert the batch's parents and reports (one command), and
    with ``keep_last`` push the new reports onto their aircraft's ``last_reports`` (onto the aircraft of
    ``airlines`` only, where given: the maps that are read). Returns how many inserts the ``_id`` index
    refused (parents already stored, re-sent reports), counted in ``result`` as it goes (notebook 04)."""
    parents, reports = batch_documents(batch, result)
    if not reports:
        return 0
    # one unordered insert of the parents the batch needs and its reports (one collection: one
    # command); the _id index refuses what is already stored (an earlier batch, another writer,
    # a re-sent message), so each document is created once, with no read first
    stored, refused = insert_new(coll, [parents[pid] for pid in sorted(parents)] + [reports[rid] for rid in sorted(reports)])
    _count_created_parents(result, stored)
    inserted = [d for d in stored if d["recordType"] == REPORT]
    result.inserted += len(inserted)
    result.duplicates += len(reports) - len(inserted)
    pushed = [d for d in inserted if airlines is None or d["airline"] in airlines]
    if keep_last and pushed:  # only new reports: a re-sent one is never pushed twice
        _push_last_reports(coll, pushed, keep_last)
    return refused


def batch_documents(batch: list[tuple[int, Any]], result: IngestResult) -> tuple[dict[str, dict], dict[str, dict]]:
    """The documents one batch of messages makes, ``({_id: airline or aircraft}, {_id: report})``: each
    good message a report (its position also as GeoJSON), its airline and aircraft once per batch; a
    malformed message goes to ``result.rejected``, a message twice in the batch to ``duplicates``."""
    reports: dict[str, dict[str, Any]] = {}
    parents: dict[str, dict[str, Any]] = {}
    airline_codes: dict[Any, str] = {}  # callsign -> airline code, once per callsign in the batch
    for index, message in batch:
        clean, reason = validate_message(message)
        if clean is None:
            result.rejected.append(Rejected(index, reason or "invalid", message))
            continue
        code = _cached_airline_of_callsign(airline_codes, clean.get("callsign"))
        rid = make_id(code, clean["icao24"], message_number(clean["timestamp"]))
        if rid in reports:  # the same message twice in one batch
            result.duplicates += 1
            continue
        reports[rid] = {"_id": rid, "recordType": REPORT, "airline": code, **clean,
                        GEO_FIELD: geo_point(clean["lon"], clean["lat"])}
        _add_parents_on_first_sight(parents, code, clean)
    return parents, reports


def _cached_airline_of_callsign(airline_codes: dict[Any, str], callsign: Any) -> str:
    """``airline_of_callsign(callsign)``, looked up once per callsign (``airline_codes``: one batch's
    cache)."""
    code = airline_codes.get(callsign)
    if code is None:
        code = airline_codes[callsign] = airline_of_callsign(callsign)
    return code


def _add_parents_on_first_sight(parents: dict[str, dict[str, Any]], code: str,
                                clean: Mapping[str, Any]) -> None:
    """Add a report's airline and aircraft documents to the batch's ``parents`` unless it has them."""
    if code not in parents:
        parents[code] = _airline_doc(code)
    icao24 = clean["icao24"]
    aid = f"{code}_{icao24}"  # make_id(code, icao24): both parts already checked
    if aid not in parents:
        parents[aid] = {"_id": aid, "recordType": AIRCRAFT, "airline": code, "icao24": icao24,
                        **({"callsign": clean["callsign"]} if "callsign" in clean else {}),
                        "first_seen": clean["timestamp"]}


def _count_created_parents(result: IngestResult, created: list[dict[str, Any]]) -> None:
    """Count the airline and aircraft documents this batch created in ``result``."""
    result.airlines_created += sum(1 for d in created if d["recordType"] == AIRLINE)
    result.aircraft_created += sum(1 for d in created if d["recordType"] == AIRCRAFT)


def _push_last_reports(coll: Any, inserted: list[dict[str, Any]], keep_last: int) -> None:
    """The subset pattern: one unordered bulk write, a ``$push`` with ``$sort`` and ``$slice`` per
    aircraft keeping its last ``keep_last`` reports in ``last_reports`` (``_id``, time and position:
    an extended reference to each report)."""
    latest: dict[str, list[dict[str, Any]]] = {}
    for d in inserted:
        latest.setdefault(f"{d['airline']}_{d['icao24']}", []).append(
            {"_id": d["_id"], "timestamp": d["timestamp"], "lat": d["lat"], "lon": d["lon"]})
    coll.bulk_write([UpdateOne({"_id": aid}, {"$push": {"last_reports": {  # only what the slice can keep
        "$each": sorted(items, key=lambda r: r["timestamp"])[-keep_last:], "$sort": {"timestamp": 1},
        "$slice": -keep_last}}})
        for aid, items in sorted(latest.items())], ordered=False)


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
        if not only_duplicates(e):
            raise
        skip = refused(e)
        return [d for i, d in enumerate(docs) if i not in skip], len(skip)



