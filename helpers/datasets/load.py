"""``load_dataset``: read, type and check a dataset's documents, then write them all or nothing."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from .. import settings
from . import common
from .catalogue import MOST, check_scale, default_scale
from .catalogue import spec as _spec
from .catalogue import targets as _targets
from .checksums import datasets_dir
from .common import RESTORE, DatasetError
from .reload import sync
from .staging import staged_load

__all__ = ["LoadResult", "load_dataset"]


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_dataset` loaded: documents per collection, the scale and the time taken."""

    dataset: str
    scale: str | int
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """All documents loaded, over every collection."""
        return sum(self.counts.values())

    def __str__(self) -> str:
        parts = ", ".join(f"{name}: {count:,}" for name, count in self.counts.items())
        return f"{self.dataset} ({self.scale}): {parts} documents in {self.seconds:.1f} s"



def _takes_raw(db: Any) -> bool:
    """True if ``db``'s client inserts BSON as it is (pymongo's ``RawBSONDocument``: a real server's
    client); the mock wants dicts."""
    import pymongo

    return isinstance(getattr(db, "client", None), pymongo.MongoClient)


def _check_documents(name: str, source: Any, docs: list[dict[str, Any]]) -> None:
    """What the server would refuse mid-load, refused before the first write: a repeated ``_id``."""
    seen: set[Any] = set()
    for number, doc in enumerate(docs, start=1):
        key = doc.get("_id")
        try:
            if key in seen:
                file = getattr(source, "file", name)
                first = next(i for i, d in enumerate(docs, start=1) if d.get("_id") == key)
                raise DatasetError(f"{datasets_dir() / file}: records {first} and {number} of dataset {name!r} "
                                   f"have the same _id {key!r}; " + RESTORE.format(name=file) + ".")
            seen.add(key)
        except TypeError:  # an unhashable _id (a dict): the server checks it
            pass


def load_dataset(name: str, db: Any, scale: str | int | None = None, *,
                 collection: str | None = None) -> LoadResult:
    """Load dataset ``name`` into ``db``, replacing the collection(s) as a whole.

    ``scale``: "small" (default, or ``WORKBOOK_SCALE``), "full", or the number of parent records.
    ``collection``: another target name (for ``authors_books``, a prefix: ``<prefix>_authors``,
    ``<prefix>_books``). Returns a :class:`LoadResult` with the documents per collection.
    Raises :class:`DatasetError` (and leaves every target as it was) if the input is bad; raises
    one too, and leaves nothing half-loaded, if the collection does not hold what was written when
    the load ends (``staged_load``'s checks). Introduced in notebook 00; each lesson's setup cell calls it.
    """
    spec = _spec(name)
    scale = default_scale() if scale is None else check_scale(scale)
    n = spec.small if scale == "small" else spec.full if scale == "full" else int(scale)
    if spec.generated and n is None:
        n = spec.small
    if spec.generated and n > MOST.get(name, n):
        raise DatasetError(f"{name}: scale {n:,} is more than it generates: at most {MOST[name]:,} "
                           f"{spec.parent} ('full' is {spec.full:,}); nothing was loaded")
    targets = _targets(spec, collection)
    start = time.perf_counter()
    # 1. read, type and check everything before the first write: a bad file changes nothing
    readonly = getattr(spec.source, "readonly", None)  # a data file's documents: inserted, never changed
    produced = readonly(datasets_dir(), n, _takes_raw(db)) if readonly else spec.source(datasets_dir(), n)
    parts = [list(docs) for docs in (produced if len(targets) > 1 else (produced,))]
    if not readonly:  # a data file's _id values were checked unique as it was typed (with_ids)
        for docs in parts:
            _check_documents(name, spec.source, docs)
    counts = {target: 0 for target in targets}
    # 2. write: staged where renaming is free; where it copies, straight into the target, and a
    #    target loaded before is brought to the new contents by writing only what differs
    with staged_load(db, targets, validated=True, keep=True) as staging:
        progress = tqdm(desc=f"loading {name}", unit=" docs", delay=1.0,
                        disable=not settings.progress_bars(), leave=False)
        with progress:
            for target, docs in zip(targets, parts):
                staging.expect[target] = len(docs)  # checked before the load reports success
                if target in staging.kept:
                    counts[target] = sync(staging[target], docs, progress, staging.renew,
                                          lambda target=target: staging.recreate(target))
                    continue
                # a data file's documents were BSON a moment ago (the typed copy): the mock need
                # not encode each again to check it could be (engines.mock.insert_trusted)
                coll = staging[target]
                if readonly and not _takes_raw(db):
                    from engines.mock import insert_trusted

                    def insert(batch: list[Any], coll: Any = coll) -> None:
                        insert_trusted(coll, batch)
                else:
                    def insert(batch: list[Any], coll: Any = coll) -> None:
                        coll.insert_many(batch, ordered=True)
                for i in range(0, len(docs), common.BATCH_SIZE):
                    batch = docs[i:i + common.BATCH_SIZE]
                    insert(batch)
                    counts[target] += len(batch)
                    progress.update(len(batch))
                    staging.renew()
    return LoadResult(name, scale, counts, round(time.perf_counter() - start, 3))
