"""The class's databases on a shared server: list them, drop them at the end of term.

    python3 workbook.py class list | class drop [DB ...] [--yes] | class logins ROSTER.csv | class progress

Each student's work lives in its own database (``helpers.settings.student_db_name``). A database
is the workbook's only when it is named ``schema_workbook*`` *and* holds the workbook's registry.

``class drop`` is for the instructor only. Without ``--yes`` it lists exactly what it would drop
(each database and its workbook collections) and drops nothing. With ``--yes`` it first checks
the login (:func:`check_instructor`): it must be allowed to list every database and to drop any
database, as ``root`` or ``dbAdminAnyDatabase`` are. A student's login is refused before anything
is dropped: one with ``readWrite`` on its own database, and also one with ``readWriteAnyDatabase``
(which may drop every collection of everyone, but not a database: a shared student login with
that role is a risk on its own; give each student ``readWrite`` on their database instead).

``class logins`` gives each learner of a roster that login (:func:`create_logins`): a user in the
``admin`` database with ``readWrite`` on the learner's own database only
(``helpers.settings.login_db_name``), a generated password printed once in the learner's
``MONGODB_URI``. A user is the workbook's when its only role is exactly that one and its ``customData``,
where the server returns it, is the one ``class logins`` stores (:func:`workbook_users`; SecantusDB
0.7.0b3 returns none, so there the role alone decides); ``class drop --yes`` removes those users with
their databases. Before it makes any, it proves that the server keeps learners apart
(:func:`check_separation`: a throwaway learner's login tries every command it knows on another
throwaway learner's database), and refuses a server where one gets through: SecantusDB 0.7.0b3
(``secantusd-py --auth``) lets ``renameCollection`` and ``bulkWrite``, sent to ``admin``, reach
another database (docs/ENGINES.md).
"""
from __future__ import annotations

import csv
import datetime as _dt
import re
import secrets
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from helpers.datasets import is_staging_name
from helpers.safety import (
    PROGRESS,
    REGISTRY,
    create_registry,
    reset_workbook,
    retire_registry,
    workbook_collections,
)
from helpers.settings import DB_PREFIX, login_db_name

__all__ = ["ClassError", "is_workbook_database_name", "workbook_database_names", "workbook_databases",
           "drop_plan", "check_instructor", "instructor_privileges", "drop_workbook_databases", "read_roster",
           "workbook_users", "create_logins", "check_separation", "drop_users", "learner_uri", "is_denied",
           "collection_kinds"]

_PROBE = "workbook_probe_"
_UNAUTHORIZED = 13


class ClassError(ValueError):
    """The class command cannot run as asked; the message says why and what to do."""


def is_denied(exc: Exception) -> bool:
    """The server refused ``exc``'s command for want of a privilege: code 13 (Unauthorized), or, from
    a server that gives no code at all, a message saying so (never another code's message)."""
    code = getattr(exc, "code", None)
    return code == _UNAUTHORIZED or (code is None and "not authorized" in str(exc).lower())


def _all_database_names(client: Any) -> list[str]:
    """Every database of the server, or OperationFailure code 13. A real MongoDB (4.0.5+) answers a
    login without the listDatabases action with only the databases it has privileges on (a learner's
    login: its own), unless asked ``authorizedDatabases: false``, which it then refuses."""
    if not hasattr(client, "list_databases"):  # mongomock-ng: no access control, no filtered list
        return list(client.list_database_names())
    return [d["name"] for d in client.list_databases(nameOnly=True, authorizedDatabases=False)]


def _list_databases(client: Any) -> list[str]:
    from pymongo.errors import OperationFailure

    try:
        return sorted(_all_database_names(client))
    except OperationFailure as e:
        if is_denied(e):
            raise ClassError("This login may not list the server's databases (the listDatabases action; "
                             "a learner's login is shown its own database only), "
                             "so it cannot see the class. Run class commands with the instructor's login "
                             "(a user with the root role; readAnyDatabase is enough for class list and class "
                             "progress) in MONGODB_URI.") from None
        raise


def _workbook_collections(db: Any) -> list[str]:
    """What the learner made: recorded, existing (the very collection recorded: not one dropped and made
    again outside the workbook's helpers), not a load's staging copy or a probe's leftover."""
    return sorted(n for n in workbook_collections(db) if not is_staging_name(n) and not n.startswith(_PROBE))


def is_workbook_database_name(name: str) -> bool:
    """``schema_workbook`` itself or ``schema_workbook_<anything>`` (not ``schema_workbookings``)."""
    return name == DB_PREFIX or name.startswith(DB_PREFIX + "_")


def workbook_database_names(client: Any) -> list[str]:
    """The workbook's databases on a server, sorted: named :func:`is_workbook_database_name` *and*
    holding the registry as a collection (a database that merely shares the prefix is never listed,
    nor one whose registry a learner replaced with a view: its pipeline is never run)."""
    return [name for name in _list_databases(client)
            if is_workbook_database_name(name) and collection_kinds(client[name], [REGISTRY]).get(REGISTRY) == "collection"]


def collection_kinds(db: Any, names: list[str]) -> dict[str, str]:
    """``{name: type}`` of those of ``names`` that are a database's collections (``collection``,
    ``view``, ``timeseries``): asked by name, names and types only (a learner's database may hold
    thousands of collections, or a validator of megabytes, that are never read)."""
    from pymongo.errors import OperationFailure

    try:
        return {c["name"]: c.get("type", "collection")
                for c in db.list_collections(filter={"name": {"$in": list(names)}}, nameOnly=True)}
    except OperationFailure as e:
        if is_denied(e):
            raise ClassError(f"This login may not read the database {db.name!r} (the listCollections and "
                             f"find actions). Run class commands with the instructor's login (read on every "
                             f"database: the readAnyDatabase or root role) in MONGODB_URI.") from None
        raise


def workbook_databases(client: Any) -> list[dict[str, Any]]:
    """The workbook's databases (:func:`workbook_database_names`) with their sizes.

    ``collections`` counts the workbook's collections that exist (not a load's staging copy).
    """
    out = []
    for name in workbook_database_names(client):
        db = client[name]
        stats = db.command("dbStats")
        out.append({"database": name, "collections": len(_workbook_collections(db)),
                    "data bytes": int(stats.get("dataSize", 0)),
                    "storage bytes": int(stats.get("storageSize", 0)) + int(stats.get("indexSize", 0))})
    return out


def drop_plan(client: Any, names: list[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """What ``class drop`` would do, per database: ``{"drop": [workbook collections], "keep": [others]}``.

    Refuses (:class:`ClassError`) a name :func:`workbook_databases` does not list.
    """
    ours = [d["database"] for d in workbook_databases(client)]
    targets = sorted(ours) if names is None else list(dict.fromkeys(names))
    foreign = [n for n in targets if n not in ours]
    if foreign:
        raise ClassError(f"not workbook databases (no {REGISTRY!r} collection, or not named {DB_PREFIX}*), "
                         f"left alone: {', '.join(foreign)}. Run `python3 workbook.py class list` to see "
                         f"the class's databases.")
    plan = {}
    for name in targets:
        db = client[name]
        mine = _workbook_collections(db)
        ours = set(workbook_collections(db))  # a name recorded whose collection was made again is kept
        keep = sorted(n for n in db.list_collection_names() if n not in ours and n != REGISTRY)
        plan[name] = {"drop": mine, "keep": keep}
    return plan


def _has(privileges: list[dict], resource: dict, action: str) -> bool:
    for p in privileges:
        res, actions = p.get("resource", {}), p.get("actions", [])
        if res.get("anyResource") and "anyAction" in actions:
            return True
        if res == resource and (action in actions or "anyAction" in actions):
            return True
    return False


def instructor_privileges(privileges: list[dict]) -> bool:
    """True when ``privileges`` (``connectionStatus``'s ``authenticatedUserPrivileges``) allow
    listing every database and dropping any database (root, dbAdminAnyDatabase; not readWriteAnyDatabase)."""
    return _has(privileges, {"cluster": True}, "listDatabases") and \
        _has(privileges, {"db": "", "collection": ""}, "dropDatabase")


def check_instructor(client: Any) -> str:
    """Refuse (:class:`ClassError`) a login that may not list and drop every database; else say who runs.

    The manual's way first: ``connectionStatus`` with ``showPrivileges``. An engine that reports
    no privileges for a logged-in user (SecantusDB) is asked by doing: list the databases, then
    create and drop a throwaway database of this tool's own (nobody else's data is touched).
    """
    from pymongo.errors import OperationFailure

    status = client.admin.command("connectionStatus", showPrivileges=True)
    auth = status.get("authInfo", {})
    users = auth.get("authenticatedUsers") or []
    privileges = auth.get("authenticatedUserPrivileges") or []
    who = ", ".join(f"{u.get('user')}@{u.get('db')}" for u in users)
    refuse = ClassError(
        f"The login {who or '(none)'} is not an instructor's: dropping the class's databases needs the "
        f"right to list every database and to drop any database (the root or dbAdminAnyDatabase role). "
        f"A student's login (readWrite on its own database, or readWriteAnyDatabase) is refused, and "
        f"nothing was dropped. Put the instructor's login in MONGODB_URI.")
    if not users:  # nobody logged in: access control is off, or nothing is allowed
        _list_databases(client)
        return ("this server has no access control: anyone who can reach it could drop these databases "
                "(a class server should run with authorization on)")
    if privileges:
        if not instructor_privileges(privileges):
            raise refuse
        return f"login {who}: may list and drop every database"
    try:
        _all_database_names(client)
    except OperationFailure as e:
        if is_denied(e):
            raise refuse from None
        raise
    throwaway = f"{DB_PREFIX}_dropcheck_{uuid.uuid4().hex[:8]}"
    try:
        client[throwaway].create_collection("check")
        client.drop_database(throwaway)
    except OperationFailure as e:
        try:
            client[throwaway].drop_collection("check")
        except OperationFailure:
            pass
        if is_denied(e):
            raise refuse from None
        raise
    return f"login {who}: may list and drop every database (checked on a throwaway database)"


def drop_workbook_databases(client: Any, names: list[str] | None = None, *,
                            check: bool = True) -> dict[str, list[str]]:
    """End of term: in each listed workbook database (all if ``names`` is None), drop what the
    workbook created; drop the database itself only when nothing else is left in it.

    Returns, per database, the collections kept because the workbook did not create them (a
    database with an empty list is gone). Refuses a name :func:`workbook_databases` does not list,
    and (``check``) a login that is not an instructor's (:func:`check_instructor`), before dropping anything.
    """
    if check:
        check_instructor(client)
    plan = drop_plan(client, names)
    kept: dict[str, list[str]] = {}
    for name in plan:
        db = client[name]
        reset_workbook(db)
        if PROGRESS in plan[name]["drop"]:  # a reset keeps the learner's results; the end of term does not
            db.drop_collection(PROGRESS)
        others = sorted(n for n in db.list_collection_names() if n != REGISTRY)
        if not others:
            client.drop_database(name)
        else:
            retire_registry(db)  # if it records nothing, no longer a workbook database
        kept[name] = others
    return kept


# ---------------------------------------------------------------------------------------------
# per-student logins: one user per learner, readWrite on the learner's own database only

#: a roster name that makes a login and a database name: letters, digits, '.', '_', '-' (at most 30)
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,29}")
_HEADERS = {"login", "name", "username"}  # a header line, not a learner


def read_roster(path: Path | str) -> list[str]:
    """The logins of a roster: one learner a line (a CSV whose first column is the login; a header
    line ``login``, ``name`` or ``username`` and blank lines are skipped). Every unusable line is reported at once
    (:class:`ClassError`, naming the file and line): nothing is created from a roster with one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise ClassError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}). Save the roster as UTF-8 "
                         f"CSV, one learner a line.") from None
    logins: list[str] = []
    seen: dict[str, int] = {}
    problems = []
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        name = row[0].strip() if row else ""
        if not name or (number == 1 and name.lower() in _HEADERS):
            continue
        if not _LOGIN.fullmatch(name):
            problems.append(f"{path}:{number}: {name[:40]!r} is not a usable login: use 1 to 30 letters, "
                            f"digits, '.', '_' or '-', starting with a letter or digit")
        elif name.lower() in seen:
            problems.append(f"{path}:{number}: {name!r} repeats line {seen[name.lower()]} "
                            f"(logins that differ only in letter case are one learner)")
        else:
            seen[name.lower()] = number
            logins.append(name)
    if problems:
        raise ClassError("The roster has lines that cannot become logins, so no login was created:\n  "
                         + "\n  ".join(problems))
    if not logins:
        raise ClassError(f"{path}: no learner in the roster (one login a line, e.g. ana.lopez).")
    return logins


def _users(client: Any, names: list[str] | None = None) -> list[dict]:
    """``usersInfo`` on the admin database (every user there, or the named ones)."""
    from pymongo.errors import OperationFailure

    try:
        reply = client.admin.command("usersInfo", [{"user": n, "db": "admin"} for n in names]
                                     if names is not None else 1)
    except OperationFailure as e:
        if is_denied(e):
            raise ClassError("This login may not see the server's users (the viewUser action). Run "
                             "`class logins` and `class drop` with a login that has the root or "
                             "userAdminAnyDatabase role.") from None
        raise
    return list(reply.get("users", []))


def _workbook_role(user: dict) -> str | None:
    """The database of a user the workbook made: its only role is readWrite on login_db_name(user),
    and its ``customData``, where the server returns one (a real MongoDB does), is the one
    :func:`create_logins` stores: a user someone else made with that role is never taken for ours."""
    want = login_db_name(str(user.get("user", "")))
    custom = user.get("customData")
    if custom is not None and (not isinstance(custom, dict) or custom.get("workbook") != DB_PREFIX
                               or custom.get("database") != want):
        return None
    roles = user.get("roles") or []
    if user.get("db") == "admin" and len(roles) == 1 and roles[0].get("role") == "readWrite" \
            and roles[0].get("db") == want:
        return want
    return None


def workbook_users(client: Any) -> dict[str, str]:
    """The users ``class logins`` made, ``{login: its database}`` (see :func:`_workbook_role`)."""
    out = {}
    for user in _users(client):
        db = _workbook_role(user)
        if db:
            out[user["user"]] = db
    return out


def _check_access_control(uri: str) -> None:
    """Refuse a server that does not enforce authentication: a login there protects nothing."""
    import pymongo
    from pymongo.errors import OperationFailure, PyMongoError

    scheme, hosts, options = _server_part(uri)
    anonymous = f"{scheme}{hosts}/" + ("?" + "&".join(options) if options else "")
    client = pymongo.MongoClient(anonymous, serverSelectionTimeoutMS=5000)
    try:
        client.list_database_names()
    except OperationFailure:
        return  # refused without a login: authentication is enforced
    except PyMongoError:
        return  # cannot tell this way (e.g. the URI's options need the credentials): the server decides
    finally:
        client.close()
    raise ClassError("This server does not require authentication: anyone who can reach it may read, "
                     "change or drop every learner's database, whatever logins exist, so per-student "
                     "logins would protect nothing. Start the server with access control (mongod "
                     "--auth, or security.authorization: enabled), create the "
                     "instructor's user, and run `class logins` with that user in MONGODB_URI. "
                     "No login was created.")


# ---------------------------------------------------------------------------------------------
# the separation proof: before any learner's login is made, one throwaway learner's login tries to
# reach another throwaway learner's database by every command below, and must be refused each time

#: the proof's two throwaway logins are named ``wbprobe<8 hex>a`` and ``...b``; their databases
#: ``login_db_name`` of those (``schema_workbook_wbprobe..._<4 hex>``), made and dropped by the proof
_SEPARATION = "wbprobe"
_THEIRS, _MINE = PROGRESS, "junk"  # the other learner's collection aimed at; the own collection moved
#: what the other learner's database holds while the proof runs (the instructor reads it back after each try)
_SEED = [{"_id": "0.1", "notebook": "proof", "passed": False, "attempts": 1,
          "last": _dt.datetime(2026, 1, 5, 10, 0, 0)},
         {"_id": "their_note", "text": "only its owner may read or change this"}]
#: a forged record of one's own, to be moved over the other's (a renameCollection with dropTarget)
_FORGED = {"_id": "0.1", "notebook": "proof", "passed": True, "attempts": 1, "last": _dt.datetime(2026, 1, 5, 11, 0, 0)}


def _login_client(uri: str) -> Any:
    """A client logged in as ``uri``'s user: the proof's throwaway learner (tests put a stand-in here)."""
    import pymongo

    return pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)


def _probe_logins() -> tuple[str, str]:
    """The proof's two throwaway logins: fresh names each run."""
    tag = uuid.uuid4().hex[:8]
    return f"{_SEPARATION}{tag}a", f"{_SEPARATION}{tag}b"


def _attempts(own: str, other: str) -> list[tuple[str, str, Callable[[Any], Any]]]:
    """What a learner's login (readWrite on ``own``) tries on another learner's database ``other``:
    ``(command, what it does, the call)``. A real MongoDB refuses each (code 13): it checks the
    privileges on every namespace a command names, wherever the command is sent.

    Only commands that ``readWrite`` allows on one's own database are tried: a refusal of one it
    does not allow even there (``collMod``, ``dropDatabase``: neither is a readWrite action) would be
    refused for that reason alone and prove nothing about keeping learners apart."""
    theirs, mine = f"{other}.{_THEIRS}", f"{own}.{_MINE}"

    def bulk(op: dict, ns_info: list[str] | None = None) -> Callable[[Any], Any]:
        ns = [{"ns": n} for n in (ns_info or [theirs])]
        return lambda a: a.admin.command({"bulkWrite": 1, "ops": [op], "nsInfo": ns})

    def documents_into(stage: dict) -> Callable[[Any], Any]:  # a pipeline that reads no collection at all
        return lambda a: a.admin.command({"aggregate": 1, "cursor": {},
                                          "pipeline": [{"$documents": [{"_id": "intruder"}]}, stage]})

    return [
        ("find", "reading their records", lambda a: a[other][_THEIRS].find_one()),
        ("listCollections", "listing their collections", lambda a: a[other].list_collection_names()),
        ("listIndexes", "listing their collection's indexes", lambda a: list(a[other][_THEIRS].list_indexes())),
        ("count", "counting their records", lambda a: a[other].command("count", _THEIRS)),
        ("distinct", "reading their records' values", lambda a: a[other][_THEIRS].distinct("passed")),
        ("insert", "adding a record", lambda a: a[other][_THEIRS].insert_one({"_id": "intruder"})),
        ("update", "changing their records", lambda a: a[other][_THEIRS].update_many({}, {"$set": {"passed": True}})),
        ("findAndModify", "changing one of their records",
         lambda a: a[other][_THEIRS].find_one_and_update({}, {"$set": {"passed": True}})),
        ("delete", "deleting their records", lambda a: a[other][_THEIRS].delete_many({})),
        ("drop", "dropping their collection", lambda a: a[other].command("drop", _THEIRS)),
        ("create", "creating a collection", lambda a: a[other].command("create", "intruder")),
        ("createIndexes", "indexing their collection", lambda a: a[other][_THEIRS].create_index("passed")),
        ("applyOps", "an insert into their collection (sent to admin)",
         lambda a: a.admin.command("applyOps", [{"op": "i", "ns": theirs, "o": {"_id": "intruder"}}])),
        ("aggregate", "$out from one's own collection over theirs",
         lambda a: list(a[own][_MINE].aggregate([{"$out": {"db": other, "coll": _THEIRS}}]))),
        ("aggregate", "$merge from one's own collection into theirs",
         lambda a: list(a[own][_MINE].aggregate([{"$merge": {"into": {"db": other, "coll": _THEIRS}}}]))),
        ("aggregate", "$documents then $out over theirs (aggregate: 1, sent to admin)",
         documents_into({"$out": {"db": other, "coll": _THEIRS}})),
        ("aggregate", "$documents then $merge into theirs (aggregate: 1, sent to admin)",
         documents_into({"$merge": {"into": {"db": other, "coll": _THEIRS}}})),
        ("aggregate", "$out from their collection into one's own database",
         lambda a: list(a[other][_THEIRS].aggregate([{"$out": {"db": own, "coll": "stolen"}}]))),
        ("aggregate", "$merge from their collection into one's own database",
         lambda a: list(a[other][_THEIRS].aggregate([{"$merge": {"into": {"db": own, "coll": "stolen"}}}]))),
        ("renameCollection", "one's own collection over theirs with dropTarget: true",
         lambda a: a.admin.command("renameCollection", mine, to=theirs, dropTarget=True)),
        ("renameCollection", "one's own collection over theirs without dropTarget",
         lambda a: a.admin.command("renameCollection", mine, to=theirs)),
        ("renameCollection", "one's own collection to a new one in their database",
         lambda a: a.admin.command("renameCollection", mine, to=f"{other}.intruder")),
        ("renameCollection", "the same with dropTarget: true",
         lambda a: a.admin.command("renameCollection", mine, to=f"{other}.intruder", dropTarget=True)),
        ("renameCollection", "their collection into one's own database",
         lambda a: a.admin.command("renameCollection", theirs, to=f"{own}.stolen")),
        ("renameCollection", "their collection within their database",
         lambda a: a.admin.command("renameCollection", theirs, to=f"{other}.moved")),
        ("bulkWrite", "insert", bulk({"insert": 0, "document": {"_id": "intruder"}})),
        ("bulkWrite", "update", bulk({"update": 0, "filter": {}, "multi": True, "updateMods": {"$set": {"passed": True}}})),
        ("bulkWrite", "delete", bulk({"delete": 0, "filter": {}, "multi": True})),
        # a server that checks only nsInfo's first namespace (one's own) is caught by this one
        ("bulkWrite", "delete with one's own namespace first and their namespace second",
         bulk({"delete": 1, "filter": {}, "multi": True}, [mine, theirs])),
    ]


#: how the refusal names what got through: the command, then what it did
_THROUGH = {"renameCollection": ("renameCollection (sent to admin: {})", "; "),
            "bulkWrite": ("bulkWrite (sent to admin, their namespace in nsInfo: {})", ", ")}
#: the server has no such command (MongoDB 7.0 has no bulkWrite): the attempt proves nothing either way
_COMMAND_NOT_FOUND = 59


def _named(pairs: list[tuple[str, str]]) -> str:
    """``[(command, what), ...]`` as one phrase: each command once, what it did in brackets."""
    grouped: dict[str, list[str]] = {}
    for command, what in pairs:
        grouped.setdefault(command, []).append(what)
    named = []
    for command, whats in grouped.items():
        form, sep = _THROUGH.get(command, (command + " ({})", "; "))
        named.append(form.format(sep.join(whats)))
    return ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0]


def _code_name(e: Any) -> str:
    """``code 48 (NamespaceExists)``: the server's error code and its name, where it gave one."""
    details = getattr(e, "details", None) or {}
    name = details.get("codeName") if isinstance(details, dict) else None
    return f"code {getattr(e, 'code', None)}" + (f" ({name})" if name else "")


def _state(db: Any) -> dict[str, Any]:
    """Everything of ``db`` an attempt could change, as the instructor reads it: each collection's
    kind and options, its indexes and its documents."""
    out = {}
    for info in db.list_collections():
        name = info["name"]
        out[name] = (info.get("type"), info.get("options", {}),
                     sorted(ix["name"] for ix in db[name].list_indexes()),
                     sorted((repr(d.get("_id")), repr(sorted(d.items()))) for d in db[name].find()))
    return out


def _stage(client: Any, own: str, other: str) -> None:
    """Before each attempt, as the instructor: the other learner's database holds exactly the seed,
    the learner's own exactly its forged record (both databases are the proof's own)."""
    for name, docs in ((other, _SEED), (own, [_FORGED])):
        db = client[name]
        for coll in db.list_collection_names():
            db.drop_collection(coll)
        db[_THEIRS if name == other else _MINE].insert_many([dict(d) for d in docs])


def _operation_errors(reply: Any) -> list[dict]:
    """A bulkWrite reply's failed operations (``nErrors``, their errors in the first batch), else []."""
    if not isinstance(reply, dict) or not int(reply.get("nErrors", 0) or 0):
        return []
    batch = (reply.get("cursor") or {}).get("firstBatch") or []
    errors = [r for r in batch if isinstance(r, dict) and not r.get("ok", 1)]
    return errors or [{"code": None}]


class _Crossing:
    """What the attempts came to: how many were made, those that got through (the server answered,
    or the other database changed), those the server does not offer (code 59) and those answered by
    another error (past the server's authorization check: they prove nothing)."""

    def __init__(self, count: int):
        self.count = count
        self.through: list[tuple[str, str]] = []
        self.not_offered: list[tuple[str, str]] = []
        self.inconclusive: list[tuple[str, str, str]] = []  # (command, what, code and its name)


def _try_to_cross(client: Any, a: Any, own: str, other: str) -> _Crossing:
    """Run every attempt as the learner ``a``. An attempt is refused only when the server denies it
    for authorization (:func:`is_denied`: code 13) and neither database is what it was before, read
    back by the instructor (a refusal that changed it anyway is caught too); it gets through when the
    server answers it or either database changed; code 59 (CommandNotFound) is not offered by this
    server; any other error is inconclusive (the server got past authorization, then failed)."""
    from pymongo.errors import OperationFailure

    attempts = _attempts(own, other)
    out = _Crossing(len(attempts))
    _stage(client, own, other)
    expected = (_state(client[other]), _state(client[own]))
    for command, what, attempt in attempts:
        _stage(client, own, other)
        try:
            errors = [SimpleNamespace(code=e.get("code"), details=e) for e in _operation_errors(attempt(a))]
        except OperationFailure as e:
            errors = [e]
        if not errors or (_state(client[other]), _state(client[own])) != expected:
            out.through.append((command, what))
        elif all(is_denied(e) for e in errors):
            continue
        elif all(getattr(e, "code", None) == _COMMAND_NOT_FOUND for e in errors):
            out.not_offered.append((command, what))
        else:
            first = next(e for e in errors if not is_denied(e))
            out.inconclusive.append((command, what, _code_name(first)))
    return out


def _remove_probe(client: Any, users: list[str], databases: list[str]) -> list[str]:
    """Drop the proof's users and databases, each one whatever happened to the others; what is left."""
    from pymongo.errors import OperationFailure, PyMongoError

    left = []
    for login in users:
        try:
            client.admin.command("dropUser", login)
        except OperationFailure as e:
            if getattr(e, "code", None) != 11:  # UserNotFound: it was never made
                left.append(f"user {login}")
        except PyMongoError:
            left.append(f"user {login}")
    for name in databases:
        try:
            client.drop_database(name)
        except PyMongoError:
            left.append(f"database {name}")
    return left


def check_separation(client: Any, uri: str) -> str:
    """Prove that this server keeps learners apart before ``class logins`` gives anyone a login.

    Two throwaway logins (:data:`_SEPARATION`), each with ``readWrite`` on a throwaway database of its
    own that did not exist before (:func:`~helpers.settings.login_db_name`); as the first, every
    attempt of :func:`_attempts` on the second's database (find, insert, update, delete, drop, ...;
    ``renameCollection`` to and over its collection, with and without ``dropTarget``; ``bulkWrite``
    on its namespace), each followed by the instructor reading that database back. Both users and
    both databases are removed afterwards whatever happens (an interrupt included). Nothing else is
    touched. Raises :class:`ClassError` naming each command that got through, and what to use instead.
    """
    from pymongo.errors import OperationFailure, PyMongoError

    login_a, login_b = _probe_logins()
    own, other = login_db_name(login_a), login_db_name(login_b)
    try:
        taken = [n for n in (own, other) if client[n].list_collection_names()]
    except OperationFailure as e:
        if is_denied(e):
            raise ClassError(_MAY_NOT_CREATE) from None
        raise
    try:
        existing = _users(client, [login_a, login_b])
    except ClassError as e:
        raise ClassError(f"{e} No login was created.") from None
    if taken or existing:  # never touched: another run's, or somebody's
        raise ClassError(f"The separation proof's throwaway names exist already "
                         f"({', '.join([*taken, *(u['user'] for u in existing)])}) and were left alone; run "
                         f"`class logins` again (it picks new names). No login was created.")
    tried: list[str] = []
    error: ClassError | None = None
    a = None
    crossing = _Crossing(0)
    try:
        try:
            password = secrets.token_urlsafe(18)  # never shown: the throwaway login is removed at the end
            for login, db_name in ((login_a, own), (login_b, other)):
                tried.append(login)  # before the call: a user made by a call cut short is removed too
                client.admin.command("createUser", login, pwd=password if login == login_a else secrets.token_urlsafe(18),
                                     roles=[{"role": "readWrite", "db": db_name}],
                                     customData={"workbook": DB_PREFIX, "database": db_name, "proof": "separation"})
            _stage(client, own, other)
            a = _login_client(learner_uri(uri, login_a, password))
            try:  # the login works in its own database: else every refusal below would prove nothing
                a[own]["mine"].insert_one({"_id": "mine"})
                works = a[own]["mine"].find_one({"_id": "mine"}) is not None
            except OperationFailure as e:
                works = False
                why = f"{type(e).__name__}, code {getattr(e, 'code', None)}"
            else:
                why = "its own record could not be read back"
            if not works:
                raise ClassError(f"The separation proof's throwaway learner login could not work in its own "
                                 f"database ({why}), so nothing it is refused elsewhere proves anything: check "
                                 f"the server's authentication options in MONGODB_URI. No login was created.")
            crossing = _try_to_cross(client, a, own, other)
        except ClassError as e:
            error = e
        except OperationFailure as e:
            if not is_denied(e):
                raise
            error = ClassError(_MAY_NOT_CREATE)
        except PyMongoError as e:
            error = ClassError(f"The proof that this server keeps learners apart could not finish "
                               f"({type(e).__name__}: the server stopped answering, or refused the throwaway "
                               f"login's connection): run `class logins` again when it answers. No login was "
                               f"created.")
    finally:  # whatever happened, an interrupt included: the proof's users and databases go
        if a is not None:
            try:
                a.close()
            except Exception:  # a stand-in, or a client already gone: nothing of it is kept
                pass
        left = _remove_probe(client, tried, [own, other])
    if left:
        raise ClassError(f"{error or 'No login was created.'} The separation proof's throwaway {', '.join(left)} "
                         f"could not be removed: remove them (dropUser, dropDatabase) when the server answers.")
    if error is not None:
        raise error
    if crossing.through:
        raise ClassError(f"No login was created: this server does not keep learners apart, for a throwaway "
                         f"learner's login (readWrite on its own database only) got through to another "
                         f"learner's database with {_named(crossing.through)}; run the class on a real "
                         f"MongoDB with access control instead (mongod --auth, MongoDB 8.0 or 7.0), which "
                         f"checks the privileges on every namespace a command names.")
    if crossing.inconclusive:
        failed = "; ".join(f"{c} ({w}): {code}" for c, w, code in crossing.inconclusive)
        raise ClassError(f"No login was created: the proof that this server keeps learners apart is "
                         f"inconclusive, for a throwaway learner's login was answered with an error other "
                         f"than Unauthorized (code 13) on another learner's database, so the server got "
                         f"past its authorization check, by {failed}; run the class on a real MongoDB with "
                         f"access control instead (mongod --auth, MongoDB 8.0 or 7.0).")
    refused = crossing.count - len(crossing.not_offered)
    said = (f"learners are kept apart: a throwaway learner's login was refused all {refused} attempts on "
            f"another learner's database, whose data the instructor's login read back unchanged after each")
    if crossing.not_offered:
        said += (f" (this server does not offer {len(crossing.not_offered)} more, code 59 CommandNotFound, "
                 f"so they prove nothing either way: {_named(crossing.not_offered)})")
    return said


_MAY_NOT_CREATE = ("This login may not create users (the createUser and grantRole actions) or the learners' "
                   "databases: run `class logins` with a login that has the root role (or userAdminAnyDatabase "
                   "and readWriteAnyDatabase). No login was created.")


#: the instructor's authentication options, never passed on (a learner logs in as themselves)
_AUTH_OPTIONS = ("authsource", "authmechanism", "authmechanismproperties")


def _server_part(uri: str) -> tuple[str, str, list[str]]:
    """``(scheme, hosts, options)`` of a MongoDB URI without anything of the login in it: no user
    or password, no authentication option, and no option that may hold a secret or that pymongo
    does not know (``tlsCertificateKeyFilePassword``, ``proxyPassword``, ...; see
    ``helpers.uri.SENSITIVE_OPTIONS``): what every learner of the class may be given."""
    from helpers import uri as uris

    parts = uris.parse(uri)
    scheme = parts.scheme if parts else re.match(r"^[a-z+]+://", uri.strip(), re.I).group(0)
    rest = parts.rest if parts else uri.strip()[len(scheme):]
    hosts, _q, query = rest.partition("?")
    keep = [p for p in re.split(r"[&;]", query) if p and p.split("=", 1)[0].lower() not in _AUTH_OPTIONS
            and uris.option_is_shown(p)]
    return scheme, hosts.split("/", 1)[0], keep


def learner_uri(instructor_uri: str, login: str, password: str) -> str:
    """The learner's ``MONGODB_URI``: the instructor's hosts and connection options (not its
    credentials, authentication options or any secret option: :func:`_server_part`), the learner's
    login, the learner's database as the path, and ``authSource=admin`` (where the user is defined)."""
    from urllib.parse import quote

    scheme, hosts, keep = _server_part(instructor_uri)
    return (f"{scheme}{quote(login, safe='')}:{quote(password, safe='')}@{hosts}/{login_db_name(login)}?"
            + "&".join([*keep, "authSource=admin"]))


def create_logins(client: Any, uri: str, logins: list[str]) -> list[tuple[str, str | None, str]]:
    """Create one user per learner (in ``admin``, ``readWrite`` on :func:`~helpers.settings.login_db_name`
    only) and the learner's database (its registry, so ``class list`` and ``class progress`` show it).

    Returns ``(login, URI with the password or None when the user existed already, database)``.
    All or nothing: the server must enforce authentication, every existing user of a roster name must
    be the workbook's (same role), the server must keep learners apart (:func:`check_separation`: a
    throwaway learner's login is refused every attempt on another's database), and if the server
    refuses one creation, every user and database this call created is removed again before the
    refusal is raised (:class:`ClassError`).
    """
    from pymongo.errors import OperationFailure, PyMongoError

    _check_access_control(uri)
    try:
        existing = {u["user"]: u for u in _users(client, logins)}
    except ClassError as e:
        raise ClassError(f"{e} No login was created.") from None
    foreign = [n for n, u in existing.items() if _workbook_role(u) is None]
    if foreign:
        raise ClassError(f"These users exist already and were not made by `class logins` (their roles "
                         f"differ): {', '.join(sorted(foreign))}. Rename them in the roster; no login "
                         f"was created.")
    owners = {db: user for user, db in workbook_users(client).items()}
    shared = []
    for login in logins:  # two logins, one database: rare (4 hex digits), and they would share each other's work
        owner = owners.setdefault(login_db_name(login), login)
        if owner != login:
            shared.append(f"{owner!r} and {login!r} (both {login_db_name(login)})")
    if shared:
        raise ClassError(f"These logins would share one database: {'; '.join(shared)}. Change one of each "
                         f"pair in the roster (another spelling); no login was created.")
    check_separation(client, uri)  # a server that lets one learner reach another's database gets no login
    made_users: list[str] = []
    made_dbs: list[str] = []
    out: list[tuple[str, str | None, str]] = []
    try:
        for login in logins:
            db_name = login_db_name(login)
            if login in existing:
                out.append((login, None, db_name))
                continue
            password = secrets.token_urlsafe(18)  # 144 random bits; never stored, printed once
            client.admin.command("createUser", login, pwd=password,
                                 roles=[{"role": "readWrite", "db": db_name}],
                                 customData={"workbook": DB_PREFIX, "database": db_name})
            made_users.append(login)
            if create_registry(client[db_name]):
                made_dbs.append(db_name)
            out.append((login, learner_uri(uri, login, password), db_name))
    except PyMongoError as e:  # refused, or the connection lost: a user whose password was never shown must not stay
        left = []
        for login in made_users:
            try:
                client.admin.command("dropUser", login)
            except PyMongoError:
                left.append(login)
        for db_name in made_dbs:
            try:
                if client[db_name].list_collection_names() == [REGISTRY] and retire_registry(client[db_name]):
                    client.drop_database(db_name)
            except PyMongoError:
                pass
        if left:
            raise ClassError(f"The server stopped answering while the logins were made ({type(e).__name__}), "
                             f"and these users could not be removed again: {', '.join(left)}. Their passwords "
                             f"were never shown, so nobody can use them: when the server answers, remove them "
                             f"(`python3 workbook.py class drop DB --yes` for their databases, or dropUser) "
                             f"and run `class logins` again.") from None
        if not isinstance(e, OperationFailure):
            raise ClassError(f"The server stopped answering while the logins were made ({type(e).__name__}): "
                             f"every login this run created was removed again; nothing was changed. Run "
                             f"`class logins` again when the server answers.") from None
        if is_denied(e):
            raise ClassError("This login may not create users (the createUser and grantRole actions) or "
                             "the learners' databases: run `class logins` with a login that has the root "
                             "role (or userAdminAnyDatabase and readWriteAnyDatabase). No login was "
                             "created.") from None
        raise ClassError(f"The server refused to create a login ({type(e).__name__}, code "
                         f"{getattr(e, 'code', None)}): every login this run created was removed again; "
                         f"nothing was changed.") from None
    return out


def drop_users(client: Any, databases: list[str] | None = None) -> list[str]:
    """Remove the users ``class logins`` made (those of ``databases`` only, when given); their names."""
    gone = []
    for login, db_name in sorted(workbook_users(client).items()):
        if databases is None or db_name in databases:
            client.admin.command("dropUser", login)
            gone.append(login)
    return gone
