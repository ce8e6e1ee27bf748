"""tools/advise.py (``python3 workbook.py advise``): a read-only review of a server's database, JSON
for scripts, a clear message without a server, thresholds from the command line."""
from __future__ import annotations

import contextlib
import io
import json
import uuid

import bson


def _snapshot(db):
    out = {}
    for name in sorted(db.list_collection_names()):
        docs = [bson.encode(d) for d in db[name].find({}).sort("_id", 1)]
        out[name] = (docs, sorted((n, str(s["key"])) for n, s in db[name].index_information().items()))
    return out



def _run_cli(argv):
    from tools import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["advise", *argv])
    return rc, out.getvalue(), err.getvalue()


def test_cli_reviews_a_server_database_read_only(test_uri, monkeypatch):
    import pymongo

    name = f"wbtest_{uuid.uuid4().hex[:10]}"
    client = pymongo.MongoClient(test_uri)
    try:
        db = client[name]
        db["orders"].insert_one({"_id": 1, "lines": list(range(1_001))})
        db["orders"].create_index("customer")
        db["orders"].create_index([("customer", 1), ("date", 1)])
        before = _snapshot(db)
        monkeypatch.setenv("MONGODB_URI", test_uri)
        rc, out, _ = _run_cli(["--json", "--database", name, "--thresholds", "workbook"])
        assert rc == 0
        keys = {(f["code"], f["collection"], f["field"]) for f in json.loads(out)["findings"]}
        assert keys == {("AVOID_UNBOUNDED_ARRAY", "orders", "lines"),
                        ("REMOVE_UNNECESSARY_INDEXES", "orders", "customer_1")}
        assert _snapshot(db) == before and name in client.list_database_names()
    finally:
        client.drop_database(name)
        client.close()


def test_cli_without_a_server_explains(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    rc, out, err = _run_cli([])
    assert rc == 2 and "MONGODB_URI" in err and "--demo" in err
    for wrong, says in ((["--threshold", "arrays=5"], "NAME one of"), (["--threshold", "max_indexes=x"], "not a number")):
        rc, out, err = _run_cli(wrong)  # an argument error: status 2, like argparse's, no traceback
        assert (rc, out) == (2, "") and says in err and err.startswith("python3 workbook.py advise: error:")


def test_cli_demo_reviews_the_fixtures_on_a_throwaway_engine(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    rc, out, _ = _run_cli(["--demo", "--json", "--thresholds", "workbook", "--threshold", "same_shape_collections=9"])
    assert rc == 0
    report = json.loads(out)
    assert report["thresholds"]["same_shape_collections"] == 9 and report["thresholds"]["max_array_elements"] == 1_000
    assert report["thresholds_set"] == "custom"
    family = [f for f in report["findings"] if f["code"] == "REDUCE_NUMBER_OF_NAMESPACES"]
    # the fixtures are planted at the edge of the thresholds given: nine collections, the near miss eight
    assert [(f["collection"], f["evidence"]["collections of one shape"]) for f in family] == [("fx_ns_planted_*", 9)]
    assert len({f["code"] for f in report["findings"]}) == 12
    rc, out, _ = _run_cli(["--demo", "--json"])
    report = json.loads(out)
    assert report["thresholds_set"] == "atlas"
    arrays = [f for f in report["findings"] if f["code"] == "AVOID_UNBOUNDED_ARRAY"]
    assert [(f["trigger"], f["value"], f["limit"]) for f in arrays] == [("DOCS_CONTAIN_UNBOUNDED_ARRAY", 10_001, 10_000)]


def test_cli_says_when_there_is_nothing_to_review(test_uri, monkeypatch):
    """An empty (or misspelt) database, and a profiler that recorded nothing, are said, not silent."""
    import pymongo

    monkeypatch.setenv("MONGODB_URI", test_uri)
    name = f"wbtest_{uuid.uuid4().hex[:10]}"
    rc, out, _ = _run_cli(["--json", "--profile", "--database", name])
    assert rc == 0
    client = pymongo.MongoClient(test_uri)
    try:  # read only: reviewing a database that does not exist does not create it
        assert name not in client.list_database_names()
    finally:
        client.drop_database(name)
        client.close()
    notes = json.loads(out)["notes"]
    assert any("holds no collection" in n for n in notes) and any("profiler recorded no operation" in n for n in notes)
    assert any('"profile", 1' in n and "slowms" in n for n in notes)


def test_cli_skips_a_broken_view_and_reviews_the_rest(test_uri, monkeypatch):
    """A view whose pipeline fails ($divide by zero) is skipped with a note naming the cause."""
    import pymongo

    name = f"wbtest_{uuid.uuid4().hex[:10]}"
    client = pymongo.MongoClient(test_uri)
    try:
        db = client[name]
        db["numbers"].insert_many([{"_id": i, "a": i, "b": 0, "tags": list(range(1_001))} for i in range(3)])
        db.create_collection("ratios", viewOn="numbers", pipeline=[{"$project": {"r": {"$divide": ["$a", "$b"]}}}])
        monkeypatch.setenv("MONGODB_URI", test_uri)
        rc, out, err = _run_cli(["--json", "--database", name, "--thresholds", "workbook"])
        assert rc == 0, err
        report = json.loads(out)
        assert report["collections"] == ["numbers"]
        assert [(f["code"], f["collection"]) for f in report["findings"]] == [("AVOID_UNBOUNDED_ARRAY", "numbers")]
        assert any("ratios" in n and "divide by zero" in n for n in report["notes"])
    finally:
        client.drop_database(name)
        client.close()
