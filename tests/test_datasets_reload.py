"""Reloading a dataset (re-running a Setup cell) and the caches of typed data files.

Where dropping a collection costs as much as writing it (SecantusDB: renameCollection and drop both
copy or free every document), a reload writes only the difference between what the collection
holds and what the file says; everywhere it must end exactly like a fresh load: the same
documents, byte for byte, and only the ``_id`` index.
"""
from __future__ import annotations

import os
from pathlib import Path

import bson
import pytest

from helpers import datasets as ds
from helpers.datasets import load_dataset

NAME, SCALE = "nyc_flights", 40  # 40 planes: a few batches of 2,000 would be too many for the test


def _raw(coll) -> list[bytes]:
    """Every document as BSON bytes, sorted: equal lists mean equal collections, field order included."""
    return sorted(bson.encode(d) for d in coll.find({}))


def _expected() -> list[bytes]:
    return sorted(bson.encode(d) for d in ds._SPECS[NAME].source(ds.datasets_dir(), SCALE))


def _uuid(db, name):
    info = next(iter(db.list_collections(filter={"name": name})), {})
    return info.get("info", {}).get("uuid")


def test_a_reload_restores_every_change_and_keeps_only_the_id_index(db, monkeypatch):
    monkeypatch.setattr(ds, "BATCH_SIZE", 7)  # several batches of deletes and inserts
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
    if ds._rename_copies(db):
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
    if ds._rename_copies(db):
        assert before is not None and _uuid(db, NAME) == before


def test_a_reload_with_many_changes_rewrites_the_collection(db, backend, monkeypatch):
    """Past SYNC_MOST_CHANGED differing documents, deleting them one by one would cost more than
    writing everything again: the collection is dropped and loaded afresh, in the file's order."""
    load_dataset(NAME, db, SCALE)
    fresh_order = [d["_id"] for d in db[NAME].find({}, {"_id": 1})]
    before = _uuid(db, NAME)
    db[NAME].update_many({}, {"$set": {"migrated": 1}})
    monkeypatch.setattr(ds, "SYNC_MOST_CHANGED", 5)
    load_dataset(NAME, db, SCALE)
    assert _raw(db[NAME]) == _expected()
    if ds._rename_copies(db):  # written in place (SecantusDB): rewritten whole, in the file's order
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
    real = ds._typed_documents
    monkeypatch.setattr(ds, "_typed_documents", lambda *a: handed.append(real(*a)) or handed[-1])
    load_dataset(name, db)
    (docs,) = handed
    assert [bson.encode(doc) for doc in docs] == [bson.encode(doc) for doc in real(*_typed_args(name))]
    if name == "airlines":
        assert all("airline_id" not in doc for doc in docs)
        assert db.airlines.count_documents({"airline_id": {"$exists": True}}) == 0


def _typed_args(name):
    source = ds._SPECS[name].source
    return ds._verify(ds.datasets_dir(), source.file), source.fields, source.make_id


def test_the_typed_copy_of_a_large_file_is_cached_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    path = ds._verify(ds.datasets_dir(), "nyc_flights_2013_01.csv.gz")
    typed = ds._typed_documents(path, ds._FLIGHTS)
    assert len(typed) >= ds._CACHE_MIN_ROWS
    copies = list((tmp_path / "cache").glob("nyc_flights_2013_01.csv.gz.*.pickle"))
    assert len(copies) == 1 and ds._sha256(path)[:16] in copies[0].name
    # a new kernel: nothing kept in memory, the copy is read and the file is not typed again
    monkeypatch.setattr(ds, "_read_typed", lambda *a: pytest.fail("typed again despite the cached copy"))
    assert ds._typed_documents(path, ds._FLIGHTS) == typed
    monkeypatch.undo()
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    # a damaged copy is typed again and replaced
    copies[0].write_bytes(b"not a pickle")
    assert ds._typed_documents(path, ds._FLIGHTS) == typed
    assert copies[0].read_bytes() != b"not a pickle"
    # another typing of the columns never meets this copy
    other = {**ds._FLIGHTS, "flight": (str, True, "flight")}
    assert ds._typed_documents(path, other)[0]["flight"] == str(typed[0]["flight"])


def test_no_cache_when_it_is_turned_off_or_for_small_files(tmp_path, monkeypatch):
    from helpers import settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBOOK_CACHE", "off")
    assert settings.cache_folder() is None
    ds._typed_documents(ds._verify(ds.datasets_dir(), "nyc_flights_2013_01.csv.gz"), ds._FLIGHTS)
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere near
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    ds._typed_documents(ds._verify(ds.datasets_dir(), "nyc_planes.csv"), ds._PLANES)  # 3,322 rows
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.skipif(os.name != "posix", reason="file modes and owners are POSIX")
def test_a_copy_in_a_folder_others_may_write_is_never_read(tmp_path, monkeypatch):
    """A pickle runs code when loaded: a copy is read only from a private folder of the user's own."""
    folder = tmp_path / "shared"
    monkeypatch.setenv("WORKBOOK_CACHE", str(folder))
    path = ds._verify(ds.datasets_dir(), "nyc_flights_2013_01.csv.gz")
    typed = ds._typed_documents(path, ds._FLIGHTS)
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
    (copy,) = folder.glob("*.pickle")
    folder.chmod(0o777)  # now anybody could have replaced the copy
    copy.write_bytes(b"anything at all")
    monkeypatch.setattr("pickle.load", lambda *a: pytest.fail("a copy read from a folder others may write"))
    assert ds._typed_documents(path, ds._FLIGHTS) == typed
    assert copy.read_bytes() == b"anything at all"  # and nothing written there either


def test_a_relative_cache_folder_is_the_same_from_any_working_folder(tmp_path, monkeypatch):
    from helpers import settings

    monkeypatch.setenv("WORKBOOK_CACHE", "some/cache")
    monkeypatch.chdir(tmp_path)
    here = settings.cache_folder()
    monkeypatch.chdir(ds.datasets_dir())
    assert settings.cache_folder() == here and here.is_absolute()
    monkeypatch.setenv("WORKBOOK_CACHE", "~/c")
    assert settings.cache_folder() == Path.home() / "c"
