"""Tests of helpers/plans.py: the explain-tree walkers."""
from __future__ import annotations

import pytest

from helpers import plans

INDEXED = {"queryPlanner": {"winningPlan": {"stage": "FETCH", "inputStage": {"stage": "IXSCAN"}}},
           "executionStats": {"totalKeysExamined": 3, "totalDocsExamined": 2}}


def test_plan_summary_reads_stages_keys_and_documents():
    assert plans.plan_summary(INDEXED) == ("FETCH > IXSCAN", 3, 2)
    assert plans.plan_summary({"queryPlanner": {"winningPlan": {"stage": "COLLSCAN"}}}) == ("COLLSCAN", None, None)
    from helpers import measure
    assert "plan_summary" in plans.__all__ and "plan_summary" not in measure.__all__  # one home


def test_lookup_summary_reads_both_explain_shapes():
    classic = {"stages": [{"$cursor": {}}, {"$lookup": {"from": "b"}, "totalDocsExamined": 40,
                                            "totalKeysExamined": 0, "collectionScans": 4}]}
    assert plans.lookup_summary(classic) == {"totalKeysExamined": 0, "totalDocsExamined": 40, "collectionScans": 4}
    sbe = {"queryPlanner": {"winningPlan": {"queryPlan": {"stage": "EQ_LOOKUP", "strategy": "HashJoin"}}},
           "executionStats": {"totalDocsExamined": 12}}
    assert plans.lookup_summary(sbe) == {"strategy": "HashJoin", "totalDocsExamined (whole pipeline)": 12}
    assert plans.lookup_summary(INDEXED) is None


def test_find_in_id_order_walks_the_id_index_and_falls_back_where_a_hint_is_refused(db):
    from pymongo.errors import OperationFailure

    from helpers.plans import find_in_id_order
    from helpers.safety import workbook_collection

    coll = workbook_collection(db, "ordered")
    coll.insert_many([{"_id": i, "even": i % 2 == 0} for i in (5, 3, 9, 1, 7, 2)])
    assert [d["_id"] for d in find_in_id_order(coll)] == [1, 2, 3, 5, 7, 9]
    assert [d["_id"] for d in find_in_id_order(coll, {"even": False}, {"_id": 1}, limit=3)] == [1, 3, 5]
    assert list(find_in_id_order(coll, {"even": "never"})) == []

    class RefusesHints:  # a time-series collection: no _id index to hint
        def __init__(self, inner):
            self.inner, self.hints = inner, []

        def find(self, *args, **kwargs):
            self.hints.append(kwargs.get("hint"))
            if kwargs.get("hint"):
                raise OperationFailure("hint provided does not correspond to an existing index", 2)
            return self.inner.find(*args, **kwargs)

    refusing = RefusesHints(coll)
    assert [d["_id"] for d in find_in_id_order(refusing, limit=2)] == [1, 2]
    assert refusing.hints == [[("_id", 1)], None]

    class Unauthorized(RefusesHints):  # any other failure is the caller's to see, after one try
        def find(self, *args, **kwargs):
            self.hints.append(kwargs.get("hint"))
            raise OperationFailure("not authorized on db to execute command", 13)

    denied = Unauthorized(coll)
    with pytest.raises(OperationFailure, match="not authorized"):
        list(find_in_id_order(denied))
    assert denied.hints == [[("_id", 1)]]


def test_an_aggregations_stats_reported_twice_count_once_and_shards_add_up():
    from helpers.plans import plan_summary

    ixscan = {"stage": "FETCH", "inputStage": {"stage": "IXSCAN"}}
    twice = {"queryPlanner": {"winningPlan": ixscan},
             "executionStats": {"totalKeysExamined": 1, "totalDocsExamined": 1},
             "stages": [{"$cursor": {"queryPlanner": {"winningPlan": ixscan},
                                     "executionStats": {"totalKeysExamined": 1, "totalDocsExamined": 1}}}]}
    assert plan_summary(twice) == ("FETCH > IXSCAN", 1, 1)
    sharded = {"shards": {"a": {"queryPlanner": {"winningPlan": ixscan},
                                "executionStats": {"totalKeysExamined": 2, "totalDocsExamined": 2}},
                          "b": {"queryPlanner": {"winningPlan": ixscan},
                                "executionStats": {"totalKeysExamined": 3, "totalDocsExamined": 3}}}}
    assert plan_summary(sharded) == ("FETCH > IXSCAN", 5, 5)
