"""Tests of bench/: the classroom load test (bench/classroom_load.py) finds no lost or crossed work."""
from __future__ import annotations

from bench.classroom_load import simulate_class


def test_thirty_students_at_once_lose_nothing_and_never_cross(test_uri):
    """Thirty simulated students on one server (a SecantusDB process started for the tests)."""
    report = simulate_class(test_uri, students=30, posts=2, comments=15, threshold=5)
    assert report["problems"] == []
    assert report["operations"] == 30 * 2 * 15
    print(f"\nclass load test: {report}")
