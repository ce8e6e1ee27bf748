"""Deterministic costs, measurement and document sizes, equal on every backend."""
from __future__ import annotations

import bson
import pytest
from pymongo import InsertOne, UpdateOne
from pymongo.errors import DocumentTooLarge

from helpers import compare, costs_table, measure
from helpers.counting import counting
from helpers.sizes import MAX_BSON_SIZE, bson_sizes, check_document_size, server_bson_sizes, size_summary


@pytest.fixture
def numbers(db):
    coll = db["numbers"]
    coll.insert_many([{"_id": i, "g": i % 3} for i in range(250)])
    return coll


def test_exact_round_trips_and_bytes_for_known_queries(numbers):
    doc_bytes = len(bson.encode({"_id": 7, "g": 1}))  # 21 bytes for every document here
    assert doc_bytes == 21
    with counting() as c:
        docs = list(numbers.find().sort("_id", 1))
    assert (c.round_trips, c.docs_returned, c.bytes_returned) == (2, 250, 250 * 21)  # find + getMore
    assert c.commands == ["find", "getMore"]
    with counting() as c:
        numbers.find_one({"_id": 5})
    assert (c.round_trips, c.docs_returned, c.bytes_returned, c.commands) == (1, 1, 21, ["find"])
    with counting() as c:
        list(numbers.find().sort("_id", 1).batch_size(50))
    assert c.round_trips == 6  # 5 full batches, then one empty getMore closes the cursor
    with counting() as c:
        list(numbers.find().limit(101))
    assert c.round_trips == 1
    with counting() as c:
        assert numbers.count_documents({"g": 1}) == 83
    assert (c.round_trips, c.docs_returned) == (1, 1)
    with counting() as c:
        numbers.update_many({"g": 1}, {"$set": {"x": 1}})
    assert (c.round_trips, c.docs_written) == (1, 83)
    with counting() as c:
        numbers.bulk_write([InsertOne({"_id": 1000}), InsertOne({"_id": 1001}),
                            UpdateOne({"_id": 1}, {"$set": {"y": 1}})])
    assert (c.round_trips, c.docs_written) == (2, 3)
    assert len(docs) == 250


def test_measure_counts_one_run_and_times_every_repeat(numbers, backend):
    m = measure("by _id", lambda: numbers.find({"_id": {"$lt": 10}}).sort("_id", 1), repeat=3,
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
    m = measure("insert", lambda: coll.insert_one({"_id": 1}), setup=lambda: coll.delete_many({}), repeat=3)
    assert m.docs_written == 1 and m.round_trips == 1
    assert coll.count_documents({}) == 1


def test_sizes_equal_bson_encode_and_server(db, backend):
    docs = [{"_id": i, "tags": ["x"] * i, "name": "n" * (i * 3)} for i in range(30)]
    db["sized"].insert_many(docs)
    expected = [len(bson.encode(d)) for d in docs]
    assert list(bson_sizes(docs)) == expected
    assert list(bson_sizes(db["sized"])) == expected
    server = server_bson_sizes(db["sized"])
    if backend.info.caps.bson_size:
        assert server == expected
    else:
        assert server is None
    s = size_summary(expected)
    assert s["documents"] == 30 and s["max"] == max(expected) and s["min"] == min(expected)
    assert s["median"] == sorted(expected)[14]


def test_16mb_limit_server_or_labelled_client_check(db, backend):
    big = {"_id": "big", "blob": "x" * (MAX_BSON_SIZE + 1)}
    with pytest.raises(DocumentTooLarge, match="client-side check"):
        check_document_size(big)
    assert check_document_size({"_id": 1}) == len(bson.encode({"_id": 1}))
    chunk = "y" * (9 * 1024 * 1024)
    db["grow"].insert_one({"_id": 1, "a": chunk})
    if backend.info.caps.max_document_size:
        from pymongo.errors import OperationFailure
        with pytest.raises((OperationFailure, DocumentTooLarge)):
            db["grow"].update_one({"_id": 1}, {"$set": {"b": chunk}})
    else:  # the mock accepts it: exactly why the workbook labels its client-side check
        db["grow"].update_one({"_id": 1}, {"$set": {"b": chunk}})
        assert len(bson.encode(db["grow"].find_one({"_id": 1}))) > MAX_BSON_SIZE


def test_a_failed_insert_many_still_costs_a_round_trip(db):
    from pymongo.errors import BulkWriteError

    db["dups"].insert_one({"_id": 2})
    with counting() as c, pytest.raises(BulkWriteError):
        db["dups"].insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])  # ordered: stops at the duplicate
    assert (c.round_trips, c.docs_written) == (1, 1)


def test_the_mock_counts_what_a_server_counts(db):
    """Calls whose costs the mock emulates: each must match a server exactly (same data, same calls)."""
    from pymongo import DeleteOne, InsertOne, UpdateOne
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
        with counting() as c:
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
