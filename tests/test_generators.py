"""The seeded generators of ``helpers.generators``: same bytes for the same seed, and the shapes the
lessons rely on (notebooks 01, 02, 03). No database needed."""
from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter

import bson
import numpy as np
import pytest

from helpers import generators as g


def _digest(docs: list[dict]) -> str:
    h = hashlib.sha256()
    for doc in docs:
        h.update(bson.encode(doc))
    return h.hexdigest()


# Computed once (numpy 2.4, Python 3.11) and checked on every run: a change means the generated
# data changed, and the notebooks' printed numbers with it. If the change is intended, recompute
# with the expression in the test and update the constant in the same commit.
DIGESTS = {
    "products": "e1e3b4a6466b429c89e0de57da2e797c1547b4e65e0eed87e91faeb8111dd98e",
    "posts": "5b28d9640079f3c6b1fe8175bdc2b76592546d6f2459b44092041c15113bb6f1",
    "authors": "105324514fc132d8aab165828022d03ab0f1b7fd28c6ea48240d0e1c09feadd6",
    "books": "8c75bc490cd5e677924909c72c50e02e8e60b506a600e17206100af9b1087968",
    "categories": "b4996280416204255baf6c2752a7d732b954c19f4314ac838476611a451f6673",
}


@pytest.fixture(scope="module")
def posts2000() -> list[dict]:
    return g.posts_with_comments(2000, seed=7)


@pytest.fixture(scope="module")
def tree() -> list[dict]:
    return g.category_tree(20, seed=7)


def test_digests_are_stable() -> None:
    authors, books = g.authors_and_books(10, 7)
    actual = {
        "products": _digest(g.products_with_reviews(200, 7)),
        "posts": _digest(g.posts_with_comments(300, 7)),
        "authors": _digest(authors),
        "books": _digest(books),
        "categories": _digest(g.category_tree(5, 7)),
    }
    changed = {k: v for k, v in actual.items() if v != DIGESTS[k]}
    assert not changed, (f"generated data changed for {sorted(changed)}: if intended, update DIGESTS "
                         f"in tests/test_generators.py to {changed}")


def test_same_seed_same_documents_other_seed_differs() -> None:
    assert g.products_with_reviews(50, 3) == g.products_with_reviews(50, 3)
    assert g.products_with_reviews(50, 3) != g.products_with_reviews(50, 4)


def test_documents_are_plain_bson_and_round_trip() -> None:
    for doc in g.products_with_reviews(20, 1) + g.posts_with_comments(20, 1) + g.category_tree(2, 1):
        assert bson.decode(bson.encode(doc)) == doc  # naive UTC datetimes in whole seconds


def test_products_reviews_shape() -> None:
    products = g.products_with_reviews(1000, 7)
    counts = np.array([len(p["reviews"]) for p in products])
    assert [p["_id"] for p in products] == list(range(1, 1001))
    assert 2 <= np.median(counts) <= 6  # ceil(exp(N(1.3, 1.3))): median about 4
    assert counts.max() >= 50  # and a long tail
    ratings = Counter(r["rating"] for p in products for r in p["reviews"])
    assert set(ratings) == {1, 2, 3, 4, 5} and ratings[5] > ratings[1]
    review = products[0]["reviews"][0]
    assert set(review) == {"author", "rating", "text", "date"}
    assert isinstance(review["date"], dt.datetime) and review["date"] >= products[0]["added"]


def test_posts_outliers(posts2000: list[dict]) -> None:
    counts = np.array([len(p["comments"]) for p in posts2000])
    assert 5 <= np.median(counts) <= 20
    assert np.percentile(counts, 99) < 1000
    assert 1000 < counts.max() <= g.MAX_COMMENTS
    assert counts.min() >= 5


def test_comments_fields(posts2000: list[dict]) -> None:
    post = max(posts2000, key=lambda p: len(p["comments"]))
    seqs = [c["seq"] for c in post["comments"]]
    assert seqs == list(range(1, len(seqs) + 1))
    times = [c["ts"] for c in post["comments"]]
    assert times == sorted(times) and times[0] > post["date"]
    assert max(len(c["text"]) for c in post["comments"]) < 40  # short: full scale stays manageable


def test_authors_and_books_many_to_many() -> None:
    authors, books = g.authors_and_books(30, 7)
    assert [a["_id"] for a in authors] == list(range(1, 31))
    ids = {a["_id"] for a in authors}
    assert all(set(b["author_ids"]) <= ids for b in books)
    two = [b for b in books if len(b["author_ids"]) == 2]
    assert 0 < len(two) < 0.1 * len(books)  # a few books have two authors
    assert all(b["author_ids"][0] != b["author_ids"][1] for b in two)
    per_author = Counter(b["author_ids"][0] for b in books)
    assert 20 <= np.median(list(per_author.values())) <= 300  # lognormal(4.4, 1.0): median about 81
    assert max(per_author.values()) <= 500


def test_category_tree_shape(tree: list[dict]) -> None:
    by_id = {n["_id"]: n for n in tree}
    depths = [n["path"].count("/") for n in tree]
    assert max(depths) <= 7
    parents = {n["parent_id"] for n in tree if n["parent_id"] is not None}
    leaves = 1 - len(parents) / len(tree)
    assert 0.80 <= leaves <= 0.90, leaves
    for node in tree:
        assert "/" not in node["name"]
        if node["parent_id"] is None:
            assert node["path"] == "/" + node["name"]
        else:
            assert node["path"] == by_id[node["parent_id"]]["path"] + "/" + node["name"]
    assert sum(n["parent_id"] is None for n in tree) == 20
    assert "/Electronics/Phones/Smartphones" in {n["path"] for n in tree}
    paths = [n["path"] for n in tree]
    assert len(paths) == len(set(paths))  # sibling names are unique
