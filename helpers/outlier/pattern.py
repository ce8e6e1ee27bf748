"""The outlier pattern: embed comments up to a threshold, overflow the rest (notebook 02).

Most posts have a handful of comments; a viral few have tens of thousands. Embedding everything
makes those few documents huge (towards MongoDB's 16 MiB limit), and every read of them makes the
server load the whole document; referencing everything makes every page join every comment
document. The outlier pattern keeps the common case one small document and pays only for the outliers:

* a post in ``posts`` embeds at most ``threshold`` comments in ``comments``;
* past the threshold the post gets ``hasOverflow: true`` and each further comment goes to
  ``posts_overflow`` as ``{"_id": {"post_id", "seq"}, "post_id", "seq", "comment"}``;
* ``commentCount`` on the post is the per-post sequence: the embedded comment at index ``i`` has
  sequence number ``i + 1``, an overflowed one carries its own ``seq``, so embedded and overflowed
  comments form one total order (embedded first, because a flagged post never embeds again).

The write path is safe under concurrency without transactions. Every comment starts with one
atomic single-document update, an update pipeline, whose filter admits a flagged post or one with
room (``comments.<t-1>`` must not exist): it increments ``commentCount`` (the comment's number) and
appends the comment to the array only if the post is not flagged. So an embedded comment is one
round trip, and an overflowed one two: that update, then the insert under the number it returned.
A writer that finds the array full on a post not yet flagged (no match: once per post, or a few
times when writers meet at the boundary) records and indexes the overflow collection, then sets
the flag and takes the next number in one more atomic update (``$inc`` plus ``$set``), filtered on
the full array and the missing flag. So two writers can neither push past the threshold nor lose
or duplicate a comment. The flag is set *before* any overflow document of the post is written, so a
reader that sees ``hasOverflow: false`` never misses an acknowledged comment. A push that the server
refuses because the post would pass 16 MiB takes the overflow path too (an engine that does not
enforce the limit, the mock, accepts it).

A writer that dies between reserving a sequence number and storing the comment leaves a *hole*:
``commentCount`` counts a number that no document holds. Nothing acknowledged is lost (that
comment was never acknowledged) and readers are unaffected (they read the documents that exist,
in ``seq`` order). :func:`check_post` finds holes; :func:`repair_post` fills each with a *lost*
marker (``{"lost": true}``, no comment), after which every number up to ``commentCount`` is
accounted for: ``commentCount`` = embedded + overflowed + lost. Readers skip the markers. Repair
is safe while writers run: a slow writer whose number was marked lost gets a duplicate-key error
on its insert, sees the marker and takes a new number, so its comment is stored exactly once.

Two layouts of the overflow, compared in notebook 02. The default keeps one document per
overflowed comment in ``posts_overflow``. With ``bucket_size=B`` the overflow is *bucketed*
(the bucket pattern applied to the overflow): ``posts_overflow_buckets`` holds one document per
post and block of ``B`` sequence numbers, ``{"post_id", "bucket", "comments": [{"seq", "comment"},
...]}`` under a unique ``(post_id, bucket)`` index, where bucket ``k`` holds the numbers
``k*B+1 .. (k+1)*B``, so no bucket ever holds more than ``B`` entries. A comment is stored by one upsert whose filter
says its number is not there yet (``comments.seq: {$ne: seq}``) and whose ``$push`` keeps the
entries sorted by ``seq``; a lost marker is an entry ``{"seq", "lost": true}``. Every function that
reads or writes the overflow takes the same ``bucket_size`` (``None``: one document per comment);
use one layout per post.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Callable, Iterable, NamedTuple

import bson
from bson.errors import InvalidDocument
from bson.regex import Regex
from pymongo import ReturnDocument
from pymongo.errors import (
    AutoReconnect,
    DocumentTooLarge,
    DuplicateKeyError,
    NetworkTimeout,
    OperationFailure,
)

from ..datasets import staged_load
from ..safety import track_collection
from ..sizes import MAX_BSON_SIZE

__all__ = ["POSTS", "OVERFLOW", "OVERFLOW_BUCKETS", "BUCKET_SIZE", "PostNotFoundError", "Added", "add_comment", "PostState", "WriterCrashed", "simulated_crash", "check_post", "repair_post", "read_comments", "read_post", "read_post_lookup", "newest_comments_reference", "ensure_overflow_index", "outlier_layout", "load_outlier_posts", "comment_count_stats", "OUTLIER_FACTOR"]

POSTS = "posts"
OVERFLOW = "posts_overflow"
#: the bucketed overflow layout's collection, and its default block of sequence numbers per document
OVERFLOW_BUCKETS = "posts_overflow_buckets"
BUCKET_SIZE = 100
#: the lesson's rule: if 99% of posts have fewer than 100 comments, over 1,000 is an outlier
OUTLIER_FACTOR = 10
# the server's "document would grow past 16 MiB" errors (MongoDB and SecantusDB use these codes)
_TOO_LARGE_CODES = {10334, 17419, 17420}


class PostNotFoundError(LookupError):
    """``add_comment`` or ``read_comments`` was given the ``_id`` of a post that does not exist."""


class Added(NamedTuple):
    """Where ``add_comment`` put a comment: its sequence number and whether it was embedded."""

    seq: int
    embedded: bool


def _check_threshold(threshold: Any) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError(
            f"threshold must be a positive whole number (the most comments a post embeds), got "
            f"{threshold!r}. Pick one from the comment-count percentiles (notebook 02, section 2.2), "
            f"e.g. threshold=100.")
    return threshold


def _overflow_doc(post_id: Any, seq: int, comment: Any) -> dict[str, Any]:
    return {"_id": {"post_id": post_id, "seq": seq}, "post_id": post_id, "seq": seq, "comment": comment}


def _lost_doc(post_id: Any, seq: int) -> dict[str, Any]:
    return {"_id": {"post_id": post_id, "seq": seq}, "post_id": post_id, "seq": seq, "lost": True}


def _check_bucket_size(bucket_size: Any) -> int | None:
    if bucket_size is None:
        return None
    if isinstance(bucket_size, bool) or not isinstance(bucket_size, int) or bucket_size < 1:
        raise ValueError(f"bucket_size must be a positive whole number (comments per overflow document), or "
                         f"None for one document per comment; got {bucket_size!r}. Nothing was read or written.")
    return bucket_size


def _overflow_name(bucket_size: int | None) -> str:
    return OVERFLOW if bucket_size is None else OVERFLOW_BUCKETS


def _bucket_id(post_id: Any, seq: int, bucket_size: int) -> dict[str, Any]:
    return {"post_id": post_id, "bucket": (seq - 1) // bucket_size}


def _bucket_docs(post_id: Any, entries: list[dict[str, Any]], bucket_size: int) -> list[dict[str, Any]]:
    """Bucket documents holding ``entries`` (``{"seq", "comment"}``, in ``seq`` order)."""
    docs: dict[int, dict[str, Any]] = {}
    for e in entries:
        bid = _bucket_id(post_id, e["seq"], bucket_size)
        doc = docs.setdefault(bid["bucket"], {**bid, "comments": []})
        doc["comments"].append(e)
    return list(docs.values())


def _store_in_bucket(db: Any, post_id: Any, entry: dict[str, Any], bucket_size: int) -> str:
    """Put ``entry`` (a comment or a lost marker) into its bucket, unless its number is there.

    One upsert: ``"stored"``; or what holds the number already: ``"lost"`` (a marker) or
    ``"taken"`` (a comment: this writer's own on a retry, or a bug). Concurrent upserts of a new
    bucket meet the unique ``(post_id, bucket)`` index: the loser retries, and its update then
    matches the bucket.
    """
    seq = entry["seq"]
    bid = _bucket_id(post_id, seq, bucket_size)
    buckets = db[OVERFLOW_BUCKETS]
    for attempt in range(5):
        try:
            buckets.update_one({**bid, "comments.seq": {"$ne": seq}},   # upserted: post_id and bucket
                               {"$push": {"comments": {"$each": [entry], "$sort": {"seq": 1}}}},
                               upsert=True)
            return "stored"
        except DuplicateKeyError:
            there = buckets.find_one(bid, {"_id": 0, "comments": 1})
            held = [e for e in (there or {}).get("comments", []) if e.get("seq") == seq]
            if held:
                return "lost" if held[0].get("lost") is True else "taken"
            # the bucket was created by another writer between our filter and our insert: retry
        except (AutoReconnect, NetworkTimeout):
            if attempt == 4:
                raise
    raise RuntimeError(f"post {post_id!r}: bucket {bid['bucket']} kept changing under concurrent writers; "
                       f"number {seq} is reserved but not stored (check_post reports it as a hole)")


#: test hook: called as ``_AFTER_RESERVE(post_id, seq)`` after a sequence number is reserved and
#: before the comment is stored (tests/test_outlier.py pauses a writer process here and kills it); set
#: it on this module, ``helpers.outlier.pattern`` (the lesson's face re-exports the functions, not the hook)
_AFTER_RESERVE: Callable[[Any, int], None] | None = None


class WriterCrashed(RuntimeError):
    """Raised inside :func:`simulated_crash`: the writer stopped after reserving, before storing."""


@contextmanager
def simulated_crash() -> Iterator[None]:
    """Inside this block, :func:`add_comment` stops dead right after reserving a sequence number for
    an overflowed comment, as a writer process killed at that moment would: nothing more is written,
    and it raises :class:`WriterCrashed`. For the lesson and its checks; ``tests/test_outlier.py``
    kills a real writer process (SIGKILL) at the same point. Notebook 02, section 3.
    """
    global _AFTER_RESERVE
    previous = _AFTER_RESERVE

    def die(post_id: Any, seq: int) -> None:
        raise WriterCrashed(f"the writer died after reserving number {seq} of post {post_id!r}, "
                            f"before storing its comment")

    _AFTER_RESERVE = die
    try:
        yield
    finally:
        _AFTER_RESERVE = previous


def _check_comment(post_id: Any, comment: Any, bucket_size: int | None = None) -> None:
    if not isinstance(comment, Mapping):
        raise TypeError(f"comment must be a document (a dict such as {{'author': 'ada', 'text': 'hi'}}), "
                        f"got {type(comment).__name__}: {comment!r:.80}")
    try:
        bson.encode({"comment": comment})
    except (InvalidDocument, TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"comment cannot be stored as BSON ({exc}); use plain dicts, lists, strings, "
                        f"numbers, booleans, None and datetimes") from None
    try:
        alone = len(bson.encode(_overflow_doc(post_id, 2**62, comment)))
    except (InvalidDocument, TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"post_id {post_id!r} cannot be stored as BSON ({exc}); use the post's _id") from None
    if alone > MAX_BSON_SIZE:
        raise DocumentTooLarge(
            f"comment is too large: stored on its own it makes a {alone:,}-byte document, over "
            f"MongoDB's {MAX_BSON_SIZE:,}-byte limit (16 MiB). Nothing was written. Shorten the "
            f"comment, or keep its large part (an attachment) in GridFS and store a reference.")
    if bucket_size is not None:
        # the cap is the guard: a full bucket of comments this large must still fit in 16 MiB
        entry = len(bson.encode({"0": {"seq": 2**62, "comment": comment}})) - 5 + 8  # + the array index key
        bucket = len(bson.encode({"_id": {"post_id": post_id, "bucket": 2**62}, "post_id": post_id,
                                  "bucket": 2**62, "comments": []}))
        if bucket + bucket_size * entry > MAX_BSON_SIZE:
            raise DocumentTooLarge(
                f"comment is too large for buckets of {bucket_size}: {bucket_size} comments of this size "
                f"({entry:,} bytes each as a bucket entry) would make a bucket over MongoDB's "
                f"{MAX_BSON_SIZE:,}-byte limit (16 MiB). Nothing was written. Shorten the comment, keep its "
                f"large part in GridFS, or use smaller buckets.")


def _check_post_id(post_id: Any) -> Any:
    """Refuse a query operator where a post's ``_id`` goes: ``{"$gt": 0}`` would match some post and
    write into it."""
    if isinstance(post_id, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in post_id):
        raise TypeError(f"post_id={post_id!r} is a query operator, not a post's _id; pass the _id value "
                        f"itself (e.g. 17). Nothing was read or written.")
    if isinstance(post_id, (re.Pattern, Regex)):  # in a filter a regex matches any post whose _id fits
        raise TypeError(f"post_id={post_id!r} is a regular expression, not a post's _id; pass the _id value "
                        f"itself (e.g. 17). Nothing was read or written.")
    return post_id


def _not_found(db: Any, post_id: Any, posts: str = POSTS) -> PostNotFoundError:
    return PostNotFoundError(
        f"no post with _id={post_id!r} in collection {posts!r} of database {db.name!r}; nothing was "
        f"written. Insert the post first (db.{posts}.insert_one({{'_id': {post_id!r}, ...}})) or "
        f"check post_id.")


def _start_counter(db: Any, post_id: Any) -> None:
    """First use of a post: ``commentCount`` = comments already embedded, ``hasOverflow`` false.

    One atomic pipeline update, so comments embedded before the workbook's first call keep
    their place at the front of the order. Raises if the post is missing or cannot be used.
    """
    posts = db[POSTS]
    # look first (an aggregation never creates a collection; some engines create one on update)
    state = list(posts.aggregate([
        {"$match": {"_id": post_id}},
        {"$project": {"_id": 0, "counter": {"$ifNull": ["$commentCount", None]},
                      "flag": {"$ifNull": ["$hasOverflow", False]},
                      "array": {"$or": [{"$isArray": "$comments"}, {"$eq": [{"$type": "$comments"}, "missing"]}]}}},
    ]))
    if not state:
        raise _not_found(db, post_id)
    s = state[0]
    if s["counter"] is not None:
        return  # another writer started the counter first: fine
    if not s["array"]:
        raise TypeError(f"post {post_id!r} has a 'comments' field that is not an array; the outlier "
                        f"pattern needs an array there. Nothing was written. Fix the document or use "
                        f"another post.")
    if s["flag"] is True:
        raise ValueError(f"post {post_id!r} has hasOverflow: true but no commentCount, so it was not "
                         f"written by helpers.outlier and its comment order is unknown. Nothing was "
                         f"written. Rebuild it with helpers.outlier.load_outlier_posts.")
    # the filter repeats the checks, so a concurrent change makes this a no-op, never a wrong count
    posts.update_one(
        {"_id": post_id, "commentCount": {"$exists": False}, "hasOverflow": {"$ne": True},
         "$or": [{"comments": {"$exists": False}}, {"comments": {"$type": "array"}}]},
        [{"$set": {"comments": {"$ifNull": ["$comments", []]},
                   "commentCount": {"$size": {"$ifNull": ["$comments", []]}},
                   "hasOverflow": False}}],
    )


def _would_pass_limit(db: Any, post_id: Any, comment: Any, posts: str = POSTS) -> bool:
    """Would pushing ``comment`` make the post larger than 16 MiB? Asked of the server (``$bsonSize``).

    Only called after a failed push whose error code does not say (SecantusDB reports this case
    from ``findAndModify`` as a generic internal error).
    """
    try:
        rows = list(db[posts].aggregate([{"$match": {"_id": post_id}},
                                         {"$project": {"_id": 0, "size": {"$bsonSize": "$$ROOT"}}}]))
    except (OperationFailure, NotImplementedError):
        return False
    # a pushed element costs its own encoding plus a type byte and its index as a key
    return bool(rows) and rows[0]["size"] + len(bson.encode({"comment": comment})) > MAX_BSON_SIZE


def ensure_overflow_index(db: Any, bucket_size: int | None = None) -> None:
    """The index the read path uses: ``posts_overflow`` by ``(post_id, seq)``, or, for the bucketed
    layout, ``posts_overflow_buckets`` by ``(post_id, bucket)``.

    Recorded leniently (``track_collection``): concurrent writers may insert the first overflow
    documents before the writer that flagged the post has recorded the collection.
    """
    if _check_bucket_size(bucket_size) is None:
        track_collection(db, OVERFLOW).create_index([("post_id", 1), ("seq", 1)], name="post_id_1_seq_1")
    else:
        track_collection(db, OVERFLOW_BUCKETS).create_index([("post_id", 1), ("bucket", 1)],
                                                            name="post_id_1_bucket_1", unique=True)


def _insert_overflow(db: Any, doc: dict[str, Any]) -> bool:
    """Insert one overflow document. True when stored; False when :func:`repair_post` marked its
    number lost first (the caller takes a new number). A retry after a network error is idempotent
    (same ``_id``: a duplicate holding our own comment means the first attempt got through)."""
    for attempt in range(3):
        try:
            db[OVERFLOW].insert_one(doc)
            return True
        except DuplicateKeyError:
            there = db[OVERFLOW].find_one({"_id": doc["_id"]})
            if there is not None and there.get("lost") is True:
                return False
            if there is not None and attempt and there.get("comment") == doc["comment"]:
                return True
            raise
        except (AutoReconnect, NetworkTimeout):
            if attempt == 2:
                raise
    return False  # pragma: no cover


def _checked_arguments(post_id: Any, comment: Any, threshold: Any,
                       bucket_size: Any) -> tuple[dict[str, Any], int, int | None]:
    """:func:`add_comment`'s arguments checked before anything is written (``TypeError``,
    ``ValueError``, ``DocumentTooLarge``): the comment as a plain dict, the threshold, the bucket size."""
    _check_post_id(post_id)
    threshold = _check_threshold(threshold)
    bucket_size = _check_bucket_size(bucket_size)
    _check_comment(post_id, comment, bucket_size)
    comment = dict(comment)
    return comment, threshold, bucket_size


def _reraise_unless_too_large(exc: OperationFailure, db: Any, post_id: Any, comment: Any,
                              posts: str = POSTS) -> None:
    """Raise ``exc`` again unless it is the server refusing a push that would grow the post past
    16 MiB: said by its error code, or (SecantusDB, whose code does not say) asked of the server,
    of the post in collection ``posts``."""
    if exc.code not in _TOO_LARGE_CODES and not _would_pass_limit(db, post_id, comment, posts):
        raise exc


def _record_overflow_before_flagging(db: Any, post_id: Any, full: dict[str, Any],
                                     bucket_size: int | None) -> bool:
    """About to flag the post? Then record (and index) the overflow collection first: the writers
    that see the flag may create the collection, and it must already be the workbook's.

    False, with nothing written, when this writer may not flag the post: not started yet, or flagged
    meanwhile (``full``: the filter that says its array is full; empty after a push the 16 MiB
    limit refused).
    """
    if db[POSTS].count_documents({"_id": post_id, "commentCount": {"$exists": True},
                                  "hasOverflow": {"$ne": True}, **full}, limit=1) == 0:
        return False
    ensure_overflow_index(db, bucket_size)
    return True


def _reserved_number(post_id: Any, after: Mapping[str, Any]) -> int:
    """The sequence number the reserving update took (``after`` is the post it returned); then, at
    once, the test hook ``_AFTER_RESERVE`` (the point where a writer that dies leaves a hole)."""
    seq = int(after["commentCount"])
    if _AFTER_RESERVE is not None:
        _AFTER_RESERVE(post_id, seq)
    return seq


def _store_comment_in_bucket(db: Any, post_id: Any, seq: int, comment: dict[str, Any],
                             bucket_size: int) -> bool:
    """Store overflowed comment number ``seq`` in its bucket. True when stored (or already there:
    this writer's own on a retry); False when :func:`repair_post` marked the number lost first.

    Raises ``RuntimeError`` if the number holds another comment (the post was written with another
    ``bucket_size``).
    """
    outcome = _store_in_bucket(db, post_id, {"seq": seq, "comment": comment}, bucket_size)
    if outcome == "taken":
        there = db[OVERFLOW_BUCKETS].find_one(_bucket_id(post_id, seq, bucket_size))
        if not any(e.get("seq") == seq and e.get("comment") == comment
                   for e in (there or {}).get("comments", [])):
            raise RuntimeError(f"post {post_id!r}: number {seq} already holds another comment; "
                               f"was this post written with another bucket_size?")
    return outcome != "lost"


def _flag_and_reserve(db: Any, post_id: Any, threshold: int, too_large: bool,
                      bucket_size: int | None) -> Mapping[str, Any] | None:
    """The first overflow of a post, once per post: record and index the overflow collection, then
    set ``hasOverflow`` and take the next number in one atomic update (filtered on a full array, or
    on nothing more after a push the 16 MiB limit refused). ``None``, with nothing written, when
    this writer may not flag the post: not started yet, or flagged meanwhile by another writer."""
    full = {} if too_large else {f"comments.{threshold - 1}": {"$exists": True}}
    if not _record_overflow_before_flagging(db, post_id, full, bucket_size):
        return None
    return db[POSTS].find_one_and_update(
        {"_id": post_id, "commentCount": {"$exists": True}, "hasOverflow": {"$ne": True}, **full},
        {"$inc": {"commentCount": 1}, "$set": {"hasOverflow": True}},
        projection={"_id": 0, "commentCount": 1, "hasOverflow": 1}, return_document=ReturnDocument.AFTER)


def add_comment(db: Any, post_id: Any, comment: Mapping[str, Any], threshold: int, *,
                bucket_size: int | None = None) -> Added:
    """Add ``comment`` to post ``post_id``: embedded while the post has fewer than ``threshold``.

    Past the threshold the post is flagged ``hasOverflow: true`` and the comment is stored in
    ``posts_overflow`` under ``(post_id, seq)``. Safe for concurrent writers (see the module
    docstring). An embedded comment is one round trip (one ``findAndModify``); an overflowed one
    is two: the same ``findAndModify``, which takes its sequence number, then the insert. Once per
    post, the first comment (starting the sequence) and the first overflow (recording and indexing
    ``posts_overflow``, then setting the flag) cost a few more. Returns ``Added(seq, embedded)``:
    the comment's place in the post's order.

    Raises ``ValueError`` for a threshold below 1, ``TypeError`` for a comment that is not a
    document, ``DocumentTooLarge`` for a comment over 16 MiB on its own and
    ``PostNotFoundError`` for a missing post; in every case nothing is written.
    ``bucket_size``: store the overflow in buckets of that many numbers (one upsert instead of
    one insert, the same round trips; a comment must then be small enough that a full bucket fits
    in 16 MiB). Introduced in notebook 02 (the outlier pattern).
    """
    comment, threshold, bucket_size = _checked_arguments(post_id, comment, threshold, bucket_size)
    posts = db[POSTS]
    for _ in range(5):  # more rounds only after starting a fresh post's counter, a race, or a lost number
        # 1. one atomic update (an update pipeline) on a flagged post or one with room: the next
        #    number always, and the comment appended to the array only while the post is not flagged
        try:
            after = posts.find_one_and_update(
                {"_id": post_id, "commentCount": {"$exists": True},
                 "$or": [{"hasOverflow": True}, {f"comments.{threshold - 1}": {"$exists": False}}]},
                [{"$set": {"commentCount": {"$add": ["$commentCount", 1]},
                           "comments": {"$cond": [{"$eq": ["$hasOverflow", True]}, "$comments",
                                                  {"$concatArrays": [{"$ifNull": ["$comments", []]},
                                                                     [{"$literal": comment}]]}]}}}],
                projection={"_id": 0, "commentCount": 1, "hasOverflow": 1},
                return_document=ReturnDocument.AFTER,
            )
            too_large = False
        except OperationFailure as exc:  # the push would grow the post past 16 MiB: overflow instead
            _reraise_unless_too_large(exc, db, post_id, comment)
            after, too_large = None, True
        if after is not None and after.get("hasOverflow") is not True:
            return Added(int(after["commentCount"]), True)
        if after is None:  # the array is full and the post not yet flagged (once per post), or not started
            after = _flag_and_reserve(db, post_id, threshold, too_large, bucket_size)
            if after is None:  # not started (PostNotFoundError if there is no such post), or flagged meanwhile
                _start_counter(db, post_id)
                continue
        # 2. the flag is set and the number taken: store the comment in the overflow under it
        seq = _reserved_number(post_id, after)
        if bucket_size is None:
            stored = _insert_overflow(db, _overflow_doc(post_id, seq, comment))
        else:
            stored = _store_comment_in_bucket(db, post_id, seq, comment, bucket_size)
        if stored:
            return Added(seq, False)
        # repair_post marked this number lost meanwhile: take a new one
    raise RuntimeError(f"post {post_id!r}: the comment could not be placed after 5 tries (the post "
                       f"keeps changing under concurrent writers); nothing was written, try again")


def _overflow_batch(post: Mapping[str, Any]) -> int:
    """A first batch that holds a flagged post's whole overflow (its numbers past the embedded ones,
    and one more, so the reply can say that it is the last): one round trip, no ``getMore``."""
    return max(1, int(post.get("commentCount") or 0) - len(post.get("comments") or [])) + 1


def _overflow_comments(db: Any, post: Mapping[str, Any], post_id: Any, bucket_size: int | None = None) -> list[Any]:
    # lost markers are skipped here, not in the filter: they are rare, and the query stays the
    # overflow index's own equality and order
    batch = _overflow_batch(post)
    if bucket_size is not None:
        buckets = db[OVERFLOW_BUCKETS].find({"post_id": post_id},  # the entries' seq stays on the server
                                            {"_id": 0, "comments.comment": 1, "comments.lost": 1},
                                            batch_size=batch).sort("bucket", 1)
        return [e["comment"] for b in buckets for e in b.get("comments", []) if e.get("lost") is not True]
    cursor = db[OVERFLOW].find({"post_id": post_id}, {"_id": 0, "comment": 1, "lost": 1},
                               batch_size=batch).sort("seq", 1)
    return [d["comment"] for d in cursor if d.get("lost") is not True]


class PostState(NamedTuple):
    """What :func:`check_post` found: how each number of a post's sequence is accounted for."""

    comment_count: int  # the post's commentCount: sequence numbers handed out
    embedded: int
    overflowed: int  # overflow documents holding a comment
    lost: list[int]  # numbers marked lost by repair_post
    holes: list[int]  # numbers handed out that no document holds (a writer died, or is still writing)

    @property
    def comments(self) -> int:
        """The comments a reader gets."""
        return self.embedded + self.overflowed

    @property
    def consistent(self) -> bool:
        """Every number up to ``commentCount`` is an embedded comment, an overflowed one or lost."""
        return not self.holes and self.comment_count == self.embedded + self.overflowed + len(self.lost)


def check_post(db: Any, post_id: Any, *, bucket_size: int | None = None) -> PostState:
    """Account for every sequence number of post ``post_id`` (two queries). Notebook 02, section 3.

    A hole right after a crash is harmless to readers; :func:`repair_post` fills it.
    """
    bucket_size = _check_bucket_size(bucket_size)
    post = db[POSTS].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "commentCount": 1})
    if post is None:
        raise _not_found(db, post_id)
    count = int(post.get("commentCount", len(post.get("comments") or [])))
    embedded = len(post.get("comments") or [])
    seen: dict[int, bool] = {}  # seq -> lost?
    if bucket_size is None:
        for d in db[OVERFLOW].find({"post_id": post_id}, {"_id": 0, "seq": 1, "lost": 1}):
            seen[int(d["seq"])] = d.get("lost") is True
    else:
        for b in db[OVERFLOW_BUCKETS].find({"post_id": post_id}, {"_id": 0, "comments.seq": 1, "comments.lost": 1}):
            for e in b.get("comments", []):
                seen[int(e["seq"])] = e.get("lost") is True
    holes = [q for q in range(embedded + 1, count + 1) if q not in seen]
    return PostState(count, embedded, sum(not lost for lost in seen.values()),
                     sorted(q for q, lost in seen.items() if lost), holes)


def repair_post(db: Any, post_id: Any, *, bucket_size: int | None = None) -> list[int]:
    """Fill every hole of post ``post_id`` with a lost marker; returns the numbers marked.

    A number whose writer stores its comment first is left alone (duplicate key); a writer that
    comes later finds the marker and takes a new number. So repair never loses an acknowledged
    comment, and is safe to run at any time. Notebook 02, section 3.
    """
    marked = []
    bucket_size = _check_bucket_size(bucket_size)
    for seq in check_post(db, post_id, bucket_size=bucket_size).holes:
        if bucket_size is not None:
            if _store_in_bucket(db, post_id, {"seq": seq, "lost": True}, bucket_size) == "stored":
                marked.append(seq)
            continue
        try:
            db[OVERFLOW].insert_one(_lost_doc(post_id, seq))
            marked.append(seq)
        except DuplicateKeyError:
            pass  # the writer stored its comment meanwhile
    return marked


def read_comments(db: Any, post_id: Any, *, bucket_size: int | None = None) -> list[Any]:
    """Every comment of post ``post_id`` in insertion order, embedded or overflowed.

    One query when ``hasOverflow`` is false (the common case), one more when it is true.
    Raises ``PostNotFoundError`` for a missing post. Introduced in notebook 02.
    """
    _check_post_id(post_id)
    bucket_size = _check_bucket_size(bucket_size)
    post = db[POSTS].find_one({"_id": post_id}, {"_id": 0, "comments": 1, "commentCount": 1, "hasOverflow": 1})
    if post is None:
        raise _not_found(db, post_id)
    comments = list(post.get("comments") or [])
    if post.get("hasOverflow"):
        comments += _overflow_comments(db, post, post_id, bucket_size)
    return comments


def read_post(db: Any, post_id: Any, *, bucket_size: int | None = None) -> dict[str, Any]:
    """The whole post (a page view) with ``comments`` holding all of them, in order.

    Same costs as :func:`read_comments`: one query, plus one for a flagged post.
    """
    _check_post_id(post_id)
    bucket_size = _check_bucket_size(bucket_size)
    post = db[POSTS].find_one({"_id": post_id})
    if post is None:
        raise _not_found(db, post_id)
    if post.get("hasOverflow"):
        post["comments"] = list(post.get("comments") or []) + _overflow_comments(db, post, post_id, bucket_size)
    return post


def read_post_lookup(db: Any, post_id: Any, *, bucket_size: int | None = None) -> dict[str, Any]:
    """The same page as :func:`read_post` in one round trip: one ``aggregate``, the post, and by
    ``$lookup`` on the overflow index's ``post_id`` its overflow in order (for an unflagged post the
    lookup finds nothing), unwrapped on the server: the reply holds the page's comments only, one
    array, no overflow document around each (lost markers left out). Notebook 02, section 2.4.
    """
    _check_post_id(post_id)
    bucket_size = _check_bucket_size(bucket_size)
    pipeline = ([{"$sort": {"seq": 1}}] if bucket_size is None else   # a bucket's entries are in seq order
                [{"$sort": {"bucket": 1}}, {"$unwind": "$comments"}, {"$replaceRoot": {"newRoot": "$comments"}}])
    pipeline.append({"$project": {"_id": 0, "comment": 1, "lost": 1}})
    kept = {"$filter": {"input": "$overflow", "as": "e", "cond": {"$ne": ["$$e.lost", True]}}}
    pages = db[POSTS].aggregate([
        {"$match": {"_id": post_id}},
        {"$lookup": {"from": _overflow_name(bucket_size), "localField": "_id", "foreignField": "post_id",
                     "pipeline": pipeline, "as": "overflow"}},
        {"$set": {"comments": {"$concatArrays": [{"$ifNull": ["$comments", []]},
                                                 {"$map": {"input": kept, "as": "e", "in": "$$e.comment"}}]}}},
        {"$project": {"overflow": 0}},
    ], batchSize=2)  # one document at most: with room for two, the first reply says it is the last
    post = next(iter(pages), None)
    if post is None:
        raise _not_found(db, post_id)
    return post


def newest_comments_reference(db: Any, post_id: Any, n: int = 20) -> list[Any]:
    """The ``n`` newest comments, newest first, computed the slow, obvious way (for self-checks)."""
    return read_comments(db, post_id)[::-1][:n]


def outlier_layout(post: Mapping[str, Any], threshold: int, *,
                   bucket_size: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The documents ``add_comment`` would produce for ``post`` (whose ``comments`` are in order).

    Returns ``(post document, overflow documents)``: the same fields, values and sequence numbers
    as adding the comments one by one to the post without comments (with the same
    ``bucket_size``). Used for bulk loading.
    """
    threshold = _check_threshold(threshold)
    bucket_size = _check_bucket_size(bucket_size)
    if "_id" not in post:
        raise ValueError("post has no _id: give every post an _id before laying it out")
    comments = list(post.get("comments") or [])
    doc = {k: v for k, v in post.items() if k not in ("comments", "commentCount", "hasOverflow")}
    doc["comments"] = comments[:threshold]
    doc["commentCount"] = len(comments)
    doc["hasOverflow"] = len(comments) > threshold
    if bucket_size is None:
        overflow = [_overflow_doc(post["_id"], seq, c)
                    for seq, c in enumerate(comments[threshold:], start=threshold + 1)]
    else:
        overflow = _bucket_docs(post["_id"], [{"seq": seq, "comment": c} for seq, c in
                                              enumerate(comments[threshold:], start=threshold + 1)], bucket_size)
    return doc, overflow


def load_outlier_posts(db: Any, posts: Iterable[Mapping[str, Any]], threshold: int,
                       *, batch: int = 2_000, bucket_size: int | None = None) -> dict[str, int]:
    """Replace ``posts`` and ``posts_overflow`` (``posts_overflow_buckets`` with ``bucket_size``)
    with ``posts`` laid out by the pattern.

    Both collections must be the workbook's own (``helpers.safety.workbook_collection``).
    Returns the number of documents written to each. Introduced in notebook 02.
    """
    threshold = _check_threshold(threshold)
    bucket_size = _check_bucket_size(bucket_size)
    overflow_name = _overflow_name(bucket_size)
    counts = {POSTS: 0, overflow_name: 0}
    pending: dict[str, list[dict[str, Any]]] = {POSTS: [], overflow_name: []}
    # all or nothing: staging collections, renamed over the targets only when complete
    with staged_load(db, (POSTS, overflow_name)) as staging:

        def flush(final: bool = False) -> None:
            for name, docs in pending.items():
                if docs and (final or len(docs) >= batch):
                    staging[name].insert_many(docs, ordered=True)
                    counts[name] += len(docs)
                    docs.clear()

        for post in posts:
            doc, overflow = outlier_layout(post, threshold, bucket_size=bucket_size)
            pending[POSTS].append(doc)
            pending[overflow_name].extend(overflow)
            flush()
        flush(final=True)
    ensure_overflow_index(db, bucket_size)
    return counts


def comment_count_stats(collection: Any, field: str = "comments",
                        percentiles: Iterable[float] = (50, 90, 99)) -> dict[str, int]:
    """Array sizes of ``field`` over a collection, by one aggregation: count, percentiles, max.

    Percentiles are nearest-rank (always a real count), keyed ``p50``, ``p99``, ``p99.9``.
    ``outlier over`` is the lesson's rule: ``OUTLIER_FACTOR`` (10) times the 99th percentile.
    Runs on any engine (it needs no ``$percentile``). Introduced in notebook 02.
    """
    ps = [float(p) for p in percentiles]
    if not ps or any(not 0 < p <= 100 for p in ps):
        raise ValueError(f"percentiles must be numbers in (0, 100], got {list(percentiles)!r}")
    n_expr = {"$size": "$counts"}
    rank = {f"q{i}": {"$arrayElemAt": ["$counts", {"$max": [0, {"$subtract": [
        {"$ceil": {"$subtract": [{"$multiply": [p / 100, n_expr]}, 1e-9]}}, 1]}]}]}  # 1e-9: 0.999 * 1000 is 999.0000000000001
        for i, p in enumerate(ps)}
    rows = list(collection.aggregate([
        {"$project": {"_id": 0, "n": {"$size": {"$ifNull": [f"${field}", []]}}}},
        {"$sort": {"n": 1}},
        {"$group": {"_id": None, "counts": {"$push": "$n"}}},
        {"$project": {"_id": 0, "posts": n_expr, **rank, "max": {"$arrayElemAt": ["$counts", -1]}}},
    ]))
    if not rows or not rows[0].get("posts"):  # (the mock returns one empty group for no input)
        raise ValueError(f"collection {collection.name!r} is empty: load the posts first")
    row = rows[0]
    out = {"posts": int(row["posts"]), **{f"p{p:g}": int(row[f"q{i}"]) for i, p in enumerate(ps)},
           "max": int(row["max"])}
    if "p99" in out:
        out["outlier over"] = OUTLIER_FACTOR * out["p99"]
    return out
