"""Benchmark: what ``helpers.measure`` and command counting add to each call.

    .venv/bin/python bench/bench_measure.py

For each offline engine: the median cost of a ``find_one`` by ``_id`` run bare, inside
``count_commands()``, and through ``measure`` (per timed run), in microseconds.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import engines, table  # noqa: E402

from helpers import benchmark  # noqa: E402
from helpers.counting import count_commands  # noqa: E402

N = 300


def median_us(fn, n: int = N) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


def run() -> list[dict]:
    rows = []
    for name, db in engines():
        coll = db["bench_measure"]
        coll.drop()
        coll.insert_many([{"_id": i, "v": i} for i in range(200)])

        def bare(coll=coll):
            coll.find_one({"_id": 7})

        def counted(coll=coll):
            with count_commands():
                coll.find_one({"_id": 7})

        m = benchmark("find_one", bare, repeat=N, warmup=10)
        t_bare = median_us(bare)
        t_counted = median_us(counted)
        t_measure = statistics.median(m.times_ms) * 1000
        rows.append({"engine": name, "bare µs": round(t_bare, 1), "count_commands() µs": round(t_counted, 1),
                     "counting overhead": f"{100 * (t_counted / t_bare - 1):+.1f}%",
                     "measure, per timed run µs": round(t_measure, 1)})
        coll.drop()
    return rows


if __name__ == "__main__":
    print(table(run()))
