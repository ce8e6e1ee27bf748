"""helpers.advisor: every planted anti-pattern found, no near miss flagged, on every backend; the
same findings on the embedded engine and the mock except the evidence the probe says an engine
cannot show; the review only reads; thresholds, workloads and the report behave as documented."""
from __future__ import annotations

import json
import re
import uuid

import bson
import pytest

from helpers import advisor, advisor_cases
from helpers.advisor import CODES, Operation, Thresholds, Workload
from helpers.counting import counting

READ_COMMANDS = {"listCollections", "listIndexes", "find", "getMore", "count"}


def _snapshot(db):
    """Everything a write could change: collections, their documents (as BSON) and their indexes."""
    out = {}
    for name in sorted(db.list_collection_names()):
        docs = [bson.encode(d) for d in db[name].find({}).sort("_id", 1)]
        indexes = {n: (list(map(tuple, s["key"])), s.get("unique"), s.get("expireAfterSeconds"))
                   for n, s in db[name].index_information().items()}
        out[name] = (docs, indexes)
    return out


# ---------------------------------------------------------------------------------------------
# the fixtures: planted found, near misses not flagged, on every backend

def test_every_planted_case_found_and_no_near_miss_flagged(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    report = advisor.review(db, fixtures.workload, info=backend.info)
    keys = report.keys()
    assert {k[0] for k in fixtures.planted} == set(CODES)  # every code has a planted case
    assert {k[0] for k in fixtures.near_misses} == set(CODES)  # ... and a near miss
    assert set(fixtures.planted) <= keys, f"missed: {set(fixtures.planted) - keys}"
    assert not set(fixtures.near_misses) & keys, f"near misses flagged: {set(fixtures.near_misses) & keys}"
    assert keys == set(fixtures.planted), f"false positives: {keys - set(fixtures.planted)}"
    table = fixtures.table(report)
    assert list(table["found"]) == list(table["planted"])
    assert list(table["false positives"]) == [0] * len(CODES)
    # every finding says where, how bad, what shows it and what fixes it
    for f in report.findings:
        assert f.severity in ("high", "medium", "low") and f.evidence and f.summary
        assert re.match(r"0[1-6] · ", f.lesson), f.lesson


def test_the_review_only_reads(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    before = _snapshot(db)
    with counting(keep_commands=True) as sent:
        advisor.review(db, fixtures.workload, info=backend.info)
    assert set(sent.commands) <= READ_COMMANDS, f"not a read: {set(sent.commands) - READ_COMMANDS}"
    assert sent.docs_written == 0
    assert _snapshot(db) == before


def test_thresholds_are_overridable(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    looser = Thresholds(max_array_elements=2_000, large_document_bytes=2 * 1_048_576, lookup_share=0.9,
                        same_shape_collections=11)
    keys = advisor.review(db, fixtures.workload, thresholds=looser, info=backend.info).keys()
    for code in ("AVOID_UNBOUNDED_ARRAY", "REDUCE_DOCUMENT_SIZE", "REDUCE_LOOKUP_OPS", "REDUCE_NUMBER_OF_NAMESPACES"):
        assert not [k for k in keys if k[0] == code], code
    stricter = Thresholds(same_shape_collections=9, lookup_share=0.3)
    keys = advisor.review(db, fixtures.workload, thresholds=stricter, info=backend.info).keys()
    assert ("REDUCE_NUMBER_OF_NAMESPACES", "fx_nsnear_*", None) in keys
    assert ("REDUCE_LOOKUP_OPS", "fx_lookup_near", "fx_lookup_items") in keys


def test_without_a_workload_only_the_data_rules_run(db, backend):
    advisor_cases.plant_fixtures(db)
    report = advisor.review(db, info=backend.info)
    assert report.codes() == ["AVOID_UNBOUNDED_ARRAY", "REDUCE_DOCUMENT_SIZE", "REMOVE_UNNECESSARY_INDEXES",
                              "REDUCE_NUMBER_OF_NAMESPACES"]
    assert report.by_code("REMOVE_UNNECESSARY_INDEXES")[0].field == "b_1"  # the prefix needs no workload
    assert any("no workload" in n for n in report.notes)


def test_lesson_designs_before_flagged_after_clean(db, backend):
    from helpers import load_dataset

    if backend.info.name != "mock":  # seconds of loading per engine; nbval runs all designs on every engine
        pytest.skip("notebook 06 checks every design on this engine (its committed output is compared)")

    load_dataset("posts", db)  # notebook 06 runs the designs of 01 and 04 too, on every engine
    for which in ("before", "after"):
        for design in advisor_cases.lesson_designs(db, which, ["02"]):
            report = advisor.review(db, design.workload, collections=design.collections, info=backend.info)
            assert report.keys() == design.expected, (which, design.title, report.keys() ^ design.expected)
            assert bool(design.expected) == (which == "before")


def test_airline_document_holds_the_days_that_fit(db, backend, monkeypatch):
    from helpers import load_dataset

    if backend.info.name != "mock":  # the same code on every engine; the mock loads fastest
        pytest.skip("one engine is enough: no engine behaviour is involved")
    load_dataset("adsb_reports", db, scale=5)
    week = advisor_cases.lesson_designs(db, "before", ["04"])[0]
    assert week.title.endswith("(a week)")
    week_bytes = len(bson.encode(db["airlines_embedded"].find_one()))
    # a limit a week passes (as every aircraft of the day does at WORKBOOK_SCALE=full with 15 MiB)
    monkeypatch.setattr(advisor_cases, "AIRLINE_DOCUMENT_MAX_BYTES", week_bytes * 5 // 14)  # two and a half days
    fewer = advisor_cases.lesson_designs(db, "before", ["04"])[0]
    stored = len(bson.encode(db["airlines_embedded"].find_one()))
    assert fewer.title.endswith("(2 days: a week would come within 1 MiB of the 16 MiB limit)"), fewer.title
    assert stored <= advisor_cases.AIRLINE_DOCUMENT_MAX_BYTES < stored * 3 // 2  # 3 days would not fit
    assert fewer.expected == week.expected


# ---------------------------------------------------------------------------------------------
# the same findings offline: the evidence differs only where the probe says it must

def _comparable(report):
    out = []
    for f in report.as_dict()["findings"] if hasattr(report, "as_dict") else report.to_dict()["findings"]:
        evidence = {k: v for k, v in f["evidence"].items() if k != "case-insensitive index on the field"}
        out.append((f["code"], f["collection"], f["field"], f["severity"], json.dumps(evidence, sort_keys=True)))
    return out


def test_embedded_and_mock_agree():
    from helpers.backends import connect

    reports, infos = {}, {}
    for name in ("embedded", "mock"):
        conn = connect(name, db_name=f"wbtest_{uuid.uuid4().hex[:10]}")
        try:
            fixtures = advisor_cases.plant_fixtures(conn.db)
            reports[name] = advisor.review(conn.db, fixtures.workload, info=conn.info)
            infos[name] = conn.info
        finally:
            conn.client.drop_database(conn.db.name)
            conn.close()
    assert _comparable(reports["embedded"]) == _comparable(reports["mock"])
    # what differs is labelled from the probe: the mock drops index collations
    for name, report in reports.items():
        ci = report.by_code("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES")[0]
        if infos[name].caps.collation:
            assert ci.engine_note is None and ci.evidence["case-insensitive index on the field"] is False
        else:
            assert "collation" in ci.engine_note and ci.evidence["case-insensitive index on the field"] is None


# ---------------------------------------------------------------------------------------------
# workloads: recorded commands, profiler documents

def test_regexes_in_every_spelling():
    commands = [
        {"find": "c", "filter": {"a": re.compile("^x$", re.I)}},
        {"find": "c", "filter": {"b": bson.Regex("word", "i")}},
        {"find": "c", "filter": {"c": {"$regex": "word"}}},
        {"find": "c", "filter": {"d": {"$in": [re.compile("word")]}}},
        {"aggregate": "c", "pipeline": [{"$match": {"$or": [{"e": {"$regex": "^AB", "$options": "i"}}]}}]},
        {"find": "c", "filter": {"f": {"$regex": "^AB-"}}},  # anchored, case-sensitive: fine
    ]
    regexes = [r for op in Workload.from_commands(commands).operations for p in op.all_predicates
               for r in advisor._regexes(p)]
    assert [(r.field, r.case_insensitive, r.anchored) for r in regexes] == [
        ("a", True, True), ("b", True, False), ("c", False, False), ("d", False, False), ("e", True, True),
        ("f", False, True)]
    assert regexes[0].exact and not regexes[4].exact


def test_a_lookup_pipeline_runs_on_the_foreign_collection():
    workload = Workload.from_commands([{"aggregate": "orders", "pipeline": [
        {"$match": {"status": "open"}},
        {"$lookup": {"from": "items", "localField": "item_id", "foreignField": "_id", "as": "item",
                     "pipeline": [{"$match": {"name": {"$regex": "lamp", "$options": "i"}}}]}}]}])
    by_collection = {op.collection: op for op in workload.operations}
    assert by_collection["orders"].all_predicates == ({"status": "open"},)
    assert by_collection["items"].filters[0] == {"_id": 0}  # the foreign field: an index there serves the join
    assert [r.field for p in by_collection["items"].all_predicates for r in advisor._regexes(p)] == ["name"]


def test_pushes_with_and_without_slice():
    assert advisor._push_paths({"$push": {"reviews": {"a": 1}}}) == [("reviews", False)]
    assert advisor._push_paths({"$push": {"aircraft.3.reports": {"$each": [1], "$slice": -5}}}) == \
        [("aircraft.reports", True)]
    assert advisor._push_paths({"$addToSet": {"aircraft.$[a].tags": "x"}}) == [("aircraft.tags", False)]


class _ProfileDb:
    """A stand-in for a server database whose profiler recorded three operations."""

    name = "shop"

    def __getitem__(self, name):
        assert name == "system.profile"
        docs = [
            {"op": "query", "ns": "shop.users", "command": {"find": "users", "filter": {"email": bson.Regex("^a$", "i")}}},
            {"op": "update", "ns": "shop.users", "command": {"q": {"_id": 1}, "u": {"$push": {"log": 1}}}},
            {"op": "getmore", "ns": "shop.users", "command": {"getMore": 1, "collection": "users"}},
        ]

        class Cursor(list):
            def sort(self, *a):
                return self

            def limit(self, n):
                return self
        return type("Profile", (), {"find": lambda self, q: Cursor(docs)})()


def test_profiler_output_as_a_workload():
    workload = Workload.from_profile(_ProfileDb())
    assert [(op.kind, op.collection) for op in workload.operations] == [("find", "users"), ("update", "users")]
    assert workload.operations[1].updates == ({"$push": {"log": 1}},)


def test_a_real_profiler_as_the_workload(server_db, server_backend):
    """On a server (SecantusDB profiles too), the profiler's entries are the workload."""
    users = server_db["users"]
    users.insert_many([{"_id": i, "email": f"u{i}@example.com"} for i in range(5)])
    server_db.command("profile", 2)
    try:
        users.find_one({"email": {"$regex": "^U1@EXAMPLE.COM$", "$options": "i"}})
        users.update_one({"_id": 1}, {"$push": {"log": "login"}})
    finally:
        server_db.command("profile", 0)
    workload = Workload.from_profile(server_db)
    assert [op.kind for op in workload.operations if op.collection == "users"][-2:] == ["find", "update"]
    report = advisor.review(server_db, workload, info=server_backend.info)
    assert ("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", "users", "email") in report.keys()


# ---------------------------------------------------------------------------------------------
# the report, the thresholds, errors

def test_report_text_and_json(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    report = advisor.review(db, fixtures.workload, info=backend.info)
    data = json.loads(report.to_json())
    assert len(data["findings"]) == len(report.findings)
    assert data["thresholds"]["max_array_elements"] == 1_000
    text = report.text()
    for code in CODES:
        assert code in text
    assert list(report.table().columns) == ["severity", "code", "collection", "field", "evidence", "fix"]


def test_thresholds_table_and_validation():
    table = Thresholds().table()
    assert table.loc["max_namespaces", "value"] == 10_000
    assert "10,000 per replica set" in table.loc["max_namespaces", "source"]
    assert "16,777,216" in table.loc["large_document_bytes", "source"]
    with pytest.raises(ValueError, match="max_array_elements must be a positive number"):
        Thresholds(max_array_elements=0)
    with pytest.raises(ValueError, match="lookup_share is a share"):
        Thresholds(lookup_share=50)


def test_bad_input_says_what_to_do(db, backend):
    with pytest.raises(TypeError, match="Workload.from_counter"):
        advisor.review(db, ["find"], info=backend.info)
    with pytest.raises(ValueError, match="load it first with helpers.load_dataset"):
        advisor_cases.lesson_designs(db, "before", ["01"])
    with pytest.raises(ValueError, match="'before' or 'after'"):
        advisor_cases.lesson_designs(db, "later")
    report = advisor.review(db, collections=["nope"], info=backend.info)
    assert report.findings == [] and "not in the database" in report.notes[0]


def test_a_prefix_of_a_partial_sparse_or_hidden_index_is_not_redundant():
    """Only an index that serves every query of the shorter one covers it: not a partial, sparse or
    hidden one (the manual: a partial index is used only when the query's predicate implies the
    filter; a sparse one only when the query cannot need the documents it omits; a hidden one never)."""
    def spec(keys, **options):
        return {"key": list(keys), "v": 2, **options}

    collection = advisor._Collection("c", 1, 1, [(30, 1, None, 0)], {}, {
        "_id_": spec([("_id", 1)]), "a_1": spec([("a", 1)]),
        "a_1_b_1": spec([("a", 1), ("b", 1)], partialFilterExpression={"b": {"$gt": 5}}),
        "a_1_c_1": spec([("a", 1), ("c", 1)], sparse=True),
        "a_1_d_1": spec([("a", 1), ("d", 1)], hidden=True)}, frozenset({"_id", "a"}))
    assert advisor._index_findings(collection, None, collations=True) == []
    collection.indexes["a_1_e_1"] = spec([("a", 1), ("e", 1)])
    assert [f.field for f in advisor._index_findings(collection, None, collations=True)] == ["a_1"]


def test_a_collated_index_serves_non_string_comparisons_under_any_collation():
    """The manual (Collation and Index Use): only string comparisons need the index's collation."""
    strength2 = {"locale": "en", "strength": 2}
    collated = {"key": [("code", 1)], "collation": strength2}
    plain = {"key": [("code", 1)]}

    def find(filter_, collation=None):
        return Operation("find", "c", (filter_,), None, collation)

    assert advisor._usable(collated, find({"code": 7}), collations=True)
    assert advisor._usable(collated, find({"code": {"$in": [1, 2]}}), collations=True)
    assert not advisor._usable(collated, find({"code": "ab"}), collations=True)
    assert not advisor._usable(collated, find({"code": {"$in": ["ab"]}}), collations=True)
    assert advisor._usable(collated, find({"code": "ab"}, strength2), collations=True)
    assert not advisor._usable(plain, find({"code": {"$gt": "a"}}, strength2), collations=True)
    assert advisor._usable(plain, find({"code": "ab"}, {"locale": "simple"}), collations=True)
    assert advisor._usable(plain, find({"code": 7}, strength2), collations=True)


def test_the_review_never_connects_to_learn_the_engine(monkeypatch, db, backend):
    """The default info is that of db's own connection; no process-wide connection is opened (it would probe,
    and probing writes)."""
    from helpers import backends

    def no_connect(*args, **kwargs):
        raise AssertionError("review() opened a connection")

    monkeypatch.setattr(backends, "connect", no_connect)
    monkeypatch.setattr(backends._SHARED, "current", None)
    report = advisor.review(db)
    assert report.engine == f"{backend.info.engine} {backend.info.version}"
