"""Notebook 08: position reports in buckets (the bucket pattern), written safely by several writers.

A bucket holds the reports of one aircraft (``icao24``) in one window of time (``start``, an hour:
:data:`SPAN`), at most ``max_reports`` of them, with summary fields that the same write keeps:
``count``, ``first`` and ``last`` time, ``minAltitude`` and ``maxAltitude``. When a window has more
reports than one bucket holds, its buckets are numbered ``n = 0, 1, 2, ...``; a unique index on
``(icao24, start, n)`` makes each number exist once.

How :func:`bucket_reports` stays right with several writers at once, in MongoDB terms:

* only the window's last bucket (the highest ``n``, its *tail*) ever receives reports, and only while
  it has room: a full bucket never changes again;
* one aggregation per call reads, for every window the call touches, each bucket's ``n`` and
  ``count`` and which of the call's times it already holds (the re-sends; never the report bodies);
* the reports to add go to the tail in one update whose filter is ``{_id: tail, count: <count read>}``:
  the update applies only if nobody changed the bucket since it was read (``count`` is the version,
  "update if current"), and a single-document update is atomic on every MongoDB; it pushes the
  reports and keeps ``count``, ``first``, ``last`` and the altitudes with ``$inc``, ``$min`` and
  ``$max`` in the same write;
* reports that do not fit open bucket ``n + 1`` with an insert; if another writer opened it first,
  the unique index refuses the insert (duplicate key) and the window is read again;
* a filter that matches nothing (someone wrote first) means: read the window again and retry.

A re-sent report (same ``icao24`` and ``time``) is therefore stored once, a late report goes into its
window's bucket, and no bucket holds more than ``max_reports``.
"""
from __future__ import annotations

import datetime as _dt
import math
from collections import defaultdict
from typing import Any, Iterable, Mapping

import bson
from pymongo.errors import DuplicateKeyError

__all__ = ["SPAN", "KEY", "bucket_reports", "track", "window_start", "ensure_bucket_index"]

SPAN = _dt.timedelta(hours=1)  #: the time window one bucket covers
KEY = [("icao24", 1), ("start", 1), ("n", 1)]  #: the buckets' unique index (also serves tracks)
_MAX_RETRIES = 1000  # a window re-read this often means something else keeps writing it: give up loudly


def window_start(time: _dt.datetime) -> _dt.datetime:
    """The start of the hour that covers ``time`` (the bucket window it belongs to)."""
    return time.replace(minute=0, second=0, microsecond=0)


def ensure_bucket_index(collection: Any) -> str:
    """The unique ``(icao24, start, n)`` index the buckets rely on (created if missing)."""
    return collection.create_index(KEY, unique=True, name="icao24_start_n")


def _altitude(report: Mapping[str, Any]) -> float | None:
    a = report.get("altitude")
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not math.isfinite(a):
        return None
    return a


def _checked(reports: Iterable[Mapping[str, Any]], max_reports: Any) -> list[dict[str, Any]]:
    """Every report checked before anything is written: a bad one raises and the call writes nothing."""
    if isinstance(max_reports, bool) or not isinstance(max_reports, int) or max_reports < 1:
        raise ValueError(f"max_reports must be a whole number, 1 or more, not {max_reports!r}")
    if isinstance(reports, Mapping) or isinstance(reports, (str, bytes)):
        raise TypeError("reports: give an iterable of reports (mappings), not a single one")
    out = []
    for i, r in enumerate(reports):
        if not isinstance(r, Mapping):
            raise TypeError(f"report {i}: a mapping with icao24 and time, not {type(r).__name__}")
        if not isinstance(r.get("icao24"), str) or not r["icao24"]:
            raise ValueError(f"report {i}: icao24 must be a non-empty string, not {r.get('icao24')!r}")
        if "time" not in r:
            raise ValueError(f"report {i} ({r['icao24']}): no time; every report needs time, a naive UTC datetime")
        t = r["time"]
        if not isinstance(t, _dt.datetime):
            raise TypeError(f"report {i} ({r['icao24']}): time must be a datetime (naive UTC), not "
                            f"{type(t).__name__} {t!r}; convert epoch seconds with "
                            f"datetime.datetime.fromtimestamp(s, datetime.timezone.utc).replace(tzinfo=None)")
        if t.tzinfo is not None:
            raise ValueError(f"report {i} ({r['icao24']}): time {t!r} has a time zone; give naive UTC "
                             f"(t.astimezone(datetime.timezone.utc).replace(tzinfo=None))")
        if t.microsecond % 1000:
            raise ValueError(f"report {i} ({r['icao24']}): time {t!r} has microseconds; a BSON Date keeps "
                             f"milliseconds, so round it first")
        doc = {k: v for k, v in r.items() if k != "icao24"}
        try:
            bson.encode(doc)
        except Exception as e:  # noqa: BLE001 - report which report cannot be stored
            raise TypeError(f"report {i} ({r['icao24']}): cannot be stored as BSON: {e}") from e
        out.append({"icao24": r["icao24"], "doc": doc})
    return out


def _window_state(collection: Any, keys: list[tuple[str, _dt.datetime]],
                  times: Mapping[tuple[str, _dt.datetime], list[_dt.datetime]]) -> dict:
    """One aggregation: for each (icao24, start) its buckets' n, count, _id and the given times they hold."""
    if not keys:
        return {}
    state: dict = {k: [] for k in keys}
    branches = [{"icao24": a, "start": s} for a, s in keys]
    all_times = sorted({t for k in keys for t in times[k]})
    held = {"$map": {"input": {"$filter": {"input": "$reports", "cond": {"$in": ["$$this.time", all_times]}}},
                     "in": "$$this.time"}}
    pipeline = [{"$match": {"$or": branches} if len(branches) > 1 else branches[0]},
                {"$project": {"icao24": 1, "start": 1, "n": 1, "count": 1, "cap": 1, "held": held}}]
    for b in collection.aggregate(pipeline):
        state.setdefault((b["icao24"], b["start"]), []).append(b)
    for k in state:
        state[k].sort(key=lambda b: b["n"])
    return state


def _summary(docs: list[dict[str, Any]]) -> dict[str, Any]:
    times = [d["time"] for d in docs]
    alts = [a for a in (_altitude(d) for d in docs) if a is not None]
    mins: dict[str, Any] = {"first": min(times)}
    maxs: dict[str, Any] = {"last": max(times)}
    if alts:
        mins["minAltitude"], maxs["maxAltitude"] = min(alts), max(alts)
    return {"min": mins, "max": maxs}


def _store_window(collection: Any, icao24: str, start: _dt.datetime, docs: list[dict[str, Any]],
                  buckets: list[dict[str, Any]], max_reports: int) -> tuple[int, bool]:
    """Try once to store ``docs`` (in time order) in the window, as ``buckets`` were read: how many
    were stored, and whether the window is done (``False``: someone wrote first, read it again)."""
    held = {t for b in buckets for t in (b.get("held") or [])}
    new = [d for d in docs if d["time"] not in held]
    if not new:
        return 0, True
    stored = 0
    tail = buckets[-1] if buckets else None
    if tail is not None and tail["count"] < max_reports:
        room = max_reports - tail["count"]
        part, new = new[:room], new[room:]
        s = _summary(part)
        done = collection.update_one(
            {"_id": tail["_id"], "count": tail["count"]},  # update if current: nobody wrote it since our read
            {"$push": {"reports": {"$each": part}}, "$inc": {"count": len(part)}, "$min": s["min"], "$max": s["max"]})
        if done.matched_count == 0:
            return 0, False
        stored += len(part)
    n = tail["n"] + 1 if tail is not None else 0
    while new:
        part, new = new[:max_reports], new[max_reports:]
        s = _summary(part)
        try:
            collection.insert_one({"icao24": icao24, "start": start, "n": n, "cap": max_reports,
                                   "count": len(part), **s["min"], **s["max"], "reports": part})
        except DuplicateKeyError:
            return stored, False  # someone opened bucket n first: read again (what we stored shows as held)
        stored += len(part)
        n += 1
    return stored, True


def bucket_reports(collection: Any, reports: Iterable[Mapping[str, Any]], *, max_reports: int = 200) -> int:
    """Store position reports in buckets; return how many were newly stored (introduced in notebook 08).

    Each report is a mapping with at least ``icao24`` (a string) and ``time`` (a naive UTC
    ``datetime``, whole milliseconds), plus any other fields. A report whose ``icao24`` and ``time``
    are already stored (a re-send) is not stored again; a late report goes into the bucket of the hour
    that covers its time; no bucket holds more than ``max_reports``. Several writers (threads or
    processes) may call this at once: nothing is lost or stored twice (see the module's docstring).
    Bad input raises ``ValueError``/``TypeError`` naming the report, before anything is written."""
    checked = _checked(reports, max_reports)
    if not checked:
        return 0
    ensure_bucket_index(collection)
    by_window: dict[tuple[str, _dt.datetime], dict[_dt.datetime, dict]] = defaultdict(dict)
    for r in checked:
        key = (r["icao24"], window_start(r["doc"]["time"]))
        by_window[key].setdefault(r["doc"]["time"], r["doc"])  # a re-send inside one call: the first copy
    docs = {k: sorted(v.values(), key=lambda d: d["time"]) for k, v in by_window.items()}
    times = {k: [d["time"] for d in v] for k, v in docs.items()}
    keys = sorted(docs)
    state = _window_state(collection, keys, times)
    for key in keys:  # a bucket written with another cap: refuse before writing anything
        for b in state.get(key, []):
            if b.get("cap", max_reports) != max_reports:
                raise ValueError(f"{collection.name}: the buckets of {key[0]} at {key[1]:%Y-%m-%d %H:%M} were "
                                 f"written with max_reports={b['cap']}; use one max_reports per collection")
    total = 0
    for key in keys:
        pending = docs[key]
        buckets = state.get(key, [])
        for _ in range(_MAX_RETRIES):
            stored, done = _store_window(collection, key[0], key[1], pending, buckets, max_reports)
            total += stored
            if done:
                break
            buckets = _window_state(collection, [key], {key: times[key]}).get(key, [])
        else:  # pragma: no cover - needs a writer that never stops
            raise RuntimeError(f"{collection.name}: could not store {key[0]}'s reports of {key[1]}: "
                               f"the window kept changing under {_MAX_RETRIES} attempts")
    return total


def track(collection: Any, icao24: str, start: _dt.datetime, end: _dt.datetime) -> list[dict[str, Any]]:
    """The reports of ``icao24`` with ``start <= time < end``, in time order, each as it was given
    (introduced in notebook 08). One aggregation: the buckets of the hours that overlap the range,
    on the ``(icao24, start, n)`` index, each trimmed on the server to the reports in the range."""
    if not isinstance(icao24, str) or not icao24:
        raise ValueError(f"icao24 must be a non-empty string, not {icao24!r}")
    for name, t in (("start", start), ("end", end)):
        if not isinstance(t, _dt.datetime) or t.tzinfo is not None:
            raise TypeError(f"{name} must be a naive UTC datetime, not {t!r}")
    if end <= start:
        return []
    in_range = {"$and": [{"$gte": ["$$this.time", start]}, {"$lt": ["$$this.time", end]}]}
    pipeline = [{"$match": {"icao24": icao24, "start": {"$gte": window_start(start), "$lt": end}}},
                {"$project": {"_id": 0, "reports": {"$filter": {"input": "$reports", "cond": in_range}}}}]
    out = [{"icao24": icao24, **r} for b in collection.aggregate(pipeline) for r in b["reports"]]
    return sorted(out, key=lambda r: r["time"])
