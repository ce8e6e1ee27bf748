"""Tests of helpers.schema (notebook 05): inference, export to $jsonSchema, validators, versioning.

Every test that takes ``db`` runs on each backend (embedded, mock, mongodb). Parts that need the
server to enforce a validator are skipped where the capability probe says the engine cannot
(``caps.json_schema``), with that reason; the inference, the client-side check and the versioning
run everywhere. The concurrency test runs on the server backends (mongomock-ng is not thread-safe).
"""
from __future__ import annotations

import datetime as dt
import math
import random
import threading
import uuid

import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import schema as sc
from helpers.counting import count_commands
from helpers.datasets import load_dataset
from helpers.safety import fresh_collection
from helpers.schema import infer as schema_infer

_CAPS: dict[str, object] = {}


def _caps_of(db):
    """The probed capabilities of the engine ``db`` lives on (registered by the ``vdb`` fixture)."""
    return _CAPS[db.name]


def _needs_validation(db) -> None:
    if not _caps_of(db).json_schema:
        pytest.skip("this engine does not enforce $jsonSchema validators (probe: caps.json_schema is "
                    "False); the client-side check is tested instead")


@pytest.fixture
def vdb(db, backend):
    """``db`` with its engine's probed capabilities registered for ``_needs_validation``."""
    _CAPS[db.name] = backend.info.caps
    yield db
    _CAPS.pop(db.name, None)


def _collection(db, prefix="t"):
    return db[f"{prefix}_{uuid.uuid4().hex[:8]}"]


def _own(db, prefix="t"):
    """A fresh collection name recorded as the workbook's (set_validator changes only those)."""
    from helpers.safety import workbook_collection

    return workbook_collection(db, f"{prefix}_{uuid.uuid4().hex[:8]}").name


# ------------------------------------------------------------------------------------------
# inference on documents in hand

DOCS = [
    {"_id": 1, "name": "a", "tags": ["x", "y"], "pos": {"lat": 1.5, "lon": 2.0}, "n": 1},
    {"_id": 2, "name": "b", "tags": [], "pos": {"lat": 3.0}, "n": "one"},
    {"_id": 3, "name": "c", "tags": ["x", "z", "w"], "n": 2, "rare": True},
    {"_id": 4, "name": "a", "tags": [{"k": 1}], "pos": {"lat": 4.0, "lon": 5.0}, "n": Int64(3)},
]


def test_infer_documents_reports_every_path_with_its_statistics():
    inf = sc.infer_documents(DOCS, source="docs")
    assert inf.sampled == 4 and inf.total == 4
    assert inf.paths() == ["_id", "name", "tags", "tags[]", "tags[].k", "pos", "pos.lat", "pos.lon", "n", "rare"]
    assert inf["name"].as_dict() == {
        "path": "name", "count": 4, "documents": 4, "presence": 1.0, "required": True,
        "types": {"string": 4}, "type_shares": {"string": 1.0}, "array_lengths": None,
        "distinct": 3, "distinct_exact": True, "examples": ["a", "b", "c"]}
    assert inf["tags"].array_lengths == (0, 1.5, 3)
    assert inf["tags[]"].types == {"string": 5, "object": 1}
    assert inf["tags[]"].documents == 3 and inf["tags[]"].count == 6
    assert inf["tags[].k"].required is True  # in every object element seen
    assert inf["pos"].presence == 0.75 and not inf["pos"].required
    assert inf["pos.lat"].required and not inf["pos.lon"].required
    assert inf["n"].types == {"int": 2, "long": 1, "string": 1}
    assert inf["rare"].presence == 0.25
    assert inf.conflicts() == ["tags[]", "n"]


def test_bson_type_names_match_the_type_aliases():
    cases = [(None, "null"), (True, "bool"), (1, "int"), (2 ** 31, "long"), (Int64(1), "long"),
             (1.0, "double"), ("s", "string"), (ObjectId(), "objectId"), (dt.datetime(2020, 1, 1), "date"),
             (b"x", "binData")]
    for value, alias in cases:
        assert sc.bson_type(value) == alias, value
    assert sc.bson_type({"a": 1}) == "object" and sc.bson_type([1]) == "array"


def test_conflicting_types_export_as_a_bson_type_list():
    schema = sc.to_json_schema(sc.infer_documents(DOCS), exact_types=True)
    assert schema["properties"]["n"]["bsonType"] == ["int", "long", "string"]
    assert schema["properties"]["tags"]["items"]["bsonType"] == ["object", "string"]
    assert schema["required"] == ["_id", "name", "tags", "n"]
    assert schema["properties"]["pos"]["required"] == ["lat"]
    assert all(sc.schema_violations(d, schema) == [] for d in DOCS)
    bad = {"_id": 5, "name": 7, "tags": [1], "n": 1.5}
    assert sc.schema_violations(bad, schema) == [
        "name: bsonType string, got 7 (int)", "tags[0]: bsonType ['object', 'string'], got 1 (int)",
        "n: bsonType ['int', 'long', 'string'], got 1.5 (double)"]


def test_numbers_export_as_number_unless_exact_types_are_asked_for(vdb):
    stored = [{"_id": i, "altitude": float(i), "n": i} for i in range(5)]  # altitude: double, n: int
    inferred = sc.infer_documents(stored)
    loose, exact = sc.to_json_schema(inferred), sc.to_json_schema(inferred, exact_types=True)
    assert loose["properties"] == {"_id": {"bsonType": "number"}, "altitude": {"bsonType": "number"},
                                   "n": {"bsonType": "number"}}
    assert exact["properties"]["altitude"] == {"bsonType": "double"}
    schema = sc.to_json_schema(sc.infer_documents(DOCS))
    assert schema["properties"]["n"]["bsonType"] == ["number", "string"]
    written = {"_id": 9, "altitude": 36000, "n": 1}  # an application writes an int where a double was stored
    assert sc.schema_violations(written, loose) == []
    assert sc.schema_violations(written, exact) == ["altitude: bsonType double, got 36000 (int)"]
    if _caps_of(vdb).json_schema:  # the server agrees
        name = _own(vdb)  # the workbook's drop and create: still the workbook's (its new UUID recorded)
        fresh_collection(vdb, name, validator={"$jsonSchema": loose})
        vdb[name].insert_many(stored)
        assert sc.try_write(lambda: vdb[name].update_one({"_id": 1}, {"$set": {"altitude": 36000}})).accepted
        sc.set_validator(vdb, name, exact)
        assert sc.try_write(lambda: vdb[name].update_one({"_id": 2}, {"$set": {"altitude": 36000}})).code == 121


def test_a_dotted_key_and_a_nested_field_get_two_paths():
    inf = sc.infer_documents([{"_id": 1, "a.b": 1, "a": {"b": "x"}}, {"_id": 2, "a": {"b": "y"}}])
    assert inf.paths() == ["_id", '"a.b"', "a", "a.b"]
    assert inf['"a.b"'].types == {"int": 1} and inf["a.b"].types == {"string": 2}


def test_nesting_beyond_the_servers_limit_is_a_clear_error():
    deep: dict = {"v": 1}
    for _ in range(1000):
        deep = {"d": deep}
    with pytest.raises(sc.SchemaError, match="more than 100 levels"):
        sc.infer_documents([{"_id": 1, "d": deep}])
    ok: dict = {"v": 1}
    for _ in range(40):
        ok = {"d": [ok]}
    assert "v" in sc.infer_documents([ok]).paths()[-1]


def test_empty_arrays_and_documents_export_without_items_or_properties(vdb):
    docs = [{"_id": 1, "a": [], "b": {}, "c": [[]]}, {"_id": 2, "a": [], "b": {}, "c": []}]
    inf = sc.infer_documents(docs)
    assert inf.paths() == ["_id", "a", "b", "c", "c[]"]
    assert inf["a"].array_lengths == (0, 0.0, 0) and inf["c[]"].array_lengths == (0, 0.0, 0)
    schema = sc.to_json_schema(inf)
    assert schema["properties"] == {"_id": {"bsonType": "number"}, "a": {"bsonType": "array"},
                                    "b": {"bsonType": "object"},
                                    "c": {"bsonType": "array", "items": {"bsonType": "array"}}}
    if _caps_of(vdb).json_schema:
        coll = _collection(vdb)
        coll.insert_many(docs)
        assert coll.count_documents({"$jsonSchema": schema}) == 2


def test_distinct_estimate_is_exact_below_the_sketch_size_and_close_above():
    few = sc.infer_documents({"v": i % 50} for i in range(1000))
    assert (few["v"].distinct, few["v"].distinct_exact) == (50, True)
    exact = sc.infer_documents({"v": i} for i in range(sc.EXACT_DISTINCT))
    assert (exact["v"].distinct, exact["v"].distinct_exact) == (sc.EXACT_DISTINCT, True)
    # 1 and 1.0 and "1" and True are four BSON values; -0.0 and 0.0 two; each NaN the same value
    mixed = sc.infer_documents({"v": v} for v in (1, 1.0, "1", True, 0.0, -0.0, float("nan"), float("nan"), 1))
    assert mixed["v"].distinct == 7
    many = sc.infer_documents({"v": i} for i in range(40_000))
    assert not many["v"].distinct_exact
    assert abs(many["v"].distinct - 40_000) / 40_000 < 0.15


def test_the_estimate_past_the_exact_count_is_the_sketch_of_every_value():
    """Switching from exact counting to the sketch loses nothing: the same estimate as hashing every value."""
    values = [f"id{i:05d}" for i in range(sc.EXACT_DISTINCT + 5_000)]
    sketch = schema_infer._Distinct()
    sketch.exact = None  # the sketch alone, from the first value
    for v in values:
        sketch._add_hash(schema_infer._hash_key(("string", v)))
    assert sc.infer_documents({"v": v} for v in values)["v"].distinct == sketch.estimate()[0]


@pytest.mark.parametrize("value, kind", [
    # written by hand: str, int32, float (NaN, zeros, infinities and subnormals included)
    ("", "string"), ("a\x00b", "string"), ("é漢字🚀", "string"), ("x" * 1000, "string"),
    (0, "int"), (-1, "int"), (2 ** 31 - 1, "int"), (-2 ** 31, "int"),
    (1.5, "double"), (-1.5e300, "double"), (1e-320, "double"), (float("inf"), "double"),
    (0.0, "double"), (-0.0, "double"), (float("nan"), "double"),
    # the general way (bson.encode): a long, a bool, None, subclasses
    (2 ** 40, "long"), (Int64(5), "long"), (True, "bool"), (None, "null"), (type("S", (str,), {})("s"), "string"),
])
def test_a_values_hash_is_the_hash_of_its_bson_bytes(value, kind):
    """The sketch's fast hash (the BSON of {"v": value} written by hand for strings, ints and doubles)
    gives the same number as hashing bson.encode's bytes: the estimates do not move."""
    assert schema_infer._hash_value(value, kind) == schema_infer._hash_key(schema_infer._exact_key(value, kind))


def test_a_string_bson_cannot_encode_raises_the_same_way_when_hashed():
    with pytest.raises(UnicodeEncodeError):
        schema_infer._hash_key(schema_infer._exact_key("\ud800", "string"))
    with pytest.raises(UnicodeEncodeError):
        schema_infer._hash_value("\ud800", "string")


def test_percent_never_rounds_a_partial_share_to_all_or_nothing():
    assert [sc.percent(x) for x in (1.0, 0.9997, 0.5, 0.0004, 0.0)] == ["100.0%", ">99.9%", "50.0%", "<0.1%", "0.0%"]


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "100"])
def test_a_sample_size_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(sc.SchemaError, match="sample="):
        sc.infer_schema(None, sample=bad)


def test_an_empty_collection_gives_an_empty_inference_and_no_validator(db):
    inf = sc.infer_schema(_collection(db), sample=10)
    assert (inf.sampled, inf.total, inf.fields) == (0, 0, {})
    with pytest.raises(sc.SchemaError, match="saw no documents"):
        sc.to_json_schema(inf)


def test_infer_documents_refuses_a_non_document():
    with pytest.raises(sc.SchemaError, match="item 1 is a list"):
        sc.infer_documents([{"a": 1}, [1, 2]])


# ------------------------------------------------------------------------------------------
# sampling a collection: reproducible, costs as documented, the same on every backend

def test_seeded_sample_is_reproducible_and_costs_one_query_plus_one_per_100_ids(db):
    coll = _collection(db)
    coll.insert_many([{"_id": i, "v": i % 7, **({"rare": 1} if i % 97 == 0 else {})} for i in range(1000)])
    with count_commands() as cost:
        inf = sc.infer_schema(coll, sample=250, seed=3)
    assert inf.sampled == 250 and inf.total == 1000
    assert cost.commands == ["find", "getMore", "find", "find", "find"]  # ids (101 + rest), 3 chunks
    assert cost.docs_returned == 1000 + 250
    picked = sc.sample_ids(list(range(1000)), 250, 3)
    expected = sc.infer_documents(({"_id": i, "v": i % 7, **({"rare": 1} if i % 97 == 0 else {})}
                                   for i in picked), source=coll.name, total=1000, how=inf.how)
    assert inf.as_dict() == expected.as_dict()
    assert sc.infer_schema(coll, sample=250, seed=3).as_dict() == inf.as_dict()
    whole = sc.infer_schema(coll, sample=None)
    assert whole.sampled == 1000 and whole["rare"].documents == 11
    assert sc.infer_schema(coll, sample=5000).sampled == 1000  # larger than the collection: all of it


def test_server_random_sample_reads_the_asked_number(db):
    coll = _collection(db)
    coll.insert_many([{"_id": i} for i in range(300)])
    inf = sc.infer_schema(coll, sample=40, seed=None)
    assert inf.sampled == 40 and inf.total == 300 and inf.how.startswith("$sample")


def test_miss_rate_counts_the_samples_infer_schema_would_miss(db):
    load_dataset("nyc_planes", db)
    planes = db["nyc_planes"]
    rate = sc.miss_rate(planes, "speed", 33, trials=40, seed=0)
    assert (rate.holders, rate.total, rate.trials) == (23, 3322, 40)
    missed = sum("speed" not in sc.infer_schema(planes, sample=33, seed=s) for s in range(12))
    assert missed == sc.miss_rate(planes, "speed", 33, trials=12, seed=0).misses
    assert math.isclose(rate.expected, math.comb(3322 - 23, 33) / math.comb(3322, 33), rel_tol=1e-9)


# ------------------------------------------------------------------------------------------
# property-based: the exported validator accepts every document it was inferred from

keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 40, 2 ** 40),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
                    st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2100, 1, 1))
                    .map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(keys, inner, max_size=3)),
                      max_leaves=8)
documents = st.lists(st.dictionaries(keys, values, max_size=5), min_size=1, max_size=8)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=documents)
def test_exported_validator_accepts_every_document_it_was_inferred_from(vdb, docs):
    docs = [{"_id": i, **d} for i, d in enumerate(docs)]
    coll = _collection(vdb, "prop")
    try:
        coll.insert_many(docs)
        schema = sc.to_json_schema(sc.infer_schema(coll, sample=None))
        stored = list(coll.find().sort("_id", 1))
        assert [sc.schema_violations(d, schema) for d in stored] == [[] for _ in stored]
        if _caps_of(vdb).json_schema:  # the server agrees, and enforces it
            assert coll.count_documents({"$jsonSchema": schema}) == len(docs)
            validated = _collection(vdb, "propv")
            vdb.create_collection(validated.name, validator={"$jsonSchema": schema})
            validated.insert_many(stored)
            assert validated.count_documents({}) == len(docs)
            vdb.drop_collection(validated.name)
    finally:
        vdb.drop_collection(coll.name)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seen=documents, others=documents)
def test_client_side_check_agrees_with_the_server(vdb, seen, others):
    _needs_validation(vdb)
    schema = sc.to_json_schema(sc.infer_documents([{"_id": 0, **d} for d in seen]))
    coll = _collection(vdb, "agree")
    try:
        coll.insert_many([{"_id": i, **d} for i, d in enumerate(others)])
        server_ok = {d["_id"] for d in coll.find({"$jsonSchema": schema}, {"_id": 1})}
        client_ok = {d["_id"] for d in coll.find() if not sc.schema_violations(d, schema)}
        assert client_ok == server_ok
    finally:
        vdb.drop_collection(coll.name)


# ------------------------------------------------------------------------------------------
# enforcement on the server: code 121, errInfo, validationLevel, validationAction, bypass

REPORT_SCHEMA = {"bsonType": "object", "required": ["_id", "lat"],
                 "properties": {"lat": {"bsonType": "double", "minimum": -90, "maximum": 90}}}


def test_refusal_has_code_121_and_readable_reasons(vdb):
    _needs_validation(vdb)
    name = _collection(vdb).name
    vdb.create_collection(name, validator={"$jsonSchema": REPORT_SCHEMA})
    out = sc.try_write(lambda: vdb[name].insert_one({"_id": 1, "lat": 123.4}))
    assert not out.accepted and out.code == 121
    assert out.reasons == ("lat: maximum 90, got 123.4",)
    out = sc.try_write(lambda: vdb[name].insert_one({"_id": 2}))
    assert out.reasons == ("(document): missing required lat",)
    assert sc.try_write(lambda: vdb[name].insert_one({"_id": 3, "lat": 45.0})).accepted


def test_validation_level_action_and_bypass_follow_the_manual(vdb):
    _needs_validation(vdb)
    name = _own(vdb)
    coll = vdb[name]
    coll.insert_many([{"_id": "old", "lon": 1.0}, {"_id": "good", "lat": 1.0}])  # before any validator
    opts = sc.set_validator(vdb, name, REPORT_SCHEMA)  # existing documents are not checked
    assert opts["validationLevel"] == "strict" and opts["validationAction"] == "error"
    assert coll.count_documents({}) == 2
    # strict: every insert and update is checked, also updates of a document that was already invalid
    assert sc.try_write(lambda: coll.update_one({"_id": "old"}, {"$set": {"x": 1}})).code == 121
    # moderate: updates of an already invalid document are not checked; valid ones still are
    sc.set_validator(vdb, name, REPORT_SCHEMA, level="moderate")
    assert sc.try_write(lambda: coll.update_one({"_id": "old"}, {"$set": {"x": 1}})).accepted
    assert sc.try_write(lambda: coll.update_one({"_id": "good"}, {"$set": {"lat": 99.0}})).code == 121
    assert sc.try_write(lambda: coll.insert_one({"_id": "new"})).code == 121
    # warn: the write goes through (the server logs the violation)
    sc.set_validator(vdb, name, REPORT_SCHEMA, action="warn")
    assert sc.try_write(lambda: coll.insert_one({"_id": "warned"})).accepted
    # bypassDocumentValidation: per operation, with action error
    sc.set_validator(vdb, name, REPORT_SCHEMA)
    assert sc.try_write(lambda: coll.insert_one({"_id": "bypassed"}, bypass_document_validation=True)).accepted
    assert sc.try_write(lambda: coll.insert_one({"_id": "refused"})).code == 121
    assert sorted(d["_id"] for d in coll.find()) == ["bypassed", "good", "old", "warned"]


def test_validation_rights_of_the_test_user(vdb):
    _needs_validation(vdb)
    assert sc.validation_rights(vdb) == {"collMod": True, "bypassDocumentValidation": True}
    assert not [n for n in vdb.list_collection_names() if n.startswith("schema_rights_probe")]


def test_set_validator_refuses_unknown_levels_and_actions(db):
    with pytest.raises(sc.SchemaError, match="level="):
        sc.set_validator(db, "x", REPORT_SCHEMA, level="lenient")
    with pytest.raises(sc.SchemaError, match="action="):
        sc.set_validator(db, "x", REPORT_SCHEMA, action="log")


def test_set_validator_changes_only_the_workbooks_own_collections(db):
    from helpers.safety import REGISTRY, ForeignCollectionError, workbook_collection

    foreign = _collection(db, "theirs")
    foreign.insert_one({"_id": 1, "note": "not the workbook's"})
    with pytest.raises(ForeignCollectionError, match="not created by this workbook"):
        sc.set_validator(db, foreign.name, REPORT_SCHEMA)
    workbook_collection(db, "t_own_probe")  # the registry exists and holds an entry
    with pytest.raises(sc.SchemaError, match="registry"):
        sc.set_validator(db, REGISTRY, REPORT_SCHEMA)
    assert db[REGISTRY].count_documents({"_id": "t_own_probe"}) == 1
    assert foreign.find_one({"_id": 1}) == {"_id": 1, "note": "not the workbook's"}
    for info in db.list_collections():
        if info["name"] in (foreign.name, REGISTRY):
            assert not info.get("options", {}).get("validator")  # neither was touched


# ------------------------------------------------------------------------------------------
# versioning

V1 = [{"_id": f"r{i:03d}", "icao24": "abc123", "lat": 40.0 + i / 100, "lon": 8.0 - i / 100,
       "altitude": 1000.0 + i} for i in range(120)] + [{"_id": "r999", "icao24": "abc123", "altitude": 5.0}]


def test_upgrade_and_read_give_the_version_2_shape():
    new = sc.upgrade_report(V1[0])
    assert new == {"_id": "r000", "icao24": "abc123", "altitude": 1000.0, "schemaVersion": 2,
                   "position": {"type": "Point", "coordinates": [8.0, 40.0]}}
    assert sc.upgrade_report(new) == new and sc.read_report(V1[0]) == new
    assert "position" not in sc.upgrade_report(V1[-1])
    with pytest.raises(sc.SchemaError, match="unknown schemaVersion 3"):
        sc.read_report({"_id": 1, "schemaVersion": 3})


def test_versioned_validator_is_one_branch_per_version():
    v = sc.versioned_validator({1: {"bsonType": "object", "required": ["lat"]},
                                2: {"bsonType": "object", "required": ["position"]}})
    one, two = v["oneOf"]
    assert one["required"] == ["lat"] and one["properties"]["schemaVersion"] == {"enum": [1]}
    assert two["required"] == ["position", "schemaVersion"]
    assert sc.schema_violations(V1[0], v) == []
    assert sc.schema_violations(sc.upgrade_report(V1[0]), v) == []
    assert sc.schema_violations({"_id": 1, "schemaVersion": 2, "lat": 1.0}, v) == [
        "(document): oneOf: 0 of 2 schemas match"]


def test_versioned_validator_on_the_server(vdb):
    _needs_validation(vdb)
    v1 = sc.to_json_schema(sc.infer_documents(V1[:-1]))
    v2 = sc.to_json_schema(sc.infer_documents([sc.upgrade_report(d) for d in V1[:-1]]))
    name = _own(vdb)
    fresh_collection(vdb, name, validator={"$jsonSchema": sc.versioned_validator({1: v1, 2: v2})})
    coll = vdb[name]
    assert sc.try_write(lambda: coll.insert_one(V1[0])).accepted
    assert sc.try_write(lambda: coll.insert_one(sc.upgrade_report(V1[1]))).accepted
    mixed = {**sc.upgrade_report(V1[2]), "position": "north"}  # neither version's shape
    assert sc.try_write(lambda: coll.insert_one(mixed)).code == 121
    sc.set_validator(vdb, name, sc.versioned_validator({2: v2}))  # tightened: version 2 only
    assert sc.try_write(lambda: coll.insert_one(V1[3])).code == 121
    assert sc.try_write(lambda: coll.insert_one(sc.upgrade_report(V1[3]))).accepted


def _load_v1(db):
    coll = _collection(db, "reports")
    coll.insert_many(V1)
    return coll


def test_lazy_write_is_one_command_whatever_the_version(db):
    coll = _load_v1(db)
    with count_commands() as cost:
        assert sc.write_lazy(coll, "r005", {"altitude": 1.0}) == "written"
    assert cost.commands == ["update"] and cost.round_trips == 1 and cost.docs_returned == 0
    assert coll.count_documents(sc.NOT_CURRENT) == len(V1) - 1  # upgraded
    with count_commands() as cost:
        assert sc.write_lazy(coll, "r005", {"altitude": 2.0}) == "written"
    assert cost.commands == ["update"] and cost.round_trips == 1
    assert sc.write_lazy(coll, "nope", {"altitude": 2.0}) == "missing"
    stored = coll.find_one({"_id": "r005"})
    assert stored == {**sc.upgrade_report(V1[5]), "altitude": 2.0}
    assert list(stored) == list({**sc.upgrade_report(V1[5]), "altitude": 2.0})  # same field order too
    assert coll.count_documents({"schemaVersion": {"$exists": False}}) == len(V1) - 1
    # a report without a position is upgraded without one; a string that looks like a field path stays a string
    assert sc.write_lazy(coll, "r999", {"callsign": "$lat"}) == "written"
    assert coll.find_one({"_id": "r999"}) == {**sc.upgrade_report(V1[-1]), "callsign": "$lat"}
    with pytest.raises(sc.SchemaError, match="position"):
        sc.write_lazy(coll, "r001", {"position": None})


def test_one_hundred_lazy_writes_cost_one_hundred_round_trips(db):
    coll = _load_v1(db)
    rng = random.Random(5)
    writes = [(rng.choice(V1)["_id"], {"altitude": float(rng.randrange(40_000))}) for _ in range(100)]
    with count_commands() as cost:
        outcomes = [sc.write_lazy(coll, rid, change) for rid, change in writes]
    assert cost.round_trips == 100 and outcomes == ["written"] * 100
    touched = {rid for rid, _ in writes}
    assert coll.count_documents(sc.NOT_CURRENT) == len(V1) - len(touched)
    last = {rid: change for rid, change in writes}  # the last write to each report wins
    for rid, change in last.items():
        assert coll.find_one({"_id": rid}) == {**sc.upgrade_report(next(d for d in V1 if d["_id"] == rid)), **change}


def test_an_explicit_schema_version_1_is_version_1_for_every_helper(db):
    """version_of and the oneOf validator take schemaVersion: 1 as version 1: so do the writers."""
    coll = _load_v1(db)
    coll.update_many({"_id": {"$in": ["r001", "r002"]}}, {"$set": {"schemaVersion": 1}})
    assert sc.write_lazy(coll, "r001", {"altitude": 1.0}) == "written"
    assert coll.find_one({"_id": "r001"}) == {**sc.upgrade_report(V1[1]), "altitude": 1.0}
    result = sc.migrate_in_batches(coll, 25)
    assert result.upgraded == len(V1) - 1
    assert coll.count_documents({"schemaVersion": {"$ne": 2}}) == 0


def test_a_lazy_write_never_stamps_a_newer_report_back_to_version_2(db):
    """A report a newer release wrote (schemaVersion 3) is left as it is: the write is refused."""
    coll = _load_v1(db)
    newer = {"_id": "v3", "schemaVersion": 3, "lat": 46.0, "lon": 7.0, "altitude": 1.0}
    coll.insert_one(dict(newer))
    with pytest.raises(sc.SchemaError, match="newer"):
        sc.write_lazy(coll, "v3", {"altitude": 2.0})
    assert coll.find_one({"_id": "v3"}) == newer
    assert sc.write_lazy(coll, "nope", {"altitude": 2.0}) == "missing"


def test_a_null_schema_version_is_version_1_on_the_server_and_in_the_reader(db):
    coll = _load_v1(db)
    coll.update_one({"_id": "r001"}, {"$set": {"schemaVersion": None}})
    stored = coll.find_one({"_id": "r001"})
    assert sc.version_of(stored) == 1 and coll.count_documents({"_id": "r001", **sc.NOT_CURRENT}) == 1
    assert sc.read_report(stored)["position"]["coordinates"] == [V1[1]["lon"], V1[1]["lat"]]
    assert sc.write_lazy(coll, "r001", {"altitude": 1.0}) == "written"
    assert coll.find_one({"_id": "r001"})["schemaVersion"] == 2


class _RepeatingSample:
    """A collection whose ``$sample`` returns every document twice, as a pseudo-random cursor may."""

    def __init__(self, coll):
        self.coll, self.name = coll, coll.name

    def count_documents(self, query):
        return self.coll.count_documents(query)

    def aggregate(self, pipeline):
        return [d for d in self.coll.aggregate(pipeline) for _ in range(2)]


def test_a_server_sample_counts_each_document_once(db):
    coll = _load_v1(db)
    inferred = sc.infer_schema(_RepeatingSample(coll), sample=10, seed=None)
    assert inferred.sampled == 10
    assert inferred["_id"].distinct == 10 and inferred["_id"].presence == 1.0


def test_background_migration_ships_no_document_bodies(db):
    coll = _load_v1(db)
    with count_commands() as cost:
        result = sc.migrate_in_batches(coll, 25)
    assert (result.batches, result.upgraded, result.skipped, result.left) == (5, len(V1), 0, 0)
    assert cost.round_trips == 2 * 5 + 1  # per batch: the _id values, one update; then "none left"
    assert cost.docs_returned == len(V1)  # one {_id} per report, nothing else
    assert cost.bytes_returned < 30 * len(V1)
    assert [sc.read_report(d) for d in coll.find().sort("_id", 1)] == [sc.upgrade_report(d) for d in V1]
    # the counter-example reads every document and writes every document back
    naive = _load_v1(db)
    with count_commands() as cost:
        sc.migrate_in_batches(naive, 25, naive=True)
    assert cost.bytes_returned > 50 * len(V1)
    assert [d for d in naive.find().sort("_id", 1)] == [d for d in coll.find().sort("_id", 1)]


def test_background_migration_finishes_whatever_the_id_types(db):
    coll = _collection(db, "mixed_ids")
    ids = [f"s{i:02d}" for i in range(20)] + [ObjectId() for _ in range(3)] + list(range(4))
    coll.insert_many([{"_id": i, "lat": 46.0, "lon": 7.0, "altitude": 1.0} for i in ids])
    result = sc.migrate_in_batches(coll, 5)
    assert (result.upgraded, result.skipped, result.left) == (27, 0, 0)
    assert coll.count_documents(sc.NOT_CURRENT) == 0
    # the naive counter-example pages the same way
    again = _collection(db, "mixed_ids")
    again.insert_many([{"_id": i, "lat": 46.0, "lon": 7.0} for i in ids])
    assert sc.migrate_in_batches(again, 5, naive=True).upgraded == 27
    assert again.count_documents(sc.NOT_CURRENT) == 0


def test_background_migration_never_overwrites_a_concurrent_write(db):
    coll = _load_v1(db)
    expected = {d["_id"]: sc.upgrade_report(d) for d in V1}
    rng = random.Random(5)
    failures = []

    def racing_writer(batch):  # between a batch's read and its write: the worst moment
        for rid in rng.sample(batch, 3):
            change = {"altitude": float(rng.randrange(10_000))}
            sc.write_lazy(coll, rid, change)
            expected[rid].update(change)
        for d in coll.find().limit(10):  # a reader: every version reads
            try:
                sc.read_report(d)
            except Exception as e:  # pragma: no cover - the assertion below reports it
                failures.append(e)

    result = sc.migrate_in_batches(coll, 25, after_read=racing_writer)
    assert result.batches == 5 and result.skipped == 15 and result.upgraded == len(V1) - 15
    assert coll.count_documents({"schemaVersion": {"$exists": False}}) == 0
    assert failures == []
    assert sc.content_digest(coll.find()) == sc.content_digest(expected.values())
    again = sc.migrate_in_batches(coll, 25)
    assert (again.batches, again.upgraded) == (0, 0)


def test_the_naive_migration_loses_the_racing_writes(db):
    coll = _load_v1(db)
    expected = {d["_id"]: sc.upgrade_report(d) for d in V1}
    rng = random.Random(5)

    def racing_writer(batch):
        for rid in rng.sample(batch, 3):
            change = {"altitude": float(rng.randrange(10_000))}
            sc.write_lazy(coll, rid, change)
            expected[rid].update(change)

    sc.migrate_in_batches(coll, 25, after_read=racing_writer, naive=True)
    lost = sum(sc.read_report(d) != expected[d["_id"]] for d in coll.find())
    assert lost == 15  # every write made between a batch's read and its replace


def test_migration_with_a_real_concurrent_writer_and_reader(server_db):
    coll = _load_v1(server_db)
    expected = {d["_id"]: sc.upgrade_report(d) for d in V1}
    stop = threading.Event()
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer():
        rng = random.Random(11)
        try:
            while not stop.is_set():
                rid = rng.choice(sorted(expected))
                change = {"altitude": float(rng.randrange(10_000))}
                with lock:  # the expected state follows the order of the writes
                    sc.write_lazy(coll, rid, change)
                    expected[rid].update(change)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    def reader():
        try:
            while not stop.is_set():
                for d in coll.find().limit(20):
                    sc.read_report(d)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    try:
        result = sc.migrate_in_batches(coll, 10)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert result.upgraded + result.skipped <= len(V1)
    assert coll.count_documents({"schemaVersion": {"$exists": False}}) == 0
    assert sc.content_digest(coll.find()) == sc.content_digest(expected.values())


def test_migrate_in_batches_refuses_a_bad_batch_size(db):
    with pytest.raises(sc.SchemaError, match="batch_size"):
        sc.migrate_in_batches(_collection(db), 0)
    with pytest.raises(sc.SchemaError, match="batch_size"):
        sc.migrate_in_batches(_collection(db), 1.5)


# ------------------------------------------------------------------------------------------
# the exercise checkers of notebook 05 (helpers/schema/checks.py) accept the right answer and
# say what is wrong with a wrong one, on every backend

def test_checker_5_1_latitude_validator(vdb):
    from helpers.schema import checks as nb05

    coll = _collection(vdb, "reports")
    coll.insert_many([{"_id": f"r{i}", "lat": float(i % 90), "lon": 1.0} for i in range(30)])
    server = _caps_of(vdb).json_schema
    base = sc.to_json_schema(sc.infer_schema(coll, sample=None))
    assert "accepts latitude 90.5" in nb05.latitude_validator(base, db=vdb, reports=coll, server=server)
    ranged = {**base, "properties": {**base["properties"], "lat": {"bsonType": "double", "minimum": -90, "maximum": 90}}}
    assert nb05.latitude_validator(ranged, db=vdb, reports=coll, server=server) is None
    strict = {**base, "properties": {**base["properties"], "lat": {"bsonType": "double", "minimum": 1, "maximum": 90}}}
    assert "refuses 1 of the 30 stored reports" in nb05.latitude_validator(strict, db=vdb, reports=coll, server=server)
    assert "not {'$jsonSchema'" in nb05.latitude_validator({"$jsonSchema": ranged}, db=vdb, reports=coll, server=server)


def test_checker_5_2_position_reader(db):
    from helpers.schema import checks as nb05

    reports = _collection(db, "reports")
    reports.insert_many(V1)
    versioned = _collection(db, "versioned")
    versioned.insert_many([sc.upgrade_report(d) if i % 2 else d for i, d in enumerate(V1)])

    def right(doc):
        p = sc.read_report(doc).get("position")
        return (p["coordinates"][1], p["coordinates"][0]) if p else None

    def swapped(doc):
        p = sc.read_report(doc).get("position")
        return tuple(p["coordinates"]) if p else None

    assert nb05.position_reader(right, versioned=versioned, reports=reports) is None
    assert "returns" in nb05.position_reader(swapped, versioned=versioned, reports=reports)
    assert "give a function" in nb05.position_reader(42, versioned=versioned, reports=reports)


def test_checker_5_3_missed_paths(db):
    from helpers.schema import checks as nb05

    coll = _collection(db, "mixed")
    coll.insert_many([{"_id": i, "kind": 1, **({"rare": True} if i == 57 else {})} for i in range(300)])
    every = sc.infer_schema(coll, sample=None)
    one_percent = sc.infer_schema(coll, sample=3, seed=7)
    missed = set(every.paths()) - set(one_percent.paths())
    assert missed == {"rare"}
    assert nb05.missed_paths(missed, aerodata=coll) is None
    assert "did see '_id'" in nb05.missed_paths({"_id", "rare"}, aerodata=coll)
    assert "more path" in nb05.missed_paths(set(), aerodata=coll)
    assert "set of field paths" in nb05.missed_paths("rare", aerodata=coll)
