"""Checkers of notebook 07 (MongoDB and Redis on the same workloads)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from .. import kv
from ..exercises import exercise, shown

_HOUR = 3600


def _counts_10_to_11(db: Any) -> Counter:
    """Reports per aircraft between 10:00 and 11:00 UTC, counted here from ``kv_reports``."""

    start = kv.NOW - 2 * _HOUR
    return Counter(d["icao24"] for d in db[kv.REPORTS].find({"ts": {"$gte": start, "$lt": start + _HOUR}},
                                                             {"icao24": 1}))


def _top5_problem(pairs: list[tuple[Any, Any]], counts: Counter, source: str) -> str | None:
    """What is wrong with ``pairs`` as the 5 busiest aircraft (ties at the cut may be any of the tied)."""
    want = min(5, len(counts))  # fewer aircraft than 5 in that hour (a small WORKBOOK_SCALE): all of them
    if len(pairs) != want:
        return f"{source}: expected {want} aircraft, got {len(pairs)}"
    for icao24, n in pairs:
        if counts.get(icao24) != n:
            return f"{source}: {shown(icao24)} sent {counts.get(icao24, 0)} reports in that hour, not {shown(n)}"
    got = [n for _, n in pairs]
    if got != sorted(got, reverse=True):
        return f"{source}: the aircraft are not ordered by reports, most first"
    if len({a for a, _ in pairs}) != want:
        return f"{source}: an aircraft appears twice"
    best = sorted(counts.values(), reverse=True)[:want]
    if got != best:
        return f"{source}: these are not the 5 busiest aircraft of 10:00-11:00 (compare your window)"
    return None


@exercise("7.1", hint="kv.minute_keys(keys, kv.NOW - 3600, 3600) names the 60 minutes from 10:00; "
                      "ZUNIONSTORE them into a scratch key, then ZREVRANGE 0 4 WITHSCORES (one pipeline)")
def busiest_10_to_11(answer: Any, *, db: Any) -> str | None:
    """5 ``(icao24, reports)`` pairs, recounted from the MongoDB reports of that hour."""
    if not isinstance(answer, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2
                                                         for p in answer):
        return "give a list of (icao24, reports) pairs"
    return _top5_problem([(a, n) for a, n in answer], _counts_10_to_11(db), "your list")


@exercise("7.2", hint="in one pipeline, ZADD the key {report id: groundspeed} for each report whose "
                      "airline is AIRLINE (one ZADD per report, as a feed sending one report at a time "
                      "would), inside `with redis_backend.count_commands() as cost:`; use "
                      "keys.key('speed', AIRLINE) as the key")
def speed_index(answer: Any, *, db: Any, redis: Any, airline: str) -> str | None:
    """``(key, commands)``: the sorted set holds exactly the airline's reports, scored by ground speed
    (from MongoDB), and it took one ``ZADD`` per report."""

    if not (isinstance(answer, (list, tuple)) and len(answer) == 2):
        return "give (key, commands): the sorted set's full name and the number of commands it took"
    answer, commands = answer
    if not isinstance(answer, str) or not answer:
        return "give the full name of the sorted set (a string, e.g. keys.key('speed', AIRLINE))"
    if redis.type(answer) != "zset":
        return f"{shown(answer)} is not a sorted set in this Redis (type {shown(redis.type(answer))})"
    want = {d["_id"]: d["groundspeed"] for d in db[kv.REPORTS].find({"airline": airline, "ts": {"$lt": kv.NOW}},
                                                                     {"groundspeed": 1})}
    got = dict(redis.zrange(answer, 0, -1, withscores=True))
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    if missing:
        return f"{len(missing)} reports of {airline} are missing, e.g. {shown(missing[0])}"
    if extra:
        return f"{len(extra)} members are not reports of {airline}, e.g. {shown(extra[0])}"
    wrong = sorted(k for k in want if abs(float(got[k]) - want[k]) > 1e-9)
    if wrong:
        return f"{len(wrong)} scores are not the report's groundspeed, e.g. {shown(wrong[0])}"
    if isinstance(commands, bool) or not isinstance(commands, int) or commands != len(want):
        return ("the sorted set is right, but that is not the number of commands a ZADD per report takes: "
                "count them with redis_backend.count_commands() around the pipeline (cost.commands)")
    return None


@exercise("7.3", hint="$match ts in [kv.NOW - 7200, kv.NOW - 3600), $group by $icao24 with "
                      "{'$sum': 1} as reports, $sort reports descending, $limit 5")
def busiest_pipeline(answer: Any, *, db: Any, keys: Any) -> str | None:
    """Run the pipeline on ``kv_reports``; compare with the Redis per-minute counts of that hour."""

    if not isinstance(answer, list) or not all(isinstance(s, dict) for s in answer):
        return "give a list of aggregation stages (each a dict)"
    got = list(db[kv.REPORTS].aggregate(answer))
    if any(set(d) != {"_id", "reports"} for d in got):
        return "each document should have exactly the fields _id and reports"
    counts: Counter = Counter()
    pipe = keys.client.pipeline(transaction=False)
    for k in kv.minute_keys(keys, kv.NOW - _HOUR, _HOUR):
        pipe.zrange(k, 0, -1, withscores=True)
    for members in pipe.execute():
        for icao24, n in members:
            counts[icao24] += int(n)
    return _top5_problem([(d["_id"], d["reports"]) for d in got], counts, "your pipeline")
