"""The cases the advisor is checked on, and notebook 06's designs (notebook 06).

:func:`plant_fixtures` plants one case and one near miss per code, and per finding beyond Atlas, at the
edge of the thresholds;
:func:`lesson_designs` builds the "before" and "after" designs of notebooks 01-04 with the workloads
of their pages; :func:`plant_capstone` and :func:`capstone_app` are the capstone's shop. The tests
(``tests/test_advisor.py``) and notebook 06 run them through :func:`helpers.advisor.review`.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

import bson

from .. import aerodata as ad
from .. import outlier
from ..aerodata import airline_of_callsign
from ..embedding import synthetic_reviews
from ..safety import fresh_collection, workbook_collection
from .findings import ATLAS, BEYOND_CODES, CODES, AdvisorReport, Thresholds, thresholds_named
from .observed import ObservedWorkload, record_workload

__all__ = ["Fixtures", "plant_fixtures", "FIXTURE_WORKLOAD_DAYS", "hide_index", "Design", "lesson_designs", "AIRLINE_DOCUMENT_DAYS", "OUTLIER_THRESHOLD",
           "Capstone", "plant_capstone", "capstone_app", "TYPED_EMAIL"]


# ---------------------------------------------------------------------------------------------
# fixtures: one planted case and one near miss per code (the tests and notebook 06 run them)

@dataclass
class Fixtures:
    """Collections planted by :func:`plant_fixtures`, the workload run on them, and what must be found."""

    collections: list[str]
    workload: ObservedWorkload
    planted: list[tuple[str, str | None, str | None]]
    near_misses: list[tuple[str, str | None, str | None]]

    def table(self, report: AdvisorReport) -> Any:
        """Per code: planted cases, how many were found, near misses, how many were flagged (false positives)."""
        import pandas as pd

        keys = report.keys()
        fixture = {k for k in keys if _in_fixture(k, self.collections)}
        rows = []
        for code in CODES + BEYOND_CODES:
            planted = [k for k in self.planted if k[0] == code]
            near = [k for k in self.near_misses if k[0] == code]
            rows.append({"code": code, "planted": len(planted), "found": sum(k in keys for k in planted),
                         "near misses": len(near), "false positives": len({k for k in fixture if k[0] == code}
                                                                          - set(planted))})
        return pd.DataFrame(rows).set_index("code")


def _in_fixture(key: tuple, collections: list[str]) -> bool:
    coll = key[1] or ""
    return coll in collections or any(re.fullmatch(re.escape(coll).replace(r"\*", ".*"), c) for c in collections)


#: the days the fixtures' workload stands for: Atlas judges an index unused after 7 days without a query
FIXTURE_WORKLOAD_DAYS = 7


def plant_fixtures(db: Any, prefix: str = "fx_", thresholds: Thresholds | str | None = None) -> Fixtures:
    """Create, in ``db``, a planted case and a near miss for each code at the edge of ``thresholds``
    (default: Atlas' set), and for each finding beyond Atlas, run a small workload on them (standing
    for :data:`FIXTURE_WORKLOAD_DAYS` days), and return what the advisor must (and must not) find.

    The database-wide collection count (more than 100) cannot be planted beside its near miss in one
    database: the tests plant it alone. The workbook set adds its collection-per-key family.
    Every collection is the workbook's own (``helpers.workbook_collection``), named ``<prefix>...``.
    Introduced in notebook 06.
    """
    import datetime as _dt

    t = thresholds_named(thresholds) if thresholds is not None else ATLAS
    made: list[str] = []

    def fresh(name: str) -> Any:
        coll = fresh_collection(db, prefix + name)  # dropped and made anew, recorded by its new UUID
        made.append(prefix + name)
        return coll

    # AVOID_UNBOUNDED_ARRAY: one element past the threshold, pushed to without $slice / exactly at it, bounded
    arrays, arrays_near = fresh("arrays_planted"), fresh("arrays_near")
    arrays.insert_many([{"_id": 1, "tags": [f"t{i}" for i in range(t.max_array_elements + 1)]},
                        {"_id": 2, "tags": ["t0"]}])
    arrays_near.insert_one({"_id": 1, "tags": [f"t{i}" for i in range(t.max_array_elements)]})
    # REDUCE_DOCUMENT_SIZE: one byte over / exactly at the threshold
    base = len(bson.encode({"_id": 1, "blob": ""}))
    fresh("size_planted").insert_one({"_id": 1, "blob": "x" * (t.large_document_bytes + 1 - base)})
    fresh("size_near").insert_one({"_id": 1, "blob": "x" * (t.large_document_bytes - base)})
    # REDUCE_LOOKUP_OPS: 3 of 4 reads join / 1 of 2 (exactly half: Atlas flags more than half)
    items = fresh("lookup_items")
    items.insert_many([{"_id": i, "name": f"item {i}"} for i in range(5)])
    lookups, lookups_near = fresh("lookup_planted"), fresh("lookup_near")
    for coll in (lookups, lookups_near):
        coll.insert_many([{"_id": i, "item_id": i % 5} for i in range(10)])
    # REMOVE_UNNECESSARY_INDEXES: an unused index and a prefix of another / used, unique and TTL indexes;
    # one index more than max_indexes / exactly max_indexes
    idx, idx_near = fresh("index_planted"), fresh("index_near")
    idx.insert_many([{"_id": i, "a": i, "b": i % 3, "c": i} for i in range(20)])
    for keys in ("a", "b", [("b", 1), ("c", 1)]):
        idx.create_index(keys)
    now = _dt.datetime(2030, 1, 1)
    idx_near.insert_many([{"_id": i, "a": i, "code": f"c{i}", "created": now} for i in range(20)])
    idx_near.create_index("a")
    idx_near.create_index("code", unique=True)
    idx_near.create_index("created", expireAfterSeconds=10 * 365 * 24 * 3600)
    many, many_near = fresh("indexes_planted"), fresh("indexes_near")
    for coll, count in ((many, t.max_indexes + 1), (many_near, t.max_indexes)):
        coll.insert_one({"_id": 1, **{f"f{i}": i for i in range(count)}})
        for i in range(count - 1):  # and the _id index
            coll.create_index(f"f{i}")
    # REDUCE_NUMBER_OF_NAMESPACES (the workbook set): a collection per key, as many as the threshold / one fewer
    if t.same_shape_collections:
        for i in range(t.same_shape_collections):
            fresh(f"ns_planted_{chr(97 + i)}").insert_one({"_id": 1, "sensor": chr(97 + i), "value": 1.5})
        for i in range(t.same_shape_collections - 1):
            fresh(f"nsnear_{chr(97 + i)}").insert_one({"_id": 1, "sensor": chr(97 + i), "value": 1.5})
    # the regex rules: a case-insensitive exact match / an equality with a collation on a collated index;
    # an unanchored regex / an anchored, case-sensitive prefix on an indexed field
    users, users_near = fresh("ci_planted"), fresh("ci_near")
    for coll in (users, users_near):
        coll.insert_many([{"_id": i, "email": f"User{i}@Example.com"} for i in range(10)])
    strength2 = {"locale": "en", "strength": 2}
    users_near.create_index("email", collation=strength2)
    notes, skus = fresh("text_planted"), fresh("text_near")
    notes.insert_many([{"_id": i, "body": f"note {i} about the {'battery' if i % 2 else 'screen'}"} for i in range(10)])
    skus.insert_many([{"_id": i, "sku": f"AB-{i:03d}"} for i in range(10)])
    skus.create_index("sku")
    # beyond Atlas. The outlier pattern: 99 posts of 3 comments and one of 400 / lengths spread evenly to 300
    outlier, outlier_near = fresh("outlier_planted"), fresh("outlier_near")
    outlier.insert_many([{"_id": i, "comments": list(range(400 if i == 0 else 3))} for i in range(100)])
    outlier_near.insert_many([{"_id": i, "comments": list(range(3 * (i + 1)))} for i in range(100)])
    # time series: readings of 5 sensors in time order, one per document / users, one document per key
    start = _dt.datetime(2025, 1, 1)
    series, series_near = fresh("series_planted"), fresh("series_near")
    series.insert_many([{"_id": i, "sensor": f"s{i % 5}", "ts": start + _dt.timedelta(minutes=i), "value": i / 4}
                        for i in range(t.time_series_min_documents + 1)])
    series_near.insert_many([{"_id": i, "email": f"u{i}@example.com", "created": start + _dt.timedelta(minutes=i)}
                             for i in range(t.time_series_min_documents + 1)])
    # the attribute pattern: prices keyed by date, 3 per document, 30 dates / 25 named specifications in every document
    attrs, attrs_near = fresh("attribute_planted"), fresh("attribute_near")
    attrs.insert_many([{"_id": i, "prices": {(start + _dt.timedelta(days=3 * i + k)).strftime("%Y-%m-%d"): 10 + k
                                             for k in range(3)}} for i in range(10)])
    attrs_near.insert_many([{"_id": i, "specs": {f"spec_{chr(97 + k)}": k for k in range(25)}} for i in range(10)])
    # the subset pattern: 30 products of 150 reviews, read only as a $slice of 10 / the same, one read of all
    subset, subset_near = fresh("subset_planted"), fresh("subset_near")
    for coll in (subset, subset_near):
        coll.insert_many([{"_id": i, "reviews": [{"n": k, "stars": 1 + k % 5} for k in range(150)]} for i in range(30)])
    # the extended reference: books copy their author's name, and an author is renamed / books copy their
    # publisher's name, and a publisher moves city (a field no one copies)
    authors, books = fresh("ref_authors"), fresh("ref_planted")
    authors.insert_many([{"_id": i, "name": f"Author {i}", "email": f"a{i}@example.com"} for i in range(10)])
    books.insert_many([{"_id": i, "title": f"Book {i}", "author": {"_id": i % 10, "name": f"Author {i % 10}"}}
                       for i in range(40)])
    publishers, books_near = fresh("ref_publishers"), fresh("ref_near")
    publishers.insert_many([{"_id": i, "name": f"Press {i}", "city": "Geneva"} for i in range(10)])
    books_near.insert_many([{"_id": i, "title": f"Book {i}", "publisher": {"_id": i % 10, "name": f"Press {i % 10}"}}
                            for i in range(40)])

    def app() -> None:
        arrays.update_one({"_id": 2}, {"$push": {"tags": "t1"}})
        arrays_near.update_one({"_id": 1}, {"$push": {"tags": {"$each": ["new"], "$slice": -t.max_array_elements}}})
        join = [{"$lookup": {"from": items.name, "localField": "item_id", "foreignField": "_id", "as": "item"}}]
        for i in range(3):
            list(lookups.aggregate([{"$match": {"_id": i}}, *join]))
        lookups.find_one({"_id": 3})
        list(lookups_near.aggregate([{"$match": {"_id": 0}}, *join]))
        lookups_near.find_one({"_id": 1})
        list(idx.find({"b": 1}).sort("c", 1))
        idx_near.find_one({"a": 3})
        users.find_one({"email": {"$regex": r"^user3@example\.com$", "$options": "i"}})
        users_near.find_one({"email": "user3@example.com"}, collation=strength2)
        list(notes.find({"body": {"$regex": "battery"}}).sort("_id", 1))
        list(skus.find({"sku": {"$regex": "^AB-00"}}).sort("sku", 1))
        for i in range(3):
            subset.find_one({"_id": i}, {"reviews": {"$slice": 10}})
            subset_near.find_one({"_id": i}, {"reviews": {"$slice": 10}})
        subset_near.find_one({"_id": 3})  # one page shows every review
        authors.update_one({"_id": 1}, {"$set": {"name": "Author One"}})
        publishers.update_one({"_id": 1}, {"$set": {"city": "Basel"}})
        books.find_one({"_id": 1})
        books_near.find_one({"_id": 1})

    workload = record_workload(app, db.name, days=FIXTURE_WORKLOAD_DAYS)
    p = prefix
    planted = [("AVOID_UNBOUNDED_ARRAY", p + "arrays_planted", "tags"), ("REDUCE_DOCUMENT_SIZE", p + "size_planted", "blob"),
               ("REDUCE_LOOKUP_OPS", p + "lookup_planted", p + "lookup_items"),
               ("REMOVE_UNNECESSARY_INDEXES", p + "index_planted", "a_1"),
               ("REMOVE_UNNECESSARY_INDEXES", p + "index_planted", "b_1"),
               ("REMOVE_UNNECESSARY_INDEXES", p + "indexes_planted", None),
               ("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", p + "ci_planted", "email"),
               ("OPTIMIZE_TEXT_QUERIES", p + "text_planted", "body"),
               ("USE_OUTLIER_PATTERN", p + "outlier_planted", "comments"),
               ("USE_TIME_SERIES", p + "series_planted", "ts"),
               ("USE_ATTRIBUTE_PATTERN", p + "attribute_planted", "prices"),
               ("USE_SUBSET_PATTERN", p + "subset_planted", "reviews"),
               ("EXTENDED_REFERENCE_STALENESS", p + "ref_planted", "author")]
    near = [("AVOID_UNBOUNDED_ARRAY", p + "arrays_near", "tags"), ("REDUCE_DOCUMENT_SIZE", p + "size_near", "blob"),
            ("REDUCE_LOOKUP_OPS", p + "lookup_near", p + "lookup_items"),
            ("REMOVE_UNNECESSARY_INDEXES", p + "index_near", "a_1"),
            ("REMOVE_UNNECESSARY_INDEXES", p + "index_near", "code_1"),
            ("REMOVE_UNNECESSARY_INDEXES", p + "index_near", "created_1"),
            ("REMOVE_UNNECESSARY_INDEXES", p + "index_planted", "b_1_c_1"),
            ("REMOVE_UNNECESSARY_INDEXES", p + "indexes_near", None),
            ("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", p + "ci_near", "email"),
            ("OPTIMIZE_TEXT_QUERIES", p + "text_near", "sku"),
            ("USE_OUTLIER_PATTERN", p + "outlier_near", "comments"),
            ("USE_TIME_SERIES", p + "series_near", "created"),
            ("USE_ATTRIBUTE_PATTERN", p + "attribute_near", "specs"),
            ("USE_SUBSET_PATTERN", p + "subset_near", "reviews"),
            ("EXTENDED_REFERENCE_STALENESS", p + "ref_near", "publisher")]
    if t.same_shape_collections:
        planted.append(("REDUCE_NUMBER_OF_NAMESPACES", p + "ns_planted_*", None))
        near.append(("REDUCE_NUMBER_OF_NAMESPACES", p + "nsnear_*", None))
    return Fixtures(sorted(made), workload, planted, near)


# ---------------------------------------------------------------------------------------------
# the lessons' designs, before and after (notebook 06 reviews them; the tests check them)

@dataclass
class Design:
    """One schema design of notebooks 01-04 built small, with the workload its pages send."""

    title: str
    collections: list[str]
    workload: ObservedWorkload
    expected: set[tuple[str, str | None, str | None]]  # what the workbook set must find (empty: clean)
    expected_atlas: set[tuple[str, str | None, str | None]] | None = None  # Atlas' set (None: the same)

    def expects(self, thresholds: str) -> set[tuple[str, str | None, str | None]]:
        """What a review with the ``"workbook"`` or ``"atlas"`` set must find."""
        return self.expected if thresholds == "workbook" or self.expected_atlas is None else self.expected_atlas


#: how many copies of the sample's day the "airline document with every report" holds (a week)
AIRLINE_DOCUMENT_DAYS = 7
#: fewer days when a week of every aircraft (WORKBOOK_SCALE=full) would not fit: 1 MiB below the limit
AIRLINE_DOCUMENT_MAX_BYTES = 15 * 1024 * 1024
#: comments a post embeds in the outlier pattern's "after" design
OUTLIER_THRESHOLD = 100
_STRENGTH2 = {"locale": "en", "strength": 2}


def lesson_designs(db: Any, which: str, lessons: Iterable[str] = ("01", "02", "04")) -> list[Design]:
    """Build the ``"before"`` or ``"after"`` designs of notebooks 01-04 in ``db`` and record their workloads.

    Needs the datasets ``products``, ``posts`` and ``adsb_reports`` loaded (``helpers.load_dataset``).
    "before": a product that embeds every review (01), every comment embedded in its post (02), the
    busiest airline's document holding a week of reports, three collections joined by ``$lookup``, and
    one collection per airline (04). "after": reviews in their own collection, the outlier pattern, the
    single polymorphic collection. ``lessons`` picks the notebooks ("01", "02", "04"). Introduced in
    notebook 06.
    """
    if which not in ("before", "after"):
        raise ValueError(f"which must be 'before' or 'after', not {which!r}")
    lessons = list(lessons)
    unknown = [x for x in lessons if x not in _NEEDS]
    if unknown:
        raise ValueError(f"lessons must be among {sorted(_NEEDS)}, not {unknown}")
    for lesson in lessons:
        name = _NEEDS[lesson]
        if db[name].find_one({}, {"_id": 1}) is None:
            raise ValueError(f"collection {name!r} is empty: load it first with helpers.load_dataset({name!r}, db)")
    designs: list[Design] = []
    for lesson in lessons:
        designs += _BUILDERS[(which, lesson)](db)
    return designs


_NEEDS = {"01": "products", "02": "posts", "04": "adsb_reports"}


#: documents per insert command when a design copies a whole dataset: a cap on one command's size, for a
#: few more round trips. (Notebook 06 builds its designs at a fixed small size, so the cap and the
#: shrinking airline document below matter only to a caller that passes whole datasets.)
INSERT_CHUNK = 10_000


def _insert_all(coll: Any, docs: Iterable[dict[str, Any]]) -> None:
    batch: list[dict[str, Any]] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == INSERT_CHUNK:
            coll.insert_many(batch)
            batch = []
    if batch:
        coll.insert_many(batch)


def _fresh(db: Any, name: str) -> Any:
    return fresh_collection(db, name)  # dropped and made anew, recorded by its new UUID


def _celebrity() -> dict[str, Any]:
    return {"_id": 0, "name": "product a celebrity liked", "price": 19.99,
            "reviews": synthetic_reviews(1_500, seed=3)}  # seed 3: the same reviews on every run


def _reports(db: Any) -> tuple[list[dict[str, Any]], str, str]:
    """The sample's reports (with their airline), the airline with the most reports, its busiest aircraft."""

    docs = [{**d, "airline": airline_of_callsign(d.get("callsign"))}
            for d in db["adsb_reports"].find({}, {"_id": 0}).sort([("timestamp", 1), ("icao24", 1)])]
    per_airline = Counter(d["airline"] for d in docs)
    top = min(per_airline, key=lambda a: (-per_airline[a], a))
    per_aircraft = Counter(d["icao24"] for d in docs if d["airline"] == top)
    return docs, top, min(per_aircraft, key=lambda i: (-per_aircraft[i], i))


def _before_01(db: Any) -> list[Design]:
    # 01: every review embedded in its product, a text search by regex, an index no page uses
    shop = _fresh(db, "shop_products")
    _insert_all(shop, [_celebrity(), *db["products"].find({}).sort("_id", 1)])
    shop.create_index("price")

    def shop_pages() -> None:
        for pid in (0, 1, 2):
            shop.find_one({"_id": pid})
        for review in synthetic_reviews(3, seed=4):
            shop.update_one({"_id": 0}, {"$push": {"reviews": review}})
        list(shop.find({"reviews.text": {"$regex": "battery"}}, {"name": 1}).sort("_id", 1))

    return [Design("01 · a product embeds every review", [shop.name], record_workload(shop_pages, db.name),
                   {("AVOID_UNBOUNDED_ARRAY", shop.name, "reviews"),
                    ("OPTIMIZE_TEXT_QUERIES", shop.name, "reviews.text"),
                    ("REMOVE_UNNECESSARY_INDEXES", shop.name, "price_1"),
                    ("USE_OUTLIER_PATTERN", shop.name, "reviews")},
                   # Atlas: 1,503 reviews are under 10,000; a page run once is not 7 days of workload
                   {("OPTIMIZE_TEXT_QUERIES", shop.name, "reviews.text"), ("USE_OUTLIER_PATTERN", shop.name, "reviews")})]


def _before_02(db: Any) -> list[Design]:
    import datetime as _dt

    # 02: every comment embedded, the viral post too
    posts = db["posts"]
    viral = max(posts.find({}, {"comments": 1}), key=lambda p: (len(p["comments"]), -p["_id"]))["_id"]

    def post_pages() -> None:
        for pid in (1, 2, viral):
            posts.find_one({"_id": pid})
        for seq in range(3):
            posts.update_one({"_id": viral}, {"$push": {"comments": {"seq": -1 - seq, "author": "user1", "text": "me too",
                                                                     "ts": _dt.datetime(2025, 1, 1)}}})

    return [Design("02 · every comment embedded in its post", [posts.name], record_workload(post_pages, db.name),
                   {("AVOID_UNBOUNDED_ARRAY", posts.name, "comments"), ("USE_OUTLIER_PATTERN", posts.name, "comments")},
                   {("USE_OUTLIER_PATTERN", posts.name, "comments")})]


def _before_04(db: Any) -> list[Design]:
    import datetime as _dt

    designs = []
    # 04: the airline document holding its aircraft and their reports (the sample's day, repeated for a week)
    docs, top, busiest = _reports(db)
    fields_ = ("timestamp", "lat", "lon", "altitude", "groundspeed", "track", "vertical_rate")

    def replayed(days: int, only: str | None = None) -> dict[str, dict[str, list]]:
        airlines: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for day in range(days):
            for d in docs:
                if only is None or d["airline"] == only:
                    airlines[d["airline"]][d["icao24"]].append(
                        {**{k: d.get(k) for k in fields_}, "timestamp": d["timestamp"] + _dt.timedelta(days=day)})
        return airlines

    def airline_document(days: int) -> dict[str, Any]:
        return {"_id": top, "aircraft": [{"icao24": i, "reports": r} for i, r in sorted(replayed(days, top)[top].items())]}

    # a week; with every aircraft of the day a week would come within 1 MiB of the 16 MiB limit (or pass
    # it), so as many days as stay under 15 MiB: the document can be stored and the workload can push to it
    days, document = AIRLINE_DOCUMENT_DAYS, airline_document(AIRLINE_DOCUMENT_DAYS)
    while days > 1 and len(bson.encode(document)) > AIRLINE_DOCUMENT_MAX_BYTES:
        days -= 1
        document = airline_document(days)
    airlines = replayed(1)  # every airline's fleet (the same on every day)
    embedded = _fresh(db, "airlines_embedded")  # the busiest airline's document
    embedded.insert_one(document)

    def airline_page() -> None:
        embedded.find_one({"_id": top})
        # by position: mongomock-ng cannot $push through "aircraft.$.reports" or "aircraft.$[a].reports"
        position = sorted(airlines[top]).index(busiest)
        embedded.update_one({"_id": top}, {"$push": {f"aircraft.{position}.reports": {
            "timestamp": _dt.datetime(2018, 8, 8), "lat": 46.0}}})

    span = "a week" if days == AIRLINE_DOCUMENT_DAYS else f"{days} days: a week would come within 1 MiB of the 16 MiB limit"
    designs.append(Design(f"04 · the airline document with every report ({span})", [embedded.name],
                          record_workload(airline_page, db.name),
                          {("REDUCE_DOCUMENT_SIZE", embedded.name, "aircraft"),
                           ("AVOID_UNBOUNDED_ARRAY", embedded.name, "aircraft.reports")},
                          set()))  # Atlas: under 2 MB and 10,000 elements after a week of the sample's rate
    # 04: three collections joined by $lookup, and a case-insensitive callsign search
    aero = {kind: _fresh(db, f"aero_{kind}") for kind in ("airlines", "aircraft", "reports")}
    aero["airlines"].insert_many([{"_id": code} for code in sorted(airlines)])
    aero["aircraft"].insert_many([{"_id": f"{code}_{i}", "airline": code, "icao24": i}
                                  for code, fleet in sorted(airlines.items()) for i in sorted(fleet)])
    _insert_all(aero["reports"], (dict(d) for d in docs))
    aero["aircraft"].create_index("airline")
    aero["reports"].create_index([("airline", 1), ("icao24", 1), ("timestamp", 1)])
    callsign = min(d["callsign"] for d in docs if d["airline"] == top)
    page = [{"$lookup": {"from": aero["aircraft"].name, "localField": "_id", "foreignField": "airline", "as": "fleet"}},
            {"$lookup": {"from": aero["reports"].name, "localField": "_id", "foreignField": "airline", "as": "reports"}}]

    def aero_pages() -> None:
        for code in sorted(airlines)[:3]:
            list(aero["airlines"].aggregate([{"$match": {"_id": code}}, *page]))
        list(aero["reports"].find({"callsign": {"$regex": f"^{re.escape(callsign.lower())}$", "$options": "i"}})
             .sort("timestamp", 1))

    designs.append(Design("04 · three collections joined by $lookup", [c.name for c in aero.values()],
                          record_workload(aero_pages, db.name),
                          {("REDUCE_LOOKUP_OPS", aero["airlines"].name, f"{aero['aircraft'].name}, {aero['reports'].name}"),
                           ("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", aero["reports"].name, "callsign"),
                           ("USE_TIME_SERIES", aero["reports"].name, "timestamp")}))
    # 04: one collection per airline
    per_airline = []
    for code in sorted(airlines):
        coll = _fresh(db, f"reports_{code}")
        _insert_all(coll, ({k: v for k, v in d.items() if k != "airline"} for d in docs if d["airline"] == code))
        per_airline.append(coll.name)

    def per_airline_page() -> None:
        list(db[f"reports_{top}"].find({"icao24": busiest}).sort("timestamp", 1))

    # each airline's reports are a time series of its aircraft once there are enough of them
    series = {("USE_TIME_SERIES", name, "timestamp") for name in per_airline
              if db[name].count_documents({}) > ATLAS.time_series_min_documents}
    designs.append(Design("04 · one collection per airline", per_airline, record_workload(per_airline_page, db.name),
                          {("REDUCE_NUMBER_OF_NAMESPACES", "reports_*", None)} | series, series))
    return designs


def _after_01(db: Any) -> list[Design]:
    # 01: reviews in their own collection (indexed by product and position), keywords for the search
    shop, reviews = _fresh(db, "shop_products"), _fresh(db, "shop_reviews")
    products = [_celebrity(), *db["products"].find({}).sort("_id", 1)]
    _insert_all(shop, ({k: v for k, v in p.items() if k != "reviews"} for p in products))
    _insert_all(reviews, ({"_id": f"{p['_id']}-{n}", "product_id": p["_id"], "n": n, **r,
                          "words": sorted(set(r["text"].split()))}
                         for p in products for n, r in enumerate(p["reviews"])))
    reviews.create_index([("product_id", 1), ("n", 1)])
    reviews.create_index("words")

    def shop_pages() -> None:
        for pid in (0, 1, 2):
            shop.find_one({"_id": pid})
            list(reviews.find({"product_id": pid}).sort("n", 1).limit(20))
        reviews.insert_one({"_id": "0-new", "product_id": 0, "n": 2_500, "author": "user1", "rating": 5,
                            "text": "great battery", "words": ["battery", "great"]})
        list(reviews.find({"words": "battery"}, {"product_id": 1}).sort("_id", 1).limit(50))

    return [Design("01 · reviews in their own collection", [shop.name, reviews.name],
                   record_workload(shop_pages, db.name), set())]


def _after_02(db: Any) -> list[Design]:
    # 02: the outlier pattern
    posts = list(db["posts"].find({}).sort("_id", 1))
    viral = max(posts, key=lambda p: (len(p["comments"]), -p["_id"]))["_id"]
    outlier.load_outlier_posts(db, posts, OUTLIER_THRESHOLD)

    def post_pages() -> None:
        for pid in (1, 2, viral):
            outlier.read_post(db, pid)
        for _ in range(3):
            outlier.add_comment(db, viral, {"author": "user1", "text": "me too"}, OUTLIER_THRESHOLD)

    return [Design(f"02 · the outlier pattern ({OUTLIER_THRESHOLD} comments embedded)",
                   [outlier.POSTS, outlier.OVERFLOW], record_workload(post_pages, db.name), set())]


def _after_04(db: Any) -> list[Design]:
    import calendar

    # 04: one polymorphic collection; the callsign search as an equality with a collation
    docs, top, busiest = _reports(db)
    _fresh(db, ad.COLLECTION)
    ad.ingest(db, [{**{k: v for k, v in d.items() if k != "airline"},
                    "timestamp": calendar.timegm(d["timestamp"].timetuple())} for d in docs])
    aerodata = db[ad.COLLECTION]
    aerodata.create_index("callsign", collation=_STRENGTH2)
    callsign = min(d["callsign"] for d in docs if d["airline"] == top)

    def aero_pages() -> None:
        ad.airline(db, top)
        ad.fleet(db, top)
        ad.reports(db, top, busiest)
        ad.airline_all(db, top)
        list(aerodata.find({"callsign": callsign.lower()}, collation=_STRENGTH2).sort("_id", 1))

    return [Design("04 · one polymorphic collection", [ad.COLLECTION], record_workload(aero_pages, db.name), set())]


_BUILDERS = {("before", "01"): _before_01, ("before", "02"): _before_02, ("before", "04"): _before_04,
             ("after", "01"): _after_01, ("after", "02"): _after_02, ("after", "04"): _after_04}


# ---------------------------------------------------------------------------------------------
# the capstone of notebook 06: a small shop with three planted problems

#: what a customer typed into the shop's login form
TYPED_EMAIL = "Ada.Lovelace@Example.COM"


@dataclass
class Capstone:
    """The shop of notebook 06's capstone: its collections and what was planted in them."""

    collections: list[str]
    orders: int
    events: int
    customer_id: int


def plant_capstone(db: Any) -> Capstone:
    """Create the capstone shop in ``db``: customers, and orders that embed their delivery events.

    Three problems are planted; :func:`capstone_app` is the shop's code (its workload). Emails are
    stored in lower case. Introduced in notebook 06.
    """
    import datetime as _dt

    customers, orders = _fresh(db, "cap_customers"), _fresh(db, "cap_orders")
    _fresh(db, "cap_events")
    db.drop_collection("cap_events")  # free for a fix to use
    names = ["ada.lovelace", "alan.turing", "grace.hopper", "edsger.dijkstra", "barbara.liskov", "donald.knuth"]
    customers.insert_many([{"_id": i + 1, "email": f"{n}@example.com", "name": n.replace(".", " ").title()}
                           for i, n in enumerate(names)])
    start = _dt.datetime(2025, 1, 1)
    docs, events = [], 0
    for i in range(60):
        n = 1_200 + 10 * i if i % 20 == 0 else 3 + i % 5  # three orders stuck in a delivery loop
        docs.append({"_id": i + 1, "customer_id": 1 + i % len(names), "placed": start + _dt.timedelta(days=i),
                     "total": round(10 + 3.5 * i, 2),
                     "events": [{"status": "scanned", "ts": start + _dt.timedelta(days=i, minutes=k)} for k in range(n)]})
        events += n
    orders.insert_many(docs)
    orders.create_index("customer_id")
    orders.create_index([("customer_id", 1), ("placed", 1)])
    return Capstone(["cap_customers", "cap_orders", "cap_events"], len(docs), events, 1)


def capstone_app(db: Any, typed_email: str = TYPED_EMAIL) -> tuple[dict, list[dict]]:
    """The shop's page: find the customer who logged in, list their ten latest orders, record a scan."""
    import datetime as _dt

    customer = db["cap_customers"].find_one({"email": {"$regex": f"^{re.escape(typed_email)}$", "$options": "i"}})
    recent = list(db["cap_orders"].find({"customer_id": customer["_id"]}).sort("placed", -1).limit(10))
    db["cap_orders"].update_one({"_id": recent[0]["_id"]},
                                {"$push": {"events": {"status": "scanned", "ts": _dt.datetime(2025, 6, 1)}}})
    return customer, recent


def hide_index(db: Any, collection: str, name: str) -> bool:
    """Hide index ``name`` from the query planner (``collMod`` with ``index.hidden``, what ``hideIndex`` runs):
    the manual's first step before dropping an index, undone at once by unhiding it, since a hidden index
    is still maintained. Only the workbook's own collections. False where the engine cannot hide one
    (mongomock-ng). Introduced in notebook 06."""

    workbook_collection(db, collection, create=False)  # refuses a collection the workbook did not create
    try:
        db.command("collMod", collection, index={"name": name, "hidden": True})
    except NotImplementedError:
        return False
    return True
