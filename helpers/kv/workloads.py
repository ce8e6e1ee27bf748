"""Six ADS-B workloads, each written for MongoDB and for Redis (notebook 07).

Every workload is written twice, ``mongo_*`` on a pymongo database and ``redis_*`` on the workbook's
Redis keys (:class:`helpers.kv.redis_backend.KeySpace`), over the same real reports: the ADS-B sample of
``datasets/adsb_switzerland.csv.gz`` (loaded as ``adsb_reports``), replayed in arrival order up to
:data:`NOW`, 12:00 UTC, the "now" of every question. The notebook runs both sides, asserts that the
answers are equal (:func:`same`) and shows their costs side by side.

=====  ====================================  ===================================================
 W      question                              Redis structure / MongoDB shape
=====  ====================================  ===================================================
 1      latest position of an aircraft        hash ``pos:<icao24>`` / ``kv_latest`` doc (computed
                                              pattern: one upsert keeps the latest position and
                                              per-aircraft counters), or a sorted query
 2      its last N reports                    list ``last:<icao24>`` (LPUSH + LTRIM) / indexed query
 3      busiest aircraft of the last hour     sorted set per minute ``busy:<minute>`` / a counter
                                              document per minute (``kv_minutes``), or ``$group``
 4      aircraft near an airport              geo set ``geo:latest`` / ``$geoNear`` on ``2dsphere``
 5      a cache with expiry, cache-aside      ``SET ... PX`` / a TTL index, both before MongoDB's
                                              ``$group`` summary; or ``kv_latest``'s counters
 6      reports above an altitude, one        hashes ``rpt:<id>`` + hand index ``alt:<airline>``
        airline                               / a compound index
=====  ====================================  ===================================================
"""
from __future__ import annotations

import calendar
import datetime as _dt
import functools
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from pymongo import UpdateOne
from pymongo.errors import DuplicateKeyError

from .. import counting
from ..aerodata import airline_of_callsign, distance_km
from ..capabilities import probe
from ..datasets import datasets_dir, evenly_spaced, lesson_scale, read_rows, verify_file
from ..safety import check_copies, fresh_collection, workbook_collection
from . import redis_backend

__all__ = ["NOW", "SAMPLE_AIRCRAFT", "LAST_N", "WINDOW", "RECENT", "RADIUS_KM", "AIRPORT", "BATCH", "REPORTS", "LATEST", "CACHE", "MINUTES", "FIELDS", "report_id", "feed", "newest_per_aircraft", "airport", "distance_km", "mongo_setup", "mongo_store_reports", "mongo_store_latest", "mongo_store_busy", "redis_store_latest", "redis_store_last_n", "redis_store_busy", "redis_store_geo", "redis_evict_stale", "redis_store_records", "mongo_latest", "mongo_latest_sorted", "redis_latest", "mongo_last_n", "redis_last_n", "mongo_busiest", "mongo_busiest_precomputed", "redis_busiest", "minute_keys", "mongo_near", "redis_near", "probe_geo", "summary", "summary_precomputed", "redis_cached_summary", "mongo_cached_summary", "read_sequence", "staleness", "mongo_above", "redis_above", "same", "same_near", "Both", "run_both", "write_costs", "median_ms", "timing_columns", "redis_memory", "mongo_memory"]

NOW = calendar.timegm((2018, 8, 1, 12, 0, 0))  #: "now" of every question: the replay stops here
LAST_N = 10  #: workload 2: how many recent reports
WINDOW = 3600  #: workload 3: the last hour, in seconds
RECENT = 600  #: workload 4: an aircraft counts as "there" if heard in the last 10 minutes
RADIUS_KM = 50  #: workload 4: "near" an airport
AIRPORT = "LSZH"  #: workload 4: Zurich
BATCH = 1_000  #: reports per pipeline (Redis) or per bulk write (MongoDB): one round trip each
REPORTS, LATEST, CACHE, MINUTES = "kv_reports", "kv_latest", "kv_cache", "kv_minutes"
#: a report's fields and their types (Redis keeps text; these types bring the values back)
FIELDS: dict[str, type] = {"icao24": str, "callsign": str, "airline": str, "ts": int, "lat": float,
                           "lon": float, "altitude": float, "groundspeed": float, "track": float,
                           "vertical_rate": float}
#: the aircraft of the "small" sample of ``helpers.load_dataset("adsb_reports")`` (notebook 04)
SAMPLE_AIRCRAFT = 100
_QUERY_BATCH = 100_000  # first batch of a query: one round trip while the answer fits in 16 MiB
_BUSY_TTL = 2 * WINDOW  # a minute's counts are kept two hours, then Redis expires them


# ------------------------------------------------------------------------------------------
# The data: real reports, in arrival order
# ------------------------------------------------------------------------------------------
def report_id(icao24: str, ts: int) -> str:
    """``"4b1815:1533117600"``: aircraft and second, the same key in both stores (and in ``adsb_reports``)."""
    return f"{icao24}:{ts}"


#: the columns of ``adsb_switzerland.csv.gz`` a report needs (all present in the shipped file)
_ADSB_FIELDS = {"timestamp": (int, True, "ts"), "icao24": (str, True, "icao24"),
                "callsign": (str, False, "callsign"), "lat": (float, True, "lat"), "lon": (float, True, "lon"),
                "altitude": (float, True, "altitude"), "groundspeed": (float, False, "groundspeed"),
                "track": (float, False, "track"), "vertical_rate": (float, False, "vertical_rate")}


@functools.lru_cache(maxsize=2)
def _all_reports(folder: str) -> tuple[dict[str, Any], ...]:
    from pathlib import Path

    rows = [row for _, row in read_rows(verify_file(Path(folder), "adsb_switzerland.csv.gz"), _ADSB_FIELDS)]
    return tuple(sorted(rows, key=lambda r: (r["ts"], r["icao24"])))


def feed(*, until: int = NOW, start: int | None = None, scale: str | int | None = None) -> list[dict[str, Any]]:
    """The real ADS-B reports of ``datasets/adsb_switzerland.csv.gz`` from ``start`` up to, not
    including, ``until`` (UTC epoch seconds), in arrival order (time, then aircraft): the replay.

    ``scale`` picks the aircraft as ``helpers.load_dataset("adsb_reports", ...)`` does (evenly spaced
    over the sorted addresses; default ``helpers.lesson_scale("small")``: the 100 aircraft of notebook
    04). Each report: ``id``, ``icao24``, ``callsign`` (when sent), ``airline`` (from the callsign, as
    in notebook 04), ``ts``, position, altitude, speed, track, vertical rate. The file is checked
    (checksum, then every row) by the workbook's loader; a bad file raises ``DatasetError``.
    """

    rows = _all_reports(str(datasets_dir()))
    scale = lesson_scale("small") if scale is None else scale
    n = SAMPLE_AIRCRAFT if scale == "small" else None if scale == "full" else int(scale)
    # evenly spaced over the sorted addresses, as helpers.load_dataset picks them
    chosen = {r["icao24"] for r in rows} if n is None else evenly_spaced((r["icao24"] for r in rows), n)
    out = []
    for row in rows:
        if row["icao24"] not in chosen or row["ts"] >= until or (start is not None and row["ts"] < start):
            continue
        r = {"id": report_id(row["icao24"], row["ts"]), "icao24": row["icao24"]}
        if row.get("callsign"):
            r["callsign"] = row["callsign"]
        r["airline"] = airline_of_callsign(row.get("callsign"))
        r.update({k: row[k] for k in FIELDS if k in row and k not in r})
        out.append(r)
    return out


@functools.lru_cache(maxsize=8)
def airport(icao: str = AIRPORT) -> dict[str, Any]:
    """``{"icao", "name", "lat", "lon"}`` of an airport, from the shipped ``airports.csv.gz`` (checked)."""

    fields = {"icao": (str, True, "icao"), "name": (str, True, "name"),
              "lat": (float, True, "lat"), "lon": (float, True, "lon")}
    for _, row in read_rows(verify_file(datasets_dir(), "airports.csv.gz"), fields):
        if row["icao"] == icao:
            return row
    raise ValueError(f"airport: {icao!r} is not in datasets/airports.csv.gz; use an ICAO code such as 'LSZH'")


def _chunks(items: Sequence[Any], size: int = BATCH) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _doc(r: dict[str, Any]) -> dict[str, Any]:
    return {"_id": r["id"], **{k: v for k, v in r.items() if k != "id"}}


def _report(doc: dict[str, Any]) -> dict[str, Any]:
    """A MongoDB document or a Redis hash back to the report shape (types from :data:`FIELDS`)."""
    out: dict[str, Any] = {}
    rid = doc.get("_id", doc.get("id"))
    if rid is not None and ":" in str(rid):
        out["id"] = str(rid)
    for k, kind in FIELDS.items():
        if doc.get(k) is not None:
            out[k] = kind(doc[k])
    if "id" not in out and "icao24" in out and "ts" in out:
        out["id"] = report_id(out["icao24"], out["ts"])
    return out


# ------------------------------------------------------------------------------------------
# Writes: what storing the reports costs, per workload
# ------------------------------------------------------------------------------------------
def mongo_setup(db: Any) -> dict[str, list[str]]:
    """Empty ``kv_reports``, ``kv_latest``, ``kv_cache`` (the workbook's own) and create their indexes.

    ``kv_reports``: ``{icao24: 1, ts: -1}`` (workloads 1, 2, 5), ``{ts: 1}`` (3), ``{airline: 1,
    altitude: 1}`` (6). ``kv_latest``: ``{loc: "2dsphere"}`` (4). ``kv_cache``: a TTL index on
    ``expireAt`` (5). ``kv_minutes`` (3, precomputed; ``_id`` is the minute): a TTL index on ``expireAt``
    (old minutes go, as Redis expires its minute keys). Returns the index names per collection.
    """
    out = {}
    for name in (REPORTS, LATEST, CACHE, MINUTES):  # names of the workbook's own: refused if somebody else's
        workbook_collection(db, name, create=False)
    for name in (REPORTS, LATEST, CACHE, MINUTES):  # dropped and made anew, recorded by their new UUIDs
        fresh_collection(db, name)
    out[REPORTS] = [db[REPORTS].create_index([("icao24", 1), ("ts", -1)]),
                    db[REPORTS].create_index([("ts", 1)]),
                    db[REPORTS].create_index([("airline", 1), ("altitude", 1)])]
    out[LATEST] = [db[LATEST].create_index([("loc", "2dsphere")])]
    out[CACHE] = [db[CACHE].create_index([("expireAt", 1)], expireAfterSeconds=0)]
    out[MINUTES] = [db[MINUTES].create_index([("expireAt", 1)], expireAfterSeconds=0)]
    return out


def mongo_store_reports(db: Any, reports: Sequence[dict[str, Any]]) -> int:
    """Insert every report as a document of ``kv_reports``: ``insert_many`` per :data:`BATCH`.

    One write serves workloads 2, 3, 5 and 6: the server keeps the three secondary indexes itself.
    """
    for chunk in _chunks(reports):
        db[REPORTS].insert_many([_doc(r) for r in chunk], ordered=True)
    return len(reports)


def _latest_update(newest: dict[str, Any], batch: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The computed pattern's update of one aircraft for one batch: its newest report's fields (``$set``),
    and the counters every summary needs (``$inc`` reports, ``$min`` first time, ``$max`` highest
    altitude), from all of the aircraft's reports in the batch."""
    mine = [r for r in batch if r["icao24"] == newest["icao24"]]
    latest = {k: v for k, v in _doc(newest).items() if k != "_id"}
    return {"$set": {**latest, "report": newest["id"],
                     "loc": {"type": "Point", "coordinates": [newest["lon"], newest["lat"]]}},
            "$inc": {"reports": len(mine)}, "$min": {"first_ts": min(r["ts"] for r in mine)},
            "$max": {"max_altitude": max(r["altitude"] for r in mine)}}


def newest_per_aircraft(batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest report of each aircraft in ``batch`` (arrival order): all that "latest" needs.

    A batch of :data:`BATCH` reports holds several reports of most aircraft; both stores write the
    latest position once per aircraft per batch, not once per report.
    """
    newest: dict[str, dict[str, Any]] = {}
    for r in batch:
        if r["icao24"] not in newest or r["ts"] >= newest[r["icao24"]]["ts"]:
            newest[r["icao24"]] = r
    return sorted(newest.values(), key=lambda r: r["icao24"])


def mongo_store_latest(db: Any, reports: Sequence[dict[str, Any]]) -> int:
    """The computed pattern: one document per aircraft in ``kv_latest`` (workloads 1, 4 and 5) holds
    its latest position *and* its counters (reports, first time, highest altitude), kept by the same
    upsert. Per batch of :data:`BATCH` reports, one ``bulk_write`` of an ``UpdateOne`` upsert per
    aircraft (``$set`` of its newest report, ``$inc``/``$min``/``$max`` of the counters).
    Returns the upserts sent."""
    sent = 0
    for chunk in _chunks(reports):
        newest = newest_per_aircraft(chunk)
        db[LATEST].bulk_write([UpdateOne({"_id": r["icao24"]}, _latest_update(r, chunk), upsert=True)
                               for r in newest], ordered=True)
        sent += len(newest)
    return sent


def _per_minute(batch: Sequence[dict[str, Any]]) -> dict[tuple[int, str], int]:
    """Reports per (minute, aircraft) in ``batch``, in first-seen order."""
    counts: dict[tuple[int, str], int] = {}
    for r in batch:
        key = (_minute(r["ts"]), r["icao24"])
        counts[key] = counts.get(key, 0) + 1
    return counts


def mongo_store_busy(db: Any, reports: Sequence[dict[str, Any]]) -> int:
    """Workload 3, precomputed: one counter document per minute in ``kv_minutes`` (``_id``: the minute),
    ``{counts: {<icao24>: reports}}``, as Redis keeps one sorted set per minute. Per batch of
    :data:`BATCH` reports, one ``bulk_write`` with one upsert per minute the batch touched, whose
    ``$inc`` adds every aircraft's count at once (Redis needs one ``ZINCRBY`` per aircraft). Each
    upsert also pushes ``expireAt`` to two hours from now, as ``EXPIRE`` does for a Redis minute key,
    and a TTL index removes the minute after that. Returns the upserts sent."""
    sent = 0
    for chunk in _chunks(reports):
        expire = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=_BUSY_TTL)
        per_minute: dict[int, dict[str, int]] = {}
        for (minute, icao24), n in _per_minute(chunk).items():
            per_minute.setdefault(minute, {})[f"counts.{icao24}"] = n
        db[MINUTES].bulk_write([UpdateOne({"_id": minute}, {"$inc": inc, "$max": {"expireAt": expire}}, upsert=True)
                                for minute, inc in per_minute.items()], ordered=False)
        sent += len(per_minute)
    return sent


def _hash(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in FIELDS if k in r}


def _pipelined(keys: Any, reports: Sequence[dict[str, Any]], per_report: Callable[[Any, dict[str, Any]], None],
               newest_only: bool = False) -> int:
    """One pipeline (one round trip) per :data:`BATCH` reports; returns the reports written."""
    sent = 0
    for chunk in _chunks(reports):
        chunk = newest_per_aircraft(chunk) if newest_only else chunk
        pipe = keys.client.pipeline(transaction=False)
        for r in chunk:
            per_report(pipe, r)
        pipe.execute()
        sent += len(chunk)
    return sent


def redis_store_latest(keys: Any, reports: Sequence[dict[str, Any]]) -> int:
    """Workload 1: ``HSET pos:<icao24>`` with every field of the aircraft's newest report, once per
    aircraft per batch (as :func:`mongo_store_latest`). Returns the reports written."""
    return _pipelined(keys, reports, lambda p, r: p.hset(keys.key("pos", r["icao24"]), mapping=_hash(r)),
                      newest_only=True)


def _json(r: dict[str, Any]) -> str:
    return json.dumps(r, separators=(",", ":"), sort_keys=True)


def _by(batch: Sequence[dict[str, Any]], field: str) -> dict[Any, list[dict[str, Any]]]:
    """The reports of ``batch`` grouped by ``field``, each group in arrival order."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in batch:
        groups.setdefault(r[field], []).append(r)
    return groups


def redis_store_last_n(keys: Any, reports: Sequence[dict[str, Any]], n: int = LAST_N) -> int:
    """Workload 2: per batch of :data:`BATCH` reports and per aircraft, one ``LPUSH last:<icao24>`` of
    its newest ``n`` reports of the batch (as JSON, oldest pushed first, so the newest ends first:
    ``LPUSH`` takes several values), then ``LTRIM 0 n-1``: newest first, ``n`` kept. Batched as
    MongoDB's writes are; a feed that sends one report at a time sends both commands for every report.
    Returns the reports replayed."""
    sent = 0
    for chunk in _chunks(reports):
        pipe = keys.client.pipeline(transaction=False)
        for icao24, mine in _by(chunk, "icao24").items():
            k = keys.key("last", icao24)
            pipe.lpush(k, *(_json(r) for r in mine[-n:]))
            pipe.ltrim(k, 0, n - 1)
        pipe.execute()
        sent += len(chunk)
    return sent


def _minute(ts: int) -> int:
    return ts - ts % 60


def redis_store_busy(keys: Any, reports: Sequence[dict[str, Any]]) -> int:
    """Workload 3: one sorted set of report counts per minute, ``busy:<minute>``: per batch, one
    ``ZINCRBY busy:<minute> <n> <icao24>`` per (minute, aircraft) the batch touched, and one
    ``EXPIRE`` (two hours) of each minute it touched: Redis drops old minutes by itself. One pipeline
    per :data:`BATCH` reports. Returns the reports counted."""
    for chunk in _chunks(reports):
        pipe = keys.client.pipeline(transaction=False)
        minutes = []
        for (minute, icao24), n in _per_minute(chunk).items():
            k = keys.key("busy", minute)
            pipe.zincrby(k, n, icao24)
            if k not in minutes:
                minutes.append(k)
        for k in minutes:
            pipe.expire(k, _BUSY_TTL)
        pipe.execute()
    return len(reports)


def redis_store_geo(keys: Any, reports: Sequence[dict[str, Any]]) -> int:
    """Workload 4: ``GEOADD geo:latest <lon> <lat> <icao24>`` (moves the aircraft) and
    ``ZADD seen <ts> <icao24>`` (when it was last heard, for :func:`redis_evict_stale`), once per
    aircraft per batch, from its newest report."""
    def per(p: Any, r: dict[str, Any]) -> None:
        p.geoadd(keys.key("geo", "latest"), (r["lon"], r["lat"], r["icao24"]))
        p.zadd(keys.key("seen"), {r["icao24"]: r["ts"]})
    return _pipelined(keys, reports, per, newest_only=True)


def redis_evict_stale(keys: Any, now: int = NOW, recent: int = RECENT) -> list[str]:
    """The job a tracker runs every few seconds: drop aircraft not heard since ``now - recent`` from
    the geo set (a GEO set indexes position only; anything else is maintained by hand). A geo set *is*
    a sorted set (its scores are geohashes) and Redis has no ``GEODEL``: ``ZREM`` removes a member.
    Two round trips: read the stale members, then remove them. Returns them, sorted."""
    stale = keys.client.zrangebyscore(keys.key("seen"), "-inf", f"({now - recent}")
    if stale:
        pipe = keys.client.pipeline(transaction=False)
        pipe.zrem(keys.key("geo", "latest"), *stale)
        pipe.zrem(keys.key("seen"), *stale)
        pipe.execute()
    return sorted(stale)


def redis_store_records(keys: Any, reports: Sequence[dict[str, Any]]) -> int:
    """Workload 6: the report itself (``HSET rpt:<id>``, one per report) and a hand-maintained index on
    altitude per airline: per batch of :data:`BATCH` reports, one ``ZADD alt:<airline>`` of all the
    airline's reports in the batch (``ZADD`` takes several score-member pairs). Every further question
    by attribute needs another such index, written by the application with every report. Returns the
    reports replayed."""
    sent = 0
    for chunk in _chunks(reports):
        pipe = keys.client.pipeline(transaction=False)
        for r in chunk:
            pipe.hset(keys.key("rpt", r["id"]), mapping=_hash(r))
        for airline, mine in _by(chunk, "airline").items():
            pipe.zadd(keys.key("alt", airline), {r["id"]: r["altitude"] for r in mine})
        pipe.execute()
        sent += len(chunk)
    return sent


# ------------------------------------------------------------------------------------------
# Workload 1: latest position
# ------------------------------------------------------------------------------------------
def mongo_latest(db: Any, icao24: str) -> dict[str, Any] | None:
    """The upserted document of ``kv_latest``: ``find_one({_id: icao24})``."""
    doc = db[LATEST].find_one({"_id": icao24})
    return None if doc is None else _report({**doc, "_id": doc["report"]})


def mongo_latest_sorted(db: Any, icao24: str) -> dict[str, Any] | None:
    """No extra write: the newest report by the ``{icao24: 1, ts: -1}`` index (sort, limit 1)."""
    doc = db[REPORTS].find_one({"icao24": icao24}, sort=[("ts", -1)])
    return None if doc is None else _report(doc)


def redis_latest(keys: Any, icao24: str) -> dict[str, Any] | None:
    """``HGETALL pos:<icao24>``: one command."""
    h = keys.client.hgetall(keys.key("pos", icao24))
    return _report(h) if h else None


# ------------------------------------------------------------------------------------------
# Workload 2: the last N reports
# ------------------------------------------------------------------------------------------
def mongo_last_n(db: Any, icao24: str, n: int = LAST_N) -> list[dict[str, Any]]:
    """``find({icao24}).sort({ts: -1}).limit(n)`` on the ``{icao24: 1, ts: -1}`` index; newest first."""
    return [_report(d) for d in db[REPORTS].find({"icao24": icao24}).sort("ts", -1).limit(n)]


def redis_last_n(keys: Any, icao24: str, n: int = LAST_N) -> list[dict[str, Any]]:
    """``LRANGE last:<icao24> 0 n-1``: the trimmed list, newest first."""
    return [_report(json.loads(s)) for s in keys.client.lrange(keys.key("last", icao24), 0, n - 1)]


# ------------------------------------------------------------------------------------------
# Workload 3: busiest aircraft of the last hour
# ------------------------------------------------------------------------------------------
def minute_keys(keys: Any, now: int = NOW, window: int = WINDOW) -> list[str]:
    """The per-minute keys of ``[now - window, now)`` (``now`` on a minute: exactly window/60 keys)."""
    return [keys.key("busy", m) for m in range(_minute(now - window), now, 60)]


def mongo_busiest(db: Any, now: int = NOW, window: int = WINDOW, top: int = 10) -> list[tuple[str, int]]:
    """Reports per aircraft in ``[now - window, now)``, most first, as ``(icao24, reports)``.

    Ties are ordered by ``icao24`` descending, the order Redis gives equal scores in ``ZREVRANGE``,
    so the two answers can be compared element by element.
    """
    pipeline = [{"$match": {"ts": {"$gte": now - window, "$lt": now}}},
                {"$group": {"_id": "$icao24", "reports": {"$sum": 1}}},
                {"$sort": {"reports": -1, "_id": -1}}, {"$limit": top}]
    return [(d["_id"], d["reports"]) for d in db[REPORTS].aggregate(pipeline)]


def mongo_busiest_precomputed(db: Any, now: int = NOW, window: int = WINDOW, top: int = 10
                              ) -> list[tuple[str, int]]:
    """The same answer from the per-minute counter documents of ``kv_minutes`` (:func:`mongo_store_busy`):
    ``$match`` the window's minutes, turn each minute's ``counts`` into (aircraft, reports) pairs
    (``$objectToArray``, ``$unwind``), ``$group`` by aircraft, ``$sort``, ``$limit``: the work grows with
    minutes times aircraft, not with reports, as ``ZUNIONSTORE`` over Redis's minute sets."""
    pipeline = [{"$match": {"_id": {"$gte": _minute(now - window), "$lt": now}}},
                {"$project": {"counts": {"$objectToArray": "$counts"}}}, {"$unwind": "$counts"},
                {"$group": {"_id": "$counts.k", "reports": {"$sum": "$counts.v"}}},
                {"$sort": {"reports": -1, "_id": -1}}, {"$limit": top}]
    return [(d["_id"], d["reports"]) for d in db[MINUTES].aggregate(pipeline)]


def redis_busiest(keys: Any, now: int = NOW, window: int = WINDOW, top: int = 10) -> list[tuple[str, int]]:
    """One pipeline (one round trip): ``ZUNIONSTORE`` the minutes of the window into a scratch key,
    ``ZREVRANGE 0 top-1 WITHSCORES``, ``DEL`` the scratch key."""
    scratch = keys.key("busy", "window")
    pipe = keys.client.pipeline(transaction=False)
    pipe.zunionstore(scratch, minute_keys(keys, now, window))
    pipe.zrevrange(scratch, 0, top - 1, withscores=True)
    pipe.delete(scratch)
    _, ranked, _ = pipe.execute()
    return [(m, int(s)) for m, s in ranked]


# ------------------------------------------------------------------------------------------
# Workload 4: aircraft near an airport
# ------------------------------------------------------------------------------------------
def mongo_near(db: Any, lon: float, lat: float, radius_km: float = RADIUS_KM, *, since: int = NOW - RECENT
               ) -> list[tuple[str, float]]:
    """``$geoNear`` on ``kv_latest`` (its ``2dsphere`` index): aircraft heard since ``since`` within
    ``radius_km``, nearest first, as ``(icao24, km)``.

    Why ``$geoNear``: it returns documents nearest first with their distance on every engine the
    workbook runs (a real MongoDB, SecantusDB, mongomock-ng), where ``$near`` is not nearest-first on
    SecantusDB and ``$geoWithin``/``$centerSphere`` fails on mongomock-ng (see :func:`probe_geo`).
    """
    pipeline = [{"$geoNear": {"near": {"type": "Point", "coordinates": [lon, lat]}, "distanceField": "dist_m",
                              "maxDistance": radius_km * 1000, "query": {"ts": {"$gte": since}},
                              "spherical": True}},
                {"$project": {"_id": 1, "dist_m": 1}}]
    return [(d["_id"], d["dist_m"] / 1000) for d in db[LATEST].aggregate(pipeline)]


def redis_near(keys: Any, lon: float, lat: float, radius_km: float = RADIUS_KM) -> list[tuple[str, float]]:
    """``GEOSEARCH geo:latest FROMLONLAT lon lat BYRADIUS r km ASC WITHDIST``: nearest first."""
    got = keys.client.geosearch(keys.key("geo", "latest"), longitude=lon, latitude=lat, radius=radius_km,
                                unit="km", sort="ASC", withdist=True)
    return [(m, float(d)) for m, d in got]


def probe_geo(db: Any) -> dict[str, bool]:
    """What this MongoDB engine's geo operators do: nearest-first order of ``$near`` and whether
    ``$geoWithin`` with ``$centerSphere`` runs (the declared capabilities ``near_sorted`` and
    ``geo_center_sphere`` of :mod:`helpers.capabilities`, their probes run here), and nearest-first
    order of ``$geoNear`` (probed here on four points 0, 7.5, 15 and 22.6 km east of a centre, in a
    scratch collection dropped after)."""
    from pymongo.errors import OperationFailure

    declared = probe(db, is_mock=False, names=("near_sorted", "geo_center_sphere"))
    out = {"$near nearest-first": bool(declared["near_sorted"])}
    with check_copies(db, "kv_probe_geo") as (name,):  # one per call, refused if somebody else's, dropped after
        coll = fresh_collection(db, name)
        coll.insert_many([{"_id": i, "loc": {"type": "Point", "coordinates": [8.5 + 0.1 * d, 47.4]}}
                          for i, d in enumerate([2, 0, 1, 3])])
        coll.create_index([("loc", "2dsphere")])
        try:
            out["$geoNear nearest-first"] = [d["_id"] for d in coll.aggregate([{"$geoNear": {
                "near": {"type": "Point", "coordinates": [8.5, 47.4]}, "distanceField": "d", "maxDistance": 25_000,
                "spherical": True}}])] == [1, 2, 0, 3]
        except (OperationFailure, NotImplementedError):
            out["$geoNear nearest-first"] = False
    out["$centerSphere runs"] = bool(declared["geo_center_sphere"])
    return out


# ------------------------------------------------------------------------------------------
# Workload 5: a cache with expiry, cache-aside in front of MongoDB
# ------------------------------------------------------------------------------------------
def summary(db: Any, icao24: str) -> dict[str, Any]:
    """The value we cache: an aircraft's reports so far, first and last time, highest altitude.

    Computed on the server at read time: ``$match`` on the ``{icao24: 1, ts: -1}`` index, then one
    ``$group``; one document comes back, but the server reads every report of the aircraft, so the
    work grows with its history: the kind of read worth caching (or precomputing, :func:`summary_precomputed`).
    """
    pipeline = [{"$match": {"icao24": icao24}},
                {"$group": {"_id": None, "reports": {"$sum": 1}, "first_ts": {"$min": "$ts"},
                            "last_ts": {"$max": "$ts"}, "max_altitude": {"$max": "$altitude"}}}]
    docs = list(db[REPORTS].aggregate(pipeline))
    if not docs:
        return {"icao24": icao24, "reports": 0}
    d = docs[0]
    return {"icao24": icao24, "reports": d["reports"], "first_ts": d["first_ts"], "last_ts": d["last_ts"],
            "max_altitude": d["max_altitude"]}


def summary_precomputed(db: Any, icao24: str) -> dict[str, Any]:
    """The same summary from the counters the computed pattern keeps in ``kv_latest``
    (:func:`mongo_store_latest`): one ``find_one`` by ``_id``, never stale, no cache to expire."""
    d = db[LATEST].find_one({"_id": icao24}, {"reports": 1, "first_ts": 1, "ts": 1, "max_altitude": 1})
    if d is None:
        return {"icao24": icao24, "reports": 0}
    return {"icao24": icao24, "reports": d["reports"], "first_ts": d["first_ts"], "last_ts": d["ts"],
            "max_altitude": d["max_altitude"]}


def redis_cached_summary(keys: Any, db: Any, icao24: str, ttl_s: float) -> dict[str, Any]:
    """Cache-aside with Redis: ``GET``; on a miss, :func:`summary` from MongoDB, then
    ``SET ... PX <ttl>``. Redis never returns an expired key."""
    k = keys.key("cache", "summary", icao24)
    hit = keys.client.get(k)
    if hit is not None:
        return json.loads(hit)
    value = summary(db, icao24)
    keys.client.set(k, json.dumps(value), px=max(1, int(ttl_s * 1000)))
    return value


def mongo_cached_summary(db: Any, icao24: str, ttl_s: float) -> dict[str, Any]:
    """Cache-aside with a MongoDB collection and a TTL index: the read must test ``expireAt`` itself,
    because the TTL monitor deletes expired documents only when it runs (every 60 seconds)."""
    hit = db[CACHE].find_one({"_id": icao24, "expireAt": {"$gt": _dt.datetime.now(_dt.timezone.utc)}})
    if hit is not None:
        return hit["value"]
    value = summary(db, icao24)
    expire = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=ttl_s)  # from the store, as SET ... PX
    for attempt in (1, 2):
        try:
            db[CACHE].replace_one({"_id": icao24}, {"value": value, "expireAt": expire}, upsert=True)
            break
        except DuplicateKeyError:
            # SecantusDB's TTL sweeper deleted the expired document between the upsert's match and its
            # insert (docs/ENGINES.md). A real MongoDB 4.2+ retries an upsert on an _id equality itself;
            # an application may retry it, as the manual says, and the retry finds the key settled
            if attempt == 2:
                raise
    return value


def read_sequence(icao24s: Sequence[str], n: int, seed: int = 7) -> list[str]:
    """``n`` reads of aircraft summaries, skewed as real traffic is (a few aircraft are asked for
    often): weights 1/rank over ``icao24s`` in the given order. Seeded: the same reads every run."""
    rng = random.Random(seed)  # the same read sequence on every run and machine
    return rng.choices(list(icao24s), weights=[1 / (i + 1) for i in range(len(icao24s))], k=n)


def staleness(read: Callable[[], dict[str, Any]], write: Callable[[], Any], is_fresh: Callable[[dict[str, Any]], bool],
              timeout_s: float, poll_s: float = 0.05) -> dict[str, Any]:
    """Write, then read every ``poll_s`` until the read shows the write: the staleness window.

    Returns the reads that were stale and the seconds until the first fresh one (None if it never
    came within ``timeout_s``). Seconds depend on the machine; they are shown, never asserted.
    """
    read()  # fill the cache
    write()
    t0 = time.perf_counter()
    stale = 0
    while time.perf_counter() - t0 < timeout_s:
        if is_fresh(read()):
            return {"stale reads": stale, "seconds stale": time.perf_counter() - t0}
        stale += 1
        time.sleep(poll_s)
    return {"stale reads": stale, "seconds stale": None}


# ------------------------------------------------------------------------------------------
# Workload 6: a question by a secondary attribute
# ------------------------------------------------------------------------------------------
def mongo_above(db: Any, airline: str, altitude: float) -> list[dict[str, Any]]:
    """``find({airline, altitude: {$gt: altitude}})`` on the ``{airline: 1, altitude: 1}`` index,
    in (altitude, id) order."""
    cur = db[REPORTS].find({"airline": airline, "altitude": {"$gt": altitude}}, batch_size=_QUERY_BATCH)
    return [_report(d) for d in cur.sort([("altitude", 1), ("_id", 1)])]


def redis_above(keys: Any, airline: str, altitude: float) -> list[dict[str, Any]]:
    """Two round trips: ``ZRANGEBYSCORE alt:<airline> (altitude +inf`` for the ids (score, then id
    order), then one pipeline of ``HGETALL rpt:<id>`` per id."""
    ids = keys.client.zrangebyscore(keys.key("alt", airline), f"({altitude}", "+inf")
    pipe = keys.client.pipeline(transaction=False)
    for rid in ids:
        pipe.hgetall(keys.key("rpt", rid))
    return [_report(h) for h in pipe.execute()] if ids else []


# ------------------------------------------------------------------------------------------
# Comparing, timing, memory
# ------------------------------------------------------------------------------------------
def same(mongo_answer: Any, redis_answer: Any, what: str) -> bool:
    """True when both stores gave the same answer; else ``AssertionError`` saying where they differ."""
    if mongo_answer == redis_answer:
        return True
    if isinstance(mongo_answer, list) and isinstance(redis_answer, list):
        if len(mongo_answer) != len(redis_answer):
            raise AssertionError(f"{what}: MongoDB gave {len(mongo_answer)} items, Redis {len(redis_answer)}")
        i = next(i for i, (a, b) in enumerate(zip(mongo_answer, redis_answer)) if a != b)
        raise AssertionError(f"{what}: item {i} differs: MongoDB {mongo_answer[i]!r}, Redis {redis_answer[i]!r}")
    raise AssertionError(f"{what}: MongoDB {mongo_answer!r}, Redis {redis_answer!r}")


def same_near(mongo_answer: list[tuple[str, float]], redis_answer: list[tuple[str, float]], what: str,
              rel: float = 0.005) -> bool:
    """The same aircraft in the same order, distances within ``rel`` (0.5%): the two stores use
    different Earth radii (MongoDB 6,378.1 km, Redis 6,372.797560856 km: 0.083% apart) and Redis rounds
    positions to its 52-bit geohash (about 0.6 m)."""
    same([a for a, _ in mongo_answer], [a for a, _ in redis_answer], what)
    for (a, dm), (_, dr) in zip(mongo_answer, redis_answer):
        if abs(dm - dr) > rel * max(dm, dr, 0.1):
            raise AssertionError(f"{what}: {a}: MongoDB {dm:.3f} km, Redis {dr:.3f} km")
    return True


@dataclass
class Both:
    """One question answered in both stores: the answers (checked equal) and what each cost."""

    workload: str
    mongo_answer: Any
    redis_answer: Any
    mongo_cost: Any  # helpers.counting.CommandCounter
    redis_cost: Any  # helpers.kv.redis_backend.RedisCost
    mongo_fn: Callable[[], Any] = field(repr=False)
    redis_fn: Callable[[], Any] = field(repr=False)

    def row(self) -> dict[str, Any]:
        """The deterministic costs, one table row (the same on every engine of each store)."""
        m, r = self.mongo_cost, self.redis_cost
        return {"workload": self.workload, "MongoDB round trips": m.round_trips,
                "MongoDB docs returned": m.docs_returned, "MongoDB bytes (BSON)": m.bytes_returned,
                "Redis round trips": r.round_trips, "Redis commands": r.commands,
                "Redis bytes (RESP)": r.bytes_received}

    def summary(self, bytes_: bool = True) -> str:
        """One line: equal answers, round trips and commands (and bytes) of each store."""
        m, r = self.mongo_cost, self.redis_cost
        mb = f", {m.bytes_returned:,} bytes of documents" if bytes_ else ""
        rb = f", {r.bytes_received:,} bytes of replies" if bytes_ else ""
        return (f"{self.workload}: same answer in both stores. MongoDB: {m.round_trips} round trip(s){mb} | "
                f"Redis: {r.round_trips} round trip(s), {r.commands} command(s){rb}")


def write_costs(workload: str, mongo_cost: Any, redis_cost: Any) -> dict[str, Any]:
    """One row of the write table: what storing the replay cost each store for ``workload``."""
    m, r = mongo_cost, redis_cost
    return {"workload": workload, "MongoDB round trips": m.round_trips if m else 0,
            "MongoDB documents written": m.docs_written if m else 0,
            "Redis round trips": r.round_trips if r else 0, "Redis commands": r.commands if r else 0,
            "Redis bytes sent": r.bytes_sent if r else 0}


def run_both(workload: str, mongo_fn: Callable[[], Any], redis_fn: Callable[[], Any],
             equal: Callable[[Any, Any, str], bool] = same) -> Both:
    """Answer ``workload`` in MongoDB and in Redis, counting each side, and assert equal answers."""
    with counting.count_commands() as mongo_cost:
        mongo_answer = mongo_fn()
    with redis_backend.count_commands() as redis_cost:
        redis_answer = redis_fn()
    equal(mongo_answer, redis_answer, workload)
    return Both(workload, mongo_answer, redis_answer, mongo_cost, redis_cost, mongo_fn, redis_fn)


def timing_columns(mongo_engine: str, redis_engine: str) -> tuple[str, str, str]:
    """Column names for wall times that name both engines, and a line naming the machine."""
    import os
    import platform

    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    return f"MongoDB ms ({mongo_engine})", f"Redis ms ({redis_engine})", f"timed on this machine: {machine}"


def median_ms(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Median wall time of ``repeat`` runs, in milliseconds (shown, never asserted)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def redis_memory(keys: Any, pattern: str) -> dict[str, Any]:
    """Keys under ``pattern``, their total ``MEMORY USAGE`` (bytes, exact: ``SAMPLES 0``) and the
    ``OBJECT ENCODING`` of the first; None where the engine has no such command (see the probe)."""
    import redis as _redis

    names = keys.keys(pattern)
    out: dict[str, Any] = {"keys": len(names), "bytes": None, "encoding": None}
    if not names:
        return out
    try:
        total = 0
        for chunk in _chunks(names):
            pipe = keys.client.pipeline(transaction=False)
            for k in chunk:
                pipe.execute_command("MEMORY", "USAGE", k, "SAMPLES", 0)
            total += sum(int(x or 0) for x in pipe.execute())
        out["bytes"] = total
    except _redis.ResponseError:
        pass
    try:
        out["encoding"] = keys.client.object("encoding", names[0])
    except _redis.ResponseError:
        pass
    return out


def mongo_memory(db: Any, name: str) -> dict[str, Any]:
    """Documents, their BSON bytes (exact, client-side, any engine) and, where the engine reports
    ``collStats``, its data size and total index size (engine-specific numbers)."""
    import bson

    sizes = [len(bson.encode(d)) for d in db[name].find({}, batch_size=_QUERY_BATCH)]
    out: dict[str, Any] = {"docs": len(sizes), "bson bytes": sum(sizes), "index bytes": None}
    try:
        stats = db.command("collStats", name)
        out["index bytes"] = int(stats.get("totalIndexSize")) if stats.get("totalIndexSize") else None
    except Exception:  # mongomock-ng has no collStats; a server may refuse it
        pass
    return out
