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


def test_class_logins_progress_and_drop_on_a_server_with_authentication(auth_server, kept_apart, monkeypatch, capsys,
                                                                       tmp_path):
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
        assert set(data) == {"databases", "untrusted", "ignored"}
        assert not {ana, ben, cleo} & (set(data["untrusted"]) | set(data["ignored"]))  # all written by helpers.check
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


def test_a_connection_lost_while_logins_are_made_leaves_no_user_whose_password_nobody_saw(auth_server, kept_apart,
                                                                                            monkeypatch, tmp_path):
    import pymongo
    from pymongo.database import Database

    login, admin = auth_server
    tag = uuid.uuid4().hex[:6]
    names = [f"wbt{tag}a", f"wbt{tag}b", f"wbt{tag}c"]
    real, made = Database.command, []

    def command(self, cmd, *args, **kwargs):  # the network fails on the second learner's createUser, as a lost link does
        if cmd == "createUser" and args[0] in names:  # (the separation proof's throwaway logins before them pass)
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


def test_two_logins_whose_databases_would_coincide_are_refused(auth_server, kept_apart):
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


# --- a learner's login must not reach another learner's database by any command: class logins proves it first

def _no_probe_left(admin):
    """The separation proof's throwaway logins and databases are gone."""
    from helpers.settings import DB_PREFIX

    users = [u["user"] for u in admin.admin.command("usersInfo", 1)["users"]]
    assert not [u for u in users if u.startswith(classdb._SEPARATION)]
    assert not [n for n in admin.list_database_names() if n.startswith(f"{DB_PREFIX}_{classdb._SEPARATION}")]


def test_secantusdb_lets_a_readwrite_login_rename_and_bulkwrite_into_another_learners_database(auth_server):
    """SecantusDB 0.7.0b3 checks renameCollection and bulkWrite (both sent to ``admin``) against the
    database they are sent to, not the namespaces they name (docs/ENGINES.md, the upstream report).
    This documents the engine: once it is fixed, the attacks fail here and this test must say so;
    until then ``class logins`` refuses the server."""
    import datetime as dt

    import pymongo

    from helpers.exercises import exercise_ids, record_server_progress
    from helpers.safety import PROGRESS
    from helpers.settings import login_db_name
    from tools import progress

    login, admin = auth_server
    tag = uuid.uuid4().hex[:6]
    mallory, victim, newcomer = f"wbt{tag}mal", f"wbt{tag}vic", f"wbt{tag}new"
    own, theirs = login_db_name(mallory), login_db_name(victim)
    assert not {own, theirs} & set(admin.list_database_names())
    attacker = None
    try:
        for name in (mallory, victim):
            admin.admin.command("createUser", name, pwd=f"{name}-Pw-1", roles=[{"role": "readWrite", "db": login_db_name(name)}])
        record_server_progress(admin[theirs], "0.1", False)  # the victim's honest record: one failed attempt
        attacker = pymongo.MongoClient(classdb.learner_uri(login("teacher"), mallory, f"{mallory}-Pw-1"))
        with pytest.raises(pymongo.errors.OperationFailure) as refused:  # what the tests above try: refused
            attacker[theirs][PROGRESS].find_one()
        assert refused.value.code == 13
        # 1. renameCollection, sent to admin: one's own collection over the victim's progress record
        now = dt.datetime.now(dt.timezone.utc)
        attacker[own]["junk"].insert_many([{"_id": e, "passed": True, "attempts": 1, "last": now} for e in exercise_ids()])
        attacker.admin.command("renameCollection", f"{own}.junk", to=f"{theirs}.{PROGRESS}", dropTarget=True)
        rows = progress.class_progress(admin)["databases"][theirs]
        assert sorted(rows) == sorted(exercise_ids()) and all(r["passed"] for r in rows.values())  # forged: all passed
        # 2. bulkWrite (MongoDB 8.0's cluster-wide one) with the victim's namespace in nsInfo
        ns = [{"ns": f"{theirs}.{PROGRESS}"}]
        attacker.admin.command({"bulkWrite": 1, "ops": [{"delete": 0, "filter": {}, "multi": True}], "nsInfo": ns})
        assert admin[theirs][PROGRESS].count_documents({}) == 0
        attacker.admin.command({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": "0.1", "passed": False}}],
                                "nsInfo": ns})
        attacker.admin.command({"bulkWrite": 1, "ops": [{"update": 0, "filter": {"_id": "0.1"}, "multi": False,
                                                          "updateMods": {"$set": {"passed": True}}}], "nsInfo": ns})
        assert admin[theirs][PROGRESS].find_one({"_id": "0.1"}) == {"_id": "0.1", "passed": True}
        # so class logins refuses this server, says which commands got through, and makes no login
        with pytest.raises(classdb.ClassError) as said:
            classdb.create_logins(admin, login("teacher"), [newcomer])
        message = str(said.value)
        assert "renameCollection" in message and "bulkWrite" in message and "mongod --auth" in message
        assert "No login was created" in message
        assert admin.admin.command("usersInfo", newcomer)["users"] == []
        _no_probe_left(admin)
    finally:
        if attacker is not None:
            attacker.close()
        for name in (mallory, victim, newcomer):
            with contextlib.suppress(Exception):
                admin.admin.command("dropUser", name)
            admin.drop_database(login_db_name(name))


def test_class_logins_refuses_a_server_that_does_not_keep_learners_apart(auth_server, monkeypatch, capsys, tmp_path):
    login, admin = auth_server
    names = [f"wbt{uuid.uuid4().hex[:6]}{n}" for n in "ab"]
    before = admin.list_database_names()
    code, out, err = _class_cli(monkeypatch, capsys, login("teacher"), "logins", str(_roster(tmp_path, *names)))
    assert code == 2 and "Traceback" not in err and _uris(out) == {}
    assert "\n" not in err.strip()  # one sentence
    assert "renameCollection" in err and "bulkWrite" in err and "No login was created" in err
    assert "mongod --auth" in err and "MongoDB 8.0 or 7.0" in err
    assert admin.admin.command("usersInfo", [{"user": n, "db": "admin"} for n in names])["users"] == []
    assert admin.list_database_names() == before
    _no_probe_left(admin)


class _Refusing:
    """A database the proof's learner may not touch, as a real ``mongod --auth`` answers a login with
    ``readWrite`` on another database only: every call refused (code 13) and logged by its command
    (``interrupt_at``: the call that raises KeyboardInterrupt instead, as a Ctrl-C there would)."""

    def __init__(self, log: list, where: str, interrupt_at: int | None = None, codes: dict | None = None):
        self._log, self._where, self._interrupt_at, self._codes = log, where, interrupt_at, codes or {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Refusing(self._log, f"{self._where}.{name}", self._interrupt_at, self._codes)

    __getitem__ = __getattr__

    def __call__(self, *args, **kwargs):
        import pymongo

        method, first = self._where.rsplit(".", 1)[-1], args[0] if args else None
        if method == "command":  # a command by name, or a document whose first key names it
            method = next(iter(first)) if isinstance(first, dict) else first
        self._log.append(method)
        if self._interrupt_at is not None and len(self._log) >= self._interrupt_at:
            raise KeyboardInterrupt
        code, name = self._codes.get(method, (13, "Unauthorized"))  # codes: what else a server may answer
        raise pymongo.errors.OperationFailure(f"{name}: {self._log[-1]}", code=code,
                                              details={"ok": 0, "code": code, "codeName": name,
                                                       "errmsg": f"not authorized on {self._where}" if code == 13
                                                       else f"{name} on {self._where}"})


class _KeptApart:
    """The proof's learner client on a server that keeps learners apart: its own database is the real
    one (so the proof sees it work there); ``admin`` and every other database refuse every call."""

    def __init__(self, uri: str, log: list, interrupt_at: int | None = None, codes: dict | None = None):
        import pymongo

        self._real, self._log, self._interrupt_at = pymongo.MongoClient(uri), log, interrupt_at
        self._own, self._codes = uri.split("/")[3].split("?")[0], codes

    def __getitem__(self, name):
        return self._real[name] if name == self._own else _Refusing(self._log, name, self._interrupt_at, self._codes)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def close(self):
        self._real.close()


class _Lying:
    """A server that runs the call, then answers 'not authorized' anyway."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return _Lying(getattr(self._target, name))

    def __getitem__(self, name):
        return _Lying(self._target[name])

    def __call__(self, *args, **kwargs):
        import pymongo

        self._target(*args, **kwargs)
        raise pymongo.errors.OperationFailure("not authorized", code=13)


class _LyingClient(_KeptApart):
    def __getitem__(self, name):
        return self._real[name] if name == self._own else _Lying(self._real[name])


@pytest.fixture
def kept_apart(monkeypatch):
    """``class logins`` on a server that keeps learners apart (SecantusDB does not: see
    test_secantusdb_lets_a_readwrite_login_...): the separation proof runs for real on the auth server
    (its throwaway users, databases and the instructor's read-backs), its learner's calls outside its
    own database refused by :class:`_KeptApart`. Yields the log of the refused calls."""
    log: list = []
    monkeypatch.setattr(classdb, "_login_client", lambda uri: _KeptApart(uri, log))
    yield log


def test_the_proof_passes_where_every_attempt_on_another_database_is_refused(auth_server, kept_apart):
    login, admin = auth_server
    said = classdb.check_separation(admin, login("teacher"))
    attempts = classdb._attempts("own", "other")
    assert said.startswith("learners are kept apart") and f"all {len(attempts)} attempts" in said
    # every attempt reached the stand-in but the two aggregates run in its own database ($out and
    # $merge into the other one: the server itself refused those)
    assert len(kept_apart) == len(attempts) - 2
    assert {"find_one", "list_collection_names", "insert_one", "update_many", "delete_many", "drop", "create",
            "create_index", "applyOps", "find_one_and_update", "list_indexes", "count", "distinct",
            "aggregate"} <= set(kept_apart)
    assert kept_apart.count("renameCollection") == 6 and kept_apart.count("bulkWrite") == 4
    _no_probe_left(admin)


@pytest.mark.parametrize("method, code, name", [("distinct", 26, "NamespaceNotFound"),
                                                ("renameCollection", 48, "NamespaceExists")])
def test_an_attempt_answered_by_an_error_other_than_unauthorized_proves_nothing(auth_server, monkeypatch,
                                                                                 method, code, name):
    """An error other than code 13 means the server got past its authorization check (SecantusDB
    answers 48 to a rename over an existing collection without dropTarget): the proof refuses."""
    login, admin = auth_server
    monkeypatch.setattr(classdb, "_login_client", lambda uri: _KeptApart(uri, [], codes={method: (code, name)}))
    with pytest.raises(classdb.ClassError) as said:
        classdb.check_separation(admin, login("teacher"))
    message = str(said.value)
    assert method in message and name in message and str(code) in message and "No login was created" in message
    assert "\n" not in message
    _no_probe_left(admin)


def test_a_server_without_bulkwrite_passes_and_says_those_attempts_were_not_offered(auth_server, monkeypatch):
    """MongoDB 7.0 has no bulkWrite command (code 59, CommandNotFound): neither proof nor failure."""
    login, admin = auth_server
    log: list = []
    monkeypatch.setattr(classdb, "_login_client",
                        lambda uri: _KeptApart(uri, log, codes={"bulkWrite": (59, "CommandNotFound")}))
    said = classdb.check_separation(admin, login("teacher"))
    attempts = classdb._attempts("own", "other")
    offered = len([a for a in attempts if a[0] != "bulkWrite"])
    assert said.startswith("learners are kept apart") and f"all {offered} attempts" in said
    assert "bulkWrite" in said and "not offer" in said
    assert log.count("bulkWrite") == len(attempts) - offered > 0
    _no_probe_left(admin)


def test_the_attempts_prove_only_what_a_readwrite_login_could_do_on_its_own_database():
    """collMod and dropDatabase are not readWrite's actions even on one's own database: a refusal of
    them proves nothing (removed); the attempts the review found missing are there."""
    attempts = classdb._attempts("own", "other")
    names = [c for c, _, _ in attempts]
    assert "collMod" not in names and "dropDatabase" not in names
    assert {"applyOps", "findAndModify", "listIndexes", "count", "distinct"} <= set(names)
    whats = " | ".join(f"{c}: {w}" for c, w, _ in attempts)
    for needed in ("$documents then $out", "$documents then $merge", "their namespace second",
                   "$out from their collection into one's own", "$merge from their collection into one's own"):
        assert needed in whats, needed


def test_a_refusal_that_changed_the_other_learners_data_anyway_is_caught(auth_server, monkeypatch):
    """Every call answers 'not authorized', yet the renames and bulkWrites ran: the instructor's
    read-back of the other database, not the error code, decides."""
    login, admin = auth_server
    monkeypatch.setattr(classdb, "_login_client", lambda uri: _LyingClient(uri, []))
    with pytest.raises(classdb.ClassError) as said:
        classdb.check_separation(admin, login("teacher"))
    assert "renameCollection" in str(said.value) and "bulkWrite" in str(said.value)
    assert "find" not in str(said.value)  # refused, and nothing changed
    _no_probe_left(admin)


@pytest.mark.parametrize("when", ["the second throwaway login is made", "the attempts are half done"])
def test_the_proof_removes_its_logins_and_databases_when_interrupted(auth_server, monkeypatch, when):
    from pymongo.database import Database

    login, admin = auth_server
    if when == "the second throwaway login is made":
        real, made = Database.command, []

        def command(self, cmd, *args, **kwargs):  # the user is made, then Ctrl-C before the call returns
            reply = real(self, cmd, *args, **kwargs)
            if cmd == "createUser":
                made.append(args[0])
                if len(made) == 2:
                    raise KeyboardInterrupt
            return reply

        monkeypatch.setattr(Database, "command", command)
    else:
        log: list = []
        monkeypatch.setattr(classdb, "_login_client", lambda uri: _KeptApart(uri, log, interrupt_at=8))
    with pytest.raises(KeyboardInterrupt):
        classdb.check_separation(admin, login("teacher"))
    monkeypatch.undo()
    if when == "the second throwaway login is made":
        assert len(made) == 2 and all(m.startswith(classdb._SEPARATION) for m in made)
    else:
        assert len(log) == 8
    _no_probe_left(admin)


def test_the_proof_never_touches_a_database_it_did_not_create(auth_server, monkeypatch, kept_apart):
    from helpers.settings import login_db_name

    login, admin = auth_server
    tag = uuid.uuid4().hex[:6]
    names = (f"{classdb._SEPARATION}{tag}a", f"{classdb._SEPARATION}{tag}b")
    admin[login_db_name(names[1])]["someones"].insert_one({"_id": 1, "keep": True})
    monkeypatch.setattr(classdb, "_probe_logins", lambda: names)
    try:
        with pytest.raises(classdb.ClassError, match="exist already .* left alone"):
            classdb.check_separation(admin, login("teacher"))
        assert list(admin[login_db_name(names[1])]["someones"].find()) == [{"_id": 1, "keep": True}]
        assert admin.admin.command("usersInfo", [{"user": n, "db": "admin"} for n in names])["users"] == []
        assert kept_apart == []  # no attempt was made
    finally:
        admin.drop_database(login_db_name(names[1]))


class _FilteringServer:
    """A real MongoDB (4.0.5+) answering a learner's login: ``listDatabases`` without the action on the
    cluster lists only the databases the login has privileges on; asked with ``authorizedDatabases:
    false`` it refuses (code 13)."""

    def list_database_names(self):
        return ["schema_workbook_ana_1a2b"]

    def list_databases(self, **kwargs):
        import pymongo

        if kwargs.get("authorizedDatabases") is False:
            raise pymongo.errors.OperationFailure("not authorized on admin to execute command", code=13)
        return iter([{"name": "schema_workbook_ana_1a2b"}])


def test_a_login_shown_only_its_own_databases_is_not_taken_for_the_class():
    """A learner's login on a real MongoDB sees its own database in listDatabases: class list and
    class progress must say the login may not list the server's databases, not show one database."""
    with pytest.raises(classdb.ClassError, match="may not list the server's databases"):
        classdb.workbook_database_names(_FilteringServer())


def test_the_full_listing_of_databases_is_asked_for_on_a_real_server(test_uri):
    import pymongo

    client = pymongo.MongoClient(test_uri)
    try:
        assert classdb._list_databases(client) == sorted(client.list_database_names())
    finally:
        client.close()
