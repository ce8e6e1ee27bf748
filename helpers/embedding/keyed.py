"""The keyed-reviews layout (notebook 01, section 8): a review's ``_id`` is ``{p: product, d: date,
a: author}``, so the ``_id`` index alone finds a product's page. A part of the embedding lesson,
imported by :mod:`helpers.embedding` (its face), from which every name is imported."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from .patterns import BATCH, Document, _check_collection

__all__ = ["LAST_DATE", "keyed_review", "keyed_page_filter", "add_review_keyed", "product_page_keyed"]


#: the keyed layout's upper bound on a product's reviews: the last millisecond of year 9999, the
#: latest a ``datetime`` holds (every review is dated before it). ``bson.MaxKey`` would be exact, and
#: the mock cannot compare it
LAST_DATE = datetime(9999, 12, 31, 23, 59, 59, 999000)


def keyed_review(product_id: Any, review: Document) -> Document:
    """A review as the keyed layout stores it: ``_id`` ``{p: product, d: date, a: author}``, then the
    review's other fields (``rating``, ``text``). The key orders a collection's reviews by product,
    then date, then author, so the ``_id`` index alone finds a product's page in date order: no
    ``product_id`` field, no secondary index to write on every insert. Two reviews of one product by
    one author in the same millisecond would share a key: the second insert is refused (E11000), so
    a retried insert stores the review once. Notebook 01, section 8."""
    if not isinstance(review, dict) or "date" not in review or "author" not in review:
        raise ValueError(f"a review needs a date and an author to be keyed, not {review!r}")
    rest = {k: v for k, v in review.items() if k not in ("_id", "product_id", "n", "date", "author")}
    return {"_id": {"p": product_id, "d": review["date"], "a": review["author"]}, **rest}


def keyed_page_filter(product_id: Any) -> Document:
    """A product's reviews in the keyed layout: one range of ``_id``. ``{p: product}`` sorts before
    each of its reviews' keys (an object with fewer fields is less), ``{p: product, d: LAST_DATE}``
    after each (its date is later), and every other product's keys are outside the two."""
    return {"_id": {"$gt": {"p": product_id}, "$lt": {"p": product_id, "d": LAST_DATE}}}


def add_review_keyed(reviews: Any, product_id: Any, review: Document) -> Any:
    """Insert a review in the keyed layout (:func:`keyed_review`): one round trip, one index key
    written (the ``_id`` index, the only one). Returns the new ``_id``."""
    _check_collection(reviews, "reviews")
    return reviews.insert_one(keyed_review(product_id, review)).inserted_id


def product_page_keyed(products: Any, reviews: Any, product_id: Any) -> Document | None:
    """The referenced page in the keyed layout: one ``aggregate``, ``$match`` on the product, then a
    ``$lookup`` whose pipeline reads the product's range of review ``_id`` (:func:`keyed_page_filter`:
    on a real MongoDB an index scan of the ``_id`` index, in date order) and puts ``date`` and
    ``author`` back from the key: the same page as :func:`product_page_lookup`, with no index but
    ``_id``'s. Where the engine scans for an ``_id`` range (``caps.id_range_index`` False), it reads
    every review instead."""
    _check_collection(products, "products")
    _check_collection(reviews, "reviews")
    pipeline = [
        {"$match": {"_id": product_id}},
        {"$project": {"review_count": 0}},  # the cut-over's counter: the page counts its reviews
        {"$lookup": {"from": reviews.name, "as": "reviews", "pipeline": [
            {"$match": keyed_page_filter(product_id)}, {"$sort": {"_id": 1}},
            {"$project": {"_id": 0, "author": "$_id.a", "rating": 1, "text": 1, "date": "$_id.d"}}]}},
    ]
    return next(iter(products.aggregate(pipeline, batchSize=BATCH)), None)
