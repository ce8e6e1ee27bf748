"""Tests of tools/classdb.py: the instructor's class list and drop."""
from __future__ import annotations

import contextlib
import re
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


# --- class drop is the instructor's, and says why not in a sentence

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


# --- per-student logins, the class's progress, and the end of term

def _roster(tmp_path, *lines):
    path = tmp_path / "roster.csv"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _uris(out):
    return {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in out.splitlines()
            if ": mongodb://" in line and not line.startswith("server:")}


def test_class_logins_progress_and_drop_on_a_server_with_authentication(auth_server, monkeypatch, capsys, tmp_path):
    import json

    import pymongo

    from helpers import backends, settings
    from helpers.exercises import record_server_progress
    from helpers.safety import PROGRESS

    login, admin = auth_server
    tag = uuid.uuid4().hex[:6]
    names = [f"wbt{tag}ana", f"wbt{tag}ben", f"wbt{tag}cleo"]
    ana, ben, cleo = (settings.login_db_name(n) for n in names)
    roster = _roster(tmp_path, "login", *names)
    try:
        code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "logins", str(roster))
        assert code == 0, err
        uris = _uris(out)
        assert sorted(uris) == names and f"{len(names)} logins created" in err
        assert all(settings.student_db_name(u) == settings.login_db_name(n) for n, u in uris.items())
        passwords = {uris[n].split(":")[2].split("@")[0] for n in names}
        assert len(passwords) == 3 and all(len(p) >= 20 for p in passwords)
        # again: nothing changes, no password is shown
        code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "logins", str(roster))
        assert code == 0 and _uris(out) == {} and "0 logins created, 3 unchanged" in err
        assert not any(p in out + err for p in passwords)
        # each learner works in their own database and is refused in another's
        clients = {}
        for n in names:
            conn = backends.connect("mongodb", uri=uris[n])
            clients[n] = conn
            assert conn.db.name == settings.login_db_name(n)
            workbook_collection(conn.db, "orders").insert_one({"_id": 1})
        with pytest.raises(pymongo.errors.OperationFailure) as refused:
            clients[names[0]].client[ben]["orders"].insert_one({"_id": "intruder"})
        assert refused.value.code == 13
        with pytest.raises(pymongo.errors.OperationFailure):
            clients[names[1]].client[ana][PROGRESS].find_one()
        # two of them answer an exercise: ana right (after one wrong try), ben wrong
        record_server_progress(clients[names[0]].db, "0.1", False)
        record_server_progress(clients[names[0]].db, "0.1", True)
        record_server_progress(clients[names[1]].db, "0.1", False)
        for conn in clients.values():
            conn.close()
        code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "progress", "--json",
                                    "--html", str(tmp_path / "class.html"))
        assert code == 0, err
        data = json.loads(out)
        assert set(data) == {"databases"}
        mine = {k: v for k, v in data["databases"].items() if k in (ana, ben, cleo)}
        assert {k: {e: (r["passed"], r["attempts"]) for e, r in v.items()} for k, v in mine.items()} == {
            ana: {"0.1": (True, 2)}, ben: {"0.1": (False, 1)}, cleo: {}}
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["last"]) for v in mine.values() for r in v.values())
        page = (tmp_path / "class.html").read_text(encoding="utf-8")
        for db_name, mark in ((ana, '<td class="pass" title="passed, 2 attempts'),
                              (ben, '<td class="fail" title="failed, 1 attempt,')):
            row = page.split(f'title="{db_name}"', 1)[1].split("</tr>", 1)[0]
            assert mark in row and row.count('class="none"') == row.count("<td") - 2
        cleo_row = page.split(f'title="{cleo}"', 1)[1].split("</tr>", 1)[0]
        assert "pass" not in cleo_row and "fail" not in cleo_row and "<script" not in page
        # a learner's login cannot see the class
        code, out, err = _class_cli(monkeypatch, capsys, uris[names[0]], "progress")
        assert code == 2 and "listDatabases" in err
        # the end of term: the logins go with their databases
        code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "drop", ana, ben, cleo)
        assert code == 2 and f"would remove the logins: {', '.join(names)}" in out
        assert f"{ana}: would drop orders, {PROGRESS}; then the database" in out
        code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "drop", ana, ben, cleo, "--yes")
        assert code == 0, err
        assert not {ana, ben, cleo} & set(admin.list_database_names())
        assert admin.admin.command("usersInfo", names)["users"] == []
        with pytest.raises(pymongo.errors.OperationFailure):
            pymongo.MongoClient(uris[names[0]], serverSelectionTimeoutMS=3000).admin.command("ping")
    finally:
        for n in names:
            with contextlib.suppress(Exception):
                admin.admin.command("dropUser", n)
        for db_name in (ana, ben, cleo):
            admin.drop_database(db_name)


@pytest.mark.parametrize("lines, expected", [
    (["ana", "ben lopez", "ANA"], ["roster.csv:2: 'ben lopez' is not a usable login", "roster.csv:3: 'ANA' repeats line 1"]),
    (["ana", "-x", "é"], ["roster.csv:2: '-x' is not a usable login", "roster.csv:3: 'é' is not a usable login"]),
    (["login", ""], ["no learner in the roster"]),
])
def test_a_roster_with_an_unusable_line_creates_nothing(auth_server, monkeypatch, capsys, tmp_path, lines, expected):
    login, admin = auth_server
    before = admin.admin.command("usersInfo", 1)["users"]
    code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "logins", str(_roster(tmp_path, *lines)))
    assert code == 2 and "Traceback" not in err
    assert all(e in err for e in expected), err
    assert admin.admin.command("usersInfo", 1)["users"] == before


def test_class_logins_needs_a_login_that_may_create_users_and_creates_nothing(auth_server, monkeypatch, capsys,
                                                                               tmp_path):
    login, admin = auth_server
    tag = uuid.uuid4().hex[:6]
    names = [f"wbt{tag}a", f"wbt{tag}b"]
    roster = str(_roster(tmp_path, *names))
    before = admin.admin.command("usersInfo", 1)["users"]
    for user in ("student", "rwany"):
        code, out, err = _class_cli(monkeypatch, capsys, login(user), "logins", roster)
        assert code == 2 and "No login was created" in err and "Traceback" not in err
    # a login that may create users but not the learners' databases: the first user made is removed again
    helper, pwd = f"wbt{tag}useradmin", uuid.uuid4().hex
    admin.admin.command("createUser", helper, pwd=pwd, roles=["userAdminAnyDatabase"])
    try:
        code, out, err = _class_cli(monkeypatch, capsys, login(helper, pwd), "logins", roster)
        assert code == 2 and "No login was created" in err
        assert _uris(out) == {}
        assert admin.admin.command("usersInfo", 1)["users"] == [
            *before, *[u for u in admin.admin.command("usersInfo", 1)["users"] if u["user"] == helper]]
        assert not any(n.startswith(f"schema_workbook_wbt{tag}") for n in admin.list_database_names())
    finally:
        admin.admin.command("dropUser", helper)


def test_class_logins_refuses_a_server_without_authentication(test_uri, monkeypatch, capsys, tmp_path):
    import pymongo

    name = f"wbt{uuid.uuid4().hex[:6]}"
    code, out, err = _class_cli(monkeypatch, capsys, test_uri, "logins", str(_roster(tmp_path, name)))
    assert code == 2 and "does not require authentication" in err and "No login was created" in err
    client = pymongo.MongoClient(test_uri)
    try:
        assert client.admin.command("usersInfo", name)["users"] == []
    finally:
        client.close()


def test_a_user_the_workbook_did_not_make_is_never_taken_over(auth_server, monkeypatch, capsys, tmp_path):
    login, admin = auth_server
    other = f"wbt{uuid.uuid4().hex[:6]}"
    try:
        code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "logins",
                                    str(_roster(tmp_path, other, "student")))
        assert code == 2 and "not made by `class logins`" in err and "student" in err
        assert admin.admin.command("usersInfo", other)["users"] == []  # nothing half done
        assert [u["roles"] for u in admin.admin.command("usersInfo", "student")["users"]] == [
            [{"role": "readWrite", "db": "schema_workbook_student_0001"}]]
    finally:
        with contextlib.suppress(Exception):
            admin.admin.command("dropUser", other)


def test_the_class_pattern_names_only_workbook_databases():
    assert classdb.is_workbook_database_name("schema_workbook")
    assert classdb.is_workbook_database_name("schema_workbook_ana_1a2b")
    assert not classdb.is_workbook_database_name("schema_workbookings")
    assert not classdb.is_workbook_database_name("schema_workbook2")


def test_a_learners_uri_keeps_the_servers_options_not_the_instructors_credentials():
    uri = classdb.learner_uri("mongodb+srv://teacher:t0p@c0.example.net/admin?tls=true&authSource=admin"
                              "&authMechanism=SCRAM-SHA-256&retryWrites=true", "ana", "pw-1_x")
    from helpers.settings import login_db_name

    assert uri == f"mongodb+srv://ana:pw-1_x@c0.example.net/{login_db_name('ana')}?tls=true&retryWrites=true&authSource=admin"


def test_a_learners_uri_carries_no_secret_option_of_the_instructors():
    uri = classdb.learner_uri("mongodb://teacher:t0p@lab:27017/?tls=true&tlsCertificateKeyFilePassword=k3yPass"
                              "&retryWrites=false&proxyPassword=pr0xyPass&sekritOption=x1y2&authSource=admin", "ana", "pw")
    assert "k3yPass" not in uri and "pr0xyPass" not in uri and "x1y2" not in uri and "t0p" not in uri
    assert uri.endswith("?tls=true&retryWrites=false&authSource=admin")


def test_class_logins_refuses_a_server_without_authentication_whatever_the_uris_auth_options(test_uri):
    import pymongo

    scheme, rest = test_uri.split("://", 1)
    hosts = rest.split("/", 1)[0].split("@")[-1]
    name = f"wbt{uuid.uuid4().hex[:6]}"
    client = pymongo.MongoClient(test_uri)
    try:
        for options in ("authMechanism=SCRAM-SHA-256", "authSource=admin&authMechanism=SCRAM-SHA-1"):
            with pytest.raises(classdb.ClassError, match="does not require authentication"):
                classdb.create_logins(client, f"{scheme}://teacher:pw@{hosts}/?{options}", [name])
        assert client.admin.command("usersInfo", name)["users"] == []
    finally:
        client.close()


def test_a_connection_lost_while_logins_are_made_leaves_no_user_whose_password_nobody_saw(auth_server, monkeypatch,
                                                                                            tmp_path):
    import pymongo
    from pymongo.database import Database

    login, admin = auth_server
    tag = uuid.uuid4().hex[:6]
    names = [f"wbt{tag}a", f"wbt{tag}b", f"wbt{tag}c"]
    real, made = Database.command, []

    def command(self, cmd, *args, **kwargs):  # the network fails on the second createUser, as a lost link does
        if cmd == "createUser":
            made.append(args[0])
            if len(made) == 2:
                raise pymongo.errors.AutoReconnect("connection reset by peer")
        return real(self, cmd, *args, **kwargs)

    monkeypatch.setattr(Database, "command", command)
    try:
        with pytest.raises(classdb.ClassError, match="removed again; nothing was changed"):
            classdb.create_logins(admin, login("teacher"), names)
        monkeypatch.undo()
        assert admin.admin.command("usersInfo", [{"user": n, "db": "admin"} for n in names])["users"] == []
        assert not any(n.startswith(f"schema_workbook_wbt{tag}") for n in admin.list_database_names())
    finally:
        monkeypatch.undo()
        for n in names:
            with contextlib.suppress(Exception):
                admin.admin.command("dropUser", n)
            admin.drop_database(classdb.login_db_name(n))


def test_two_logins_whose_databases_would_coincide_are_refused(auth_server):
    from helpers.settings import login_db_name

    login, admin = auth_server
    first, second = "a.b_c_d.e-f-g", "a_b_c_d_e_f.g"  # same slug, and the same 4 hex digits
    assert first != second and login_db_name(first) == login_db_name(second)
    with pytest.raises(classdb.ClassError, match="would share one database"):
        classdb.create_logins(admin, login("teacher"), [first, second])
    assert admin.admin.command("usersInfo", [{"user": n, "db": "admin"} for n in (first, second)])["users"] == []
    try:  # and a later roster's login against a user made before
        assert classdb.create_logins(admin, login("teacher"), [first])[0][1] is not None
        with pytest.raises(classdb.ClassError, match="would share one database"):
            classdb.create_logins(admin, login("teacher"), [second])
        assert admin.admin.command("usersInfo", second)["users"] == []
    finally:
        with contextlib.suppress(Exception):
            admin.admin.command("dropUser", first)
        admin.drop_database(login_db_name(first))


def test_a_user_with_the_workbooks_role_but_someone_elses_custom_data_is_not_the_workbooks():
    from helpers.settings import DB_PREFIX, login_db_name

    role = [{"role": "readWrite", "db": login_db_name("ana")}]
    ours = {"user": "ana", "db": "admin", "roles": role}
    assert classdb._workbook_role(ours) == login_db_name("ana")  # SecantusDB returns no customData
    assert classdb._workbook_role({**ours, "customData": {"workbook": DB_PREFIX, "database": login_db_name("ana")}})
    assert classdb._workbook_role({**ours, "customData": {"owner": "the DBA"}}) is None
    assert classdb._workbook_role({**ours, "customData": {}}) is None


def test_a_registry_a_learner_replaced_with_a_view_is_never_run(test_uri, monkeypatch, capsys):
    import pymongo

    from helpers.safety import REGISTRY

    tag = uuid.uuid4().hex[:8]
    honest, tricky = f"schema_workbook_wbtest{tag}_honest", f"schema_workbook_wbtest{tag}_tricky"
    client = pymongo.MongoClient(test_uri)
    try:
        for n in (honest, tricky):
            workbook_collection(client[n], "posts").insert_one({"_id": 1, "n": 0})
        client[tricky].drop_collection(REGISTRY)  # readWrite may do this in one's own database
        client[tricky].command("create", REGISTRY, viewOn="posts", pipeline=[{"$project": {"x": {"$divide": [1, "$n"]}}}])
        names = classdb.workbook_database_names(client)
        assert honest in names and tricky not in names
        code, out, err = _class_cli(monkeypatch, capsys, test_uri, "list")
        assert code == 0 and honest in out and tricky not in out
        with pytest.raises(classdb.ClassError, match="left alone"):
            classdb.drop_plan(client, [tricky])
    finally:
        for n in (honest, tricky):
            client.drop_database(n)
        client.close()


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
