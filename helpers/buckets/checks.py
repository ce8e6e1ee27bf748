"""Checkers of notebook 08 (position reports over time: documents, buckets, time series)."""
from __future__ import annotations

from typing import Any

from ..counting import count_commands
from ..exercises import exercise, shown
from .pattern import BATCH_SIZE, window_start

#: at most this many bytes returned per bucket: room for its summary fields, none for a report body
_SUMMARY_BYTES = 200


def _trips(cost: Any) -> str:
    return f"{cost.round_trips} round trip{'' if cost.round_trips == 1 else 's'} ({', '.join(sorted(set(cost.commands)))})"


@exercise("8.1", hint="def hourly(icao24): one aggregate on bucketed: $match the aircraft, $group by $start with "
                      "$sum of $count, $min of $minAltitude and $max of $maxAltitude; never $unwind the reports")
def hourly_from_summaries(answer: Any, *, buckets: Any, icao24: str) -> str | None:
    """The learner's ``hourly(icao24)``, run counting its commands: ``{hour: (reports, lowest altitude,
    highest altitude)}`` as the reports themselves give it, in one round trip, with no report sent (at
    most :data:`_SUMMARY_BYTES` returned per bucket of the aircraft). Any form that does so is right."""
    if not callable(answer):
        return "hourly should be a function: def hourly(icao24): ... returning {hour: (reports, lowest, highest)}"
    want: dict[Any, list] = {}
    n_buckets = 0
    for b in buckets.find({"icao24": icao24}, {"reports": 1}, batch_size=BATCH_SIZE):
        n_buckets += 1
        for r in b["reports"]:
            w = want.setdefault(window_start(r["time"]), [0, []])
            w[0] += 1
            if isinstance(r.get("altitude"), (int, float)):
                w[1].append(r["altitude"])
    want_rows = {h: (n, min(a) if a else None, max(a) if a else None) for h, (n, a) in want.items()}
    if not want_rows:
        return f"there are no buckets of {icao24}: run the notebook from the top"
    with count_commands() as cost:
        got = answer(icao24)
    if not isinstance(got, dict):
        return f"hourly('{icao24}') returned {shown(got)}: return a dict {{hour: (reports, lowest, highest)}}"
    if set(got) != set(want_rows):
        return f"expected the {len(want_rows)} hours with reports of {icao24}, got {len(got)} keys"
    wrong = sorted(h for h in want_rows if not isinstance(got[h], (tuple, list)) or tuple(got[h]) != want_rows[h])
    if wrong:
        return f"{len(wrong)} hours differ, e.g. {wrong[0]:%H:%M}: expected {want_rows[wrong[0]]}, got {shown(got[wrong[0]])}"
    if cost.round_trips != 1:
        return f"it took {_trips(cost)}: one aggregate is enough"
    if cost.bytes_returned > _SUMMARY_BYTES * n_buckets:
        return (f"the server sent {cost.bytes_returned:,} B for {n_buckets} buckets: that is reports, not summaries; "
                f"let the server add up count, minAltitude and maxAltitude and send one document per hour")
    return None


@exercise("8.2", hint="def recent_map(since): one aggregate on bucketed: $match the buckets whose last is at or after "
                      "since, then $sort on (icao24, last) newest first and $group with $first, as bk.latest_positions does")
def recent_map(answer: Any, *, buckets: Any, since: Any) -> str | None:
    """The learner's ``recent_map(since)``, run counting its commands: ``{icao24: latest report}`` of
    every aircraft heard at or after ``since`` (the report as stored in its bucket, ``icao24`` optional),
    in one round trip, with one document returned per such aircraft at most. Any form that does so is right."""
    if not callable(answer):
        return "recent_map should be a function: def recent_map(since): ... returning {icao24: its latest report}"
    want: dict[str, dict] = {}
    for b in buckets.find({"last": {"$gte": since}}, {"icao24": 1, "reports": 1}, batch_size=BATCH_SIZE):
        for r in b["reports"]:
            if r["time"] >= since and (b["icao24"] not in want or r["time"] > want[b["icao24"]]["time"]):
                want[b["icao24"]] = r
    if not want:
        return "no aircraft was heard after since: run the notebook from the top"
    with count_commands() as cost:
        got = answer(since)
    if not isinstance(got, dict):
        return f"recent_map(since) returned {shown(got)}: return a dict {{icao24: its latest report}}"
    if set(got) != set(want):
        return f"expected the {len(want)} aircraft heard since {since:%H:%M}, got {len(got)} keys"
    wrong = sorted(a for a in want if not isinstance(got[a], dict)
                   or {k: v for k, v in got[a].items() if k != "icao24"} != want[a])
    if wrong:
        return f"{len(wrong)} aircraft have another report, e.g. {wrong[0]}: the latest is the one with the greatest time"
    if cost.round_trips != 1:
        return f"it took {_trips(cost)}: one aggregate is enough"
    if cost.docs_returned > len(want):
        return (f"the server sent {cost.docs_returned:,} documents for {len(want)} aircraft: filter on last before "
                f"grouping, so that only the aircraft heard since then come back")
    return None


@exercise("8.3", hint="def home(report): find_one the bucket of report's icao24 and hour whose reports.time holds its "
                      "time, projecting start and n only; return (start, n)")
def straggler_home(answer: Any, *, buckets: Any, report: Any) -> str | None:
    """The learner's ``home(report)``, run counting its commands: ``(start, n)`` of the bucket that holds
    the late ``report`` (the bucket of its hour), in one round trip, one document, no report sent."""
    if not callable(answer):
        return "home should be a function: def home(report): ... returning (start, n)"
    found = buckets.find_one({"icao24": report["icao24"], "reports.time": report["time"]}, {"start": 1, "n": 1})
    if found is None:
        return "the straggler is not stored yet: store it with bk.bucket_reports first"
    if found["start"] != window_start(report["time"]):
        return f"it is in the bucket of {found['start']:%H:%M}, not of its own hour: something is wrong with the store"
    with count_commands() as cost:
        got = answer(report)
    if not isinstance(got, tuple) or tuple(got) != (found["start"], found["n"]):
        return f"home(straggler) returned {shown(got)}: it is in another bucket, or give a pair (start, n)"
    if cost.round_trips != 1 or cost.docs_returned != 1:
        return f"it took {_trips(cost)} and {cost.docs_returned} documents: one find_one is enough"
    if cost.bytes_returned > _SUMMARY_BYTES:
        return (f"the server sent {cost.bytes_returned:,} B: project start and n only, so that the bucket's "
                f"reports stay on the server")
    return None
