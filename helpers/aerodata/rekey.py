"""Re-keying an aircraft to another airline, and where writes land on shards (notebook 04)."""
from __future__ import annotations

import bisect
import hashlib
from typing import Any, Callable, Iterable, Mapping, Sequence

from pymongo import DeleteMany, DeleteOne
from pymongo.errors import BulkWriteError

from ..safety import track_collection
from ..writes import only_duplicates
from .keys import (
    COLLECTION,
    NO_AIRLINE,
    QUERY_BATCH,
    REPORT,
    _airline_doc,
    airline_table,
    make_id,
    parse_id,
    prefix_bounds,
)

_DELETE_LIST = 200  # ids per delete statement (see _rekey_round)


def _rekey_round(coll: Any, old: str, new_airline: str, session: Any = None,
                 during_move: Callable[[], Any] | None = None,
                 parent: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """One round of :func:`rekey_aircraft`: copy what is under ``old`` now, then delete exactly those ids.

    ``parent``: the new airline's document, created in this round if it does not exist yet (first round).
    """
    lo, hi = prefix_bounds(old + "_")  # its reports: one range of the {recordType, _id} index (fast everywhere)
    aircraft_doc = coll.find_one({"_id": old}, session=session)
    reports = list(coll.find({"recordType": REPORT, "_id": {"$gte": lo, "$lt": hi}}, sort=[("_id", 1)],
                             batch_size=QUERY_BATCH, session=session))
    docs = ([aircraft_doc] if aircraft_doc else []) + reports
    if not docs:
        return 0, 0
    if parent is not None:  # the new airline, unless it is there already
        coll.update_one({"_id": parent["_id"]}, {"$setOnInsert": {k: v for k, v in parent.items() if k != "_id"}},
                        upsert=True, session=session)
    copies = []
    for d in docs:
        parts = parse_id(d["_id"])
        copies.append({**d, "_id": make_id(new_airline, parts.icao24, parts.seq), "airline": new_airline})
    try:  # unordered: a copy left by a crashed earlier run is refused (11000) and counts as copied
        coll.insert_many(copies, ordered=False, session=session)
    except BulkWriteError as e:
        if not only_duplicates(e):
            raise
    if during_move is not None:
        during_move()
    # exactly the ids copied, in one delete command of lists of _DELETE_LIST ids (an _id lookup each;
    # short lists, because an engine may test each document against the list id by id). The airline
    # and icao24 conditions change nothing on a server; an engine without indexes uses them to skip
    # the other aircraft's documents before the list. A document stored without them goes by _id alone.
    parts = parse_id(old)
    usual = {"airline": parts.airline, "icao24": parts.icao24}
    ids = [d["_id"] for d in docs if all(d.get(k) == v for k, v in usual.items())]
    deletes = [DeleteMany({**usual, "_id": {"$in": ids[i:i + _DELETE_LIST]}}) for i in range(0, len(ids), _DELETE_LIST)]
    deletes += [DeleteOne({"_id": d["_id"]}) for d in docs if any(d.get(k) != v for k, v in usual.items())]
    deleted = coll.bulk_write(deletes, ordered=False, session=session).deleted_count
    return len(copies), deleted


def rekey_aircraft(db: Any, old_airline: str, icao24: str, new_airline: str, *,
                   collection: str = COLLECTION, transaction: bool = False,
                   during_move: Callable[[], Any] | None = None) -> dict[str, int]:
    """Move an aircraft and all its reports to another airline's key space, losing nothing.

    ``_id`` is immutable, so every document is copied under its new key and the old one deleted: the
    cost grows with the aircraft's history. Safe against the two failures of "insert all, then delete
    the old range": the delete names exactly the ids copied (a report that arrives during the move is
    never deleted uncopied: the next round moves it), and re-running after a crash finishes the move
    without duplicates. ``transaction=True`` (where the backend has transactions) runs each round in one
    transaction: no reader sees a round half done (before the commit only the old keys exist, after it
    only the new ones), and a crash leaves the old keys alone. The new airline's document is created in
    the first round, only once there is something to move. ``during_move``: called once between the first copy and its delete (a
    stand-in for another writer, used by notebook 04 and the tests). Returns the documents copied and
    deleted and the rounds it took. Introduced in notebook 04.
    """
    coll = track_collection(db, collection)
    old = make_id(old_airline, icao24)
    if new_airline not in (NO_AIRLINE,) and new_airline not in airline_table():
        raise ValueError(f"rekey_aircraft: new_airline={new_airline!r} is not in the OpenFlights table")
    totals = {"inserted": 0, "deleted": 0, "rounds": 0}
    hook, parent = during_move, _airline_doc(new_airline)
    while True:
        if transaction:
            with db.client.start_session() as session:
                copied, deleted = session.with_transaction(
                    lambda s, h=hook, p=parent: _rekey_round(coll, old, new_airline, s, h, p))
        else:
            copied, deleted = _rekey_round(coll, old, new_airline, None, hook, parent)
        if not copied:
            if totals["rounds"] == 0:  # nothing was written
                raise ValueError(f"rekey_aircraft: no aircraft {old!r} in {collection!r}; "
                                 f"check the airline and icao24")
            return totals
        hook = parent = None
        totals["inserted"] += copied
        totals["deleted"] += deleted
        totals["rounds"] += 1
        if totals["rounds"] > 100:  # a writer that keeps filing reports under the old key
            raise RuntimeError(f"rekey_aircraft: reports keep arriving under {old!r}; route new reports to "
                               f"{new_airline!r} first, then run rekey_aircraft again")



def _hash64(key: str) -> int:
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:8], "big")


def shard_writes(existing_keys: Sequence[Any], new_keys: Iterable[Any], shards: int, how: str = "range") -> list[int]:
    """Simulate where new writes land when a key space is split over ``shards`` shards.

    ``how="range"``: chunks split at the quantiles of ``existing_keys`` (what a balanced cluster had
    when the new keys arrive); a key past the last split point goes to the last shard.
    ``how="hash"``: shard = 64 bits of the key's md5 (a stand-in for MongoDB's hashed index) mod
    ``shards``. Returns the number of ``new_keys`` per shard. A model, not a cluster.
    """
    if not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shard_writes: shards={shards!r} must be a positive integer")
    counts = [0] * shards
    if how == "hash":
        for key in new_keys:
            counts[_hash64(str(key)) % shards] += 1
        return counts
    if how != "range":
        raise ValueError(f"shard_writes: how={how!r} must be 'range' or 'hash'")
    ordered = sorted(existing_keys)
    if not ordered:
        raise ValueError("shard_writes: existing_keys is empty; range chunks are split at existing keys")
    splits = [ordered[i * len(ordered) // shards] for i in range(1, shards)]
    for key in new_keys:
        counts[bisect.bisect_right(splits, key)] += 1
    return counts


