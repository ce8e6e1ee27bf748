"""Tests of helpers.aerodata (notebook 04): keys, ingest, the five queries, on every backend.

The queries are checked against a plain-Python filter over the same real OpenSky sample
(``datasets/adsb_switzerland.csv.gz``), read here with the csv module, independently of ingest.
"""
from __future__ import annotations

import csv
import gzip
import json
import re
from collections import defaultdict

import pymongo.errors
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import aerodata as ad
from helpers.counting import count_commands
from helpers.datasets import DATASETS_DIR
from helpers.safety import is_workbook_collection, workbook_collection

# ------------------------------------------------------------------------------------------
# keys
airlines = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=3, max_size=3)
icao24s = st.text(alphabet="0123456789abcdef", min_size=6, max_size=6)
seqs = st.integers(min_value=0, max_value=10 ** ad.SEQ_DIGITS - 1)
parts = st.one_of(
    st.tuples(airlines, st.none(), st.none()),
    st.tuples(airlines, icao24s, st.none()),
    st.tuples(airlines, icao24s, seqs),
)


@given(parts)
def test_make_id_and_parse_id_are_inverses(p):
    key = ad.make_id(*p)
    assert ad.parse_id(key) == p
    assert ad.make_id(*ad.parse_id(key)) == key


@given(st.lists(parts, min_size=2, max_size=40))
def test_string_order_is_hierarchy_then_number_order(ps):
    def rank(p):  # airline first, then its aircraft, then the aircraft's reports by number
        return (p[0], p[1] or "", -1 if p[2] is None else p[2])

    assert [ad.parse_id(k) for k in sorted(ad.make_id(*p) for p in ps)] == sorted(ps, key=rank)


@settings(max_examples=50)
@given(st.integers(0, 10 ** 9), st.integers(0, 10 ** 9))
def test_message_numbers_sort_as_numbers(a, b):
    ka, kb = ad.make_id("DAL", "a36f7e", a), ad.make_id("DAL", "a36f7e", b)
    assert (ka < kb) == (a < b)


def test_the_article_keys():
    assert ad.make_id("DAL") == "DAL"
    assert ad.make_id("DAL", "a36f7e") == "DAL_a36f7e"
    assert ad.make_id("DAL", "a36f7e", 2) < ad.make_id("DAL", "a36f7e", 10)
    assert "DAL_a36f7e_2" > "DAL_a36f7e_10"  # what unpadded numbers would do


@pytest.mark.parametrize("args, word", [
    (("dal",), "airline"), (("DALX",), "airline"), (("DAL", "A36F7E"), "icao24"), (("DAL", "a36f7"), "icao24"),
    (("DAL", None, 3), "seq"), (("DAL", "a36f7e", -1), "seq"), (("DAL", "a36f7e", 10 ** ad.SEQ_DIGITS), "seq"),
    (("DAL", "a36f7e", True), "seq"), (("DAL", "a36f7e", 1.0), "seq"),
])
def test_make_id_rejects_bad_parts_naming_them(args, word):
    with pytest.raises(ValueError, match=word):
        ad.make_id(*args)


@pytest.mark.parametrize("key", ["", "DAL_", "DAL_a36f7e_2", "DAL_A36F7E", "DA", 42, "DAL_a36f7e_" + "0" * (ad.SEQ_DIGITS + 1)])
def test_parse_id_rejects_foreign_keys(key):
    with pytest.raises(ValueError, match="not an aerodata _id"):
        ad.parse_id(key)


def test_airline_rule():
    assert ad.airline_of_callsign("SWR123") == "SWR"
    assert ad.airline_of_callsign("DAL45") == "DAL"
    assert ad.airline_of_callsign("HBZZA") == ad.NO_AIRLINE  # a registration as callsign
    assert ad.airline_of_callsign("SWRA") == ad.NO_AIRLINE  # no flight number
    assert ad.airline_of_callsign(None) == ad.NO_AIRLINE
    assert ad.NO_AIRLINE not in ad.airline_table()
    assert ad.airline_table()["SWR"]["name"] == "Swiss International Air Lines"  # the active one


# ------------------------------------------------------------------------------------------
# the real sample, read independently of ingest
def _sample() -> list[dict]:
    """Every report of a spread of aircraft (every 40th icao24, plus the two-airline 3c56ed)."""
    with gzip.open(DATASETS_DIR / "adsb_switzerland.csv.gz", "rt", newline="") as fh:
        rows = list(csv.DictReader(fh))
    ids = sorted({r["icao24"] for r in rows})
    keep = set(ids[::40]) | {"3c56ed"}
    out = []
    for r in rows:
        if r["icao24"] in keep:
            m = {"icao24": r["icao24"], "callsign": r["callsign"], "timestamp": int(r["timestamp"])}
            for k in ("lat", "lon", "altitude", "groundspeed", "track", "vertical_rate"):
                m[k] = float(r[k])
            out.append(m)
    return out


SAMPLE = _sample()


def _expected_airline(callsign: str) -> str:  # the rule restated plainly
    return callsign[:3] if re.match(r"^[A-Z]{3}[0-9]", callsign) and callsign[:3] in ad.airline_table() \
        else ad.NO_AIRLINE


def _strip(doc):
    return {k: v for k, v in doc.items() if k not in ("_id", "recordType", "airline", ad.GEO_FIELD)}


@pytest.fixture
def loaded(db):
    result = ad.ingest(db, SAMPLE, batch_size=700)
    return db, result


@pytest.fixture(scope="module")
def _ingested_once(module_db):
    return module_db, ad.ingest(module_db, SAMPLE, batch_size=700)


@pytest.fixture
def loaded_once(_ingested_once):
    """The sample ingested once per backend, for the tests that only read it (they may add the geo
    index, which every read here ignores or needs). A test that writes fails here, at its own
    teardown, rather than some other test later: such a test takes ``loaded``."""
    db, _ = _ingested_once
    coll = db[ad.COLLECTION]

    def state():
        return coll.count_documents({}), sorted(set(coll.index_information()) - {f"{ad.GEO_FIELD}_2dsphere"})

    before = state()
    yield _ingested_once
    assert state() == before, "this test changed the shared sample: give it the `loaded` fixture"


def test_sample_has_what_the_tests_need():
    airlines = {_expected_airline(m["callsign"]) for m in SAMPLE}
    assert ad.NO_AIRLINE in airlines and len(airlines) >= 5
    assert len({(m["icao24"], _expected_airline(m["callsign"])) for m in SAMPLE if m["icao24"] == "3c56ed"}) == 2


def test_ingest_on_an_empty_database(loaded):
    db, result = loaded
    assert is_workbook_collection(db, ad.COLLECTION)
    assert result.inserted == len(SAMPLE) and result.duplicates == 0 and result.rejected == []
    pairs = {(_expected_airline(m["callsign"]), m["icao24"]) for m in SAMPLE}
    assert result.aircraft_created == len(pairs)
    assert result.airlines_created == len({a for a, _ in pairs})
    coll = db[ad.COLLECTION]
    assert coll.count_documents({"recordType": 3}) == len(SAMPLE)
    assert coll.count_documents({"recordType": 2}) == len(pairs)
    assert coll.count_documents({}) == len(SAMPLE) + len(pairs) + len({a for a, _ in pairs})
    names = {i["key"][0][0] if isinstance(i["key"], list) else list(i["key"])[0]
             for i in coll.index_information().values()}
    assert "recordType" in names


def test_reingest_leaves_counts_unchanged(loaded):
    db, _ = loaded
    before = db[ad.COLLECTION].count_documents({})
    again = ad.ingest(db, SAMPLE[:900] + SAMPLE[:5])  # twice in one call too
    assert again.inserted == 0 and again.duplicates == 905
    assert again.airlines_created == 0 and again.aircraft_created == 0
    assert db[ad.COLLECTION].count_documents({}) == before


@pytest.mark.parametrize("case", ["airline_all", "airline", "fleet", "aircraft", "reports"])
def test_five_queries_match_a_plain_python_filter(loaded_once, case):
    db, _ = loaded_once
    by_airline = defaultdict(list)
    for m in SAMPLE:
        by_airline[_expected_airline(m["callsign"])].append(m)
    checked = 0
    for code in sorted(by_airline):
        msgs = by_airline[code]
        fleet_ids = sorted({m["icao24"] for m in msgs})
        with count_commands() as c:
            if case == "airline_all":
                got = ad.airline_all(db, code)
                kinds = [d["recordType"] for d in got]
                assert kinds[0] == 1 and kinds.count(1) == 1
                assert sorted(d["icao24"] for d in got if d["recordType"] == 2) == fleet_ids
                assert sorted((d["icao24"], d["timestamp"]) for d in got if d["recordType"] == 3) == \
                    sorted((m["icao24"], m["timestamp"]) for m in msgs)
                assert [d["_id"] for d in got] == sorted(d["_id"] for d in got)
            elif case == "airline":
                got = ad.airline(db, code)
                assert got["_id"] == code and got["recordType"] == 1
                if code != ad.NO_AIRLINE:
                    assert got["name"] == ad.airline_table()[code]["name"]
            elif case == "fleet":
                got = ad.fleet(db, code)
                assert [d["icao24"] for d in got] == fleet_ids
                assert {d["recordType"] for d in got} == {2}
            else:
                for icao in fleet_ids:
                    if case == "aircraft":
                        got = ad.aircraft(db, code, icao)
                        assert got["_id"] == f"{code}_{icao}" and got["airline"] == code
                    else:
                        got = ad.reports(db, code, icao)
                        want = sorted((m for m in msgs if m["icao24"] == icao), key=lambda m: m["timestamp"])
                        assert [_strip(d) for d in got] == want  # same field names and values
        per_call = 1 if case in ("airline_all", "airline", "fleet") else len(fleet_ids)
        assert c.round_trips == per_call, (case, code, c.commands)
        checked += 1
    assert checked == len(by_airline)
    assert ad.airline(db, "ZZZ") is None and ad.fleet(db, "ZZZ") == [] and ad.reports(db, "ZZZ", "abcdef") == []


def test_latest_report_is_the_last_of_the_range_in_one_document(loaded_once):
    db, _ = loaded_once
    latest = {}
    for m in SAMPLE:
        key = (_expected_airline(m["callsign"]), m["icao24"])
        latest[key] = max(latest.get(key, m["timestamp"]), m["timestamp"])
    for (code, icao), ts in sorted(latest.items()):
        with count_commands() as c:
            got = ad.latest_report(db, code, icao, projection={"timestamp": 1})
        assert got["timestamp"] == ts, (code, icao)
        assert (c.round_trips, c.docs_returned) == (1, 1)
    assert ad.latest_report(db, "ZZZ", "abcdef") is None


def test_the_subset_keeps_the_last_reports_and_answers_like_the_reports(db):
    first = ad.ingest(db, SAMPLE, collection="subset", batch_size=700, keep_last=3)
    again = ad.ingest(db, SAMPLE[:900], collection="subset", keep_last=3)  # re-sent: never pushed twice
    assert again.inserted == 0 and first.inserted == len(SAMPLE)
    ad.ingest(db, SAMPLE, collection="plain", batch_size=700)
    for code in sorted({_expected_airline(m["callsign"]) for m in SAMPLE}):
        with count_commands() as c:
            from_subset = ad.latest_positions(db, code, collection="subset", subset=True)
        with count_commands() as plain:
            from_reports = ad.latest_positions(db, code, collection="plain")  # one aggregate with a $lookup
        assert c.round_trips == plain.round_trips == 1 and c.docs_returned == plain.docs_returned == len(from_reports)
        grouped = {d["_id"]: (d["timestamp"], d["lat"], d["lon"]) for d in db["plain"].aggregate(
            ad.fleet_latest_group_pipeline(code))}
        assert from_subset == from_reports == grouped != {}
        for plane in ad.fleet(db, code, collection="subset"):
            times = sorted(m["timestamp"] for m in SAMPLE
                           if m["icao24"] == plane["icao24"] and _expected_airline(m["callsign"]) == code)
            assert [r["timestamp"] for r in plane["last_reports"]] == times[-3:]
    with pytest.raises(ValueError, match="keep_last"):
        ad.ingest(db, SAMPLE[:1], collection="subset", keep_last=-1)


def test_the_subset_statements_give_the_same_documents_in_any_order(db):
    """An unordered bulk may apply its statements in any order: the subset's batch gives the same
    documents run forwards or backwards, each aircraft created by its upsert if new."""
    from pymongo import InsertOne, UpdateOne

    part = [ad.validate_message(m)[0] for m in SAMPLE[:300]]
    statements = ad.subset_statements(part, keep_last=1)
    planes = {ad.make_id(ad.airline_of_callsign(m.get("callsign")), m["icao24"]) for m in part}
    assert sum(kind == "upsert" for kind, _, _ in statements) == len(planes) > 1
    stored = {}
    for name, order in (("forwards", statements), ("backwards", statements[::-1])):
        coll = db[name]
        coll.insert_one({"_id": sorted(planes)[0], "recordType": ad.AIRCRAFT, "kept": True})  # one known already
        for kind, doc, update in order:  # one statement at a time, in this order
            coll.bulk_write([InsertOne(doc) if kind == "insert" else UpdateOne(doc, update, upsert=True)])
        stored[name] = list(coll.find({}, sort=[("_id", 1)], batch_size=10_000))
    assert stored["forwards"] == stored["backwards"]
    planes_stored = [d for d in stored["forwards"] if d["recordType"] == ad.AIRCRAFT]
    assert {d["_id"] for d in planes_stored} == planes and all(len(d["last_reports"]) == 1 for d in planes_stored)
    for d in planes_stored:  # the newest report of each aircraft, whatever the order
        newest = max(m["timestamp"] for m in part if ad.make_id(ad.airline_of_callsign(m.get("callsign")), m["icao24"]) == d["_id"])
        assert d["last_reports"][0]["timestamp"] == newest


def test_the_receiver_batch_is_one_number_the_bill_measures():
    """The batch the notebook prints is the batch the bill measures: the aircraft in range, 10 s each."""
    from helpers.aerodata.costs import RECEIVER_BATCH as billed
    from helpers.aerodata.messages import RECEIVER_BATCH

    assert ad.receiver_batch(2_500_000 / 86_400, 10) == (29, 290) and RECEIVER_BATCH == billed == 290
    aircraft, size = ad.receiver_batch(4, 10)
    batches = ad.receiver_batches(SAMPLE, aircraft=aircraft, reports=size // aircraft, count=2)
    assert [len(b) for b in batches] == [size, size]


def test_the_subsets_are_kept_for_the_followed_airlines_only():
    """The workload reads one airline's map: a subset kept for every airline in range would be written
    and never read. With ``airlines`` the statements keep that airline's subsets, and every other
    aircraft and airline is a plain insert (the same documents, without their subset)."""
    from helpers.aerodata.costs import airline_fleet_statements as fleet_statements

    part = [ad.validate_message(m)[0] for m in SAMPLE[:300]]
    codes = sorted({ad.airline_of_callsign(m.get("callsign")) for m in part})
    assert len(codes) > 1
    followed = {codes[0]}
    planes = {ad.make_id(ad.airline_of_callsign(m.get("callsign")), m["icao24"]) for m in part}
    mine = {p for p in planes if p.split("_")[0] in followed}
    for every, only, kept in ((ad.subset_statements(part, 1), ad.subset_statements(part, 1, followed), mine),
                              (fleet_statements(part), fleet_statements(part, followed), followed)):
        assert len(every) == len(only)  # one statement per document either way
        upserted = {doc["_id"] for kind, doc, _ in only if kind == "upsert"}
        assert upserted == kept != set()
        assert {doc["_id"] for kind, doc, _ in every if kind == "upsert"} > upserted
        assert {doc["_id"] for _, doc, _ in every} == {doc["_id"] for _, doc, _ in only}


def test_a_batch_is_one_insert_and_the_subset_one_more_command(db):
    counted = {}
    for name, keep in (("plain", 0), ("subset", 1)):
        ad.ensure_indexes(db, name)
        with count_commands() as counted[name]:
            ad.ingest_batch(db[name], list(enumerate(SAMPLE[:700])), ad.IngestResult(), keep)
    assert counted["plain"].commands == ["insert"] and counted["subset"].commands == ["insert", "update"]
    result = ad.ingest(db, SAMPLE[:800], collection="plain", batch_size=800)  # 700 re-sent, 100 new
    assert (result.duplicates, result.inserted) == (700, 100)


def _forms(costs, design, operation):
    return costs[design][operation].forms


def test_tracker_costs_measure_every_form_of_each_design(db, backend):
    from helpers.workload import Forms, Operation, Workload

    code = "SWR" if any(_expected_airline(m["callsign"]) == "SWR" for m in SAMPLE) else _expected_airline(SAMPLE[0]["callsign"])
    msgs = [m for m in SAMPLE if _expected_airline(m["callsign"]) == code]
    plane = msgs[0]["icao24"]
    fleet = len({m["icao24"] for m in msgs})
    costs = ad.tracker_costs(db, code, msgs, plane, batch_size=40, counted=2)
    assert sorted(costs) == sorted(["one collection", ad.WIDE, "one collection + subset", ad.IN_AIRLINE, "three collections"])
    assert all(isinstance(f, Forms) for ops in costs.values() for f in ops.values())
    store = {d: _forms(costs, d, "store a report") for d in costs}
    assert store["one collection"]["one insert a batch"]["round trips"] * 40 == pytest.approx(1)
    assert store["one collection + subset"]["one insert and one $push a batch"]["round trips"] * 40 == pytest.approx(2)
    three = store["three collections"]
    assert three["three inserts a batch"]["round trips"] * 40 == pytest.approx(3)
    assert 1 <= three["parents only when new to the writer"]["round trips"] * 40 <= 3
    # without client bulkWrite: the reports alone each batch, the new parents once an hour (the same documents)
    assert 1 <= three[ad.HOURLY]["round trips"] * 40 < 1.001
    assert three[ad.HOURLY]["docs written"] == pytest.approx(three["parents only when new to the writer"]["docs written"])
    # the map is 10 s fresh: the hourly flush is never billed beside a map read from the aircraft collection
    # (an aircraft heard within the hour missing from it), only beside one read from the reports alone
    assert costs["three collections"]["store a report"].layouts == {
        k: {ad.PARENTS_HOURLY if k == ad.HOURLY else ad.PARENTS_EACH_BATCH} for k in three}
    maps = costs["three collections"]["latest position of a fleet"].layouts
    assert all(maps[k] == ({ad.PARENTS_EACH_BATCH} if k in (ad.LOOKUP, ad.LOOP) else {ad.PARENTS_EACH_BATCH, ad.PARENTS_HOURLY})
               for k in _forms(costs, "three collections", "latest position of a fleet")), maps
    # MongoDB 8.0's client bulkWrite, where the engine has it: one command a batch for every design
    bulk = backend.info.caps.client_bulk_write
    subset_store = store["one collection + subset"]
    for d, separate in (("three collections", "three inserts a batch"), ("one collection + subset",
                                                                        "one insert and one $push a batch")):
        assert (ad.BULK in store[d]) == bulk, d
        if bulk:  # the same documents written, in one command
            assert store[d][ad.BULK]["round trips"] * 40 == pytest.approx(1)
            assert store[d][ad.BULK]["docs written"] == pytest.approx(store[d][separate]["docs written"])
    # without it too, the subset's batch is one update command of upserts, writing the same documents
    assert subset_store[ad.UPSERTS]["round trips"] * 40 == pytest.approx(1)
    assert subset_store[ad.UPSERTS]["docs written"] == pytest.approx(subset_store["one insert and one $push a batch"]["docs written"])
    # the subset in the airline: one command a batch too, and its map one document
    in_airline = store[ad.IN_AIRLINE]
    assert (ad.BULK in in_airline) == bulk
    assert all(f["round trips"] * 40 == pytest.approx(1) for f in in_airline.values())
    airline_map = next(iter(_forms(costs, ad.IN_AIRLINE, "latest position of a fleet").values()))
    assert (airline_map["round trips"], airline_map["docs returned"]) == (1, 1)
    for d in costs:  # each report writes a key in each of its collection's two indexes, and a few parents
        assert all(2 <= f["index keys written"] < 2.5 for k, f in store[d].items() if not k.endswith(ad.ON_ID_ONLY)), d
    # the subset in the airline reads no second index: each store form on the _id index alone too, a key a report
    # fewer, the same documents; its track then an _id range, and never billed beside the second index's forms
    alone = {k.removesuffix(ad.ON_ID_ONLY): f for k, f in in_airline.items() if k.endswith(ad.ON_ID_ONLY)}
    assert alone and sorted(alone) == sorted(k for k in in_airline if not k.endswith(ad.ON_ID_ONLY))
    for k, f in alone.items():  # a report's key in the second index, and each new parent's, not written
        assert 1 <= f["index keys written"] < 1.5
        assert in_airline[k]["index keys written"] - f["index keys written"] >= 1
        assert f["docs written"] == pytest.approx(in_airline[k]["docs written"])
    store_forms, track_forms = costs[ad.IN_AIRLINE]["store a report"], costs[ad.IN_AIRLINE]["one aircraft's reports"]
    assert all(store_forms.layouts[k] == {ad.ID_ONLY if k.endswith(ad.ON_ID_ONLY) else ad.ID_TRACK} for k in store_forms.forms)
    assert sorted(store_forms.teaching) == sorted(k + ad.ON_ID_ONLY for k in alone)  # each says why it may lose
    assert track_forms.layouts[ad.ID_RANGE_TRACK] == {ad.ID_ONLY, ad.ID_TRACK}
    assert all(track_forms.layouts[k] == {ad.ID_TRACK} for k in track_forms.forms if k != ad.ID_RANGE_TRACK)
    id_track = track_forms.forms[ad.ID_RANGE_TRACK]
    assert id_track["round trips"] == 1 and id_track["bytes returned"] == \
        track_forms.forms["{recordType: 3, _id range}, the track's fields"]["bytes returned"]
    latest = _forms(costs, "one collection", "latest position of a fleet")
    assert latest[ad.LOOP]["round trips"] == 1 + fleet
    assert latest[ad.LOOKUP]["round trips"] == latest[ad.GROUP]["round trips"] == 1
    assert latest[ad.LOOKUP]["docs returned"] == latest[ad.GROUP]["docs returned"] == fleet
    assert latest[ad.LOOKUP]["bytes returned"] == latest[ad.GROUP]["bytes returned"]  # the same documents
    subset = next(iter(_forms(costs, "one collection + subset", "latest position of a fleet").values()))
    assert (subset["round trips"], subset["bytes returned"]) == (1, latest[ad.LOOKUP]["bytes returned"])
    everything = _forms(costs, "three collections", "everything for an airline")
    assert everything["one aggregate with $unionWith"]["round trips"] == 1 and everything["three queries"]["round trips"] == 3
    n = sum(m["icao24"] == plane for m in msgs)
    assert {f["docs returned"] for ops in costs.values() for f in ops["one aircraft's reports"].forms.values()} == {n}
    explained = backend.info.caps.explain  # the server's work only where the engine explains
    assert all(("docs examined" in f) == explained for ops in costs.values() for fs in ops.values() for f in fs.forms.values())
    if explained:  # the fleet's keys from its index (covered), and one report per aircraft
        assert (latest[ad.LOOKUP]["keys examined"], latest[ad.LOOKUP]["docs examined"]) == (2 * fleet, fleet)
        assert subset["docs examined"] == fleet
        assert airline_map["docs examined"] == 1
        # a parent sent again with every batch is refused: a key looked up in the _id index, no document
        assert store["one collection"]["one insert a batch"]["keys examined"] > 0 == \
            store["one collection"]["one insert a batch"]["docs examined"]
        counted = (msgs[-80:-40], msgs[-40:])  # the followed airline's map: its subset alone is kept
        airlines = sum(any(_expected_airline(m["callsign"]) == code for m in b) for b in counted)
        # a writer that remembers the parents it stored sends none again: nothing refused, the same documents
        remembers = store["one collection"]["one insert a batch" + ad.NEW]
        assert remembers["keys examined"] == 0 and remembers["round trips"] * 40 == pytest.approx(1)
        assert remembers["docs written"] == pytest.approx(store["one collection"]["one insert a batch"]["docs written"])
        if bulk:  # the airline's update examines its document, an aircraft sent again only its key
            assert in_airline[ad.BULK]["docs examined"] * 80 == pytest.approx(airlines)
        for d in ("one collection", "one collection + subset"):  # an _id prefix: a key and a document a match
            f = _forms(costs, d, "everything for an airline")["one find on the _id prefix"]
            assert f["keys examined"] == f["docs examined"] == f["docs returned"] > 0
        # an update statement that finds its aircraft examines it; an upsert that finds none, nothing
        planes = sum(len({m["icao24"] for m in b if _expected_airline(m["callsign"]) == code}) for b in counted)
        assert subset_store["one insert and one $push a batch"]["docs examined"] * 80 == pytest.approx(planes)
        new = len({m["icao24"] for m in msgs[-80:]}) > 1  # one aircraft is new to the tracker (of two or more)
        if bulk:  # and created by its upsert: found by none
            assert subset_store[ad.BULK]["docs examined"] * 80 == pytest.approx(planes - new)
    # {recordType, airline, icao24, _id} in place of {recordType, _id}: the same writes, three collections' map
    wide = _forms(costs, ad.WIDE, "latest position of a fleet")
    assert {k: f["index keys written"] for k, f in store[ad.WIDE].items()} == \
        {k: f["index keys written"] for k, f in store["one collection"].items()}
    assert wide[ad.DISTINCT]["round trips"] == 1 and wide[ad.DISTINCT]["docs returned"] == fleet
    if explained:  # SecantusDB plans the $group on that index: a real MongoDB's DISTINCT_SCAN, a key an aircraft
        assert (wide[ad.DISTINCT]["keys examined"], wide[ad.DISTINCT]["docs examined"]) == (fleet, fleet)
        assert wide[ad.LOOKUP]["keys examined"] == 2 * fleet
        track = _forms(costs, ad.WIDE, "one aircraft's reports")
        assert all(f["keys examined"] == f["docs examined"] == n for k, f in track.items()
                   if k != ad.COVERED_TRACK)  # its range, no more
        # the design's second index widened with the track's fields covers the track and the map: keys, no document
        for d in (ad.WIDE, "three collections", ad.IN_AIRLINE):
            cover = _forms(costs, d, "one aircraft's reports")[ad.COVERED_TRACK]
            assert (cover["keys examined"], cover["docs examined"]) == (n, 0), d
        # the _id range: a key and a document a report (a real MongoDB's bounds; modelled where the engine scans)
        assert (id_track["keys examined"], id_track["docs examined"]) == (n, n)
        assert (ad.ID_RANGE_TRACK in track_forms.teaching) != backend.info.caps.id_range_index
        for d in (ad.WIDE, "three collections"):
            cover = _forms(costs, d, "latest position of a fleet")[ad.COVERED_MAP]
            assert (cover["keys examined"], cover["docs examined"], cover["docs returned"]) == (fleet, 0, fleet), d
    day = Workload("t", tuple(Operation(op, "write" if op == "store a report" else "read", 1, "-", "-", "-")
                              for op in costs["one collection"]))
    assert day.billed(costs)["one collection"]["latest position of a fleet"] != ad.LOOP
    # billed by the index keys it writes, the subset in the airline drops its second index: stored and read on
    # the _id index alone; by the documents it examines (where the engine explains), its covered track keeps it
    bill = day.billed({ad.IN_AIRLINE: costs[ad.IN_AIRLINE]}, ("index keys written / day",))[ad.IN_AIRLINE]
    assert bill["store a report"].endswith(ad.ON_ID_ONLY) and bill["one aircraft's reports"] == ad.ID_RANGE_TRACK
    if explained:
        bill = day.billed({ad.IN_AIRLINE: costs[ad.IN_AIRLINE]}, ("docs examined / day",))[ad.IN_AIRLINE]
        assert not bill["store a report"].endswith(ad.ON_ID_ONLY) and bill["one aircraft's reports"] == ad.COVERED_TRACK
    # the day's share of new aircraft weighs the one measured: none new, only the reports are written
    remembering, new = "one insert a batch" + ad.NEW, len({m["icao24"] for m in msgs[-80:]}) > 1
    assert store["one collection"][remembering]["docs written"] * 80 == pytest.approx(80 + new)
    for share in (0, 0.5):
        weighed = ad.tracker_costs(db, code, msgs, plane, batch_size=40, counted=2, new_aircraft=share)
        assert _forms(weighed, "one collection", "store a report")[remembering]["docs written"] * 80 == \
            pytest.approx(80 + share * new)
    # reads from a collection the caller filled: the same answers as from the fresh copies
    ad.ingest(db, msgs)
    again = ad.tracker_costs(db, code, msgs, plane, batch_size=40, counted=2, single=ad.COLLECTION)
    for op in ("one aircraft's reports", "latest position of a fleet", "everything for an airline"):
        assert {k: f["docs returned"] for k, f in _forms(again, "one collection", op).items()} == \
            {k: f["docs returned"] for k, f in _forms(costs, "one collection", op).items()}


def test_prefixes_stop_where_the_key_says(loaded_once):
    db, _ = loaded_once
    code, icao = "EWG", "3c56ed"
    with_trailing = ad.reports(db, code, icao)
    without = list(db[ad.COLLECTION].find({"_id": {"$regex": f"^{code}_{icao}"}}))
    assert len(without) == len(with_trailing) + 1  # the aircraft document too
    assert ad.aircraft(db, "GWI", icao) is not None  # the same plane under its other operator


BAD = [
    ({"callsign": "SWR1", "timestamp": 1533099600, "lat": 47.0, "lon": 8.0}, "no icao24"),
    ({"icao24": "", "timestamp": 1533099600, "lat": 47.0, "lon": 8.0}, "no icao24"),
    ({"icao24": "xyz123", "timestamp": 1533099600, "lat": 47.0, "lon": 8.0}, "bad icao24"),
    ({"icao24": "4b1805", "timestamp": 1533099600, "lat": 91.0, "lon": 8.0}, "lat out of range"),
    ({"icao24": "4b1805", "timestamp": 1533099600, "lat": 47.0, "lon": -180.5}, "lon out of range"),
    ({"icao24": "4b1805", "timestamp": 1533099600, "lat": float("nan"), "lon": 8.0}, "lat out of range"),
    ({"icao24": "4b1805", "timestamp": 1533099600, "lat": "47", "lon": 8.0}, "lat out of range"),
    ({"icao24": "4b1805", "timestamp": 1533099600, "lon": 8.0}, "no lat"),
    ({"icao24": "4b1805", "timestamp": "yesterday", "lat": 47.0, "lon": 8.0}, "bad timestamp"),
    ({"icao24": "4b1805", "timestamp": -5, "lat": 47.0, "lon": 8.0}, "bad timestamp"),
    ({"icao24": "4b1805", "timestamp": 10 ** 12, "lat": 47.0, "lon": 8.0}, "bad timestamp"),
    ({"icao24": "4b1805", "lat": 47.0, "lon": 8.0}, "no timestamp"),
    ({"icao24": "4b1805", "timestamp": 1533099600, "lat": 47.0, "lon": 8.0, "altitude": "high"}, "bad altitude"),
    ("not a dict", "not a message"),
]


def test_malformed_messages_are_rejected_with_reasons_while_good_ones_land(db):
    good = SAMPLE[:30]
    batch = []
    for i, m in enumerate(good):
        batch.append(m)
        if i < len(BAD):
            batch.append(BAD[i][0])
    result = ad.ingest(db, batch, batch_size=7)
    assert result.inserted == len(good) and result.duplicates == 0
    assert [r.reason.split(":")[0] for r in result.rejected] == [why for _, why in BAD]
    assert [r.index for r in result.rejected] == [2 * i + 1 for i in range(len(BAD))]
    assert result.rejected[0].message is BAD[0][0]
    assert db[ad.COLLECTION].count_documents({"recordType": 3}) == len(good)
    assert sum(result.reasons().values()) == len(BAD)


def test_ingest_refuses_a_bare_message(db):
    with pytest.raises(TypeError, match=r"\[message\]"):
        ad.ingest(db, SAMPLE[0])
    with pytest.raises(ValueError, match="batch_size"):
        ad.ingest(db, SAMPLE[:1], batch_size=0)


def test_stratux_round_trip_and_rejection(db):
    m = SAMPLE[0]
    text = ad.to_stratux_json(m)
    raw = json.loads(text)
    assert raw["Icao_addr"] == int(m["icao24"], 16) and raw["Tail"] == m["callsign"]
    back = ad.parse_stratux(text)
    assert back["icao24"] == m["icao24"] and back["timestamp"] == m["timestamp"]
    assert (back["lat"], back["lon"]) == (m["lat"], m["lon"]) and back["altitude"] == round(m["altitude"])
    assert ad.parse_stratux(text.replace('"Timestamp":"2018', '"Timestamp":"20x8'))["timestamp"] is None
    nanos = json.dumps({**raw, "Timestamp": "2018-08-01T05:00:00.937200261Z"})
    assert ad.parse_stratux(nanos)["timestamp"] == 1533099600.937  # kept to the millisecond
    invalid = json.dumps({**raw, "Position_valid": False})
    r = ad.ingest(db, [ad.parse_stratux(text), ad.parse_stratux(invalid)])
    assert r.inserted == 1 and r.rejected[0].reason.startswith("no lat")
    with pytest.raises(ValueError, match="not JSON"):
        ad.parse_stratux("{oops")


def test_dataclass_dispatch(loaded_once):
    db, _ = loaded_once
    objs = [ad.from_document(d) for d in ad.airline_all(db, "EWG")]
    assert type(objs[0]) is ad.Airline and objs[0].name.startswith("Eurowings")
    assert {type(o) for o in objs[1:]} <= {ad.Aircraft, ad.Report}
    assert any(isinstance(o, ad.Report) and o.timestamp > 0 for o in objs)
    with pytest.raises(ValueError, match="recordType=9"):
        ad.from_document({"_id": "x", "recordType": 9})


def test_bounds_model():
    keys = sorted(["DAL", "DAL_a36f7e", "DAL_a36f7e_0000000001", "DAM", "DAK_000000", "DAL`"])
    assert ad.prefix_bounds("DAL_") == ("DAL_", "DAL`")
    assert ad.keys_in_bounds(keys, ad.prefix_bounds("DAL_")) == 2
    assert ad.keys_in_bounds(keys, ad.prefix_bounds("DAL")) == 4
    with pytest.raises(ValueError):
        ad.prefix_bounds("")


def test_rekey_moves_everything(loaded):
    db, _ = loaded
    n = len(ad.reports(db, "EWG", "3c56ed"))
    moved = ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH")
    assert moved == {"inserted": n + 1, "deleted": n + 1, "rounds": 1}
    assert ad.reports(db, "EWG", "3c56ed") == [] and len(ad.reports(db, "DLH", "3c56ed")) == n
    assert ad.aircraft(db, "DLH", "3c56ed")["airline"] == "DLH"
    with pytest.raises(ValueError, match="no aircraft"):
        ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH")


def _late_report(db, airline, icao24, when):
    """A report filed under the old key while a move runs (earlier than the last one: out of order)."""
    doc = {**ad.reports(db, airline, icao24)[0]}
    doc["_id"] = ad.make_id(airline, icao24, ad.message_number(when))
    doc["timestamp"] = when
    db[ad.COLLECTION].insert_one(doc)
    return doc["_id"]


@pytest.mark.parametrize("transaction", [False, True])
def test_rekey_keeps_a_report_that_arrives_during_the_move(loaded, transaction, backend):
    db, _ = loaded
    if transaction and not backend.info.caps.transactions:
        pytest.skip("this backend has no transactions")
    before = ad.reports(db, "EWG", "3c56ed")
    when = before[0]["timestamp"] + 0.5  # inside the old range: "delete the range" would take it uncopied
    moved = ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH", transaction=transaction,
                              during_move=lambda: _late_report(db, "EWG", "3c56ed", when))
    after = ad.reports(db, "DLH", "3c56ed")
    assert ad.reports(db, "EWG", "3c56ed") == [] and ad.aircraft(db, "EWG", "3c56ed") is None
    assert len(after) == len(before) + 1 and when in [d["timestamp"] for d in after]
    assert moved["rounds"] == 2 and moved["inserted"] == moved["deleted"] == len(before) + 2


@pytest.mark.parametrize("transaction", [False, True])
def test_rekey_after_a_crash_between_copy_and_delete_finishes_without_duplicates(loaded, transaction, backend):
    db, _ = loaded
    caps = backend.info.caps
    if transaction and not caps.transactions:
        pytest.skip("this backend has no transactions")
    n = len(ad.reports(db, "EWG", "3c56ed"))

    def crash():
        raise KeyboardInterrupt("the writer dies here")

    with pytest.raises(KeyboardInterrupt):
        ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH", transaction=transaction, during_move=crash)
    old, new = len(ad.reports(db, "EWG", "3c56ed")), len(ad.reports(db, "DLH", "3c56ed"))
    assert old == n  # nothing lost
    if transaction and caps.json_schema:  # a server: the aborted transaction wrote nothing
        assert new == 0
    ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH", transaction=transaction)  # run again: finishes the move
    assert ad.reports(db, "EWG", "3c56ed") == [] and len(ad.reports(db, "DLH", "3c56ed")) == n


def test_rekey_moves_a_document_stored_without_the_usual_fields(loaded):
    """The delete names ids; a report under the old key without airline/icao24 fields is moved too."""
    db, _ = loaded
    n = len(ad.reports(db, "EWG", "3c56ed"))
    odd = {k: v for k, v in ad.reports(db, "EWG", "3c56ed")[0].items() if k not in ("airline", "icao24")}
    odd["_id"] = odd["_id"][:-1] + ("1" if odd["_id"][-1] != "1" else "2")
    db[ad.COLLECTION].insert_one(odd)
    moved = ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH")
    assert moved == {"inserted": n + 2, "deleted": n + 2, "rounds": 1}
    assert ad.reports(db, "EWG", "3c56ed") == [] and len(ad.reports(db, "DLH", "3c56ed")) == n + 1


def test_same_second_reports_keep_two_keys_and_resends_stay_duplicates(db):
    m = {**SAMPLE[0], "timestamp": 1533099600.2}
    twin = {**m, "timestamp": 1533099600.7, "lat": m["lat"] + 0.001}
    first = ad.ingest(db, [m, twin])
    assert first.inserted == 2 and first.duplicates == 0
    again = ad.ingest(db, [twin, m])
    assert again.inserted == 0 and again.duplicates == 2
    got = ad.reports(db, ad.airline_of_callsign(m["callsign"]), m["icao24"])
    assert [d["timestamp"] for d in got] == [1533099600.2, 1533099600.7]
    assert [d[ad.GEO_FIELD]["coordinates"] for d in got] == [[m["lon"], m["lat"]], [twin["lon"], twin["lat"]]]


def test_geo_point_catches_the_coordinate_order_trap():
    zurich = (8.54917, 47.4647)
    assert ad.geo_point(*zurich) == {"type": "Point", "coordinates": [8.54917, 47.4647]}
    swiss = (5.9, 45.8, 10.5, 47.9)
    assert ad.geo_point(*zurich, region=swiss)["coordinates"] == [8.54917, 47.4647]
    with pytest.raises(ValueError, match="swapped"):
        ad.geo_point(47.4647, 8.54917, region=swiss)
    with pytest.raises(ValueError, match=r"\(lat, lon\)"):
        ad.geo_point(8.5, 147.4)
    assert ad.distance_km((8.0, 47.0), (8.0, 48.0)) == pytest.approx(111.3, abs=0.1)


def test_nearest_is_nearest_first_on_every_backend(loaded_once, module_backend):
    db, _ = loaded_once
    caps = module_backend.info.caps
    coll = db[ad.COLLECTION]
    ad.ensure_geo_index(coll)
    here = [8.54917, 47.4647]
    want = sorted((m for m in SAMPLE if ad.distance_km(here, (m["lon"], m["lat"])) <= 30),
                  key=lambda m: ad.distance_km(here, (m["lon"], m["lat"])))[:5]
    for near_sorted in (caps.near_sorted, None):  # None: as the engine was probed
        got = ad.nearest(coll, here, 5, max_km=30, near_sorted=near_sorted)
        assert len(got) == 5
        assert [(d["icao24"], d["timestamp"]) for d in got] == [(m["icao24"], m["timestamp"]) for m in want]


def test_the_geo_index_can_be_ensured_again_however_it_was_made(db, backend):
    """A cell run twice: SecantusDB refuses to create an existing 2dsphere index (docs/ENGINES.md)."""
    coll = workbook_collection(db, ad.COLLECTION)
    coll.insert_one({"_id": "x", ad.GEO_FIELD: {"type": "Point", "coordinates": [8.5, 47.4]}})
    if not backend.info.caps.geo_index:
        assert ad.ensure_geo_index(coll) is None
        return
    made = coll.create_index([(ad.GEO_FIELD, "2dsphere")])
    assert ad.ensure_geo_index(coll) == made == ad.ensure_geo_index(coll) == f"{ad.GEO_FIELD}_2dsphere"
    assert len(coll.index_information()) == 2


def test_within_km_finds_the_same_set_on_every_backend(loaded_once):
    db, _ = loaded_once
    coll = db[ad.COLLECTION]
    assert ad.ensure_geo_index(coll) == f"{ad.GEO_FIELD}_2dsphere"
    here = {"type": "Point", "coordinates": [8.54917, 47.4647]}
    got = sorted((d["icao24"], d["timestamp"]) for d in coll.find(ad.within_km(coll, here, 25)))
    want = sorted((m["icao24"], m["timestamp"]) for m in SAMPLE
                  if ad.distance_km(here["coordinates"], (m["lon"], m["lat"])) <= 25)
    assert got == want and got


def test_validator_refuses_bad_documents_and_keeps_ingest_working(db, backend):
    caps = backend.info.caps
    if not caps.json_schema:
        pytest.skip("this backend does not validate ($jsonSchema)")
    from pymongo.errors import WriteError
    ad.ingest(db, SAMPLE[:50])
    assert ad.invalid_documents(db) == []
    assert ad.apply_validator(db) == {"validationLevel": "strict", "validationAction": "error"}
    good = ad.ingest(db, SAMPLE[50:120])
    assert good.inserted == 70 and good.rejected == []
    bad = {**db[ad.COLLECTION].find_one({"recordType": 3}), "_id": "SWR_4b1805_0000000000001", "lat": 91.0}
    with pytest.raises(WriteError) as e:
        db[ad.COLLECTION].insert_one(bad)
    assert e.value.code == 121 and "schemaRulesNotSatisfied" in str(e.value.details["errInfo"])
    ad.apply_validator(db, action="warn")
    db[ad.COLLECTION].insert_one(bad)  # accepted, and logged
    assert [d["_id"] for d in ad.invalid_documents(db)] == [bad["_id"]]


def test_shard_simulation():
    old = [f"k{i:04d}" for i in range(1000)]
    growing = [f"k{i:04d}" for i in range(1000, 1400)]
    assert ad.shard_writes(old, growing, 4, "range") == [0, 0, 0, 400]
    spread = ad.shard_writes(old, growing, 4, "hash")
    assert sum(spread) == 400 and max(spread) < 150
    with pytest.raises(ValueError, match="how"):
        ad.shard_writes(old, growing, 4, "round-robin")


_KILLED_MOVER = """
import os, sys
from pymongo import MongoClient
from helpers import aerodata as ad
db = MongoClient(sys.argv[1])[sys.argv[2]]
ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH", transaction=sys.argv[3] == "1",
                  during_move=lambda: os._exit(9))   # the process dies between the copy and the delete
"""


@pytest.mark.parametrize("transaction", [False])  # True: on SecantusDB 0.7.0b3 the dead client's open
# transaction blocks the checks that follow (measured; a real MongoDB aborts it after transactionLifetimeLimitSeconds)
def test_rekey_survives_a_killed_process(test_uri, transaction):
    """A real process dies between copy and delete; nothing is lost, and a re-run finishes the move."""
    import subprocess
    import sys
    import uuid

    from pymongo import MongoClient

    name = f"wbtest_{uuid.uuid4().hex[:10]}"
    client = MongoClient(test_uri)
    try:
        db = client[name]
        ad.ingest(db, [m for m in SAMPLE if m["icao24"] == "3c56ed"])
        n = len(ad.reports(db, "EWG", "3c56ed"))
        proc = subprocess.run([sys.executable, "-c", _KILLED_MOVER, test_uri, name, "1" if transaction else "0"],
                              timeout=120)
        assert proc.returncode == 9
        assert len(ad.reports(db, "EWG", "3c56ed")) == n  # nothing lost
        copied = len(ad.reports(db, "DLH", "3c56ed"))
        assert copied == (0 if transaction else n)  # a transaction that never committed wrote nothing
        ad.rekey_aircraft(db, "EWG", "3c56ed", "DLH")
        assert ad.reports(db, "EWG", "3c56ed") == [] and len(ad.reports(db, "DLH", "3c56ed")) == n
        assert db[ad.COLLECTION].count_documents({"recordType": 3}) == len(ad.reports(db, "GWI", "3c56ed")) + n
    finally:
        client.drop_database(name)
        client.close()


def test_checks_4_1_to_4_3_recompute_from_the_data(loaded_once):
    """The checkers of exercises 4.1-4.3 accept the right answer and refuse a wrong one, on every backend.
    4.1 runs the learner's function on its own copy of the three collections, changed first: an answer
    computed before the call, or read from other collections, is refused."""
    import bson

    from helpers.exercises import evaluate

    db, _ = loaded_once
    coll = db[ad.COLLECTION]
    src = {kind: db[f"t41_{kind}"] for kind in ("aircraft", "reports")}  # 4.4's three collections, for EWG
    for kind, record in (("aircraft", ad.AIRCRAFT), ("reports", ad.REPORT)):
        src[kind].drop()
        src[kind].insert_many([{k: v for k, v in d.items() if k != "recordType"}
                               for d in coll.find({"recordType": record, "airline": "EWG"})])
    src["aircraft"].create_index([("airline", 1), ("icao24", 1)])
    src["reports"].create_index([("airline", 1), ("icao24", 1), ("timestamp", 1)])
    given = {"aircraft": src["aircraft"], "reports": src["reports"], "airline": "EWG"}
    before = set(db.list_collection_names())

    def lookup(aircraft, reports, a):  # the solution's form
        newest = {"airline": 1, "icao24": 1, "timestamp": -1}
        return {p["icao24"]: (p["last"]["timestamp"], p["last"]["lat"], p["last"]["lon"]) for p in aircraft.aggregate([
            {"$match": {"airline": a}},
            {"$lookup": {"from": reports.name, "localField": "icao24", "foreignField": "icao24", "as": "last",
                         "pipeline": [{"$match": {"airline": a}}, {"$sort": newest}, {"$limit": 1}]}},
            {"$unwind": "$last"}])}

    def group(aircraft, reports, a):
        return {d["_id"]: (d["timestamp"], d["lat"], d["lon"]) for d in reports.aggregate([
            {"$match": {"airline": a}}, {"$sort": {"airline": 1, "icao24": 1, "timestamp": -1}},
            {"$group": {"_id": "$icao24", **{f: {"$first": f"${f}"} for f in ("timestamp", "lat", "lon")}}}])}
    for right in (lookup, group):  # every right form in one round trip passes
        assert evaluate("4.1", right, **given)[0] == "correct", right.__name__

    def no_sort(aircraft, reports, a, t="$last"):  # leans on the order stored (or scanned): $last without a $sort
        return {d["_id"]: (d["t"], d["lat"], d["lon"]) for d in reports.aggregate([
            {"$match": {"airline": a}},
            {"$group": {"_id": "$icao24", "t": {t: "$timestamp"}, "lat": {"$last": "$lat"}, "lon": {"$last": "$lon"}}}])}
    for wrong in (no_sort, lambda p, r, a: no_sort(p, r, a, "$max")):  # and $max of the time beside $last positions
        assert "another position" in evaluate("4.1", wrong, **given)[1]
    assert set(db.list_collection_names()) == before  # the check's copies are gone
    kept = lookup(src["aircraft"], src["reports"], "EWG")  # computed before the call
    assert "a function" in evaluate("4.1", kept, **given)[1]
    # a dummy query plus the answer kept: one round trip, the right size, but blind to the check's change
    assert "newer report" in evaluate("4.1", lambda p, r, a: (r.find_one({}), dict(kept))[1], **given)[1]
    # the right form on other collections than those given (the notebook's own): the same, refused
    assert "newer report" in evaluate("4.1", lambda p, r, a: lookup(src["aircraft"], src["reports"], a), **given)[1]
    assert "another position" in evaluate(
        "4.1", lambda p, r, a: {k: (0, 0.0, 0.0) for k in lookup(p, r, a)}, **given)[1]

    def loop(aircraft, reports, a):  # right, but a round trip per aircraft
        return {p["icao24"]: (d["timestamp"], d["lat"], d["lon"]) for p in aircraft.find({"airline": a})
                for d in [reports.find_one({"airline": a, "icao24": p["icao24"]}, sort=[("timestamp", -1)])]}
    assert "round trips" in evaluate("4.1", loop, **given)[1]

    def everything(aircraft, reports, a):  # one round trip, but every report
        out = {}
        for d in reports.find({"airline": a}, sort=[("timestamp", 1)], batch_size=10_000):
            out[d["icao24"]] = (d["timestamp"], d["lat"], d["lon"])
        return out
    assert "documents for" in evaluate("4.1", everything, **given)[1]

    def replay(aircraft, reports, a):  # no command: the kept answer, plus the newer report guessed from the copy's name
        import random
        rng = random.Random(reports.name.rsplit("_", 1)[1])
        plane = rng.choice(sorted(kept))
        return {**kept, plane: (kept[plane][0] + rng.randint(1, 600), 0.0, 0.0)}
    assert evaluate("4.1", replay, **given)[0] == "not right yet"

    def hidden(aircraft, reports, a):  # every report read with the counting paused, then one dummy round trip
        from helpers.counting import paused
        with paused():
            got = everything(aircraft, reports, a)
        reports.find_one({"_id": None})
        return got
    assert "paused the workbook's counting" in evaluate("4.1", hidden, **given)[1]

    def pushed(aircraft, reports, a):  # one round trip, a document per aircraft, but each with every report ($push)
        return {d["_id"]: max((r["timestamp"], r["lat"], r["lon"]) for r in d["all"]) for d in reports.aggregate([
            {"$match": {"airline": a}}, {"$group": {"_id": "$icao24", "all": {"$push": "$$ROOT"}}}], batchSize=10_000)}
    assert "not all of them ($push)" in evaluate("4.1", pushed, **given)[1]

    def top(aircraft, reports, a):  # $top (MongoDB 5.2+), where the engine runs it
        return {d["_id"]: tuple(d["last"]) for d in reports.aggregate([
            {"$match": {"airline": a}},
            {"$group": {"_id": "$icao24", "last": {"$top": {"sortBy": {"timestamp": -1},
                                                            "output": ["$timestamp", "$lat", "$lon"]}}}}], batchSize=10_000)}
    try:
        top(src["aircraft"], src["reports"], "EWG")
    except (pymongo.errors.OperationFailure, NotImplementedError):  # an engine without $top (the mock)
        pass
    else:
        assert evaluate("4.1", top, **given)[0] == "correct"
    for c in src.values():
        c.drop()
    assert evaluate("4.2", ({"_id": {"$regex": "_3c56ed_"}}, "unanchored"), aerodata=coll)[0] == "correct"
    assert "matches nothing" in evaluate("4.2", ({"_id": {"$regex": "_ffffff_"}}, "unanchored"), aerodata=coll)[1]
    sizes = [len(bson.encode(d)) for d in coll.find({"recordType": ad.REPORT})]
    week = 7 * 2_500_000 * sum(sizes) / len(sizes)
    assert evaluate("4.3", week, aerodata=coll)[0] == "correct"
    assert evaluate("4.3", week * 1.02, aerodata=coll)[0] == "not right yet"


# ------------------------------------------------------------------------------------------
# what the engine can show (helpers/aerodata/probe.py): the lines notebook 04 prints, from the probe
def test_probe_lines_follow_the_probe(db, backend):
    caps = backend.info.caps
    ad.ingest(db, SAMPLE[:50])
    coll = db[ad.COLLECTION]
    assert (ad.prefix_scan_note(coll) == "") == (caps.indexes and caps.id_range_index)
    assert ("scans both as index ranges" in ad.range_forms_note(coll, 10)) == (caps.indexes and caps.id_range_index)
    shapes = {"anchored prefix, on _id": {"_id": {"$regex": "^SWR_"}}, "prefix, unindexed field": {"callsign": {"$regex": "^SWR"}}}
    lines = ad.explain_lines(coll, shapes)
    assert len(lines) == 2 and all(line.startswith(name) for line, name in zip(lines, shapes))
    assert ("live:" in lines[0]) == (caps.explain and caps.explain_regex)
    assert ("live:" in lines[1]) == caps.explain
    notes = ad.geo_notes(coll)
    assert notes[0].startswith("radius: ") and any("nearest" in n for n in notes) == (not caps.near_sorted)
    assert ad.transaction_mode(coll).on == caps.transactions
    with pytest.raises(ValueError, match="never probed"):
        ad.transaction_mode(object())


def test_validator_lines_refuse_or_say_why_not_and_leave_the_collection_as_found(db, backend):
    caps = backend.info.caps
    ad.ingest(db, SAMPLE[:50])
    coll = db[ad.COLLECTION]
    on = ad.validator_on(db, ad.COLLECTION)
    assert (on == {"validationLevel": "strict", "validationAction": "error"}) == caps.json_schema
    before = coll.count_documents({})
    bad = {**coll.find_one({"recordType": 3}), "_id": "SWR_4b1805_0000000000001", "lat": 91.0}
    nameless = {"_id": "ZZZ", "recordType": ad.AIRLINE, "airline": "ZZZ"}
    code, outcome = ad.insert_or_refusal(coll, bad)
    assert code == (121 if caps.json_schema else None)
    assert outcome.startswith("refused, code 121" if caps.json_schema else "not tried")
    assert coll.count_documents({}) == before   # refused, or never sent
    lines = ad.validation_levels(db, ad.COLLECTION, bad, nameless)
    if caps.json_schema:
        assert lines[1:3] == ["validationLevel 'strict': an update of the invalid document is refused, code 121",
                              "validationLevel 'moderate': an update of the invalid document is accepted"]
        assert lines[-1].endswith("| invalid documents: 0")
    else:
        assert len(lines) == 1 and lines[0].startswith("not shown")
    assert coll.count_documents({}) == before
    assert not caps.json_schema or ad.invalid_documents(db) == []


def test_tracker_costs_never_drops_a_collection_the_workbook_did_not_create(db):
    from helpers.safety import ForeignCollectionError

    db["aero_cost_single"].insert_one({"_id": "theirs"})
    with pytest.raises(ForeignCollectionError, match="aero_cost_single"):
        ad.tracker_costs(db, "SWR", [], "4b1801")
    assert db["aero_cost_single"].find_one({"_id": "theirs"}) is not None
    db.drop_collection("aero_cost_single")


def test_apply_validator_never_changes_a_collection_the_workbook_did_not_create(db):
    """As ``helpers.schema.set_validator``: a validator on somebody else's collection is refused."""
    from helpers.safety import ForeignCollectionError

    db["theirs"].insert_one({"_id": 1})
    before = list(db.list_collections(filter={"name": "theirs"}))[0].get("options", {})
    with pytest.raises(ForeignCollectionError, match="theirs"):
        ad.apply_validator(db, collection="theirs")
    assert list(db.list_collections(filter={"name": "theirs"}))[0].get("options", {}) == before
    db.drop_collection("theirs")
