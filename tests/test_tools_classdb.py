"""Tests of tools/classdb.py: the instructor's class list and drop."""
from __future__ import annotations

import uuid

import pytest

from helpers.backends import connect
from helpers.datasets import staging_name
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


# --- "Still to verify" + issue 14 item 9: class drop is the instructor's, and says why not in a sentence

def _class_cli(monkeypatch, capsys, uri, *args):
    from tools import cli

    monkeypatch.setenv("MONGODB_URI", uri)
    code = cli.main(["class", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def class_dbs(auth_server):
    _login, admin = auth_server
    tag = uuid.uuid4().hex[:8]
    alice, bob = f"schema_workbook_wbtest{tag}_alice", f"schema_workbook_wbtest{tag}_bob"
    for n in (alice, bob):
        workbook_collection(admin[n], "posts").insert_one({"_id": 1, "by": n})
        workbook_collection(admin[n], staging_name("posts"))  # recorded by a load: not a collection of hers
    admin[bob]["bobs_own_notes"].insert_one({"_id": 1})
    yield alice, bob
    for n in (alice, bob):
        admin.drop_database(n)


@pytest.mark.parametrize("user", ["student", "rwany"])
def test_class_drop_refuses_a_students_login_and_drops_nothing(auth_server, class_dbs, monkeypatch, capsys, user):
    login, admin = auth_server
    alice, bob = class_dbs
    code, out, err = _class_cli(monkeypatch, capsys, login(user), "drop", "--yes")
    assert code == 2 and "Traceback" not in err
    assert "instructor" in err and "nothing was dropped" in err.lower() or "may not list" in err
    code, out, err = _class_cli(monkeypatch, capsys, login(user), "drop", alice, "--yes")
    assert code == 2 and "instructor" in err
    assert admin[alice]["posts"].count_documents({}) == 1 and admin[bob]["posts"].count_documents({}) == 1
    import pymongo

    student = pymongo.MongoClient(login(user))
    try:
        with pytest.raises(classdb.ClassError):
            classdb.drop_workbook_databases(student, [alice])
    finally:
        student.close()
    assert admin[alice]["posts"].count_documents({}) == 1
    code, out, err = _class_cli(monkeypatch, capsys, login(user), "list")  # a sentence, not a traceback
    assert code == 2 and "listDatabases" in err and "Traceback" not in err


def test_class_drop_lists_exactly_what_it_drops_then_drops_it(auth_server, class_dbs, monkeypatch, capsys):
    login, admin = auth_server
    alice, bob = class_dbs
    code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "list")
    assert code == 0
    assert [line.split()[1] for line in out.splitlines() if line.startswith((alice, bob))] == ["1", "1"]
    code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "drop", alice, bob)
    assert code == 2 and "Nothing was dropped" in out
    assert f"{alice}: would drop posts; then the database" in out
    assert f"{bob}: would drop posts; keeps bobs_own_notes" in out
    assert admin[alice]["posts"].count_documents({}) == 1
    code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "drop", alice, bob, "--yes")
    assert code == 0, err
    assert alice not in admin.list_database_names()
    assert admin[bob].list_collection_names() == ["bobs_own_notes"]


def test_class_drop_of_a_database_that_is_not_the_workbooks_is_a_sentence(test_uri, monkeypatch, capsys):
    code, out, err = _class_cli(monkeypatch, capsys, test_uri, "drop", "not_a_workbook_db", "--yes")
    assert code == 2 and "left alone: not_a_workbook_db" in err and "Traceback" not in err


@pytest.mark.parametrize("privileges, allowed", [
    ([{"resource": {"anyResource": True}, "actions": ["anyAction"]}], True),  # __system-like
    ([{"resource": {"db": "", "collection": ""}, "actions": ["dropDatabase", "collStats"]},  # dbAdminAnyDatabase
      {"resource": {"cluster": True}, "actions": ["listDatabases"]}], True),
    ([{"resource": {"db": "", "collection": ""}, "actions": ["find", "insert", "dropCollection"]},  # readWriteAnyDatabase
      {"resource": {"cluster": True}, "actions": ["listDatabases"]}], False),
    ([{"resource": {"db": "schema_workbook_ana_1a2b", "collection": ""},  # dbOwner of one's own database
       "actions": ["dropDatabase", "insert"]}], False),
])
def test_instructor_privileges_as_a_real_mongodb_reports_them(privileges, allowed):
    assert classdb.instructor_privileges(privileges) is allowed


def test_a_database_only_connected_to_is_not_listed(test_uri):
    """Connecting (with its capability probe) records nothing, so it creates no registry: a
    ``schema_workbook*`` database a learner only connected to is not a class database."""
    tag = uuid.uuid4().hex[:8]
    name = f"schema_workbook_wbtest{tag}_connected"
    conn = connect("mongodb", uri=test_uri, db_name=name)  # probes the engine in this database
    try:
        assert "workbook_registry" not in conn.db.list_collection_names()
        assert name not in {d["database"] for d in classdb.workbook_databases(conn.client)}
    finally:
        conn.client.drop_database(name)
        conn.close()
