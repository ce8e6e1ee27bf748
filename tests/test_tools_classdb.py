"""Tests of tools/classdb.py: the instructor's class list and drop."""
from __future__ import annotations

import uuid

import pytest

from helpers.backends import connect
from helpers.safety import workbook_collection
from tools import classdb


def test_instructor_lists_and_drops_only_what_the_workbook_created(test_uri):
    conn = connect("mongodb", uri=test_uri, db_name=f"wbtest_{uuid.uuid4().hex[:10]}")
    client = conn.client
    tag = uuid.uuid4().hex[:8]  # fresh names: the test only ever drops databases it created
    alice, bob = f"schema_workbook_wbtest{tag}_alice", f"schema_workbook_wbtest{tag}_bob"
    lookalike, other = f"schema_workbook_wbtest{tag}_lookalike", f"wbtest_{tag}_other"
    mine = [alice, bob, lookalike, other]
    assert not set(mine) & set(client.list_database_names())
    try:
        for n in (alice, bob):
            workbook_collection(client[n], "posts").insert_one({"_id": 1, "by": n})
        client[bob]["bobs_own_notes"].insert_one({"_id": 1})  # a student's own collection
        client[lookalike]["x"].insert_one({"_id": 1})  # the prefix, but not the workbook's
        client[other]["keep"].insert_one({"_id": 1})
        listed = {d["database"]: d for d in classdb.workbook_databases(client)}
        assert {alice, bob} <= set(listed) and lookalike not in listed
        assert listed[alice]["collections"] == 1 and listed[alice]["data bytes"] > 0
        with pytest.raises(ValueError, match="left alone"):
            classdb.drop_workbook_databases(client, [lookalike])
        report = classdb.drop_workbook_databases(client, [alice, bob])
        assert report == {alice: [], bob: ["bobs_own_notes"]}
        remaining = set(client.list_database_names())
        assert alice not in remaining and {bob, lookalike, other} <= remaining
        assert client[bob].list_collection_names() == ["bobs_own_notes"]
    finally:
        for n in mine:
            client.drop_database(n)
        conn.close()
