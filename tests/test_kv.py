"""Notebook 07's workloads: equal answers in MongoDB and Redis, and their deterministic costs."""
from __future__ import annotations

import datetime as _dt
import json
import math

import pytest

import helpers
from helpers import kv
from helpers.kv.redis_backend import count_commands

SCALE = 20  # aircraft: small enough for every backend pair, big enough for each workload


@pytest.fixture(scope="module")
def reports():
    return kv.feed(scale=SCALE)


@pytest.fixture
def both(db, redis_keys, reports):
    """A database and a Redis key space holding the replay, every structure written."""
    kv.mongo_setup(db)
    kv.mongo_store_reports(db, reports)
    kv.mongo_store_latest(db, reports)
    for store in (kv.redis_store_latest, kv.redis_store_last_n, kv.redis_store_busy, kv.redis_store_geo,
                  kv.redis_store_records):
        store(redis_keys, reports)
    kv.redis_evict_stale(redis_keys)
    return db, redis_keys


def test_the_feed_picks_the_aircraft_load_dataset_picks():
    from helpers import datasets

    assert kv.SAMPLE_AIRCRAFT == datasets.spec("adsb_reports").small
    every = {r["icao24"] for r in kv.feed(scale="full", until=2**40)}
    for n in (7, kv.SAMPLE_AIRCRAFT):
        assert {r["icao24"] for r in kv.feed(scale=n, until=2**40)} == datasets.evenly_spaced(every, n)
    assert {r["icao24"] for r in kv.feed(until=2**40)} == datasets.evenly_spaced(every, kv.SAMPLE_AIRCRAFT)


def test_the_feed_is_the_real_sample_in_arrival_order():
    reports = kv.feed()
    assert (len(reports), len({r["icao24"] for r in reports})) == (7259, 53)
    assert [(r["ts"], r["icao24"]) for r in reports] == sorted((r["ts"], r["icao24"]) for r in reports)
    assert len({r["id"] for r in reports}) == len(reports)
    assert all(r["ts"] < kv.NOW and r["id"] == kv.report_id(r["icao24"], r["ts"]) for r in reports)
    later = kv.feed(start=kv.NOW, until=kv.NOW + 600)
    assert later and all(kv.NOW <= r["ts"] < kv.NOW + 600 for r in later)
    assert kv.airport("LSZH")["name"] == "Zurich Airport"
    with pytest.raises(ValueError, match="LSZH"):
        kv.airport("XXXX")


def test_every_workload_gives_the_same_answer_in_both_stores(both, reports):
    db, keys = both
    some = sorted({r["icao24"] for r in reports})[::4]
    for a in some:
        assert kv.run_both("W1", lambda a=a: kv.mongo_latest(db, a), lambda a=a: kv.redis_latest(keys, a)).redis_answer
        kv.run_both("W1 sorted", lambda a=a: kv.mongo_latest_sorted(db, a), lambda a=a: kv.redis_latest(keys, a))
        w2 = kv.run_both("W2", lambda a=a: kv.mongo_last_n(db, a), lambda a=a: kv.redis_last_n(keys, a))
        assert len(w2.redis_answer) == min(kv.LAST_N, sum(r["icao24"] == a for r in reports))
    for now in (kv.NOW, kv.NOW - 3600, kv.NOW - 5 * 3600):
        w3 = kv.run_both("W3", lambda now=now: kv.mongo_busiest(db, now), lambda now=now: kv.redis_busiest(keys, now))
        counts = [n for _, n in w3.redis_answer]
        assert counts == sorted(counts, reverse=True)
    airlines = sorted({r["airline"] for r in reports})
    for airline in airlines:
        for altitude in (30_000, 36_000, 38_000):
            kv.run_both("W6", lambda a=airline, h=altitude: kv.mongo_above(db, a, h),
                        lambda a=airline, h=altitude: kv.redis_above(keys, a, h))


def test_near_an_airport_is_the_same_in_both_stores(db, redis_keys):
    reports = kv.feed()  # the lesson's sample: three aircraft within 50 km of Zurich at noon
    kv.mongo_setup(db)
    kv.mongo_store_latest(db, reports)
    kv.redis_store_geo(redis_keys, reports)
    silent = kv.redis_evict_stale(redis_keys)
    assert len(silent) == 47
    ap = kv.airport()
    w4 = kv.run_both("W4", lambda: kv.mongo_near(db, ap["lon"], ap["lat"]),
                     lambda: kv.redis_near(redis_keys, ap["lon"], ap["lat"]), equal=kv.same_near)
    assert [a for a, _ in w4.redis_answer] == ["3c0ca4", "344282", "3991ea"]
    for a, km in w4.redis_answer:
        r = next(r for r in reversed(reports) if r["icao24"] == a)
        # Redis's sphere has a radius of 6,372,797.560856 m; the workbook's one distance uses MongoDB's 6,378.1 km
        assert math.isclose(km * 6378.1 / 6372.797560856, kv.distance_km([ap["lon"], ap["lat"]], [r["lon"], r["lat"]]),
                            rel_tol=1e-4)
    assert (w4.mongo_cost.round_trips, w4.redis_cost.round_trips, w4.redis_cost.commands) == (1, 1, 1)


def test_the_costs_of_writing_and_reading(db, redis_keys, reports):
    n, batches = len(reports), math.ceil(len(reports) / kv.BATCH)
    chunks = [reports[i:i + kv.BATCH] for i in range(0, n, kv.BATCH)]
    aircraft = sum(len({r["icao24"] for r in c}) for c in chunks)  # (aircraft, batch) pairs
    airlines = sum(len({r["airline"] for r in c}) for c in chunks)
    # batched as MongoDB's writes: an LPUSH of several reports and an LTRIM per aircraft per batch;
    # a hash per report and a ZADD of several members per airline per batch
    for store, commands in ((kv.redis_store_last_n, 2 * aircraft), (kv.redis_store_records, n + airlines)):
        with count_commands() as cost:
            assert store(redis_keys, reports) == n
        assert (cost.round_trips, cost.commands) == (batches, commands)
    assert commands < 2 * n
    for a in sorted({r["icao24"] for r in reports}):  # the lists hold each aircraft's newest 10, newest first
        want = [r for r in reports if r["icao24"] == a][::-1][:kv.LAST_N]
        stored = redis_keys.client.lrange(redis_keys.key("last", a), 0, -1)
        assert [json.loads(x) for x in stored] == [json.loads(kv.workloads._json(r)) for r in want]
    for airline in sorted({r["airline"] for r in reports}):
        got = redis_keys.client.zrange(redis_keys.key("alt", airline), 0, -1, withscores=True)
        assert dict(got) == {r["id"]: r["altitude"] for r in reports if r["airline"] == airline}
    minutes = sum(len({r["ts"] // 60 for r in c}) for c in chunks)
    pairs = sum(len({(r["ts"] // 60, r["icao24"]) for r in c}) for c in chunks)
    with count_commands() as cost:  # a ZINCRBY per (minute, aircraft) per batch, an EXPIRE per minute per batch
        assert kv.redis_store_busy(redis_keys, reports) == n
    assert (cost.round_trips, cost.commands) == (batches, pairs + minutes)
    assert all(0 < redis_keys.client.ttl(k) <= 7200 for k in redis_keys.keys("busy:*"))
    newest = sum(len(kv.newest_per_aircraft(reports[i:i + kv.BATCH])) for i in range(0, n, kv.BATCH))
    with count_commands() as cost:
        assert kv.redis_store_latest(redis_keys, reports) == newest
    assert (cost.round_trips, cost.commands) == (batches, newest)
    kv.mongo_setup(db)
    with helpers.count_commands() as cost:
        kv.mongo_store_reports(db, reports)
        assert kv.mongo_store_latest(db, reports) == newest
    assert (cost.round_trips, cost.docs_written) == (2 * batches, n + newest)
    with helpers.count_commands() as cost:  # per batch one upsert per minute, with every aircraft's $inc
        assert kv.mongo_store_busy(db, reports) == minutes
    assert (cost.round_trips, cost.docs_written) == (batches, minutes)
    assert sum(sum(d["counts"].values()) for d in db[kv.MINUTES].find()) == n
    assert db[kv.MINUTES].count_documents({}) == len({r["ts"] // 60 for r in reports})
    a = reports[-1]["icao24"]
    w1 = kv.run_both("W1", lambda: kv.mongo_latest(db, a), lambda: kv.redis_latest(redis_keys, a))
    assert (w1.mongo_cost.round_trips, w1.redis_cost.round_trips, w1.redis_cost.commands) == (1, 1, 1)
    w3 = kv.run_both("W3", lambda: kv.mongo_busiest(db), lambda: kv.redis_busiest(redis_keys))
    assert (w3.mongo_cost.round_trips, w3.redis_cost.round_trips, w3.redis_cost.commands) == (1, 1, 3)
    for now in (kv.NOW, kv.NOW - 3600, kv.NOW - 5 * 3600):  # precomputed in both stores, the same answer
        kv.run_both("W3 precomputed", lambda now=now: kv.mongo_busiest_precomputed(db, now),
                    lambda now=now: kv.redis_busiest(redis_keys, now))
    # the computed pattern: kv_latest's counters give every aircraft's summary, as $group does
    for a in sorted({r["icao24"] for r in reports})[:10]:
        with helpers.count_commands() as computed:
            want = kv.summary(db, a)
        with helpers.count_commands() as precomputed:
            assert kv.summary_precomputed(db, a) == want
        assert (computed.round_trips, computed.docs_returned) == (1, 1)  # $group on the server: one document back
        assert (precomputed.round_trips, precomputed.docs_returned) == (1, 1)
        assert want["reports"] == sum(r["icao24"] == a for r in reports)


def test_newest_per_aircraft_keeps_the_latest_report_of_each():
    batch = [{"icao24": "b", "ts": 1}, {"icao24": "a", "ts": 2}, {"icao24": "b", "ts": 3}, {"icao24": "a", "ts": 1}]
    assert kv.newest_per_aircraft(batch) == [{"icao24": "a", "ts": 2}, {"icao24": "b", "ts": 3}]


def test_cache_aside_hits_never_reach_mongodb(db, redis_keys, reports):
    kv.mongo_setup(db)
    kv.mongo_store_reports(db, reports)
    a = reports[0]["icao24"]
    want = kv.summary(db, a)
    assert want["reports"] == sum(r["icao24"] == a for r in reports)
    for cached in (lambda: kv.redis_cached_summary(redis_keys, db, a, 60),
                   lambda: kv.mongo_cached_summary(db, a, 60)):
        with helpers.count_commands() as miss_mongo, count_commands() as miss_redis:
            assert cached() == want
        with helpers.count_commands() as hit_mongo, count_commands() as hit_redis:
            assert cached() == want
        if miss_redis.commands:  # through Redis: GET + SET on a miss, GET alone on a hit
            assert (miss_mongo.round_trips, miss_redis.commands) == (1, 2)
            assert (hit_mongo.round_trips, hit_redis.commands) == (0, 1)
        else:  # through a MongoDB collection: a hit is still one round trip
            assert (miss_mongo.round_trips, hit_mongo.round_trips) == (3, 1)


def test_an_expired_cache_document_is_never_served(db, reports):
    kv.mongo_setup(db)
    kv.mongo_store_reports(db, reports)
    a = reports[0]["icao24"]
    past = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=5)
    db[kv.CACHE].replace_one({"_id": a}, {"value": {"stale": True}, "expireAt": past}, upsert=True)
    assert kv.mongo_cached_summary(db, a, 60) == kv.summary(db, a)  # not the expired value


@pytest.mark.parametrize("backend", ["embedded"], indirect=True)  # the expiry is Redis's: both engines, one MongoDB
def test_staleness_lasts_until_the_entry_expires(db, redis_keys, reports):
    kv.mongo_setup(db)
    kv.mongo_store_reports(db, reports)
    new = kv.feed(scale=SCALE, start=kv.NOW, until=kv.NOW + 3600)
    new_report = next(r for r in new if r["icao24"] in {x["icao24"] for x in reports})
    a = new_report["icao24"]
    before = kv.summary(db, a)["reports"]
    got = kv.staleness(lambda: kv.redis_cached_summary(redis_keys, db, a, 2),  # 2 s: a stalled CI still reads it stale
                       lambda: kv.mongo_store_reports(db, [new_report]),
                       lambda s: s["reports"] == before + 1, timeout_s=15)
    assert got["stale reads"] >= 1 and got["seconds stale"] is not None


def test_precomputed_counters_and_an_invalidated_cache_are_never_stale(db, redis_keys, reports):
    kv.mongo_setup(db)
    kv.mongo_store_reports(db, reports)
    kv.mongo_store_latest(db, reports)
    new = kv.feed(scale=SCALE, start=kv.NOW, until=kv.NOW + 3600)
    new_report = next(r for r in new if r["icao24"] in {x["icao24"] for x in reports})
    a = new_report["icao24"]
    before = kv.summary(db, a)["reports"]
    cache_key = redis_keys.key("cache", "summary", a)

    def write_and_invalidate():
        kv.mongo_store_reports(db, [new_report])
        kv.mongo_store_latest(db, [new_report])
        redis_keys.client.delete(cache_key)  # the writer drops the cached entry

    got = kv.staleness(lambda: kv.redis_cached_summary(redis_keys, db, a, 600), write_and_invalidate,
                       lambda s: s["reports"] == before + 1, timeout_s=5)
    assert got["stale reads"] == 0
    assert kv.summary_precomputed(db, a) == kv.summary(db, a) and kv.summary(db, a)["reports"] == before + 1


def test_the_geo_probe_says_what_the_engine_does(db, backend):
    got = kv.probe_geo(db)
    assert got["$geoNear nearest-first"]  # why the lesson uses $geoNear: right on every engine
    if backend.info.engine == "SecantusDB":
        assert not got["$near nearest-first"]
    if backend.info.name == "mock":
        assert not got["$centerSphere runs"]
    # $near order and $centerSphere are the declared capabilities: the same answer as the connect probe
    assert (got["$near nearest-first"], got["$centerSphere runs"]) == (backend.info.caps.near_sorted,
                                                                         backend.info.caps.geo_center_sphere)
    assert not [n for n in db.list_collection_names() if n.startswith(("kv_probe_geo", "workbook_probe_"))]


def test_same_says_where_the_answers_differ():
    with pytest.raises(AssertionError, match="item 1 differs"):
        kv.same([1, 2, 3], [1, 5, 3], "x")
    with pytest.raises(AssertionError, match="MongoDB gave 2 items, Redis 1"):
        kv.same([1, 2], [1], "x")
    with pytest.raises(AssertionError, match="km"):
        kv.same_near([("a", 10.0)], [("a", 11.0)], "x")
    assert kv.same_near([("a", 10.0)], [("a", 10.04)], "x")


def test_memory_reports_what_the_engine_shows(redis_conn, db, reports):
    from helpers.kv.redis_backend import KeySpace

    keys = KeySpace(redis_conn.client, "wbtest_memory:")
    try:
        kv.redis_store_records(keys, reports[:200])
        got = kv.redis_memory(keys, "rpt:*")
        assert got["keys"] == 200
        if redis_conn.info.caps.memory_usage:
            assert got["bytes"] > 200 * 100 and got["encoding"] in ("listpack", "ziplist")
        else:
            assert got["bytes"] is None
    finally:
        keys.drop()
    kv.mongo_setup(db)
    kv.mongo_store_reports(db, reports[:200])
    m = kv.mongo_memory(db, kv.REPORTS)
    assert m["docs"] == 200 and 150 * 200 < m["bson bytes"] < 300 * 200


def test_the_exercise_checks_accept_right_answers_and_explain_wrong_ones(both, reports):
    from helpers.exercises import evaluate

    db, keys = both
    r = keys.client
    # 7.1: the 5 busiest of 10:00-11:00 from Redis's minutes
    scratch = keys.key("t", "10-11")
    r.zunionstore(scratch, kv.minute_keys(keys, kv.NOW - 3600, 3600))
    top = [(a, int(n)) for a, n in r.zrevrange(scratch, 0, 4, withscores=True)]
    assert evaluate("7.1", top, db=db)[0] == "correct"
    assert evaluate("7.1", top[::-1], db=db)[0] == "not right yet"
    assert evaluate("7.1", [(a, n + 1) for a, n in top], db=db)[0] == "not right yet"
    assert "aircraft, got 1" in evaluate("7.1", top[:1], db=db)[1]
    assert evaluate("7.1", None, db=db)[0] == "not done yet"
    # 7.2: a groundspeed index for one airline
    airline = reports[0]["airline"]
    key = keys.key("speed", airline)
    with count_commands() as cost:
        pipe = r.pipeline(transaction=False)
        for x in reports:
            if x["airline"] == airline:
                pipe.zadd(key, {x["id"]: x["groundspeed"]})
        pipe.execute()
    assert evaluate("7.2", (key, cost.commands), db=db, redis=r, airline=airline)[0] == "correct"
    assert "number of commands" in evaluate("7.2", (key, 1), db=db, redis=r, airline=airline)[1]
    assert "number of commands" in evaluate("7.2", (key, cost.commands + 1), db=db, redis=r, airline=airline)[1]
    assert "(key, commands)" in evaluate("7.2", key, db=db, redis=r, airline=airline)[1]
    r.zadd(key, {"nope:1": 1})
    assert "not reports of" in evaluate("7.2", (key, cost.commands), db=db, redis=r, airline=airline)[1]
    assert "not a sorted set" in evaluate("7.2", (keys.key("missing"), 3), db=db, redis=r, airline=airline)[1]
    # 7.3: the same hour in MongoDB
    pipeline = [{"$match": {"ts": {"$gte": kv.NOW - 7200, "$lt": kv.NOW - 3600}}},
                {"$group": {"_id": "$icao24", "reports": {"$sum": 1}}}, {"$sort": {"reports": -1}}, {"$limit": 5}]
    assert evaluate("7.3", pipeline, db=db, keys=keys)[0] == "correct"
    whole = [s for s in pipeline if "$match" not in s]
    assert evaluate("7.3", whole, db=db, keys=keys)[0] == "not right yet"
    assert "exactly the fields" in evaluate("7.3", pipeline[:1], db=db, keys=keys)[1]


@pytest.mark.parametrize("name", [kv.REPORTS, kv.LATEST, kv.CACHE, kv.MINUTES])
def test_the_mongodb_side_never_drops_a_collection_the_workbook_did_not_create(db, name):
    """A collection of somebody else's under one of notebook 07's names is refused, never emptied."""
    from helpers.safety import ForeignCollectionError

    db[name].insert_one({"_id": "theirs"})
    with pytest.raises(ForeignCollectionError, match=name):
        kv.mongo_setup(db)
    assert db[name].find_one({"_id": "theirs"}) is not None
    db.drop_collection(name)


def test_the_geo_probe_works_on_a_copy_of_its_own_and_leaves_a_collection_under_its_name_alone(db):
    """The probe's scratch collection has a random name per call: somebody's ``kv_probe_geo`` is never
    written or dropped, and two kernels probing at once never share (or drop) one copy."""
    db["kv_probe_geo"].insert_one({"_id": "theirs"})
    try:
        got = kv.probe_geo(db)
        assert set(got) >= {"$near nearest-first", "$geoNear nearest-first", "$centerSphere runs"}
        assert list(db["kv_probe_geo"].find()) == [{"_id": "theirs"}]
        assert [n for n in db.list_collection_names() if n.startswith("kv_probe_geo")] == ["kv_probe_geo"]
    finally:
        db.drop_collection("kv_probe_geo")
