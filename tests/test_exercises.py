"""helpers.exercises and each lesson's checks: one check spelling, checkers in the package, progress recorded."""
from __future__ import annotations

import ast
import json
import os
import re
import threading
from pathlib import Path

import pytest

from helpers import exercises
from helpers.exercises import check, evaluate, exercise

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@exercise("98.1", hint="five")
def _is_five(answer, *, plus=0):
    return None if answer + plus == 5 else f"{answer} is not it"


@exercise("98.2", hint="shape")
def _raises(answer):
    return answer["missing"]


def test_check_prints_one_line_and_records_progress(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/98_test.ipynb")
    assert check("98.1", 5) is None  # nothing to display in a check cell but the printed line
    check("98.1", 3, plus=2)
    check("98.1", 4)
    out = capsys.readouterr().out.splitlines()
    assert out == ["Exercise 98.1: correct.", "Exercise 98.1: correct.",
                   "Exercise 98.1: not right yet: 4 is not it. Hint: five"]
    assert json.loads((tmp_path / "p.json").read_text()) == {"98_test": {"98.1": False}}


def test_unanswered_and_half_answered(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    check("98.1", None)
    check("98.1", (None, None))
    assert evaluate("98.1", (1, None))[0] == "not right yet"  # half an answer is checked, and fails
    out = capsys.readouterr().out
    assert out.count(f"Exercise 98.1: {exercises.NOT_DONE}") == 2
    assert "Hint" not in out and "five" not in out, "no hint before an attempt"
    assert json.loads((tmp_path / "p.json").read_text()) == {"notebook 98": {"98.1": False}}


def test_a_checker_that_raises_teaches_instead_of_crashing():
    status, line = evaluate("98.2", {})
    assert status == "not right yet" and "checking it raised KeyError" in line and line.endswith("Hint: shape")


def test_unknown_and_malformed_ids_say_what_to_do():
    with pytest.raises(KeyError, match=r"checks\.py of notebook 97's lesson.*@exercise\('97\.1'"):
        exercises.checker("97.1")
    for bad in ("2", "2.1 breadcrumbs", "x.1", 2.1):
        with pytest.raises(ValueError, match="look like '2.1'"):
            exercises.checker(bad)
    with pytest.raises(ValueError, match="give a hint"):
        exercise("98.3", hint=" ")


def test_progress_survives_a_corrupt_file(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    (tmp_path / "p.json").write_text("{not json")
    check("98.1", 5)  # prints, never raises: progress is a convenience


def _record_many(path: str, notebook: str, n: int) -> None:
    import os

    os.environ["WORKBOOK_PROGRESS"] = path
    os.environ["JPY_SESSION_NAME"] = f"notebooks/{notebook}.ipynb"
    for i in range(n):
        exercises.record_progress(f"98.{i + 1}", True)


def test_two_kernels_recording_at_once_lose_no_result(tmp_path):
    """Two notebooks open at once record into one file: every result of both is kept."""
    import multiprocessing

    path = str(tmp_path / "p.json")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(path, name, 40)) for name in ("98_a", "98_b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    data = json.loads((tmp_path / "p.json").read_text())
    assert {name: len(results) for name, results in data.items()} == {"98_a": 40, "98_b": 40}
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_check_in_a_notebook_has_a_checker_in_the_package(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids = set()
    for c in nb["cells"]:
        if c["cell_type"] == "code" and "helpers.check(" in "".join(c["source"]):
            for node in ast.walk(ast.parse("".join(c["source"]))):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "check":
                    ids.add(node.args[0].value)
    assert ids
    for eid in ids:
        assert re.fullmatch(rf"{int(path.name[:2])}\.\d+", eid)
        fn, hint = exercises.checker(eid)
        assert fn.__module__ == f"helpers.{exercises.lesson_folders()[path.name[:2]].name}.checks" and hint


def test_checks_of_notebook_00_measure_on_every_backend(db, capsys):
    from helpers.safety import workbook_collection

    orders = workbook_collection(db, "start_orders")
    orders.insert_many([{"_id": i, "customer": f"c{i % 40:02d}"} for i in range(1000)])
    assert evaluate("0.1", 2, orders=orders)[0] == "correct"
    status, line = evaluate("0.1", 1, orders=orders)
    assert status == "not right yet" and "more commands" in line and " 2 " not in line  # never the answer
    assert evaluate("0.1", "2", orders=orders)[0] == "not right yet"


def test_checks_of_notebook_03_recompute_from_the_categories_and_count_what_answers_send(db, backend):
    from helpers.safety import workbook_collection
    from helpers.trees import PATTERNS

    rows = [(1, None, "A"), (2, 1, "B"), (3, 2, "C"), (4, 3, "D"), (5, None, "E")]
    categories = workbook_collection(db, "categories")
    categories.insert_many([{"_id": n, "parent_id": p, "name": name} for n, p, name in rows])
    t = {cls.__name__: cls(workbook_collection(db, f"ex3_{cls.__name__.lower()}")) for cls in PATTERNS}
    for tree in t.values():
        tree.load(rows)

    def text(fn):
        return lambda node: " > ".join(fn(node))

    # 3.1: one round trip, no more documents than names; every such form is right
    for right in (t["MaterializedPaths"].breadcrumbs, t["AncestorsWithNames"].breadcrumbs,
                  t["ParentRefs"].graph_breadcrumbs, t["AncestorsArray"].lookup_breadcrumbs):
        assert evaluate("3.1", text(right), categories=categories, node=4)[0] == "correct", right
    status, line = evaluate("3.1", text(t["ParentRefs"].breadcrumbs), categories=categories, node=4)
    assert status == "not right yet" and "round trips" in line and "Hint" in line

    def everything(node):  # one round trip, but the whole collection
        docs = {d["_id"]: d for d in t["ParentRefs"].collection.find({}, batch_size=1000)}
        names = []
        while node is not None:
            names, node = [docs[node]["name"], *names], docs[node]["parent"]
        return " > ".join(names)

    status, line = evaluate("3.1", everything, categories=categories, node=3)
    assert status == "not right yet" and "documents came back" in line

    def grouped(node):  # one round trip, one document back, but the server reads every document
        docs = {d["_id"]: d for d in next(t["ParentRefs"].collection.aggregate(
            [{"$group": {"_id": None, "all": {"$push": "$$ROOT"}}}], batchSize=10))["all"]}
        return everything.__wrapped__(docs, node)

    def walk(docs, node):
        names = []
        while node is not None:
            names, node = [docs[node]["name"], *names], docs[node]["parent"]
        return " > ".join(names)

    everything.__wrapped__ = walk
    status, line = evaluate("3.1", grouped, categories=categories, node=3)
    if backend.info.caps.explain:
        assert status == "not right yet" and "examined" in line, line
    else:
        assert status == "correct"
    assert "give a function" in evaluate("3.1", "A > B > C", categories=categories, node=3)[1]

    def hidden(node):  # every document read with the counting paused, then one dummy round trip
        from helpers.counting import paused
        with paused():
            docs = {d["_id"]: d for d in t["ParentRefs"].collection.find({}, batch_size=1000)}
        t["ParentRefs"].collection.find_one({"_id": node})
        return walk(docs, node)

    status, line = evaluate("3.1", hidden, categories=categories, node=3)
    assert status == "not right yet" and "paused the workbook's counting" in line, line
    assert evaluate("3.1", lambda node: "A > C", categories=categories, node=3)[0] == "not right yet"
    # 3.3: the ancestors array itself, in one round trip
    ancestors = t["AncestorsArray"]
    assert evaluate("3.3", text(ancestors.lookup_breadcrumbs), tree=ancestors, categories=categories,
                    node=4)[0] == "correct"
    def in_expr(node):   # one round trip, one document, but a $lookup no index serves ($in in $expr)
        doc = next(ancestors.collection.aggregate([
            {"$match": {"_id": node}},
            {"$lookup": {"from": ancestors.collection.name, "let": {"up": "$ancestors"}, "as": "found",
                         "pipeline": [{"$match": {"$expr": {"$in": ["$_id", "$$up"]}}}, {"$project": {"name": 1}}]}}],
            batchSize=10))
        found = {d["_id"]: d["name"] for d in doc["found"]}
        return " > ".join([found[a] for a in doc["ancestors"]] + [doc["name"]])
    status, line = evaluate("3.3", in_expr, tree=ancestors, categories=categories, node=4)
    if backend.info.caps.explain:  # judged, not passed unjudged
        assert status == "not right yet" and "localField" in line, line
    def in_facet(node):  # the same unindexed $lookup inside $facet: its reads unseen, so refused, not passed
        doc = next(ancestors.collection.aggregate([
            {"$match": {"_id": node}},
            {"$facet": {"f": [{"$lookup": {"from": ancestors.collection.name, "let": {"up": "$ancestors"}, "as": "found",
                                           "pipeline": [{"$match": {"$expr": {"$in": ["$_id", "$$up"]}}}]}}]}}],
            batchSize=10))["f"][0]
        found = {d["_id"]: d["name"] for d in doc["found"]}
        return " > ".join([found[a] for a in doc["ancestors"]] + [doc["name"]])
    status, line = evaluate("3.3", in_facet, tree=ancestors, categories=categories, node=4)
    if backend.info.caps.explain:
        assert status == "not right yet" and "$facet" in line, line

    def swapped(node):  # an indexed $eq with the let variable first: a right form, judged and passed
        doc = next(ancestors.collection.aggregate([
            {"$match": {"_id": node}}, {"$unwind": "$ancestors"},
            {"$lookup": {"from": ancestors.collection.name, "let": {"a": "$ancestors"}, "as": "up",
                         "pipeline": [{"$match": {"$expr": {"$eq": ["$$a", "$_id"]}}}, {"$project": {"name": 1}}]}},
            {"$group": {"_id": "$_id", "name": {"$first": "$name"}, "names": {"$push": {"$first": "$up.name"}}}}],
            batchSize=10), None)
        if doc is None:
            return ancestors.collection.find_one({"_id": node})["name"]
        return " > ".join([*doc["names"], doc["name"]])
    status, line = evaluate("3.3", swapped, tree=ancestors, categories=categories, node=4)
    assert "(not $in)" not in line, line
    status, line = evaluate("3.3", text(ancestors.breadcrumbs), tree=ancestors, categories=categories, node=4)
    assert status == "not right yet" and "2 round trips" in line
    status, line = evaluate("3.3", text(t["MaterializedPaths"].breadcrumbs), tree=ancestors,
                            categories=categories, node=4)
    assert status == "not right yet" and "ex3_ancestorsarray" in line and "ex3_materializedpaths" in line
    # 3.4
    assert evaluate("3.4", 2, categories=categories, category=1)[0] == "correct"
    assert evaluate("3.4", 3, categories=categories, category=1)[0] == "not right yet"
    # 3.2: the subtree in the pattern's fewest round trips, then the products, with batch_size
    products = workbook_collection(db, "tree_products")
    products.insert_many([{"_id": i, "category_id": 4 if i <= 150 else 5} for i in range(1, 451)])
    products.create_index("category_id")

    def two_queries(tree, batch=1000):   # the walk down, then the products: a round trip more than needed
        walk = getattr(tree, "graph_descendants", getattr(tree, "lookup_descendants", tree.descendants))
        return lambda c: sorted(d["_id"] for d in products.find({"category_id": {"$in": [c, *walk(c)]}}, {"_id": 1},
                                                                 batch_size=batch))

    def one_aggregate_of(name, tree):   # the notebook's solution: the walk down, then $lookup from the products
        def under(c):
            def ids_of(found):
                return {"$concatArrays": [["$_id"], {"$map": {"input": found, "in": "$$this._id"}}]}

            if name in ("ParentRefs", "ChildRefs"):
                head = tree.graph_pipeline(c, up=False)[:2] + [{"$project": {"inside": ids_of("$found")}}]
            elif name == "MaterializedPaths":
                below = {"$and": [{"$gte": ["$path", "$$lo"]}, {"$lt": ["$path", "$$hi"]}]}
                head = [{"$match": {"_id": c}},
                        {"$lookup": {"from": tree.collection.name, "as": "below",
                                     "let": {"lo": {"$concat": ["$path", "/"]}, "hi": {"$concat": ["$path", "0"]}},
                                     "pipeline": [{"$match": {"$expr": below}}, {"$project": {"_id": 1}}]}},
                        {"$project": {"inside": ids_of("$below")}}]
            else:
                head = [{"$match": {"$or": [{"_id": c}, {tree.key: c}]}}, {"$project": {"inside": "$_id"}}]
            join = [{"$lookup": {"from": products.name, "localField": "inside", "foreignField": "category_id",
                                 "as": "p"}}, {"$unwind": "$p"}, {"$project": {"_id": "$p._id"}}]
            return sorted(d["_id"] for d in tree.collection.aggregate(head + join, batchSize=1000))
        return under

    context = {"products": products, "categories": categories, "category": 1, "patterns": t}
    right = {name: one_aggregate_of(name, tree) for name, tree in t.items()}
    assert evaluate("3.2", right, **context)[0] == "correct", evaluate("3.2", right, **context)
    status, line = evaluate("3.2", {name: two_queries(tree) for name, tree in t.items()}, **context)
    assert status == "not right yet" and "round trips; 1 is enough" in line, line  # the text asks for one aggregate
    loops = {**right, "ParentRefs": lambda c: sorted(
        d["_id"] for d in products.find({"category_id": {"$in": [c, *t["ParentRefs"].descendants(c)]}},
                                        batch_size=1000))}
    status, line = evaluate("3.2", loops, **context)
    assert status == "not right yet" and "ParentRefs" in line and "round trips; 1 is enough" in line
    default_batch = {**right, "ChildRefs": lambda c: sorted(
        d["_id"] for d in products.find({"category_id": {"$in": [c, *t["ChildRefs"].graph_descendants(c)]}}))}
    status, line = evaluate("3.2", default_batch, **context)
    assert status == "not right yet" and "batch_size" in line and "ChildRefs" in line
    every_product = {**right, "AncestorsArray": lambda c: sorted(
        d["_id"] for d in products.find({}, batch_size=1000)
        if d["category_id"] in [c, *t["AncestorsArray"].descendants(c)])}
    status, line = evaluate("3.2", every_product, **context)
    assert status == "not right yet" and "AncestorsArray" in line
    scanned = {**right, "AncestorsArray": lambda c: sorted(  # one aggregate, the right ids, every product examined
        d["_id"] for d in products.aggregate([
            {"$lookup": {"from": t["AncestorsArray"].collection.name, "localField": "category_id",
                         "foreignField": "_id", "as": "c"}},
            {"$match": {"$or": [{"c._id": c}, {"c.ancestors": c}]}}, {"$project": {"_id": 1}}], batchSize=1000))}
    status, line = evaluate("3.2", scanned, **context)
    if backend.info.caps.explain:
        assert status == "not right yet" and "examined" in line and "AncestorsArray" in line, line
    one_aggregate = {**right, "AncestorsArray": lambda c: sorted(  # one round trip: the subtree joined to its products
        p["_id"] for d in t["AncestorsArray"].collection.aggregate([
            {"$match": {"$or": [{"_id": c}, {"ancestors": c}]}}, {"$project": {"_id": 1}},
            {"$lookup": {"from": products.name, "localField": "_id", "foreignField": "category_id", "as": "p"}},
            {"$project": {"p._id": 1}}], batchSize=1000) for p in d["p"])}
    assert evaluate("3.2", one_aggregate, **context)[0] == "correct", evaluate("3.2", one_aggregate, **context)
    in_expr = {**right, "AncestorsArray": lambda c: sorted(  # one aggregate whose $lookup no index serves ($in in $expr)
        p["_id"] for d in t["AncestorsArray"].collection.aggregate([
            {"$match": {"$or": [{"_id": c}, {"ancestors": c}]}}, {"$group": {"_id": None, "ids": {"$push": "$_id"}}},
            {"$lookup": {"from": products.name, "let": {"ids": "$ids"}, "as": "p",
                         "pipeline": [{"$match": {"$expr": {"$in": ["$category_id", "$$ids"]}}}, {"$project": {"_id": 1}}]}},
            {"$project": {"p._id": 1}}], batchSize=1000) for p in d["p"])}
    status, line = evaluate("3.2", in_expr, **context)
    if backend.info.caps.explain:  # judged, not passed unjudged
        assert status == "not right yet" and "AncestorsArray" in line and "localField" in line, line
    wrong = {**right, "ChildRefs": lambda c: [1, 2]}
    status, line = evaluate("3.2", wrong, **context)
    assert status == "not right yet" and "ChildRefs" in line and "ParentRefs" not in line
    # 3.2: one function for every pattern that never reads the pattern's collection, or no round trip at all
    below = {1: [1, 2, 3, 4], 2: [2, 3, 4], 3: [3, 4], 4: [4], 5: [5]}
    elsewhere = {name: (lambda c: sorted(d["_id"] for d in products.find({"category_id": {"$in": below[c]}},
                                                                         {"_id": 1}, batch_size=1000))) for name in t}
    status, line = evaluate("3.2", elsewhere, **context)
    assert status == "not right yet" and "never read" in line, line
    cached = {d["_id"]: d["category_id"] for d in products.find({}, batch_size=1000)}
    status, line = evaluate("3.2", {name: (lambda c: sorted(i for i, k in cached.items() if k in below[c])) for name in t},
                            **context)
    assert status == "not right yet" and "no round trip" in line, line
    # 3.2: a right materialized paths answer that joins the products inside the range's sub-pipeline
    paths = t["MaterializedPaths"].collection

    def nested(c):
        within = {"$and": [{"$gte": ["$path", "$$lo"]}, {"$lt": ["$path", "$$hi"]}]}
        ids = {"$concatArrays": [{"$map": {"input": "$own", "in": "$$this._id"}}, {"$reduce": {
            "input": "$below", "initialValue": [], "in": {"$concatArrays": ["$$value", {"$map": {
                "input": "$$this.p", "as": "x", "in": "$$x._id"}}]}}}]}
        out = list(paths.aggregate([
            {"$match": {"_id": c}},
            {"$lookup": {"from": paths.name, "as": "below", "let": {"lo": {"$concat": ["$path", "/"]},
                                                                     "hi": {"$concat": ["$path", "0"]}},
                         "pipeline": [{"$match": {"$expr": within}},
                                      {"$lookup": {"from": products.name, "localField": "_id",
                                                   "foreignField": "category_id", "as": "p"}},
                                      {"$project": {"_id": 0, "p._id": 1}}]}},
            {"$lookup": {"from": products.name, "localField": "_id", "foreignField": "category_id", "as": "own"}},
            {"$project": {"_id": 0, "ids": ids}}], batchSize=1000))
        return sorted(out[0]["ids"])
    assert evaluate("3.2", {**right, "MaterializedPaths": nested}, **context)[0] == "correct", \
        evaluate("3.2", {**right, "MaterializedPaths": nested}, **context)
    # 3.1 and 3.3: the text from data already in Python (no round trip) is refused
    known = {1: "A", 2: "A > B", 3: "A > B > C", 4: "A > B > C > D", 5: "E"}
    for number, extra in (("3.1", {}), ("3.3", {"tree": ancestors})):
        status, line = evaluate(number, lambda n: known[n], categories=categories, node=4, **extra)
        assert status == "not right yet" and "no round trip" in line, (number, line)
    # 3.3: a round trip to another collection only... and none to the ancestors array's is refused
    status, line = evaluate("3.3", lambda n: (categories.find_one({"_id": n}, {"_id": 1}), known[n])[1],
                            tree=ancestors, categories=categories, node=4)
    assert status == "not right yet" and "ex3_ancestorsarray" in line, line


@exercise("98.3", hint="query the fruit collection", query_result=True)
def _fruit_query(answer, *, fruit):
    want = sorted(d["_id"] for d in fruit.find({"name": {"$regex": "^ap"}}))
    return None if answer == want else f"{len(answer)} ids, not the {len(want)} fruits starting with 'ap'"


def test_an_empty_query_answer_names_the_bare_regex_deviation_where_it_applies(db, backend):
    """On an engine where a bare regex on an indexed field matches nothing, an EMPTY answer to a
    query exercise says so; a wrong non-empty answer does not; the probe decides, not the name."""
    import re as _re

    fruit = db["fruit"]
    fruit.insert_many([{"_id": i, "name": n} for i, n in enumerate(["apple", "apricot", "banana"])])
    fruit.create_index("name")
    learner = sorted(d["_id"] for d in fruit.find({"name": _re.compile("^ap")}))
    assert (learner == []) == (not backend.info.caps.bare_regex_indexed)  # the deviation, as probed
    status, line = evaluate("98.3", [], fruit=fruit)
    assert status == "not right yet"
    assert ("bare regex" in line and '{"$regex"' in line) == (not backend.info.caps.bare_regex_indexed)
    status, line = evaluate("98.3", [2], fruit=fruit)
    assert status == "not right yet" and "bare regex" not in line
    assert evaluate("98.3", [0, 1], fruit=fruit)[0] == "correct"
    # a checker not flagged as comparing a query result never adds the note
    assert "bare regex" not in evaluate("98.1", 0)[1]


def test_exercise_4_6_accepts_region_rules_and_refuses_loose_or_tight_ones(db):
    reports = db["geo_reports"]
    reports.insert_many([{"_id": f"r{i}", "recordType": 3, "lat": 46.0 + i / 10, "lon": 7.0 + i / 10}
                         for i in range(10)])
    good = {"lat": {"minimum": 40, "maximum": 55}, "lon": {"minimum": -5, "maximum": 20}}
    assert evaluate("4.6", good, aerodata=reports)[0] == "correct"
    loose = {"lat": {"minimum": -90, "maximum": 90}, "lon": {"minimum": -180, "maximum": 180}}
    status, line = evaluate("4.6", loose, aerodata=reports)
    assert status == "not right yet" and "swapped still pass" in line
    tight = {"lat": {"minimum": 46.5, "maximum": 55}, "lon": {"minimum": -5, "maximum": 20}}
    status, line = evaluate("4.6", tight, aerodata=reports)
    assert status == "not right yet" and "stored reports break" in line
    assert evaluate("4.6", {"lat": 1}, aerodata=reports)[0] == "not right yet"


def test_on_a_server_each_answer_is_also_recorded_in_the_learners_own_database(backend, capsys, tmp_path,
                                                                               monkeypatch):
    import uuid

    from helpers import backends
    from helpers.safety import PROGRESS, is_workbook_collection, reset_workbook

    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/98_test.ipynb")
    monkeypatch.setattr(backends._SHARED, "current", backend)  # this process's connection: the learner's own database
    db = backend.db
    db.drop_collection(PROGRESS)
    try:
        check("98.1", None)  # not done yet: not an attempt
        check("98.1", 4)
        check("98.1", 5)
        check("98.1", 1)
        on_server = backend.info.name == "mongodb"
        docs = list(db[PROGRESS].find())
        if not on_server:  # offline: the local file only, as before
            assert docs == []
            return
        assert len(docs) == 1 and is_workbook_collection(db, PROGRESS)
        doc = docs[0]
        assert (doc["_id"], doc["notebook"], doc["passed"], doc["attempts"]) == ("98.1", "98_test", False, 3)
        assert doc["last"].year >= 2024
        # a Setup cell's reset keeps the results; other databases get nothing
        other = f"wbtest_{uuid.uuid4().hex[:10]}"
        reset_workbook(db)
        assert db[PROGRESS].count_documents({}) == 1
        assert other not in backend.client.list_database_names()
        # a collection of that name the workbook did not make is never written
        db.drop_collection(PROGRESS)
        db["workbook_registry"].delete_one({"_id": PROGRESS})
        db[PROGRESS].insert_one({"_id": "someone else's"})
        assert exercises.record_server_progress(db, "98.1", True) is False
        assert list(db[PROGRESS].find()) == [{"_id": "someone else's"}]
    finally:
        db.drop_collection(PROGRESS)
        db["workbook_registry"].delete_one({"_id": PROGRESS})


def test_exercise_ids_list_every_checker_in_order():
    evaluate("98.1", 1)  # registers this file's checkers of notebook 98 in this process
    ids = exercises.exercise_ids()
    assert ids[0] == "0.1" and {"1.4", "4.6", "7.3"} <= set(ids)
    assert ids == sorted(ids, key=lambda e: tuple(int(x) for x in e.split(".")))
    assert not [e for e in ids if e.startswith("98.")], "a checker the tests registered is no lesson's exercise"


def test_checks_of_notebook_08_run_the_function_and_enforce_its_round_trips_and_documents(db):
    import datetime as dt

    from helpers import buckets as bk

    t0 = dt.datetime(2018, 8, 1, 5)
    reports = [{"icao24": a, "time": t0 + dt.timedelta(minutes=7 * i + k), "altitude": float(1000 + i)}
               for i in range(20) for k, a in enumerate(("abc123", "def456"))]
    coll = db["buckets"]
    bk.bucket_reports(coll, reports, max_reports=5)
    right = {}
    for r in reports:
        if r["icao24"] == "abc123":
            h = right.setdefault(bk.window_start(r["time"]), [0, []])
            h[0] += 1
            h[1].append(r["altitude"])
    right = {k: (n, min(a), max(a)) for k, (n, a) in right.items()}
    summed = lambda c, icao24: {g["_id"]: (g["n"], g["lo"], g["hi"]) for g in c.aggregate([  # noqa: E731
        {"$match": {"icao24": icao24}},
        {"$group": {"_id": "$start", "n": {"$sum": "$count"}, "lo": {"$min": "$minAltitude"},
                    "hi": {"$max": "$maxAltitude"}}}], batchSize=100)}

    def summaries_by_find(c, icao24):  # another right form: the summary fields only, added up in Python
        out = {}
        for b in c.find({"icao24": icao24}, {"_id": 0, "start": 1, "count": 1, "minAltitude": 1,
                                            "maxAltitude": 1}, batch_size=100):
            n, lo, hi = out.get(b["start"], (0, b["minAltitude"], b["maxAltitude"]))
            out[b["start"]] = (n + b["count"], min(lo, b["minAltitude"]), max(hi, b["maxAltitude"]))
        return out

    def from_reports(c, icao24):  # right answer, but every report sent
        return {h: v for h, v in right.items()} if list(c.find({"icao24": icao24}, batch_size=100)) else {}

    def per_hour(c, icao24):  # right answer, a round trip per hour
        return {h: summed(c, icao24)[h] for h in sorted(summed(c, icao24))}

    precomputed = summed(coll, "abc123")  # the attack: one dummy query, then an answer computed beforehand
    dummy = lambda c, icao24: (c.find_one({"icao24": icao24}, {"_id": 1}), precomputed)[1]  # noqa: E731
    closed_over = lambda c, icao24: summed(coll, icao24)  # noqa: E731 - reads another collection than it is given
    for form in (summed, summaries_by_find):
        assert evaluate("8.1", form, buckets=coll, icao24="abc123")[0] == "correct", form
    for form in (right, from_reports, per_hour, dummy, closed_over,
                 lambda c, icao24: {**summed(c, icao24), t0: (1, 0.0, 0.0)}):
        assert evaluate("8.1", form, buckets=coll, icao24="abc123")[0] == "not right yet", form
    assert "copy" in evaluate("8.1", dummy, buckets=coll, icao24="abc123")[1]

    since = t0 + dt.timedelta(minutes=100)

    def grouped(c, s):
        return {g["_id"]: g["r"] for g in c.aggregate([
            {"$match": {"last": {"$gte": s}}}, {"$sort": {"icao24": 1, "last": -1}},
            {"$group": {"_id": "$icao24", "last": {"$first": "$last"}, "reports": {"$first": "$reports"}}},
            {"$project": {"r": {"$arrayElemAt": [{"$filter": {"input": "$reports",
                                                              "cond": {"$eq": ["$$this.time", "$last"]}}}, 0]}}}],
            batchSize=100)}

    def whole_map_then_filter(c, s):  # right answer, every aircraft's document sent
        return {r["icao24"]: {k: v for k, v in r.items() if k != "icao24"}
                for r in bk.latest_positions(c, design=bk.BUCKETS) if r["time"] >= s}

    assert evaluate("8.2", grouped, buckets=coll, since=since)[0] == "correct"
    assert evaluate("8.2", lambda c, s: {a: {"icao24": a, **r} for a, r in grouped(c, s).items()}, buckets=coll,
                    since=since)[0] == "correct"  # icao24 in the report too
    known = grouped(coll, since)
    status, message = evaluate("8.2", lambda c, s: (c.find_one({}, {"_id": 1}), known)[1], buckets=coll, since=since)[:2]
    assert status == "not right yet" and "copy" in message  # a dummy query and a precomputed map
    coll.insert_one({"icao24": "old999", "start": t0, "n": 0, "count": 1, "first": t0, "last": t0,
                     "reports": [{"time": t0}], "cap": 5})  # an aircraft not heard since
    status, message = evaluate("8.2", whole_map_then_filter, buckets=coll, since=since)[:2]
    assert status == "not right yet" and "documents" in message
    assert evaluate("8.2", known, buckets=coll, since=since)[0] == "not right yet"  # not a function

    late = {"icao24": "abc123", "time": t0 + dt.timedelta(seconds=30)}
    find_home = lambda c, r: tuple(c.find_one({"icao24": r["icao24"], "reports.time": r["time"]},  # noqa: E731
                                              {"_id": 0, "start": 1, "n": 1}).values())
    assert evaluate("8.3", find_home, buckets=coll, report=late)[0] == "not right yet"  # not stored yet
    bk.bucket_reports(coll, [late], max_reports=5)
    for _ in range(3):  # the check's own late report is random: every run is right
        assert evaluate("8.3", find_home, buckets=coll, report=late)[0] == "correct"
    whole = lambda c, r: (lambda b: (b["start"], b["n"]))(c.find_one({"reports.time": r["time"]}))  # noqa: E731
    status, message = evaluate("8.3", whole, buckets=coll, report=late)[:2]
    assert status == "not right yet" and "project" in message
    home = coll.find_one({"reports.time": late["time"]})
    assert evaluate("8.3", lambda c, r: (home["start"], home["n"] + 1), buckets=coll, report=late)[0] == "not right yet"
    pair = (home["start"], home["n"])  # the straggler's home, found beforehand: the check's own late report differs
    status, message = evaluate("8.3", lambda c, r: (c.find_one({}, {"_id": 0, "n": 1}), pair)[1],
                               buckets=coll, report=late)[:2]
    assert status == "not right yet" and "copy" in message
    assert not [n for n in db.list_collection_names() if n.startswith("exercise_8_buckets")]  # every copy dropped
    theirs = db["exercise_8_buckets"]  # somebody's collection under the copies' prefix: never touched
    theirs.insert_one({"_id": "mine"})
    assert evaluate("8.3", find_home, buckets=coll, report=late)[0] == "correct"
    assert list(theirs.find({})) == [{"_id": "mine"}]


def test_checks_of_notebook_08_refuse_answers_that_hold_only_where_each_hour_is_one_bucket(db):
    """Every aircraft-hour one bucket (as in the notebook): the check's copy splits the hour it tests, so
    reading one bucket an hour, an array's last element or bucket 0 is wrong there."""
    import datetime as dt

    from helpers import buckets as bk

    t0 = dt.datetime(2018, 8, 1, 5)
    reports = [{"icao24": a, "time": t0 + dt.timedelta(minutes=3 * i + k), "altitude": float(1000 + 7 * i + k)}
               for i in range(60) for k, a in enumerate(("abc123", "def456", "0a0b0c"))]
    coll = db["buckets_one_per_hour"]
    bk.bucket_reports(coll, reports, max_reports=200)
    assert coll.count_documents({"n": {"$gt": 0}}) == 0  # the case the checks must not be fooled by
    since = reports[-1]["time"] - dt.timedelta(hours=1)
    late = {"icao24": "def456", "time": t0 + dt.timedelta(seconds=30)}
    bk.bucket_reports(coll, [late], max_reports=200)

    def no_sum(c, icao24):  # one bucket's summary per hour: the last bucket of an hour wins
        return {b["start"]: (b["count"], b["minAltitude"], b["maxAltitude"]) for b in c.find(
            {"icao24": icao24}, {"_id": 0, "start": 1, "count": 1, "minAltitude": 1, "maxAltitude": 1}, batch_size=100)}

    def last_element(order):  # the newest bucket's last array element, not the report of greatest time
        return lambda c, s: {g["_id"]: g["r"] for g in c.aggregate([
            {"$match": {"last": {"$gte": s}}}, {"$sort": {"icao24": 1, **order}},
            {"$group": {"_id": "$icao24", "reports": {"$first": "$reports"}}},
            {"$project": {"r": {"$arrayElemAt": ["$reports", -1]}}}], batchSize=100)}

    def bounded(c, s):  # the solution: start bounds the scan
        return {g["_id"]: g["r"] for g in c.aggregate([
            {"$match": {"start": {"$gt": s - bk.SPAN}, "last": {"$gte": s}}}, {"$sort": {"icao24": 1, "last": -1}},
            {"$group": {"_id": "$icao24", "last": {"$first": "$last"}, "reports": {"$first": "$reports"}}},
            {"$project": {"r": {"$arrayElemAt": [{"$filter": {"input": "$reports",
                                                              "cond": {"$eq": ["$$this.time", "$last"]}}}, 0]}}}],
            batchSize=100)}

    def of_hour(sort):  # a bucket of the report's hour, without reports.time
        return lambda c, r: (lambda b: (b["start"], b["n"]))(c.find_one(
            {"icao24": r["icao24"], "start": bk.window_start(r["time"])}, {"_id": 0, "start": 1, "n": 1}, sort=sort))

    computed = lambda c, r: (c.find_one({}, {"_id": 1}), (bk.window_start(r["time"]), 0))[1]  # noqa: E731
    find_home = lambda c, r: (lambda b: (b["start"], b["n"]))(c.find_one(  # noqa: E731
        {"icao24": r["icao24"], "reports.time": r["time"]}, {"_id": 0, "start": 1, "n": 1}))
    for _ in range(3):  # the check's additions are random: every run refuses them
        assert evaluate("8.1", no_sum, buckets=coll, icao24="abc123")[0] == "not right yet"
        for order in ({"last": -1}, {"start": -1, "n": -1}):
            assert evaluate("8.2", last_element(order), buckets=coll, since=since)[0] == "not right yet", order
        assert evaluate("8.2", bounded, buckets=coll, since=since)[0] == "correct"
        for form in (of_hour([("n", 1)]), of_hour([("n", -1)]), computed):
            assert evaluate("8.3", form, buckets=coll, report=late)[0] == "not right yet"
        assert evaluate("8.3", find_home, buckets=coll, report=late)[0] == "correct"
    assert not [n for n in db.list_collection_names() if n.startswith("exercise_8_buckets")]  # every copy dropped


def _rt(round_trips, written=0):
    return {"round trips": round_trips, "docs returned": 0, "bytes returned": 0, "docs written": written}


def test_exercise_4_7_takes_the_airline_subsets_extra_documents_written_a_day():
    from helpers.aerodata import IN_AIRLINE
    from helpers.workload import Operation, Workload

    workload = Workload("tracker", (Operation("store a report", "write", 10_000, "any", "x", "assumption: a test"),
                                    Operation("latest position of a fleet", "read", 8_640, "any", "x", "assumption")))

    def design(written):
        return {"store a report": {**_rt(1, written), "index keys written": 2},
                "latest position of a fleet": {**_rt(1), "bytes returned": 100}}

    costs = {"one collection": design(1), "one collection + subset": design(1.5), IN_AIRLINE: design(1.1)}
    assert evaluate("4.7", 1_000, workload=workload, designs=costs)[0] == "correct"
    assert evaluate("4.7", 1_000.0, workload=workload, designs=costs)[0] == "correct"
    assert "subtract one collection" in evaluate("4.7", 11_000, workload=workload, designs=costs)[1]
    assert "in each aircraft" in evaluate("4.7", 5_000, workload=workload, designs=costs)[1]
    for wrong in (0, -1_000, 10_000, 5_000, "1000", True):
        assert evaluate("4.7", wrong, workload=workload, designs=costs)[0] == "not right yet", wrong


def test_exercise_1_5_finds_the_page_views_where_the_pick_flips():
    from helpers.workload import Operation, Workload

    workload = Workload("shop", tuple(Operation(name, kind, rate, "any", "x", "assumption: a test")
                                      for name, kind, rate in (("view a product page", "read", 1000),
                                                               ("add a co-author to a book", "write", 20),
                                                               ("rename an author", "write", 5))))
    costs = {"embed": {"view a product page": _rt(1), "add a co-author to a book": _rt(2, 2),
                               "rename an author": _rt(2, 72)},
             "reference": {"view a product page": _rt(2), "add a co-author to a book": _rt(1, 1),
                           "rename an author": _rt(1, 1)}}
    # embed: v + 40 + 10; reference: 2v + 20 + 5. Equal at v = 25, and within 3 % (a tie) up to 27:
    # at 28, 81 > 1.03 * 78, and "embed" is the pick outright
    assert workload.with_rate("view a product page", 27).pick(costs, by="round trips / day").tie
    assert evaluate("1.5", 28, workload=workload, costs=costs)[0] == "correct"
    for wrong in (25, 27, 29, 1000, 0, "28", True):
        assert evaluate("1.5", wrong, workload=workload, costs=costs)[0] == "not right yet", wrong
    assert "tie" in evaluate("1.5", 27, workload=workload, costs=costs)[1]  # says why 27 is not the answer
    # by the server's work: a page examines 1 document embedded, 11 referenced; the writes the other way
    work = {("embed", "view a product page"): 1, ("embed", "add a co-author to a book"): 2,
            ("embed", "rename an author"): 1001, ("reference", "view a product page"): 11,
            ("reference", "add a co-author to a book"): 1, ("reference", "rename an author"): 1}
    examined = {d: {op: {**c, "keys examined": work[(d, op)], "docs examined": work[(d, op)]}
                    for op, c in per_op.items()} for d, per_op in costs.items()}
    by = "docs examined / day"
    # embed: v + 40 + 5005; reference: 11v + 20 + 5; a tie from v = 486 to 518, "embed" from 519
    assert evaluate("1.5", 519, workload=workload, costs=examined, by=by)[0] == "correct"
    for wrong in (485, 486, 502, 518, 520, 28):
        assert evaluate("1.5", wrong, workload=workload, costs=examined, by=by)[0] == "not right yet", wrong
    assert evaluate("1.5", 0, workload=workload, costs=examined, by=by)[0] == "not right yet"
    assert evaluate("1.5", 519, workload=workload, costs=examined, by="keys examined / day")[0] == "correct"  # the notebook's
    # costs without the server's work (an engine that cannot explain): no flip to find, and the answer is 0
    assert evaluate("1.5", 519, workload=workload, costs=costs, by=by)[0] == "not right yet"
    assert evaluate("1.5", 0, workload=workload, costs=costs, by=by)[0] == "correct"
    # the notebook's solution (bisection on the outright pick) finds the same answers
    for c, b, want in ((costs, "round trips / day", 28), (examined, by, 519)):
        low, high = 1, 1000
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if workload.with_rate("view a product page", mid).pick(c, by=b) == "embed" \
                else (mid + 1, high)
        assert low == want

def test_checks_of_notebook_01_accept_every_right_form_and_refuse_wrong_evidence(db):
    """1.1 takes a tuple or a list; 1.2 refuses a pipeline whose order comes from how the authors are
    stored; 1.3 takes every key whose figure supports the choice, and refuses one that ties."""
    import bson as _bson

    from helpers import generators as g
    from helpers.datasets import load_dataset
    from helpers.safety import workbook_collection

    load_dataset("products", db, scale=20)
    products = workbook_collection(db, "products")
    pair = max(((p["_id"], len(_bson.encode(p))) for p in products.find({})), key=lambda t: (t[1], -t[0]))
    smaller = next(p["_id"] for p in products.find({}) if len(_bson.encode(p)) != pair[1])
    products.update_many({}, {"$unset": {"reviews": ""}})   # as section 1.8 leaves them: 1.1 measures them before
    after = max(((p["_id"], len(_bson.encode(p))) for p in products.find({})), key=lambda t: (t[1], -t[0]))
    assert evaluate("1.1", pair, products=products)[0] == "correct"
    assert evaluate("1.1", list(pair), products=products)[0] == "correct"
    assert evaluate("1.1", (smaller, pair[1]), products=products)[0] == "not right yet"
    status, line = evaluate("1.1", after, products=products)
    assert status == "not right yet" and "section 1.8" in line, line
    assert not [n for n in db.list_collection_names() if n.startswith("exercise_1_1_products")]
    theirs = db["exercise_1_1_products"]  # somebody's collection under the copy's prefix: never touched
    theirs.insert_one({"_id": "mine"})
    assert evaluate("1.1", pair, products=products)[0] == "correct"
    assert list(theirs.find({})) == [{"_id": "mine"}]
    assert "empty" in evaluate("1.1", pair, products=db["no_products_here"])[1]
    assert "product _id" in evaluate("1.1", ([1], pair[1]), products=products)[1]
    people, written = g.authors_and_books(5, 7)
    authors, books = workbook_collection(db, "authors"), workbook_collection(db, "books")
    authors.insert_many(people)
    books.insert_many(written)
    join = {"$lookup": {"from": "books", "localField": "_id", "foreignField": "author_ids", "as": "b"}}
    count = {"$project": {"_id": 1, "name": 1, "book_count": {"$size": "$b"}}}
    for right in ([{"$sort": {"_id": 1}}, join, count], [join, count, {"$sort": {"_id": 1}}]):
        assert evaluate("1.2", right, authors=authors, books=books)[0] == "correct"
    extra = {"$project": {"_id": 1, "name": 1, "book_count": {"$size": "$b"}, "b": 1}}
    status, line = evaluate("1.2", [{"$sort": {"_id": 1}}, join, extra], authors=authors, books=books)
    assert status == "not right yet" and "exactly _id, name, book_count" in line, line
    counted = {"$lookup": {"from": "books", "localField": "_id", "foreignField": "author_ids",
                           "pipeline": [{"$count": "n"}], "as": "c"}}   # right per the manual
    to_field = {"$project": {"_id": 1, "name": 1, "book_count": {"$ifNull": [{"$first": "$c.n"}, 0]}}}
    status, line = evaluate("1.2", [{"$sort": {"_id": 1}}, counted, to_field], authors=authors, books=books)
    assert status == "correct" or "$count stage inside a $lookup" in line, line   # an engine's refusal explained
    status, line = evaluate("1.2", [join, count], authors=authors, books=books)  # stored in _id order only
    assert status == "not right yet" and "sorted by _id" in line
    assert not [n for n in db.list_collection_names() if n.startswith("exercise_1_2_authors_reordered")]
    measured = {"product page docs examined, embedded": 1, "product page docs examined, referenced": 9,
                "product page round trips, referenced": 1, "product page bytes, referenced": 918,
                "largest product, bytes": 11_608, "median reviews per product": 4,
                "rename: documents written, duplicated name": 74, "rename: documents to change, duplicated name": 74,
                "rename: documents to change, reference only": 1, "reviews that fit in 16 MiB": 140_000,
                "reviews refused at": 150_000, "largest array write, document bytes": 1_141_882,
                "review insert, document bytes": 125}
    b, c = ("reference", "rename: documents written, duplicated name"), ("reference", "reviews refused at")
    for a in ("product page docs examined, embedded", "product page docs examined, referenced",
              "largest product, bytes"):
        assert evaluate("1.3", {"A": ("embed", a), "B": b, "C": c}, measured=measured)[0] == "correct", a
    for key in ("reviews that fit in 16 MiB", "reviews refused at", "largest array write, document bytes"):
        assert evaluate("1.3", {"A": ["embed", "largest product, bytes"], "B": b, "C": ("reference", key)},
                        measured=measured)[0] == "correct", key
    for tie in ("product page round trips, referenced", "product page bytes, referenced",
                "median reviews per product"):  # a tie, or a count that is no cost: no evidence for embed
        assert evaluate("1.3", {"A": ("embed", tie), "B": b, "C": c}, measured=measured)[0] == "not right yet", tie
    assert evaluate("1.3", {"A": ("reference", "largest product, bytes"), "B": b, "C": c},
                    measured=measured)[0] == "not right yet"
    unexplained = {**measured, "product page docs examined, embedded": None, "product page docs examined, referenced": None}
    a = ("embed", "product page docs examined, referenced")  # the engine did not explain: no figure, no evidence
    status, line = evaluate("1.3", {"A": a, "B": b, "C": c}, measured=unexplained)
    assert status == "not right yet" and "largest product, bytes" in line, line
    assert evaluate("1.3", {"A": ("embed", "largest product, bytes"), "B": b, "C": c}, measured=unexplained)[0] == "correct"
    backwards = {**measured, "product page docs examined, embedded": 9}
    assert evaluate("1.3", {"A": a, "B": b, "C": c}, measured=backwards)[0] == "not right yet"


def _forum(db, threshold=2):
    """A small forum laid out by the outlier pattern (posts 1 and 2, post 2 flagged) and referenced
    (comments_ref), as notebook 02 has it after section 2.4."""
    from helpers.outlier import OVERFLOW, load_outlier_posts
    from helpers.safety import workbook_collection

    source = [{"_id": 1, "comments": [{"n": n} for n in range(2)]}, {"_id": 2, "comments": [{"n": n} for n in range(7)]}]
    load_outlier_posts(db, source, threshold)
    workbook_collection(db, "comments_ref").insert_many([{"post_id": p["_id"], **c} for p in source for c in p["comments"]])
    db[OVERFLOW].insert_one({"_id": {"post_id": 2, "seq": 8}, "post_id": 2, "seq": 8, "lost": True})  # a repaired hole
    return source


def test_exercise_2_3_counts_the_documents_a_day_of_pages_reads(db):
    from helpers.workload import Operation, Workload

    _forum(db)
    workload = Workload("forum", tuple(Operation(n, "read", r, "any", "x", "assumption: a test")
                                       for n, r in (("view a typical post", 90), ("view the viral post", 10))))
    # typical: referenced 1 + 2, pattern 1 + 0; viral: referenced 1 + 7, pattern 1 + 5 overflow + 1 lost marker
    context = {"db": db, "workload": workload, "typical_id": 1, "viral_id": 2}
    for right in (90 * 2 + 10 * 1, 190.0):
        assert evaluate("2.3", right, **context)[0] == "correct", right
    for wrong in (90 * 2 + 10 * 2, 0, "190", True, 190.5):
        assert evaluate("2.3", wrong, **context)[0] == "not right yet", wrong
    assert "the viral post's views save some" in evaluate("2.3", 90 * 2, **context)[1]


def _newest_forum(db):
    """Posts laid out with threshold 10: 1 unflagged; 2 busy (200 comments of 200 characters); 3 flagged
    with 15 overflowed (a top-up of 5 from the embedded); 4 flagged with fewer comments than 3, its
    overflow in buckets (as section 2.6's write-path post): the checks must read posts_overflow's."""
    from helpers.outlier import BUCKET_SIZE, OVERFLOW_BUCKETS, load_outlier_posts, outlier_layout
    from helpers.safety import workbook_collection

    source = [{"_id": i, "comments": [{"n": n, "text": "x" * 200} for n in range(count)]}
              for i, count in ((1, 3), (2, 200), (3, 25))]
    load_outlier_posts(db, source, 10)
    post, buckets = outlier_layout({"_id": 4, "comments": [{"n": n} for n in range(24)]}, 2, bucket_size=BUCKET_SIZE)
    db["posts"].insert_one(post)
    workbook_collection(db, OVERFLOW_BUCKETS).insert_many(buckets)


def _newest(db, post_id, n=20):   # the solution: lost markers skipped in the query, so the limit counts comments
    post = db["posts"].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "hasOverflow": 1})
    newest = []
    if post.get("hasOverflow"):
        newest = [d["comment"] for d in db["posts_overflow"].find({"post_id": post_id, "lost": {"$ne": True}},
                                                                  {"_id": 0, "comment": 1}).sort("seq", -1).limit(n)]
    return newest + post.get("comments", [])[::-1][:n - len(newest)]


def _newest_by_count(db, post_id, n=20):   # right too: the top-up from commentCount (no lost marker among the newest n)
    post = db["posts"].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "commentCount": 1, "hasOverflow": 1})
    over = post["commentCount"] - len(post["comments"]) if post.get("hasOverflow") else 0
    newest = [d["comment"] for d in db["posts_overflow"].find({"post_id": post_id, "lost": {"$ne": True}},
                                                              {"_id": 0, "comment": 1}).sort("seq", -1).limit(n)] if over else []
    return newest + post["comments"][::-1][:max(0, n - min(n, over))]


def _newest_filtered_after_the_limit(db, post_id, n=20):   # skips a lost marker, but after the limit: one comment short
    post = db["posts"].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "hasOverflow": 1})
    newest = []
    if post.get("hasOverflow"):
        newest = [d["comment"] for d in db["posts_overflow"].find({"post_id": post_id}).sort("seq", -1).limit(n)
                  if "comment" in d]
    return newest + post.get("comments", [])[::-1][:n - len(newest)]


def _newest_unfiltered(db, post_id, n=20):   # the notebook's old solution: a lost marker has no comment
    post = db["posts"].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "hasOverflow": 1})
    newest = []
    if post.get("hasOverflow"):
        newest = [d["comment"] for d in db["posts_overflow"].find({"post_id": post_id}).sort("seq", -1).limit(n)]
    return newest + post.get("comments", [])[::-1][:n - len(newest)]


def _newest_from_the_whole_page(db, post_id, n=20):   # one round trip, one document, but every overflowed comment
    from helpers.outlier import read_post_lookup

    return read_post_lookup(db, post_id)["comments"][::-1][:n]


def test_exercise_2_2_tests_the_posts_overflow_posts_a_repaired_post_and_the_bytes_read(db):
    from helpers.outlier import OVERFLOW, POSTS

    _newest_forum(db)
    before = (sorted(map(str, db[POSTS].find())), db[OVERFLOW].count_documents({}))
    for right in (_newest, _newest_by_count):
        assert evaluate("2.2", right, db=db) == ("correct", "Exercise 2.2: correct."), evaluate("2.2", right, db=db)
    for wrong, said in ((_newest_filtered_after_the_limit, "lost marker"), (_newest_unfiltered, "KeyError"),
                        (_newest_from_the_whole_page, "bytes"), ("newest", "a function")):
        status, line = evaluate("2.2", wrong, db=db)
        assert status == "not right yet" and said in line, (wrong, line)
    assert (sorted(map(str, db[POSTS].find())), db[OVERFLOW].count_documents({})) == before  # the scratch post is gone

    def hidden(db, post_id, n=20):  # the right answer, read with the counting paused, plus one dummy round trip
        from helpers.counting import paused
        with paused():
            got = _newest(db, post_id, n)
        db[POSTS].find_one({"_id": None})
        return got

    status, line = evaluate("2.2", hidden, db=db)
    assert status == "not right yet" and "paused the workbook's counting" in line, line


def _holes(db, post_id):   # the solution
    post = db["posts"].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "commentCount": 1})
    embedded = len(post.get("comments") or [])
    held = {d["seq"] for d in db["posts_overflow"].find({"post_id": post_id}, {"_id": 0, "seq": 1})}
    return [seq for seq in range(embedded + 1, post.get("commentCount", embedded) + 1) if seq not in held]


def _holes_but_lost_markers(db, post_id):   # wrong: a lost marker accounts for its number
    post = db["posts"].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "commentCount": 1})
    embedded = len(post.get("comments") or [])
    held = {d["seq"] for d in db["posts_overflow"].find({"post_id": post_id, "lost": {"$ne": True}}, {"_id": 0, "seq": 1})}
    return [seq for seq in range(embedded + 1, post.get("commentCount", embedded) + 1) if seq not in held]


def test_exercise_2_4_meets_a_lost_marker(db):
    _newest_forum(db)
    assert evaluate("2.4", _holes, db=db) == ("correct", "Exercise 2.4: correct.")
    status, line = evaluate("2.4", _holes_but_lost_markers, db=db)
    assert status == "not right yet" and "lost marker" in line, line


def _write_in_one_pipeline(db, post_id, comment, threshold):
    """The review's form: one update flips the flag, numbers the comment and embeds it only if not flagged."""
    from pymongo import ReturnDocument

    after = db["posts"].find_one_and_update({"_id": post_id}, [
        {"$set": {"hasOverflow": {"$or": [{"$eq": ["$hasOverflow", True]}, {"$gte": [{"$size": "$comments"}, threshold]}]}}},
        {"$set": {"commentCount": {"$add": ["$commentCount", 1]},
                  "comments": {"$cond": ["$hasOverflow", "$comments", {"$concatArrays": ["$comments", [{"$literal": comment}]]}]}}}],
        projection={"_id": 0, "commentCount": 1, "hasOverflow": 1}, return_document=ReturnDocument.AFTER)
    if after["hasOverflow"]:
        seq = after["commentCount"]
        db["posts_overflow"].insert_one({"_id": {"post_id": post_id, "seq": seq}, "post_id": post_id, "seq": seq,
                                         "comment": comment})


def _write_in_three_steps(db, post_id, comment, threshold):
    """The obvious form: an embed that may not match, then the number, then the insert."""
    from pymongo import ReturnDocument

    posts = db["posts"]
    if posts.update_one({"_id": post_id, "hasOverflow": False, f"comments.{threshold - 1}": {"$exists": False}},
                        {"$push": {"comments": comment}, "$inc": {"commentCount": 1}}).matched_count:
        return
    seq = posts.find_one_and_update({"_id": post_id}, {"$inc": {"commentCount": 1}, "$set": {"hasOverflow": True}},
                                    return_document=ReturnDocument.AFTER)["commentCount"]
    db["posts_overflow"].insert_one({"post_id": post_id, "seq": seq, "comment": comment})


def _write_without_literal(db, post_id, comment, threshold):
    """Right round trips, but the comment is not wrapped in $literal: its "$..." strings become field paths."""
    from pymongo import ReturnDocument

    after = db["posts"].find_one_and_update({"_id": post_id}, [
        {"$set": {"hasOverflow": {"$or": ["$hasOverflow", {"$gte": [{"$size": "$comments"}, threshold]}]}}},
        {"$set": {"commentCount": {"$add": ["$commentCount", 1]},
                  "comments": {"$cond": ["$hasOverflow", "$comments", {"$concatArrays": ["$comments", [comment]]}]}}}],
        return_document=ReturnDocument.AFTER)
    if after["hasOverflow"]:
        db["posts_overflow"].insert_one({"post_id": post_id, "seq": after["commentCount"], "comment": comment})


def _write_never_flagging(db, post_id, comment, threshold):
    """Numbers and stores every comment, but never sets the flag: readers would miss the overflow."""
    from pymongo import ReturnDocument

    after = db["posts"].find_one_and_update({"_id": post_id}, [
        {"$set": {"full": {"$gte": [{"$size": "$comments"}, threshold]}}},
        {"$set": {"commentCount": {"$add": ["$commentCount", 1]},
                  "comments": {"$cond": ["$full", "$comments", {"$concatArrays": ["$comments", [{"$literal": comment}]]}]}}},
        {"$unset": "full"}], return_document=ReturnDocument.AFTER)
    if len(after["comments"]) < after["commentCount"]:
        db["posts_overflow"].insert_one({"post_id": post_id, "seq": after["commentCount"], "comment": comment})


def test_exercise_2_5_takes_every_two_round_trip_write_and_refuses_the_rest(db):
    from helpers.outlier import OVERFLOW, POSTS, add_comment

    assert evaluate("2.5", _write_in_one_pipeline, db=db)[0] == "not right yet"  # nothing loaded yet: says so
    _forum(db)
    before = (sorted(map(str, db[POSTS].find())), db[OVERFLOW].count_documents({}))
    for right in (_write_in_one_pipeline, add_comment):  # the flag flipped in the update, or in a step of its own
        assert evaluate("2.5", right, db=db) == ("correct", "Exercise 2.5: correct."), right
    for wrong, said in ((_write_in_three_steps, "comment 5 (overflowed) took 3 round trips"),
                        (_write_without_literal, "$literal"), (_write_never_flagging, "hasOverflow"),
                        (lambda db, post_id, comment, threshold: None, "embeds []"), ("write_comment", "a function")):
        status, line = evaluate("2.5", wrong, db=db)
        assert status == "not right yet" and said in line, (wrong, line)
    assert (sorted(map(str, db[POSTS].find())), db[OVERFLOW].count_documents({})) == before  # the scratch post is gone


# ---------------------------------------------------------------------------------------------
# the progress record is a file of the learner's own, in a folder nobody else can write: another
# user can neither forge it, nor redirect it, nor make a check hang (POSIX: owners, modes, FIFOs)

POSIX = os.name == "posix"
OTHER_UID = 65534  # "another user" (we may chown as root here; elsewhere these tests are skipped)
needs_root = pytest.mark.skipif(not POSIX or os.geteuid() != 0, reason="another user's file needs root to make")


@pytest.fixture
def record(tmp_path, monkeypatch):
    """A progress record in a private folder of the test's own: ``(folder, path)``."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    path = folder / "p.json"
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(path))
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/98_test.ipynb")
    return folder, path


def _check_in_thread(capsys, *args) -> tuple[bool, str]:
    """Run ``check(*args)`` in a thread; ``(finished within 20 s, what it printed)`` (never waits longer)."""
    done: list[str] = []
    thread = threading.Thread(target=lambda: (check(*args), done.append("yes")), daemon=True)
    thread.start()
    thread.join(20)
    return bool(done), capsys.readouterr().out


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX")
@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770])
def test_no_record_is_kept_in_a_folder_other_users_may_write(capsys, tmp_path, monkeypatch, mode):
    """/tmp and its like: another user could write the record (or its lock) first. The check still
    prints its result; the recording is refused with a sentence naming the folder."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(shared / "p.json"))
    check("98.1", 5)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Exercise 98.1: correct."
    assert len(out) == 2 and "not recorded" in out[1] and str(shared) in out[1] and "other users" in out[1]
    assert list(shared.iterdir()) == []


@needs_root
@pytest.mark.parametrize("whose", ["the record", "the lock", "the folder"])
def test_a_record_lock_or_folder_of_another_users_is_refused_untouched(capsys, record, whose):
    folder, path = record
    forged = json.dumps({"98_test": {"98.1": True, "98.2": True}}).encode()
    path.write_bytes(forged)
    lock = folder / "p.json.lock"
    lock.write_bytes(b"")
    target = {"the record": path, "the lock": lock, "the folder": folder}[whose]
    os.chown(target, OTHER_UID, OTHER_UID)
    check("98.1", 4)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Exercise 98.1: not right yet")
    assert len(out) == 2 and "not recorded" in out[1] and "another user" in out[1]
    assert path.read_bytes() == forged and lock.read_bytes() == b""


@pytest.mark.skipif(not POSIX, reason="symlinks are POSIX here")
@pytest.mark.parametrize("link", ["p.json.lock", "p.json"])
def test_a_record_or_lock_that_is_a_symlink_is_never_followed(capsys, record, tmp_path, link):
    folder, path = record
    victim = tmp_path / "victim"  # where the link points: nothing may be created or written there
    (folder / link).symlink_to(victim)
    check("98.1", 5)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Exercise 98.1: correct." and len(out) == 2 and "not recorded" in out[1]
    assert "link" in out[1] and not victim.exists() and (folder / link).is_symlink()


@pytest.mark.skipif(not POSIX, reason="FIFOs are POSIX")
@pytest.mark.parametrize("fifo", ["p.json.lock", "p.json"])
def test_a_record_or_lock_that_is_a_fifo_never_hangs_a_check(capsys, record, fifo):
    folder, path = record
    os.mkfifo(folder / fifo)
    finished, out = _check_in_thread(capsys, "98.1", 5)
    if not finished:  # let the blocked open or read go (a reader and writer come and go), then the thread ends
        os.close(os.open(folder / fifo, os.O_RDWR | os.O_NONBLOCK))
    assert finished, "helpers.check hung on a FIFO"
    out = out.splitlines()
    assert out[0] == "Exercise 98.1: correct." and len(out) == 2 and "not recorded" in out[1]
    assert "not a regular file" in out[1]


@pytest.mark.skipif(not POSIX, reason="flock is POSIX")
def test_a_lock_held_by_another_process_is_waited_for_a_bounded_time(capsys, record, monkeypatch):
    import fcntl

    folder, path = record
    monkeypatch.setattr(exercises, "LOCK_WAIT", 0.2, raising=False)
    holder = open(folder / "p.json.lock", "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        finished, out = _check_in_thread(capsys, "98.1", 5)
    finally:
        holder.close()  # releases the lock: a check still waiting goes on
    assert finished, "helpers.check waited for the lock without end"
    out = out.splitlines()
    assert out[0] == "Exercise 98.1: correct." and len(out) == 2 and "not recorded" in out[1]
    assert "locked" in out[1] and not path.exists()
    check("98.1", 5)  # the lock free again: recorded
    assert capsys.readouterr().out == "Exercise 98.1: correct.\n"
    assert json.loads(path.read_text()) == {"98_test": {"98.1": True}}


NOT_A_RECORD = {
    "not JSON": b"{not json",
    "a list": b"[1, 2]",
    "a wrong shape": b'{"98_test": {"98.1": "yes"}}',
    "a tsconfig": b'{"compilerOptions": {"strict": true}}',
    "an inner key not an exercise id": b'{"98_test": {"98.1": true, "strict": true}}',
    "a notebook with no result": b'{"98_test": {}}',
    "a notebook name with a slash": b'{"../98_test": {"98.1": true}}',
    "nested lists": b"[" * 200_000,
    "nested objects": b'{"a":' * 100_000,
    "a 5000-digit integer": b'{"98_test": {"98.1": ' + b"9" * 5000 + b"}}",
    "over the size cap": b'{"98_test": {"98.1": true}}' + b" " * (1024 * 1024),
    "empty": b"",
    "a notebook": json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode(),
}


@pytest.mark.parametrize("content", NOT_A_RECORD.values(), ids=list(NOT_A_RECORD))
def test_a_file_that_is_not_a_progress_record_is_never_rewritten(capsys, record, content):
    """A record that cannot be read back (or a JSON file that is not one: a notebook) is left byte
    for byte as it is, and each check says its result was not recorded, and where."""
    folder, path = record
    path.write_bytes(content)
    check("98.1", 5)
    check("98.1", 4)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Exercise 98.1: correct." and out[2].startswith("Exercise 98.1: not right yet")
    for line in (out[1], out[3]):
        assert "not recorded" in line and str(path) in line and "not a progress record" in line
    assert len(out) == 4 and path.read_bytes() == content
    assert sorted(p.name for p in folder.iterdir()) == ["p.json", "p.json.lock"]  # no temporary file left


def test_an_empty_record_is_nothing_recorded_yet_and_is_written_to(capsys, record):
    """``{}`` is a record with nothing in it yet (the shape allows it): the next check is recorded."""
    _folder, path = record
    path.write_bytes(b"{}")
    assert exercises.read_progress() == {}
    check("98.1", 5)
    assert json.loads(path.read_bytes()) == {"98_test": {"98.1": True}}


# --- a huge answer is never echoed whole (a 20 MB answer printed and saved as a 20 MB line)

HUGE = "x" * 20_000_000


@exercise("98.9", hint="short")
def _raises_with_the_answer(answer):
    raise ValueError(f"cannot use {answer}")


@pytest.mark.parametrize("exercise_id, answer, context", [
    ("0.1", HUGE, {"orders": None}),
    ("1.5", HUGE, {"workload": None, "costs": None}),
    ("2.1", HUGE, {"posts_embedded": None}),
    ("2.1", -10 ** 5000, {"posts_embedded": None}),  # repr() of an int of over 4,300 digits raises
    ("2.3", [HUGE], {"db": None, "workload": None, "typical_id": 1, "viral_id": 2}),
    ("2.5", HUGE, {"db": None}),
    ("3.3", HUGE, {"tree": None, "categories": None, "node": 1}),
    ("4.3", HUGE.encode(), {"aerodata": None}),
    ("4.5", HUGE, {"messages": []}),
    ("4.7", HUGE, {"workload": None, "designs": {"a design": 1}}),
    ("8.2", (HUGE, "a design"), {"workload": None, "costs": None, "operation": "x", "by": "y"}),
    ("98.1", HUGE, {}),    # its checker echoes the answer with str(): a TypeError's message then
    ("98.9", HUGE, {}),    # an exception whose message holds the answer
], ids=lambda v: v if isinstance(v, str) and len(v) < 10 else "")
def test_a_huge_answer_is_echoed_short_with_its_length(exercise_id, answer, context, capsys, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    status, line = evaluate(exercise_id, answer, **context)
    assert status == "not right yet" and len(line) < 2_000, (exercise_id, len(line), line[:300])
    check(exercise_id, answer, **context)
    printed = capsys.readouterr().out
    assert len(printed) < 2_000 and printed.count("\n") == 1
    assert (tmp_path / "p.json").stat().st_size < 1_000


def test_shown_cuts_a_repr_and_says_its_length():
    from helpers.exercises import shown

    assert shown("abc") == "'abc'" and shown([1, 2]) == "[1, 2]"  # short: the repr itself
    long = shown("y" * 1_000)
    assert long.startswith("'yyy") and len(long) < 300 and "1,002 characters" in long and "..." in long
    assert "digits" in shown(10 ** 5000) and len(shown(10 ** 5000)) < 300  # repr() itself would raise


def test_checkers_echo_values_only_through_shown():
    # a checker shows what it was given with helpers.exercises.shown (cut to 200 characters), never
    # with !r or str() of the whole value
    for path in sorted((ROOT / "helpers").glob("*/checks.py")):
        text = path.read_text(encoding="utf-8")
        assert "!r}" not in text, f"{path.relative_to(ROOT)}: echo a value with shown(value), not !r"
