"""The pattern code of notebook 01 (``helpers.embedding``), on every backend."""
from __future__ import annotations

import time
from datetime import datetime, timedelta
from types import SimpleNamespace

import bson
import pytest
from pymongo.errors import DocumentTooLarge, DuplicateKeyError, OperationFailure

from helpers import embedding as e
from helpers import generators as g
from helpers.counting import count_commands
from helpers.safety import workbook_collection, workbook_collections

DAY0, LATE = datetime(2024, 1, 1), datetime(2025, 1, 1)  # the catalogue's reviews, and the ones written later


@pytest.fixture
def library(db):
    """Five authors and their books (seed 7: the same data as the notebook's generator)."""
    authors, books = g.authors_and_books(5, 7)
    workbook_collection(db, "authors").insert_many(authors)
    workbook_collection(db, "books").insert_many(books)
    return db, authors, books


def _expected(authors, books, ids=None):
    out = []
    for a in sorted(authors, key=lambda a: a["_id"]):
        if ids is not None and a["_id"] not in ids:
            continue
        mine = [{"title": b["title"], "year": b["year"]} for b in sorted(books, key=lambda b: b["_id"])
                if a["_id"] in b["author_ids"]]
        out.append({"_id": a["_id"], "name": a["name"], "books": mine})
    return out


@pytest.mark.parametrize("how", [e.authors_books_app_join, e.authors_books_lookup,
                                 e.authors_books_lookup_pipeline])
@pytest.mark.parametrize("ids", [None, [2, 4]])
def test_three_joins_give_the_same_answer(library, how, ids):
    db, authors, books = library
    assert any(len(b["author_ids"]) == 2 for b in books), "the data must have co-authored books"
    assert how(db.authors, db.books, ids) == _expected(authors, books, ids)


def test_join_costs_differ_as_taught(library):
    db, authors, books = library
    costs = {}
    for how in (e.authors_books_app_join, e.authors_books_lookup, e.authors_books_lookup_pipeline):
        with count_commands() as c:
            how(db.authors, db.books)
        costs[how.__name__] = c
    app, lookup, piped = (costs[n] for n in ("authors_books_app_join", "authors_books_lookup",
                                            "authors_books_lookup_pipeline"))
    assert app.commands == ["find", "find"] and app.default_batch_getmores == 0  # each answer in one batch
    assert lookup.commands == ["aggregate"] and piped.commands == ["aggregate"]
    assert app.docs_returned == len(authors) + len(books)  # each book once, even with two authors
    assert lookup.docs_returned == piped.docs_returned == len(authors)
    assert piped.bytes_returned < lookup.bytes_returned  # only title and year cross the wire


def test_join_rejects_bad_input(library):
    db, _, _ = library
    with pytest.raises(TypeError, match="authors must be a collection"):
        e.authors_books_app_join([], db.books)
    with pytest.raises(TypeError, match="author_ids must be a list"):
        e.authors_books_lookup(db.authors, db.books, 3)


def test_foreign_query_plan_counts_examined(library, backend):
    db, authors, books = library
    ids = [a["_id"] for a in authors]
    matched = sum(len(b["author_ids"]) for b in books)
    if not backend.info.caps.explain:
        pytest.skip(f"{backend.info.engine} cannot explain faithfully (docs/ENGINES.md)")
    before = e.foreign_query_plan(db.books, "author_ids", ids)
    assert before.queries == 5 and "COLLSCAN" in before.stages
    assert before.docs_examined == 5 * len(books) and before.docs_matched == matched
    db.books.create_index("author_ids")
    after = e.foreign_query_plan(db.books, "author_ids", ids)
    assert "IXSCAN" in after.stages
    assert after.keys_examined == matched and after.docs_examined == matched
    with pytest.raises(ValueError, match="local_values is empty"):
        e.foreign_query_plan(db.books, "author_ids", [])


def test_rename_author_changes_every_copy(library):
    db, authors, books = library
    named = e.books_with_author_names(authors, books)
    workbook_collection(db, "books_named").insert_many(named)
    shared = next(b for b in books if len(b["author_ids"]) == 2)
    second = shared["author_ids"][1]
    must_change = sum(second in b["author_ids"] for b in books)
    assert e.stale_copies(db.authors, db.books_named) == []
    with count_commands() as c:
        changed = e.rename_author(db.authors, db.books_named, second, "Renamed Person")
    assert changed == {"authors changed": 1, "books changed": must_change}
    assert c.round_trips == 2 and c.docs_written == 1 + must_change
    assert e.stale_copies(db.authors, db.books_named) == []
    doc = db.books_named.find_one({"_id": shared["_id"]})
    assert [x["name"] for x in doc["authors"]][1] == "Renamed Person"
    assert doc["authors"][0]["name"] == next(a["name"] for a in authors if a["_id"] == shared["author_ids"][0])
    # a missed copy is found
    db.authors.update_one({"_id": second}, {"$set": {"name": "Third Name"}})
    stale = e.stale_copies(db.authors, db.books_named)
    assert len(stale) == must_change and {s["copy says"] for s in stale} == {"Renamed Person"}
    with pytest.raises(KeyError, match="no author"):
        e.rename_author(db.authors, db.books_named, 999, "x")
    with pytest.raises(ValueError, match="new_name"):
        e.rename_author(db.authors, db.books_named, second, " ")


def test_books_with_author_names_refuses_unknown_author():
    with pytest.raises(ValueError, match="references author"):
        e.books_with_author_names([{"_id": 1, "name": "A"}], [{"_id": 1, "title": "t", "year": 1,
                                                               "author_ids": [1, 2]}])


def test_add_review_both_ways(db):
    products = workbook_collection(db, "products")
    products.insert_one({"_id": 1, "name": "Lamp", "reviews": []})
    reviews = workbook_collection(db, "reviews")
    review = e.synthetic_reviews(1, seed=1)[0]
    with count_commands() as c:
        assert e.add_review_embedded(products, 1, review) == 1
        e.add_review_referenced(reviews, 1, review)
    assert c.commands == ["update", "insert"] and c.docs_written == 2
    assert products.find_one({"_id": 1})["reviews"] == [review]
    got = reviews.find_one({"product_id": 1}, {"_id": 0})
    assert got == {"product_id": 1, **review}
    with pytest.raises(KeyError, match="no product"):
        e.add_review_embedded(products, 2, review)


def test_synthetic_reviews_are_seeded_and_checked():
    assert e.synthetic_reviews(50, 3) == e.synthetic_reviews(50, 3)
    assert e.synthetic_reviews(50, 3) != e.synthetic_reviews(50, 4)
    assert all(1 <= r["rating"] <= 5 and 3 <= len(r["text"].split()) <= 12 for r in e.synthetic_reviews(200, 1))
    with pytest.raises(ValueError, match="non-negative"):
        e.synthetic_reviews(-1, 1)


def test_sizes_by_review_count_are_exact():
    reviews = e.synthetic_reviews(100, 2)
    product = {"_id": 1, "name": "Lamp"}
    sizes = e.sizes_by_review_count(product, reviews, [0, 10, 100])
    assert sizes[0] == len(bson.encode({**product, "reviews": []}))
    assert sizes[2] == len(bson.encode({**product, "reviews": reviews}))
    assert sizes[0] < sizes[1] < sizes[2]
    with pytest.raises(ValueError, match="generate more"):
        e.sizes_by_review_count(product, reviews, [101])


def test_push_until_limit_stops_at_16mb(db, backend):
    products = workbook_collection(db, "products")
    products.insert_one({"_id": 1, "name": "Lamp", "reviews": []})
    big = [{"author": "u", "text": "x" * 1000}] * 20_000  # about 20 MB in chunks of about 2 MB
    enforced = backend.info.caps.max_document_size
    result = e.push_reviews_until_limit(products, 1, big, 2_000, server_enforces=enforced)
    assert result.error is not None and result.client_side == (not enforced)
    assert result.reviews_stored == 16_000 and result.pushes_accepted == 8
    stored = products.find_one({"_id": 1})
    assert len(stored["reviews"]) == 16_000 and len(bson.encode(stored)) == result.stored_size
    assert result.stored_size <= 16 * 1024 * 1024
    if enforced:
        assert isinstance(result.error, OperationFailure)
    else:
        assert isinstance(result.error, DocumentTooLarge) and "client-side" in str(result.error)


def _products(db, n=30):
    products = workbook_collection(db, "products")
    docs = g.products_with_reviews(n, 7)
    products.insert_many(docs)
    return products, docs


def test_migrate_verify_and_switch_read_path(db):
    products, docs = _products(db)
    reviews = workbook_collection(db, "reviews")
    total = sum(len(p["reviews"]) for p in docs)
    report = e.migrate_reviews(products, reviews, batch_size=7)
    assert report.products == 30 and report.reviews_copied == total == reviews.count_documents({})
    assert report.bulk_writes == 5  # ceil(30 / 7)
    assert "product_id_1_date_1" in reviews.index_information()  # a first copy builds the page's index at the end
    assert e.verify_migration(products, reviews) == []
    # running it again changes nothing (idempotent)
    e.migrate_reviews(products, reviews, batch_size=7)
    assert reviews.count_documents({}) == total and e.verify_migration(products, reviews) == []
    assert "reviews" in workbook_collections(db)
    # the new read path returns what the old one did
    old = e.product_page(products, 5)
    new = e.product_page(products, 5, reviews=reviews)
    assert new["reviews"] == old["reviews"]
    with count_commands() as c:
        e.product_page(products, 5, reviews=reviews)
    assert c.commands == ["find", "find"] and c.default_batch_getmores == 0
    # the same page in one round trip: $match + $lookup on the indexed product_id
    assert e.product_page_lookup(products, reviews, 5) == new
    with count_commands() as c:
        e.product_page_lookup(products, reviews, 5)
    assert c.commands == ["aggregate"] and c.docs_returned == 1
    assert [r["date"] for r in new["reviews"]] == sorted(r["date"] for r in new["reviews"])  # by date
    assert e.product_page_lookup(products, reviews, "no such product") is None
    # only now drop the arrays
    assert e.drop_embedded_reviews(products, report.per_product, batch_size=11) == 30
    assert products.count_documents({"reviews": {"$exists": True}}) == 0
    assert e.product_page(products, 5, reviews=reviews)["reviews"] == old["reviews"]
    assert products.find_one({"_id": 5})["review_count"] == len(old["reviews"])
    assert "review_count" not in e.product_page(products, 5, reviews=reviews)  # the cut-over's counter stays out of the page
    assert "review_count" not in e.product_page_lookup(products, reviews, 5)


def test_verify_migration_detects_loss_and_change(db):
    products, docs = _products(db, 10)
    reviews = workbook_collection(db, "reviews")
    e.migrate_reviews(products, reviews)
    victim = next(p for p in docs if len(p["reviews"]) >= 2)
    reviews.delete_one({"_id": f"{victim['_id']}-1"})
    other = next(p for p in docs if p["_id"] != victim["_id"])
    reviews.update_one({"_id": f"{other['_id']}-0"}, {"$set": {"rating": 0}})
    problems = e.verify_migration(products, reviews)
    assert len(problems) == 2
    assert any(f"product {victim['_id']}: embedded {len(victim['reviews'])} reviews, collection "
               f"{len(victim['reviews']) - 1}" == p for p in problems)
    assert any("same count but different content" in p for p in problems)


def test_migrate_rejects_bad_input(db):
    products, _ = _products(db, 2)
    with pytest.raises(TypeError, match="reviews must be a collection"):
        e.migrate_reviews(products, "reviews")
    with pytest.raises(ValueError, match="batch_size"):
        e.migrate_reviews(products, db.reviews, batch_size=0)
    with pytest.raises(TypeError, match="MigrationReport.per_product"):
        e.drop_embedded_reviews(products, [1, 2])


def test_lookup_stage_stats_only_where_the_engine_reports_them(library, backend):
    db, authors, books = library
    pipeline = [{"$lookup": {"from": "books", "localField": "_id", "foreignField": "author_ids", "as": "b"}}]
    stats = e.lookup_stage_stats(db.authors, pipeline)
    if backend.info.engine == "MongoDB":  # a real server reports the stage's work or its join strategy
        assert stats is not None and ("totalDocsExamined" in stats or "strategy" in stats)
    else:  # SecantusDB leaves the stage without statistics; the mock has no explain command
        assert stats is None


class _ExplainOnly:
    """A stand-in collection whose database answers explain with a fixed document (shapes of real servers)."""

    name = "authors"

    def __init__(self, plan):
        self.database = self
        self._plan = plan

    def command(self, *args, **kwargs):
        return self._plan

    def find(self, *args, **kwargs):  # pragma: no cover - only its presence is checked
        raise AssertionError

    insert_one = find


def test_lookup_stage_stats_reads_both_explain_shapes():
    classic = {"stages": [{"$cursor": {}}, {"$lookup": {"from": "books"}, "totalDocsExamined": 106320,
                                                        "totalKeysExamined": 0, "collectionScans": 30,
                                                        "indexesUsed": []}]}
    assert e.lookup_stage_stats(_ExplainOnly(classic), []) == {
        "totalKeysExamined": 0, "totalDocsExamined": 106320, "collectionScans": 30, "indexesUsed": []}
    sbe = {"queryPlanner": {"winningPlan": {"queryPlan": {
        "stage": "EQ_LOOKUP", "strategy": "IndexedLoopJoin", "indexName": "author_ids_1",
        "inputStage": {"stage": "COLLSCAN"}}}},
        "executionStats": {"totalKeysExamined": 3644, "totalDocsExamined": 3674}}
    assert e.lookup_stage_stats(_ExplainOnly(sbe), []) == {
        "strategy": "IndexedLoopJoin", "index": "author_ids_1",
        "totalKeysExamined (whole pipeline)": 3644, "totalDocsExamined (whole pipeline)": 3674}
    assert e.lookup_stage_stats(_ExplainOnly({"queryPlanner": {"winningPlan": {"stage": "COLLSCAN"}}}), []) is None


def test_two_way_references_write_both_sides(library):
    db, authors, books = library
    two_way = workbook_collection(db, "authors_two_way")
    two_way.insert_many(e.with_book_ids(authors, books))
    named = workbook_collection(db, "books_named")
    named.insert_many(e.books_with_author_names(authors, books))
    assert e.one_sided_references(two_way, named) == []
    solo = next(b for b in books if len(b["author_ids"]) == 1)
    others = [a for a in authors if a["_id"] != solo["author_ids"][0]]
    other = others[0]["_id"]
    with count_commands() as c:
        assert e.add_coauthor(two_way, named, solo["_id"], other) == {"books changed": 1, "authors changed": 1}
    assert c.commands == ["findAndModify", "update"] and c.docs_written == 2  # both sides, the name on the way
    assert named.find_one({"_id": solo["_id"]})["authors"][-1] == {"_id": other, "name": others[0]["name"]}
    assert e.add_coauthor(two_way, named, solo["_id"], others[1]["_id"]) == {"books changed": 1, "authors changed": 1}
    assert e.add_coauthor(two_way, named, solo["_id"], other) == {"books changed": 0, "authors changed": 0}  # again: nothing
    assert [a["_id"] for a in named.find_one({"_id": solo["_id"]})["authors"]] == \
        [solo["author_ids"][0], other, others[1]["_id"]]
    assert e.one_sided_references(two_way, named) == []
    # a write that updates one side only is found
    named.update_one({"_id": solo["_id"]}, {"$pull": {"authors": {"_id": other}}})
    assert e.one_sided_references(two_way, named) == [
        {"book": solo["_id"], "author": other, "recorded by": "author only"}]
    with pytest.raises(KeyError, match="no book"):
        e.add_coauthor(two_way, named, 10**6, other)
    assert 10**6 not in two_way.find_one({"_id": other})["book_ids"]  # the author's side taken back
    with pytest.raises(KeyError, match="no author"):
        e.add_coauthor(two_way, named, solo["_id"], 10**6)
    assert 10**6 not in [a["_id"] for a in named.find_one({"_id": solo["_id"]})["authors"]]


def test_the_catalogue_operations_in_each_design(library, backend):
    """A book page: one find_one with copied names, one aggregate with $lookup without (the same page,
    the authors in the book's order); a co-author with its name known: one update; a rename: one
    bulkWrite where the engine has it (caps.client_bulk_write), the same documents written."""
    db, authors, books = library
    named = workbook_collection(db, "books_named")
    named.insert_many(e.books_with_author_names(authors, books))
    two = next(b for b in books if len(b["author_ids"]) == 2)
    db.books.update_one({"_id": two["_id"]}, {"$set": {"author_ids": two["author_ids"][::-1]}})  # not in _id order
    named.update_one({"_id": two["_id"]}, {"$set": {"authors": named.find_one({"_id": two["_id"]})["authors"][::-1]}})
    for b in (two, books[0]):
        with count_commands() as c:
            page = e.book_page_lookup(db.books, db.authors, b["_id"])
        assert c.round_trips == 1 and page == named.find_one({"_id": b["_id"]})
    assert e.book_page_lookup(db.books, db.authors, 10**6) is None
    solo = next(b for b in books if len(b["author_ids"]) == 1)
    other = next(a for a in authors if a["_id"] != solo["author_ids"][0])
    with count_commands() as c:
        assert e.add_coauthor_named(named, solo["_id"], {"_id": other["_id"], "name": other["name"]}) == 1
    assert (c.round_trips, c.docs_written) == (1, 1)
    assert e.add_coauthor_named(named, solo["_id"], {"_id": other["_id"], "name": other["name"]}) == 0  # again: nothing
    with pytest.raises(KeyError, match="no book"):
        e.add_coauthor_named(named, 10**6, {"_id": other["_id"], "name": other["name"]})
    with pytest.raises(ValueError):
        e.add_coauthor_named(named, solo["_id"], {"_id": other["_id"]})
    copies = named.count_documents({"authors._id": other["_id"]})
    if not backend.info.caps.client_bulk_write:
        with pytest.raises((TypeError, OperationFailure)) as refused:  # the mock's client; MongoDB 7.0
            e.rename_author_bulk(db.client, db.authors, named, other["_id"], "Renamed")
        if refused.type is TypeError:  # said in the workbook's words, not the mock's "not callable"
            assert "has no bulk_write" in str(refused.value) and "caps.client_bulk_write" in str(refused.value)
        assert e.stale_copies(db.authors, named) == []  # nothing written
        return
    with count_commands() as c:
        changed = e.rename_author_bulk(db.client, db.authors, named, other["_id"], "Renamed")
    assert changed == {"authors changed": 1, "books changed": copies}
    assert (c.round_trips, c.commands, c.docs_written) == (1, ["bulkWrite"], 1 + copies)
    assert e.stale_copies(db.authors, named) == []
    with pytest.raises(KeyError, match="no author"):
        e.rename_author_bulk(db.client, db.authors, named, 10**6, "x")


# --------------------------------------------------------------------------------------------
# consistency: one document is atomic; two copies are not; a transaction makes them

def _named_library(db, n_books=12):
    authors = workbook_collection(db, "authors_c")
    books_named = workbook_collection(db, "books_named_c")
    authors.insert_many([{"_id": 1, "name": "n0"}, {"_id": 2, "name": "other"}])
    books_named.insert_many([{"_id": i, "authors": [{"_id": 2, "name": "other"}, {"_id": 1, "name": "n0"}]}
                             for i in range(n_books)])
    return authors, books_named


def test_one_document_update_is_never_seen_half_done(server_db):
    products = workbook_collection(server_db, "products_c")
    products.insert_one({"_id": 1, "version": 0, "label": "v0", "stock": 0, "history": []})
    seen = e.count_torn_reads(lambda v: e.update_product_version(products, 1, v),
                              lambda: e.product_is_consistent(products.find_one({"_id": 1})), writes=150, readers=2)
    assert seen.writes == 150 and seen.reads > 0 and seen.torn == 0
    doc = products.find_one({"_id": 1})
    assert e.product_is_consistent(doc) and doc["version"] == 150 and len(doc["history"]) == 150
    products.replace_one({"_id": 1}, {"version": 0, "label": "v0", "stock": 0, "history": []})
    slow = e.count_torn_reads(lambda v: e.update_product_version(products, 1, v),  # a reader slower than the writer
                              lambda: time.sleep(0.002) or e.product_is_consistent(products.find_one({"_id": 1})),
                              writes=10, min_reads=200)
    assert slow.reads >= 200 and slow.writes >= 10 and slow.torn == 0  # the writer went on until then
    assert products.find_one({"_id": 1})["version"] == slow.writes


def test_product_is_consistent_catches_each_half():
    good = {"version": 2, "label": "v2", "stock": 2, "history": [{"version": 1}, {"version": 2}]}
    assert e.product_is_consistent(good)
    assert e.product_is_consistent({"version": 0, "label": "v0", "stock": 0, "history": []})
    for broken in ({**good, "label": "v1"}, {**good, "stock": 1}, {**good, "history": good["history"][:1]}):
        assert not e.product_is_consistent(broken)


def test_two_copies_have_a_window_where_a_reader_sees_them_disagree(db):
    authors, books_named = _named_library(db)
    authors.update_one({"_id": 1}, {"$set": {"name": "n1"}})  # the rename's first write, not its second
    assert not e.author_copies_agree(authors, books_named, 1)
    e.rename_author(authors, books_named, 1, "n1")
    assert e.author_copies_agree(authors, books_named, 1)
    with pytest.raises(KeyError):
        e.author_copies_agree(authors, books_named, 99)


@pytest.mark.parametrize("indexed", [False, True])
def test_the_one_aggregate_reader_needs_the_index_on_the_copies(backend, db, indexed):
    """author_copies_agree_one_read finds the books that copy the name by the index on authors._id:
    between the rename's two writes it disagrees, after both it agrees, in one round trip. Without the
    index SecantusDB's foreignField through an array of documents matches nothing (docs/ENGINES.md),
    so the reader reads no copy and agrees: pinned here, so the docs change when the engine does."""
    authors, books_named = _named_library(db)
    if indexed:
        books_named.create_index("authors._id")
    authors.update_one({"_id": 1}, {"$set": {"name": "n1"}})  # the rename's first write, not its second
    with count_commands() as c:
        agrees = e.author_copies_agree_one_read(authors, books_named, 1)
    assert c.commands == ["aggregate"]
    assert agrees == (backend.info.engine == "SecantusDB" and not indexed)
    e.rename_author(authors, books_named, 1, "n1")
    assert e.author_copies_agree_one_read(authors, books_named, 1)
    with pytest.raises(KeyError):
        e.author_copies_agree_one_read(authors, books_named, 99)


def test_rename_in_a_transaction_is_never_seen_half_done(server_backend, server_db):
    if not server_backend.info.caps.transactions:
        pytest.skip("this server has no transactions (a standalone mongod)")
    client = server_backend.client
    authors, books_named = _named_library(server_db)
    seen = e.count_torn_reads(
        lambda v: e.rename_author_in_transaction(client, authors, books_named, 1, f"n{v}"),
        lambda: e.read_in_transaction(client, lambda s: e.author_copies_agree(authors, books_named, 1, session=s)),
        writes=40)
    assert seen.reads > 0 and seen.torn == 0
    assert authors.find_one({"_id": 1})["name"] == "n40" and e.stale_copies(authors, books_named) == []


def test_transaction_rolls_back_both_writes(server_backend, server_db):
    if not server_backend.info.caps.transactions:
        pytest.skip("this server has no transactions (a standalone mongod)")
    authors, books_named = _named_library(server_db)

    class Boom(Exception):
        pass

    def rename_then_fail(s):
        e.rename_author(authors, books_named, 1, "never", session=s)
        raise Boom

    with server_backend.client.start_session() as session, pytest.raises(Boom):
        session.with_transaction(rename_then_fail)
    assert authors.find_one({"_id": 1})["name"] == "n0" and e.stale_copies(authors, books_named) == []


def test_count_torn_reads_rejects_bad_input_and_raises_reader_errors(server_db):
    with pytest.raises(ValueError):
        e.count_torn_reads(lambda v: None, lambda: True, writes=0)
    with pytest.raises(ValueError):
        e.count_torn_reads(lambda v: None, lambda: True, min_reads=-1)

    def broken_reader():
        raise RuntimeError("reader broke")

    with pytest.raises(RuntimeError, match="reader broke"):
        e.count_torn_reads(lambda v: time.sleep(0.05), broken_reader, writes=3)


@pytest.mark.parametrize("mode", ["push", "insert"])
def test_hot_document_throughput_stores_every_write(server_db, mode):
    hot = workbook_collection(server_db, "hot_c")
    got = e.hot_document_throughput(hot, mode, threads=3, per_thread=20, review={"text": "ok", "rating": 4})
    assert got.writes == 60 and got.per_second > 0
    if mode == "push":
        assert len(hot.find_one({"_id": "hot"})["reviews"]) == 60
    else:
        assert hot.count_documents({"product_id": "hot"}) == 60
    with pytest.raises(ValueError):
        e.hot_document_throughput(hot, "upsert", 1, 1, {})


# --------------------------------------------------------------------------------------------
# the cut-over that loses nothing (migration)

def _catalogue(db):
    products = workbook_collection(db, "products_m")
    products.insert_many([{"_id": i, "reviews": [{"t": f"{i}-{k}", "date": DAY0 + timedelta(days=k)} for k in range(i % 4)]}
                          for i in range(1, 11)])
    return products, workbook_collection(db, "reviews_m")


def test_current_plan_loses_a_review_written_after_the_verification(db):
    products, reviews = _catalogue(db)
    report = e.migrate_reviews(products, reviews)
    assert e.verify_migration(products, reviews) == []
    e.add_review_embedded(products, 3, {"t": "late"})  # the application still writes to the array
    truth = e.review_digests(products, embedded=True)
    e.drop_embedded_reviews(products, report.per_product)
    after = e.review_digests(reviews, embedded=False)
    assert [p for p in truth if truth[p] != after.get(p)] == [3]  # lost, silently


def test_flagged_cut_over_loses_nothing_written_during_it(db):
    products, reviews = _catalogue(db)
    truth = {d["_id"]: list(d["reviews"]) for d in products.find({})}
    where = []

    def late_writes(batch):  # one review into a product already moved, one into a product not yet
        for pid in (batch[0], 10):
            review = {"t": f"late-{pid}-{len(truth[pid])}", "date": LATE + timedelta(minutes=len(truth[pid]))}
            where.append(e.add_review(products, reviews, pid, review))
            truth[pid].append(review)

    e.migrate_reviews_flagged(products, reviews, batch_size=3, after_batch=late_writes)
    assert "array" in where and "collection" in where
    assert e.review_digests(reviews, embedded=False) == e.review_digests_of(truth)
    assert products.count_documents({"reviews": {"$exists": True}}) == 0
    assert products.count_documents({"reviews_in": "collection"}) == 10
    for pid in (1, 10):
        assert e.product_page(products, pid, reviews=reviews)["reviews"] == truth[pid]
    assert e.add_review(products, reviews, 2, {"t": "after"}) == "collection"
    e.migrate_reviews_flagged(products, reviews)  # safe to run again: nothing left to move, nothing deleted
    truth[2].append({"t": "after"})
    assert e.review_digests(reviews, embedded=False) == e.review_digests_of(truth)
    with pytest.raises(KeyError):
        e.add_review(products, reviews, 99, {"t": "x"})


class _Crash(Exception):
    """The injected failure: the migration killed right after one of its steps."""


def _step(method, args):
    """Which step of ``migrate_reviews_flagged`` a collection call is (None: another call)."""
    if method == "bulk_write":
        return "upsert"
    if method == "update_many":
        return "unset" if "$unset" in args[1] else "flag"
    return "read" if method == "find" and "reviews" in args[0] else None


class _Watched:
    """A collection whose migration steps call ``hook(step)`` right after they complete: the hook
    raises :class:`_Crash` to kill the migration there, or writes and reads as the application would."""

    def __init__(self, collection, hook):
        self._collection, self._hook = collection, hook

    def __getattr__(self, name):
        attr = getattr(self._collection, name)
        if name not in ("update_many", "find", "bulk_write"):
            return attr

        def then_hook(*args, **kwargs):
            out = attr(*args, **kwargs)
            if _step(name, args):
                self._hook(_step(name, args))
            return out
        return then_hook


def _assert_migrated(products, reviews, truth):
    """Every review acknowledged is in ``reviews`` once, in order; no array left; counts right."""
    assert e.review_digests(reviews, embedded=False) == e.review_digests_of(truth)
    assert reviews.count_documents({}) == sum(len(rs) for rs in truth.values())  # no duplicate
    assert products.count_documents({"reviews": {"$exists": True}}) == 0
    assert {p["_id"]: (p["reviews_in"], p["review_count"]) for p in products.find({})} == {
        pid: ("collection", len(rs)) for pid, rs in truth.items()}


@pytest.mark.parametrize("batch", [1, 2, 4])  # of the 4 batches of 3 products
@pytest.mark.parametrize("step", ["flag", "read", "upsert", "unset"])
def test_flagged_cut_over_finishes_after_a_crash_at_any_step(db, step, batch):
    """Killed after any step, then a review written to every product, then run again: nothing lost."""
    products, reviews = _catalogue(db)
    truth = {d["_id"]: list(d["reviews"]) for d in products.find({})}
    seen = []

    def crash(done):
        seen.append(done)
        if done == step and seen.count(step) == batch:
            raise _Crash(f"killed after {step} of batch {batch}")

    with pytest.raises(_Crash):
        e.migrate_reviews_flagged(_Watched(products, crash), _Watched(reviews, crash), batch_size=3)
    for pid in truth:  # the application writes on between the crash and the rerun
        review = {"t": f"between-{pid}"}
        e.add_review(products, reviews, pid, review)
        truth[pid].append(review)
    e.migrate_reviews_flagged(products, reviews, batch_size=3)
    _assert_migrated(products, reviews, truth)
    e.migrate_reviews_flagged(products, reviews, batch_size=3)  # and once more: nothing changes
    _assert_migrated(products, reviews, truth)


@pytest.mark.parametrize("step", ["flag", "read", "upsert", "unset"])
def test_product_reviews_shows_every_review_at_every_step_and_after_a_crash(db, step):
    products, reviews = _catalogue(db)
    truth = {d["_id"]: list(d["reviews"]) for d in products.find({})}
    crashed = []

    def write_and_read(done):  # a review for a product moved first and one for the last, then every page
        for pid in (1, 10):
            review = {"t": f"{done}-{pid}-{len(truth[pid])}"}
            e.add_review(products, reviews, pid, review)
            truth[pid].append(review)
        assert {pid: e.product_reviews(products, reviews, pid) for pid in truth} == truth, f"after {done}"
        if done == step and not crashed and products.count_documents({"reviews_in": "collection"}) >= 6:
            crashed.append(done)
            raise _Crash(f"killed after {step}")  # in the second batch, once

    with pytest.raises(_Crash):
        e.migrate_reviews_flagged(_Watched(products, write_and_read), _Watched(reviews, write_and_read),
                                  batch_size=3)
    assert {pid: e.product_reviews(products, reviews, pid) for pid in truth} == truth  # while it is down
    e.migrate_reviews_flagged(_Watched(products, write_and_read), _Watched(reviews, write_and_read), batch_size=3)
    _assert_migrated(products, reviews, truth)
    assert {pid: e.product_reviews(products, reviews, pid) for pid in truth} == truth


class _MigratesAfterTheProductRead:
    """Products whose ``aggregate`` reads the product with the pipeline's first stage (its ``$match``),
    then lets the whole migration run, then runs the whole pipeline on the product as it was read (a
    copy in a scratch collection of the same database) against the migrated reviews: the pipeline's
    own read order, with the migration in between, deterministically."""

    def __init__(self, products, reviews, stale):
        self._products, self._reviews, self._stale, self.migrated = products, reviews, stale, False

    def __getattr__(self, name):
        return getattr(self._products, name)

    def aggregate(self, pipeline):
        assert next(iter(pipeline[0])) == "$match"  # the product is read first, by itself
        read = list(self._products.aggregate(pipeline[:1]))
        e.migrate_reviews_flagged(self._products, self._reviews)
        self.migrated = True
        if read:
            self._stale.insert_many(read)
        return self._stale.aggregate(pipeline)


def test_product_reviews_reads_the_array_before_the_collection(db):
    """The migration copies then unsets between the product read and the collection read: the page
    still shows each review once."""
    products, reviews = _catalogue(db)
    e.add_review(products, reviews, 3, {"t": "late"})
    expected = products.find_one({"_id": 3})["reviews"]
    assert len(expected) == 4
    stale = workbook_collection(db, "products_stale")
    racing = _MigratesAfterTheProductRead(products, reviews, stale)
    assert e.product_reviews(racing, reviews, 3) == expected
    assert racing.migrated and products.find_one({"_id": 3}, {"reviews": 1}) == {"_id": 3}  # it ran in between
    assert len(stale.find_one({"_id": 3})["reviews"]) == 4  # and the page used the array as read before
    assert e.product_reviews(products, reviews, 3) == expected
    assert e.product_reviews(products, reviews, "no such product") is None
    with pytest.raises(TypeError, match="reviews must be a collection"):
        e.product_reviews(products, "reviews", 3)
    elsewhere = SimpleNamespace(find=None, insert_one=None, name="reviews_m", database=SimpleNamespace(name="other"))
    with pytest.raises(ValueError, match="reviews must be in the products' database"):
        e.product_reviews(products, elsewhere, 3)


def test_first_copy_of_a_batch_without_reviews(db):
    """A first copy whose batch holds only products with ``reviews: []`` has nothing to write there."""
    products = workbook_collection(db, "products_m")
    products.insert_many([{"_id": 1, "reviews": []}, {"_id": 2, "reviews": []}, {"_id": 3, "reviews": [{"t": "a"}]}])
    reviews = workbook_collection(db, "reviews_m")
    report = e.migrate_reviews(products, reviews, batch_size=2)
    assert (report.products, report.reviews_copied, report.bulk_writes) == (3, 1, 1)
    assert e.verify_migration(products, reviews) == []
    report = e.migrate_reviews(workbook_collection(db, "products_m"), workbook_collection(db, "empty_m"),
                               only=[1, 2])
    assert (report.products, report.reviews_copied, report.bulk_writes) == (2, 0, 0)
    assert "product_id_1_date_1" in db["empty_m"].index_information()


def test_priced_adds_the_server_work_of_each_query_where_the_engine_explains(backend, db):
    products, docs = _products(db, 10)
    reviews = workbook_collection(db, "reviews")
    e.migrate_reviews(products, reviews)  # builds the (product_id, date) index
    k = len(products.find_one({"_id": 5})["reviews"])
    assert k > 0
    with count_commands() as c:
        e.product_page_lookup(products, reviews, 5)
    page = e.priced(c, (products, {"_id": 5}), (reviews, {"product_id": 5}, [("date", 1)]))
    assert (page["round trips"], page["docs returned"], page["index keys written"]) == (1, 1, 0)
    with count_commands(index_keys={reviews: {"product_id": 5}}) as c:
        e.add_review_referenced(reviews, 5, {"t": "new", "date": LATE})
    insert = e.priced(c, info=backend.info)
    assert (insert["docs written"], insert["index keys written"]) == (1, 2)  # _id and (product_id, date)
    if not backend.info.caps.explain:
        assert "docs examined" not in page and "keys examined" not in insert  # left out, never zero
        return
    assert (page["keys examined"], page["docs examined"]) == (1 + k, 1 + k)
    assert (insert["keys examined"], insert["docs examined"]) == (0, 0)  # an insert finds nothing first


def test_reviews_query_plans_show_the_engines_plan_as_sent_and_covered(backend, db):
    products, _docs = _products(db, 10)
    reviews = workbook_collection(db, "reviews")
    e.migrate_reviews(products, reviews)
    k = reviews.count_documents({"product_id": 5})
    before = reviews.index_information()
    if not backend.info.caps.explain:
        return
    sent, covered = e.reviews_query_plans(reviews, 5)
    assert reviews.index_information() == before  # the covering index is dropped again
    assert "IXSCAN" in sent["stages"] and (sent["keys examined"], sent["docs examined"]) == (k, k)
    assert "IXSCAN" in covered["stages"] and covered["keys examined"] == k
    if backend.info.engine == "SecantusDB":  # docs/ENGINES.md: it sorts what the index orders, and covers nothing
        assert "SORT" in sent["stages"] and "FETCH" in covered["stages"] and covered["docs examined"] == k
    elif backend.info.engine == "MongoDB":
        assert "SORT" not in sent["stages"] and covered["docs examined"] == 0


def test_flagged_cut_over_after_an_earlier_migration_keeps_review_count(db):
    """A product already moved by migrate_reviews + drop_embedded_reviews keeps its review_count when
    the flagged migration flags it, so the next add_review takes a new position (no E11000)."""
    products, reviews = _catalogue(db)
    truth = {d["_id"]: list(d["reviews"]) for d in products.find({})}
    report = e.migrate_reviews(products, reviews, only=[2, 3])
    e.drop_embedded_reviews(products, report.per_product)
    assert products.find_one({"_id": 3}) == {"_id": 3, "review_count": 3}
    e.migrate_reviews_flagged(products, reviews, batch_size=4)
    for pid in truth:
        review = {"t": f"after-{pid}"}
        assert e.add_review(products, reviews, pid, review) == "collection"
        truth[pid].append(review)
    _assert_migrated(products, reviews, truth)
    assert {pid: e.product_reviews(products, reviews, pid) for pid in truth} == truth


def test_product_reviews_is_one_round_trip(db):
    products, reviews = _catalogue(db)
    e.migrate_reviews_flagged(products, reviews, batch_size=4,
                              after_batch=lambda batch: batch[0] == 1 and e.add_review(products, reviews, 9, {"t": "x"}))
    e.add_review(products, reviews, 3, {"t": "late"})
    with count_commands() as sent:
        got = e.product_reviews(products, reviews, 3)
    assert [r["t"] for r in got] == ["3-0", "3-1", "3-2", "late"]
    assert sent.round_trips == 1, sent.commands
    with count_commands() as sent:
        assert e.product_reviews(products, reviews, "no such product") is None
    assert sent.round_trips == 1, sent.commands


def test_a_review_cannot_override_the_meta_fields(db):
    """A review holding ``product_id`` or ``n`` keeps the collection's own: the meta fields win."""
    products = workbook_collection(db, "products_m")
    bad = {"t": "a", "product_id": "forged", "n": 99}
    products.insert_many([{"_id": 1, "reviews": [bad]}, {"_id": 2, "reviews": [bad]}, {"_id": 3}])
    reviews = workbook_collection(db, "reviews_m")
    e.migrate_reviews(products, reviews, only=[1])
    e.migrate_reviews_flagged(workbook_collection(db, "products_m"), workbook_collection(db, "reviews_f"))
    e.add_review(products, reviews, 1, bad)  # flagged now: into the collection
    e.add_review(products, db["reviews_f"], 2, bad)
    got = sorted((c.name, r["_id"], r["product_id"], r["n"], r["t"]) for c in (reviews, db["reviews_f"])
                 for r in c.find({}))
    assert got == [("reviews_f", "1-0", 1, 0, "a"), ("reviews_f", "2-0", 2, 0, "a"), ("reviews_f", "2-1", 2, 1, "a"),
                   ("reviews_m", "1-0", 1, 0, "a"), ("reviews_m", "1-1", 1, 1, "a")]


def test_keyed_reviews_a_page_is_one_range_of_id(backend, db):
    """The keyed layout: a review's _id is {p: product, d: date, a: author}; the page is one
    aggregate whose $lookup reads the product's _id range (the neighbours' reviews left out), in date
    order, the same page as the product_id index gives; an insert writes one index key, not two.
    Where the engine serves an _id range by the index (caps.id_range_index), the page's query is an
    index scan of the product's reviews; where it does not, a scan of them all (its explain says so)."""
    products, docs = _products(db, 10)
    reviews = workbook_collection(db, "reviews")
    e.migrate_reviews(products, reviews)
    keyed = workbook_collection(db, "keyed_reviews")
    keyed.insert_many([e.keyed_review(r["product_id"], r) for r in reviews.find({}, batch_size=10_000)])
    pid = next(p["_id"] for p in docs if len(p["reviews"]) > 1 and p["_id"] not in (docs[0]["_id"], docs[-1]["_id"]))
    by_index = e.product_page_lookup(products, reviews, pid)
    with count_commands() as c:
        page = e.product_page_keyed(products, keyed, pid)
    assert (c.commands, c.docs_returned) == (["aggregate"], 1)
    assert page == by_index and page["reviews"] == next(p for p in docs if p["_id"] == pid)["reviews"]
    assert e.product_page_keyed(products, keyed, "no such product") is None
    review = {"author": "user0", "rating": 5, "text": "new", "date": LATE}
    with count_commands(index_keys={keyed: e.keyed_page_filter(pid)}) as c:
        e.add_review_keyed(keyed, pid, review)
    assert (c.round_trips, c.docs_written, c.index_keys_written) == (1, 1, 1)  # the _id index only
    assert e.product_page_keyed(products, keyed, pid)["reviews"][-1] == review
    with pytest.raises(DuplicateKeyError):  # the same review again: the same key, refused (a retry stores it once)
        e.add_review_keyed(keyed, pid, review)
    assert keyed.count_documents(e.keyed_page_filter(pid)) == len(by_index["reviews"]) + 1
    if backend.info.caps.explain:
        from helpers.plans import explain_find
        stages, keys, examined = explain_find(keyed, e.keyed_page_filter(pid), [("_id", 1)])
        if backend.info.caps.id_range_index:
            assert "IXSCAN" in stages and examined == len(by_index["reviews"]) + 1
        else:  # docs/ENGINES.md: it scans the whole collection for an _id range
            assert "COLLSCAN" in stages and examined == keyed.count_documents({})


@pytest.mark.parametrize("form, into_array, into_collection", [
    (e.add_review, ["findAndModify"], ["findAndModify", "insert"]),
    (e.add_review_push_first, ["update"], ["update", "findAndModify", "insert"])])
def test_add_review_one_find_one_and_update_decides_on_the_product(db, form, into_array, into_collection):
    """add_review is one findAndModify with an update pipeline (then the insert, once flagged): one
    round trip into the array, two into the collection; the push-first form takes three there. Both
    store the same: the review appended (a "$"-string kept as it is), or inserted at the next position."""
    products, reviews = _catalogue(db)
    products.update_one({"_id": 3}, {"$set": {"reviews_in": "collection", "review_count": 5}})  # flagged
    products.update_one({"_id": 5}, {"$set": {"review_count": 2}, "$unset": {"reviews": ""}})  # moved earlier, no flag
    review = {"t": "$not a field path", "date": LATE}
    with count_commands() as c:
        assert form(products, reviews, 1, review) == "array"
    assert c.commands == into_array
    assert products.find_one({"_id": 1})["reviews"][-1] == review
    with count_commands() as c:
        assert form(products, reviews, 3, review) == "collection"
    assert c.commands == into_collection
    assert reviews.find_one({"_id": "3-5"}, {"_id": 0}) == {**review, "product_id": 3, "n": 5}
    assert products.find_one({"_id": 3}) == {"_id": 3, "reviews": [{"t": "3-0", "date": DAY0}, {"t": "3-1", "date": DAY0 + timedelta(days=1)},
                                                               {"t": "3-2", "date": DAY0 + timedelta(days=2)}],
                                             "reviews_in": "collection", "review_count": 6}  # its array left alone
    # moved earlier (migrate_reviews, drop_embedded_reviews): into the collection at its next position, never
    # an array whose review would take position 0, another review's place (flagged now: the migration agrees)
    assert form(products, reviews, 5, review) == "collection"
    assert products.find_one({"_id": 5}) == {"_id": 5, "review_count": 3, "reviews_in": "collection"}
    assert reviews.find_one({"_id": "5-2"}, {"_id": 0}) == {**review, "product_id": 5, "n": 2}
    assert products.find_one({"_id": 2}).keys() == {"_id", "reviews"}  # an unflagged product keeps no new field
    form(products, reviews, 2, review)
    assert products.find_one({"_id": 2}).keys() == {"_id", "reviews"}
    with pytest.raises(KeyError, match="no product"):
        form(products, reviews, 99, review)
    before = (list(products.find({}, sort=[("_id", 1)])), list(reviews.find({}, sort=[("_id", 1)])))
    with pytest.raises(TypeError, match="a dict"):
        form(products, reviews, 3, ["not", "a", "document"])
    assert (list(products.find({}, sort=[("_id", 1)])), list(reviews.find({}, sort=[("_id", 1)]))) == before
    # a review's own _id never takes another's place: the product gives it its position, as n and product_id
    assert form(products, reviews, 3, {**review, "_id": "3-0", "n": 0}) == "collection"
    assert reviews.find_one({"_id": "3-6"}, {"_id": 0}) == {**review, "product_id": 3, "n": 6}
    assert reviews.count_documents({"_id": "3-0"}) == 0
