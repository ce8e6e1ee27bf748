"""Benchmark: loading the full ADS-B sample through ``load_dataset`` versus a raw ``insert_many``.

For each engine (the mongomock-ng mock and the embedded SecantusDB), load all 139,098 reports with
``helpers.datasets.load_dataset("adsb_reports", db, "full")`` (checksum + CSV parsing + staging
collection + rename), then insert the very same documents with plain ``insert_many`` in batches of
the same size into a fresh collection, and print documents per second and the ratio of the two.
Also prints the time to read and type the documents alone (no database).

    python bench/bench_load.py              # both engines, one run each
    python bench/bench_load.py --repeat 3   # median of 3 runs

Wall-clock figures on a shared 2-core machine: compare the ratios, not the seconds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from helpers import datasets as ds
from helpers.backends import connect
from helpers.safety import workbook_collection


def _read_documents() -> tuple[list[dict[str, Any]], float]:
    start = time.perf_counter()
    docs = list(ds.SPECS["adsb_reports"].source(ds.datasets_dir(), None))
    return docs, time.perf_counter() - start


def _raw_insert(db: Any, docs: list[dict[str, Any]]) -> float:
    coll = workbook_collection(db, "adsb_raw_insert")
    db.drop_collection("adsb_raw_insert")
    start = time.perf_counter()
    for i in range(0, len(docs), ds.BATCH_SIZE):
        # copies, because insert_many may add to the dicts it is given
        coll.insert_many([dict(d) for d in docs[i:i + ds.BATCH_SIZE]], ordered=True)
    seconds = time.perf_counter() - start
    assert coll.count_documents({}) == len(docs)
    db.drop_collection("adsb_raw_insert")
    return seconds


def bench(engine: str, docs: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    conn = connect(engine, db_name="workbook_bench_load", probe=False)
    try:
        db = conn.db
        load_times, raw_times = [], []
        for _ in range(repeat):
            result = ds.load_dataset("adsb_reports", db, "full")
            assert result.counts == {"adsb_reports": len(docs)}
            load_times.append(result.seconds)
            db.drop_collection("adsb_reports")
            raw_times.append(_raw_insert(db, docs))
        load_s, raw_s = statistics.median(load_times), statistics.median(raw_times)
        return {"engine": engine, "docs": len(docs), "load_s": load_s, "raw_s": raw_s,
                "load_rate": len(docs) / load_s, "raw_rate": len(docs) / raw_s, "ratio": load_s / raw_s}
    finally:
        conn.client.drop_database("workbook_bench_load")
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--engines", default="mock,embedded")
    args = parser.parse_args(argv)
    os.environ.setdefault("CI", "1")  # no progress bar inside the timings' output
    docs, read_s = _read_documents()
    print(f"read + type {len(docs):,} ADS-B reports (no database): {read_s:.2f} s "
          f"({len(docs) / read_s:,.0f} docs/s)\n")
    rows = [bench(engine, docs, args.repeat) for engine in args.engines.split(",")]
    print(f"{'engine':<10} {'documents':>10} {'load_dataset s':>15} {'docs/s':>9} "
          f"{'insert_many s':>14} {'docs/s':>9} {'load / raw':>11}")
    for r in rows:
        print(f"{r['engine']:<10} {r['docs']:>10,} {r['load_s']:>15.2f} {r['load_rate']:>9,.0f} "
              f"{r['raw_s']:>14.2f} {r['raw_rate']:>9,.0f} {r['ratio']:>10.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
