"""Tests of helpers/indexkeys.py and the index keys written that counting and benchmark report,
and of the default-batch flag: the same figures on every backend."""
from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from helpers.counting import count_commands
from helpers.indexkeys import KeySnapshot, document_keys, index_keys_written
from helpers.measure import benchmark

ID = {"name": "_id_", "key": {"_id": 1}}


def _index(key, **options):
    return {"name": "_".join(f"{k}_{v}" for k, v in key), "key": dict(key), **options}


def test_document_keys_follow_mongodbs_multikey_and_sparse_rules():
    doc = {"_id": 1, "tags": ["a", "b", "a"], "n": 3, "sub": [{"x": 1}, {"x": 2}]}
    assert sum(document_keys(doc, ID).values()) == 1
    assert sum(document_keys(doc, _index([("tags", 1)])).values()) == 2  # duplicates are one key
    assert sum(document_keys(doc, _index([("tags", 1), ("n", -1)])).values()) == 2
    assert sum(document_keys(doc, _index([("sub.x", 1)])).values()) == 2
    assert sum(document_keys(doc, _index([("missing", 1)])).values()) == 1  # a null key
    assert sum(document_keys(doc, _index([("missing", 1)], sparse=True)).values()) == 0
    assert sum(document_keys({"_id": 2, "tags": []}, _index([("tags", 1)])).values()) == 1
    # the server compares keys with their type bits: 1 -> 1.0 rewrites the key; within a document equal values are one
    assert document_keys({"_id": 1, "n": 1}, _index([("n", 1)])) != document_keys({"_id": 1, "n": 1.0}, _index([("n", 1)]))
    assert sum(document_keys({"_id": 1, "n": [1, 1.0]}, _index([("n", 1)])).values()) == 1
    assert sum(document_keys({"_id": 1, "n": [2**53, float(2**53) + 1, 2**53 + 1]}, _index([("n", 1)])).values()) == 2
    assert document_keys({"_id": 1, "h": 2.3}, _index([("h", "hashed")])) == document_keys({"_id": 1, "h": 2.9}, _index([("h", "hashed")]))
    assert document_keys({"_id": 1, "a": []}, _index([("a", 1)])) != document_keys({"_id": 1, "a": None}, _index([("a", 1)]))
    assert document_keys({"_id": 1, "s": "A"}, {**_index([("s", 1)]), "collation": {"locale": "en", "strength": 2}}) is None
    partial = _index([("n", 1)], partialFilterExpression={"n": {"$gt": 5}})
    assert sum(document_keys(doc, partial).values()) == 0
    assert sum(document_keys({"_id": 3, "n": 9}, partial).values()) == 1
    point = {"_id": 4, "geo": {"type": "Point", "coordinates": [8.5, 47.4]}}
    assert sum(document_keys(point, _index([("geo", "2dsphere")])).values()) == 1
    assert sum(document_keys({"_id": 5}, _index([("geo", "2dsphere")])).values()) == 0
    line = {"_id": 6, "geo": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}}
    assert document_keys(line, _index([("geo", "2dsphere")])) is None  # not counted, never zero
    assert document_keys(doc, {"name": "t", "key": {"body": "text"}}) is None


def test_inserts_updates_and_deletes_write_the_keys_mongodb_writes(db):
    coll = db["ikw"]
    coll.create_index([("g", 1)])
    coll.create_index([("tags", 1)])
    with count_commands(index_keys=coll) as c:
        coll.insert_many([{"_id": i, "g": i % 2, "tags": ["x", "y"], "other": 0} for i in range(10)])
    assert c.index_keys_written == 10 * (1 + 1 + 2)  # _id, g, two tags each
    assert c.round_trips == 1  # the snapshots are not counted
    with count_commands(index_keys=coll) as c:
        coll.update_many({}, {"$set": {"other": 1}})  # no indexed field changes: no key written
    assert (c.docs_written, c.index_keys_written) == (10, 0)
    with count_commands(index_keys={coll: {"_id": 3}}) as c:
        coll.update_one({"_id": 3}, {"$set": {"g": 7}, "$push": {"tags": "z"}})
    assert c.index_keys_written == 2 + 1  # g: one key out, one in; tags: one key in
    with count_commands(index_keys=coll) as c:
        coll.delete_one({"_id": 0})
    assert c.index_keys_written == 4
    m = benchmark("insert one", lambda: coll.insert_one({"_id": 99, "g": 1, "tags": []}),
                  setup=lambda: coll.delete_many({"_id": 99}), repeat=2, warmup=0, index_keys={coll: {"_id": 99}})
    assert (m.docs_written, m.index_keys_written) == (1, 3)
    read = benchmark("read", lambda: coll.find_one({"_id": 1}), repeat=1, warmup=0)
    assert read.index_keys_written == 0  # a read writes no key


def test_a_clustered_id_is_stored_with_the_documents_and_writes_no_key_of_its_own(db, monkeypatch):
    """A clustered collection (``clusteredIndex`` on ``_id``, MongoDB 5.3+) keeps its documents in ``_id``
    order in one file, with no separate ``_id`` index: only its secondary indexes' keys are written. An
    engine that refuses the option (the mock) is given MongoDB's ``listIndexes`` answer for it instead."""
    try:
        coll = db.create_collection("ikw_clustered", clusteredIndex={"key": {"_id": 1}, "unique": True})
    except (NotImplementedError, OperationFailure):
        coll = db["ikw_clustered"]
        listed = coll.list_indexes
        monkeypatch.setattr(coll, "list_indexes", lambda *a, **k: iter(
            [{**i, "clustered": True} if i["name"] == "_id_" else dict(i) for i in listed(*a, **k)]))
    coll.create_index([("g", 1)])
    assert [i["name"] for i in coll.list_indexes() if i.get("clustered")] == ["_id_"]
    with count_commands(index_keys=coll) as c:
        coll.insert_many([{"_id": f"a:{i:02d}", "g": i % 3} for i in range(10)])
    assert c.index_keys_written == 10  # g only: the _id is the collection's order, not an index key
    with count_commands(index_keys={coll: {"_id": "a:04"}}) as c:
        coll.delete_one({"_id": "a:04"})
    assert c.index_keys_written == 1
    plain = db["ikw_not_clustered"]
    plain.create_index([("g", 1)])
    with count_commands(index_keys=plain) as c:
        plain.insert_many([{"_id": f"a:{i:02d}", "g": i % 3} for i in range(10)])
    assert c.index_keys_written == 20  # _id and g


def test_a_snapshot_reads_only_what_its_filter_names_and_says_unknown_for_uncountable_indexes(db):
    coll = db["ikw_geo"]
    coll.insert_many([{"_id": i, "geo": {"type": "Point", "coordinates": [i, i]}} for i in range(3)])
    coll.create_index([("geo", "2dsphere")])
    assert sum(sum(v["keys"].values()) for v in KeySnapshot({coll: {"_id": 1}}).take().values()) == 2  # _id and geo
    with count_commands(index_keys=coll) as c:
        coll.insert_one({"_id": 9, "geo": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}})
    assert c.index_keys_written is None  # a line's S2 cells are not counted here: unknown, never zero
    assert KeySnapshot(coll).take() is None
    assert index_keys_written(None, {}) is None
    with pytest.raises(ValueError, match="at least one collection"):
        KeySnapshot([])


def test_a_default_first_batch_that_cut_the_reply_is_flagged_and_an_explicit_one_is_not(db):
    coll = db["batches"]
    coll.insert_many([{"_id": i} for i in range(150)])
    with count_commands() as c:
        list(coll.find())
    assert (c.round_trips, c.default_batch_getmores) == (2, 1)
    with count_commands() as c:
        list(coll.find(batch_size=1000))
    assert (c.round_trips, c.default_batch_getmores) == (1, 0)
    with count_commands() as c:
        list(coll.aggregate([{"$match": {}}]))
    assert c.default_batch_getmores == 1
    with count_commands() as c:
        list(coll.aggregate([{"$match": {}}], batchSize=1000))
    assert (c.round_trips, c.default_batch_getmores) == (1, 0)
    with count_commands() as c:
        list(coll.find().limit(50))
        coll.find_one({"_id": 3})
        list(coll.find({"_id": {"$lt": 20}}))  # the default batch did not cut this one
    assert c.default_batch_getmores == 0


def test_a_write_that_moves_a_document_out_of_the_filter_is_still_seen(db):
    coll = db["ikw_moves"]
    coll.create_index([("status", 1)])
    coll.insert_one({"_id": 1, "status": "open", "note": ""})
    with count_commands(index_keys={coll: {"status": "open"}}) as c:
        coll.update_one({"_id": 1}, {"$set": {"note": "x"}})
    assert c.index_keys_written == 0
    with count_commands(index_keys={coll: {"status": "open"}}) as c:
        coll.update_one({"_id": 1}, {"$set": {"status": "closed"}})
    assert c.index_keys_written == 2  # one key out, one in: the document left the filter, not the collection
    with count_commands(index_keys={coll: {"_id": 1}}) as c:
        coll.update_one({"_id": 1}, {"$set": {"status": 3}})
    with count_commands(index_keys={coll: {"_id": 1}}) as c2:
        coll.update_one({"_id": 1}, {"$set": {"status": 3.0}})  # the same value, another type: a new key
    assert (c.index_keys_written, c2.index_keys_written) == (2, 2)


def test_an_index_changed_inside_the_block_a_database_or_a_huge_snapshot_is_refused(db, monkeypatch):
    import helpers.indexkeys as ik

    coll = db["ikw_refuse"]
    coll.insert_many([{"_id": i, "g": i} for i in range(30)])
    with pytest.raises(ValueError, match="indexes of .* changed"):
        with count_commands(index_keys=coll):
            coll.create_index([("g", 1)])
    with pytest.raises(TypeError, match="pass a collection"):
        KeySnapshot(db)
    with pytest.raises(TypeError, match="pass a collection"):
        KeySnapshot("ikw_refuse")
    monkeypatch.setattr(ik, "MAX_SNAPSHOT_DOCS", 20)
    with pytest.raises(ValueError, match=r"more than 20 documents.*\{collection: filter\}"):
        KeySnapshot(coll).take()
    assert KeySnapshot({coll: {"_id": {"$lt": 5}}}).take() is not None


def test_an_aggregation_that_writes_leaves_its_index_keys_unknown(db):
    from helpers.workload import cost_of

    src = db["ikw_src"]
    src.insert_many([{"_id": i} for i in range(3)])
    db["ikw_dst"].insert_one({"_id": 0})
    with count_commands() as c:
        list(src.aggregate([{"$merge": {"into": "ikw_dst"}}]))
    assert c.aggregate_writes == 1 and not c.docs_written_known  # no snapshot of the target: unknown, not 0
    with pytest.raises(ValueError, match="docs written is unknown"):
        cost_of(c)
    with count_commands(index_keys=db["ikw_dst"]) as c:  # the target snapshotted: its index keys counted too
        list(src.aggregate([{"$match": {"_id": {"$gte": 1}}}, {"$project": {"_id": 1, "x": {"$literal": 1}}},
                            {"$merge": {"into": "ikw_dst"}}]))
    assert (cost_of(c)["docs written"], cost_of(c)["index keys written"]) == (2, 0)  # 2 merged in place: same _id keys


def test_the_mock_and_the_server_flag_the_same_default_batches(db):
    coll = db["batches_agree"]
    coll.insert_many([{"_id": i} for i in range(150)])
    with count_commands() as c:
        list(coll.find().limit(150))  # the limit is above the default first batch: 101, then a getMore
    assert (c.round_trips, c.default_batch_getmores) == (2, 1)
    with count_commands() as c:
        list(coll.aggregate([{"$match": {}}], batchSize=0))  # a batch size chosen (0), not the default
    assert c.default_batch_getmores == 0


def test_a_pause_in_one_thread_leaves_another_threads_counting_alone(db):
    import threading

    from helpers.counting import paused

    coll = db["pause_threads"]
    coll.insert_one({"_id": 1})
    ready, done = threading.Event(), threading.Event()

    def pauser():
        with paused():
            ready.set()
            done.wait(5)

    t = threading.Thread(target=pauser)
    t.start()
    ready.wait(5)
    with count_commands() as c:
        coll.find_one({"_id": 1})
    done.set()
    t.join()
    assert c.round_trips == 1
    with paused(), count_commands() as hidden:
        coll.find_one({"_id": 1})
    assert hidden.round_trips == 0


def test_a_snapshot_counts_the_documents_a_merge_changed_as_freezing_each_one_did(db):
    # a snapshot keeps each document's BSON, not a frozen string of it: the same counts, nested changes included
    from helpers import indexkeys

    def doc(i, c=1.0, order=range(5), d_first=False):
        sub = {"a": [{"b": j, "c": [j, c]} for j in order], "d": {"e": "x"}}
        return {"_id": i, "n": i, "sub": dict(reversed(sub.items())) if d_first else sub}

    coll, src = db["ik_nested"], db["ik_nested_src"]
    coll.insert_many([doc(i) for i in range(6)])
    coll.create_index("sub.a.b")
    src.insert_many([doc(0), doc(1, c=1), doc(2, order=reversed(range(5))), doc(3, d_first=True), doc(9)])

    def frozen():
        return {indexkeys._frozen(d["_id"]): indexkeys._frozen(d) for d in coll.find({}, batch_size=100)}

    old = frozen()
    with count_commands(index_keys=coll) as c:
        list(src.aggregate([{"$merge": {"into": "ik_nested", "whenMatched": "replace"}}], batchSize=0))
    new = frozen()
    by_freezing = len(old.keys() ^ new.keys()) + sum(old[k] != new[k] for k in old.keys() & new.keys())
    # 1.0 -> 1 deep in an array, an array reordered, fields reordered, one inserted; 0 rewritten unchanged
    assert (c.docs_written, c.docs_written_known) == (by_freezing, True) == (4, True)
    assert c.index_keys_written == 1 + 5  # the new document's _id and its five sub.a.b keys
    snapshot = KeySnapshot(coll).take()[f"{db.name}.ik_nested"]
    assert all(isinstance(v, bytes) for v in snapshot["docs"].values())
