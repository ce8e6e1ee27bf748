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
their databases.
"""
from __future__ import annotations

import csv
import re
import secrets
import uuid
from pathlib import Path
from typing import Any

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
           "workbook_users", "create_logins", "drop_users", "learner_uri", "is_denied", "collection_kinds"]

_PROBE = "workbook_probe_"
_UNAUTHORIZED = 13


class ClassError(ValueError):
    """The class command cannot run as asked; the message says why and what to do."""


def is_denied(exc: Exception) -> bool:
    """The server refused ``exc``'s command for want of a privilege (code 13, or its message says so)."""
    return getattr(exc, "code", None) == _UNAUTHORIZED or "not authorized" in str(exc).lower()


def _list_databases(client: Any) -> list[str]:
    from pymongo.errors import OperationFailure

    try:
        return sorted(client.list_database_names())
    except OperationFailure as e:
        if is_denied(e):
            raise ClassError("This login may not list the server's databases (the listDatabases action), "
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
            if is_workbook_database_name(name) and collection_kinds(client[name]).get(REGISTRY) == "collection"]


def collection_kinds(db: Any) -> dict[str, str]:
    """``{name: type}`` of a database's collections (``collection``, ``view``, ``timeseries``)."""
    from pymongo.errors import OperationFailure

    try:
        return {c["name"]: c.get("type", "collection") for c in db.list_collections()}
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
        client.list_database_names()
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
                     "--auth, or security.authorization: enabled; secantusd-py --auth), create the "
                     "instructor's user, and run `class logins` with that user in MONGODB_URI. "
                     "No login was created.")


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
    be the workbook's (same role), and if the server refuses one creation, every user and database
    this call created is removed again before the refusal is raised (:class:`ClassError`).
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
