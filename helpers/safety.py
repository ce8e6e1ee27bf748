"""Safety: the workbook touches only collections it created, in its own database.

Introduced in notebook 00. Every collection the workbook writes is recorded in a small registry
collection (``workbook_registry``) in the same database *before* it is first created.
``reset_workbook`` drops exactly the recorded collections and nothing else: never a collection
somebody else made, never another database.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable

__all__ = [
    "REGISTRY",
    "PROGRESS",
    "ForeignCollectionError",
    "workbook_collection",
    "track_collection",
    "is_workbook_collection",
    "workbook_collections",
    "reset_workbook",
]

REGISTRY = "workbook_registry"
#: the learner's exercise results on a server (``helpers.exercises``): recorded like any workbook
#: collection, but a reset keeps it (the results outlive each notebook's data); ``class drop`` drops it
PROGRESS = "workbook_progress"


class ForeignCollectionError(RuntimeError):
    """A collection exists in the workbook's database but the workbook did not create it."""


def _existing(db: Any) -> set[str]:
    return set(db.list_collection_names())


def is_workbook_collection(db: Any, name: str) -> bool:
    """True if ``name`` is recorded as created by the workbook in ``db``."""
    return db[REGISTRY].count_documents({"_id": name}, limit=1) == 1


def workbook_collections(db: Any) -> list[str]:
    """The recorded workbook collections of ``db`` that exist now, sorted."""
    recorded = {d["_id"] for d in db[REGISTRY].find({}, {"_id": 1}) if isinstance(d["_id"], str)}
    return sorted(recorded & _existing(db))


def _record(db: Any, name: str) -> None:
    db[REGISTRY].update_one(
        {"_id": name},
        {"$setOnInsert": {"created": _dt.datetime.now(_dt.timezone.utc)}},
        upsert=True,
    )


def workbook_collection(db: Any, name: str) -> Any:
    """Return ``db[name]`` for the workbook to write, recording it as workbook-created.

    Raises ``ForeignCollectionError`` if the collection already exists and the workbook did not
    create it: the workbook never writes into (or later drops) somebody else's data.
    """
    if name == REGISTRY:
        raise ValueError(f"{REGISTRY!r} is the workbook's own registry; pick another collection name")
    if not is_workbook_collection(db, name):
        # the workbook records a name *before* creating it, so a collection that exists but is
        # unrecorded even after this second look was made by somebody else (not a concurrent writer)
        if name in _existing(db) and not is_workbook_collection(db, name):
            raise ForeignCollectionError(
                f"The collection {name!r} already exists in database {db.name!r} and was not created "
                f"by this workbook, so the workbook will not write to it or drop it. Set WORKBOOK_DB "
                f"to a database of your own (default 'schema_workbook'), or drop {name!r} yourself "
                f"if you are sure it is disposable."
            )
        _record(db, name)
    return db[name]


def track_collection(db: Any, name: str) -> Any:
    """Lenient form of :func:`workbook_collection`, for a collection the *caller* chose and handed
    to a pattern API (``trees.ParentRefs(db["my_tree"])``, the ``posts`` of ``outlier.add_comment``).

    Records ``name`` if it does not exist yet; an existing collection the workbook did not create
    is written as the caller asked, but stays unrecorded, so ``reset_workbook`` never drops it.
    A name a helper picks itself goes through the strict :func:`workbook_collection` instead.
    """
    if not is_workbook_collection(db, name) and name not in _existing(db):
        _record(db, name)
    return db[name]


def reset_workbook(db: Any, keep: Iterable[Any] = ()) -> list[str]:
    """Drop every collection this workbook created in ``db``, and nothing else.

    Returns the names dropped, sorted. Collections the workbook did not create are left alone,
    and no other database is touched. Used by every notebook's setup and by the instructor's reset.

    ``keep``: collections to leave, by name or as the :class:`~helpers.datasets.LoadResult` of a
    load (its collections). A Setup cell loads its data first and then resets everything else
    (``reset_workbook(db, keep=loaded)``): a dataset loaded again is brought back to the file's
    contents by :func:`~helpers.datasets.load_dataset` (on SecantusDB, where dropping and writing
    are costly, only the documents that differ are written) instead of being dropped and written anew.

    Only the registry entries read here are removed, never the registry itself: another kernel may
    record a collection while this runs, and its entry must survive (or its next load would be
    refused as foreign). An entry that cannot name a collection (not a string) is removed too.
    """
    kept: set[str] = {PROGRESS}
    for item in keep:
        if hasattr(item, "counts"):  # a LoadResult: its collections
            kept.update(item.counts)
        else:
            kept.add(item)
    recorded = [d["_id"] for d in db[REGISTRY].find({}, {"_id": 1})]
    existing = _existing(db)
    dropped = []
    for name in sorted(n for n in recorded if isinstance(n, str) and n not in kept):
        if name in existing:
            db.drop_collection(name)
            dropped.append(name)
    forget = [n for n in recorded if not (isinstance(n, str) and n in kept)]
    if forget:
        db[REGISTRY].delete_many({"_id": {"$in": forget}})
    return dropped
