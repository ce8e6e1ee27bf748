"""The outlier pattern with its overflow ordered by time: a comment on a flagged post in one write (notebook 02).

The layouts of ``pattern`` number every comment (``commentCount`` is the per-post sequence): one
total order and a count that ``check_post`` accounts for, at the price of the update that takes the
number before every overflowed comment. These layouts order the overflow as "reference everything"
orders its comments, by the time each comment carries (``ts``), and keep no counter. The posts are
the same documents less the counter (at most ``threshold`` comments embedded, and ``hasOverflow``),
in ``posts_by_time``; the overflow is either

* one document per comment, ``{"post_id", "comment"}`` in ``posts_overflow_by_time`` under
  ``(post_id, comment.ts)``: a comment on a flagged post is one insert; or
* buckets, ``{"post_id", "first", "n", "comments": [comment, ...]}`` in
  ``posts_overflow_buckets_by_time``, at most ``bucket_size`` comments each: a comment is one upsert
  into the post's *open* bucket (``n < bucket_size``), found by a partial index that holds the open
  buckets only (the "open index": a key when a bucket opens, removed when it fills), beside the
  page's index ``(post_id, first)``. Two writers that find no open bucket at once each open one;
  both fill up later, so no bucket ever holds more than ``bucket_size``; or
* the same buckets with no open index (``open_index=False``, the layout "time, newest bucket"): the
  upsert takes the post's newest bucket with room, ``sort={"first": -1}`` on the filter
  ``{post_id, n < bucket_size}`` (MongoDB 8.0's ``updateOne`` with ``sort``; pymongo 4.11+), which a
  server answers by walking ``(post_id, first)`` backward and stopping at the first bucket with room.
  The only secondary index is the page's ``(post_id, first)``: a bucket writes 2 index keys when it
  opens (``_id`` and ``(post_id, first)``), none when it fills.

A writer that knows the post is flagged (the page it showed said so; a flag is never unset) writes
the overflow directly (``flagged=True``). Otherwise one update pushes the comment while the post is
not flagged and has room; a post found full is flagged (the overflow collection recorded and
indexed first, as in ``pattern``) and the comment goes to the overflow.

What the layouts give up: ``commentCount`` (a count is the embedded comments plus the overflow's),
the crash check (with no numbers there are no holes: an insert is stored or not), and an order
among comments with the same ``ts``. A page lists the embedded comments in the order the array took
them, then the overflow in ``ts`` order (a flagged post never embeds again).
"""
from __future__ import annotations

from typing import Any, Mapping

from pymongo.errors import OperationFailure

from ..safety import track_collection
from .pattern import (
    _check_bucket_size,
    _check_post_id,
    _check_threshold,
    _checked_arguments,
    _not_found,
    _reraise_unless_too_large,
)

__all__ = ["POSTS_BY_TIME", "OVERFLOW_BY_TIME", "OVERFLOW_BUCKETS_BY_TIME", "ONE_REPLY", "add_comment_by_time",
           "read_post_by_time", "read_post_lookup_by_time", "time_layout", "ensure_time_overflow_index"]

POSTS_BY_TIME = "posts_by_time"
OVERFLOW_BY_TIME = "posts_overflow_by_time"
OVERFLOW_BUCKETS_BY_TIME = "posts_overflow_buckets_by_time"
#: the first batch of an overflow read here: with no counter the reader does not know the overflow's
#: size, so it asks for as much as one reply holds (a server stops a batch at 16 MiB)
ONE_REPLY = 1_000_000


def _overflow_name(bucket_size: int | None) -> str:
    return OVERFLOW_BY_TIME if bucket_size is None else OVERFLOW_BUCKETS_BY_TIME


def ensure_time_overflow_index(db: Any, bucket_size: int | None = None, *, open_index: bool = True) -> None:
    """The indexes of the time-ordered overflow: ``(post_id, comment.ts)`` for one document per
    comment; for buckets of ``bucket_size``, the page's ``(post_id, first)`` and (``open_index``) the
    open index, ``post_id`` over the buckets with room (``n < bucket_size``); with
    ``open_index=False`` (the newest bucket found by ``sort``) the page's index alone. Recorded
    leniently (``track_collection``), as ``pattern.ensure_overflow_index`` is."""
    if _check_bucket_size(bucket_size) is None:
        track_collection(db, OVERFLOW_BY_TIME).create_index([("post_id", 1), ("comment.ts", 1)],
                                                            name="post_id_1_comment.ts_1")
        return
    buckets = track_collection(db, OVERFLOW_BUCKETS_BY_TIME)
    buckets.create_index([("post_id", 1), ("first", 1)], name="post_id_1_first_1")
    if open_index:
        buckets.create_index([("post_id", 1)], name="open_buckets", partialFilterExpression={"n": {"$lt": bucket_size}})


def _store(db: Any, post_id: Any, comment: dict[str, Any], bucket_size: int | None, open_index: bool = True) -> None:
    if bucket_size is None:
        db[OVERFLOW_BY_TIME].insert_one({"post_id": post_id, "comment": comment})
        return
    # a bucket with room: by the open index, or the newest by (post_id, first) walked backward; none: a new one
    newest: dict[str, Any] = {} if open_index else {"sort": {"first": -1}}
    db[OVERFLOW_BUCKETS_BY_TIME].update_one(
        {"post_id": post_id, "n": {"$lt": bucket_size}},
        {"$push": {"comments": {"$each": [comment], "$sort": {"ts": 1}}}, "$inc": {"n": 1},
         "$min": {"first": comment["ts"]}},
        upsert=True, **newest)


def add_comment_by_time(db: Any, post_id: Any, comment: Mapping[str, Any], threshold: int, *,
                        flagged: bool = False, bucket_size: int | None = None, open_index: bool = True) -> bool:
    """Add ``comment`` (which carries its ``ts``) to post ``post_id`` of ``posts_by_time``; True when
    it was embedded. ``flagged=True``: the caller read the post flagged, so the comment goes to the
    overflow in one write (an insert, or one upsert into the open bucket). Otherwise one update
    embeds it while the post is unflagged with room (one round trip); a full post is flagged first
    (the overflow collection recorded and indexed before the flag), then the comment is stored.
    Buckets: ``open_index=True`` finds the open bucket by the open index; ``False`` takes the newest
    bucket with room (``update_one(..., sort={"first": -1})``, MongoDB 8.0+), with no open index."""
    comment, threshold, bucket_size = _checked_arguments(post_id, comment, threshold, bucket_size)
    if "ts" not in comment:
        raise TypeError("comment needs its time, a 'ts' field: the time-ordered overflow reads comments in ts "
                        "order. Nothing was written.")
    posts = db[POSTS_BY_TIME]
    if not flagged:
        full: dict[str, Any] = {f"comments.{threshold - 1}": {"$exists": True}}
        try:
            pushed = posts.update_one({"_id": post_id, "hasOverflow": {"$ne": True},
                                       f"comments.{threshold - 1}": {"$exists": False}},
                                      {"$push": {"comments": comment}, "$set": {"hasOverflow": False}})
            if pushed.matched_count:
                return True
        except OperationFailure as exc:  # the push would grow the post past 16 MiB: overflow instead
            _reraise_unless_too_large(exc, db, post_id, comment, POSTS_BY_TIME)
            full = {}
        if posts.count_documents({"_id": post_id}, limit=1) == 0:
            raise _not_found(db, post_id, POSTS_BY_TIME)
        ensure_time_overflow_index(db, bucket_size, open_index=open_index)   # before the flag: writers that see it may create it
        # the array never shrinks and the flag is never unset: a post that took no push is full or flagged
        posts.update_one({"_id": post_id, "$or": [{"hasOverflow": True}, full]}, {"$set": {"hasOverflow": True}})
    _store(db, post_id, comment, bucket_size, open_index)
    return False


def _entries(bucket_size: int | None) -> list[dict[str, Any]]:
    """The overflow's comments, as ``{"comment"}`` documents in ``ts`` order (a bucket's entries
    sorted together: two buckets opened at once overlap in time)."""
    if bucket_size is None:
        return [{"$sort": {"comment.ts": 1}}, {"$project": {"_id": 0, "comment": 1}}]
    return [{"$unwind": "$comments"}, {"$sort": {"comments.ts": 1}}, {"$project": {"_id": 0, "comment": "$comments"}}]


def read_post_by_time(db: Any, post_id: Any, *, bucket_size: int | None = None) -> dict[str, Any]:
    """The whole post (a page view) with ``comments`` holding all of them: one query, and for a
    flagged post one more on its overflow (first batch: ``ONE_REPLY``)."""
    _check_post_id(post_id)
    bucket_size = _check_bucket_size(bucket_size)
    post = db[POSTS_BY_TIME].find_one({"_id": post_id})
    if post is None:
        raise _not_found(db, post_id, POSTS_BY_TIME)
    if post.get("hasOverflow"):
        if bucket_size is None:
            more = [d["comment"] for d in db[OVERFLOW_BY_TIME].find(
                {"post_id": post_id}, {"_id": 0, "comment": 1}, batch_size=ONE_REPLY).sort("comment.ts", 1)]
        else:
            more = sorted((c for b in db[OVERFLOW_BUCKETS_BY_TIME].find({"post_id": post_id}, {"_id": 0, "comments": 1},
                                                                       batch_size=ONE_REPLY)
                           for c in b.get("comments", [])), key=lambda c: c["ts"])
        post["comments"] = list(post.get("comments") or []) + more
    return post


def read_post_lookup_by_time(db: Any, post_id: Any, *, bucket_size: int | None = None) -> dict[str, Any]:
    """The same page in one round trip: one ``aggregate``, the post and by ``$lookup`` on the
    overflow's ``post_id`` its comments in ``ts`` order, unwrapped on the server (one array)."""
    _check_post_id(post_id)
    bucket_size = _check_bucket_size(bucket_size)
    pages = db[POSTS_BY_TIME].aggregate([
        {"$match": {"_id": post_id}},
        {"$lookup": {"from": _overflow_name(bucket_size), "localField": "_id", "foreignField": "post_id",
                     "pipeline": _entries(bucket_size), "as": "overflow"}},
        {"$set": {"comments": {"$concatArrays": [{"$ifNull": ["$comments", []]},
                                                 {"$map": {"input": "$overflow", "as": "e", "in": "$$e.comment"}}]}}},
        {"$project": {"overflow": 0}},
    ], batchSize=2)  # one document at most: with room for two, the first reply says it is the last
    post = next(iter(pages), None)
    if post is None:
        raise _not_found(db, post_id, POSTS_BY_TIME)
    return post


def time_layout(post: Mapping[str, Any], threshold: int, *,
                bucket_size: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The documents :func:`add_comment_by_time` would produce for ``post`` (its ``comments`` in the
    order they arrived, each with its ``ts``), added one by one to the post without comments:
    ``(post document, overflow documents)``. For bulk loading."""
    threshold = _check_threshold(threshold)
    bucket_size = _check_bucket_size(bucket_size)
    if "_id" not in post:
        raise ValueError("post has no _id: give every post an _id before laying it out")
    comments = list(post.get("comments") or [])
    doc = {k: v for k, v in post.items() if k not in ("comments", "commentCount", "hasOverflow")}
    doc["comments"], doc["hasOverflow"] = comments[:threshold], len(comments) > threshold
    rest = comments[threshold:]
    if bucket_size is None:
        return doc, [{"post_id": post["_id"], "comment": c} for c in rest]
    chunks = [rest[i:i + bucket_size] for i in range(0, len(rest), bucket_size)]
    return doc, [{"post_id": post["_id"], "comments": sorted(chunk, key=lambda c: c["ts"]), "n": len(chunk),
                  "first": min(c["ts"] for c in chunk)} for chunk in chunks]
