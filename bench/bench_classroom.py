"""Benchmark: thirty students at once on the outlier notebook's write and read paths.

    .venv/bin/python bench/bench_classroom.py [students]

Starts a SecantusDB process (or uses MONGODB_URI), runs ``classroom_load.simulate_class`` and
prints throughput and latency percentiles. Each student: 3 posts x 40 comments, threshold 10.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_load import simulate_class  # noqa: E402
from common import table  # noqa: E402

from engines.embedded import secantus_process  # noqa: E402
from helpers import settings  # noqa: E402


def run(students: int = 30) -> list[dict]:
    with contextlib.ExitStack() as stack:
        uri = settings.mongodb_uri() or stack.enter_context(secantus_process())
        report = simulate_class(uri, students=students, posts=3, comments=40, threshold=10)
    problems = report.pop("problems")
    report["problems"] = len(problems)
    return [report]


if __name__ == "__main__":
    print(table(run(int(sys.argv[1]) if len(sys.argv) > 1 else 30)))
