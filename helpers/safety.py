"""Safety: the workbook touches only collections it created, in its own database.

Introduced in notebook 00. Every collection the workbook writes is recorded in a small registry
collection (``workbook_registry``) in the same database *before* it is first created, and once it
exists, by its UUID too (``listCollections``' ``info.uuid``; :func:`note_created`).
``reset_workbook`` drops exactly the recorded collections and nothing else: never a collection
somebody else made, never another database.

**A name is not enough.** A workbook collection dropped outside the helpers and made again under
the same name (by the learner's own code, the shell, another program) is somebody else's: its UUID
is not the recorded one, so a reset leaves it alone (and says so), a load refuses to replace it and
``set_validator`` to change it. The workbook's own "drop, then create" goes through
:func:`fresh_collection`, which records the new UUID, and its own "drop now" through
:func:`drop_workbook_collection`, which also removes the entry. Where the engine reports no UUID (the mock:
docs/ENGINES.md), and for an entry recorded before UUIDs were, the name alone decides, as it did;
such an entry learns its UUID the next time :func:`workbook_collection` meets the collection.

This module is the registry's only reader and writer: the rest of the workbook (the loader, the
connect probes, ``tools/classdb``) goes through the named functions below (:func:`record`,
:func:`forget`, :func:`recorded`, :func:`has_registry`, :func:`note_created`, the load leases
:func:`take_lease`, :func:`renew_leases`, :func:`release_leases`, :func:`holds_lease`, :func:`lease_of`,
and the marks of a load in progress :func:`mark_loading`, :func:`mark_loaded`, :func:`incomplete`). The registry is
created by the first record, never by a connect or a read.

**Leases.** A load holds a lease on each collection it writes (``{_id: "$loading:<target>", owner,
expires}``; the ``_id`` index makes taking one atomic) and renews it while it writes. A reset takes
the same lease on each collection before dropping it: it never drops a collection (or a staging
copy of it) that another kernel is loading, and it removes no live lease; a load waits for a reset
of its collection to finish. A lease whose holder stopped renewing (a crashed kernel) expires.

**Half-loaded collections.** A load that writes its target directly (where a rename copies:
SecantusDB) marks the target's entry before its first write (:func:`mark_loading`) and clears the
mark once the load is complete and checked (:func:`mark_loaded`). A kernel killed mid-load leaves
the mark on a collection holding part of the data: :func:`incomplete` finds it, and
:func:`incomplete_notes` says what to do (the banner and every exercise check say it).
"""
from __future__ import annotations

import datetime as _dt
import re
import uuid
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

__all__ = [
    "REGISTRY",
    "PROGRESS", "create_registry",
    "ForeignCollectionError",
    "workbook_collection",
    "fresh_collection",
    "drop_workbook_collection",
    "check_copies",
    "note_created",
    "track_collection",
    "is_workbook_collection",
    "workbook_collections",
    "reset_workbook",
    "record",
    "forget",
    "recorded",
    "has_registry",
    "retire_registry",
    "scratch_collection",
    "staging_name",
    "is_staging_name",
    "take_lease",
    "renew_leases",
    "mark_loading",
    "mark_loaded",
    "incomplete",
    "incomplete_notes",
    "release_leases",
    "holds_lease",
    "lease_of",
]

REGISTRY = "workbook_registry"
#: the learner's exercise results on a server (``helpers.exercises``): recorded like any workbook
#: collection, but a reset keeps it (the results outlive each notebook's data); ``class drop`` drops it
PROGRESS = "workbook_progress"
#: the registry ``_id`` of a lease on a collection: ``$loading:<collection>`` (no collection name starts with ``$``)
_LEASE = "$loading:"
#: how long a reset holds its lease on a collection it drops (it releases it at once)
_RESET_LEASE_S = 60.0


class ForeignCollectionError(RuntimeError):
    """A collection exists in the workbook's database but the workbook did not create it."""


def _existing(db: Any) -> set[str]:
    return set(db.list_collection_names())


def _listed(db: Any, name: str) -> dict[str, Any] | None:
    """``listCollections``' entry for ``name`` (with ``info.uuid`` where the engine reports one), or None.
    The whole list, read in one round trip: mongomock-ng's name filter still lists a dropped collection."""
    return next((c for c in db.list_collections() if c.get("name") == name), None)


def _uuid_of(listed: dict[str, Any] | None) -> Any:
    return ((listed or {}).get("info") or {}).get("uuid")


def _same(entry: dict[str, Any] | None, listed: dict[str, Any] | None) -> bool:
    """True if the existing collection ``listed`` is the one the registry ``entry`` recorded: its UUID
    is the recorded one, or one side has none (an entry recorded before UUIDs, or an engine that
    reports none: the name alone decides)."""
    recorded, current = (entry or {}).get("uuid"), _uuid_of(listed)
    return recorded is None or current is None or recorded == current


def _recorded_name(db: Any, name: str) -> bool:
    """True if ``name`` has a registry entry (one round trip, whatever exists under it)."""
    return db[REGISTRY].count_documents({"_id": name}, limit=1) == 1


def is_workbook_collection(db: Any, name: str) -> bool:
    """True if ``name`` is recorded as created by the workbook in ``db``, and the collection there now
    (if any) is the one it recorded (its UUID: not one dropped and made again by somebody else)."""
    entry = db[REGISTRY].find_one({"_id": name})
    if entry is None:
        return False
    if entry.get("uuid") is None:  # recorded by name only: nothing more to compare
        return True
    listed = _listed(db, name)
    return listed is None or _same(entry, listed)


def workbook_collections(db: Any) -> list[str]:
    """The recorded workbook collections of ``db`` that exist now (and are the ones recorded), sorted."""
    entries = {d["_id"]: d for d in db[REGISTRY].find({}, {"_id": 1, "uuid": 1}) if isinstance(d["_id"], str)}
    return sorted(c["name"] for c in db.list_collections() if c["name"] in entries and _same(entries[c["name"]], c))


def record(db: Any, name: str) -> None:
    """Record ``name`` as a collection of the workbook's (before creating it). Whatever UUID the entry
    held is cleared: the next collection under the name is the workbook's (:func:`note_created`)."""
    db[REGISTRY].update_one(
        {"_id": name},
        {"$setOnInsert": {"created": _dt.datetime.now(_dt.timezone.utc)}, "$unset": {"uuid": ""}},
        upsert=True,
    )


def note_created(db: Any, name: str) -> None:
    """Record the UUID of the collection ``name`` holds now as the workbook's: called right after the
    workbook created it (a load's create or rename, :func:`fresh_collection`), so that one dropped and
    made again by somebody else is told apart. Nothing to record where the engine reports no UUID."""
    found = _uuid_of(_listed(db, name))
    if found is not None:
        db[REGISTRY].update_one({"_id": name}, {"$set": {"uuid": found},
                                                "$setOnInsert": {"created": _dt.datetime.now(_dt.timezone.utc)}},
                                upsert=True)


def _learn_uuid(db: Any, name: str, listed: dict[str, Any] | None) -> None:
    """An entry recorded by name only (before UUIDs, or just before its collection was created) whose
    collection the workbook meets as its own: record its UUID, unless another writer recorded one meanwhile."""
    found = _uuid_of(listed)
    if found is not None:
        db[REGISTRY].update_one({"_id": name, "uuid": {"$exists": False}}, {"$set": {"uuid": found}})


def _loading_now(db: Any, name: str) -> bool:
    """True if a live lease covers ``name``: another kernel's load is creating and writing it."""
    lease = lease_of(db, _leased(name))
    return lease is not None and lease.get("expires", _now()) > _now()


def _create(db: Any, name: str) -> None:
    """Create the workbook's collection ``name`` (recorded already) now, so its UUID is recorded from
    the start, unless another kernel's load is making it (its load records it) or it exists meanwhile."""
    from pymongo.errors import CollectionInvalid, OperationFailure

    if _loading_now(db, name):
        return
    try:
        db.create_collection(name)
    except (CollectionInvalid, OperationFailure):  # created meanwhile (a concurrent writer): met as it is
        _learn_uuid(db, name, _listed(db, name))
        return
    note_created(db, name)


def forget(db: Any, names: Iterable[str]) -> None:
    """Remove the entries of ``names`` (collections gone: renamed or dropped); no other entry, and never
    a lease (a name starting with the lease prefix is skipped: a lease is released by its owner)."""
    names = [n for n in names if not (isinstance(n, str) and n.startswith(_LEASE))]  # never a live lease
    if names:
        db[REGISTRY].delete_many({"_id": {"$in": names}})


def recorded(db: Any) -> set[str]:
    """Every collection name recorded in ``db``'s registry (whether it exists or not; no lease)."""
    return {n for n in db[REGISTRY].distinct("_id") if isinstance(n, str) and not n.startswith(_LEASE)}


def has_registry(db: Any) -> bool:
    """True if ``db`` holds the workbook's registry: something was recorded there once (a connect
    alone records nothing)."""
    return REGISTRY in _existing(db)


def create_registry(db: Any) -> bool:
    """Make ``db`` a workbook database before anything is recorded there (``class logins`` does, for
    each learner's database): create its empty registry; True if it was created now."""
    if has_registry(db):
        return False
    db.create_collection(REGISTRY)
    return True


def retire_registry(db: Any) -> bool:
    """Drop ``db``'s registry if it records nothing (``class drop`` leaves a database that is no
    longer the workbook's); True if dropped."""
    if has_registry(db) and db[REGISTRY].count_documents({}) == 0:
        db.drop_collection(REGISTRY)
        return True
    return False


def scratch_collection(db: Any, name: str) -> Any:
    """A throwaway collection for a connect probe, under a fresh random name the caller drops when
    done. Never recorded, so a connect leaves no registry behind; refused if the name exists."""
    if name in _existing(db):
        raise ForeignCollectionError(f"The collection {name!r} already exists in database {db.name!r}; "
                                     f"the probe picks another name: run it again.")
    return db[name]


_STAGING_NAME = re.compile(r"(?P<target>.+)__staging(?:_[0-9a-f]{8})?")


def staging_name(target: str) -> str:
    """A load's staging collection's name for ``target``: unique, so two loads never share one."""
    return f"{target}__staging_{uuid.uuid4().hex[:8]}"


def is_staging_name(name: str) -> bool:
    """True for a load's staging collection (``<target>__staging_<8 hex>``): not a collection of the learner's."""
    return bool(_STAGING_NAME.fullmatch(name))


def _leased(name: str) -> str:
    """The collection whose lease covers ``name``: a staging copy's target, else ``name`` itself."""
    found = _STAGING_NAME.fullmatch(name)
    return found["target"] if found else name


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


def take_lease(db: Any, target: str, owner: str, seconds: float) -> bool:
    """Take the lease on collection ``target`` for ``owner``, for ``seconds``; False if another
    holder's lease is live. An expired lease (its kernel crashed) is taken over, atomically."""
    from pymongo.errors import DuplicateKeyError

    now = _now()
    lease = {"owner": owner, "expires": now + _dt.timedelta(seconds=seconds)}
    try:
        db[REGISTRY].insert_one({"_id": _LEASE + target, **lease})
        return True
    except DuplicateKeyError:
        pass
    return db[REGISTRY].find_one_and_update({"_id": _LEASE + target, "expires": {"$lt": now}},
                                            {"$set": lease}) is not None


def renew_leases(db: Any, targets: Iterable[str], owner: str, seconds: float) -> int:
    """Extend ``owner``'s leases on ``targets`` by ``seconds`` from now; how many it still holds."""
    ids = [_LEASE + t for t in targets]
    got = db[REGISTRY].update_many({"_id": {"$in": ids}, "owner": owner},
                                   {"$set": {"expires": _now() + _dt.timedelta(seconds=seconds)}})
    return got.matched_count


def release_leases(db: Any, targets: Iterable[str], owner: str) -> None:
    """Give up ``owner``'s leases on ``targets`` (never another holder's)."""
    ids = [_LEASE + t for t in targets]
    if ids:
        db[REGISTRY].delete_many({"_id": {"$in": ids}, "owner": owner})


def holds_lease(db: Any, target: str, owner: str) -> bool:
    """True if ``owner`` still holds the lease on ``target``."""
    return db[REGISTRY].count_documents({"_id": _LEASE + target, "owner": owner}, limit=1) == 1


def lease_of(db: Any, target: str) -> dict[str, Any] | None:
    """The lease on ``target`` (``owner``, ``expires`` in naive UTC), or None."""
    return db[REGISTRY].find_one({"_id": _LEASE + target})


def mark_loading(db: Any, names: Iterable[str], owner: str) -> None:
    """Mark the recorded collections ``names`` as being written by the load ``owner``, before its
    first write: until :func:`mark_loaded`, each holds part of a load (:func:`incomplete`)."""
    names = list(names)
    if names:
        db[REGISTRY].update_many({"_id": {"$in": names}}, {"$set": {"loading": {"owner": owner, "since": _now()}}})


def mark_loaded(db: Any, names: Iterable[str], owner: str) -> None:
    """Clear ``owner``'s marks on ``names`` (its load is complete and checked, or what it wrote is
    dropped); never another load's mark."""
    names = list(names)
    if names:
        db[REGISTRY].update_many({"_id": {"$in": names}, "loading.owner": owner}, {"$unset": {"loading": ""}})


def incomplete(db: Any) -> dict[str, str]:
    """The collections of ``db`` holding part of a load, sorted: ``{name: state}``, ``"loading"``
    while the load's lease is live (a load in another kernel, or one killed less than a lease ago),
    ``"interrupted"`` once it expired (the kernel was stopped mid-load). Reads only; a database with
    no registry has none."""
    if not has_registry(db):
        return {}
    marked = {d["_id"]: d["loading"] for d in db[REGISTRY].find({"loading": {"$exists": True}}, {"loading": 1})
              if isinstance(d["_id"], str) and isinstance(d.get("loading"), dict)}
    if not marked:
        return {}
    existing, out = _existing(db), {}
    for name in sorted(marked):
        if name in existing:
            lease = lease_of(db, _leased(name)) or {}
            live = lease.get("owner") == marked[name].get("owner") and lease.get("expires", _now()) > _now()
            out[name] = "loading" if live else "interrupted"
    return out


def incomplete_notes(db: Any, only: Iterable[str] | None = None) -> list[str]:
    """One sentence per collection of ``db`` holding part of a load (:func:`incomplete`; ``only``:
    among these names): which, how many documents it holds, and what to do (run the Setup cell again)."""
    out = []
    only = None if only is None else set(only)
    for name, state in incomplete(db).items():
        if only is not None and name not in only:
            continue
        held = db[name].estimated_document_count()
        why = ("its load did not finish (the kernel was stopped mid-load)" if state == "interrupted" else
               "a load is writing it (in another kernel, or in one stopped less than a minute ago)")
        out.append(f"the collection {name!r} in database {db.name!r} holds only part of its data ({held:,} "
                   f"documents): {why}. Run this notebook's Setup cell again before using it: it loads "
                   f"{name!r} anew (waiting, a minute at most, for a load still holding it).")
    return out


def workbook_collection(db: Any, name: str, *, create: bool = True) -> Any:
    """Return ``db[name]`` for the workbook to write, recording it as workbook-created.

    Raises ``ForeignCollectionError`` if the collection already exists and the workbook did not
    create it (or it was dropped and made again outside the workbook's helpers: its UUID is not the
    recorded one): the workbook never writes into (or later drops) somebody else's data. A missing
    collection is created now (``create``; a load creates its own under its lease), so its UUID is
    recorded from the start.
    """
    if name == REGISTRY:
        raise ValueError(f"{REGISTRY!r} is the workbook's own registry; pick another collection name")
    entry = db[REGISTRY].find_one({"_id": name})
    listed = _listed(db, name)
    if entry is None and listed is not None:
        # the workbook records a name *before* creating it, so a collection that exists but is
        # unrecorded even after this second look was made by somebody else (not a concurrent writer)
        entry = db[REGISTRY].find_one({"_id": name})
        if entry is None:
            raise ForeignCollectionError(
                f"The collection {name!r} already exists in database {db.name!r} and was not created "
                f"by this workbook, so the workbook will not write to it or drop it. Set WORKBOOK_DB "
                f"to a database of your own (default 'schema_workbook'), or drop {name!r} yourself "
                f"if you are sure it is disposable."
            )
    if listed is not None:
        if not _same(entry, listed):
            raise ForeignCollectionError(
                f"The collection {name!r} in database {db.name!r} is not the one this workbook created: "
                f"that one was dropped and this one made again outside the workbook's helpers (its UUID is "
                f"not the recorded one), so the workbook will not write to it or drop it. Drop or rename "
                f"{name!r} yourself if it is disposable (the workbook then makes its own again), or set "
                f"WORKBOOK_DB to another database; to drop and create one of the workbook's, use "
                f"helpers.fresh_collection(db, {name!r}, ...).")
        if entry.get("uuid") is None:
            _learn_uuid(db, name, listed)
        return db[name]
    record(db, name)
    if create:
        _create(db, name)
    return db[name]


def fresh_collection(db: Any, name: str, **options: Any) -> Any:
    """The workbook's collection ``name``, dropped and created anew with ``options`` (those of
    ``db.create_collection``: ``validator=``, ``timeseries=``, ...), recorded as the workbook's by
    its new UUID; returns ``db[name]``.

    The workbook's own "drop, then create": ``db[name].drop()`` and ``db.create_collection(name)``
    by themselves make a collection the workbook cannot tell from one somebody else made again under
    the name, which a reset leaves alone and a load refuses. Refused (``ForeignCollectionError``)
    before anything is dropped if the collection is somebody else's.
    """
    workbook_collection(db, name, create=False)
    record(db, name)
    db.drop_collection(name)
    db.create_collection(name, **options)
    note_created(db, name)
    return db[name]


def drop_workbook_collection(db: Any, name: str) -> bool:
    """Drop the workbook's collection ``name`` now and remove its registry entry (what
    :func:`reset_workbook` does for each name, for one): True if a collection was dropped, False if
    none was there. Refused (``ForeignCollectionError``) before anything is dropped if the collection
    is somebody else's (unrecorded, or made again outside the workbook's helpers), or while another
    kernel's load holds it. ``db.drop_collection(name)`` alone leaves the entry until the next reset."""
    if not isinstance(name, str) or not name or name.startswith("$") or "\0" in name:
        raise ValueError(f"drop_workbook_collection: {name!r} is not a collection name (a non-empty str, "
                         f"not starting with '$', with no NUL)")
    if name in (REGISTRY, PROGRESS):
        raise ValueError(f"{name!r} is the workbook's own record (its registry, or the learner's exercise "
                         f"results), not a collection to drop; reset_workbook keeps the results")
    owner = f"drop:{uuid.uuid4().hex}"
    target = _leased(name)
    if not take_lease(db, target, owner, _RESET_LEASE_S):
        raise ForeignCollectionError(f"Another kernel is loading {name!r} in database {db.name!r} now: "
                                     f"drop it once that load has finished.")
    try:
        entry = db[REGISTRY].find_one({"_id": name})
        listed = _listed(db, name)
        if listed is not None and (entry is None or not _same(entry, listed)):
            raise ForeignCollectionError(
                f"The collection {name!r} in database {db.name!r} was not created by this workbook (or was "
                f"made again outside its helpers), so the workbook will not drop it; drop it yourself if "
                f"it is disposable.")
        if listed is not None:
            db.drop_collection(name)
        forget(db, [name])
        return listed is not None
    finally:
        release_leases(db, [target], owner)


@contextmanager
def check_copies(db: Any, *prefixes: str) -> Iterator[list[str]]:
    """Fresh names for the copies one call of a check makes, ``<prefix>_<8 random hex>`` each (two
    kernels never share, or drop, one): yields the names, none created yet; a name that is somebody
    else's collection is refused before anything is written. On leaving, whatever happened inside,
    every copy under the names is dropped: the workbook's, and one made under a name that did not
    exist on entering (the learner's function dropped a copy and made it again: a random name only
    this call knows), and its registry entry removed. (Not leased: a load into a copy takes the
    copy's lease itself, and another kernel's reset in the same seconds may drop a copy mid-check.)"""
    tag = uuid.uuid4().hex[:8]
    names = [f"{p}_{tag}" for p in prefixes]
    for name in names:
        workbook_collection(db, name, create=False)  # somebody else's collection is refused, never dropped
    absent = set(names) - set(_existing(db))
    try:
        yield names
    finally:
        there = _existing(db)
        for name in names:
            if name in there and (name in absent or is_workbook_collection(db, name)):
                db.drop_collection(name)  # only the copies this call made
        forget(db, names)


def track_collection(db: Any, name: str) -> Any:
    """Lenient form of :func:`workbook_collection`, for a collection the *caller* chose and handed
    to a pattern API (``trees.ParentRefs(db["my_tree"])``, the ``posts`` of ``outlier.add_comment``).

    Records ``name`` if it does not exist yet (and creates it, so its UUID is recorded); an existing
    collection the workbook did not create (or one made again outside its helpers) is written as the
    caller asked, but stays unrecorded, so ``reset_workbook`` never drops it. One registry lookup
    when the name is recorded already. A name a helper picks itself goes through the strict
    :func:`workbook_collection` instead.
    """
    if not _recorded_name(db, name) and name not in _existing(db):
        record(db, name)
        _create(db, name)
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

    A collection another kernel is loading right now (a live lease on it, or on the target of a
    staging copy) is left alone with its registry entry and its lease: the reset takes that lease
    itself before it drops a collection, so a load and a reset of one collection take turns.
    A recorded name whose collection was dropped and made again outside the workbook's helpers (its
    UUID is not the recorded one) is somebody else's now: left alone, its entry removed, and a note
    printed naming it.
    Only the registry entries read here are removed, never the registry itself: another kernel may
    record a collection while this runs, and its entry must survive (or its next load would be
    refused as foreign). An entry that cannot name a collection (not a string) is removed too, and
    so is a lease that expired (its kernel crashed).
    """
    kept: set[str] = {PROGRESS}
    for item in keep:
        if hasattr(item, "counts"):  # a LoadResult: its collections
            kept.update(item.counts)
        else:
            kept.add(item)
    if not has_registry(db):  # nothing was ever recorded here: nothing to drop, and no registry made
        return []
    entries = [d["_id"] for d in db[REGISTRY].find({}, {"_id": 1})]
    names = sorted(n for n in entries if isinstance(n, str) and not n.startswith(_LEASE) and n not in kept)
    owner = f"reset:{uuid.uuid4().hex}"
    dropped, foreign = [], []
    for name in names:
        target = _leased(name)
        if not take_lease(db, target, owner, _RESET_LEASE_S):
            continue  # another kernel is loading it: leave the collection, its entry and its lease
        try:
            # looked up under the lease: a load that ended since the listing may have created it
            entry = db[REGISTRY].find_one({"_id": name})
            listed = _listed(db, name)
            if entry is None:  # forgotten meanwhile (another reset): whatever is there now is not recorded
                continue
            if listed is not None and not _same(entry, listed):
                foreign.append(name)  # dropped and made again outside the helpers: somebody else's
            elif listed is not None:
                db.drop_collection(name)
                dropped.append(name)
            forget(db, [name])
        finally:
            release_leases(db, [target], owner)
    if foreign:
        print(f"Note: left alone in database {db.name!r}: {', '.join(map(repr, foreign))}, dropped and made "
              f"again outside the workbook's helpers (not the collection the workbook recorded), so not the "
              f"workbook's to drop; drop {'them' if len(foreign) > 1 else 'it'} yourself if disposable.")
    odd = [n for n in entries if not isinstance(n, str)]
    if odd:
        db[REGISTRY].delete_many({"_id": {"$in": odd}})
    db[REGISTRY].delete_many({"_id": {"$regex": "^\\$loading:"}, "expires": {"$lt": _now()}})
    return dropped
