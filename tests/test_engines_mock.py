"""Tests of engines/mock.py: the mock costs what a server's calls cost."""
from __future__ import annotations

from pymongo import InsertOne, UpdateOne

from helpers.counting import count_commands


def test_the_mock_counts_what_a_server_counts(db):
    """Calls whose costs the mock emulates: each must match a server exactly (same data, same calls)."""
    from pymongo import DeleteOne
    from pymongo.errors import DuplicateKeyError

    db["a"].insert_many([{"_id": i} for i in range(300)])
    costs = {}
    cases = {
        "create_collection": lambda: db.create_collection("newc"),
        "list_collection_names": lambda: db.list_collection_names(),
        "duplicate insert_one": lambda: db["a"].insert_one({"_id": 1}),
        "index_information": lambda: db["a"].index_information(),
        "rename": lambda: db["newc"].rename("newc2"),
        "aggregate, not iterated": lambda: db["a"].aggregate([{"$match": {}}]),
        "negative limit": lambda: list(db["a"].find().limit(-150)),
        "limit past the first batch": lambda: list(db["a"].find().sort("_id", 1).limit(150)),
        "find_one_and_update upsert": lambda: db["a"].find_one_and_update({"_id": 999}, {"$set": {"x": 1}},
                                                                          upsert=True),
        "unordered bulk_write": lambda: db["a"].bulk_write(
            [DeleteOne({"_id": 5}), InsertOne({"_id": 1000}), UpdateOne({"_id": 6}, {"$set": {"y": 1}})],
            ordered=False),
    }
    for label, call in cases.items():
        with count_commands() as c:
            try:
                call()
            except DuplicateKeyError:
                pass
        costs[label] = (c.round_trips, c.docs_returned, c.bytes_returned, c.docs_written, c.commands)
    assert costs == {
        "create_collection": (2, 0, 0, 0, ["listCollections", "create"]),
        "list_collection_names": (1, 2, 79, 0, ["listCollections"]),  # a, newc
        "duplicate insert_one": (1, 0, 0, 0, ["insert"]),
        "index_information": (1, 1, 46, 0, ["listIndexes"]),
        "rename": (1, 0, 0, 0, ["renameCollection"]),
        "aggregate, not iterated": (1, 101, 101 * 14, 0, ["aggregate"]),
        "negative limit": (1, 150, 150 * 14, 0, ["find"]),
        "limit past the first batch": (2, 150, 150 * 14, 0, ["find", "getMore"]),
        "find_one_and_update upsert": (1, 0, 0, 1, ["findAndModify"]),
        "unordered bulk_write": (3, 0, 0, 3, ["insert", "update", "delete"]),
    }


def test_listing_collections_costs_one_round_trip_on_every_backend(db):
    """``list_collections`` (the registry's UUID check) is one listCollections, counted on the mock too;
    its bytes differ (a server lists each collection's UUID and _id index)."""
    db["a"].insert_one({"_id": 1})
    db["b"].insert_one({"_id": 1})
    with count_commands() as c:
        listed = sorted(info["name"] for info in db.list_collections())
    assert listed == ["a", "b"]
    assert (c.round_trips, c.docs_returned, c.commands) == (1, 2, ["listCollections"])


def test_an_id_equality_is_answered_from_the_store_with_the_scans_answer():
    """engines/mock.py answers {_id: <str or int>} from mongomock-ng's store (keyed by _id) instead
    of testing every document; the answers must be the scan's, for every kind of _id."""
    import mongomock_ng
    from mongomock_ng.collection import Collection

    from engines.mock import MockDatabase
    from helpers.counting import recorder

    MockDatabase(mongomock_ng.MongoClient().db, recorder)  # connecting the mock installs the lookup
    assert getattr(Collection._iter_documents, "by_key", False)
    coll = mongomock_ng.MongoClient().db.things
    docs = [{"_id": "a", "v": 1}, {"_id": 2, "v": 2}, {"_id": 3.0, "v": 3}, {"_id": True, "v": 4},
            {"_id": {"k": 1}, "v": 5}, {"_id": "b", "v": 6}]
    coll.insert_many(docs)
    for key in ("a", "b", "zz", 2, 3, 1, 0, 2.0, True):
        by_key = list(coll.find({"_id": key}))
        scanned = [d for d in coll.find({"_id": {"$in": [key]}})]  # the same test, through a scan
        assert by_key == scanned, key
    assert coll.find_one({"_id": 3})["v"] == 3  # 3 == 3.0, as on a server
    # mongomock-ng's own answer, kept: {_id: 1} finds the document whose _id is true (Python's
    # True == 1; a server never would: docs/ENGINES.md)
    assert coll.find_one({"_id": 1})["v"] == 4
    assert coll.update_one({"_id": "b"}, {"$set": {"v": 60}}).modified_count == 1
    assert coll.find_one({"_id": "b"})["v"] == 60 and coll.count_documents({"v": 60}) == 1
    assert coll.delete_one({"_id": "a"}).deleted_count == 1 and coll.find_one({"_id": "a"}) is None


def test_a_trusted_insert_skips_only_the_bson_recheck_and_only_in_its_own_thread(monkeypatch):
    """insert_trusted (the loader's typed copies) is insert_many without mongomock-ng's re-encoding
    of each document: the same documents, counts, and refusal of a repeated _id; every other insert,
    in another thread at the same moment or afterwards in this one, is still checked."""
    import threading

    import mongomock_ng
    import pytest
    from bson.errors import InvalidDocument
    from mongomock_ng import collection as mc
    from pymongo.errors import BulkWriteError

    from engines import mock
    from helpers.counting import recorder

    encoded = []

    class CountingBSON(mc.BSON):  # mongomock-ng's re-check: one encode per document inserted
        @classmethod
        def encode(cls, *args, **kwargs):
            encoded.append(1)
            return super().encode(*args, **kwargs)

    monkeypatch.setattr(mc, "BSON", CountingBSON)
    db = mock.MockDatabase(mongomock_ng.MongoClient().db, recorder)
    docs = [{"_id": i, "name": f"n{i}", "tags": ["a", {"b": i}]} for i in range(250)]
    with count_commands() as trusted:
        mock.insert_trusted(db["t"], (dict(d) for d in docs))  # a generator too
    assert not encoded  # skipped ...
    with count_commands() as plain:
        db["p"].insert_many([dict(d) for d in docs], ordered=True)
    assert len(encoded) == len(docs)  # ... where insert_many encodes every document
    assert list(db["t"].find().sort("_id", 1)) == list(db["p"].find().sort("_id", 1)) == docs
    assert (trusted.round_trips, trusted.docs_written, trusted.commands) == \
        (plain.round_trips, plain.docs_written, plain.commands)
    with pytest.raises(BulkWriteError):
        mock.insert_trusted(db["t"], [{"_id": 0}])  # the _id index still refuses a repeat
    assert not getattr(mock._TRUSTED, "on", False)  # and the flag is down again after the error
    bad = {"_id": "x", "a\0b": 1}  # a field name BSON cannot hold
    with pytest.raises(InvalidDocument):
        db["p"].insert_many([dict(bad)])  # this thread, after a trusted insert: checked
    # white box: the flag insert_trusted sets in its own thread, set here by hand, while another
    # thread inserts: that insert is checked all the same
    mock._TRUSTED.on = True
    try:
        refused = []

        def other() -> None:
            try:
                db["p"].insert_many([dict(bad)])
            except InvalidDocument as e:
                refused.append(e)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert refused
    finally:
        mock._TRUSTED.on = False


def test_a_mongomock_ng_without_the_patched_functions_still_connects(monkeypatch):
    """Another mongomock-ng release without ``_bson_encode``: nothing is patched, nothing fails."""
    from mongomock_ng import collection as mc

    from engines import mock

    monkeypatch.delattr(mc, "_bson_encode")
    mock.install_trusted_inserts()
    assert not hasattr(mc, "_bson_encode")


def test_importing_the_adapter_changes_nothing_until_the_mock_is_connected():
    """mongomock-ng is patched when a mock database is wrapped, not as a side effect of an import."""
    import subprocess
    import sys

    code = ("import engines.mock, mongomock_ng\nfrom helpers.counting import recorder\n"
            "from mongomock_ng import collection as mc\n"
            "def patched(): return (getattr(mc.Collection._iter_documents, 'by_key', False), "
            "getattr(mc._bson_encode, 'trusting', False))\n"
            "before = patched()\n"
            "engines.mock.MockDatabase(mongomock_ng.MongoClient().db, recorder)\n"
            "print(*before, *patched())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "True", "True"]


def test_engines_import_nothing_from_helpers():
    """The arrow runs one way: helpers connects through engines; engines know nothing of helpers."""
    import ast
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parent.parent / "engines").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            assert not [n for n in names if n.split(".")[0] == "helpers"], f"{path.name} imports helpers"


def test_a_pipeline_update_gives_each_document_its_own_copy(db):
    """A ``$literal`` set by an update pipeline is each document's own value on every backend (the
    mock stores it again per document: mongomock-ng kept one shared object, and updating one
    document then changed them all), and an aggregate's ``batchSize`` raises no warning there."""
    import warnings

    coll = db["literal_copies"]
    coll.insert_many([{"_id": i, "a": [{"k": 9}]} for i in range(3)])
    chain = [{"k": 1, "name": "x"}]
    with count_commands() as c:
        coll.update_many({}, [{"$set": {"a": {"$concatArrays": [{"$literal": chain}, "$a"]}}}])
    assert c.round_trips == 1 and c.docs_written == 3
    chain[0]["name"] = "changed by the caller"
    coll.update_one({"_id": 0}, {"$set": {"a.0.name": "y"}})
    assert [d["a"][0]["name"] for d in coll.find({}, sort=[("_id", 1)])] == ["y", "x", "x"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(coll.aggregate([{"$unwind": "$a"}], batchSize=10))) == 6


def test_a_pipeline_update_in_a_bulk_write_gives_each_document_its_own_copy(db):
    """The same through ``bulk_write`` (an ``UpdateMany`` with a pipeline beside an ``UpdateOne``):
    each document keeps its own copy, so a later positional update changes, and counts, every one."""
    from pymongo import UpdateMany, UpdateOne

    coll = db["literal_bulk"]
    coll.insert_many([{"_id": i, "a": [{"k": 9}]} for i in range(4)])
    chain = [{"k": 1, "name": "x"}]
    with count_commands() as c:
        coll.bulk_write([UpdateOne({"_id": 0}, {"$set": {"b": 1}}),
                         UpdateMany({"_id": {"$gt": 0}}, [{"$set": {"a": {"$concatArrays": [{"$literal": chain}, "$a"]}}}])])
    assert c.round_trips == 1 and c.docs_written == 4
    with count_commands() as c:
        coll.update_many({"a.k": 1}, {"$set": {"a.$.name": "y"}})
    assert c.docs_written == 3
    assert [d["a"][0].get("name") for d in coll.find({}, sort=[("_id", 1)])] == [None, "y", "y", "y"]


def test_a_lookup_sub_pipeline_keeps_every_stage(db):
    """A ``$lookup`` with ``localField``/``foreignField`` and a ``pipeline`` runs every stage of it
    on the matched documents, as MongoDB 5.0+ does: ``$addFields`` and a nested ``$lookup`` included
    (mongomock-ng fed the sub-pipeline a generator, which those stages read twice)."""
    a, b = db["lookup_outer"], db["lookup_inner"]
    a.insert_many([{"_id": 1, "kids": [2, 3]}])
    b.insert_many([{"_id": 2, "name": "x"}, {"_id": 3, "name": "y"}, {"_id": 4, "name": "z"}])
    joined = {"from": b.name, "localField": "kids", "foreignField": "_id", "as": "f"}
    added = next(a.aggregate([{"$lookup": {**joined, "pipeline": [{"$addFields": {"g": [1, 2]}}]}}], batchSize=10))
    assert sorted((d["_id"], d.get("g")) for d in added["f"]) == [(2, [1, 2]), (3, [1, 2])]
    nested = next(a.aggregate([{"$lookup": {**joined, "pipeline": [{"$lookup": {
        "from": b.name, "localField": "_id", "foreignField": "_id", "as": "g"}}]}}], batchSize=10))
    assert sorted((d["_id"], [g["_id"] for g in d["g"]]) for d in nested["f"]) == [(2, [2]), (3, [3])]


def test_a_pipeline_that_ends_in_merge_returns_nothing(db):
    """An aggregate ending in ``$merge`` (or ``$out``) writes its output and returns no document,
    as on MongoDB (mongomock-ng returned the documents it wrote, which the counters then billed)."""
    coll = db["merge_source"]
    coll.insert_many([{"_id": i, "n": i} for i in range(3)])
    with count_commands() as c:
        back = list(coll.aggregate([{"$match": {"n": {"$gte": 1}}}, {"$project": {"n": 1}},
                                    {"$merge": {"into": "merge_target"}}], batchSize=10))
    assert back == [] and c.docs_returned == 0 and c.round_trips == 1
    assert sorted(d["_id"] for d in db["merge_target"].find({}, batch_size=10)) == [1, 2]
    db["merge_target"].drop()


def test_every_path_to_a_collection_is_counted(db):
    """``with_options`` and the client's databases reach the same collection: the mock counts the
    commands sent through each as a server's command monitoring does (it wrapped none of them)."""
    from pymongo import WriteConcern
    from pymongo.read_concern import ReadConcern

    db["a"].insert_many([{"_id": i} for i in range(3)])
    paths = {
        "collection": lambda: db["a"],
        "with_options(read_concern)": lambda: db["a"].with_options(read_concern=ReadConcern("majority")),
        "with_options(write_concern)": lambda: db["a"].with_options(write_concern=WriteConcern(w=1)),
        "database.with_options()[name]": lambda: db.with_options(read_concern=ReadConcern("local"))["a"],
        "client[db][name]": lambda: db.client[db.name]["a"],
        "client.get_database(db)[name]": lambda: db.client.get_database(db.name)["a"],
        "getattr(client, db)[name]": lambda: getattr(db.client, db.name)["a"],
    }
    counted = {}
    for label, path in paths.items():
        with count_commands() as c:
            coll = path()
            coll.find_one({"_id": 1})
            coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
            list(coll.aggregate([{"$match": {"_id": 2}}]))
        counted[label] = c.commands
    assert counted == {label: ["find", "update", "aggregate"] for label in paths}
    assert db["a"].find_one({"_id": 1})["n"] == len(paths)
    with count_commands() as c:  # list_indexes is a listIndexes command on a server
        assert [d["name"] for d in db["a"].list_indexes()] == ["_id_"]
    assert c.commands == ["listIndexes"]
