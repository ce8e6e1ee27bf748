"""helpers.advisor: Atlas' triggers by default, each crossed and just missed; the workbook set flags its
stricter cases; every planted anti-pattern (Atlas' codes and the five beyond Atlas) found, no near miss
flagged, on every backend; the same findings on the embedded engine and the mock except the evidence
the probe says an engine cannot show; the review only reads (data, indexes, options, profiler level);
sampling, broken views, vanished collections; thresholds, workloads and the report behave as documented."""
from __future__ import annotations

import json
import re
import uuid

import bson
import pytest

from helpers import advisor
from helpers.advisor import (
    ATLAS,
    BEYOND_CODES,
    CODES,
    WORKBOOK,
    ObservedOperation,
    ObservedWorkload,
    Thresholds,
    observed,
)
from helpers.advisor import cases as advisor_cases
from helpers.advisor import rules as advisor_rules
from helpers.counting import count_commands

READ_COMMANDS = {"listCollections", "listIndexes", "find", "getMore", "count", "aggregate"}


def _snapshot(db):
    """Everything a write could change: collections, their options, documents (as BSON) and indexes."""
    out = {}
    for spec in sorted(db.list_collections(), key=lambda c: c["name"]):
        name = spec["name"]
        docs = [bson.encode(d) for d in db[name].find({}).sort("_id", 1)] if spec.get("type") != "view" else []
        indexes = {n: sorted((k, str(v)) for k, v in s.items())
                   for n, s in db[name].index_information().items()} if spec.get("type") != "view" else {}
        out[name] = (str(spec.get("options")), docs, indexes)
    return out


def _profile_level(db):
    try:
        return db.command("profile", -1)["was"]
    except NotImplementedError:  # the mock has no profiler
        return None


# ---------------------------------------------------------------------------------------------
# the fixtures: planted found, near misses not flagged, on every backend

def test_every_planted_case_found_and_no_near_miss_flagged(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    report = advisor.review(db, fixtures.workload, info=backend.info)
    keys = report.keys()
    # every code has a planted case and a near miss (the collection count is planted alone, below)
    for cases in (fixtures.planted, fixtures.near_misses):
        assert {k[0] for k in cases} == (set(CODES) | set(BEYOND_CODES)) - {"REDUCE_NUMBER_OF_NAMESPACES"}
    assert set(fixtures.planted) <= keys, f"missed: {set(fixtures.planted) - keys}"
    assert not set(fixtures.near_misses) & keys, f"near misses flagged: {set(fixtures.near_misses) & keys}"
    assert keys == set(fixtures.planted), f"false positives: {keys - set(fixtures.planted)}"
    table = fixtures.table(report)
    assert list(table["found"]) == list(table["planted"])
    assert list(table["false positives"]) == [0] * len(table)
    # every finding says where, how bad, its trigger and the value that crossed it, and what fixes it
    for f in report.findings:
        assert f.severity in ("high", "medium", "low") and f.evidence and f.summary and f.trigger
        assert f.value is not None and f.trigger in f.crossed
        assert re.match(r"(0[1-8] · |hide it first|the attribute pattern)", f.lesson), f.lesson
    triggers = {f.key: f.trigger for f in report.findings}
    assert triggers[("AVOID_UNBOUNDED_ARRAY", "fx_arrays_planted", "tags")] == "DOCS_CONTAIN_UNBOUNDED_ARRAY"
    assert triggers[("REDUCE_DOCUMENT_SIZE", "fx_size_planted", "blob")] == "DOC_SIZE_TOO_LARGE"
    assert triggers[("REDUCE_LOOKUP_OPS", "fx_lookup_planted", "fx_lookup_items")] == "PERCENT_QUERIES_USE_LOOKUP"
    assert triggers[("REMOVE_UNNECESSARY_INDEXES", "fx_indexes_planted", None)] == "NUM_INDEXES"
    assert triggers[("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", "fx_ci_planted", "email")] == \
        "QUERIES_CONTAIN_CASE_INSENSITIVE_REGEX"
    crossed = {f.key: (f.value, f.limit) for f in report.findings}
    assert crossed[("AVOID_UNBOUNDED_ARRAY", "fx_arrays_planted", "tags")] == (10_001, 10_000)
    assert crossed[("REDUCE_DOCUMENT_SIZE", "fx_size_planted", "blob")] == (2_000_001, 2_000_000)
    assert crossed[("REMOVE_UNNECESSARY_INDEXES", "fx_indexes_planted", None)] == (31, 30)


def test_reviews_reads_once_and_judges_each_set_as_review_does(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    with count_commands() as sent:
        both = advisor.reviews(db, fixtures.workload, info=backend.info)
    with count_commands() as one:
        advisor.review(db, fixtures.workload, info=backend.info)
    assert sent.round_trips == one.round_trips  # the data is read once for both sets
    for name in ("atlas", "workbook"):
        alone = advisor.review(db, fixtures.workload, thresholds=name, info=backend.info)
        assert both[name].to_dict() == alone.to_dict()
    with pytest.raises(ValueError, match="each set once"):
        advisor.reviews(db, thresholds=("atlas", ATLAS), info=backend.info)


def test_the_workbook_set_flags_its_stricter_cases(db, backend):
    """The same database: the workbook set flags Atlas' near misses for arrays and sizes (stricter), and
    its own collection-per-key family; planted at the workbook's edges, it is exact there too."""
    fixtures = advisor_cases.plant_fixtures(db)
    keys = advisor.review(db, fixtures.workload, thresholds="workbook", info=backend.info).keys()
    stricter = {("AVOID_UNBOUNDED_ARRAY", "fx_arrays_near", "tags"), ("REDUCE_DOCUMENT_SIZE", "fx_size_near", "blob")}
    assert keys == set(fixtures.planted) | stricter
    edge = advisor_cases.plant_fixtures(db, prefix="wb_", thresholds="workbook")
    keys = advisor.review(db, edge.workload, thresholds=WORKBOOK, collections=edge.collections,
                          info=backend.info).keys()
    assert ("REDUCE_NUMBER_OF_NAMESPACES", "wb_ns_planted_*", None) in edge.planted
    assert keys == set(edge.planted), (keys ^ set(edge.planted))


def test_more_than_100_collections_is_atlas_trigger(db, backend):
    """NUMBER_OF_NAMESPACES: exactly 100 collections (system ones not counted) is not flagged, 101 is."""
    for i in range(100 - len([n for n in db.list_collection_names() if not n.startswith("system.")])):
        db.create_collection(f"many_{i:03d}")
    assert len([n for n in db.list_collection_names() if not n.startswith("system.")]) == 100
    report = advisor.review(db, collections=[], info=backend.info)
    assert not report.by_code("REDUCE_NUMBER_OF_NAMESPACES")
    db.create_collection("many_one_more")
    found = advisor.review(db, collections=[], info=backend.info).by_code("REDUCE_NUMBER_OF_NAMESPACES")
    assert [(f.trigger, f.value, f.limit) for f in found] == [("NUMBER_OF_NAMESPACES", 101, 100)]


def test_more_than_100_lookups_is_atlas_trigger():
    """NUMBER_OF_QUERIES_USE_LOOKUP: 101 of 300 reads join (a third: under the share trigger) / 100 of 300."""
    class Db:  # the rule reads only the workload: a database with one empty collection is enough
        name = "shop"

    join = {"$lookup": {"from": "items", "localField": "item_id", "foreignField": "_id", "as": "item"}}
    c = advisor_rules._Collection("orders", 300, 300, [(30, 1, None, 0)], {}, {}, frozenset())
    for joined, flagged in ((101, True), (100, False)):
        commands = [{"aggregate": "orders", "pipeline": [{"$match": {"_id": i}}, join]} for i in range(joined)]
        commands += [{"find": "orders", "filter": {"_id": i}} for i in range(300 - joined)]
        found = advisor_rules._lookup_findings(c, ATLAS, ObservedWorkload.from_commands(commands))
        assert bool(found) == flagged, joined
        if found:
            assert (found[0].trigger, found[0].value, found[0].limit) == ("NUMBER_OF_QUERIES_USE_LOOKUP", 101, 100)


def test_unused_indexes_only_from_a_workload_of_seven_days(db, backend):
    """Atlas calls an index unused after 7 days without a query: a shorter workload does not say so
    (the redundant prefix needs no workload); the workbook set judges any recorded workload."""
    fixtures = advisor_cases.plant_fixtures(db)
    short = ObservedWorkload(fixtures.workload.operations, fixtures.workload.source, days=6.9)
    report = advisor.review(db, short, info=backend.info)
    assert ("REMOVE_UNNECESSARY_INDEXES", "fx_index_planted", "a_1") not in report.keys()
    assert ("REMOVE_UNNECESSARY_INDEXES", "fx_index_planted", "b_1") in report.keys()
    assert any("unused indexes not judged" in n and "6.9 days" in n for n in report.notes)
    unknown = ObservedWorkload(fixtures.workload.operations, fixtures.workload.source)
    assert ("REMOVE_UNNECESSARY_INDEXES", "fx_index_planted", "a_1") in \
        advisor.review(db, unknown, thresholds="workbook", info=backend.info).keys()


def test_the_review_only_reads(db, backend):
    fixtures = advisor_cases.plant_fixtures(db)
    before, level = _snapshot(db), _profile_level(db)
    with count_commands(keep_commands=True) as sent:
        for thresholds in ("atlas", "workbook", Thresholds(max_documents=10)):  # the last one samples
            advisor.review(db, fixtures.workload, thresholds=thresholds, info=backend.info)
    assert set(sent.commands) <= READ_COMMANDS, f"not a read: {set(sent.commands) - READ_COMMANDS}"
    assert sent.docs_written == 0
    assert _snapshot(db) == before
    assert _profile_level(db) == level


def test_thresholds_are_overridable(db, backend):
    fixtures = advisor_cases.plant_fixtures(db, thresholds="workbook")
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
                              "USE_OUTLIER_PATTERN", "USE_TIME_SERIES", "USE_ATTRIBUTE_PATTERN"]
    # the prefix and the index count need no workload
    assert {f.field for f in report.by_code("REMOVE_UNNECESSARY_INDEXES")} == {"b_1", None}
    assert any("no workload" in n for n in report.notes)


def test_lesson_designs_before_flagged_after_clean(db, backend):
    from helpers import load_dataset

    if backend.info.name != "mock":  # seconds of loading per engine; nbval runs all designs on every engine
        pytest.skip("notebook 06 checks every design on this engine (its committed output is compared)")

    load_dataset("posts", db)  # notebook 06 runs the designs of 01 and 04 too, on every engine
    for which in ("before", "after"):
        for design in advisor_cases.lesson_designs(db, which, ["02"]):
            for thresholds in ("atlas", "workbook"):
                report = advisor.review(db, design.workload, collections=design.collections, thresholds=thresholds,
                                        info=backend.info)
                want = design.expects(thresholds)
                assert report.keys() == want, (which, design.title, thresholds, report.keys() ^ want)
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
    regexes = [r for op in ObservedWorkload.from_commands(commands).operations for p in op.all_predicates
               for r in observed._regexes(p)]
    assert [(r.field, r.case_insensitive, r.anchored) for r in regexes] == [
        ("a", True, True), ("b", True, False), ("c", False, False), ("d", False, False), ("e", True, True),
        ("f", False, True)]
    assert regexes[0].exact and not regexes[4].exact


def test_a_lookup_pipeline_runs_on_the_foreign_collection():
    workload = ObservedWorkload.from_commands([{"aggregate": "orders", "pipeline": [
        {"$match": {"status": "open"}},
        {"$lookup": {"from": "items", "localField": "item_id", "foreignField": "_id", "as": "item",
                     "pipeline": [{"$match": {"name": {"$regex": "lamp", "$options": "i"}}}]}}]}])
    by_collection = {op.collection: op for op in workload.operations}
    assert by_collection["orders"].all_predicates == ({"status": "open"},)
    assert by_collection["items"].filters[0] == {"_id": 0}  # the foreign field: an index there serves the join
    assert [r.field for p in by_collection["items"].all_predicates for r in observed._regexes(p)] == ["name"]


def test_pushes_with_and_without_slice():
    assert advisor_rules._push_paths({"$push": {"reviews": {"a": 1}}}) == [("reviews", False)]
    assert advisor_rules._push_paths({"$push": {"aircraft.3.reports": {"$each": [1], "$slice": -5}}}) == \
        [("aircraft.reports", True)]
    assert advisor_rules._push_paths({"$addToSet": {"aircraft.$[a].tags": "x"}}) == [("aircraft.tags", False)]


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
    workload = ObservedWorkload.from_profile(_ProfileDb())
    assert [(op.kind, op.collection) for op in workload.operations] == [("find", "users"), ("update", "users")]
    assert workload.operations[1].updates == ({"$push": {"log": 1}},)


def test_a_profiler_workload_never_calls_an_index_unused(db, backend):
    """A level 1 profiler keeps slow operations: the fast ones an index serves are not in it."""
    import datetime as dt

    orders = db["orders"]
    orders.insert_many([{"_id": i, "status": "open" if i % 2 else "shipped", "note": f"n{i}"} for i in range(20)])
    orders.create_index("status")  # serves the page's fast query, which a level 1 profiler never records
    start = dt.datetime(2025, 1, 1)
    slow = [{"op": "query", "ns": f"{db.name}.orders", "ts": start + dt.timedelta(days=d),
             "command": {"find": "orders", "filter": {"note": {"$regex": "7"}}}} for d in (0, 8)]

    class Cursor(list):
        def sort(self, *a):
            return self

        def limit(self, n):
            return self

    profiled = type("ProfiledDb", (), {"name": db.name, "__getitem__": lambda self, n: type(
        "Profile", (), {"find": lambda self, q: Cursor(slow)})()})()
    workload = ObservedWorkload.from_profile(profiled)
    assert workload.days == 8 and not workload.complete
    for thresholds in ("atlas", "workbook"):
        report = advisor.review(db, workload, thresholds=thresholds, info=backend.info)
        assert ("REMOVE_UNNECESSARY_INDEXES", "orders", "status_1") not in report.keys()
        assert any("unused indexes not judged" in n and "fast queries" in n for n in report.notes)
    recorded = ObservedWorkload(workload.operations, days=8)  # the same operations, recorded in full: judged
    assert ("REMOVE_UNNECESSARY_INDEXES", "orders", "status_1") in advisor.review(db, recorded, info=backend.info).keys()


def test_a_real_profiler_as_the_workload(server_db, server_backend):
    """On a server (SecantusDB profiles too), the profiler's entries are the workload."""
    users = server_db["users"]
    users.insert_many([{"_id": i, "email": f"u{i}@example.com"} for i in range(5)])
    server_db.command("profile", 1, slowms=0)  # level 1, every operation slower than 0 ms
    try:
        users.find_one({"email": {"$regex": "^U1@EXAMPLE.COM$", "$options": "i"}})
        users.update_one({"_id": 1}, {"$push": {"log": "login"}})
    finally:
        server_db.command("profile", 0)
    workload = ObservedWorkload.from_profile(server_db)
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
    assert data["thresholds"]["max_array_elements"] == 10_000 and data["thresholds_set"] == "atlas"
    text = report.text()
    for code in set(CODES + BEYOND_CODES) - {"REDUCE_NUMBER_OF_NAMESPACES"}:
        assert code in text
    assert "trigger: DOCS_CONTAIN_UNBOUNDED_ARRAY: 10,001 > 10,000" in text
    assert list(report.table().columns) == ["severity", "code", "collection", "field", "crossed", "evidence", "fix"]


def test_the_json_report_keeps_its_documented_shape(db, backend):
    """The JSON report's keys are pinned here and listed in the README: a script may rely on them."""
    from pathlib import Path

    fixtures = advisor_cases.plant_fixtures(db)
    data = json.loads(advisor.review(db, fixtures.workload, info=backend.info).to_json())
    assert tuple(data) == advisor.REPORT_KEYS == (
        "database", "engine", "thresholds_set", "thresholds", "collections", "documents_read", "documents_total",
        "sampling", "workload", "workload_operations", "workload_days", "notes", "findings")
    assert all(tuple(f) == advisor.FINDING_KEYS == (
        "code", "collection", "field", "severity", "trigger", "value", "limit", "summary", "evidence", "lesson",
        "engine_note") for f in data["findings"])
    assert all(set(s) == {"collection", "documents", "read", "how"} for s in data["sampling"])
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### The advisor's JSON report"):]
    for key in advisor.REPORT_KEYS + advisor.FINDING_KEYS:
        assert f"`{key}`" in section, f"README does not document {key!r}"


# ---------------------------------------------------------------------------------------------
# sampling, broken views, vanished collections

def test_a_large_collection_is_sampled_across_and_the_report_says_how(db, backend):
    coll = db["big"]
    coll.insert_many([{"_id": i, "n": i} for i in range(1_000)])
    report = advisor.review(db, thresholds=Thresholds(max_documents=100), info=backend.info)
    (sampling,) = [s for s in report.sampling if s["collection"] == "big"]
    assert sampling["documents"] == 1_000 and sampling["read"] == 100 and "$sample" in sampling["how"]
    assert any("big: read 100 of 1,000 documents" in n for n in report.notes)
    # across the collection, not the first 100 in _id order
    docs, how = advisor_rules._documents(coll, 1_000, 100, seed=1)
    assert max(d["_id"] for d in docs) >= 100
    none = advisor.review(db, thresholds=Thresholds(max_documents=0), info=backend.info)
    assert none.documents_read == 0 and any("big: read 0 of 1,000 documents (none" in n for n in none.notes)


def test_random_id_runs_where_sample_is_not_served(db, backend):
    coll = db["big"]
    coll.insert_many([{"_id": i} for i in range(1_000)])

    class NoSample:  # an engine that does not serve $sample (the rest is the real collection)
        def aggregate(self, pipeline):
            raise NotImplementedError("$sample")

        def find(self, *a, **k):
            return coll.find(*a, **k)

    docs, how = advisor_rules._documents(NoSample(), 1_000, 100, seed=1_000)
    ids = [d["_id"] for d in docs]
    assert len(ids) == len(set(ids)) <= 100 and "random" in how and "$sample not served" in how
    assert max(ids) >= 100 and len({i // 100 for i in ids}) >= 3  # runs spread across the collection


def test_a_document_sample_returns_twice_is_read_once(db, backend):
    coll = db["big"]
    coll.insert_many([{"_id": i, "tags": [i] * (1 + i % 3)} for i in range(1_000)])

    class Repeats:  # a server's pseudo-random cursor (a sample under 5 %) may return a document twice
        def aggregate(self, pipeline):
            first = list(coll.aggregate(pipeline))
            return first + first[:7]

    docs, how = advisor_rules._documents(Repeats(), 1_000, 40, seed=1)
    ids = [d["_id"] for d in docs]
    assert len(ids) == len(set(ids)) == 40 and "7 returned twice, counted once" in how


def test_a_broken_view_is_skipped_with_its_cause(db, backend):
    if backend.info.name == "mock":
        pytest.skip("mongomock-ng has no views (create_collection refuses viewOn)")
    db["numbers"].insert_many([{"_id": i, "a": i, "b": 0} for i in range(5)])
    db.create_collection("ratios", viewOn="numbers", pipeline=[{"$project": {"r": {"$divide": ["$a", "$b"]}}}])
    report = advisor.review(db, info=backend.info)
    assert report.collections == ["numbers"]
    (note,) = [n for n in report.notes if "ratios" in n]
    assert "skipped" in note and "divide by zero" in note


def test_a_collection_dropped_during_the_review_is_named(db, backend, monkeypatch):
    for name in ("stays", "goes"):
        db[name].insert_one({"_id": 1})
    real = advisor.read_collection

    def read_then_drop(database, name, *args):  # another client drops "goes" while the review runs
        out = real(database, name, *args)
        if name == "goes":
            database.drop_collection("goes")
        return out

    monkeypatch.setattr(advisor, "read_collection", read_then_drop)
    report = advisor.review(db, info=backend.info)
    assert report.collections == ["stays"]
    assert any("dropped while the review ran" in n and "goes" in n for n in report.notes)


def test_the_profiler_advice_is_level_1():
    assert '"profile", 1' in advisor.PROFILE_ADVICE and "slowms" in advisor.PROFILE_ADVICE
    assert "sampleRate" in advisor.ObservedWorkload.from_profile.__doc__


def test_thresholds_table_and_validation():
    table = Thresholds().table()
    assert table.loc["max_collections", "atlas"] == 100 and table.loc["max_indexes", "atlas"] == 30
    assert table.loc["max_array_elements", "atlas"] == 10_000 and table.loc["max_array_elements", "workbook"] == 1_000
    assert table.loc["large_document_bytes", "atlas"] == 2_000_000
    assert "SCHEMA_TRIGGER_DESCRIPTIONS" in table.loc["max_array_elements", "source"]
    assert "16,777,216" in table.loc["large_document_bytes", "source"]
    assert Thresholds() == ATLAS and Thresholds.named("workbook") == WORKBOOK and WORKBOOK.name == "workbook"
    with pytest.raises(ValueError, match="'atlas', 'workbook'"):
        Thresholds.named("strict")
    with pytest.raises(ValueError, match="max_array_elements must be a positive number"):
        Thresholds(max_array_elements=0)
    with pytest.raises(ValueError, match="max_documents must be a positive number"):
        Thresholds(max_documents=-1)
    with pytest.raises(ValueError, match="lookup_share is a share"):
        Thresholds(lookup_share=50)
    with pytest.raises(ValueError, match="'atlas', 'workbook'"):
        advisor.review(None, thresholds="loose")


def test_bad_input_says_what_to_do(db, backend):
    with pytest.raises(TypeError, match="ObservedWorkload.from_counter"):
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

    collection = advisor_rules._Collection("c", 1, 1, [(30, 1, None, 0)], {}, {
        "_id_": spec([("_id", 1)]), "a_1": spec([("a", 1)]),
        "a_1_b_1": spec([("a", 1), ("b", 1)], partialFilterExpression={"b": {"$gt": 5}}),
        "a_1_c_1": spec([("a", 1), ("c", 1)], sparse=True),
        "a_1_d_1": spec([("a", 1), ("d", 1)], hidden=True)}, frozenset({"_id", "a"}))
    assert advisor_rules._index_findings(collection, None, collations=True) == []
    collection.indexes["a_1_e_1"] = spec([("a", 1), ("e", 1)])
    assert [f.field for f in advisor_rules._index_findings(collection, None, collations=True)] == ["a_1"]


def test_a_collated_index_serves_non_string_comparisons_under_any_collation():
    """The manual (Collation and Index Use): only string comparisons need the index's collation."""
    strength2 = {"locale": "en", "strength": 2}
    collated = {"key": [("code", 1)], "collation": strength2}
    plain = {"key": [("code", 1)]}

    def find(filter_, collation=None):
        return ObservedOperation("find", "c", (filter_,), None, collation)

    assert advisor_rules._usable(collated, find({"code": 7}), collations=True)
    assert advisor_rules._usable(collated, find({"code": {"$in": [1, 2]}}), collations=True)
    assert not advisor_rules._usable(collated, find({"code": "ab"}), collations=True)
    assert not advisor_rules._usable(collated, find({"code": {"$in": ["ab"]}}), collations=True)
    assert advisor_rules._usable(collated, find({"code": "ab"}, strength2), collations=True)
    assert not advisor_rules._usable(plain, find({"code": {"$gt": "a"}}, strength2), collations=True)
    assert advisor_rules._usable(plain, find({"code": "ab"}, {"locale": "simple"}), collations=True)
    assert advisor_rules._usable(plain, find({"code": 7}, strength2), collations=True)


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
