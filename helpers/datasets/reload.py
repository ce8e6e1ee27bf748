"""The reload by difference: bring a collection loaded before back to a file's documents by writing
only what differs, byte for byte (where dropping and writing again is costly: SecantusDB)."""
from __future__ import annotations

from typing import Any, Callable

from .. import safety
from . import common

__all__ = ["SYNC_MOST_CHANGED", "sync"]

SYNC_MOST_CHANGED = 1_000


def sync(coll: Any, docs: list[Any], progress: Any, renew: Callable[[], None],
         recreate: Callable[[], None] | None = None) -> int:
    """Make ``coll`` hold exactly ``docs`` (unique ``_id`` values), writing only the difference.

    Each stored document is read back as raw BSON and compared byte for byte with the encoding of
    the document it should be (field order, types and values all count; a typed copy's documents
    are BSON already). A document that is not
    one of ``docs`` (changed, or one the learner added) is deleted by ``_id`` (one ``DeleteOne``
    each, in unordered bulk writes), and every document of ``docs`` not found is inserted. If
    more than :data:`SYNC_MOST_CHANGED` stored documents differ, the reading stops and the
    collection is dropped and written again in full instead. Either way it ends holding the same
    documents as a fresh load; only their natural order may differ (re-inserted ones come last),
    as it may on any MongoDB: sort when order matters. Returns ``len(docs)``.
    """
    import bson
    from bson.codec_options import CodecOptions
    from bson.raw_bson import RawBSONDocument
    from pymongo import DeleteOne

    wanted = {getattr(doc, "raw", None) or bson.encode(doc): doc for doc in docs}
    stale: list[Any] = []
    raw = coll.with_options(codec_options=CodecOptions(document_class=RawBSONDocument))
    for n, stored in enumerate(raw.find({}, batch_size=common.BATCH_SIZE * 10), start=1):
        if wanted.pop(stored.raw, None) is None:
            stale.append(stored["_id"])
            if len(stale) > SYNC_MOST_CHANGED:
                break
        if n % common.BATCH_SIZE == 0:
            renew()
    if len(stale) > SYNC_MOST_CHANGED:  # rewrite it all: drop, create, insert in order
        db, name = coll.database, coll.name
        if recreate is not None:  # the caller's own drop and create (a load notes the new collection)
            recreate()
        else:
            safety.fresh_collection(db, name)  # dropped and made anew, recorded by its new UUID
        renew()
        missing = docs
    else:
        progress.update(len(docs) - len(wanted))
        for i in range(0, len(stale), common.BATCH_SIZE):
            coll.bulk_write([DeleteOne({"_id": _id}) for _id in stale[i:i + common.BATCH_SIZE]], ordered=False)
            renew()
        missing = list(wanted.values())
    for i in range(0, len(missing), common.BATCH_SIZE):
        batch = missing[i:i + common.BATCH_SIZE]
        coll.insert_many(batch, ordered=True)
        progress.update(len(batch))
        renew()
    return len(docs)

