"""Position reports in capped buckets (the bucket pattern), safe under several writers (notebook 08).

A bucket holds the reports of one aircraft (``icao24``) in one window of time (``start``, an hour:
:data:`SPAN`), at most ``max_reports`` of them, with summary fields that the same write keeps:
``count``, ``first`` and ``last`` time, ``minAltitude`` and ``maxAltitude`` (and ``cap``, the
``max_reports`` it was opened with: one collection's buckets share one cap). When a window has more
reports than one bucket holds, its buckets are numbered ``n = 0, 1, 2, ...``; a unique index on
``(icao24, start, n)`` makes each number exist once.

How :func:`bucket_reports` stays right with several writers at once, in MongoDB terms:

* only the window's last bucket (the highest ``n``, its *tail*) ever receives reports, and only while
  it has room: a full bucket never changes again;
* one aggregation per call reads, for every window the call touches, each bucket's ``n`` and
  ``count`` and the times it holds between the earliest and latest of the call's times in its hour
  (so every re-send, and few others; never the report bodies);
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

from ..backends import info_of
from ..plans import explain_find
from ..safety import fresh_collection
from ..writes import only_duplicates

__all__ = ["SPAN", "KEY", "BATCH_SIZE", "bucket_reports", "track", "latest_positions", "window_start", "ensure_bucket_index", "DESIGNS", "DOCUMENTS", "BUCKETS", "TIMESERIES", "REPORT_KEY", "timeseries_collection", "ttl_collection", "report_id", "insert_reports", "track_documents", "latest", "hourly_summary", "drop_filter", "drop_range", "drop_plan", "storage", "window_state", "store_in_window", "placement"]

SPAN = _dt.timedelta(hours=1)  #: the time window one bucket covers
KEY = [("icao24", 1), ("start", 1), ("n", 1)]  #: the buckets' unique index (also serves tracks)
#: every read's first batch: more documents than any answer of the lesson's reads (an hour holds at most
#: 7,200 reports at ADS-B's 2 a second), so no read pays a ``getMore`` for the driver's default of 101
BATCH_SIZE = 10_000
_MAX_RETRIES = 1000  # a window re-read this often means something else keeps writing it: give up loudly


def window_start(time: _dt.datetime) -> _dt.datetime:
    """The start of the hour that covers ``time`` (the bucket window it belongs to)."""
    return time.replace(minute=0, second=0, microsecond=0)


_INDEXED: set[tuple[int, str]] = set()  # (client, namespace) whose unique index this process created


def ensure_bucket_index(collection: Any) -> str:
    """Create the unique ``(icao24, start, n)`` index the buckets rely on (a no-op where it exists).
    Create it when you create the collection: :func:`bucket_reports` creates it too, once per
    collection and process, so a forgotten index cannot let two writers open the same bucket. It
    remembers that it did: after dropping the collection, call this again when you recreate it."""
    name = collection.create_index(KEY, unique=True, name="icao24_start_n")
    _INDEXED.add((id(collection.database.client), collection.full_name))
    return name


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


def window_state(collection: Any, keys: list[tuple[str, _dt.datetime]],
                  times: Mapping[tuple[str, _dt.datetime], list[_dt.datetime]]) -> dict:
    """One aggregation: for each (icao24, start) its buckets' n, count, _id, and as ``held`` the times
    they hold between the earliest and the latest given time of their hour, never the report bodies.

    Those are every time a given one can repeat, and few others for a batch in arrival order; a late
    report widens only its own hour's range. The filter has one branch per hour, ``{start: hour,
    icao24: {$in: [...]}}`` (a batch in arrival order spans one or two hours): on a real MongoDB each
    branch scans exactly the windows asked for on the ``(icao24, start, n)`` index (SecantusDB scans
    the collection: docs/ENGINES.md). ``held`` compares each stored time with its hour's two bounds,
    not with every given time. Each window's buckets come in ``n`` order."""
    if not keys:
        return {}
    state: dict = {k: [] for k in keys}
    hours, by_hour, given = _group_by_hour(keys, times)
    branches = [{"start": s, "icao24": {"$in": sorted(by_hour[s])}} for s in hours]  # one branch per hour
    held = _held_between_hour_bounds(hours, given)
    pipeline = [{"$match": {"$or": branches} if len(branches) > 1 else branches[0]},
                {"$project": {"icao24": 1, "start": 1, "n": 1, "count": 1, "cap": 1, "held": held}}]
    return _by_window_in_n_order(state, collection.aggregate(pipeline, batchSize=BATCH_SIZE))


def _group_by_hour(keys: list[tuple[str, _dt.datetime]],
                   times: Mapping[tuple[str, _dt.datetime], list[_dt.datetime]]) -> tuple[list, dict, dict]:
    """The hours of ``keys`` in order, each hour's aircraft, and each hour's given times."""
    by_hour: dict[_dt.datetime, set[str]] = defaultdict(set)
    given: dict[_dt.datetime, list[_dt.datetime]] = defaultdict(list)
    for a, s in keys:
        by_hour[s].add(a)
        given[s] += times.get((a, s), [])
    hours = sorted(by_hour)
    return hours, by_hour, given


def _held_between_hour_bounds(hours: list[_dt.datetime],
                              given: Mapping[_dt.datetime, list[_dt.datetime]]) -> dict[str, Any]:
    """The ``held`` expression of :func:`window_state`: a bucket's stored times between its hour's
    earliest and latest given time (two bounds per hour, a ``$switch`` on ``start`` for several hours)."""
    # each hour's (earliest, latest) given time; an hour given none: an empty range (end before start)
    span = {s: (min(given[s]), max(given[s])) if given[s] else (s + SPAN, s) for s in hours}

    def bound(i: int) -> Any:  # the bucket's hour's earliest (0) or latest (1): a $switch on its start
        if len(hours) == 1:
            return span[hours[0]][i]
        return {"$switch": {"branches": [{"case": {"$eq": ["$start", s]}, "then": span[s][i]}
                                         for s in hours]}}

    in_span = {"$and": [{"$gte": ["$$this.time", "$$lo"]}, {"$lte": ["$$this.time", "$$hi"]}]}
    held = {"$let": {"vars": {"lo": bound(0), "hi": bound(1)},
                     "in": {"$map": {"input": {"$filter": {"input": "$reports", "cond": in_span}},
                                     "in": "$$this.time"}}}}
    return held


def _by_window_in_n_order(state: dict, found: Iterable[dict[str, Any]]) -> dict:
    """``state`` with each bucket ``found`` added to its (icao24, start) window, each window's in ``n``
    order."""
    for b in found:
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


def placement(tail: Mapping[str, Any] | None, new: list[dict[str, Any]],
              max_reports: int) -> tuple[list[dict[str, Any]], list[tuple[int, list[dict[str, Any]]]]]:
    """Where a window's new reports (in time order, none of them held) go: the part that fits in its
    tail (the bucket with the highest ``n``, as last read or written: ``n`` and ``count``) while it
    has room, then new buckets numbered from the tail's ``n + 1`` (``0`` with no tail), each at most
    ``max_reports``. The one placement rule of :func:`store_in_window` and of ``BucketWriter``."""
    to_tail: list[dict[str, Any]] = []
    n = -1
    if tail is not None:
        n, room = tail["n"], max_reports - tail["count"]
        if room > 0:
            to_tail, new = new[:room], new[room:]
    opened = [(n + 1 + k, new[i:i + max_reports]) for k, i in enumerate(range(0, len(new), max_reports))]
    return to_tail, opened


def store_in_window(collection: Any, icao24: str, start: _dt.datetime, docs: list[dict[str, Any]],
                  buckets: list[dict[str, Any]], max_reports: int) -> tuple[int, bool]:
    """Try once to store ``docs`` (in time order) in the window, as ``buckets`` were read: how many
    were stored, and whether the window is done (``False``: someone wrote first, read it again)."""
    held = {t for b in buckets for t in (b.get("held") or [])}
    new = [d for d in docs if d["time"] not in held]
    if not new:
        return 0, True
    tail = buckets[-1] if buckets else None
    to_tail, opened = placement(tail, new, max_reports)
    stored = 0
    if to_tail:
        done = collection.update_one(
            {"_id": tail["_id"], "count": tail["count"]},  # update if current: nobody wrote it since our read
            _push_with_summaries(to_tail))  # the reports, and count, first, last, altitudes: in the same write
        if done.matched_count == 0:
            return 0, False
        stored += len(to_tail)
    for n, part in opened:
        try:  # the unique (icao24, start, n) index refuses bucket n if another writer opened it
            collection.insert_one(_new_bucket(icao24, start, n, max_reports, part))
        except DuplicateKeyError:
            return stored, False  # someone opened bucket n first: read again (what we stored shows as held)
        stored += len(part)
    return stored, True


def _push_with_summaries(part: list[dict[str, Any]]) -> dict[str, Any]:
    """The update that appends ``part`` to a bucket and keeps its summary fields in the same write:
    ``$push`` the reports, ``$inc`` ``count``, ``$min``/``$max`` of ``first``, ``last`` and the altitudes."""
    s = _summary(part)
    return {"$push": {"reports": {"$each": part}}, "$inc": {"count": len(part)},
            "$min": s["min"], "$max": s["max"]}


def _new_bucket(icao24: str, start: _dt.datetime, n: int, max_reports: int,
                part: list[dict[str, Any]]) -> dict[str, Any]:
    """Bucket ``n`` of a window holding ``part``, its summary fields (``count``, ``first``, ``last``,
    the altitudes) and its ``cap``."""
    s = _summary(part)
    return {"icao24": icao24, "start": start, "n": n, "cap": max_reports,
            "count": len(part), **s["min"], **s["max"], "reports": part}


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
    _ensure_bucket_index_once(collection)
    docs, times = _by_window_in_time_order(checked)  # a re-send inside one call: the first copy
    keys = sorted(docs)
    state = window_state(collection, keys, times)
    _refuse_buckets_of_another_cap(collection, keys, state, max_reports)  # before writing anything
    total = 0
    for key in keys:  # store_in_window; someone wrote first: read the window again, try again
        total += _store_reading_again_on_conflict(collection, key, docs, times, state, max_reports)
    return total


def _ensure_bucket_index_once(collection: Any) -> None:
    """:func:`ensure_bucket_index`, once per collection and process."""
    if (id(collection.database.client), collection.full_name) not in _INDEXED:
        ensure_bucket_index(collection)


def _by_window_in_time_order(checked: list[dict[str, Any]]) -> tuple[dict, dict]:
    """The checked reports by (icao24, window start), each window's in time order (a time given twice:
    the first copy), and each window's times."""
    by_window: dict[tuple[str, _dt.datetime], dict[_dt.datetime, dict]] = defaultdict(dict)
    for r in checked:
        key = (r["icao24"], window_start(r["doc"]["time"]))
        by_window[key].setdefault(r["doc"]["time"], r["doc"])  # a re-send inside one call: the first copy
    docs = {k: sorted(v.values(), key=lambda d: d["time"]) for k, v in by_window.items()}
    times = {k: [d["time"] for d in v] for k, v in docs.items()}
    return docs, times


def _refuse_buckets_of_another_cap(collection: Any, keys: list[tuple[str, _dt.datetime]], state: dict,
                                   max_reports: int) -> None:
    """ValueError if a bucket of these windows was written with another ``max_reports``."""
    for key in keys:  # a bucket written with another cap: refuse before writing anything
        for b in state.get(key, []):
            if b.get("cap", max_reports) != max_reports:
                raise ValueError(f"{collection.name}: the buckets of {key[0]} at {key[1]:%Y-%m-%d %H:%M} "
                                 f"were written with max_reports={b['cap']}; "
                                 "use one max_reports per collection")


def _store_reading_again_on_conflict(collection: Any, key: tuple[str, _dt.datetime], docs: dict, times: dict,
                                     state: dict, max_reports: int) -> int:
    """Store one window's reports with :func:`store_in_window`, reading the window again with
    :func:`window_state` each time someone wrote first (at most ``_MAX_RETRIES`` tries, then
    RuntimeError); how many were stored."""
    total = 0
    pending = docs[key]
    buckets = state.get(key, [])
    for _ in range(_MAX_RETRIES):
        stored, done = store_in_window(collection, key[0], key[1], pending, buckets, max_reports)
        total += stored
        if done:
            break
        buckets = window_state(collection, [key], {key: times[key]}).get(key, [])
    else:  # pragma: no cover - needs a writer that never stops
        raise RuntimeError(f"{collection.name}: could not store {key[0]}'s reports of {key[1]}: "
                           f"the window kept changing under {_MAX_RETRIES} attempts")
    return total


def track(collection: Any, icao24: str, start: _dt.datetime, end: _dt.datetime, *,
          batch_size: int = BATCH_SIZE) -> list[dict[str, Any]]:
    """The reports of ``icao24`` with ``start <= time < end``, in time order, each as it was given
    but for ``icao24``, which the caller already has (introduced in notebook 08). One aggregation: the buckets of the hours that overlap the range,
    on the ``(icao24, start, n)`` index, each trimmed on the server to the reports in the range, in
    one first batch of up to ``batch_size`` buckets."""
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
    out = [r for b in collection.aggregate(pipeline, batchSize=batch_size) for r in b["reports"]]
    return sorted(out, key=lambda r: r["time"])


# ---------------------------------------------------------------------------------------------
# the lesson's other two designs, and the workload's reads for each of the three

DOCUMENTS, BUCKETS, TIMESERIES = "one document per report", "buckets", "time series collection"
DESIGNS = (DOCUMENTS, BUCKETS, TIMESERIES)
REPORT_KEY = [("icao24", 1), ("time", 1)]  #: one document per report: the (aircraft, time) index
TIME_KEY = [("time", 1)]  #: one document per report: the recent reports (the map) and a day's drop
START_KEY = [("start", 1)]  #: buckets: the recent buckets (the map) and a day's drop; ``start`` never changes
_EPOCH = _dt.datetime(1970, 1, 1)


#: the largest ``expireAfterSeconds`` the server accepts (a 32-bit signed integer)
MAX_EXPIRE_AFTER_S = 2**31 - 1


def _checked_retention(retention_days: Any, oldest: Any) -> None:
    """Refuse a retention that is not a whole number of days of at least 1 (0 would expire every
    report at once, a negative one is refused by the server), and an ``oldest`` that is not a time."""
    if isinstance(retention_days, bool) or not isinstance(retention_days, int) or retention_days < 1:
        raise ValueError(f"retention_days is a whole number of days, 1 or more, not {retention_days!r}: "
                         "0 or less would have the TTL task delete every report as soon as it is stored")
    if oldest is not None and not isinstance(oldest, _dt.datetime):
        raise TypeError(f"oldest is the oldest time replayed (a datetime, UTC), not {type(oldest).__name__}")


def _age_days(oldest: _dt.datetime | None) -> int:
    """Whole days since ``oldest`` (the oldest time replayed; an aware time is taken in UTC), plus a
    day's margin for a long session; 0 without one: what a TTL's retention is lengthened by so that
    the server keeps replayed data."""
    if oldest is None:
        return 0
    if oldest.tzinfo is not None:
        oldest = oldest.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    age = _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None) - oldest
    return max(0, math.ceil(age / _dt.timedelta(days=1)) + 1)


def ttl_collection(db: Any, name: str, *, design: str, retention_days: int = 30,
                   oldest: _dt.datetime | None = None) -> tuple[Any, int]:
    """A fresh collection of one by-hand design whose time index is a TTL index, and its
    ``expireAfterSeconds``: one document per report keeps :data:`REPORT_KEY` and :data:`TIME_KEY`
    with ``expireAfterSeconds`` the retention (the server's TTL task, every 60 s on a real MongoDB,
    deletes a report once its ``time`` is older); buckets keep the unique :data:`KEY` and
    :data:`START_KEY` with the retention plus an hour (a bucket's reports are at most an hour past its
    ``start``, so each is kept the whole retention). ``oldest`` lengthens the retention by replayed
    data's age, as :func:`timeseries_collection` does. The same indexes as the plain collection's, one
    with an option: an insert writes the same index keys."""
    if design not in (DOCUMENTS, BUCKETS):
        raise ValueError(f"ttl_collection is for the by-hand designs ({DOCUMENTS!r}, {BUCKETS!r}), not {design!r}: "
                         f"a time series collection takes expireAfterSeconds as a collection option")
    _checked_retention(retention_days, oldest)
    seconds = (retention_days + _age_days(oldest)) * 86_400 + (int(SPAN.total_seconds()) if design == BUCKETS else 0)
    if seconds > MAX_EXPIRE_AFTER_S:
        raise ValueError(f"a retention of {retention_days} days (with the replayed data's age) is {seconds:,} s, "
                         f"more than the server's largest expireAfterSeconds, {MAX_EXPIRE_AFTER_S:,}")
    coll = fresh_collection(db, name)  # never somebody else's
    if design == BUCKETS:
        ensure_bucket_index(coll)
        coll.create_index(START_KEY, expireAfterSeconds=seconds)
    else:
        coll.create_index(REPORT_KEY)
        coll.create_index(TIME_KEY, expireAfterSeconds=seconds)
    return coll, seconds


def timeseries_collection(db: Any, name: str, *, caps: Any, retention_days: int = 30,
                          oldest: _dt.datetime | None = None) -> tuple[Any, str]:
    """A time series collection for reports (``timeField`` ``time``, ``metaField`` ``icao24``,
    granularity ``seconds``, ``expireAfterSeconds`` for the retention), and a note saying what the
    engine really made of it, from the probes (``caps.timeseries_option``, ``caps.timeseries_storage``).

    ``expireAfterSeconds`` counts from each report's ``time``, not from its insert: on a real MongoDB
    the TTL task (every 60 s) removes a bucket once all of it is older than the retention. ``oldest``,
    the oldest time you will store when replaying old data (the 2018 sample), lengthens the retention
    by that data's age in whole days, so the server keeps it while you measure; live data needs none.

    Where the engine refuses the option, an ordinary collection stands in; where it stores the
    documents one by one, the ``(icao24, time)`` index a real MongoDB (6.3+) creates by itself for
    ``metaField`` and ``timeField`` is created by hand. Either way the note says so."""

    _checked_retention(retention_days, oldest)
    age_days = _age_days(oldest)
    options = {"timeseries": {"timeField": "time", "metaField": "icao24", "granularity": "seconds"},
               "expireAfterSeconds": (retention_days + age_days) * 86_400}
    coll = fresh_collection(db, name, **(options if caps.timeseries_option else {}))  # never somebody else's
    kept_for = (f"; expireAfterSeconds {retention_days} days plus the replayed data's age ({age_days} days)"
                if age_days and caps.timeseries_option else "")
    if caps.timeseries_storage:
        return coll, "a time series collection (listCollections type 'timeseries')" + kept_for
    coll.create_index(REPORT_KEY, name="icao24_1_time_1")  # a time series collection allows no unique index
    if caps.timeseries_option:
        return coll, ("the engine accepted the timeseries options but stores an ordinary collection (probed): "
                      "documents one by one, no internal buckets, no compression; the (icao24, time) index was "
                      "created by hand, as a real MongoDB (6.3+) does by itself" + kept_for)
    return coll, ("the engine refuses the timeseries option (probed): an ordinary collection with an "
                  "(icao24, time) index stands in; nothing of a time series collection's storage is shown")


def report_id(icao24: str, time: _dt.datetime) -> str:
    """One document per report: the key made from the report itself, ``icao24:epoch milliseconds``
    (13 digits until the year 2286), so a re-sent report meets the ``_id`` index and is refused."""
    ms = (time - _EPOCH) // _dt.timedelta(milliseconds=1)
    return f"{icao24}:{ms:013d}"


def insert_reports(collection: Any, reports: Iterable[Mapping[str, Any]], *, keyed: bool = True) -> int:
    """One document per report in one unordered ``insert_many``; returns how many were stored.

    ``keyed``: each document's ``_id`` is :func:`report_id`, so a re-send is refused by the ``_id``
    index (duplicate key) and skipped; any other error is raised. ``keyed=False`` (a time series
    collection, where ``_id`` is not unique) lets the driver add an ObjectId: every insert is stored."""
    from pymongo.errors import BulkWriteError

    docs = [{"_id": report_id(r["icao24"], r["time"]), **r} if keyed else dict(r) for r in reports]
    if not docs:
        return 0
    try:
        return len(collection.insert_many(docs, ordered=False).inserted_ids)
    except BulkWriteError as e:
        if not only_duplicates(e):
            raise
        return int(e.details.get("nInserted", 0))


def track_documents(collection: Any, icao24: str, start: _dt.datetime, end: _dt.datetime, *,
                    batch_size: int = BATCH_SIZE) -> list[dict]:
    """One aircraft's reports with ``start <= time < end`` from one-document-per-report storage
    (a plain collection or a time series collection), without ``_id`` and ``icao24``, in time order, on the ``(icao24, time)`` index,
    in one first batch of up to ``batch_size`` reports (``0``: the driver's default, 101, then a
    ``getMore`` for the rest: the counter-example of notebook 08)."""
    return list(collection.find({"icao24": icao24, "time": {"$gte": start, "$lt": end}}, {"_id": 0, "icao24": 0},
                                sort=REPORT_KEY, batch_size=batch_size))


def latest(collection: Any, icao24: str, *, design: str, batch_size: int = BATCH_SIZE) -> dict[str, Any] | None:
    """The aircraft's latest report (its last known position), one round trip in every design.
    Buckets: on the unique :data:`KEY` index walked backwards, the newest hour (the hour of the latest
    report: no bucket starts later), then, in a ``$lookup`` (``localField`` with a ``pipeline``, MongoDB
    5.0+), that hour's bucket with the highest ``last``: not always its highest ``n``, since a late
    report goes to the hour's tail after an earlier bucket filled with later reports. The bucket is
    trimmed on the server to that report, in a first batch of up to ``batch_size`` (a batch of exactly
    one can leave the cursor open, and the driver then sends a ``getMore`` that finds nothing); the others: one ``find``
    sorted by time, newest first, limit 1 (``find_one``), on the ``(icao24, time)`` index read backwards."""
    if design == BUCKETS:
        got = list(collection.aggregate([
            {"$match": {"icao24": icao24}}, {"$sort": {"icao24": -1, "start": -1, "n": -1}}, {"$limit": 1},
            {"$project": {"_id": 0, "start": 1}},
            {"$lookup": {"from": collection.name, "localField": "start", "foreignField": "start", "as": "newest",
                         "pipeline": [{"$match": {"icao24": icao24}}, {"$sort": {"last": -1}}, {"$limit": 1},
                                      {"$project": {"_id": 0, "report": {"$filter": {
                                          "input": "$reports", "cond": {"$eq": ["$$this.time", "$last"]}}}}}]}},
            {"$unwind": "$newest"}, {"$replaceRoot": {"newRoot": "$newest"}}], batchSize=batch_size))
        report = got[0]["report"] if got else []
        return {"icao24": icao24, **report[0]} if report else None
    _design(design)
    return collection.find_one({"icao24": icao24}, {"_id": 0}, sort=[("icao24", 1), ("time", -1)])


def latest_positions(collection: Any, *, design: str, since: _dt.datetime | None = None,
                     batch_size: int = BATCH_SIZE, previous: Any = None) -> list[dict[str, Any]]:
    """The live map: the latest report of every aircraft heard at or after ``since``, in ``icao24``
    order, in one aggregate (introduced in notebook 08). A ``$match`` on recent time first, served by
    :data:`TIME_KEY` (buckets: ``last`` at or after ``since``, bounded by :data:`START_KEY`, since a
    bucket's reports are of its own hour), then a ``$sort`` newest first and a ``$group`` that keeps
    each aircraft's first; a bucket is then trimmed on the server to its latest report. With ``since``,
    the buckets' collection needs the :data:`START_KEY` index (hinted: SecantusDB plans a filter on two
    fields as a collection scan). ``since=None``: every aircraft the collection keeps (the counter-example: under 30 days' retention,
    every aircraft heard in 30 days). ``previous``: the day before's collection, where each day has
    its own (retention by dropping a day's collection whole), read in the same aggregate with a
    ``$unionWith`` that applies the same ``$match`` there: one round trip for a map across midnight."""
    if design == BUCKETS:
        match = [] if since is None else [{"$match": {"start": {"$gt": since - SPAN}, "last": {"$gte": since}}}]
        pipeline = match + _union(previous, match) + [{"$sort": {"icao24": 1, "last": -1}},
                    {"$group": {"_id": "$icao24", "last": {"$first": "$last"}, "reports": {"$first": "$reports"}}},
                    {"$replaceRoot": {"newRoot": {"$mergeObjects": [{"icao24": "$_id"}, {"$arrayElemAt": [{"$filter": {
                        "input": "$reports", "cond": {"$eq": ["$$this.time", "$last"]}}}, 0]}]}}}]
        info = info_of(collection)  # a hint where the engine has indexes (the mock has none: a no-op there)
        hint = {"hint": dict(START_KEY)} if since is not None and (info is None or info.caps.indexes) else {}
        found = collection.aggregate(pipeline, batchSize=batch_size, **hint)
    else:
        _design(design)
        match = [] if since is None else [{"$match": {"time": {"$gte": since}}}]
        pipeline = match + _union(previous, match) + [{"$sort": {"icao24": -1, "time": -1}},
                            {"$group": {"_id": "$icao24", "report": {"$first": "$$ROOT"}}},
                            {"$replaceRoot": {"newRoot": "$report"}}, {"$project": {"_id": 0}}]
        found = collection.aggregate(pipeline, batchSize=batch_size)
    return sorted(found, key=lambda r: r["icao24"])


def _union(previous: Any, match: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``$unionWith`` of :func:`latest_positions`: ``previous``'s documents through the same ``$match``."""
    if previous is None:
        return []
    return [{"$unionWith": {"coll": previous.name, "pipeline": match}}]


def hourly_summary(collection: Any, icao24: str, start: _dt.datetime, end: _dt.datetime, *,
                   design: str, batch_size: int = BATCH_SIZE) -> list[dict]:
    """One aircraft's hours in ``[start, end)``: reports, lowest and highest altitude, on the same
    index as its track. Buckets add up their summary fields (no report is grouped); the other
    designs group the aircraft's reports by ``$dateTrunc`` hour."""
    if design == BUCKETS:
        pipeline = [{"$match": {"icao24": icao24, "start": {"$gte": start, "$lt": end}}},
                    {"$group": {"_id": "$start", "reports": {"$sum": "$count"},
                                "minAltitude": {"$min": "$minAltitude"}, "maxAltitude": {"$max": "$maxAltitude"}}}]
    else:
        _design(design)
        pipeline = [{"$match": {"icao24": icao24, "time": {"$gte": start, "$lt": end}}},
                    {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "hour"}}, "reports": {"$sum": 1},
                                "minAltitude": {"$min": "$altitude"}, "maxAltitude": {"$max": "$altitude"}}}]
    rows = [{"hour": g["_id"], "reports": g["reports"],
             "minAltitude": g.get("minAltitude"), "maxAltitude": g.get("maxAltitude")}
            for g in collection.aggregate(pipeline, batchSize=batch_size)]
    return sorted(rows, key=lambda r: r["hour"])


def drop_filter(start: _dt.datetime, end: _dt.datetime, *, design: str) -> dict[str, Any]:
    """The filter of :func:`drop_range`: whole buckets by their ``start``, one document per report by
    its ``time``. Buckets are dropped by whole hours: ``start`` and ``end`` off the hour raise ValueError."""
    if design == BUCKETS:
        if window_start(start) != start or window_start(end) != end:
            raise ValueError("buckets drop whole hours: start and end must be on the hour")
        return {"start": {"$gte": start, "$lt": end}}
    _design(design)
    return {"time": {"$gte": start, "$lt": end}}


def drop_range(collection: Any, start: _dt.datetime, end: _dt.datetime, *, design: str) -> int:
    """Delete the reports with ``start <= time < end`` (whole hours); returns the documents deleted:
    whole buckets for the bucket design, one document per report otherwise."""
    return collection.delete_many(drop_filter(start, end, design=design)).deleted_count


def drop_plan(collection: Any, start: _dt.datetime, end: _dt.datetime, *, design: str) -> dict[str, Any]:
    """How the server finds what :func:`drop_range` would delete, deleting nothing: ``plan`` (the
    stages, outermost first), ``keys examined``, ``docs examined``, the documents it ``would delete``
    and the ``documents held`` (those included), for one document per report or for buckets.

    The drop's filter is explained as a ``find``: the server plans a delete's filter as it plans a
    query's, and every engine the workbook runs on explains a ``find`` without side effects (a real
    MongoDB can also explain the ``delete`` command itself, without deleting). With an index led by
    ``time`` (``start`` for buckets: notebook 08's ``TIME_KEY`` and ``START_KEY``, which also serve the
    map) the plan is an index scan of the range; without one, a collection scan that examines every
    document kept. It reads the collection three
    times (pymongo's explain runs the plan, then two counts), so it is for the lesson's sample, not for
    a production collection. Refused for a time series collection (a real MongoDB's plan counts its
    internal buckets, not reports: no unit to compare), for a collection whose engine was not probed (not
    opened by :func:`helpers.backends.connect`), and where the engine's explain is not faithful (probed,
    ``caps.explain``: the mock reports a scan of only what matches); an explain without counters is an
    error, never a zero.
    """

    if design == TIMESERIES or collection.options().get("timeseries"):
        raise ValueError("drop_plan explains the designs without a TTL (one document per report, buckets): a "
                         "time series collection's plan counts internal buckets, not reports")
    info = info_of(collection)
    if info is None:
        raise ValueError(f"{collection.name!r} was not opened by helpers.backends.connect, so its engine's explain was "
                         "never probed: open it with helpers.get_db() or helpers.backends.connect()")
    if not info.caps.explain:
        raise ValueError(f"{info.engine} cannot explain faithfully (probed: caps.explain is False): no plan "
                         "is shown; run on the embedded backend or a real MongoDB (docs/ENGINES.md)")
    query = drop_filter(start, end, design=design)
    stages, keys, docs = explain_find(collection, query)
    return {"plan": stages, "keys examined": keys, "docs examined": docs,
            "would delete": collection.count_documents(query), "documents held": collection.count_documents({})}


def _design(design: str) -> None:
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, not {design!r}")


def storage(collection: Any) -> dict[str, Any]:
    """What a collection holds: documents, their BSON bytes (as the documents are read back), index
    keys (one per document per index: none of these indexes is multikey), and the index bytes where
    the engine reports them (``collStats``; ``None`` where it does not)."""
    sizes = [len(bson.encode(d)) for d in collection.find({}, batch_size=100_000)]
    indexes = collection.index_information()
    try:
        stats = collection.database.command("collStats", collection.name)
        index_bytes = int(stats["totalIndexSize"]) if "totalIndexSize" in stats else None
    except Exception:  # noqa: BLE001 - an engine without collStats (the mock): not reported
        index_bytes = None
    return {"documents": len(sizes), "BSON bytes": sum(sizes), "indexes": len(indexes),
            "index keys": len(sizes) * len(indexes), "index bytes": index_bytes}
