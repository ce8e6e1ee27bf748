"""The classroom load test: can the server take the class? Thirty students at once.

Used by ``bench/bench_classroom.py`` and by ``tests/test_bench.py``. Each simulated student runs
the outlier notebook's write and read paths (``helpers.outlier``) in a database of its own.
"""
from __future__ import annotations

from typing import Any

from helpers.outlier import add_comment, read_comments
from helpers.safety import workbook_collection

__all__ = ["simulate_class"]


def simulate_class(uri: str, students: int = 30, posts: int = 3, comments: int = 40, threshold: int = 10,
                   prefix: str = "schema_workbook_loadtest") -> dict[str, Any]:
    """Run ``students`` simulated students at once against ``uri``, each in their own database.

    Each student (a thread with its own client, like a kernel) creates ``posts`` posts and adds
    ``comments`` comments to each through the outlier pattern's write path (``threshold``
    embedded, the rest overflowed), reading the post back after every write. Returns what was
    lost or crossed between students (both must be empty), throughput, and latency percentiles.
    The databases are dropped at the end.
    """
    import statistics
    import threading
    import time as _time

    import pymongo


    names = [f"{prefix}_{i:02d}" for i in range(students)]
    probe = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        taken = sorted(set(names) & set(probe.list_database_names()))
    finally:
        probe.close()
    if taken:  # never write into (or drop) a database this run did not create
        raise RuntimeError(f"databases already exist: {', '.join(taken)}; drop them or pick another prefix")
    latencies: list[float] = []
    problems: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(students)

    def student(i: int) -> None:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        db = client[names[i]]
        mine: list[float] = []
        try:
            posts_coll = workbook_collection(db, "posts")
            posts_coll.insert_many([{"_id": p, "title": f"student {i} post {p}"} for p in range(posts)])
            barrier.wait()
            for c in range(comments):
                for p in range(posts):
                    t0 = _time.perf_counter()
                    add_comment(db, p, {"by": f"s{i:02d}", "n": c}, threshold)
                    got = read_comments(db, p)
                    mine.append(_time.perf_counter() - t0)
                    if len(got) != c + 1:
                        problems.append(f"student {i} post {p}: {len(got)} comments after {c + 1} writes")
            for p in range(posts):
                got = read_comments(db, p)
                if [d["n"] for d in got] != list(range(comments)):
                    problems.append(f"student {i} post {p}: comments lost or out of order")
                if {d["by"] for d in got} != {f"s{i:02d}"}:
                    problems.append(f"student {i} post {p}: another student's comment crossed over")
                embedded = len(db["posts"].find_one({"_id": p})["comments"])
                if embedded != min(threshold, comments):
                    problems.append(f"student {i} post {p}: {embedded} embedded, threshold {threshold}")
        except Exception as e:  # report, do not hang the others
            problems.append(f"student {i}: {type(e).__name__}: {e}")
            barrier.abort()
        finally:
            with lock:
                latencies.extend(mine)
            client.close()

    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    t0 = _time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    elapsed = _time.perf_counter() - t0
    cleanup = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        for name in names:
            cleanup.drop_database(name)
    finally:
        cleanup.close()
    lat = sorted(latencies)
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [0.0] * 99
    return {"students": students, "operations": len(lat), "seconds": round(elapsed, 2),
            "ops per second": round(len(lat) / elapsed, 1) if elapsed else 0.0,
            "p50 ms": round(1000 * q[49], 2), "p99 ms": round(1000 * q[98], 2), "problems": problems}
