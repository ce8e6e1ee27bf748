"""Two more forms of the bucket write, each one round trip a batch (notebook 08, section 8.2).

* :class:`BucketWriter`: the write of :func:`helpers.buckets.bucket_reports` without its read. A writer
  that owns a feed remembers, for each aircraft, the bucket it last wrote (its ``_id``, ``n``,
  ``count`` and the times its hour holds), so it sends each batch as one ordered ``bulk_write`` of
  updates (one ``update`` command): an update-if-current of each open bucket, and for each new bucket
  an upsert that only sets what it inserts (``$setOnInsert``). Each fails with a duplicate key where
  the bucket is not as the writer left it (see ``BucketWriter.updates``; the placement is
  ``bucket_reports``' own, :func:`helpers.buckets.pattern.placement`), and the ordered bulk stops there. When it
  does not know a window (a restart, a late report of an older hour) it opens bucket ``n = 0`` that
  way; on a duplicate key it stores the batch with ``bucket_reports`` (which reads first and stores
  nothing twice) and reads what it needs to remember. The same guarantees as
  ``bucket_reports``; the read only when something surprised it.
* :func:`read_then_bulk`: any writer, two round trips a batch: ``bucket_reports``' one read, then the
  updates ``BucketWriter`` would send, built from what was read, in one ordered ``bulk_write``; on a
  duplicate key (another writer wrote first) ``bucket_reports`` stores the batch.
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
    SPAN,
    _by_window_in_time_order,
    _checked,
    _ensure_bucket_index_once,
    _new_bucket,
    _push_with_summaries,
    _refuse_buckets_of_another_cap,
    bucket_reports,
    placement,
    window_state,
)

__all__ = ["BucketWriter", "read_then_bulk", "upsert_reports", "UPSERT_KEY"]

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
        docs = self._by_window(reports)  # checked, each (aircraft, hour)'s in time order
        ops, sizes, after = self.updates(docs)  # update if current, or open a bucket (an upsert)
        if not ops:
            return 0
        try:  # one update command: one round trip
            done = self.collection.bulk_write(ops, ordered=True)
        except BulkWriteError as e:  # a bucket changed since we wrote it, or one we did not know
            return self._after_duplicate(e, sizes, reports, list(docs))
        self._remember(_with_upserted_ids(after, done))
        return sum(sizes)

    def updates(self, docs: Mapping[tuple[str, _dt.datetime], list]) -> tuple[list, list[int], dict]:
        """The batch's updates, placed by ``placement`` (the rule of ``bucket_reports``), how many reports
        each stores, and each aircraft's newest window after them (``_id``: the index of the upsert that
        opens its tail, until the write says which ``_id`` it got).

        Each update fails with a duplicate key, so that the ordered bulk stops there, when the bucket is
        not as this writer left it: an open bucket's filter ``{_id, count}`` then matches nothing and its
        upsert collides on ``_id``; a new bucket's ``{icao24, start, n, count: {$exists: false}}`` matches
        nothing and its upsert collides on the unique ``(icao24, start, n)`` where that bucket exists."""
        ops, sizes, after = [], [], {}
        for (icao24, start), window in sorted(docs.items()):
            known, state = self._known(icao24, start, window)
            to_tail, opened = placement(known, [d for d in window if d["time"] not in state["held"]], self.max_reports)
            if to_tail:  # update if current: nobody wrote it since we did
                ops.append(UpdateOne({"_id": known["_id"], "count": known["count"]}, _push_with_summaries(to_tail),
                                     upsert=True))
                sizes.append(len(to_tail))
                state["count"] += len(to_tail)
            for n, part in opened:  # a new bucket: inserted only where the window has no bucket n
                ops.append(UpdateOne({"icao24": icao24, "start": start, "n": n, "count": {"$exists": False}},
                                     {"$setOnInsert": _new_bucket(icao24, start, n, self.max_reports, part)},
                                     upsert=True))
                sizes.append(len(part))
                state.update(n=n, _id=len(ops) - 1, count=len(part))  # the upsert's index, for now
            _keep_newest(after, icao24, state)
        return ops, sizes, after

    def _known(self, icao24: str, start: _dt.datetime, window: list) -> tuple[dict | None, dict[str, Any]]:
        """The window's tail as this writer left it (``None``: not its newest window, or never written
        here), and its state after this batch: the times it held (``held``) and will hold (``times``)."""
        known = self.open.get(icao24)
        known = known if known is not None and known["start"] == start else None
        held = known["times"] if known else set()
        state = dict(known) if known else {"start": start, "_id": None, "n": -1, "count": self.max_reports}
        state["held"], state["times"] = held, set(held) | {d["time"] for d in window}
        return known, state

    def _by_window(self, reports: list) -> dict:
        """The argument checks of ``bucket_reports`` (a bad report raises before anything is written),
        the unique index once, and the reports by (icao24, window start), each window's in time order."""
        docs, _ = _by_window_in_time_order(_checked(reports, self.max_reports))
        _ensure_bucket_index_once(self.collection)
        return docs

    def _after_duplicate(self, e: BulkWriteError, sizes: list[int], reports: list,
                         windows: list[tuple[str, _dt.datetime]]) -> int:
        """An ordered bulk stopped at a duplicate key (any other error is raised): the updates before it
        were applied; the batch is stored again by ``bucket_reports`` (it reads first and stores nothing
        twice), and each window's state is read again."""
        if not only_duplicates(e):
            raise e
        first = e.details["writeErrors"][0]["index"]  # ordered: the statements before it were applied
        stored = bucket_reports(self.collection, reports, max_reports=self.max_reports)
        self._remember(_learned(self.collection, windows))
        return sum(sizes[:first]) + stored

    def _remember(self, windows: Mapping[str, dict[str, Any]]) -> None:
        """Keep each aircraft's newest window (a late report of an older hour does not replace it)."""
        for icao24, state in windows.items():
            if icao24 not in self.open or state["start"] >= self.open[icao24]["start"]:
                self.open[icao24] = state


def _keep_newest(after: dict[str, dict[str, Any]], icao24: str, state: dict[str, Any]) -> None:
    """Keep ``state`` as ``icao24``'s newest window after the batch if it has a bucket and is newer."""
    state.pop("held", None)
    if state["_id"] is not None and (icao24 not in after or state["start"] > after[icao24]["start"]):
        after[icao24] = state


def _with_upserted_ids(after: dict[str, dict[str, Any]], done: Any) -> dict[str, dict[str, Any]]:
    """``after`` with each newly opened tail's ``_id``: the index of the upsert that opened it, now the
    ``_id`` the write reported."""
    for state in after.values():
        if isinstance(state["_id"], int):
            state["_id"] = done.upserted_ids[state["_id"]]
    return after


def _learned(collection: Any, windows: list[tuple[str, _dt.datetime]]) -> dict[str, dict[str, Any]]:
    """Each aircraft's newest window among ``windows`` as stored: its tail bucket and every time it holds,
    read by :func:`helpers.buckets.pattern.window_state` over the whole hour."""
    newest: dict[str, _dt.datetime] = {}
    for icao24, start in windows:
        newest[icao24] = max(start, newest.get(icao24, start))
    keys = sorted(newest.items())
    whole_hour = {k: [k[1], k[1] + SPAN - _dt.timedelta(milliseconds=1)] for k in keys}
    out: dict[str, dict[str, Any]] = {}
    for (icao24, start), buckets in window_state(collection, keys, whole_hour).items():
        if buckets:
            tail = buckets[-1]
            out[icao24] = {"start": start, "_id": tail["_id"], "n": tail["n"], "count": tail["count"],
                           "times": {t for b in buckets for t in b["held"]}}
    return out


def read_then_bulk(collection: Any, reports: Iterable[Mapping[str, Any]], *, max_reports: int = 200) -> int:
    """Store a batch in buckets from any writer, in two round trips: the one read of
    :func:`helpers.buckets.bucket_reports` (each window's buckets, ``n``, ``count`` and the times it may
    repeat), then each window's update-if-current and new buckets, placed by ``placement``, in one
    ordered ``bulk_write`` (the updates of ``BucketWriter``: each fails with a duplicate key where the
    bucket is no longer as read). On a duplicate key, ``bucket_reports`` stores the batch (it reads first
    and stores nothing twice). Returns how many reports were newly stored; the same guarantees."""
    reports = list(reports)
    docs, times = _by_window_in_time_order(_checked(reports, max_reports))
    if not docs:
        return 0
    _ensure_bucket_index_once(collection)
    state = window_state(collection, sorted(docs), times)
    _refuse_buckets_of_another_cap(collection, sorted(docs), state, max_reports)  # before writing anything
    ops, sizes = [], []
    for (icao24, start), window in sorted(docs.items()):
        buckets = state.get((icao24, start), [])
        held = {t for b in buckets for t in (b.get("held") or [])}
        tail = buckets[-1] if buckets else None
        to_tail, opened = placement(tail, [d for d in window if d["time"] not in held], max_reports)
        if to_tail:  # update if current: its upsert collides on _id where someone wrote the bucket since the read
            ops.append(UpdateOne({"_id": tail["_id"], "count": tail["count"]}, _push_with_summaries(to_tail), upsert=True))
            sizes.append(len(to_tail))
        for n, part in opened:  # inserted only where the window has no bucket n (the unique index)
            ops.append(UpdateOne({"icao24": icao24, "start": start, "n": n, "count": {"$exists": False}},
                                 {"$setOnInsert": _new_bucket(icao24, start, n, max_reports, part)}, upsert=True))
            sizes.append(len(part))
    if not ops:
        return 0
    try:  # one update command: one round trip
        collection.bulk_write(ops, ordered=True)
    except BulkWriteError as e:
        if not only_duplicates(e):
            raise
        first = e.details["writeErrors"][0]["index"]  # ordered: the statements before it were applied
        return sum(sizes[:first]) + bucket_reports(collection, reports, max_reports=max_reports)
    return sum(sizes)


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
