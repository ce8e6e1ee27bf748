"""Tests of helpers/plans.py: the explain-tree walkers."""
from __future__ import annotations

from helpers import plans
from helpers.measure import plan_summary as measure_plan_summary

INDEXED = {"queryPlanner": {"winningPlan": {"stage": "FETCH", "inputStage": {"stage": "IXSCAN"}}},
           "executionStats": {"totalKeysExamined": 3, "totalDocsExamined": 2}}


def test_plan_summary_reads_stages_keys_and_documents():
    assert plans.plan_summary(INDEXED) == ("FETCH > IXSCAN", 3, 2)
    assert plans.plan_summary({"queryPlanner": {"winningPlan": {"stage": "COLLSCAN"}}}) == ("COLLSCAN", None, None)
    assert measure_plan_summary is plans.plan_summary  # the old home still imports


def test_lookup_summary_reads_both_explain_shapes():
    classic = {"stages": [{"$cursor": {}}, {"$lookup": {"from": "b"}, "totalDocsExamined": 40,
                                            "totalKeysExamined": 0, "collectionScans": 4}]}
    assert plans.lookup_summary(classic) == {"totalKeysExamined": 0, "totalDocsExamined": 40, "collectionScans": 4}
    sbe = {"queryPlanner": {"winningPlan": {"queryPlan": {"stage": "EQ_LOOKUP", "strategy": "HashJoin"}}},
           "executionStats": {"totalDocsExamined": 12}}
    assert plans.lookup_summary(sbe) == {"strategy": "HashJoin", "totalDocsExamined (whole pipeline)": 12}
    assert plans.lookup_summary(INDEXED) is None
