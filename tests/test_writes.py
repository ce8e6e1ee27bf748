"""helpers.writes: an error is "only duplicates" exactly when every refused statement is code 11000."""
from __future__ import annotations

import pytest
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

from helpers.writes import DUPLICATE_KEY, only_duplicates, refused


def _bulk(*codes, concern=False):
    details = {"writeErrors": [{"index": i * 2, "code": c, "errmsg": "x"} for i, c in enumerate(codes)],
               "writeConcernErrors": [{"code": 64, "errmsg": "waiting"}] if concern else [], "nInserted": 1}
    return BulkWriteError(details)


def test_duplicates_only():
    assert only_duplicates(_bulk(DUPLICATE_KEY, DUPLICATE_KEY))
    assert refused(_bulk(DUPLICATE_KEY, DUPLICATE_KEY)) == {0, 2}
    assert only_duplicates(DuplicateKeyError("E11000 duplicate key", code=DUPLICATE_KEY))


@pytest.mark.parametrize("error", [
    _bulk(DUPLICATE_KEY, 121),  # a validator refused one: raise it
    _bulk(121),
    _bulk(DUPLICATE_KEY, concern=True),  # a write concern error is not a duplicate
    _bulk(),  # no statement refused: something else went wrong
    OperationFailure("not a write error", code=DUPLICATE_KEY),
    ValueError("not pymongo's"),
])
def test_anything_else_is_raised(error):
    assert not only_duplicates(error)


def test_a_real_unordered_insert_of_stored_documents(db):
    """On every backend: the engine's own error for a re-sent batch is only duplicates."""
    coll = db["writes_probe"]
    coll.insert_many([{"_id": 1}, {"_id": 3}])
    with pytest.raises(BulkWriteError) as caught:
        coll.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 4}], ordered=False)
    assert only_duplicates(caught.value) and refused(caught.value) == {0, 2}
    assert sorted(d["_id"] for d in coll.find()) == [1, 2, 3, 4]
