"""Tests of helpers/sizes.py: BSON sizes and the 16 MiB limit."""
from __future__ import annotations

import bson
import pytest
from pymongo.errors import DocumentTooLarge

from helpers.sizes import (
    MAX_BSON_SIZE,
    bson_sizes,
    check_document_size,
    human_bytes,
    server_bson_sizes,
    size_summary,
)


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


def test_the_client_side_message_says_what_the_engine_does():
    big = {"_id": "big", "blob": "x" * (MAX_BSON_SIZE + 1)}
    with pytest.raises(DocumentTooLarge) as enforced:
        check_document_size(big, server_enforces=True)
    with pytest.raises(DocumentTooLarge) as not_enforced:
        check_document_size(big, server_enforces=False)
    assert "does not enforce" not in str(enforced.value) and "enforces the limit too" in str(enforced.value)
    assert "does not enforce 16 MiB" in str(not_enforced.value)
    for e in (enforced, not_enforced):
        assert "16,777,216-byte (16 MiB) limit" in str(e.value) and "16 MB" not in str(e.value)


def test_human_bytes_uses_binary_units():
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(MAX_BSON_SIZE) == "16.0 MiB"
    assert human_bytes(999) == "999 B"
    assert "max % of 16 MiB" in size_summary([1, 2])
