"""Tests of helpers/counting.py: round trips, documents and bytes, on every backend."""
from __future__ import annotations

import bson
import pytest
from pymongo import InsertOne, UpdateOne

from helpers.counting import count_commands


@pytest.fixture
def numbers(db):
    coll = db["numbers"]
    coll.insert_many([{"_id": i, "g": i % 3} for i in range(250)])
    return coll


def test_exact_round_trips_and_bytes_for_known_queries(numbers):
    doc_bytes = len(bson.encode({"_id": 7, "g": 1}))  # 21 bytes for every document here
    assert doc_bytes == 21
    with count_commands() as c:
        docs = list(numbers.find().sort("_id", 1))
    assert (c.round_trips, c.docs_returned, c.bytes_returned) == (2, 250, 250 * 21)  # find + getMore
    assert c.commands == ["find", "getMore"]
    with count_commands() as c:
        numbers.find_one({"_id": 5})
    assert (c.round_trips, c.docs_returned, c.bytes_returned, c.commands) == (1, 1, 21, ["find"])
    with count_commands() as c:
        list(numbers.find().sort("_id", 1).batch_size(50))
    assert c.round_trips == 6  # 5 full batches, then one empty getMore closes the cursor
    with count_commands() as c:
        list(numbers.find().limit(101))
    assert c.round_trips == 1
    with count_commands() as c:
        assert numbers.count_documents({"g": 1}) == 83
    assert (c.round_trips, c.docs_returned) == (1, 1)
    with count_commands() as c:
        numbers.update_many({"g": 1}, {"$set": {"x": 1}})
    assert (c.round_trips, c.docs_written) == (1, 83)
    with count_commands() as c:
        numbers.bulk_write([InsertOne({"_id": 1000}), InsertOne({"_id": 1001}),
                            UpdateOne({"_id": 1}, {"$set": {"y": 1}})])
    assert (c.round_trips, c.docs_written) == (2, 3)
    assert len(docs) == 250


def test_a_failed_insert_many_still_costs_a_round_trip(db):
    from pymongo.errors import BulkWriteError

    db["dups"].insert_one({"_id": 2})
    with count_commands() as c, pytest.raises(BulkWriteError):
        db["dups"].insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])  # ordered: stops at the duplicate
    assert (c.round_trips, c.docs_written) == (1, 1)


def test_counting_keeps_command_documents(db):
    """keep_commands=True keeps each command document (the advisor's workload), on every backend."""
    from helpers.advisor import ObservedWorkload

    coll = db["things"]
    coll.insert_many([{"_id": i, "a": i} for i in range(3)])
    with count_commands(keep_commands=True) as kept:
        list(coll.find({"a": {"$gt": 0}}).sort("a", -1))
        coll.update_one({"_id": 1}, {"$push": {"tags": "x"}})
        coll.insert_many([{"_id": 9}])
    with count_commands() as plain:
        coll.find_one({"_id": 1})
    assert plain.command_documents == []
    find, update, insert = kept.command_documents
    assert find["find"] == "things" and find["filter"] == {"a": {"$gt": 0}} and find["sort"] == {"a": -1}
    assert find["$db"] == db.name
    assert update["updates"][0]["u"] == {"$push": {"tags": "x"}}
    assert insert["insert"] == "things" and "documents" not in insert and insert.get("n", 1) == 1
    ops = ObservedWorkload.from_counter(kept, db.name).operations
    assert [op.kind for op in ops] == ["find", "update", "insert"]
    assert ObservedWorkload.from_counter(kept, "another_db").operations == []
    with pytest.raises(ValueError, match="keep_commands=True"):
        ObservedWorkload.from_counter(plain)


def test_counters_fan_out_to_every_open_counter_and_only_while_open():
    """One home for the fan-out to active counters (MongoDB's here, Redis's in helpers.kv.redis_backend)."""
    from helpers.counting import Counters

    counters: Counters[list] = Counters()
    counters.each(lambda c: c.append("nobody"))  # none open: nothing happens
    assert not counters
    with counters.opened([]) as outer:
        with counters.opened([]) as inner:
            assert counters
            counters.each(lambda c: c.append("both"))
        counters.each(lambda c: c.append("outer"))
    counters.each(lambda c: c.append("closed"))
    assert outer == ["both", "outer"] and inner == ["both"] and not counters


def test_nested_counting_blocks_that_counted_the_same_so_far_stay_apart():
    """Two counters with equal counts are still two: the inner block's end closes the inner one
    (it once removed the first equal counter, the outer, and the outer's end then raised)."""
    from helpers.counting import count_commands, record

    with count_commands() as outer:
        with count_commands() as inner:
            pass
        record("find", [{"_id": 1}])
    assert (outer.round_trips, outer.docs_returned, inner.round_trips) == (1, 1, 0)


def test_a_cross_collection_bulk_write_counts_its_documents_written(server_db):
    """MongoDB 8.0's bulkWrite command (pymongo's MongoClient.bulk_write): one round trip, and the
    documents it inserted, modified, upserted and deleted are written (its per-operation results are
    not documents returned)."""
    from pymongo import InsertOne, UpdateMany

    a, b = server_db["bw_a"], server_db["bw_b"]
    b.insert_many([{"_id": i, "x": 0} for i in range(5)])
    try:
        with count_commands() as c:
            server_db.client.bulk_write([InsertOne({"_id": 1}, namespace=a.full_name),
                                         UpdateMany({}, {"$set": {"x": 1}}, namespace=b.full_name)])
    except Exception as e:  # an engine without the command: nothing to count
        pytest.skip(f"no bulkWrite command here: {e}")
    assert (c.round_trips, c.docs_written, c.docs_returned) == (1, 6, 0)


def test_an_ordered_bulk_refused_midway_costs_the_commands_sent_on_every_backend(db):
    """An ordered bulk_write stops at the first refused operation: the commands up to it were sent
    (one round trip each), the rest never were; the documents written are those that landed."""
    from pymongo import InsertOne, UpdateOne
    from pymongo.errors import BulkWriteError

    coll = db["bulk_refused"]
    coll.insert_one({"_id": 1, "x": 0})
    requests = [UpdateOne({"_id": 1}, {"$set": {"x": 1}}), InsertOne({"_id": 1}),  # refused: a duplicate _id
                InsertOne({"_id": 2}), UpdateOne({"_id": 2}, {"$set": {"x": 1}})]
    with count_commands() as c, pytest.raises(BulkWriteError):
        coll.bulk_write(requests, ordered=True)
    assert (c.commands, c.docs_written) == (["update", "insert"], 1)
    assert coll.count_documents({}) == 1


def test_a_transaction_costs_its_commit_on_every_backend(backend, db):
    """pymongo ends a transaction that ran a command with one commitTransaction (abortTransaction
    when the callback raises), and one that ran none with nothing: the mock reports the same."""
    if not backend.info.caps.transactions:
        pytest.skip("no transactions on this engine (caps.transactions)")
    coll = db["txn_counted"]
    coll.insert_one({"_id": 0})
    with count_commands() as c:
        with db.client.start_session() as s:
            s.with_transaction(lambda s: coll.update_one({"_id": 0}, {"$set": {"a": 1}}, session=s))
    assert c.commands == ["update", "commitTransaction"]
    with count_commands() as c:
        with db.client.start_session() as s:
            s.with_transaction(lambda s: None)
    assert c.commands == []

    def fails(s):
        coll.update_one({"_id": 0}, {"$set": {"a": 2}}, session=s)
        raise RuntimeError("the callback fails")
    with count_commands() as c, pytest.raises(RuntimeError):
        with db.client.start_session() as s:
            s.with_transaction(fails)
    assert c.commands == ["update", "abortTransaction"]


def test_a_merge_or_out_counts_the_documents_it_writes_when_its_target_is_snapshotted(db):
    """No reply counts what a $merge or $out wrote: with its target snapshotted whole, the counter
    counts the documents the target gained, lost or changed; otherwise the figure is unknown, never 0."""
    src, dst = db["merge_src"], db["merge_dst"]
    src.insert_many([{"_id": i, "v": i} for i in range(4)])
    dst.insert_many([{"_id": 0, "v": 0}, {"_id": 1, "v": -1}, {"_id": 9, "v": 9}])
    with count_commands(index_keys=dst) as c:  # 2 and 3 inserted, 1 replaced, 0 rewritten unchanged
        list(src.aggregate([{"$match": {}}, {"$merge": {"into": "merge_dst", "whenMatched": "replace"}}], batchSize=0))
    assert (c.round_trips, c.docs_written, c.docs_written_known) == (1, 3, True)
    with count_commands(index_keys=dst) as c:
        list(src.aggregate([{"$match": {"_id": {"$lt": 2}}}, {"$out": "merge_dst"}], batchSize=0))
    assert (c.docs_written, c.docs_written_known) == (3, True)  # 2, 3 and 9 gone; 0 and 1 unchanged
    assert sorted(d["_id"] for d in dst.find({}, batch_size=10)) == [0, 1]
    with count_commands() as c:  # the target not snapshotted
        list(src.aggregate([{"$match": {}}, {"$merge": {"into": {"db": db.name, "coll": "merge_dst"}}}], batchSize=0))
    assert c.docs_written_known is False and c.aggregate_targets == [f"{db.name}.merge_dst"]
    with count_commands(index_keys={dst: {"_id": 0}}) as c:  # snapshotted in part: still unknown
        list(src.aggregate([{"$match": {}}, {"$merge": {"into": "merge_dst"}}], batchSize=0))
    assert c.docs_written_known is False
    with count_commands(index_keys=dst) as c:  # other commands wrote the target too: no way to split it
        dst.insert_one({"_id": 20})
        list(src.aggregate([{"$match": {}}, {"$merge": {"into": "merge_dst"}}], batchSize=0))
    assert c.docs_written_known is False


def test_a_read_whose_batch_equals_its_answer_leaves_its_cursor_open_and_the_counter_notes_it(db):
    coll = db["numbers_open"]  # the mock reports the cursors a server would keep open
    coll.insert_many([{"_id": i} for i in range(5)])
    with count_commands() as c:
        cursor = coll.aggregate([{"$match": {"_id": 3}}], batchSize=1)  # one document, a batch of one
        assert next(iter(cursor))["_id"] == 3
    assert c.commands == ["aggregate"] and len(c.open_cursors) == 1  # a killCursors will follow, uncounted
    cursor.close()
    with count_commands() as c:
        assert next(iter(coll.aggregate([{"$match": {"_id": 3}}], batchSize=2)))["_id"] == 3
    assert c.commands == ["aggregate"] and c.open_cursors == set()  # a larger batch closes it
    with count_commands() as c:
        cursor = coll.find({}, batch_size=2)
        next(cursor)
        cursor.close()  # its killCursors, sent inside the block, closes it: a round trip, counted
    assert c.open_cursors == set() and c.commands == ["find", "killCursors"] and c.round_trips == 2
    with count_commands() as c:
        with coll.find({}, batch_size=2) as cursor:  # leaving the block closes it: the same round trip
            next(cursor)
    assert c.open_cursors == set() and c.commands == ["find", "killCursors"]
    with count_commands() as c:  # exhausted: the getMore that finds nothing left closes it, and is counted
        assert [d["_id"] for d in coll.find({"_id": {"$lt": 2}}, batch_size=2)] == [0, 1]
    assert c.commands == ["find", "getMore"] and c.open_cursors == set()


def test_the_drivers_background_killcursors_is_not_counted_and_leaves_the_cursor_open_in_the_count():
    # pymongo closes a cursor dropped unclosed from its own thread, when it chooses: the count cannot
    # say when, so the cursor stays open in it (a bill refuses the read), and nothing is counted
    import threading
    from types import SimpleNamespace

    from helpers import counting

    def event(thread_name):
        e = SimpleNamespace(command_name="killCursors", command={"killCursors": "c", "cursors": [42]},
                            database_name="d", request_id=1)
        t = threading.Thread(target=counting._LISTENER.started, args=(e,), name=thread_name)
        t.start()
        t.join()

    with count_commands() as c:
        c.open_cursors.add(42)
        event("pymongo_kill_cursors_thread")
    assert c.commands == [] and c.open_cursors == {42}
    with count_commands() as c:  # the application's own close, from any other thread: one round trip
        c.open_cursors.add(42)
        event("worker")
    assert c.commands == ["killCursors"] and c.open_cursors == set()


def test_a_cursors_clone_and_distinct_are_counted_as_the_driver_sends_them(db):
    coll = db["numbers_clone"]
    coll.insert_many([{"_id": i, "k": i % 3} for i in range(6)])
    cursor = coll.find({"_id": {"$lt": 4}}, batch_size=10)
    with count_commands() as c:
        assert sorted(cursor.distinct("k")) == [0, 1, 2]  # one distinct command over the cursor's filter
    assert c.commands == ["distinct"] and c.round_trips == 1
    with count_commands() as c:
        assert [d["_id"] for d in cursor.clone()] == [0, 1, 2, 3]  # a fresh find, read to its end
    assert c.commands == ["find"] and c.docs_returned == 4 and c.open_cursors == set()
