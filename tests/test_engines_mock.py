"""Tests of engines/mock.py: the mock costs what a server's calls cost."""
from __future__ import annotations

from pymongo import InsertOne, UpdateOne

from helpers.counting import counting


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
