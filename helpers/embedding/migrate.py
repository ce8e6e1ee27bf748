"""Embedding vs referencing, part two: start embedded, pivot later (notebook 01).

Moving a product's embedded reviews to a collection of their own, with nothing lost:
:func:`migrate_reviews` copies them in batches, :func:`review_digests` and :func:`verify_migration`
prove every review arrived intact, :func:`drop_embedded_reviews` removes the arrays afterwards; and
the cut-over that loses no review written meanwhile: :func:`add_review` (the application's write
path, steered by a flag per product) with :func:`migrate_reviews_flagged`, and
:func:`product_reviews` (the read path while it runs). Re-exported by
:mod:`helpers.embedding`, the lesson module.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import bson
from pymongo import DeleteMany, InsertOne, ReplaceOne, ReturnDocument, UpdateOne

from ..safety import track_collection

__all__ = ["migrate_reviews", "MigrationReport", "review_digests", "verify_migration", "review_digests_of",
           "drop_embedded_reviews", "add_review", "add_review_push_first", "migrate_reviews_flagged", "product_reviews"]

Document = dict[str, Any]
REVIEW_META = ("_id", "product_id", "n")  # fields a review gets when it moves to its own collection


def _check_collection(value: Any, variable: str) -> None:
    if not (hasattr(value, "find") and hasattr(value, "insert_one")):
        raise TypeError(f"{variable} must be a collection (e.g. db['{variable}']), "
                        f"not {type(value).__name__}; pass the collection object itself")


# ---------------------------------------------------------------------------------------------
# 1.8: start embedded, pivot later

@dataclass
class MigrationReport:
    """What :func:`migrate_reviews` did."""

    products: int = 0
    reviews_copied: int = 0
    bulk_writes: int = 0
    per_product: dict[Any, int] = field(default_factory=dict, repr=False)


_NO_REVIEW = object()


def _check_collections(products: Any, reviews: Any, review: Any = _NO_REVIEW) -> None:
    """Both arguments are collections (``TypeError`` naming the one that is not); a ``review`` given
    is a document (:func:`_check_review`)."""
    _check_collection(products, "products")
    _check_collection(reviews, "reviews")
    if review is not _NO_REVIEW:
        _check_review(review)


def _check_review(review: Any) -> None:
    """A review to add is a document (``TypeError``, nothing written). Its own ``_id``,
    ``product_id`` or ``n`` never count: the write path sets them from the product (its id and the
    review's position), after the review's fields."""
    if not isinstance(review, Mapping):
        raise TypeError(f"review is a document (a dict), not {type(review).__name__}: nothing was written")


def _check_arguments_and_record(products: Any, reviews: Any, batch_size: int) -> None:
    """A migration's arguments checked (``TypeError``, ``ValueError``; nothing written), then
    ``reviews`` recorded as the workbook's (``track_collection``: ``reset_workbook`` drops it)."""
    _check_collections(products, reviews)
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size!r}")
    track_collection(reviews.database, reviews.name)


#: the index of the referenced design: the page finds a product's reviews by it, in date order
PAGE_INDEX = [("product_id", 1), ("date", 1)]


def _index_unless_first_copy(reviews: Any) -> bool:
    """Is this a first copy (``reviews`` empty)? If not, build the page's ``(product_id, date)``
    index now, since the deletes find a batch's reviews by its prefix; a first copy deletes nothing
    and builds the index once at the end (:func:`_index_after_first_copy`), not on every insert."""
    first_copy = reviews.find_one({}, {"_id": 1}) is None
    if not first_copy:
        reviews.create_index(PAGE_INDEX)  # each batch's deletes find its reviews by it
    return first_copy


def _index_after_first_copy(reviews: Any, first_copy: bool) -> None:
    """After a first copy, build the page's ``(product_id, date)`` index; any other copy built it
    before it started."""
    if first_copy:
        reviews.create_index(PAGE_INDEX)  # the page reads a product's reviews by it, in date order


def _count_product(report: MigrationReport, pid: Any, n_reviews: int) -> None:
    """Add one product and its ``n_reviews`` reviews to ``report``."""
    report.products += 1
    report.reviews_copied += n_reviews
    report.per_product[pid] = n_reviews


def migrate_reviews(products: Any, reviews: Any, *, batch_size: int = 200,
                    only: Iterable[Any] | None = None) -> MigrationReport:
    """Copy every product's embedded reviews into ``reviews``, one document each, with ``bulk_write``.

    Each review becomes ``{**review, "_id": "<product>-<n>", "product_id", "n"}`` (``n`` = its
    position in the array; the meta fields last, so a review's own ``product_id`` or ``n`` cannot
    override them; the ``_id`` of product ``1`` and of product ``"1"`` would collide: keep one type). Safe to run again: when ``reviews`` already holds reviews, each batch
    first deletes that batch's products' reviews, then inserts them, in one ordered ``bulk_write``.
    A first copy (``reviews`` empty when it starts) has nothing to delete, and builds the page's
    ``(product_id, date)`` index once at the end instead of updating it on every insert; it assumes
    nobody else writes ``reviews`` meanwhile (if one does, an insert stops with E11000, and running
    it again finishes the copy: nothing is lost). The products are not changed
    (drop the arrays with :func:`drop_embedded_reviews` once :func:`verify_migration` agrees).
    ``only``: copy just these products (to repair the ones :func:`verify_migration` reports).
    """
    _check_arguments_and_record(products, reviews, batch_size)
    first_copy = _index_unless_first_copy(reviews)
    report = MigrationReport()

    def flush(pids: list[Any], ops: list[Any]) -> None:
        deletes = [] if first_copy or not pids else [DeleteMany({"product_id": {"$in": pids}})]
        if deletes or ops:  # a first copy's batch of products with ``reviews: []`` has nothing to write
            reviews.bulk_write([*deletes, *ops], ordered=True)
            report.bulk_writes += 1

    pids, ops = [], []  # the batch: its products' _ids, and its reviews' inserts
    wanted: dict[str, Any] = {} if only is None else {"_id": {"$in": list(only)}}
    for p in products.find({"reviews": {"$exists": True}, **wanted}, {"reviews": 1},
                           batch_size=batch_size).sort("_id", 1):  # a batch of products per read
        pid = p["_id"]
        pids.append(pid)
        for n, review in enumerate(p["reviews"]):
            ops.append(InsertOne({**review, "_id": f"{pid}-{n}", "product_id": pid, "n": n}))
        _count_product(report, pid, len(p["reviews"]))
        if len(pids) >= batch_size:
            flush(pids, ops)
            pids, ops = [], []
    flush(pids, ops)
    _index_after_first_copy(reviews, first_copy)
    return report


def _digest(reviews: Iterable[Document]) -> str:
    h = hashlib.sha256()
    for r in reviews:
        h.update(bson.encode({k: v for k, v in r.items() if k not in REVIEW_META}))
    return h.hexdigest()[:16]


def review_digests(source: Any, *, embedded: bool) -> dict[Any, tuple[int, str]]:
    """``{product_id: (review count, content digest)}`` from the embedded arrays or the collection.

    The digest is a sha256 over each review's BSON (without ``_id``, ``product_id``, ``n``) in
    array order, so a lost, changed or reordered review changes it. Products without reviews
    are left out on both sides.
    """
    _check_collection(source, "source")
    out: dict[Any, tuple[int, str]] = {}
    if embedded:
        for p in source.find({"reviews.0": {"$exists": True}}, {"reviews": 1}).sort("_id", 1):
            out[p["_id"]] = (len(p["reviews"]), _digest(p["reviews"]))
        return out
    groups: dict[Any, list[Document]] = {}
    for r in source.find({}).sort([("product_id", 1), ("n", 1)]):
        groups.setdefault(r["product_id"], []).append(r)
    return {pid: (len(rs), _digest(rs)) for pid, rs in groups.items()}


def review_digests_of(reviews_by_product: dict[Any, Sequence[Document]]) -> dict[Any, tuple[int, str]]:
    """:func:`review_digests` of reviews held in Python: ``{product_id: [review, ...]}`` in order.

    For the expected state after a migration: the arrays as they were, plus every review the
    application was told was stored meanwhile. Products without reviews are left out.
    """
    return {pid: (len(rs), _digest(rs)) for pid, rs in reviews_by_product.items() if rs}


def _difference(pid: Any, embedded: tuple[int, str] | None, copied: tuple[int, str] | None) -> str:
    """The line :func:`verify_migration` reports for a product whose ``(count, digest)`` differs
    between the embedded array and the collection (``None``: no reviews on that side)."""
    same_count = copied and embedded and copied[0] == embedded[0]
    return (f"product {pid!r}: embedded {embedded[0] if embedded else 0} reviews, collection "
            f"{copied[0] if copied else 0}" + (", same count but different content" if same_count else ""))


def verify_migration(products: Any, reviews: Any) -> list[str]:
    """Compare per-product counts and digests of the embedded arrays and the new collection.

    Returns one line per product that differs (empty: nothing lost, nothing changed).
    """
    before = review_digests(products, embedded=True)
    after = review_digests(reviews, embedded=False)
    problems = []
    for pid in sorted(set(before) | set(after), key=lambda x: (type(x).__name__, x)):
        b, a = before.get(pid), after.get(pid)
        if b != a:
            problems.append(_difference(pid, b, a))
    return problems


def drop_embedded_reviews(products: Any, counts: dict[Any, int], *, batch_size: int = 500) -> int:
    """After a verified migration: replace each product's ``reviews`` array by ``review_count``.

    ``counts`` is :attr:`MigrationReport.per_product`. One ``bulk_write`` of ``UpdateOne`` per batch;
    returns the products modified.
    """
    _check_collection(products, "products")
    if not isinstance(counts, dict):
        raise TypeError(f"counts must be the dict MigrationReport.per_product ({{product _id: reviews}}) "
                        f"returned by migrate_reviews, not {type(counts).__name__}")
    modified = 0
    items = sorted(counts.items(), key=lambda kv: (type(kv[0]).__name__, kv[0]))
    for start in range(0, len(items), batch_size):
        ops = [UpdateOne({"_id": pid}, {"$unset": {"reviews": ""}, "$set": {"review_count": n}})
               for pid, n in items[start:start + batch_size]]
        if ops:
            modified += products.bulk_write(ops, ordered=True).modified_count
    return modified


# ---------------------------------------------------------------------------------------------
# 1.8: the cut-over that loses nothing (a version flag per product)

#: a product whose reviews were moved earlier (``migrate_reviews``, then ``drop_embedded_reviews``): no
#: array, a ``review_count`` (its next position)
_MOVED = {"$and": [{"$eq": [{"$isArray": "$reviews"}, False]}, {"$ne": [{"$type": "$review_count"}, "missing"]}]}
#: where add_review writes to the collection: flagged, or moved earlier (the same write flags it)
_FLAGGED = {"$or": [{"$eq": ["$reviews_in", "collection"]}, _MOVED]}


def add_review(products: Any, reviews: Any, product_id: Any, review: Document) -> str:
    """The application's write path during a migration: where the product's reviews live now.

    One ``find_one_and_update`` with an update pipeline decides on the product itself: while it has
    no ``reviews_in: "collection"`` flag, it appends the review to the array (``$concatArrays``; the
    flag and the append are one document's write, so no append can land after the flag is set); once
    flagged, it takes the next position (``review_count`` plus 1) and the review is then inserted as
    its own document with that number. A product moved earlier (``migrate_reviews``, then
    ``drop_embedded_reviews``: no array, a ``review_count``) is flagged by the same write and takes
    its next position too, never an array whose review would take another's place. It returns the
    flag and the count: one round trip into the array, two into the collection. Returns ``"array"`` or ``"collection"``. (:func:`add_review_push_first`,
    the counter-example, tries the push first: three round trips into the collection.) Notebook 01,
    section 8.
    """
    _check_collections(products, reviews, review)
    after = products.find_one_and_update(
        {"_id": product_id}, [{"$set": {  # flagged: the array (if any) left as it is, the next position taken
            "reviews": {"$cond": [_FLAGGED, "$reviews",
                                  {"$concatArrays": [{"$ifNull": ["$reviews", []]}, [{"$literal": review}]]}]},
            "review_count": {"$cond": [_FLAGGED, {"$add": [{"$ifNull": ["$review_count", 0]}, 1]}, "$review_count"]},
            "reviews_in": {"$cond": [_FLAGGED, "collection", "$reviews_in"]}}}],
        projection={"_id": 0, "reviews_in": 1, "review_count": 1}, return_document=ReturnDocument.AFTER)
    if after is None:
        raise KeyError(f"no product with _id {product_id!r} in {products.name!r}: check product_id")
    if after.get("reviews_in") != "collection":
        return "array"
    n = int(after["review_count"]) - 1
    reviews.insert_one({**review, "_id": f"{product_id}-{n}", "product_id": product_id, "n": n})
    return "collection"


def add_review_push_first(products: Any, reviews: Any, product_id: Any, review: Document) -> str:
    """:func:`add_review` as the obvious code writes it, the counter-example: ``$push`` with the flag's
    absence in the filter; when nothing matched, take the next position from ``review_count``
    (``find_one_and_update``, ``$inc``), then insert. One round trip into the array, three into the
    collection (the push that matched nothing is one). Returns ``"array"`` or ``"collection"``."""
    _check_collections(products, reviews, review)
    pushed = products.update_one({"_id": product_id, "reviews_in": {"$ne": "collection"},
                                  "$or": [{"reviews": {"$type": "array"}}, {"review_count": {"$exists": False}}]},
                                 {"$push": {"reviews": review}})
    if pushed.matched_count:
        return "array"
    after = products.find_one_and_update({"_id": product_id, "$or": [  # flagged, or moved earlier (flagged now)
                                             {"reviews_in": "collection"},
                                             {"reviews": {"$exists": False}, "review_count": {"$exists": True}}]},
                                         {"$inc": {"review_count": 1}, "$set": {"reviews_in": "collection"}},
                                         projection={"review_count": 1}, return_document=ReturnDocument.AFTER)
    if after is None:
        raise KeyError(f"no product with _id {product_id!r} in {products.name!r}: check product_id")
    n = int(after["review_count"]) - 1
    reviews.insert_one({**review, "_id": f"{product_id}-{n}", "product_id": product_id, "n": n})
    return "collection"


def migrate_reviews_flagged(products: Any, reviews: Any, *, batch_size: int = 200,
                            after_batch: Callable[[list[Any]], Any] | None = None) -> MigrationReport:
    """Move every product's reviews to ``reviews`` without losing one written meanwhile.

    Per batch of products: (1) one ``update_many`` sets ``reviews_in: "collection"`` and
    ``review_count`` (the array's size; a product with no array keeps the count
    :func:`drop_embedded_reviews` left) in each product not yet flagged, atomically per product, so
    from then on :func:`add_review` writes that product's new reviews to the collection; (2) read
    the arrays, which can no longer change; (3) upsert them by ``_id`` (``<product>-<n>``: a review
    a writer inserted meanwhile is never deleted); (4) ``$unset`` the arrays. Safe to run again
    after a crash at any step: a rerun takes every product not flagged or still holding an array,
    flagged or not, and leaves the ``review_count`` of a flagged one alone (it counts the reviews
    :func:`add_review` inserted since). While it runs or after a crash, read a product's reviews
    with :func:`product_reviews`. ``after_batch(product_ids)`` is called after each batch (the
    notebook uses it to write a review in the middle of the migration). Notebook 01, section 8.
    """
    _check_arguments_and_record(products, reviews, batch_size)
    reviews.create_index([("product_id", 1), ("n", 1)])  # the cut-over's read path (product_reviews)
    reviews.create_index(PAGE_INDEX)  # the page's, once the cut-over is done
    report = MigrationReport()
    unfinished = {"$or": [{"reviews_in": {"$ne": "collection"}}, {"reviews": {"$exists": True}}]}
    ids = [p["_id"] for p in products.find(unfinished, {"_id": 1}).sort("_id", 1)]
    for start in range(0, len(ids), batch_size):
        batch = ids[start:start + batch_size]
        products.update_many({"_id": {"$in": batch}, "reviews_in": {"$ne": "collection"}},
                             [{"$set": {"reviews_in": "collection",
                                        "review_count": {"$cond": [{"$isArray": "$reviews"}, {"$size": "$reviews"},
                                                                   {"$ifNull": ["$review_count", 0]}]}}}])
        ops: list[Any] = []
        for p in products.find({"_id": {"$in": batch}, "reviews": {"$exists": True}}, {"reviews": 1}).sort("_id", 1):
            for n, review in enumerate(p["reviews"]):
                ops.append(ReplaceOne({"_id": f"{p['_id']}-{n}"},
                                      {**review, "product_id": p["_id"], "n": n}, upsert=True))
            _count_product(report, p["_id"], len(p["reviews"]))
        if ops:
            reviews.bulk_write(ops, ordered=True)
            report.bulk_writes += 1
        products.update_many({"_id": {"$in": batch}, "reviews_in": "collection"}, {"$unset": {"reviews": ""}})
        if after_batch is not None:
            after_batch(batch)
    return report


def _check_same_database(products: Any, reviews: Any) -> None:
    """``reviews`` is in ``products``'s database, the only one a ``$lookup`` reads (``ValueError``)."""
    if reviews.database.name != products.database.name:
        raise ValueError(f"reviews must be in the products' database {products.database.name!r} "
                         f"($lookup reads only there), not {reviews.database.name!r}")


def product_reviews(products: Any, reviews: Any, product_id: Any) -> list[Document] | None:
    """The read path during the cut-over: a product's reviews, from its array and the collection.

    One aggregate on ``products`` (one round trip, one node): the product's array (``k`` reviews,
    positions 0 to k-1), then its reviews in the collection from position ``k`` on. The ``$lookup``
    reads the collection after the product, so a migration that copies and unsets the array in
    between leaves the copies there (``k`` is then 0): no review is missed, none shown twice, all in
    order of ``n``. ``None``: no such product. Notebook 01, section 8.
    """
    _check_collections(products, reviews)
    _check_same_database(products, reviews)
    found = list(products.aggregate([
        {"$match": {"_id": product_id}},
        {"$project": {"reviews": {"$ifNull": ["$reviews", []]}}},
        {"$lookup": {"from": reviews.name, "localField": "_id", "foreignField": "product_id",  # MongoDB 5.0+
                     "let": {"k": {"$size": "$reviews"}}, "as": "moved",  # k: the array's size
                     "pipeline": [{"$match": {"$expr": {"$gte": ["$n", "$$k"]}}}, {"$sort": {"n": 1}},
                                  {"$project": {"_id": 0, "product_id": 0, "n": 0}}]}},
        {"$project": {"_id": 0, "reviews": {"$concatArrays": ["$reviews", "$moved"]}}}]))
    return found[0]["reviews"] if found else None
