"""Tests of helpers/measure.py: one counted run, every repeat timed."""
from __future__ import annotations

import sys
import types

import pytest

import helpers
from helpers import backends, benchmark, compare, costs_table
from helpers.backends import STEADY_GC_THRESHOLDS, steady_gc


@pytest.fixture
def numbers(db):
    coll = db["numbers"]
    coll.insert_many([{"_id": i, "g": i % 3} for i in range(250)])
    return coll


def test_measure_counts_one_run_and_times_every_repeat(numbers, backend):
    m = benchmark("by _id", lambda: numbers.find({"_id": {"$lt": 10}}).sort("_id", 1), repeat=3,
                explain=lambda: numbers.find({"_id": 5}).explain(), info=backend.info)
    assert len(m.times_ms) == 3 and all(t > 0 for t in m.times_ms)
    assert (m.round_trips, m.docs_returned, m.bytes_returned, m.docs_written) == (1, 10, 210, 0)
    assert [d["_id"] for d in m.result] == list(range(10))
    if backend.info.caps.explain:
        assert m.keys_examined == 1, m
        assert any(stage in m.stages for stage in ("IXSCAN", "IDHACK", "EXPRESS")), m.stages
    else:
        assert m.keys_examined is None and "cannot explain" in m.plan_note
    table = costs_table([m])
    assert table.loc["by _id", "round trips"] == 1
    full = compare([m], plot=False)
    assert "median ms" in full.columns


def test_measure_setup_restores_state_for_writes(db):
    coll = db["w"]
    m = benchmark("insert", lambda: coll.insert_one({"_id": 1}), setup=lambda: coll.delete_many({}), repeat=3)
    assert m.docs_written == 1 and m.round_trips == 1
    assert coll.count_documents({}) == 1


def test_an_id_range_plan_is_shown_with_a_note_where_the_engine_scans(numbers, backend):
    """The plan of an ``_id`` range is the engine's own; where the probe says the ``_id`` index does
    not serve ranges, the note says a real MongoDB would scan the bounds."""
    query = {"_id": {"$gte": 10, "$lt": 20}}
    m = benchmark("range", lambda: numbers.find(query).sort("_id", 1), repeat=1,
                explain=lambda: numbers.find(query).sort("_id", 1).explain(), explain_kind="id_range",
                info=backend.info)
    caps = backend.info.caps
    if not caps.explain:
        assert m.stages is None and "cannot explain" in m.plan_note
    elif caps.id_range_index:
        assert "IXSCAN" in m.stages and m.keys_examined in (10, 11) and m.plan_note is None
    else:
        assert "COLLSCAN" in m.stages and m.docs_examined == 250 and "index bounds" in m.plan_note
    with pytest.raises(ValueError, match="explain_kind"):
        benchmark("x", lambda: None, repeat=1, explain=lambda: {}, explain_kind="prefix", info=backend.info)


@pytest.fixture
def gc_thresholds():
    import gc

    saved = gc.get_threshold()
    yield gc
    gc.set_threshold(*saved)


#: how many thresholds the collector keeps: Python 3.14's incremental collector reads back 0 for the third
KEPT = 2 if sys.version_info >= (3, 14) else 3


def test_steady_gc_raises_the_thresholds_and_never_lowers_one(gc_thresholds):
    gc = gc_thresholds
    gc.set_threshold(700, 10, 10)  # CPython 3.11's defaults
    assert steady_gc() == STEADY_GC_THRESHOLDS
    assert gc.get_threshold()[:KEPT] == STEADY_GC_THRESHOLDS[:KEPT]
    gc.set_threshold(50_000, 5, 1_000)  # set higher by the process: kept, the middle one raised
    assert steady_gc() == (50_000, 10, 1_000)
    assert gc.get_threshold()[:KEPT] == (50_000, 10, 1_000)[:KEPT]
    gc.set_threshold(0)  # collection turned off: left off
    assert steady_gc()[0] == 0 == gc.get_threshold()[0]


def test_get_db_makes_full_collections_rarer(gc_thresholds, monkeypatch):
    gc = gc_thresholds
    gc.set_threshold(700, 10, 10)
    monkeypatch.setattr(backends, "_SHARED", backends.ProcessWide(lambda: types.SimpleNamespace(db="db")))
    assert helpers.get_db() == "db"
    assert gc.get_threshold()[:KEPT] == STEADY_GC_THRESHOLDS[:KEPT]
