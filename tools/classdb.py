"""The class's databases on a shared server: list them, drop them at the end of term.

    python3 workbook.py class list | class drop [DB ...] --yes

Each student's work lives in its own database (``helpers.settings.student_db_name``). A database
is the workbook's only when it is named ``schema_workbook*`` *and* holds the workbook's registry.
"""
from __future__ import annotations

from typing import Any

from helpers.safety import REGISTRY, reset_workbook
from helpers.settings import DB_PREFIX

__all__ = ["workbook_databases", "drop_workbook_databases"]


def workbook_databases(client: Any) -> list[dict[str, Any]]:
    """The workbook's databases on a server: named ``schema_workbook*`` *and* holding the registry.

    A database that merely shares the prefix but was not made by the workbook is never listed.
    """
    out = []
    for name in sorted(client.list_database_names()):
        if not name.startswith(DB_PREFIX):
            continue
        db = client[name]
        if REGISTRY not in db.list_collection_names():
            continue
        stats = db.command("dbStats")
        out.append({"database": name, "collections": len(db[REGISTRY].distinct("_id")),
                    "data bytes": int(stats.get("dataSize", 0)),
                    "storage bytes": int(stats.get("storageSize", 0)) + int(stats.get("indexSize", 0))})
    return out


def drop_workbook_databases(client: Any, names: list[str] | None = None) -> dict[str, list[str]]:
    """End of term: in each listed workbook database (all if ``names`` is None), drop what the
    workbook created; drop the database itself only when nothing else is left in it.

    Returns, per database, the collections kept because the workbook did not create them (a
    database with an empty list is gone). Refuses a name :func:`workbook_databases` does not list.
    """
    ours = {d["database"] for d in workbook_databases(client)}
    targets = sorted(ours) if names is None else list(names)
    foreign = [n for n in targets if n not in ours]
    if foreign:
        raise ValueError(f"not workbook databases (no {REGISTRY!r} collection or another prefix), "
                         f"left alone: {', '.join(foreign)}")
    kept: dict[str, list[str]] = {}
    for name in targets:
        db = client[name]
        reset_workbook(db)
        kept[name] = sorted(db.list_collection_names())
        if not kept[name]:
            client.drop_database(name)
    return kept
