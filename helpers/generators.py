"""Seeded generators for the data no package ships: reviews, comments, authors and books, categories.

Each generator takes ``n`` (the number of *parent* records) and ``seed`` and returns plain ``dict``
documents that are byte-identical for the same arguments on every run and machine:

* one ``numpy.random.default_rng(seed)`` per call, drawn in a fixed order (no set or dict order),
* floats rounded, datetimes naive UTC in whole seconds from a fixed base (BSON keeps milliseconds,
  so a document read back from any engine equals the one generated),
* ``_id`` values are 1-based integers in generation order.

The shapes follow distributions fitted to real data (see ``docs/DATA_SOURCES.md``):

* children per parent, "most have 3, a few have hundreds": ``ceil(exp(Normal(1.3, 1.3)))``;
* the viral post: a truncated Zipf tail (a = 1.3) capped at 50,000 comments;
* authors and books: books per author lognormal(4.4, 1.0), co-authors by Zipf (a = 1.5) popularity;
* categories: lognormal children per node, depth up to 7, about 85% leaves.

Used by notebook 01 (embed vs reference: ``products_with_reviews``, ``authors_and_books``),
notebook 02 (the outlier pattern: ``posts_with_comments``) and notebook 03 (trees:
``category_tree``). ``helpers.datasets.load_dataset`` loads them as ``products``, ``posts``,
``authors_books`` and ``categories``.
"""
from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np

__all__ = [
    "BASE_DATE",
    "MAX_COMMENTS",
    "products_with_reviews",
    "reviews",
    "posts_with_comments",
    "authors_and_books",
    "category_tree",
]

Document = dict[str, Any]

#: every generated date is this instant plus a whole number of seconds (naive, meaning UTC)
BASE_DATE = _dt.datetime(2024, 1, 1)
#: the cap of the viral-post tail (the lesson's "50,000 comments")
MAX_COMMENTS = 50_000
_YEAR_SECONDS = 365 * 24 * 3600

_WORDS = (
    "great", "fast", "cheap", "broken", "love", "works", "battery", "screen", "size", "color",
    "quality", "price", "delivery", "again", "never", "always", "easy", "hard", "nice", "bad",
    "thanks", "agree", "wrong", "right", "why", "how", "yes", "no", "maybe", "wow",
)
_REVIEW_WORDS = _WORDS[:20]  # a review's vocabulary (reviews())
#: ratings 1-5, skewed to 4 and 5 as on real shops
_RATING_P = np.array([0.05, 0.07, 0.13, 0.30, 0.45])
_ADJECTIVES = (
    "Smart", "Compact", "Classic", "Portable", "Wireless", "Outdoor", "Kids", "Vintage", "Pro",
    "Eco", "Mini", "Deluxe", "Travel", "Digital", "Organic", "Heavy-Duty",
)
_NOUNS = (
    "Lamps", "Chargers", "Cables", "Mugs", "Chairs", "Tables", "Speakers", "Cameras", "Boots",
    "Jackets", "Bags", "Watches", "Pens", "Plates", "Tools", "Toys", "Rugs", "Kettles", "Fans",
    "Headphones", "Bikes", "Tents", "Books", "Games",
)
_TOP_CATEGORIES = (
    "Electronics", "Home & Garden", "Apparel", "Sports", "Toys & Games", "Books", "Health",
    "Beauty", "Automotive", "Office", "Pets", "Food & Drink", "Music", "Baby", "Tools", "Jewelry",
    "Arts & Crafts", "Travel", "Software", "Furniture",
)
_FIRST_NAMES = ("Ada", "Ben", "Chloe", "Dev", "Eva", "Femi", "Gus", "Hana", "Ivan", "Jun", "Kai",
                "Lena", "Mo", "Nia", "Omar", "Pia", "Quinn", "Rosa", "Sam", "Tara")
_LAST_NAMES = ("Abe", "Berg", "Costa", "Diaz", "Eng", "Fox", "Gray", "Holm", "Ito", "Jones", "Khan",
               "Lund", "Moss", "Nagy", "Ortiz", "Park", "Quist", "Ruiz", "Sato", "Tran")


def _date(seconds: int) -> _dt.datetime:
    return BASE_DATE + _dt.timedelta(seconds=int(seconds))


def _text(rng: np.random.Generator, low: int, high: int) -> str:
    k = int(rng.integers(low, high + 1))
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), size=k))


def _children_counts(rng: np.random.Generator, n: int, mu: float, sigma: float, cap: int) -> list[int]:
    draws = np.ceil(np.exp(rng.normal(mu, sigma, size=n)))
    return [int(min(max(c, 1), cap)) for c in draws]


def products_with_reviews(n: int, seed: int = 7) -> list[Document]:
    """``n`` products, each with an embedded ``reviews`` array (notebook 01: embed vs reference).

    Reviews per product: ``ceil(exp(Normal(1.3, 1.3)))`` (median 4, a few in the hundreds),
    capped at 10,000 (the product a celebrity liked). Each review: ``author``, ``rating`` 1-5
    (skewed to 4 and 5 as on real shops), short ``text`` and ``date`` after the product's ``added``.
    """
    rng = np.random.default_rng(seed)
    counts = _children_counts(rng, n, 1.3, 1.3, 10_000)
    rating_p = _RATING_P
    products = []
    for i, k in enumerate(counts):
        added = int(rng.integers(0, _YEAR_SECONDS))
        name = f"{_ADJECTIVES[int(rng.integers(len(_ADJECTIVES)))]} {_NOUNS[int(rng.integers(len(_NOUNS)))]}"
        price = round(float(np.exp(rng.normal(3.0, 1.0))), 2)
        authors = rng.integers(1, 50_001, size=k)
        ratings = rng.choice(5, size=k, p=rating_p) + 1
        offsets = np.cumsum(rng.integers(60, 7 * 24 * 3600, size=k))
        reviews = [
            {"author": f"user{int(authors[j])}", "rating": int(ratings[j]),
             "text": _text(rng, 3, 12), "date": _date(added + int(offsets[j]))}
            for j in range(k)
        ]
        products.append({"_id": i + 1, "name": name, "price": price, "added": _date(added),
                         "reviews": reviews})
    return products


def reviews(n: int, seed: int) -> list[Document]:
    """``n`` reviews shaped like the products' (author, rating, text of 3-12 words, date), seeded.

    Notebook 01 (growth and the 16 MiB limit: reviews pushed onto one product); also
    ``helpers.embedding.synthetic_reviews``.
    """
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, not {n!r}")
    rng = np.random.default_rng(seed)
    authors = rng.integers(1, 50_001, size=n)
    ratings = rng.choice(5, size=n, p=_RATING_P) + 1
    lengths = rng.integers(3, 13, size=n)
    words = rng.integers(0, len(_REVIEW_WORDS), size=(n, 12))
    seconds = np.cumsum(rng.integers(60, 3600, size=n))
    return [{"author": f"user{int(authors[i])}", "rating": int(ratings[i]),
             "text": " ".join(_REVIEW_WORDS[w] for w in words[i, :lengths[i]]),
             "date": _date(int(seconds[i]))} for i in range(n)]


def _comment_counts(rng: np.random.Generator, n: int) -> list[int]:
    """5-20 comments for most posts; 2% are viral: 20 + truncated Zipf(1.3), at most 50,000."""
    counts = rng.integers(5, 21, size=n)
    viral = rng.random(size=n) < 0.02
    result = []
    for base, is_viral in zip(counts, viral):
        if not is_viral:
            result.append(int(base))
            continue
        extra = int(rng.zipf(1.3))
        while extra > MAX_COMMENTS - 20:  # truncate the tail by redrawing
            extra = int(rng.zipf(1.3))
        result.append(20 + extra)
    return result


def posts_with_comments(n: int, seed: int = 7) -> list[Document]:
    """``n`` posts with embedded ``comments`` (notebook 02: the outlier pattern).

    Most posts have 5-20 comments; about 2% are viral with a truncated Zipf (a = 1.3) tail capped
    at 50,000, so the 99th percentile stays well under 1,000 while ``n=2000`` holds posts with
    thousands of comments. Each comment: ``seq`` (1..k in order), ``author``, short ``text``, ``ts``.
    """
    rng = np.random.default_rng(seed)
    counts = _comment_counts(rng, n)
    posts = []
    for i, k in enumerate(counts):
        posted = int(rng.integers(0, _YEAR_SECONDS))
        authors = rng.integers(1, 100_001, size=k)
        offsets = np.cumsum(rng.integers(1, 600, size=k))
        words = rng.integers(0, len(_WORDS), size=(k, 3))
        comments = [
            {"seq": j + 1, "author": f"user{int(authors[j])}",
             "text": " ".join(_WORDS[w] for w in words[j]), "ts": _date(posted + int(offsets[j]))}
            for j in range(k)
        ]
        posts.append({"_id": i + 1, "title": _text(rng, 3, 7), "author": f"user{int(rng.integers(1, 100_001))}",
                      "date": _date(posted), "comments": comments})
    return posts


def authors_and_books(n: int, seed: int = 7) -> tuple[list[Document], list[Document]]:
    """``n`` authors and their books, many-to-many (notebook 01: embed vs reference).

    Books per author: ``ceil(lognormal(4.4, 1.0))`` (median 81), capped at 500 so a small ``n``
    stays small. About 3% of books have a second author, picked by Zipf (a = 1.5) popularity among
    the other authors. Returns ``(authors, books)``; authors have ``name``, books have ``title``,
    ``year`` and ``author_ids`` (the first author first).
    """
    rng = np.random.default_rng(seed)
    authors = [{"_id": i + 1,
                "name": f"{_FIRST_NAMES[int(rng.integers(len(_FIRST_NAMES)))]} "
                        f"{_LAST_NAMES[int(rng.integers(len(_LAST_NAMES)))]}"}
               for i in range(n)]
    degrees = _children_counts(rng, n, 4.4, 1.0, 500)
    books = []
    for author_id, k in enumerate(degrees, start=1):
        years = rng.integers(1950, 2025, size=k)
        shared = rng.random(size=k) < 0.03
        for j in range(k):
            author_ids = [author_id]
            if shared[j] and n > 1:
                other = author_id
                while other == author_id or other > n:
                    other = int(rng.zipf(1.5))
                author_ids.append(other)
            books.append({"_id": len(books) + 1, "title": _text(rng, 2, 5).title(),
                          "year": int(years[j]), "author_ids": author_ids})
    return authors, books


# children per internal node: ceil(exp(Normal(1.75, 0.55))), mean about 6.7, so about 85% of all
# nodes are leaves; the chance that a node has children falls with depth, and depth 7 is a leaf.
_P_INTERNAL = {1: 1.0, 2: 0.6, 3: 0.35, 4: 0.2, 5: 0.12, 6: 0.08, 7: 0.0}
MAX_DEPTH = 7


def _unique_name(rng: np.random.Generator, taken: set[str]) -> str:
    for _ in range(5):
        name = f"{_ADJECTIVES[int(rng.integers(len(_ADJECTIVES)))]} {_NOUNS[int(rng.integers(len(_NOUNS)))]}"
        if name not in taken:
            return name
    k = 2
    while f"{name} {k}" in taken:
        k += 1
    return f"{name} {k}"


def category_tree(n: int, seed: int = 7) -> list[Document]:
    """A product-category tree with ``n`` top-level categories (notebook 03: trees).

    One document per node, in depth-first order: ``_id``, ``parent_id`` (``None`` for a top-level
    category), ``name`` (never contains '/') and ``path`` such as '/Electronics/Phones/Smartphones'
    (the first top-level category always holds that path). Lognormal children per node,
    depth at most 7 (a top-level category has depth 1), about 85% leaves.
    """
    rng = np.random.default_rng(seed)
    nodes: list[Document] = []
    top_names = [_TOP_CATEGORIES[i % len(_TOP_CATEGORIES)]
                 + ("" if i < len(_TOP_CATEGORIES) else f" {i // len(_TOP_CATEGORIES) + 1}")
                 for i in range(n)]
    # depth-first: the stack holds (name, parent_id, parent_path, depth, forced child names)
    stack: list[tuple[str, int | None, str, int, tuple[str, ...]]] = [
        (name, None, "", 1, ("Phones", "Smartphones") if i == 0 else ())
        for i, name in reversed(list(enumerate(top_names)))
    ]
    while stack:
        name, parent_id, parent_path, depth, forced = stack.pop()
        node_id = len(nodes) + 1
        path = f"{parent_path}/{name}"
        nodes.append({"_id": node_id, "parent_id": parent_id, "name": name, "path": path})
        has_children = bool(forced) or (depth < MAX_DEPTH and rng.random() < _P_INTERNAL[depth])
        if not has_children:
            continue
        k = max(2, int(math.ceil(math.exp(float(rng.normal(1.75, 0.55))))))
        taken: set[str] = set()
        names = []
        for c in range(k):
            child = forced[0] if (c == 0 and forced) else _unique_name(rng, taken)
            taken.add(child)
            names.append(child)
        for c, child in reversed(list(enumerate(names))):
            stack.append((child, node_id, path, depth + 1, forced[1:] if (c == 0 and forced) else ()))
    return nodes
