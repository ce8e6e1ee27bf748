"""Checkers of notebook 08 (position reports over time: documents, buckets, time series)."""
from __future__ import annotations

import math
from typing import Any

from ..exercises import exercise, shown
from .pattern import window_start


@exercise("8.1", hint="one aggregate on the buckets: $match the aircraft, $group by $start with $sum of $count, "
                      "$min of $minAltitude and $max of $maxAltitude; never $unwind the reports",
          query_result=True)
def hourly_from_summaries(answer: Any, *, buckets: Any, icao24: str) -> str | None:
    """``{hour: (reports, lowest altitude, highest altitude)}`` of one aircraft, recomputed from the
    reports themselves (the truth the summary fields must agree with)."""
    if not isinstance(answer, dict):
        return "give a dict: {hour (a datetime): (reports, lowest altitude, highest altitude)}"
    want: dict[Any, list] = {}
    for b in buckets.find({"icao24": icao24}, {"reports": 1}):
        for r in b["reports"]:
            w = want.setdefault(window_start(r["time"]), [0, []])
            w[0] += 1
            if isinstance(r.get("altitude"), (int, float)):
                w[1].append(r["altitude"])
    want_rows = {h: (n, min(a) if a else None, max(a) if a else None) for h, (n, a) in want.items()}
    if not want_rows:
        return f"there are no buckets of {icao24}: run the notebook from the top"
    if set(answer) != set(want_rows):
        return f"expected the {len(want_rows)} hours with reports of {icao24}, got {len(answer)} keys"
    wrong = sorted(h for h in want_rows if tuple(answer[h]) != want_rows[h])
    if wrong:
        return f"{len(wrong)} hours differ, e.g. {wrong[0]:%H:%M}: expected {want_rows[wrong[0]]}, got {tuple(answer[wrong[0]])}"
    return None


def _designs(pick: Any) -> frozenset | None:
    """The designs a pick names: a ``Pick``'s designs, ``"tie: A, B"`` as {A, B}, a name as {name}, or a
    tuple, list or set of names; None for anything else."""
    if hasattr(pick, "designs"):
        return frozenset(pick.designs)
    if isinstance(pick, str):
        return frozenset(pick[len("tie: "):].split(", ")) if pick.startswith("tie: ") else frozenset([pick])
    if isinstance(pick, (tuple, list, set, frozenset)) and pick and all(isinstance(x, str) for x in pick):
        return frozenset(pick)
    return None


@exercise("8.2", hint="workload.with_rate(operation, rate).pick(costs, by=...) for a few rates (0, 100, 1_000, ...): "
                      "give the first rate where the answer is not the pick of section 8.7, and that answer as pick "
                      "says it (a tie too: 'tie: A, B')")
def flipping_rate(answer: Any, *, workload: Any, costs: Any, operation: str, by: str) -> str | None:
    """``(rate, design)``: a rate of ``operation`` at which the pick ``by`` one daily cost changes, and
    the pick there. Designs within the workload's margin tie, and a tie is a change of pick: it is given
    as ``pick`` gives it (``"tie: A, B"``) or as a tuple of the tied designs, in any order; one of the
    tied designs alone is not the pick."""
    if not isinstance(answer, tuple) or len(answer) != 2:
        return "give a pair: (rate per day, the design picked at that rate)"
    rate, design = answer
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate < 0:
        return f"the rate is a number of runs a day, 0 or more, not {shown(rate)}"
    base = workload.pick(costs, by=by)
    picked = workload.with_rate(operation, rate).pick(costs, by=by)
    if _designs(picked) == _designs(base):
        return f"at {rate:,} a day the pick by {by} is still {shown(str(base))}"
    given = _designs(design)
    if given is None:
        return f"give the design as a name, as pick's answer ('tie: A, B'), or the tied designs as a tuple, not {shown(design)}"
    if given != _designs(picked):
        if picked.tie and given < _designs(picked):
            return (f"at {rate:,} a day {shown(design)} does not win alone: {len(picked.designs)} designs are within "
                    f"{workload.margin:.0%} of each other, a tie; give the tie, as pick says it")
        return f"at {rate:,} a day the pick is {shown(str(picked))}, not {shown(design)}"
    return None


@exercise("8.3", hint="store it with bk.bucket_reports(bucketed, [straggler]), then find_one the bucket of its "
                      "icao24 whose reports.time holds its time, and give (start, n)")
def straggler_home(answer: Any, *, buckets: Any, report: Any) -> str | None:
    """``(start, n)`` of the bucket holding the late ``report``: the bucket of its hour."""
    if not isinstance(answer, tuple) or len(answer) != 2:
        return "give a pair: (start, n)"
    home = buckets.find_one({"icao24": report["icao24"], "reports.time": report["time"]}, {"start": 1, "n": 1})
    if home is None:
        return "the straggler is not stored yet: store it with bk.bucket_reports first"
    if home["start"] != window_start(report["time"]):
        return f"it is in the bucket of {home['start']:%H:%M}, not of its own hour: something is wrong with the store"
    if tuple(answer) != (home["start"], home["n"]):
        return f"it is in another bucket than {shown(answer)}"
    return None
