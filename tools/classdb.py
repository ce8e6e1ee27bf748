"""The class's databases on a shared server: list them, drop them at the end of term.

    python3 workbook.py class list | class drop [DB ...] [--yes]

Each student's work lives in its own database (``helpers.settings.student_db_name``). A database
is the workbook's only when it is named ``schema_workbook*`` *and* holds the workbook's registry.

``class drop`` is for the instructor only. Without ``--yes`` it lists exactly what it would drop
(each database and its workbook collections) and drops nothing. With ``--yes`` it first checks
the login (:func:`check_instructor`): it must be allowed to list every database and to drop any
database, as ``root`` or ``dbAdminAnyDatabase`` are. A student's login is refused before anything
is dropped: one with ``readWrite`` on its own database, and also one with ``readWriteAnyDatabase``
(which may drop every collection of everyone, but not a database: a shared student login with
that role is a risk on its own; give each student ``readWrite`` on their database instead).
"""
from __future__ import annotations

import uuid
from typing import Any

from helpers.datasets import is_staging_name
from helpers.safety import REGISTRY, has_registry, recorded, reset_workbook, retire_registry
from helpers.settings import DB_PREFIX

__all__ = ["ClassError", "workbook_databases", "drop_plan", "check_instructor", "instructor_privileges",
           "drop_workbook_databases"]

_PROBE = "workbook_probe_"
_UNAUTHORIZED = 13


class ClassError(ValueError):
    """The class command cannot run as asked; the message says why and what to do."""


def _denied(exc: Exception) -> bool:
    return getattr(exc, "code", None) == _UNAUTHORIZED or "not authorized" in str(exc).lower()


def _list_databases(client: Any) -> list[str]:
    from pymongo.errors import OperationFailure

    try:
        return sorted(client.list_database_names())
    except OperationFailure as e:
        if _denied(e):
            raise ClassError("This login may not list the server's databases (the listDatabases action), "
                             "so it cannot see the class. Run class commands with the instructor's login "
                             "(a user with the root or dbAdminAnyDatabase role) in MONGODB_URI.") from None
        raise


def _workbook_collections(db: Any) -> list[str]:
    """What the learner made: recorded, existing, not a load's staging copy or a probe's leftover."""
    return sorted(n for n in recorded(db) & set(db.list_collection_names())
                  if not is_staging_name(n) and not n.startswith(_PROBE))


def workbook_databases(client: Any) -> list[dict[str, Any]]:
    """The workbook's databases on a server: named ``schema_workbook*`` *and* holding the registry.

    A database that merely shares the prefix but was not made by the workbook is never listed.
    ``collections`` counts the workbook's collections that exist (not a load's staging copy).
    """
    out = []
    for name in _list_databases(client):
        if not name.startswith(DB_PREFIX):
            continue
        db = client[name]
        if not has_registry(db):
            continue
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
        ours = recorded(db)
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
        if _denied(e):
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
        if _denied(e):
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
        others = sorted(n for n in db.list_collection_names() if n != REGISTRY)
        if not others:
            client.drop_database(name)
        else:
            retire_registry(db)  # if it records nothing, no longer a workbook database
        kept[name] = others
    return kept
