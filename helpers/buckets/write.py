"""Two more forms of the bucket write, each one round trip a batch (notebook 08, section 8.2).

* :class:`BucketWriter`: the write of :func:`helpers.buckets.bucket_reports` without its read. A writer
  that owns a feed remembers, for each aircraft, the bucket it last wrote (its ``_id``, ``n``,
  ``count`` and the times its hour holds), so it sends each batch as one ordered ``bulk_write`` of
  updates (one ``update`` command): an update-if-current of each open bucket, and for each new bucket
  an upsert that only sets what it inserts (``$setOnInsert``). Each fails with a duplicate key where
  the bucket is not as the writer left it (see ``_planned``), and the ordered bulk stops there. When it
  does not know a window (a restart, a late report of an older hour) it opens bucket ``n = 0`` that
  way; on a duplicate key it stores the batch with ``bucket_reports`` (which reads first and stores
  nothing twice) and reads what it needs to remember. The same guarantees as
  ``bucket_reports``; the read only when something surprised it.
* :func:`upsert_reports`: the form most often shown, one ``UpdateOne(..., upsert=True)`` per bucket's
  share of the batch, filtered on the bucket's key and ``count`` with room, in one ordered
  ``bulk_write``. It needs no unique index (its buckets have no ``n``: :data:`UPSERT_KEY`), and it
  stores a re-sent report again.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, Mapping

from pymongo import UpdateOne
from pymongo.errors import BulkWriteError

from ..writes import only_duplicates
from .pattern import (
    BATCH_SIZE,
    _by_window_in_time_order,
    _checked,
    _ensure_bucket_index_once,
    _new_bucket,
    _push_with_summaries,
    bucket_reports,
)

__all__ = ["BucketWriter", "upsert_reports", "UPSERT_KEY"]

UPSERT_KEY = [("icao24", 1), ("start", 1)]  #: the upserted buckets' index (not unique: a window's buckets share it)


class BucketWriter:
    """Store a feed's batches in buckets, one ``bulk_write`` a batch and no read before it."""

    def __init__(self, collection: Any, *, max_reports: int = 200) -> None:
        _checked([], max_reports)  # the same argument check as bucket_reports
        self.collection, self.max_reports = collection, max_reports
        self.open: dict[str, dict[str, Any]] = {}  # icao24 -> its newest window: start, _id, n, count, times

    def write(self, reports: Iterable[Mapping[str, Any]]) -> int:
        """Store a batch; return how many reports were newly stored (a re-send is not stored again)."""
        reports = list(reports)
        docs, _ = _by_window_in_time_order(_checked(reports, self.max_reports))
        _ensure_bucket_index_once(self.collection)
        ops, sizes, after = _planned(self.open, docs, self.max_reports)
        if not ops:
            return 0
        try:  # one update command: one round trip
            done = self.collection.bulk_write(ops, ordered=True)
        except BulkWriteError as e:  # a duplicate key: a bucket changed since we wrote it, or one we did not know
            if not only_duplicates(e):
                raise
            first = e.details["writeErrors"][0]["index"]  # ordered: the statements before it were applied
            return sum(sizes[:first]) + self._read_then_store(reports, list(docs))
        for state in after.values():
            if isinstance(state["_id"], int):  # the index of the upsert that opened it: now its _id
                state["_id"] = done.upserted_ids[state["_id"]]
        self._remember(after)
        return sum(sizes)

    def _remember(self, windows: Mapping[str, dict[str, Any]]) -> None:
        """Keep each aircraft's newest window (a late report of an older hour does not replace it)."""
        for icao24, state in windows.items():
            if icao24 not in self.open or state["start"] >= self.open[icao24]["start"]:
                self.open[icao24] = state

    def _read_then_store(self, reports: list, windows: list[tuple[str, _dt.datetime]]) -> int:
        """``bucket_reports`` for the batch (idempotent), then learn each window's state again."""
        stored = bucket_reports(self.collection, reports, max_reports=self.max_reports)
        self._remember(_learned(self.collection, windows))
        return stored


def _planned(open_: Mapping[str, dict], docs: Mapping[tuple[str, _dt.datetime], list],
             max_reports: int) -> tuple[list, list, dict]:
    """The batch's updates, how many reports each stores, and each aircraft's newest window after them
    (``_id``: the index of the upsert that opens its tail, until the write says which ``_id`` it got).

    Each update fails with a duplicate key, so that the ordered bulk stops there, when the bucket is
    not as this writer left it: an open bucket's filter ``{_id, count}`` then matches nothing and its
    upsert collides on ``_id``; a new bucket's ``{icao24, start, n, count: {$exists: false}}`` matches
    nothing and its upsert collides on the unique ``(icao24, start, n)`` where that bucket exists."""
    ops: list = []
    sizes: list[int] = []
    after: dict[str, dict[str, Any]] = {}
    for (icao24, start), window in sorted(docs.items()):
        known = open_.get(icao24)
        known = known if known is not None and known["start"] == start else None
        held = known["times"] if known else set()
        rest = [d for d in window if d["time"] not in held]
        state = dict(known) if known else {"start": start, "_id": None, "n": -1, "count": max_reports}
        state["times"] = set(held) | {d["time"] for d in rest}
        if known and known["count"] < max_reports and rest:  # update if current: nobody wrote it since we did
            part, rest = rest[:max_reports - known["count"]], rest[max_reports - known["count"]:]
            ops.append(UpdateOne({"_id": known["_id"], "count": known["count"]}, _push_with_summaries(part),
                                 upsert=True))
            sizes.append(len(part))
            state["count"] += len(part)
        while rest:  # a new bucket: inserted only where the window has no bucket n
            part, rest = rest[:max_reports], rest[max_reports:]
            state["n"] += 1
            ops.append(UpdateOne({"icao24": icao24, "start": start, "n": state["n"], "count": {"$exists": False}},
                                 {"$setOnInsert": _new_bucket(icao24, start, state["n"], max_reports, part)},
                                 upsert=True))
            sizes.append(len(part))
            state["_id"], state["count"] = len(ops) - 1, len(part)  # the upsert's index, for now
        if state["_id"] is not None and (icao24 not in after or start > after[icao24]["start"]):
            after[icao24] = state
    return ops, sizes, after


def _learned(collection: Any, windows: list[tuple[str, _dt.datetime]]) -> dict[str, dict[str, Any]]:
    """Each aircraft's newest window among ``windows`` as stored: its tail bucket and every time it holds."""
    newest: dict[str, _dt.datetime] = {}
    for icao24, start in windows:
        newest[icao24] = max(start, newest.get(icao24, start))
    found = collection.find({"$or": [{"icao24": a, "start": s} for a, s in sorted(newest.items())]},
                            {"icao24": 1, "start": 1, "n": 1, "count": 1, "reports.time": 1}, batch_size=BATCH_SIZE)
    out: dict[str, dict[str, Any]] = {}
    for b in sorted(found, key=lambda b: b["n"]):
        state = out.setdefault(b["icao24"], {"start": b["start"], "times": set()})
        state.update({"_id": b["_id"], "n": b["n"], "count": b["count"]})
        state["times"] |= {r["time"] for r in b["reports"]}
    return out


def upsert_reports(collection: Any, reports: Iterable[Mapping[str, Any]], *, max_reports: int = 200) -> int:
    """The upsert form: each window's share of the batch pushed to a bucket of its aircraft and hour with
    room for it, or upserted as a new one, all in one ordered ``bulk_write``; returns the reports sent.
    Its collection has the :data:`UPSERT_KEY` index, never a unique one. A re-sent report is stored again."""
    docs, _ = _by_window_in_time_order(_checked(reports, max_reports))  # in time order, per window
    ops = [UpdateOne({"icao24": icao24, "start": start, "count": {"$lte": max_reports - len(part)}},
                     {**_push_with_summaries(part), "$setOnInsert": {"cap": max_reports}}, upsert=True)
           for (icao24, start), window in sorted(docs.items())
           for part in (window[i:i + max_reports] for i in range(0, len(window), max_reports))]
    if ops:
        collection.bulk_write(ops, ordered=True)  # one round trip
    return sum(len(w) for w in docs.values())
