"""Reloading a dataset (re-running a Setup cell).

Where dropping a collection costs as much as writing it (SecantusDB: renameCollection and drop both
copy or free every document), a reload writes only the difference between what the collection
holds and what the file says; everywhere it must end exactly like a fresh load: the same
documents, byte for byte, and only the ``_id`` index.
"""
from __future__ import annotations

import bson
import pytest

from helpers import datasets as ds
from helpers.datasets import load_dataset

NAME, SCALE = "nyc_flights", 40  # 40 planes: a few batches of 2,000 would be too many for the test


def _raw(coll) -> list[bytes]:
    """Every document as BSON bytes, sorted: equal lists mean equal collections, field order included."""
    return sorted(bson.encode(d) for d in coll.find({}))


def _expected() -> list[bytes]:
    return sorted(bson.encode(d) for d in ds.SPECS[NAME].source(ds.datasets_dir(), SCALE))


def _uuid(db, name):
    info = next(iter(db.list_collections(filter={"name": name})), {})
    return info.get("info", {}).get("uuid")


def test_a_reload_restores_every_change_and_keeps_only_the_id_index(db, monkeypatch):
    monkeypatch.setattr(ds.common, "BATCH_SIZE", 7)  # several batches of deletes and inserts
    first = load_dataset(NAME, db, SCALE)
    coll = db[NAME]
    expected = _expected()
    assert _raw(coll) == expected and first.counts[NAME] == len(expected)
    ids = sorted(d["_id"] for d in coll.find({}, {"_id": 1}))
    coll.update_one({"_id": ids[0]}, {"$set": {"dest": "XXX"}})  # a changed value
    coll.update_one({"_id": ids[1]}, {"$set": {"distance": float(coll.find_one({"_id": ids[1]})["distance"])}})  # a type
    coll.update_one({"_id": ids[2]}, {"$unset": {"origin": ""}})  # a field gone ...
    coll.update_one({"_id": ids[2]}, {"$set": {"origin": coll.find_one({"_id": ids[3]})["origin"]}})  # ... re-added last
    coll.delete_many({"_id": {"$in": ids[4:30]}})  # missing documents
    coll.insert_one({"_id": "a learner's own", "n": 1})  # an extra one
    coll.create_index("tailnum")
    again = load_dataset(NAME, db, SCALE)
    assert again.counts == first.counts
    assert _raw(coll) == expected
    assert list(coll.index_information()) == ["_id_"]


def test_a_reload_changes_nothing_that_is_already_right(db, backend, monkeypatch):
    """Where the target is written in place (SecantusDB), a reload of an unchanged collection
    keeps it (same UUID) and writes no document to it."""
    load_dataset(NAME, db, SCALE)
    before = _uuid(db, NAME)
    if ds.rename_copies(db):
        from pymongo.collection import Collection

        for method in ("insert_many", "insert_one", "delete_many", "delete_one", "bulk_write", "drop"):
            real = getattr(Collection, method)

            def guarded(self, *args, _real=real, _method=method, **kwargs):
                assert self.name != NAME, f"{_method} on {NAME} during a reload that changes nothing"
                return _real(self, *args, **kwargs)

            monkeypatch.setattr(Collection, method, guarded)
    load_dataset(NAME, db, SCALE)
    monkeypatch.undo()
    assert _raw(db[NAME]) == _expected()
    if ds.rename_copies(db):
        assert before is not None and _uuid(db, NAME) == before


def test_a_reload_with_many_changes_rewrites_the_collection(db, backend, monkeypatch):
    """Past SYNC_MOST_CHANGED differing documents, deleting them one by one would cost more than
    writing everything again: the collection is dropped and loaded afresh, in the file's order."""
    load_dataset(NAME, db, SCALE)
    fresh_order = [d["_id"] for d in db[NAME].find({}, {"_id": 1})]
    before = _uuid(db, NAME)
    db[NAME].update_many({}, {"$set": {"migrated": 1}})
    monkeypatch.setattr(ds.reload, "SYNC_MOST_CHANGED", 5)
    load_dataset(NAME, db, SCALE)
    assert _raw(db[NAME]) == _expected()
    if ds.rename_copies(db):  # written in place (SecantusDB): rewritten whole, in the file's order
        assert [d["_id"] for d in db[NAME].find({}, {"_id": 1})] == fresh_order
        assert _uuid(db, NAME) != before


def test_a_reload_replaces_a_collection_created_with_options(db, backend):
    """A validator (or any other option) goes with a reload, as with a drop: a fresh collection."""
    if not backend.info.caps.json_schema:
        pytest.skip(f"{backend.info.engine} has no $jsonSchema validator (caps.json_schema)")
    load_dataset(NAME, db, SCALE)
    db.command("collMod", NAME, validator={"$jsonSchema": {"required": ["dest"]}})
    load_dataset(NAME, db, SCALE)
    info = next(iter(db.list_collections(filter={"name": NAME})))
    assert not info.get("options")
    assert _raw(db[NAME]) == _expected()


@pytest.mark.parametrize("name", ["airlines", NAME])
def test_a_load_inserts_the_typed_documents_without_changing_them(db, name, monkeypatch):
    """load_dataset inserts the typed documents themselves (no copies): no engine's insert may
    change them (add a field, retype a value), and the key column of airlines, moved into _id,
    stays out of them."""
    handed = []
    real = ds.typed_copy
    monkeypatch.setattr(ds.catalogue, "typed_copy", lambda *a, **kw: handed.append(real(*a, **kw)) or handed[-1])
    load_dataset(name, db)
    (copy,) = handed
    docs = [ds.catalogue.as_dict(doc) for doc in copy.docs]
    assert [bson.encode(doc) for doc in docs] == [bson.encode(doc) for doc in ds.typed_documents(*_typed_args(name))]
    stored = _raw(db[name])
    assert stored and set(stored) <= {bson.encode(doc) for doc in docs}  # stored as typed, byte for byte
    if name == "airlines":
        assert all("airline_id" not in doc for doc in docs)
        assert db.airlines.count_documents({"airline_id": {"$exists": True}}) == 0


def _typed_args(name):
    source = ds.SPECS[name].source
    return ds.verify_file(ds.datasets_dir(), source.file), source.fields, source.make_id
