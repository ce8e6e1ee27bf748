"""Embedding vs referencing: the pattern code of notebook 01 (``01_embed_vs_reference.ipynb``).

What the lesson measures, one small function per idea:

* the same question answered three ways over authors and books (many-to-many by ``_id``):
  :func:`authors_books_app_join` (two queries), :func:`authors_books_lookup`
  (``$lookup`` with ``localField``/``foreignField``) and :func:`authors_books_lookup_pipeline`
  (``$lookup`` with a pipeline that sorts and trims the joined books);
* what a ``$lookup`` makes the server examine: :func:`foreign_query_plan` explains the query that
  ``$lookup`` runs on the foreign collection for each input document;
* two-way references and duplicated fields: :func:`with_book_ids`, :func:`books_with_author_names`,
  :func:`add_coauthor`, :func:`one_sided_references`, :func:`rename_author`, :func:`stale_copies`;
  the catalogue's operations in each design: :func:`book_page_lookup`, :func:`add_coauthor_named`,
  :func:`rename_author_bulk` (MongoDB 8.0's ``bulkWrite``: one round trip);
* the bill's prices: :func:`priced` (a measured cost with the server's work of its queries);
* writes: :func:`add_review_embedded` vs :func:`add_review_referenced`;
* consistency: :func:`update_product_version` and :func:`product_is_consistent` (one document,
  several fields and an array, atomic), :func:`author_copies_agree` and
  :func:`rename_author_in_transaction` (two copies, made atomic by a transaction),
  :func:`count_torn_reads` (writers and readers at once);
* hot documents: :func:`hot_document_throughput` (threads pushing into one array vs inserting);
* growth and the 16 MiB limit: :func:`synthetic_reviews`, :func:`sizes_by_review_count`,
  :func:`push_reviews_until_limit`;
* "start embedded, pivot later": :func:`migrate_reviews`, :func:`review_digests`,
  :func:`verify_migration`, :func:`drop_embedded_reviews`, :func:`product_page`; and the cut-over
  that loses no review written meanwhile: :func:`add_review`, :func:`migrate_reviews_flagged`,
  :func:`product_reviews` (the read path while it runs); :func:`reviews_query_plans` (the page's
  reviews query as the engine plans it, and covered); the keyed layout, a product's reviews one range
  of ``_id``: :func:`keyed_review`, :func:`add_review_keyed`, :func:`product_page_keyed`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import bson
from pymongo import UpdateMany, UpdateOne
from pymongo.errors import DocumentTooLarge, OperationFailure

from ..backends import backend_info, info_of
from ..generators import reviews as synthetic_reviews
from ..plans import explain_find, lookup_summary, plan_summary
from ..sizes import check_document_size
from ..workload import cost_of
from .migrate import (  # part two of the lesson (start embedded, pivot later), re-exported here
    _check_collection,
)

__all__ = ["authors_books_app_join", "authors_books_lookup", "authors_books_lookup_pipeline", "product_page_lookup", "priced", "find_work", "add_work", "foreign_query_plan", "ForeignPlan", "lookup_stage_stats", "books_with_author_names", "with_book_ids", "add_coauthor", "one_sided_references", "rename_author", "rename_author_bulk", "add_coauthor_named", "book_page_lookup", "reviews_query_plans", "stale_copies", "update_product_version", "product_is_consistent", "author_copies_agree", "rename_author_in_transaction", "read_in_transaction", "author_copies_agree_one_read", "read_in_snapshot_session", "count_torn_reads", "TornReads", "hot_document_throughput", "Throughput", "add_review_embedded", "add_review_referenced", "synthetic_reviews", "sizes_by_review_count", "push_reviews_until_limit", "GrowthResult", "product_page"]

Document = dict[str, Any]
#: the first batch every read of the lesson asks for: the whole answer in one reply (up to 16 MiB),
#: never the driver's default of 101 documents
BATCH = 10_000


def _check_ids(author_ids: Any) -> list[Any] | None:
    if author_ids is None:
        return None
    if isinstance(author_ids, (str, bytes)) or not isinstance(author_ids, Iterable):
        raise TypeError(f"author_ids must be a list of author _id values (or None for all authors), "
                        f"not {author_ids!r}")
    return list(author_ids)


# ---------------------------------------------------------------------------------------------
# 1.2: one question, three ways. "Each author, with the title and year of each of their books."

def authors_books_app_join(authors: Any, books: Any, author_ids: Sequence[Any] | None = None) -> list[Document]:
    """Application-side join: one query for the authors, one for their books, joined in Python.

    A book with two authors comes back once and is listed under both. Authors in ``_id`` order,
    books in ``_id`` order; each query asks for its whole answer in its first batch (``BATCH``).
    Notebook 01, section 2.
    """
    _check_collection(authors, "authors")
    _check_collection(books, "books")
    ids = _check_ids(author_ids)
    author_filter = {} if ids is None else {"_id": {"$in": ids}}
    people = list(authors.find(author_filter, batch_size=BATCH).sort("_id", 1))
    wanted = [a["_id"] for a in people]
    by_author: dict[Any, list[Document]] = {a: [] for a in wanted}
    for book in books.find({"author_ids": {"$in": wanted}},
                           {"_id": 0, "title": 1, "year": 1, "author_ids": 1}, batch_size=BATCH).sort("_id", 1):
        for a in book["author_ids"]:
            if a in by_author:
                by_author[a].append({"title": book["title"], "year": book["year"]})
    return [{"_id": a["_id"], "name": a["name"], "books": by_author[a["_id"]]} for a in people]


def authors_books_lookup(authors: Any, books: Any, author_ids: Sequence[Any] | None = None) -> list[Document]:
    """``$lookup`` with ``localField``/``foreignField``: one aggregation, whole books joined.

    The server sends every joined book in full (``author_ids`` and ``_id`` included); the
    trimming to title and year happens here, after the bytes have crossed the wire.
    """
    _check_collection(authors, "authors")
    _check_collection(books, "books")
    ids = _check_ids(author_ids)
    pipeline: list[Document] = [] if ids is None else [{"$match": {"_id": {"$in": ids}}}]
    pipeline += [
        {"$sort": {"_id": 1}},
        {"$lookup": {"from": books.name, "localField": "_id", "foreignField": "author_ids", "as": "books"}},
    ]
    out = []
    for a in authors.aggregate(pipeline, batchSize=BATCH):
        joined = sorted(a["books"], key=lambda b: b["_id"])  # $lookup promises no order
        out.append({"_id": a["_id"], "name": a["name"],
                    "books": [{"title": b["title"], "year": b["year"]} for b in joined]})
    return out


def authors_books_lookup_pipeline(authors: Any, books: Any,
                                  author_ids: Sequence[Any] | None = None) -> list[Document]:
    """``$lookup`` with a pipeline: the join condition plus ``$sort`` and ``$project`` on the server.

    Uses ``localField``/``foreignField`` together with ``pipeline`` (MongoDB 5.0+), so the
    equality can use an index on ``books.author_ids``; only title and year cross the wire.
    """
    _check_collection(authors, "authors")
    _check_collection(books, "books")
    ids = _check_ids(author_ids)
    pipeline: list[Document] = [] if ids is None else [{"$match": {"_id": {"$in": ids}}}]
    pipeline += [
        {"$sort": {"_id": 1}},
        {"$lookup": {"from": books.name, "localField": "_id", "foreignField": "author_ids",
                     "pipeline": [{"$sort": {"_id": 1}}, {"$project": {"_id": 0, "title": 1, "year": 1}}],
                     "as": "books"}},
    ]
    return [{"_id": a["_id"], "name": a["name"], "books": a["books"]}
            for a in authors.aggregate(pipeline, batchSize=BATCH)]


# ---------------------------------------------------------------------------------------------
# 1.3: what $lookup makes the server examine

@dataclass
class ForeignPlan:
    """The foreign-side queries of a ``$lookup``, explained one input document at a time."""

    queries: int  # one per input document
    stages: str  # e.g. "FETCH > IXSCAN" or "COLLSCAN" (the first query's plan)
    keys_examined: int
    docs_examined: int
    docs_matched: int


def foreign_query_plan(foreign: Any, foreign_field: str, local_values: Iterable[Any]) -> ForeignPlan:
    """Explain ``foreign.find({foreign_field: v})`` for each ``v``: the query ``$lookup`` runs per input.

    Sums keys and documents examined over all of them. Only meaningful on a backend whose
    ``caps.explain`` is True (notebook 01, section 3 checks before calling).
    """
    _check_collection(foreign, "foreign")
    if not isinstance(foreign_field, str) or not foreign_field:
        raise ValueError(f"foreign_field must be a field name such as 'author_ids', not {foreign_field!r}")
    values = list(local_values)
    if not values:
        raise ValueError("local_values is empty: pass the localField values, e.g. the authors' _id values")
    keys = docs = matched = 0
    first_stages = ""
    for v in values:
        plan = foreign.find({foreign_field: v}).explain()
        stages, k, d = plan_summary(plan)
        first_stages = first_stages or stages
        keys += k or 0
        docs += d or 0
        matched += int(plan.get("executionStats", {}).get("nReturned", 0))
    return ForeignPlan(len(values), first_stages, keys, docs, matched)


# ---------------------------------------------------------------------------------------------
# 1.4: duplicated fields (the author's name stored in each book)

def books_with_author_names(authors: Iterable[Document], books: Iterable[Document]) -> list[Document]:
    """Books with a copy of each author's name: ``authors: [{"_id": 3, "name": "Ada Abe"}, ...]``."""
    names = {a["_id"]: a["name"] for a in authors}
    out = []
    for b in books:
        missing = [a for a in b["author_ids"] if a not in names]
        if missing:
            raise ValueError(f"book {b['_id']} references author(s) {missing} that are not in authors: "
                             f"load authors and books from the same dataset")
        out.append({"_id": b["_id"], "title": b["title"], "year": b["year"],
                    "authors": [{"_id": a, "name": names[a]} for a in b["author_ids"]]})
    return out


def rename_author(authors: Any, books_named: Any, author_id: Any, new_name: str, *,
                  session: Any = None) -> dict[str, int]:
    """Rename an author in the source of truth and in every book that holds a copy of the name.

    Two writes: one ``update_one`` on authors, one ``update_many`` with an ``arrayFilters`` on the
    books, so a co-author's entry in the same book is left alone. Returns documents changed.
    ``session``: run both writes in that session (:func:`rename_author_in_transaction`).
    """
    _check_collection(authors, "authors")
    _check_collection(books_named, "books_named")
    if not isinstance(new_name, str) or not new_name.strip():
        raise ValueError(f"new_name must be a non-empty string, not {new_name!r}")
    a = authors.update_one({"_id": author_id}, {"$set": {"name": new_name}}, session=session)
    if a.matched_count == 0:
        raise KeyError(f"no author with _id {author_id!r} in {authors.name!r}: check author_id")
    b = books_named.update_many({"authors._id": author_id},
                                {"$set": {"authors.$[who].name": new_name}},
                                array_filters=[{"who._id": author_id}], session=session)
    return {"authors changed": a.modified_count, "books changed": b.modified_count}


def rename_author_bulk(client: Any, authors: Any, books_named: Any, author_id: Any, new_name: str, *,
                       session: Any = None) -> dict[str, int]:
    """:func:`rename_author` in one round trip: MongoDB 8.0's ``bulkWrite`` command
    (``client.bulk_write``, pymongo 4.9+) carries the author's ``UpdateOne`` and the books'
    ``UpdateMany`` to their two collections together, in that order. Still two writes: a reader can
    land between them (section 5), as with :func:`rename_author`. Needs ``caps.client_bulk_write``.
    ``session``: send it in that session (:func:`rename_author_in_transaction`).
    """
    _check_collection(authors, "authors")
    _check_collection(books_named, "books_named")
    if not isinstance(new_name, str) or not new_name.strip():
        raise ValueError(f"new_name must be a non-empty string, not {new_name!r}")
    if not callable(getattr(type(client), "bulk_write", None)):  # the mock's client: an attribute is a database
        raise TypeError(f"{type(client).__name__} has no bulk_write (MongoDB 8.0's bulkWrite command, pymongo 4.9+: "
                        f"caps.client_bulk_write); rename with rename_author, two round trips")
    result = client.bulk_write([
        UpdateOne({"_id": author_id}, {"$set": {"name": new_name}}, namespace=authors.full_name),
        UpdateMany({"authors._id": author_id}, {"$set": {"authors.$[who].name": new_name}},
                   array_filters=[{"who._id": author_id}], namespace=books_named.full_name),
    ], verbose_results=True, session=session)
    a, b = result.update_results[0], result.update_results[1]
    if a.matched_count == 0:
        raise KeyError(f"no author with _id {author_id!r} in {authors.name!r}: check author_id")
    return {"authors changed": a.modified_count, "books changed": b.modified_count}


def stale_copies(authors: Any, books_named: Any) -> list[Document]:
    """Every book whose copy of an author's name differs from the author document, by book ``_id``."""
    _check_collection(authors, "authors")
    _check_collection(books_named, "books_named")
    truth = {a["_id"]: a["name"] for a in authors.find({}, {"name": 1})}
    out = []
    for b in books_named.find({}, {"authors": 1}).sort("_id", 1):
        for entry in b["authors"]:
            if truth.get(entry["_id"]) != entry["name"]:
                out.append({"book": b["_id"], "author": entry["_id"], "copy says": entry["name"],
                            "author document says": truth.get(entry["_id"])})
    return out


# ---------------------------------------------------------------------------------------------
# 1.5: consistency: what a concurrent reader can see

def update_product_version(products: Any, product_id: Any, version: int) -> None:
    """One ``update_one`` that changes several fields and an embedded array together.

    Sets ``version``, ``label`` (``"v<version>"``) and ``stock`` (= ``version``) and pushes
    ``{"version": version}`` onto ``history``. A single-document write is atomic, so a reader sees
    all of it or none of it (:func:`product_is_consistent`). Notebook 01, section 5.
    """
    _check_collection(products, "products")
    r = products.update_one({"_id": product_id},
                            {"$set": {"version": version, "label": f"v{version}", "stock": version},
                             "$push": {"history": {"version": version}}})
    if r.matched_count == 0:
        raise KeyError(f"no product with _id {product_id!r} in {products.name!r}: check product_id")


def product_is_consistent(doc: Document) -> bool:
    """True if every field :func:`update_product_version` writes tells the same version."""
    v = doc.get("version", 0)
    history = doc.get("history", [])
    return (doc.get("label") == f"v{v}" and doc.get("stock") == v and len(history) == v
            and (not history or history[-1] == {"version": v}))


def author_copies_agree(authors: Any, books_named: Any, author_id: Any, *, session: Any = None) -> bool:
    """Read an author and every book that copies the name; True if all the copies agree with it.

    Two queries (the author, then the books). Without a ``session`` in a transaction a rename can
    land between them, or between two books, and the reader sees a *torn* state: some copies old,
    some new. Notebook 01, section 5.
    """
    author = authors.find_one({"_id": author_id}, {"name": 1}, session=session)
    if author is None:
        raise KeyError(f"no author with _id {author_id!r} in {authors.name!r}: check author_id")
    names = {e["name"] for b in books_named.find({"authors._id": author_id}, {"authors": 1}, session=session)
             for e in b["authors"] if e["_id"] == author_id}
    return names <= {author["name"]}


def rename_author_in_transaction(client: Any, authors: Any, books_named: Any, author_id: Any,
                                 new_name: str, *, one_bulk_write: bool = False) -> dict[str, int]:
    """:func:`rename_author` inside a multi-document transaction (``with_transaction``).

    Readers in a transaction of their own (:func:`read_in_transaction`) see the author and all
    copies renamed, or none. Needs a replica set, a sharded cluster or Atlas: a standalone
    ``mongod`` refuses transactions (``caps.transactions`` is False there). ``with_transaction``
    retries the whole function on a transient error, so it must only do database writes.
    ``one_bulk_write``: send both writes as one :func:`rename_author_bulk` (``caps.client_bulk_write``):
    one round trip, then the commit.
    """
    with client.start_session() as session:
        if one_bulk_write:
            return session.with_transaction(
                lambda s: rename_author_bulk(client, authors, books_named, author_id, new_name, session=s))
        return session.with_transaction(
            lambda s: rename_author(authors, books_named, author_id, new_name, session=s))


def read_in_transaction(client: Any, read: Callable[[Any], Any]) -> Any:
    """Run ``read(session)`` inside a transaction with read concern ``"snapshot"``: every query in
    it reads the same point-in-time snapshot (of majority-committed data, on a real MongoDB)."""
    from pymongo.read_concern import ReadConcern

    with client.start_session() as session:
        return session.with_transaction(read, read_concern=ReadConcern("snapshot"))


def author_copies_agree_one_read(authors: Any, books_named: Any, author_id: Any) -> bool:
    """:func:`author_copies_agree` in one command: an ``aggregate`` on the author, ``$lookup`` of the
    books that copy the name (``foreignField: "authors._id"``, by the index on it), with read concern
    ``"snapshot"``, which MongoDB 5.0+ accepts outside a transaction for ``find``, ``aggregate`` and
    ``distinct``: on a real MongoDB the one command reads one point in time, no transaction and no
    commit needed (an engine's aggregate may not: notebook 01 counts it). It needs the index on
    ``books_named``'s ``authors._id`` (the rename finds the copies by it too): without it SecantusDB's
    ``foreignField`` through an array of documents matches nothing, and the reader, reading no copy,
    always agrees (docs/ENGINES.md; a ``$match`` in the ``$lookup``'s pipeline matches there, but
    took about 20 times as long, measured)."""
    from pymongo.read_concern import ReadConcern

    pipeline = [{"$match": {"_id": author_id}},
                {"$lookup": {"from": books_named.name, "localField": "_id", "foreignField": "authors._id",
                             "pipeline": [{"$project": {"_id": 0, "authors": 1}}], "as": "books"}}]
    author = next(iter(authors.with_options(read_concern=ReadConcern("snapshot")).aggregate(pipeline,
                                                                                             batchSize=BATCH)), None)
    if author is None:
        raise KeyError(f"no author with _id {author_id!r} in {authors.name!r}: check author_id")
    return all(e["name"] == author["name"] for b in author["books"] for e in b["authors"] if e["_id"] == author_id)


def read_in_snapshot_session(client: Any, read: Callable[[Any], Any]) -> Any:
    """Run ``read(session)`` in a snapshot session (``start_session(snapshot=True)``, MongoDB 5.0+):
    no transaction, but every read in it reads the point in time of its first read."""
    with client.start_session(snapshot=True) as session:
        return read(session)


@dataclass
class TornReads:
    """What the readers of :func:`count_torn_reads` saw."""

    writes: int
    reads: int
    torn: int
    seconds: float


def count_torn_reads(write: Callable[[int], Any], read_is_consistent: Callable[[], bool], *,
                     writes: int = 100, readers: int = 1, min_reads: int = 0) -> TornReads:
    """Run ``write(1)``, ``write(2)``, ... in one thread while ``readers`` threads call
    ``read_is_consistent()`` in a loop until the writer is done; count the reads that returned False.

    The writer makes at least ``writes`` writes, and goes on until the readers have made at least
    ``min_reads`` reads (it yields to them after a write while they lag behind that pace), so
    a count of zero torn reads rests on that many reads. Server backends only: each thread sends its
    own commands, so the server interleaves them (the mock is not thread-safe). A reader error is
    raised here, not swallowed.
    """
    if writes < 1 or readers < 1 or min_reads < 0:
        raise ValueError(f"writes and readers must be at least 1 and min_reads 0 or more, not "
                         f"{writes!r}, {readers!r}, {min_reads!r}")
    done = threading.Event()
    counts = [[0, 0] for _ in range(readers)]
    errors: list[BaseException] = []
    start = threading.Barrier(readers + 1)

    def reader(k: int) -> None:
        try:
            start.wait()
            while not done.is_set():
                ok = read_is_consistent()
                counts[k][0] += 1
                counts[k][1] += not ok
        except BaseException as e:  # noqa: BLE001 - reported to the caller below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(readers)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    v = 0
    try:
        start.wait()
        while not errors and (v < writes or sum(c[0] for c in counts) < min_reads):
            v += 1
            write(v)
            if sum(c[0] for c in counts) < min_reads * min(v, writes) / writes:
                time.sleep(0)  # the readers lag behind: hand them the interpreter
    finally:
        done.set()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    return TornReads(v, sum(c[0] for c in counts), sum(c[1] for c in counts), time.perf_counter() - t0)


@dataclass
class Throughput:
    """Writes per second of :func:`hot_document_throughput`."""

    mode: str
    threads: int
    writes: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.writes / self.seconds if self.seconds else float("inf")


def hot_document_throughput(collection: Any, mode: str, threads: int, per_thread: int,
                            review: Document) -> Throughput:
    """``threads`` writers at once, each adding ``per_thread`` reviews to ONE product.

    ``mode="push"``: ``$push`` into the product's embedded array (every writer updates the same
    document, so the server serialises them on it). ``mode="insert"``: insert one review document
    each (different documents, no shared one). ``collection`` is emptied first and holds the
    product (push) or the reviews (insert) afterwards. Server backends only (the mock is not
    thread-safe). Notebook 01, section 6.
    """
    _check_collection(collection, "collection")
    if mode not in ("push", "insert"):
        raise ValueError(f"mode must be 'push' or 'insert', not {mode!r}")
    if threads < 1 or per_thread < 1:
        raise ValueError(f"threads and per_thread must be at least 1, not {threads!r}, {per_thread!r}")
    collection.delete_many({})
    if mode == "push":
        collection.insert_one({"_id": "hot", "name": "a product everyone reviews", "reviews": []})
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                if mode == "push":
                    collection.update_one({"_id": "hot"}, {"$push": {"reviews": {**review, "by": k, "i": i}}})
                else:
                    collection.insert_one({"product_id": "hot", **review, "by": k, "i": i})
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    workers = [threading.Thread(target=writer, args=(k,)) for k in range(threads)]
    t0 = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    seconds = time.perf_counter() - t0
    if errors:
        raise errors[0]
    stored = (len(collection.find_one({"_id": "hot"})["reviews"]) if mode == "push"
              else collection.count_documents({"product_id": "hot"}))
    if stored != threads * per_thread:
        raise RuntimeError(f"{stored} reviews stored, {threads * per_thread} written: a write was lost")
    return Throughput(mode, threads, threads * per_thread, seconds)


def with_book_ids(authors: Iterable[Document], books: Iterable[Document]) -> list[Document]:
    """Two-way references: each author also lists its books, ``book_ids`` in ``_id`` order."""
    owned: dict[Any, list[Any]] = {}
    for b in books:
        for a in b["author_ids"]:
            owned.setdefault(a, []).append(b["_id"])
    return [{**a, "book_ids": sorted(owned.get(a["_id"], []))} for a in authors]


def add_coauthor(authors_two_way: Any, books_named: Any, book_id: Any, author_id: Any) -> dict[str, int]:
    """Add ``author_id`` to a book with two-way references and copied names: both sides, and the name.

    One ``find_one_and_update`` adds the book to the author's ``book_ids`` and returns the author's
    name; one ``update_one`` pushes ``{_id, name}`` onto the book's ``authors`` unless the author is
    there: two round trips (a third, for the name, only when the author lists the book already), and
    running it again changes nothing. An unknown author changes nothing; an unknown book undoes the
    author's side. Returns the documents changed on each side. Notebook 01, section 4.
    """
    _check_collection(authors_two_way, "authors_two_way")
    _check_collection(books_named, "books_named")
    found = authors_two_way.find_one_and_update({"_id": author_id, "book_ids": {"$ne": book_id}},
                                                {"$push": {"book_ids": book_id}}, projection={"name": 1})
    added = int(found is not None)
    if found is None:
        found = authors_two_way.find_one({"_id": author_id}, {"name": 1})
        if found is None:
            raise KeyError(f"no author with _id {author_id!r} in {authors_two_way.name!r}: check author_id")
    b = books_named.update_one({"_id": book_id, "authors._id": {"$ne": author_id}},
                               {"$push": {"authors": {"_id": author_id, "name": found["name"]}}})
    if b.matched_count == 0 and books_named.find_one({"_id": book_id}, {"_id": 1}) is None:
        if added:  # this call added the book to the author: take it back
            authors_two_way.update_one({"_id": author_id}, {"$pull": {"book_ids": book_id}})
        raise KeyError(f"no book with _id {book_id!r} in {books_named.name!r}: check book_id")
    return {"books changed": b.modified_count, "authors changed": added}


def add_coauthor_named(books_named: Any, book_id: Any, author: Document) -> int:
    """Add a co-author to a book that copies its authors' names (Extended Reference): one
    ``update_one`` pushes ``author`` (``{"_id": ..., "name": ...}``, as the back-office form picked
    it) onto ``authors`` unless the author is there. Returns the books changed (0 or 1). Notebook 01,
    section 4."""
    _check_collection(books_named, "books_named")
    if not isinstance(author, dict) or set(author) != {"_id", "name"}:
        raise ValueError(f"author must be {{'_id': ..., 'name': ...}}, not {author!r}")
    b = books_named.update_one({"_id": book_id, "authors._id": {"$ne": author["_id"]}},
                               {"$push": {"authors": dict(author)}})
    if b.matched_count == 0 and books_named.find_one({"_id": book_id}, {"_id": 1}) is None:
        raise KeyError(f"no book with _id {book_id!r} in {books_named.name!r}: check book_id")
    return b.modified_count


def book_page_lookup(books: Any, authors: Any, book_id: Any) -> Document | None:
    """A book with its authors' names when books reference authors by ``_id`` only: one
    ``aggregate``, ``$match`` on the book, ``$lookup`` of its ``author_ids`` on the authors' ``_id``
    (their names only), then the authors put back in the book's order (``$lookup`` keeps none).
    The same page as ``books_named.find_one({"_id": book_id})``. Notebook 01, section 4."""
    _check_collection(books, "books")
    _check_collection(authors, "authors")
    in_order = {"$map": {"input": "$author_ids", "as": "a", "in": {"$first": {"$filter": {
        "input": "$found", "cond": {"$eq": ["$$this._id", "$$a"]}}}}}}
    pipeline = [
        {"$match": {"_id": book_id}},
        {"$lookup": {"from": authors.name, "localField": "author_ids", "foreignField": "_id",
                     "pipeline": [{"$project": {"name": 1}}], "as": "found"}},
        {"$project": {"title": 1, "year": 1, "authors": in_order}},
    ]
    return next(iter(books.aggregate(pipeline, batchSize=BATCH)), None)


def one_sided_references(authors_two_way: Any, books_named: Any) -> list[Document]:
    """Pairs that only one side records: a book listing an author who does not list it, or back."""
    _check_collection(authors_two_way, "authors_two_way")
    _check_collection(books_named, "books_named")
    from_books = {(b["_id"], a["_id"]) for b in books_named.find({}, {"authors._id": 1}, batch_size=BATCH)
                  for a in b["authors"]}
    from_authors = {(b, a["_id"]) for a in authors_two_way.find({}, {"book_ids": 1}, batch_size=BATCH)
                    for b in a.get("book_ids", [])}
    out = [{"book": b, "author": a, "recorded by": "book only"} for b, a in from_books - from_authors]
    out += [{"book": b, "author": a, "recorded by": "author only"} for b, a in from_authors - from_books]
    return sorted(out, key=lambda d: (d["book"], d["author"]))


# ---------------------------------------------------------------------------------------------
# 1.6: writes

def add_review_embedded(products: Any, product_id: Any, review: Document) -> int:
    """Append a review to a product's embedded ``reviews`` array (``$push``); returns docs modified."""
    _check_collection(products, "products")
    result = products.update_one({"_id": product_id}, {"$push": {"reviews": review}})
    if result.matched_count == 0:
        raise KeyError(f"no product with _id {product_id!r} in {products.name!r}: check product_id")
    return result.modified_count


def add_review_referenced(reviews: Any, product_id: Any, review: Document) -> Any:
    """Insert a review as its own document that references the product (``product_id``): one round
    trip, no counter to read first, since the page sorts the reviews by ``date`` on the index
    ``{product_id: 1, date: 1}``; returns the new ``_id``."""
    _check_collection(reviews, "reviews")
    return reviews.insert_one({"product_id": product_id, **review}).inserted_id


# ---------------------------------------------------------------------------------------------
# 1.7: growth and the 16 MiB limit

def sizes_by_review_count(product: Document, reviews: Sequence[Document], counts: Iterable[int]) -> list[int]:
    """BSON size of ``product`` holding the first ``k`` of ``reviews``, for each ``k`` in ``counts``."""
    out = []
    for k in counts:
        if k > len(reviews):
            raise ValueError(f"count {k} is more than the {len(reviews)} reviews given: generate more")
        out.append(len(bson.encode({**product, "reviews": list(reviews[:k])})))
    return out


@dataclass
class GrowthResult:
    """How far ``$push`` got before the 16 MiB limit stopped it."""

    reviews_stored: int
    stored_size: int  # BSON bytes of the document as stored after the last accepted push
    pushes_accepted: int
    error: Exception | None
    client_side: bool  # True when the labelled client-side check stopped it, not the server


def push_reviews_until_limit(products: Any, product_id: Any, reviews: Sequence[Document], chunk: int,
                             *, server_enforces: bool) -> GrowthResult:
    """``$push`` reviews in chunks of ``chunk`` until the document would pass 16 MiB.

    With ``server_enforces`` (``backend_info().caps.max_document_size``) the server's own error
    stops it; otherwise :func:`helpers.sizes.check_document_size` checks the would-be document
    first and raises the labelled client-side ``DocumentTooLarge``, as the server would have.
    """
    _check_collection(products, "products")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk!r}")
    doc = products.find_one({"_id": product_id})
    if doc is None:
        raise KeyError(f"no product with _id {product_id!r} in {products.name!r}: check product_id")
    size = len(bson.encode(doc))
    stored = len(doc.get("reviews", []))
    pushes = 0
    error: Exception | None = None
    client_side = False
    for start in range(0, len(reviews), chunk):
        part = list(reviews[start:start + chunk])
        if not server_enforces:
            would_be = {**doc, "reviews": list(doc.get("reviews", [])) + part}
            try:
                check_document_size(would_be, what=f"product {product_id!r} after this $push")
            except DocumentTooLarge as e:
                error, client_side = e, True
                break
        try:
            products.update_one({"_id": product_id}, {"$push": {"reviews": {"$each": part}}})
        except (OperationFailure, DocumentTooLarge) as e:
            error = e
            break
        pushes += 1
        stored += len(part)
        doc = {**doc, "reviews": list(doc.get("reviews", [])) + part}
        size = len(bson.encode(doc))
    return GrowthResult(stored, size, pushes, error, client_side)


def product_page(products: Any, product_id: Any, *, reviews: Any = None) -> Document | None:
    """The read path: a product with its reviews, from the array or (``reviews=``) the collection.

    With ``reviews=``, two queries: the product (without ``review_count``, the cut-over's counter),
    then its reviews by date (the index
    ``{product_id: 1, date: 1}`` serves both the filter and the order), all in the first batch."""
    _check_collection(products, "products")
    product = products.find_one({"_id": product_id}, None if reviews is None else {"reviews": 0, "review_count": 0})
    if product is None or reviews is None:
        return product
    _check_collection(reviews, "reviews")
    found = reviews.find({"product_id": product_id}, {"_id": 0, "product_id": 0, "n": 0},
                         batch_size=BATCH).sort("date", 1)
    return {**product, "reviews": list(found)}


def product_page_lookup(products: Any, reviews: Any, product_id: Any) -> Document | None:
    """The referenced read path in one round trip: one ``aggregate``, ``$match`` then ``$lookup``.

    ``$lookup`` joins the reviews whose ``product_id`` equals the product's ``_id``, by date (the
    index ``{product_id: 1, date: 1}`` serves both), without the bookkeeping fields (the product's
    ``review_count`` from the cut-over, the reviews' ``product_id`` and ``n``), as ``reviews``:
    the same page as :func:`product_page` with ``reviews=``, which sends two queries. The joined
    page is one document, so it is held to the 16 MiB limit.
    """
    _check_collection(products, "products")
    _check_collection(reviews, "reviews")
    pipeline = [
        {"$match": {"_id": product_id}},
        {"$project": {"review_count": 0}},  # the cut-over's counter: the page counts its reviews
        {"$lookup": {"from": reviews.name, "localField": "_id", "foreignField": "product_id",
                     "pipeline": [{"$sort": {"date": 1}}, {"$project": {"_id": 0, "product_id": 0, "n": 0}}],
                     "as": "reviews"}},
    ]
    return next(iter(products.aggregate(pipeline, batchSize=BATCH)), None)


#: the fields the product page shows of each review, and an index that holds all of them after the
#: page's own ``{product_id: 1, date: 1}``: with an inclusion projection it can cover the reviews' query
PAGE_FIELDS = ("date", "author", "rating", "text")
COVERING_INDEX = [("product_id", 1), *((f, 1) for f in PAGE_FIELDS)]


def reviews_query_plans(reviews: Any, product_id: Any) -> list[Document]:
    """The engine's plan for the query the page's ``$lookup`` runs on ``reviews`` (explained as the
    equivalent ``find``, by date), as the page sends it and as it could be covered: an inclusion
    projection of :data:`PAGE_FIELDS` with :data:`COVERING_INDEX` (built here, dropped after, hinted).
    One row each: the form, its stages, keys and documents examined. Where ``caps.explain`` holds;
    never a real MongoDB's plan unless it ran on one. Notebook 01, section 8."""
    _check_collection(reviews, "reviews")
    rows = []
    page = reviews.find({"product_id": product_id}, {"_id": 0, "product_id": 0, "n": 0}).sort("date", 1)
    rows.append(("as the page sends it, index {product_id: 1, date: 1}", page.explain()))
    name = reviews.create_index(COVERING_INDEX)
    try:
        covered = reviews.find({"product_id": product_id}, {"_id": 0, **{f: 1 for f in PAGE_FIELDS}})
        rows.append(("covered: index {product_id: 1, date: 1, author: 1, rating: 1, text: 1}, projection "
                     "{_id: 0, date: 1, author: 1, rating: 1, text: 1}", covered.sort("date", 1).hint(name).explain()))
    finally:
        reviews.drop_index(name)
    return [dict(zip(("form", "stages", "keys examined", "docs examined"), (form, *plan_summary(plan))))
            for form, plan in rows]


def find_work(collection: Any, filter: Document, sort: Sequence[tuple[str, int]] | None = None) -> dict[str, int]:
    """Keys and documents the server examines to find ``filter`` (with ``sort``), from a ``find`` explain.

    For a write, the work of finding what it changes (an ``update`` with that filter examines the
    same). Only meaningful where ``caps.explain`` holds: an engine whose explain gives no counters
    is an error, never a zero.
    """
    _check_collection(collection, "collection")
    _stages, keys, docs = explain_find(collection, filter, sort)
    return {"keys examined": keys, "docs examined": docs}


def add_work(*works: dict[str, int]) -> dict[str, int]:
    """The sum of several :func:`find_work` results (an operation that sends several queries)."""
    return {k: sum(w[k] for w in works) for k in ("keys examined", "docs examined")}


def priced(cost: Any, *queries: tuple, info: Any = None) -> dict[str, Any]:
    """A measured cost as the bill takes it: round trips, documents, bytes and index keys written
    (:func:`helpers.workload.cost_of`), plus the server's work of the queries it sends, where the
    engine explains (``caps.explain``; elsewhere left out, never zero).

    ``queries`` are ``(collection, filter)`` or ``(collection, filter, sort)``, one per query the
    operation sends: each is explained as a ``find`` (:func:`find_work`) and the keys and documents
    examined are summed. A write's filter stands for the work of finding what it changes; an insert
    sends none (it examines nothing). ``info``: the backend (default: the first query's, else the
    notebook's). Notebook 01, section 4.
    """
    out = cost_of(cost)
    info = info or (info_of(queries[0][0]) if queries else None) or backend_info()
    if info.caps.explain:
        out.update(add_work(*(find_work(*q) for q in queries)) if queries
                   else {"keys examined": 0, "docs examined": 0})
    return out


def lookup_stage_stats(collection: Any, pipeline: list[Document]) -> dict[str, Any] | None:
    """What the server reports about the ``$lookup`` of ``pipeline``: join strategy, keys, documents.

    Runs ``explain`` with ``executionStats``. A real MongoDB reports either counters on the
    ``$lookup`` stage (classic engine) or an ``EQ_LOOKUP`` plan stage with its ``strategy``
    (``HashJoin``, ``IndexedLoopJoin``, ``NestedLoopJoin``; slot-based engine, 6.0+), whose
    counters then cover the whole pipeline. Engines that report neither give None: SecantusDB's
    explain leaves the stage without statistics, the mock has no ``explain`` command.
    Notebook 01, section 3.
    """
    _check_collection(collection, "collection")
    try:
        plan = collection.database.command("explain", {"aggregate": collection.name, "pipeline": pipeline,
                                                       "cursor": {}}, verbosity="executionStats")
    except (OperationFailure, NotImplementedError):
        return None
    return lookup_summary(plan)

