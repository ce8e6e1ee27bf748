"""All or nothing: a load writes staging collections renamed onto their targets (where a rename is
free), or its targets directly (where a rename copies), under its lease, and checks what it wrote."""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from .. import safety
from ..safety import fresh_collection, is_staging_name, staging_name, workbook_collection
from .common import DatasetError
from .lease import LoadLease

__all__ = ["staged_load", "Staging", "staging_name", "is_staging_name", "rename_copies", "plain_collection"]

_RENAME_COPIES: dict[int, tuple[Any, bool]] = {}


def rename_copies(db: Any) -> bool:
    """True where ``renameCollection`` copies the documents (SecantusDB: about 5 s per 139k), so a
    staging collection costs a second write; False on a real MongoDB (a metadata change) and on
    the mock (a dictionary move). Asked once per client (``buildInfo``)."""
    client = getattr(db, "client", None)
    known = _RENAME_COPIES.get(id(client))
    if known is not None and known[0]() is client:  # the same client, not a new one at a reused id
        return known[1]
    try:
        copies = "secantusVersion" in client.admin.command("buildInfo")
    except Exception:  # noqa: BLE001 - the mock has no buildInfo: its rename is free
        copies = False
    try:
        _RENAME_COPIES[id(client)] = (weakref.ref(client), copies)
    except TypeError:  # pragma: no cover - a client without weak references: ask each time
        pass
    return copies


class Staging(dict):
    """``{target: collection to write}`` yielded by :func:`staged_load` (a dict, plus ``renew``).

    ``kept``: the targets written in place that still hold their old documents (``keep=True``):
    the caller brings them to the new contents (``reload.sync``); every other collection is empty.
    ``expect``: the caller's count of documents per target, checked before the load reports success.
    """

    lease: LoadLease
    kept: frozenset[str] = frozenset()

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.expect: dict[str, int] = {}
        self.uuids: dict[str, Any] = {}

    def renew(self) -> None:
        """Tell other loads this one is still writing (call between batches of a long load)."""
        self.lease.renew()

    def recreate(self, target: str) -> None:
        """Drop and create ``target``'s collection afresh (a reload rewriting it all), noting the new
        collection as the one this load writes."""
        coll = self[target]
        fresh_collection(coll.database, coll.name)  # recorded by its new UUID, as the workbook's
        self.uuids[target] = _uuid(coll.database, coll.name)


def plain_collection(db: Any, name: str) -> bool:
    """True if ``name`` exists, holds documents, and was created with no options (no validator,
    collation, capped size, ...). Once its secondary indexes are dropped, only its documents
    can differ from a freshly loaded collection, so a reload may fix just those (:func:`_sync`)."""
    found = list(db.list_collections(filter={"name": name}))
    if len(found) != 1:
        return False
    info = found[0]
    return (info.get("type", "collection") == "collection" and not info.get("options")
            and db[name].find_one({}, projection={"_id": 1}) is not None)




@contextmanager
def staged_load(db: Any, targets: Sequence[str], *, validated: bool = False,
                keep: bool = False) -> Iterator[Staging]:
    """All or nothing: fill staging collections, then rename each over its target.

    Yields ``{target: collection}`` (a :class:`Staging`). By default each is a staging collection
    of its own (``<target>__staging_<8 hex>``, empty): when the block ends without error every
    staging collection is renamed onto its target (``dropTarget=True``); on any error they are
    dropped and every target is left exactly as it was.

    ``validated=True`` says the caller checked its whole input before this block (as
    ``load_dataset`` does), so the only failure left is the server's own. Then staging is used
    only where renaming costs nothing (a real MongoDB, the mock); where ``renameCollection`` copies
    the documents (SecantusDB) the targets are emptied and written directly, and on an error the
    documents written are dropped: no half-loaded collection remains.

    ``keep=True`` (with ``validated``): where the targets are written directly, a target that
    exists as a plain collection (:func:`plain_collection`) is not dropped, because dropping costs
    as much as writing there (SecantusDB: about 2.5 s per 139k documents): only its secondary
    indexes are, and it is listed in the yielded ``kept`` for the caller to bring to the new
    contents (``reload.sync``). On an error it is dropped like any directly written target.

    One load at a time per target, under its lease (:class:`~helpers.datasets.lease.LoadLease`),
    which a reset takes too before dropping: two kernels loading the same data both end with a
    complete collection, and a reset in another kernel leaves this load alone. Before it ends
    without error, the load checks that it still holds its lease, that each target is still
    recorded as the workbook's, and that each holds the number of documents the caller put in
    ``expect``; otherwise it drops what it wrote and raises a :class:`DatasetError` saying so (the
    next load starts clean). Where the targets are written directly, each is marked in the registry
    before the first write and the mark cleared once the load is checked (``safety.mark_loading``):
    a kernel killed mid-load leaves a marked collection, which ``safety.incomplete`` reports. Target and staging names are refused first if somebody else created
    them (``helpers.safety.workbook_collection``). Used by ``load_dataset`` and
    ``helpers.outlier.load_outlier_posts``.
    """
    for target in targets:  # the safety contract first: refuse foreign collections before touching anything
        workbook_collection(db, target, create=False)  # created below, under the lease
    in_place = validated and rename_copies(db)
    lease = LoadLease(db, targets)
    lease.acquire()
    staging: dict[str, str] = {}
    kept: set[str] = set()
    renamed: list[str] = []
    try:
        for target in targets:  # again, under the lease: a reset before it may have dropped and forgotten it
            workbook_collection(db, target, create=False)
        if in_place:  # written directly: marked before the first write, cleared once complete and checked
            safety.mark_loading(db, targets, lease.owner)
        for target in targets:
            if in_place:
                staging[target] = target
                if keep and plain_collection(db, target):
                    db[target].drop_indexes()  # a replaced collection has only its _id index
                    kept.add(target)
                    continue
            else:
                staging[target] = staging_name(target)
            fresh_collection(db, staging[target])  # recorded, then made anew: its UUID recorded too
        yielded = Staging({target: db[staging[target]] for target in targets})
        yielded.uuids.update({target: _uuid(db, staging[target]) for target in targets})  # a rename keeps it
        yielded.lease = lease
        yielded.kept = frozenset(kept)
        yield yielded
        if not in_place:
            for target in targets:
                db[staging[target]].rename(target, dropTarget=True)
                renamed.append(target)
                safety.note_created(db, target)  # the target is the renamed collection now (its UUID)
                safety.forget(db, [staging[target]])
                if rename_copies(db):  # the rename wrote a new collection (SecantusDB): the one to check
                    yielded.uuids[target] = _uuid(db, target)
        _check_written(db, targets, yielded.expect, lease, yielded.uuids)
        if in_place:
            safety.mark_loaded(db, targets, lease.owner)
    except BaseException:
        try:
            ours = lease.still_held()  # else another load writes the targets now: drop only staging copies
            for name in [*staging.values(), *renamed]:
                if ours or name not in targets:
                    db.drop_collection(name)
            safety.forget(db, [name for name in staging.values() if name not in targets])
            if ours and in_place:  # what it wrote is dropped: no half-loaded collection to mark
                safety.mark_loaded(db, targets, lease.owner)
        except Exception:  # pragma: no cover - keep the original error
            pass
        raise
    finally:
        try:
            lease.release()
        except Exception:  # pragma: no cover - the lease expires on its own
            pass


def _uuid(db: Any, name: str) -> Any:
    """The collection's UUID (``listCollections``; None where the engine reports none: the mock)."""
    info = next(iter(db.list_collections(filter={"name": name})), None) or {}
    return info.get("info", {}).get("uuid")


def _check_written(db: Any, targets: Sequence[str], expect: dict[str, int], lease: LoadLease,
                   uuids: dict[str, Any]) -> None:
    """What a load checks before it reports success (see :func:`staged_load`): its lease, each
    target's registry entry, that each target is the very collection it wrote (its UUID: a drop,
    and the implicit re-creation of the next insert, change it) and its count of documents. The
    count is the collection's metadata count (``estimated_document_count``: no scan on a real
    MongoDB or the mock); where counting scans the collection (SecantusDB: 0.7 s of CPU for 139k
    documents, a tenth of the load) the UUID and the server's acknowledgement of every insert stand
    for it."""
    where = f"in database {getattr(db, 'name', '?')!r}"
    again = "nothing half-loaded is left; run this cell again."
    if not lease.still_held():
        raise DatasetError(f"the load of {', '.join(map(repr, targets))} {where} lost its lease (it stalled for "
                           f"over a minute and another load took the collection over); {again}")
    for target in targets:
        if uuids.get(target) is not None and _uuid(db, target) != uuids[target]:
            raise DatasetError(f"{target!r} {where} was dropped or replaced while this load wrote it (by a "
                               f"program not using the workbook's helpers); the collection was dropped, so {again}")
        if not safety.is_workbook_collection(db, target):  # the very collection written: is its entry there?
            raise DatasetError(f"{target!r} {where} lost its registry entry while this load wrote it (something "
                               f"else removed it from the workbook's registry); the collection was dropped, so "
                               f"{again}")
        if target in expect and not rename_copies(db):
            stored = db[target].estimated_document_count()
            if stored != expect[target]:
                raise DatasetError(f"{target!r} {where} holds {stored:,} documents where this load wrote "
                                   f"{expect[target]:,}: something else wrote to or dropped it meanwhile (a "
                                   f"program not using the workbook's helpers); the collection was dropped, so "
                                   f"{again}")
