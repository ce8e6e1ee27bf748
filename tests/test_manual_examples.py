"""A held-out replay of the MongoDB manual's worked examples, on every backend.

Each test loads the documents of one example from the manual (www.mongodb.com/docs/manual: the
reference page named in its docstring), runs the manual's query with pymongo, and checks the
manual's answer. Where an engine answers differently, the test passes only if a probed capability
(``helpers.backend_info().caps``, docs/ENGINES.md) is False and so labels that deviation: an
engine's mistake that no probe knows about fails here. Result order is compared only where the
manual promises one (``$near``, ``$sort``); elsewhere results are sorted first.
"""
from __future__ import annotations

import re

import bson
import pytest
from pymongo.errors import OperationFailure, WriteError

#: what the replays found on each backend (test name -> "manual" or "labelled: <capability>")
REPLAYS: dict[str, dict[str, str]] = {}


def agrees(backend, request, got, manual, *labels: str) -> None:
    """``got`` is the manual's answer, or one of ``labels`` (capability names) is probed False."""
    caps = backend.info.caps.as_dict()
    for name in labels:
        assert name in caps, f"{name!r} is not a probed capability"
    where = REPLAYS.setdefault(request.node.name, {})
    if got == manual:
        where[backend.info.name] = where.get(backend.info.name, "manual")
        return
    off = [name for name in labels if not caps[name]]
    assert off, (f"unlabelled deviation on {backend.info.engine}: got {got!r}, the manual says {manual!r}; "
                 f"no probe among {labels or '(none)'} is False")
    where[backend.info.name] = f"labelled: {', '.join(off)}"


def ids(cursor) -> list:
    return sorted(d["_id"] for d in cursor)


# --- Query Documents (tutorial/query-documents): the inventory collection ------------------------------

INVENTORY = [
    {"_id": 1, "item": "journal", "qty": 25, "size": {"h": 14, "w": 21, "uom": "cm"}, "status": "A"},
    {"_id": 2, "item": "notebook", "qty": 50, "size": {"h": 8.5, "w": 11, "uom": "in"}, "status": "A"},
    {"_id": 3, "item": "paper", "qty": 100, "size": {"h": 8.5, "w": 11, "uom": "in"}, "status": "D"},
    {"_id": 4, "item": "planner", "qty": 75, "size": {"h": 22.85, "w": 30, "uom": "cm"}, "status": "D"},
    {"_id": 5, "item": "postcard", "qty": 45, "size": {"h": 10, "w": 15.25, "uom": "cm"}, "status": "A"},
]


def test_query_documents_with_operators(db, backend, request):
    inv = db["inventory"]
    inv.insert_many(INVENTORY)
    agrees(backend, request, ids(inv.find({"status": {"$in": ["A", "D"]}})), [1, 2, 3, 4, 5])
    agrees(backend, request, ids(inv.find({"status": "A", "qty": {"$lt": 30}})), [1])
    agrees(backend, request, ids(inv.find({"$or": [{"status": "A"}, {"qty": {"$lt": 30}}]})), [1, 2, 5])
    # the manual's `item: /^p/`, a bare regex, on an unindexed field: right on every engine
    agrees(backend, request, ids(inv.find({"status": "A", "$or": [{"qty": {"$lt": 30}}, {"item": re.compile("^p")}]})),
           [1, 5])
    agrees(backend, request, ids(inv.find({"size.uom": "in"})), [2, 3])
    agrees(backend, request, ids(inv.find({"size.h": {"$lt": 15}, "size.uom": "in", "status": "D"})), [3])


def test_the_same_bare_regex_on_an_indexed_field(db, backend, request):
    inv = db["inventory"]
    inv.insert_many(INVENTORY)
    inv.create_index("item")
    query = {"status": "A", "$or": [{"qty": {"$lt": 30}}, {"item": re.compile("^p")}]}
    agrees(backend, request, ids(inv.find(query)), [1, 5], "bare_regex_indexed")
    agrees(backend, request, ids(inv.find({"item": {"$regex": "^p"}})), [3, 4, 5])  # the $regex form


# --- $elemMatch (reference/operator/query/elemMatch) --------------------------------------------------

def test_elem_match(db, backend, request):
    db["scores"].insert_many([{"_id": 1, "results": [82, 85, 88]}, {"_id": 2, "results": [75, 88, 89]}])
    agrees(backend, request, list(db["scores"].find({"results": {"$elemMatch": {"$gte": 80, "$lt": 85}}})),
           [{"_id": 1, "results": [82, 85, 88]}])
    db["survey"].insert_many([
        {"_id": 1, "results": [{"product": "abc", "score": 10}, {"product": "xyz", "score": 5}]},
        {"_id": 2, "results": [{"product": "abc", "score": 8}, {"product": "xyz", "score": 7}]},
        {"_id": 3, "results": [{"product": "abc", "score": 7}, {"product": "xyz", "score": 8}]},
        {"_id": 4, "results": [{"product": "abc", "score": 7}, {"product": "def", "score": 8}]},
        {"_id": 5, "results": {"product": "xyz", "score": 7}},
    ])
    agrees(backend, request, ids(db["survey"].find({"results": {"$elemMatch": {"product": "xyz", "score": {"$gte": 8}}}})),
           [3])
    # without $elemMatch the two conditions may be met by different elements (_id 2: xyz scored 7, abc 8)
    agrees(backend, request, ids(db["survey"].find({"results.product": "xyz", "results.score": {"$gte": 8}})),
           [1, 2, 3])


# --- $slice projection (reference/operator/projection/slice) ------------------------------------------

def test_slice_projection_keeps_the_other_fields(db, backend, request):
    db["posts"].insert_one({"_id": 1, "title": "Bagels are not croissants.",
                            "comments": [{"comment": "0. true"}, {"comment": "1. croissants aren't bagels."}]})
    got = db["posts"].find_one({}, {"comments": {"$slice": 1}})
    agrees(backend, request, got, {"_id": 1, "title": "Bagels are not croissants.", "comments": [{"comment": "0. true"}]},
           "slice_projection")


# --- aggregation: $lookup, $unwind, $group, $bucket, $facet ---------------------------------------------

def test_lookup_matches_null_and_missing(db, backend, request):
    """$lookup (reference/operator/aggregation/lookup): an order without `item` joins the inventory
    documents whose `sku` is null or missing."""
    db["orders"].insert_many([{"_id": 1, "item": "almonds", "price": 12, "quantity": 2},
                              {"_id": 2, "item": "pecans", "price": 20, "quantity": 1}, {"_id": 3}])
    db["inventory"].insert_many([
        {"_id": 1, "sku": "almonds", "description": "product 1", "instock": 120},
        {"_id": 2, "sku": "bread", "description": "product 2", "instock": 80},
        {"_id": 3, "sku": "cashews", "description": "product 3", "instock": 60},
        {"_id": 4, "sku": "pecans", "description": "product 4", "instock": 70},
        {"_id": 5, "sku": None, "description": "Incomplete"}, {"_id": 6}])
    got = {d["_id"]: sorted(x["_id"] for x in d["inventory_docs"]) for d in db["orders"].aggregate([
        {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inventory_docs"}}])}
    agrees(backend, request, got, {1: [1], 2: [4], 3: [5, 6]})


def test_unwind(db, backend, request):
    db["inventory"].insert_one({"_id": 1, "item": "ABC1", "sizes": ["S", "M", "L"]})
    got = list(db["inventory"].aggregate([{"$unwind": "$sizes"}]))
    agrees(backend, request, got, [{"_id": 1, "item": "ABC1", "sizes": s} for s in ["S", "M", "L"]])


SALES = [{"_id": 1, "item": "abc", "price": 10, "quantity": 2}, {"_id": 2, "item": "jkl", "price": 20, "quantity": 1},
         {"_id": 3, "item": "xyz", "price": 5, "quantity": 10}, {"_id": 4, "item": "xyz", "price": 5, "quantity": 20},
         {"_id": 5, "item": "abc", "price": 10, "quantity": 10}, {"_id": 6, "item": "def", "price": 7.5, "quantity": 5},
         {"_id": 7, "item": "def", "price": 7.5, "quantity": 10}, {"_id": 8, "item": "abc", "price": 10, "quantity": 5}]


def test_group_and_sort(db, backend, request):
    """$group (reference/operator/aggregation/group): total sale amount per item, $match on it, $sort."""
    db["sales"].insert_many(SALES)
    got = list(db["sales"].aggregate([
        {"$group": {"_id": "$item", "totalSaleAmount": {"$sum": {"$multiply": ["$price", "$quantity"]}}}},
        {"$match": {"totalSaleAmount": {"$gte": 100}}}, {"$sort": {"totalSaleAmount": -1}}]))
    agrees(backend, request, got, [{"_id": "abc", "totalSaleAmount": 170}, {"_id": "xyz", "totalSaleAmount": 150},
                                   {"_id": "def", "totalSaleAmount": 112.5}])


ARTISTS = [
    {"_id": 1, "last_name": "Bernard", "first_name": "Emil", "year_born": 1868, "nationality": "France"},
    {"_id": 2, "last_name": "Rippl-Ronai", "first_name": "Joszef", "year_born": 1861, "nationality": "Hungary"},
    {"_id": 3, "last_name": "Ostroumova", "first_name": "Anna", "year_born": 1871, "nationality": "Russia"},
    {"_id": 4, "last_name": "Van Gogh", "first_name": "Vincent", "year_born": 1853, "nationality": "Holland"},
    {"_id": 5, "last_name": "Maurer", "first_name": "Alfred", "year_born": 1868, "nationality": "USA"},
    {"_id": 6, "last_name": "Munch", "first_name": "Edvard", "year_born": 1863, "nationality": "Norway"},
    {"_id": 7, "last_name": "Redon", "first_name": "Odilon", "year_born": 1840, "nationality": "France"},
    {"_id": 8, "last_name": "Diriks", "first_name": "Edvard", "year_born": 1855, "nationality": "Norway"},
]


def test_bucket(db, backend, request):
    """$bucket (reference/operator/aggregation/bucket): artists by decade of birth."""
    db["artists"].insert_many(ARTISTS)
    got = [(d["_id"], d["count"], sorted(d["artists"])) for d in db["artists"].aggregate([
        {"$bucket": {"groupBy": "$year_born", "boundaries": [1840, 1850, 1860, 1870, 1880], "default": "Other",
                     "output": {"count": {"$sum": 1}, "artists": {"$push": "$last_name"}}}}])]
    agrees(backend, request, got, [(1840, 1, ["Redon"]), (1850, 2, ["Diriks", "Van Gogh"]),
                                   (1860, 4, ["Bernard", "Maurer", "Munch", "Rippl-Ronai"]), (1870, 1, ["Ostroumova"])])


ARTWORK = [  # prices as doubles (the manual uses NumberDecimal; the buckets are the same)
    {"_id": 1, "title": "The Pillars of Society", "artist": "Grosz", "year": 1926, "price": 199.99,
     "tags": ["painting", "satire", "Expressionism", "caricature"]},
    {"_id": 2, "title": "Melancholy III", "artist": "Munch", "year": 1902, "price": 280.00, "tags": ["woodcut", "Expressionism"]},
    {"_id": 3, "title": "Dancer", "artist": "Miro", "year": 1925, "price": 76.04, "tags": ["oil", "Surrealism", "painting"]},
    {"_id": 4, "title": "The Great Wave off Kanagawa", "artist": "Hokusai", "price": 167.30, "tags": ["woodblock", "ukiyo-e"]},
    {"_id": 5, "title": "The Persistence of Memory", "artist": "Dali", "year": 1931, "price": 483.00,
     "tags": ["Surrealism", "painting", "oil"]},
    {"_id": 6, "title": "Composition VII", "artist": "Kandinsky", "year": 1913, "price": 385.00, "tags": ["oil", "painting", "abstract"]},
    {"_id": 7, "title": "The Scream", "artist": "Munch", "year": 1893, "tags": ["Expressionism", "painting", "oil"]},
    {"_id": 8, "title": "Blue Flower", "artist": "O'Keefe", "year": 1918, "price": 118.42, "tags": ["abstract", "painting"]},
]


def test_facet(db, backend, request):
    """$facet (reference/operator/aggregation/facet): tags by count and prices in buckets, in one stage."""
    db["artwork"].insert_many(ARTWORK)
    (got,) = db["artwork"].aggregate([{"$facet": {
        "categorizedByTags": [{"$unwind": "$tags"}, {"$sortByCount": "$tags"}],
        "categorizedByPrice": [{"$match": {"price": {"$exists": 1}}},
                               {"$bucket": {"groupBy": "$price", "boundaries": [0, 150, 200, 300, 400], "default": "Other",
                                            "output": {"count": {"$sum": 1}, "titles": {"$push": "$title"}}}}]}}])
    tags = {d["_id"]: d["count"] for d in got["categorizedByTags"]}
    counts = [d["count"] for d in got["categorizedByTags"]]
    agrees(backend, request, (tags, counts == sorted(counts, reverse=True)),
           ({"painting": 6, "oil": 4, "Expressionism": 3, "Surrealism": 2, "abstract": 2, "woodblock": 1, "woodcut": 1,
             "ukiyo-e": 1, "satire": 1, "caricature": 1}, True))
    prices = [(d["_id"], d["count"], sorted(d["titles"])) for d in got["categorizedByPrice"]]
    agrees(backend, request, prices, [(0, 2, ["Blue Flower", "Dancer"]),
                                      (150, 2, ["The Great Wave off Kanagawa", "The Pillars of Society"]),
                                      (200, 1, ["Melancholy III"]), (300, 1, ["Composition VII"]),
                                      ("Other", 1, ["The Persistence of Memory"])])


# --- $graphLookup (reference/operator/aggregation/graphLookup) ----------------------------------------

def test_graph_lookup_employees(db, backend, request):
    """The reporting hierarchy: Dev has no `reportsTo`, and the manual shows `reportingHierarchy: []`."""
    db["employees"].insert_many([
        {"_id": 1, "name": "Dev"}, {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
        {"_id": 3, "name": "Ron", "reportsTo": "Eliot"}, {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
        {"_id": 5, "name": "Asya", "reportsTo": "Ron"}, {"_id": 6, "name": "Dan", "reportsTo": "Andrew"}])
    out = {d["name"]: (sorted(e["name"] for e in d["reportingHierarchy"]) if "reportingHierarchy" in d else None)
           for d in db["employees"].aggregate([{"$graphLookup": {
               "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
               "connectToField": "name", "as": "reportingHierarchy"}}])}
    manual = {"Dev": [], "Eliot": ["Dev"], "Ron": ["Dev", "Eliot"], "Andrew": ["Dev", "Eliot"],
              "Asya": ["Dev", "Eliot", "Ron"], "Dan": ["Andrew", "Dev", "Eliot"]}
    agrees(backend, request, {k: v for k, v in out.items() if k != "Dev"}, {k: v for k, v in manual.items() if k != "Dev"})
    agrees(backend, request, out["Dev"], manual["Dev"], "graph_missing_start_as")


def test_graph_lookup_max_depth_and_depth_field(db, backend, request):
    """Travelers and airports: `maxDepth: 2` walks depths 0, 1 and 2 (three levels), `depthField`
    numbers them."""
    db["airports"].insert_many([
        {"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]}, {"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]},
        {"_id": 2, "airport": "ORD", "connects": ["JFK"]}, {"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]},
        {"_id": 4, "airport": "LHR", "connects": ["PWM"]}])
    db["travelers"].insert_many([{"_id": 1, "name": "Dev", "nearestAirport": "JFK"},
                                 {"_id": 2, "name": "Eliot", "nearestAirport": "JFK"},
                                 {"_id": 3, "name": "Jeff", "nearestAirport": "BOS"}])
    got = {d["name"]: sorted((x["airport"], int(x["numConnections"])) for x in d["destinations"])
           for d in db["travelers"].aggregate([{"$graphLookup": {
               "from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
               "connectToField": "airport", "maxDepth": 2, "depthField": "numConnections", "as": "destinations"}}])}
    from_jfk = [("BOS", 1), ("JFK", 0), ("ORD", 1), ("PWM", 2)]
    agrees(backend, request, got, {"Dev": from_jfk, "Eliot": from_jfk,
                                   "Jeff": [("BOS", 0), ("JFK", 1), ("LHR", 2), ("ORD", 2), ("PWM", 1)]})


PEOPLE = [
    {"_id": 1, "name": "Tanya Jordan", "friends": ["Shirley Soto", "Terry Hawkins", "Carole Hale"],
     "hobbies": ["tennis", "unicycling", "golf"]},
    {"_id": 2, "name": "Carole Hale", "friends": ["Joseph Dennis", "Tanya Jordan", "Terry Hawkins"],
     "hobbies": ["archery", "golf", "woodworking"]},
    {"_id": 3, "name": "Terry Hawkins", "friends": ["Tanya Jordan", "Carole Hale", "Angelo Ward"],
     "hobbies": ["knitting", "frisbee"]},
    {"_id": 4, "name": "Joseph Dennis", "friends": ["Angelo Ward", "Carole Hale"], "hobbies": ["tennis", "golf", "topiary"]},
    {"_id": 5, "name": "Angelo Ward", "friends": ["Terry Hawkins", "Shirley Soto", "Joseph Dennis"],
     "hobbies": ["travel", "ceramics", "golf"]},
    {"_id": 6, "name": "Shirley Soto", "friends": ["Angelo Ward", "Tanya Jordan", "Carole Hale"],
     "hobbies": ["frisbee", "set theory"]},
]
GOLFERS = ["Angelo Ward", "Carole Hale", "Joseph Dennis", "Tanya Jordan"]


def test_graph_lookup_with_a_query_filter(db, backend, request):
    """Tanya Jordan's connections who play golf: `restrictSearchWithMatch` stops the walk at
    non-golfers; the manual then projects `"$golfers.name"`, a field path through an array."""
    db["people"].insert_many(PEOPLE)
    graph = {"$graphLookup": {"from": "people", "startWith": "$friends", "connectFromField": "friends",
                              "connectToField": "name", "as": "golfers", "restrictSearchWithMatch": {"hobbies": "golf"}}}
    (walk,) = db["people"].aggregate([{"$match": {"name": "Tanya Jordan"}}, graph])
    agrees(backend, request, sorted(g["name"] for g in walk["golfers"]), GOLFERS, "graph_restrict")
    (shown,) = db["people"].aggregate([{"$match": {"name": "Tanya Jordan"}}, graph, {"$project": {
        "name": 1, "friends": 1, "connections who play golf": "$golfers.name"}}])
    names = shown.get("connections who play golf")
    agrees(backend, request, sorted(names) if isinstance(names, list) else names, GOLFERS,
           "array_field_path", "graph_restrict")


# --- $regex (reference/operator/query/regex) ----------------------------------------------------------

PRODUCTS = [{"_id": 100, "sku": "abc123", "description": "Single line description."},
            {"_id": 101, "sku": "abc789", "description": "First line\nSecond line"},
            {"_id": 102, "sku": "xyz456", "description": "Many spaces before     line"},
            {"_id": 103, "sku": "xyz789", "description": "Multiple\nline description"}]


@pytest.mark.parametrize("indexed", [False, True], ids=["no index", "index on sku"])
def test_regex_forms(db, backend, request, indexed):
    products = db["products"]
    products.insert_many(PRODUCTS)
    if indexed:
        products.create_index("sku")
    labels = ("bare_regex_indexed",) if indexed else ()
    for query, manual in [("789$", [101, 103]), ("^ABC", [])]:
        agrees(backend, request, ids(products.find({"sku": {"$regex": query}})), manual)
        agrees(backend, request, ids(products.find({"sku": re.compile(query)})), manual, *labels)
        agrees(backend, request, ids(products.find({"sku": bson.Regex(query)})), manual, *labels)
        agrees(backend, request, ids(products.find({"sku": {"$in": [re.compile(query)]}})), manual, *labels)
    agrees(backend, request, ids(products.find({"sku": {"$regex": "^ABC", "$options": "i"}})), [100, 101])
    agrees(backend, request, ids(products.find({"sku": re.compile("^ABC", re.IGNORECASE)})), [100, 101], *labels)
    agrees(backend, request, ids(products.find({"description": {"$regex": "^S", "$options": "m"}})), [100, 101])
    agrees(backend, request, ids(products.find({"description": {"$regex": "^S"}})), [100])


# --- geospatial (reference/operator/query/near, geoWithin, centerSphere) -------------------------------

PLACES = [
    {"_id": 1, "name": "Central Park", "location": {"type": "Point", "coordinates": [-73.97, 40.77]}, "category": "Parks"},
    {"_id": 2, "name": "Sara D. Roosevelt Park", "location": {"type": "Point", "coordinates": [-73.9928, 40.7193]},
     "category": "Parks"},
    {"_id": 3, "name": "Polo Grounds", "location": {"type": "Point", "coordinates": [-73.9375, 40.8303]},
     "category": "Stadiums"},
]
HERE = {"type": "Point", "coordinates": [-73.9667, 40.78]}


def test_near_and_geo_within(db, backend, request):
    places = db["places"]
    places.insert_many(PLACES)
    try:
        places.create_index([("location", "2dsphere")])
        ring = ids(places.find({"location": {"$near": {"$geometry": HERE, "$minDistance": 1000, "$maxDistance": 5000}}}))
        nearest_first = [d["name"] for d in places.find({"location": {"$near": {"$geometry": HERE}}})]
    except (OperationFailure, NotImplementedError) as e:
        ring, nearest_first = f"raised {type(e).__name__}", None
    agrees(backend, request, ring, [1], "geo_index")
    # $near sorts by distance: Central Park 1.2 km, Polo Grounds 6.1 km, Sara D. Roosevelt Park 7.1 km
    agrees(backend, request, nearest_first, ["Central Park", "Polo Grounds", "Sara D. Roosevelt Park"],
           "near_sorted", "geo_index")
    try:
        within = ids(places.find({"location": {"$geoWithin": {"$centerSphere": [HERE["coordinates"], 5 / 6378.1]}}}))
    except (OperationFailure, NotImplementedError) as e:
        within = f"raised {type(e).__name__}"
    agrees(backend, request, within, [1], "geo_center_sphere")
    square = {"type": "Polygon", "coordinates": [[[-74.0, 40.7], [-73.95, 40.7], [-73.95, 40.8], [-74.0, 40.8], [-74.0, 40.7]]]}
    agrees(backend, request, ids(places.find({"location": {"$geoWithin": {"$geometry": square}}})), [1, 2])


# --- update operators (reference/operator/update/positional-filtered, push, positional-all) ------------

def test_array_filters_and_all_positional(db, backend, request):
    students = db["students"]
    students.insert_many([{"_id": 1, "grades": [95, 92, 90]}, {"_id": 2, "grades": [98, 100, 102]},
                          {"_id": 3, "grades": [95, 110, 100]}])
    students.update_many({}, {"$set": {"grades.$[element]": 100}}, array_filters=[{"element": {"$gte": 100}}])
    agrees(backend, request, [d["grades"] for d in students.find().sort("_id", 1)],
           [[95, 92, 90], [98, 100, 100], [95, 100, 100]])
    students.update_many({}, {"$inc": {"grades.$[]": 10}})
    agrees(backend, request, [d["grades"] for d in students.find().sort("_id", 1)],
           [[105, 102, 100], [108, 110, 110], [105, 110, 110]])


def test_push_each_sort_slice(db, backend, request):
    students = db["students"]
    students.insert_one({"_id": 5, "quizzes": [{"wk": 1, "score": 10}, {"wk": 2, "score": 8},
                                               {"wk": 3, "score": 5}, {"wk": 4, "score": 6}]})
    students.update_one({"_id": 5}, {"$push": {"quizzes": {
        "$each": [{"wk": 5, "score": 8}, {"wk": 6, "score": 7}, {"wk": 7, "score": 6}],
        "$sort": {"score": -1}, "$slice": 3}}})
    agrees(backend, request, students.find_one({"_id": 5})["quizzes"],
           [{"wk": 1, "score": 10}, {"wk": 2, "score": 8}, {"wk": 5, "score": 8}])


# --- $jsonSchema (core/schema-validation/specify-json-schema) -----------------------------------------

def test_json_schema_validation(db, backend, request):
    schema = {"bsonType": "object", "title": "Student Object Validation", "required": ["address", "major", "name", "year"],
              "properties": {"name": {"bsonType": "string"},
                             "year": {"bsonType": "int", "minimum": 2017, "maximum": 3017},
                             "gpa": {"bsonType": ["double"]}}}
    try:
        db.create_collection("students", validator={"$jsonSchema": schema})
        try:
            db["students"].insert_one({"name": "Alice", "year": 2019, "major": "History", "gpa": 3,
                                       "address": {"city": "NYC", "street": "33rd Street"}})
            outcome = "accepted"
        except WriteError as e:
            outcome = f"rejected with code {e.code}"
        db["students"].insert_one({"name": "Alice", "year": 2019, "major": "History", "gpa": 3.0,
                                   "address": {"city": "NYC", "street": "33rd Street"}})
        stored = db["students"].count_documents({})
    except (OperationFailure, NotImplementedError) as e:
        outcome, stored = f"raised {type(e).__name__}", None
    # the manual: gpa 3 is an int, not a double, so "Document failed validation" (code 121)
    agrees(backend, request, (outcome, stored), ("rejected with code 121", 1), "json_schema")


@pytest.fixture(autouse=True, scope="module")
def _report():
    """With ``-s``, print which examples gave the manual's answer and which a probe labelled."""
    yield
    for name, per_backend in sorted(REPLAYS.items()):
        print(f"\n{name}: " + "; ".join(f"{b} {r}" for b, r in sorted(per_backend.items())), end="")
