"""The measured cost of notebook 04's tracker workload, per design: three collections, one, one with the subset (notebook 04).

The designs are written with :mod:`helpers.aerodata`'s own code; :func:`tracker_costs` gives what
:meth:`helpers.workload.Workload.weigh` takes. The lesson imports it from :mod:`helpers.aerodata`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..counting import count_commands
from ..safety import fresh_collection, track_collection, workbook_collection
from .keys import QUERY_BATCH, _airline_doc, airline_of_callsign, make_id
from .messages import IngestResult, message_number, validate_message
from .queries import airline_all, latest_positions, reports
from .store import ensure_indexes, ingest_batch, insert_new

__all__ = ["tracker_costs"]


def tracker_costs(db: Any, airline: str, messages: Sequence[Mapping[str, Any]], icao24: str, *,
                  keep_last: int = 5, batch_size: int = 1_000, single: str | None = None,
                  three: tuple[str, str, str] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """The measured cost of each operation of notebook 04's tracker workload, per design:
    ``{design: {operation: cost}}`` for :meth:`helpers.workload.Workload.weigh`.

    Three designs: three collections (airlines, aircraft, reports: one unordered insert per
    collection and batch), the single collection (``ingest_batch``), and the single collection with
    the subset pattern (``keep_last``). Storing is counted per report: the commands of batches of
    ``batch_size`` ``messages`` (one airline's reports) written to fresh workbook collections
    (``aero_cost_*``; creating collections and indexes is not counted), divided by their reports.
    Each read is counted once, on a collection that holds all of ``messages``: ``single`` and the
    three names in ``three`` where the caller already stored them that way (else the fresh copies
    are filled with all of them), the fresh subset copy for the subset design. The reads: one
    aircraft's reports (``icao24``), the latest position of every aircraft of the fleet,
    everything for the airline. Notebook 04."""

    def per(counter: Any, n: int) -> dict[str, float]:
        return {"round trips": counter.round_trips / n, "docs returned": counter.docs_returned / n,
                "bytes returned": counter.bytes_returned / n, "docs written": counter.docs_written / n}

    def count(fn: Callable[[], Any]) -> dict[str, float]:
        with count_commands() as c:
            fn()
        return per(c, 1)

    docs = [clean for clean, _ in map(validate_message, messages) if clean is not None]
    names = {k: f"aero_cost_{k}" for k in ("airlines", "aircraft", "reports", "single", "subset")}
    for name in names.values():  # the workbook's own names: refused if somebody else's, before any drop
        workbook_collection(db, name, create=False)
    for name in names.values():  # dropped and made anew, recorded by their new UUIDs
        fresh_collection(db, name)
    out: dict[str, dict[str, dict[str, float]]] = {}
    # three collections, each write the best it can be: unordered inserts, the _id index refusing repeats
    airlines_c, aircraft_c, reports_c = (track_collection(db, names[k]) for k in ("airlines", "aircraft", "reports"))
    aircraft_c.create_index("airline")
    reports_c.create_index([("airline", 1), ("icao24", 1), ("timestamp", 1)])

    def store_three(part: list[dict[str, Any]]) -> None:
        codes = {airline_of_callsign(d.get("callsign")) for d in part}
        insert_new(airlines_c, [{k: v for k, v in _airline_doc(code).items() if k != "recordType"}
                                for code in sorted(codes)])
        planes = {(airline_of_callsign(d.get("callsign")), d["icao24"]) for d in part}
        insert_new(aircraft_c, [{"_id": make_id(a, p), "airline": a, "icao24": p} for a, p in sorted(planes)])
        insert_new(reports_c, [{"_id": make_id(airline_of_callsign(d.get("callsign")), d["icao24"],
                                               message_number(d["timestamp"])),
                                "airline": airline_of_callsign(d.get("callsign")), **d} for d in part])

    first = docs[:batch_size]
    with count_commands() as c:
        store_three(first)
    three_store = per(c, len(first))
    if three is None:
        for i in range(batch_size, len(docs), batch_size):
            store_three(docs[i:i + batch_size])
        three = (names["airlines"], names["aircraft"], names["reports"])
    a_c, p_c, r_c = (db[n] for n in three)
    out["three collections"] = {
        "store a report": three_store,
        "one aircraft's reports": count(lambda: list(r_c.find(
            {"airline": airline, "icao24": icao24}, batch_size=QUERY_BATCH).sort("timestamp", 1))),
        "latest position of a fleet": count(lambda: [r_c.find_one(
            {"airline": airline, "icao24": p["icao24"]}, {"timestamp": 1, "lat": 1, "lon": 1},
            sort=[("airline", 1), ("icao24", 1), ("timestamp", -1)])
            for p in p_c.find({"airline": airline}).sort("_id", 1)]),
        "everything for an airline": count(lambda: (
            a_c.find_one({"_id": airline}), list(p_c.find({"airline": airline}).sort("_id", 1)),
            list(r_c.find({"airline": airline}, batch_size=QUERY_BATCH).sort("_id", 1)))),
    }
    for design, name, keep, reads_from in (("one collection", names["single"], 0, single),
                                           ("one collection + subset", names["subset"], keep_last, None)):
        coll = track_collection(db, name)
        ensure_indexes(db, name)  # set up once, outside the count: the batches are what each report costs
        stored = IngestResult()
        with count_commands() as c:
            ingest_batch(coll, list(enumerate(first)), stored, keep)
        store = per(c, stored.inserted)
        if reads_from is None:
            for i in range(batch_size, len(docs), batch_size):
                ingest_batch(coll, list(enumerate(docs[i:i + batch_size], start=i)), stored, keep)
            reads_from = name
        out[design] = {
            "store a report": store,
            "one aircraft's reports": count(lambda c=reads_from: reports(db, airline, icao24, collection=c)),
            "latest position of a fleet": count(lambda c=reads_from, k=keep: latest_positions(
                db, airline, collection=c, subset=bool(k))),
            "everything for an airline": count(lambda c=reads_from: airline_all(db, airline, collection=c)),
        }
    return out
