"""Checkers of notebook 08 (position reports over time: documents, buckets, time series).

Each check runs the learner's function on its own fresh copy of the buckets, under a random name,
with one report the check adds at random (stored by :func:`bucket_reports`, so the summary fields
agree): a right function sees that report, an answer computed beforehand does not. The copy is
dropped after the check, and only if it is the copy this call made."""
from __future__ import annotations

import contextlib
import datetime as _dt
import random
from typing import Any, Callable, Iterator

from ..counting import count_commands
from ..exercises import PAUSED, exercise, shown
from ..safety import check_copies, workbook_collection
from .pattern import BATCH_SIZE, SPAN, _new_bucket, bucket_reports, window_start

#: at most this many bytes returned per bucket: room for its summary fields, none for a report body
_SUMMARY_BYTES = 200
#: the prefix of each check's copy of the buckets: one random name per call, dropped after it
_COPY = "exercise_8_buckets"
_GIVEN = "the check gives your function a copy of the buckets with a report added: read the collection it is given"


def _trips(cost: Any) -> str:
    return f"{cost.round_trips} round trip{'' if cost.round_trips == 1 else 's'} ({', '.join(sorted(set(cost.commands)))})"


@contextlib.contextmanager
def _copy_with(buckets: Any, new_report: Callable[[list, random.Random], dict],
               busy: Callable[[list, dict], tuple[str, Any]]) -> Iterator[tuple[Any, dict]]:
    """A fresh copy of ``buckets`` (its documents and indexes) under a random name, with the report
    ``new_report(buckets' documents, rng)`` stored in it; yields ``(copy, that report)``. The window
    ``busy(documents, report)`` (an ``(icao24, start)``) holds two buckets or more in the copy: if it
    holds one, every window is stored again, in time order, at the cap that splits it in two with room
    left in the second (a function that reads one bucket an hour is then wrong). A collection of that name that the
    workbook did not create is refused before anything is written or dropped."""
    db = buckets.database
    with check_copies(db, _COPY) as (name,):  # one per call: two kernels never share (or drop) it
        copy = workbook_collection(db, name)
        for index in buckets.list_indexes():
            if index["name"] != "_id_":
                copy.create_index(list(dict(index["key"]).items()), name=index["name"],
                                  unique=bool(index.get("unique")))
        docs = list(buckets.find({}, batch_size=BATCH_SIZE))
        rng = random.Random()
        report = new_report(docs, rng)
        cap = max([b.get("cap", 200) for b in docs] or [200])
        key = busy(docs, report)
        window = [b for b in docs if (b["icao24"], b["start"]) == key]
        if len(window) == 1 and window[0]["count"] >= 2:  # one bucket: every window again, at about half its count
            cap = window[0]["count"] // 2 + (window[0]["count"] > 2)  # its last bucket keeps room from 3 reports
            docs = _rebucketed(docs, cap)
        if docs:
            copy.insert_many(docs)
        bucket_reports(copy, [report], max_reports=cap)
        yield copy, report


def _rebucketed(docs: list, cap: int) -> list:
    """``docs``' reports stored again: each window's in time order, in buckets of at most ``cap``."""
    windows: dict[tuple[str, Any], list] = {}
    for b in docs:
        windows.setdefault((b["icao24"], b["start"]), []).extend(b["reports"])
    out = []
    for (icao24, start), held in sorted(windows.items()):
        held.sort(key=lambda r: r["time"])
        out += [_new_bucket(icao24, start, n, cap, held[i:i + cap]) for n, i in enumerate(range(0, len(held), cap))]
    return out


def _add(copy: Any, report: dict) -> None:
    """Store ``report`` in the check's copy, at the copy's cap."""
    bucket_reports(copy, [report], max_reports=copy.find_one({}, {"cap": 1}).get("cap", 200))


def _busiest(docs: list, icao24s: Any) -> tuple[str, Any]:
    """The window of one of ``icao24s`` with the most reports."""
    counts: dict[tuple[str, Any], int] = {}
    for b in docs:
        if b["icao24"] in icao24s:
            counts[(b["icao24"], b["start"])] = counts.get((b["icao24"], b["start"]), 0) + b["count"]
    return max(sorted(counts), key=lambda k: counts[k])


@exercise("8.1", hint="def hourly(buckets, icao24): one aggregate on buckets: $match the aircraft, $group by $start "
                      "with $sum of $count, $min of $minAltitude and $max of $maxAltitude; never $unwind the reports")
def hourly_from_summaries(answer: Any, *, buckets: Any, icao24: str) -> str | None:
    """The learner's ``hourly(buckets, icao24)``, run on the check's copy (a report of ``icao24`` added
    in a new hour), counting its commands: ``{hour: (reports, lowest altitude, highest altitude)}`` as
    the reports themselves give it, in one round trip, with no report sent (at most
    :data:`_SUMMARY_BYTES` returned per bucket of the aircraft). Any form that does so is right."""
    if not callable(answer):
        return "hourly should be a function: def hourly(buckets, icao24): ... returning {hour: (reports, lowest, highest)}"
    if buckets.count_documents({"icao24": icao24}) == 0:
        return f"there are no buckets of {icao24}: run the notebook from the top"

    def added(docs: list, rng: random.Random) -> dict:  # a new hour of the aircraft, 1 to 5 after its last
        last = max(b["start"] for b in docs if b["icao24"] == icao24)
        t = last + rng.randint(1, 5) * SPAN + _dt.timedelta(milliseconds=rng.randrange(3_600_000))
        return {"icao24": icao24, "time": t, "altitude": float(rng.randint(100, 45_000))}

    with _copy_with(buckets, added, lambda docs, _: _busiest(docs, {icao24})) as (copy, _):  # an hour of 2+ buckets
        want: dict[Any, list] = {}
        n_buckets = 0
        for b in copy.find({"icao24": icao24}, {"reports": 1}, batch_size=BATCH_SIZE):
            n_buckets += 1
            for r in b["reports"]:
                w = want.setdefault(window_start(r["time"]), [0, []])
                w[0] += 1
                if isinstance(r.get("altitude"), (int, float)):
                    w[1].append(r["altitude"])
        want_rows = {h: (n, min(a) if a else None, max(a) if a else None) for h, (n, a) in want.items()}
        with count_commands() as cost:
            got = answer(copy, icao24)
        if cost.paused_inside:
            return PAUSED
    if not isinstance(got, dict):
        return f"hourly(buckets, '{icao24}') returned {shown(got)}: return a dict {{hour: (reports, lowest, highest)}}"
    if set(got) != set(want_rows):
        return f"expected the {len(want_rows)} hours with reports of {icao24}, got {len(got)} keys ({_GIVEN})"
    wrong = sorted(h for h in want_rows if not isinstance(got[h], (tuple, list)) or tuple(got[h]) != want_rows[h])
    if wrong:
        return f"{len(wrong)} hours differ, e.g. {wrong[0]:%H:%M}: expected {want_rows[wrong[0]]}, got {shown(got[wrong[0]])}"
    if cost.round_trips != 1:
        return f"it took {_trips(cost)}: one aggregate is enough"
    if cost.bytes_returned > _SUMMARY_BYTES * n_buckets:
        return (f"the server sent {cost.bytes_returned:,} B for {n_buckets} buckets: that is reports, not summaries; "
                f"let the server add up count, minAltitude and maxAltitude and send one document per hour")
    return None


@exercise("8.2", hint="def recent_map(buckets, since): one aggregate on buckets: $match the buckets whose last is at "
                      "or after since (and start after since minus an hour), then $sort on (icao24, last) newest first and $group with $first, as "
                      "bk.latest_positions does")
def recent_map(answer: Any, *, buckets: Any, since: Any) -> str | None:
    """The learner's ``recent_map(buckets, since)``, run on the check's copy (an aircraft of the map heard
    once more, after every stored report; another's newest hour in two buckets or more, the newest with a
    late report appended, so its last element is not its latest), counting its commands: ``{icao24: latest report}`` of every
    aircraft heard at or after ``since`` (the report as stored in its bucket, ``icao24`` optional), in
    one round trip, with one document returned per such aircraft at most. Any form that does so is right."""
    if not callable(answer):
        return "recent_map should be a function: def recent_map(buckets, since): ... returning {icao24: its latest report}"
    if buckets.count_documents({"last": {"$gte": since}}) == 0:
        return "no aircraft was heard after since: run the notebook from the top"

    def added(docs: list, rng: random.Random) -> dict:  # an aircraft of the map, heard after every stored report
        t = max(b["last"] for b in docs) + _dt.timedelta(milliseconds=rng.randint(1, 300_000))
        return {"icao24": rng.choice(sorted({b["icao24"] for b in docs if b["last"] >= since})), "time": t,
                "altitude": float(rng.randint(100, 45_000))}

    chosen: list = []

    def newest_of_another(docs: list, report: dict) -> tuple[str, Any]:  # a mapped aircraft's newest hour
        newest: dict[str, Any] = {}
        for b in docs:
            if b["last"] >= since and b["icao24"] != report["icao24"]:
                newest[b["icao24"]] = max(newest.get(b["icao24"], b["start"]), b["start"])
        if not newest:
            return report["icao24"], window_start(report["time"])
        chosen.append(_busiest([b for b in docs if newest.get(b["icao24"]) == b["start"]], set(newest)))
        return chosen[-1]

    with _copy_with(buckets, added, newest_of_another) as (copy, _):
        if chosen:  # a late report, not its newest, appended to that aircraft's newest bucket
            tail = copy.find_one({"icao24": chosen[0][0], "start": chosen[0][1]}, {"reports.time": 1, "last": 1},
                                 sort=[("n", -1)])
            held = {r["time"] for b in copy.find({"icao24": chosen[0][0], "start": chosen[0][1]}, {"reports.time": 1})
                    for r in b["reports"]}
            rng, t = random.Random(), None
            while t is None or t in held:
                t = chosen[0][1] + _dt.timedelta(milliseconds=rng.randrange(
                    max(1, int((tail["last"] - chosen[0][1]).total_seconds() * 1000))))
            if t < tail["last"]:
                _add(copy, {"icao24": chosen[0][0], "time": t, "altitude": float(rng.randint(100, 45_000))})
        want: dict[str, dict] = {}
        for b in copy.find({"last": {"$gte": since}}, {"icao24": 1, "reports": 1}, batch_size=BATCH_SIZE):
            for r in b["reports"]:
                if r["time"] >= since and (b["icao24"] not in want or r["time"] > want[b["icao24"]]["time"]):
                    want[b["icao24"]] = r
        with count_commands() as cost:
            got = answer(copy, since)
        if cost.paused_inside:
            return PAUSED
    if not isinstance(got, dict):
        return f"recent_map(buckets, since) returned {shown(got)}: return a dict {{icao24: its latest report}}"
    if set(got) != set(want):
        return f"expected the {len(want)} aircraft heard since {since:%H:%M}, got {len(got)} keys ({_GIVEN})"
    wrong = sorted(a for a in want if not isinstance(got[a], dict)
                   or {k: v for k, v in got[a].items() if k != "icao24"} != want[a])
    if wrong:
        return (f"{len(wrong)} aircraft have another report, e.g. {wrong[0]}: the latest is the one with the greatest "
                f"time ({_GIVEN})")
    if cost.round_trips != 1:
        return f"it took {_trips(cost)}: one aggregate is enough"
    if cost.docs_returned > len(want):
        return (f"the server sent {cost.docs_returned:,} documents for {len(want)} aircraft: filter on last before "
                f"grouping, so that only the aircraft heard since then come back")
    return None


@exercise("8.3", hint="def home(buckets, report): find_one the bucket of report's icao24 and hour whose reports.time "
                      "holds its time, projecting start and n only; return (start, n)")
def straggler_home(answer: Any, *, buckets: Any, report: Any) -> str | None:
    """The learner's ``home(buckets, report)``, run on the check's copy counting its commands, for the
    late ``report`` (stored by the learner), for a late report the check adds in another stored hour (of
    two buckets or more in the copy) and for a report of that hour's bucket 0:
    ``(start, n)`` of the bucket that holds it (the bucket of its hour), in one round trip, one
    document, no report sent."""
    if not callable(answer):
        return "home should be a function: def home(buckets, report): ... returning (start, n)"
    found = buckets.find_one({"icao24": report["icao24"], "reports.time": report["time"]}, {"start": 1, "n": 1})
    if found is None:
        return "the straggler is not stored yet: store it with bk.bucket_reports first"
    if found["start"] != window_start(report["time"]):
        return f"it is in the bucket of {found['start']:%H:%M}, not of its own hour: something is wrong with the store"

    def added(docs: list, rng: random.Random) -> dict:  # late, in another stored hour: another (start, n)
        others = [b for b in docs if b["start"] != found["start"]] or docs
        b = rng.choice([b for b in others if b["count"] >= 10] or [max(others, key=lambda b: b["count"])])
        held = {r["time"] for d in docs if (d["icao24"], d["start"]) == (b["icao24"], b["start"]) for r in d["reports"]}
        t = None
        while t is None or t in held:  # a time of its hour that the aircraft has not reported
            t = b["start"] + _dt.timedelta(milliseconds=rng.randrange(3_600_000))
        return {"icao24": b["icao24"], "time": t, "altitude": float(rng.randint(100, 45_000))}

    with _copy_with(buckets, added, lambda _, r: (r["icao24"], window_start(r["time"]))) as (copy, late):
        first = copy.find_one({"icao24": late["icao24"], "start": window_start(late["time"])}, {"reports": 1},
                              sort=[("n", 1)])  # a report of bucket 0 of the late report's hour of 2+ buckets
        early = {"icao24": late["icao24"], **random.Random().choice(first["reports"])}
        for r in (report, late, early):
            there = copy.find_one({"icao24": r["icao24"], "reports.time": r["time"]}, {"start": 1, "n": 1})
            with count_commands() as cost:
                got = answer(copy, r)
            if cost.paused_inside:
                return PAUSED
            if not isinstance(got, tuple) or tuple(got) != (there["start"], there["n"]):
                which = "the straggler" if r is report else f"a report of {r['icao24']} at {r['time']:%H:%M:%S} ({_GIVEN})"
                return f"home(buckets, ...) returned {shown(got)} for {which}: it is in another bucket, or give a pair (start, n)"
            if cost.round_trips != 1 or cost.docs_returned != 1:
                return f"it took {_trips(cost)} and {cost.docs_returned} documents: one find_one is enough"
            if cost.bytes_returned > _SUMMARY_BYTES:
                return (f"the server sent {cost.bytes_returned:,} B: project start and n only, so that the bucket's "
                        f"reports stay on the server")
    return None
