"""Safety: reset drops only what the workbook created, in its own database."""
from __future__ import annotations

import pytest

from helpers.safety import (
    ForeignCollectionError,
    is_workbook_collection,
    reset_workbook,
    track_collection,
    workbook_collection,
    workbook_collections,
)


def test_reset_leaves_foreign_collections_and_other_databases_alone(db, backend):
    db["students_notes"].insert_one({"_id": 1, "text": "mine, not the workbook's"})
    other = backend.client[db.name + "_other"]
    try:
        other["keep"].insert_one({"_id": 1})
        workbook_collection(db, "posts").insert_many([{"_id": i} for i in range(3)])
        track_collection(db, "posts_overflow").insert_one({"_id": 1})
        assert workbook_collections(db) == ["posts", "posts_overflow"]
        assert reset_workbook(db) == ["posts", "posts_overflow"]
        names = set(db.list_collection_names())
        assert "students_notes" in names and "posts" not in names and "posts_overflow" not in names
        assert db["students_notes"].count_documents({}) == 1
        assert other["keep"].count_documents({}) == 1
        assert reset_workbook(db) == []  # idempotent
    finally:
        backend.client.drop_database(other.name)


def test_workbook_never_claims_an_existing_foreign_collection(db):
    db["customers"].insert_one({"_id": 1})
    with pytest.raises(ForeignCollectionError, match="WORKBOOK_DB"):
        workbook_collection(db, "customers")
    track_collection(db, "customers").insert_one({"_id": 2})  # lenient: used, but never recorded
    assert not is_workbook_collection(db, "customers")
    reset_workbook(db)
    assert db["customers"].count_documents({}) == 2


def test_registry_name_is_reserved(db):
    with pytest.raises(ValueError):
        workbook_collection(db, "workbook_registry")
