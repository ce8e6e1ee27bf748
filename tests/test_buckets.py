"""helpers.buckets: reports in capped buckets, checked against plain Python on every backend."""
from __future__ import annotations

import datetime as dt
import random
import threading

import pytest

from helpers.buckets import SPAN, bucket_reports, track, window_start

T0 = dt.datetime(2018, 8, 1, 5, 0)


def _stream(seed: int, aircraft: int = 3, per_aircraft: int = 120, step_s: int = 10) -> list[dict]:
    """Reports of a few aircraft over about 2 hours, with some altitudes missing."""
    rng = random.Random(seed)  # same stream for one seed
    out = []
    for a in range(aircraft):
        icao = f"{0x3c0000 + a:06x}"
        for i in range(per_aircraft):
            r = {"icao24": icao, "time": T0 + dt.timedelta(seconds=step_s * i * (a + 1) + a, milliseconds=250 * (i % 4)),
                 "lat": 47 + i / 1000, "lon": 8.0, "callsign": f"SWR{a}"}
            if rng.random() > 0.1:
                r["altitude"] = float(rng.randrange(1000, 38000, 100))
            out.append(r)
    return out


def _point(report: dict) -> dict:
    """A report as a track returns it: without the ``icao24`` the caller named."""
    return {k: v for k, v in report.items() if k != "icao24"}


def _buckets(coll) -> list[dict]:
    return list(coll.find({}, sort=[("icao24", 1), ("start", 1), ("n", 1)]))


def _check_invariants(coll, want: dict[tuple[str, dt.datetime], dict], max_reports: int) -> None:
    """Every report stored once, in the bucket of its hour, buckets capped, summaries agreeing."""
    seen: dict[tuple[str, dt.datetime], dict] = {}
    for b in _buckets(coll):
        reports = b["reports"]
        assert 1 <= len(reports) <= max_reports
        assert b["count"] == len(reports)
        times = [r["time"] for r in reports]
        assert b["first"] == min(times) and b["last"] == max(times)
        assert all(window_start(t) == b["start"] for t in times), "a report outside its bucket's hour"
        alts = [r["altitude"] for r in reports if "altitude" in r]
        assert b.get("minAltitude") == (min(alts) if alts else None)
        assert b.get("maxAltitude") == (max(alts) if alts else None)
        for r in reports:
            key = (b["icao24"], r["time"])
            assert key not in seen, f"stored twice: {key}"
            seen[key] = {"icao24": b["icao24"], **r}
    assert seen == want


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_streams_with_resends_and_shuffles_match_plain_python(db, seed):
    rng = random.Random(seed)
    reports = _stream(seed)
    stream = reports + rng.sample(reports, 80)  # re-sends
    rng.shuffle(stream)  # late reports: any order
    want: dict = {}
    coll = db["buckets"]
    stored = 0
    i = 0
    while i < len(stream):  # calls of random sizes, as a feed delivers them
        k = rng.randint(1, 90)
        batch = stream[i:i + k]
        stored += bucket_reports(coll, batch, max_reports=50)
        for r in batch:
            want.setdefault((r["icao24"], r["time"]), dict(r))
        i += k
    assert stored == len(want) == len(reports)
    _check_invariants(coll, want, 50)
    assert bucket_reports(coll, stream, max_reports=50) == 0  # everything again: nothing new
    _check_invariants(coll, want, 50)
    # track against plain Python, on ranges that cut buckets and hours
    for icao in sorted({r["icao24"] for r in reports}):
        for _ in range(5):
            a = T0 + dt.timedelta(seconds=rng.randint(-600, 7000))
            b = a + dt.timedelta(seconds=rng.randint(0, 5000))
            expected = sorted((r for (ic, t), r in want.items() if ic == icao and a <= t < b), key=lambda r: r["time"])
            assert track(coll, icao, a, b) == [_point(r) for r in expected]


def test_a_resend_is_stored_once_and_a_late_report_goes_to_its_hour(db):
    coll = db["buckets"]
    first = {"icao24": "4ca1b2", "time": T0 + dt.timedelta(minutes=70), "altitude": 9000.0}
    assert bucket_reports(coll, [first]) == 1
    assert bucket_reports(coll, [dict(first, altitude=1.0)]) == 0  # a re-send: the first copy stays
    late = {"icao24": "4ca1b2", "time": T0 + dt.timedelta(minutes=5), "altitude": 100.0}
    assert bucket_reports(coll, [late, late]) == 1
    starts = sorted(b["start"] for b in _buckets(coll))
    assert starts == [T0, T0 + SPAN]
    assert track(coll, "4ca1b2", T0, T0 + 2 * SPAN) == [_point(late), _point(first)]
    assert track(coll, "4ca1b2", T0, T0 + dt.timedelta(minutes=5)) == []


def test_the_window_read_returns_each_hours_own_range_and_a_late_report_widens_only_its_hour(db):
    """``held``: the stored times between the earliest and latest given time of the bucket's own hour."""
    coll = db["buckets"]
    a, b = "4ca1b2", "3c56ed"
    stored = [{"icao24": x, "time": T0 + dt.timedelta(seconds=s)} for x in (a, b) for s in range(0, 7200, 60)]
    assert bucket_reports(coll, stored) == len(stored)
    hour2 = T0 + SPAN
    times = {(a, hour2): [hour2 + dt.timedelta(minutes=10), hour2 + dt.timedelta(minutes=12)],
             (b, hour2): [hour2 + dt.timedelta(minutes=11)],
             (a, T0): [T0 + dt.timedelta(minutes=30)]}  # a late report, an hour before the rest
    got = bk.window_state(coll, sorted(times), times)
    minutes = {k: sorted(int((t - k[1]).total_seconds() // 60) for b_ in v for t in b_["held"]) for k, v in got.items()}
    assert minutes == {(a, hour2): [10, 11, 12], (b, hour2): [10, 11, 12], (a, T0): [30]}
    assert bk.window_state(coll, [(a, T0)], {})[(a, T0)][0]["held"] == []  # no times given: none held
    assert bk.window_state(coll, [], {}) == {}


def test_a_full_bucket_opens_the_next_and_never_takes_more(db):
    coll = db["buckets"]
    reports = [{"icao24": "abc123", "time": T0 + dt.timedelta(seconds=i)} for i in range(25)]
    assert bucket_reports(coll, reports[:7], max_reports=10) == 7
    assert bucket_reports(coll, reports, max_reports=10) == 18
    assert [(b["n"], b["count"]) for b in _buckets(coll)] == [(0, 10), (1, 10), (2, 5)]
    assert bucket_reports(coll, reports[3:4], max_reports=10) == 0  # held by the full bucket 0
    assert coll.count_documents({}) == 3
    with pytest.raises(ValueError, match="max_reports=10"):
        bucket_reports(coll, [{"icao24": "abc123", "time": T0 + dt.timedelta(seconds=99)}], max_reports=20)


@pytest.mark.parametrize("bad, match", [
    ({"icao24": "abc123"}, "no time"),
    ({"icao24": "abc123", "time": 1533100200}, "time must be a datetime"),
    ({"icao24": "abc123", "time": "2018-08-01T05:00:00Z"}, "time must be a datetime"),
    ({"icao24": "abc123", "time": dt.datetime(2018, 8, 1, tzinfo=dt.timezone.utc)}, "time zone"),
    ({"icao24": "abc123", "time": dt.datetime(2018, 8, 1, 0, 0, 0, 1)}, "milliseconds"),
    ({"icao24": None, "time": T0}, "icao24"),
    ({"icao24": "abc123", "time": T0, "x": object()}, "BSON"),
])
def test_bad_input_raises_and_writes_nothing_of_the_call(db, bad, match):
    coll = db["buckets"]
    good = [{"icao24": "abc123", "time": T0 + dt.timedelta(seconds=i)} for i in range(3)]
    with pytest.raises((ValueError, TypeError), match=match):
        bucket_reports(coll, good + [bad])
    assert coll.count_documents({}) == 0


@pytest.mark.parametrize("max_reports", [0, -1, 1.5, True, "200"])
def test_max_reports_below_one_is_refused(db, max_reports):
    with pytest.raises(ValueError, match="max_reports"):
        bucket_reports(db["buckets"], [{"icao24": "abc123", "time": T0}], max_reports=max_reports)
    assert db["buckets"].count_documents({}) == 0


def _writers(coll_for, streams: list[list[dict]], max_reports: int) -> list[int]:
    results = [0] * len(streams)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            coll = coll_for()
            for i in range(0, len(streams[k]), 7):
                results[k] += bucket_reports(coll, streams[k][i:i + 7], max_reports=max_reports)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(streams))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _overlapping_streams(seed: int) -> tuple[list[dict], list[list[dict]]]:
    rng = random.Random(seed)
    reports = _stream(seed, aircraft=2, per_aircraft=150, step_s=5)
    a = reports[:220] + rng.sample(reports, 60)
    b = reports[80:] + rng.sample(reports, 60)  # the two feeds overlap on 140 reports, plus re-sends
    rng.shuffle(a)
    rng.shuffle(b)
    return reports, [a, b]


def test_two_threads_lose_and_duplicate_nothing(backend, db):
    if not backend.info.caps.concurrent_clients:
        pytest.skip(f"{backend.info.engine} is not thread-safe (probed: concurrent_clients)")
    reports, streams = _overlapping_streams(5)
    coll = db["buckets"]
    stored = _writers(lambda: coll, streams, max_reports=20)
    want = {(r["icao24"], r["time"]): r for r in reports}
    assert sum(stored) == len(want)
    _check_invariants(coll, want, 20)


def _process_writer(uri: str, db_name: str, stream: list[dict], max_reports: int, out) -> None:
    from pymongo import MongoClient

    client = MongoClient(uri)
    try:
        coll = client[db_name]["buckets"]
        out.put(sum(bucket_reports(coll, stream[i:i + 7], max_reports=max_reports) for i in range(0, len(stream), 7)))
    finally:
        client.close()


def test_two_processes_lose_and_duplicate_nothing(server_backend, server_db, request):
    import multiprocessing

    uri = request.getfixturevalue("test_uri") if server_backend.info.name == "mongodb" else server_backend.server.uri
    reports, streams = _overlapping_streams(6)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_process_writer, args=(uri, server_db.name, s, 20, out)) for s in streams]
    for p in procs:
        p.start()
    stored = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    want = {(r["icao24"], r["time"]): r for r in reports}
    assert sum(stored) == len(want)
    _check_invariants(server_db["buckets"], want, 20)


def test_track_checks_its_arguments(db):
    with pytest.raises(ValueError, match="icao24"):
        track(db["buckets"], "", T0, T0)
    with pytest.raises(TypeError, match="naive UTC"):
        track(db["buckets"], "abc123", 0, T0)
    assert track(db["buckets"], "abc123", T0, T0 - SPAN) == []


# ---------------------------------------------------------------------------------------------
# the lesson's three designs: the same answers from each

from helpers import buckets as bk  # noqa: E402


def _three_designs(db, backend, reports):
    docs = db["docs"]
    docs.create_index(bk.REPORT_KEY)
    assert bk.insert_reports(docs, reports) == len(reports)
    buckets = db["buckets"]
    assert bk.bucket_reports(buckets, reports, max_reports=40) == len(reports)
    ts, note = bk.timeseries_collection(db, "ts", caps=backend.info.caps, oldest=min(r["time"] for r in reports))
    assert bk.insert_reports(ts, reports, keyed=False) == len(reports)
    return {bk.DOCUMENTS: docs, bk.BUCKETS: buckets, bk.TIMESERIES: ts}, note


def test_a_drop_scans_every_document_until_an_index_leads_with_the_time(backend, db, monkeypatch):
    """Notebook 08, 8.7: no index of the two designs without a TTL leads with the time, so a drop
    examines every document kept; an index on ``time`` (``start``) makes it a range scan that examines
    only what it deletes. drop_plan deletes nothing, and refuses an engine whose explain is not faithful."""
    reports = _stream(12, step_s=60)   # reports over several hours
    colls, _ = _three_designs(db, backend, reports)
    if not backend.info.caps.explain:
        with pytest.raises(ValueError, match="cannot explain faithfully"):  # never a plan the engine did not run
            bk.drop_plan(colls[bk.DOCUMENTS], T0, T0 + bk.SPAN, design=bk.DOCUMENTS)
        pytest.skip(f"{backend.info.engine} cannot explain faithfully (docs/ENGINES.md)")
    for design, field in ((bk.DOCUMENTS, "time"), (bk.BUCKETS, "start")):
        coll = colls[design]
        kept = coll.count_documents({})
        dropped = coll.count_documents(bk.drop_filter(T0, T0 + bk.SPAN, design=design))
        assert 0 < dropped < kept
        scan = bk.drop_plan(coll, T0, T0 + bk.SPAN, design=design)
        assert "COLLSCAN" in scan["plan"] and scan["docs examined"] == kept
        assert scan["would delete"] == dropped and scan["documents held"] == kept == coll.count_documents({})
        coll.create_index(field)
        seek = bk.drop_plan(coll, T0, T0 + bk.SPAN, design=design)
        assert "IXSCAN" in seek["plan"] and seek["docs examined"] == dropped == seek["keys examined"]
        assert seek["would delete"] == dropped and coll.count_documents({}) == kept
    assert bk.drop_filter(T0, T0 + bk.SPAN, design=bk.TIMESERIES) == {"time": {"$gte": T0, "$lt": T0 + bk.SPAN}}
    with pytest.raises(ValueError, match="internal buckets"):  # its plan's unit is not a report
        bk.drop_plan(colls[bk.TIMESERIES], T0, T0 + bk.SPAN, design=bk.TIMESERIES)
    if backend.info.caps.timeseries_option:  # named as another design, a time series collection is refused too
        with pytest.raises(ValueError, match="internal buckets"):
            bk.drop_plan(colls[bk.TIMESERIES], T0, T0 + bk.SPAN, design=bk.DOCUMENTS)
    monkeypatch.setattr(bk.pattern, "info_of", lambda obj: None)   # a client the workbook did not open
    with pytest.raises(ValueError, match="not opened by helpers.backends.connect"):
        bk.drop_plan(colls[bk.DOCUMENTS], T0, T0 + bk.SPAN, design=bk.DOCUMENTS)


def test_a_time_series_retention_keeps_replayed_old_reports(backend, db):
    """expireAfterSeconds counts from each report's time: data older than the retention (the 2018
    sample) would be removed by a real MongoDB's TTL task within a minute unless the retention is
    lengthened by the data's age; without ``oldest`` it is exactly the retention."""
    if not backend.info.caps.timeseries_option:
        pytest.skip(f"{backend.info.engine} refuses the timeseries option (probed)")
    bk.timeseries_collection(db, "ts_live", caps=backend.info.caps, retention_days=30)
    bk.timeseries_collection(db, "ts_replay", caps=backend.info.caps, retention_days=30, oldest=T0)
    options = {c["name"]: c.get("options", {}) for c in db.list_collections()}
    assert options["ts_live"]["expireAfterSeconds"] == 30 * 86_400
    age = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - T0
    assert options["ts_replay"]["expireAfterSeconds"] > (age + dt.timedelta(days=30)).total_seconds()


def test_the_three_designs_answer_the_workload_alike(backend, db):
    reports = _stream(11)
    colls, note = _three_designs(db, backend, reports)
    caps = backend.info.caps
    if caps.timeseries_storage:
        assert note.startswith("a time series collection")
    else:  # never presented as time series storage
        assert "ordinary collection" in note and "probed" in note
    icao = reports[0]["icao24"]
    a, b = T0 + dt.timedelta(minutes=20), T0 + dt.timedelta(minutes=80)
    mine = sorted((r for r in reports if r["icao24"] == icao), key=lambda r: r["time"])
    want_track = [_point(r) for r in mine if a <= r["time"] < b]
    assert bk.track(colls[bk.BUCKETS], icao, a, b) == want_track
    for design in (bk.DOCUMENTS, bk.TIMESERIES):
        assert bk.track_documents(colls[design], icao, a, b) == want_track
    for design, coll in colls.items():
        assert bk.latest(coll, icao, design=design) == mine[-1]
    want_hourly = {}
    for r in mine:
        h = want_hourly.setdefault(bk.window_start(r["time"]), [0, []])
        h[0] += 1
        if "altitude" in r:
            h[1].append(r["altitude"])
    want_rows = [{"hour": hr, "reports": n, "minAltitude": min(al) if al else None,
                  "maxAltitude": max(al) if al else None} for hr, (n, al) in sorted(want_hourly.items())]
    for design, coll in colls.items():
        assert bk.hourly_summary(coll, icao, T0, T0 + 3 * bk.SPAN, design=design) == want_rows
    in_first_hour = sum(1 for r in reports if bk.window_start(r["time"]) == T0)
    assert bk.drop_range(colls[bk.DOCUMENTS], T0, T0 + bk.SPAN, design=bk.DOCUMENTS) == in_first_hour
    assert bk.drop_range(colls[bk.TIMESERIES], T0, T0 + bk.SPAN, design=bk.TIMESERIES) == in_first_hour
    first_hour_buckets = colls[bk.BUCKETS].count_documents({"start": T0})
    assert bk.drop_range(colls[bk.BUCKETS], T0, T0 + bk.SPAN, design=bk.BUCKETS) == first_hour_buckets
    assert bk.track(colls[bk.BUCKETS], icao, T0, T0 + bk.SPAN) == []
    with pytest.raises(ValueError, match="whole hours"):
        bk.drop_range(colls[bk.BUCKETS], T0 + dt.timedelta(minutes=1), T0 + bk.SPAN, design=bk.BUCKETS)
    with pytest.raises(ValueError, match="design must be one of"):
        bk.latest(colls[bk.DOCUMENTS], icao, design="tables")


def test_the_latest_report_is_the_newest_hours_highest_last_not_its_highest_n(backend, db):
    """bk.latest walks the unique index backwards to the newest hour, then takes that hour's bucket with
    the highest ``last``: a late report opens bucket 1 after a full bucket 0 that ends later, so the
    newest bucket (the highest ``n``) does not hold the latest report. No ``(icao24, last)`` index."""
    coll = db["buckets"]
    icao = "3c0000"
    on_time = [{"icao24": icao, "time": T0 + dt.timedelta(minutes=m), "altitude": float(m)} for m in (0, 10, 20, 30)]
    assert bk.bucket_reports(coll, on_time, max_reports=4) == 4   # bucket 0 full, last 10:30
    late = {"icao24": icao, "time": T0 + dt.timedelta(minutes=5), "altitude": 5.0}
    earlier_hour = {"icao24": icao, "time": T0 - dt.timedelta(minutes=5), "altitude": 1.0}
    assert bk.bucket_reports(coll, [late], max_reports=4) == 1 == bk.bucket_reports(coll, [earlier_hour], max_reports=4)
    newest = coll.find_one({"icao24": icao}, sort=[("start", -1), ("n", -1)])
    assert newest["n"] == 1 and newest["last"] == late["time"]   # the catch: the newest bucket is not the answer
    with count_commands() as cost:
        assert bk.latest(coll, icao, design=bk.BUCKETS) == on_time[-1]
    assert cost.round_trips == 1 and cost.docs_returned == 1
    assert bk.latest(coll, "3c0001", design=bk.BUCKETS) is None


def test_a_keyed_document_refuses_a_resend_and_a_time_series_keeps_it(backend, db):
    reports = _stream(12, aircraft=1, per_aircraft=30)
    colls, _ = _three_designs(db, backend, reports)
    assert bk.insert_reports(colls[bk.DOCUMENTS], reports[:10]) == 0
    assert bk.bucket_reports(colls[bk.BUCKETS], reports[:10], max_reports=40) == 0
    assert bk.insert_reports(colls[bk.TIMESERIES], reports[:10], keyed=False) == 10  # a measurement each time
    assert colls[bk.DOCUMENTS].count_documents({}) == 30 and colls[bk.TIMESERIES].count_documents({}) == 40
    assert bk.report_id("3c0000", T0) == "3c0000:1533099600000"


def test_storage_counts_documents_bytes_and_keys(db):
    reports = _stream(13, aircraft=2, per_aircraft=50)
    coll = db["buckets"]
    bk.bucket_reports(coll, reports, max_reports=40)
    got = bk.storage(coll)
    docs = list(coll.find({}))
    assert got["documents"] == len(docs) and got["indexes"] == 2 and got["index keys"] == 2 * len(docs)
    import bson
    assert got["BSON bytes"] == sum(len(bson.encode(d)) for d in docs)


# ---------------------------------------------------------------------------------------------
# the bill's server work (helpers/buckets/costs.py): index keys written, keys and documents examined

from helpers.counting import count_commands  # noqa: E402


def test_a_batch_filter_counts_the_index_keys_a_whole_collection_snapshot_counts(backend, db):
    """bk.batch_filter is narrow, yet holds every document a store of the batch touches: the index keys
    counted through it equal those counted over the whole collection, batch by batch, for both designs."""
    reports = sorted(_stream(14, step_s=20), key=lambda r: (r["time"], r["icao24"]))
    colls = {bk.DOCUMENTS: db["docs"], bk.BUCKETS: db["buckets"]}
    colls[bk.DOCUMENTS].create_index(bk.REPORT_KEY)
    bk.ensure_bucket_index(colls[bk.BUCKETS])  # before the measured blocks: an index created in one is refused
    stores = {bk.DOCUMENTS: bk.insert_reports, bk.BUCKETS: lambda c, b: bucket_reports(c, b, max_reports=30)}
    for design, coll in colls.items():
        narrow = whole = 0
        for i in range(0, len(reports), 50):
            batch = reports[i:i + 50]
            target = bk.index_keys_of(coll, bk.batch_filter(batch, design=design))
            assert target == {coll: bk.batch_filter(batch, design=design)}  # an ordinary collection: counted
            with count_commands(index_keys=target) as one, count_commands(index_keys=coll) as every:
                stores[design](coll, batch)
            narrow, whole = narrow + one.index_keys_written, whole + every.index_keys_written
        assert narrow == whole > 0
    assert narrow < 3 * len(reports)  # buckets: a few keys per bucket write, not per report
    with pytest.raises(ValueError, match="design must be one of"):
        bk.batch_filter(reports, design="tables")
    with pytest.raises(ValueError, match="at least one"):
        bk.batch_filter([], design=bk.BUCKETS)


def test_every_read_sets_its_batch_size_and_the_default_pays_a_getmore(backend, db):
    reports = _stream(15, aircraft=1, per_aircraft=240, step_s=10)   # 240 reports in 40 minutes: one track
    colls, _ = _three_designs(db, backend, reports)
    icao, end = reports[0]["icao24"], T0 + 3 * SPAN
    for read in (lambda: bk.track_documents(colls[bk.DOCUMENTS], icao, T0, end),
                 lambda: bk.track(colls[bk.BUCKETS], icao, T0, end),
                 lambda: bk.latest(colls[bk.BUCKETS], icao, design=bk.BUCKETS),
                 lambda: bk.latest(colls[bk.DOCUMENTS], icao, design=bk.DOCUMENTS),
                 lambda: bk.hourly_summary(colls[bk.BUCKETS], icao, T0, end, design=bk.BUCKETS)):
        with count_commands() as cost:
            read()
        assert cost.round_trips == 1 and cost.default_batch_getmores == 0, cost.commands
    with count_commands() as cost:
        assert len(bk.track_documents(colls[bk.DOCUMENTS], icao, T0, end, batch_size=0)) == 240
    assert cost.round_trips == 2 and cost.default_batch_getmores == 1  # the counter-example of notebook 08


def test_a_measured_read_counts_the_servers_work_once_and_labels_an_in_memory_sort(backend, db):
    reports = _stream(16, aircraft=2, per_aircraft=60, step_s=30)
    colls, _ = _three_designs(db, backend, reports)
    icao = reports[0]["icao24"]
    mine = [r for r in reports if r["icao24"] == icao]
    track = bk.measured_read("track", lambda: bk.track(colls[bk.BUCKETS], icao, T0, T0 + SPAN), colls[bk.BUCKETS],
                             repeat=1)
    latest = bk.measured_read("latest", lambda: bk.latest(colls[bk.DOCUMENTS], icao, design=bk.DOCUMENTS),
                              colls[bk.DOCUMENTS], repeat=1)
    assert track.round_trips == latest.round_trips == 1 and latest.result == mine[-1]
    if not backend.info.caps.explain:
        assert track.keys_examined is None and "cannot explain faithfully" in track.plan_note
        return
    in_hour = colls[bk.BUCKETS].count_documents({"icao24": icao, "start": T0})
    assert track.docs_examined == track.keys_examined == in_hour  # an aggregate's work, counted once
    assert latest.docs_examined in (1, len(mine))  # a real MongoDB stops at the first; an in-memory sort reads all
    if latest.docs_examined > 1:  # sorted in memory what the (icao24, time) index holds in order: said so
        assert "SORT" in latest.stages and "icao24_1_time_1" in latest.plan_note and "stops after 1" in latest.plan_note
    else:
        assert latest.plan_note is None


def test_the_writer_and_the_upserts_store_a_batch_in_one_round_trip_and_the_writer_stays_right(backend, db):
    """BucketWriter: one command a batch, the same buckets as bucket_reports, nothing stored twice, also
    after a restart (a new writer) and when another writer wrote in between; the upsert form: one
    command too, and a re-send stored again."""
    rng = random.Random(21)
    reports = sorted(_stream(21), key=lambda r: r["time"])
    batches = [reports[i:i + 40] for i in range(0, len(reports), 40)]
    mine, theirs, ups = db["buckets_writer"], db["buckets_read_first"], db["buckets_upserted"]
    bk.ensure_bucket_index(mine)
    ups.create_index(bk.UPSERT_KEY)
    writer = bk.BucketWriter(mine, max_reports=50)
    for batch in batches:
        with count_commands() as cost:
            assert writer.write(batch) == len(batch)
        assert cost.round_trips == 1, cost.commands
        bucket_reports(theirs, batch, max_reports=50)
        with count_commands() as cost:
            assert bk.upsert_reports(ups, batch, max_reports=50) == len(batch)
        assert cost.round_trips == 1, cost.commands
    want = {(r["icao24"], r["time"]): dict(r) for r in reports}
    _check_invariants(mine, want, 50)
    strip = [(b["icao24"], b["start"], b["n"], b["count"]) for b in _buckets(mine)]
    assert strip == [(b["icao24"], b["start"], b["n"], b["count"]) for b in _buckets(theirs)]
    assert sum(b["count"] for b in ups.find({}, {"count": 1})) == len(reports)
    assert all(b["count"] <= 50 for b in ups.find({}, {"count": 1}))
    resent = rng.sample(reports, 30)
    assert writer.write(resent) == 0  # remembered times, or the read path: nothing twice
    assert bk.BucketWriter(mine, max_reports=50).write(resent + [dict(reports[-1], time=reports[-1]["time"]
                                                                      + dt.timedelta(seconds=1))]) == 1  # a restart
    late = dict(reports[0], time=reports[0]["time"] + dt.timedelta(milliseconds=1))
    bucket_reports(mine, [dict(reports[-1], time=reports[-1]["time"] + dt.timedelta(seconds=2))], max_reports=50)  # another writer
    assert writer.write([late, dict(reports[-1], time=reports[-1]["time"] + dt.timedelta(seconds=3))]) == 2
    want.update({(r["icao24"], r["time"]): dict(r) for r in [late] + [
        dict(reports[-1], time=reports[-1]["time"] + dt.timedelta(seconds=s)) for s in (1, 2, 3)]})
    _check_invariants(mine, want, 50)
    assert bk.upsert_reports(ups, resent, max_reports=50) == 30  # the upsert form stores a re-send again
    assert sum(b["count"] for b in ups.find({}, {"count": 1})) == len(reports) + 30


def test_read_then_bulk_stores_a_batch_in_two_round_trips_from_any_writer(backend, db):
    """read_then_bulk: a read and one bulk a batch, the same buckets as bucket_reports, a re-send not stored
    again, a late report stored, and after another writer wrote between (its read stale) nothing lost
    or stored twice."""
    import helpers.buckets.write as write

    reports = sorted(_stream(23), key=lambda r: r["time"])
    mine, theirs = db["buckets_read_then_bulk"], db["buckets_reference"]
    bk.ensure_bucket_index(mine)
    for batch in (reports[i:i + 40] for i in range(0, len(reports), 40)):
        with count_commands() as cost:
            assert bk.read_then_bulk(mine, batch, max_reports=50) == len(batch)
        assert cost.round_trips == 2, cost.commands
        bucket_reports(theirs, batch, max_reports=50)
    want = {(r["icao24"], r["time"]): dict(r) for r in reports}
    _check_invariants(mine, want, 50)
    assert [(b["icao24"], b["start"], b["n"], b["count"]) for b in _buckets(mine)] == \
        [(b["icao24"], b["start"], b["n"], b["count"]) for b in _buckets(theirs)]
    assert bk.read_then_bulk(mine, random.Random(23).sample(reports, 30), max_reports=50) == 0  # re-sends
    late = dict(reports[0], time=reports[0]["time"] + dt.timedelta(milliseconds=1))
    assert bk.read_then_bulk(mine, [late], max_reports=50) == 1
    want[(late["icao24"], late["time"])] = late
    newer = [dict(r, time=r["time"] + dt.timedelta(seconds=1, milliseconds=k)) for k, r in enumerate(reports[-5:])]

    def stale(coll, keys, times):  # another writer wrote after this read: the read is stale
        found = bk.window_state(coll, keys, times)
        bucket_reports(coll, newer[:2], max_reports=50)
        return found
    original = write.window_state
    write.window_state = stale
    try:
        with count_commands() as cost:
            assert bk.read_then_bulk(mine, newer, max_reports=50) == 3  # the other writer's 2 are not stored again
        assert "update" in cost.commands and cost.commands.count("aggregate") >= 3  # ours, the other writer's, the read path after the duplicate key
    finally:
        write.window_state = original
    want.update({(r["icao24"], r["time"]): r for r in newer})
    _check_invariants(mine, want, 50)


def test_the_map_is_one_aggregate_with_every_aircrafts_latest_report(backend, db):
    reports = _stream(22)
    colls, _ = _three_designs(db, backend, reports)
    latest = {}
    for r in reports:
        if r["icao24"] not in latest or r["time"] > latest[r["icao24"]]["time"]:
            latest[r["icao24"]] = r
    want = [latest[a] for a in sorted(latest)]
    for design, coll in colls.items():
        with count_commands() as cost:
            assert bk.latest_positions(coll, design=design) == want
        assert cost.round_trips == 1 and cost.docs_returned == len(want) and cost.default_batch_getmores == 0
    colls[bk.DOCUMENTS].create_index(bk.TIME_KEY)
    colls[bk.BUCKETS].create_index(bk.START_KEY)  # hinted by the map with since
    since = max(r["time"] for r in reports) - dt.timedelta(minutes=20)
    recent = [r for r in want if r["time"] >= since]
    assert 0 < len(recent) < len(want)
    for design, coll in colls.items():  # the map of the aircraft heard since: a $match on time first
        with count_commands() as cost:
            assert bk.latest_positions(coll, design=design, since=since) == recent
        assert cost.round_trips == 1 and cost.docs_returned == len(recent)
    with pytest.raises(ValueError, match="design must be one of"):
        bk.latest_positions(colls[bk.DOCUMENTS], design="tables")
    midnight = since + dt.timedelta(minutes=10)  # a collection per day: the map across midnight reads both
    for design in (bk.DOCUMENTS, bk.BUCKETS):
        days = [db[f"day{k}_{design.replace(' ', '_')}"] for k in (1, 2)]
        for day, part in zip(days, ([r for r in reports if r["time"] < midnight],
                                    [r for r in reports if r["time"] >= midnight])):
            if design == bk.BUCKETS:
                day.create_index(bk.START_KEY)
                bucket_reports(day, part)
            else:
                bk.insert_reports(day, part)
        assert bk.latest_positions(days[1], design=design, since=since) != recent  # the day after alone: not the map
        with count_commands() as cost:
            assert bk.latest_positions(days[1], design=design, since=since, previous=days[0]) == recent
        assert cost.round_trips == 1 and cost.docs_returned == len(recent)


def test_a_writes_work_is_its_filters_explained_and_an_insert_examines_nothing(backend, db):
    if not backend.info.caps.explain:
        pytest.skip("the engine cannot explain (caps.explain)")
    reports = sorted(_stream(23, aircraft=2, per_aircraft=30), key=lambda r: r["time"])
    coll = db["buckets_work"]
    bk.ensure_bucket_index(coll)
    writer = bk.BucketWriter(coll)
    with count_commands(keep_commands=True) as first:
        writer.write(reports[:30])
    with count_commands(keep_commands=True) as second:
        writer.write(reports[30:])
    opened = bk.write_work(coll, first.command_documents)
    updated = bk.write_work(coll, second.command_documents)
    assert opened["keys examined"] >= 0 and updated["docs examined"] >= 1  # each update finds its bucket
    docs = db["reports_work"]
    with count_commands(keep_commands=True) as inserted:
        bk.insert_reports(docs, reports)
    assert bk.write_work(docs, inserted.command_documents) == {"keys examined": 0, "docs examined": 0}


def test_placement_is_the_one_rule_of_both_writers():
    from helpers.buckets import placement

    docs = [{"time": dt.datetime(2018, 8, 1, 5, 0, k)} for k in range(5)]
    assert placement(None, docs, 2) == ([], [(0, docs[0:2]), (1, docs[2:4]), (2, docs[4:])])
    assert placement({"n": 3, "count": 1}, docs[:3], 2) == (docs[:1], [(4, docs[1:3])])
    assert placement({"n": 0, "count": 2}, docs[:1], 2) == ([], [(1, docs[:1])])  # a full tail never changes
    assert placement({"n": 0, "count": 0}, docs[:2], 2) == (docs[:2], [])


def _measured_bill_inputs():
    """What notebook 08 measured on the 20-aircraft sample (embedded, 13 batches of 289 reports), as the
    mappings its cells hand to ``daily_costs``: deterministic counts only (no keys or documents examined)."""
    from helpers.buckets import BUCKETS, DOCUMENTS

    def stored(rt, read_rt, docs, keys, returned=0, nbytes=0):
        return {"reports stored": 3535, "round trips": rt, "read round trips": read_rt, "docs written": docs,
                "index keys written": keys, "docs returned": returned, "bytes returned": nbytes,
                "keys examined": None, "docs examined": None}

    def read(rt, docs, nbytes):
        return {"round trips": rt, "docs returned": docs, "bytes returned": nbytes, "docs written": 0}

    live = {DOCUMENTS: read(1, 1, 162), BUCKETS: read(1, 1, 162)}
    return dict(
        writes={DOCUMENTS: stored(13, 0, 3535, 10605), BUCKETS: stored(13, 0, 56, 120)},
        bucket_forms={"read, then write": stored(26, 13, 56, 120, 16, 1548),
                      "bucket_reports": stored(69, 13, 56, 120, 16, 1548), "upserts": stored(13, 0, 56, 120)},
        clustered={DOCUMENTS: {"write": stored(13, 0, 3535, 7070), "plan": None,
                               "drop": {"round trips": 1, "docs deleted": 50, "index keys written": 100}},
                   BUCKETS: {"write": stored(13, 0, 56, 80), "plan": None,
                             "drop": {"round trips": 1, "docs deleted": 1, "index keys written": 2}}},
        reads={d: {"track for an hour": read(1, 122 if d == DOCUMENTS else 1, 17568 if d == DOCUMENTS else 18087),
                   "the live map": live[d], "hourly summary": read(1, 9, 657)} for d in (DOCUMENTS, BUCKETS)},
        default_batch={DOCUMENTS: read(2, 122, 17568)},
        map_loop={d: read(20, 20, 3249) for d in (DOCUMENTS, BUCKETS)},
        every_kept={d: read(1, 20, 3249) for d in (DOCUMENTS, BUCKETS)},
        docs_per_report={DOCUMENTS: 1.0, BUCKETS: 40 / 3535},
        drops={DOCUMENTS: {"round trips": 1, "docs deleted": 50, "index keys written": 150},
               BUCKETS: {"round trips": 1, "docs deleted": 1, "index keys written": 3}},
        drop_plans=None, by_day={d: {"round trips": 2, "docs written": 0} for d in (DOCUMENTS, BUCKETS)},
        across=live, across_a_day=6)


def _bill_workload():
    from helpers.workload import Operation, Workload
    return Workload("a receiver's position reports", (
        Operation("store a report", "write", 2_500_000, "keep up", "nothing", "aerodata article"),
        Operation("track for an hour", "read", 3_000, "< 100 ms", "a track", "assumption"),
        Operation("the live map", "read", 8_640, "< 500 ms", "the map", "assumption"),
        Operation("hourly summary", "read", 3_000, "< 200 ms", "a day by hour", "assumption"),
        Operation("drop a day", "write", 1, "background", "nothing", "assumption"),
    ), by=("round trips / day", "index keys written / day", "MB returned / day"))


def test_the_daily_bill_never_joins_a_clustered_store_to_a_collection_per_day_and_picks_buckets():
    """The bill of notebook 08 from its measured counts: the clustered collection's store (fewer index keys)
    and a collection per day (no key deleted) are measured on layouts that cannot stand together, so each
    design is billed at its plain store and a collection per day (its cheapest on one layout); the round
    trips tie and the index keys written pick the buckets."""
    from helpers.buckets import BUCKETS, CLUSTERED, DOCUMENTS, PER_DAY, Feed, daily_costs

    feed = Feed(batch=289, batches=13, windows=52, in_range=3_000 * 15 / 1440, reports_per_day=2_500_000,
                retention_days=30)
    costs = daily_costs((DOCUMENTS, BUCKETS), feed, **_measured_bill_inputs())
    workload = _bill_workload()
    billed = workload.billed(costs)
    for d in (DOCUMENTS, BUCKETS):
        store, drop = costs[d]["store a report"], costs[d]["drop a day"]
        assert CLUSTERED in store.layouts["clustered"] and PER_DAY not in store.layouts["clustered"]
        assert drop.layouts["a collection per day"] == {PER_DAY}
        assert not store.layouts["clustered"] & drop.layouts[billed[d]["drop a day"]] or \
            billed[d]["store a report"] != "clustered"
    assert billed[DOCUMENTS]["store a report"] == "insert_many a batch"
    assert billed[BUCKETS]["store a report"] == "the writer, no read"
    assert billed[DOCUMENTS]["drop a day"] == billed[BUCKETS]["drop a day"] == "a collection per day"
    daily = workload.weigh(costs)
    assert daily.loc[DOCUMENTS, "round trips / day"] == pytest.approx(13 / 13 / 289 * 2_500_000 + 3_000 + 8_640 + 3_000 + 2)
    assert daily.loc[DOCUMENTS, "index keys written / day"] == pytest.approx(3 * 2_500_000)
    assert daily.loc[BUCKETS, "index keys written / day"] == pytest.approx(120 / 3535 * 2_500_000)
    pick = workload.pick(costs)
    assert pick == BUCKETS and pick.decided_by == "index keys written / day"
    # a bucket form's documents written a batch are per aircraft-hour, at the workload's aircraft a batch
    store = costs[BUCKETS]["store a report"].forms["bucket_reports"]
    assert store["docs written"] == pytest.approx(56 / 52 * feed.in_range / 289)
    assert store["round trips"] == pytest.approx(13 / 13 / 289 + (69 - 13) / 52 * feed.in_range / 289)


def test_without_the_pair_index_the_per_report_design_keeps_its_layouts():
    from helpers.buckets import BUCKETS, DOCUMENTS, Feed, daily_costs, without_pair_index

    feed = Feed(batch=289, batches=13, windows=52, in_range=31.25, reports_per_day=2_500_000, retention_days=30)
    costs = daily_costs((DOCUMENTS, BUCKETS), feed, **_measured_bill_inputs())
    fewer = without_pair_index(costs, DOCUMENTS)
    assert fewer[DOCUMENTS]["store a report"].layouts == costs[DOCUMENTS]["store a report"].layouts
    daily = _bill_workload().weigh(fewer)
    assert daily.loc[DOCUMENTS, "index keys written / day"] == pytest.approx(2 * 2_500_000)
    assert fewer[BUCKETS] == costs[BUCKETS]


def test_a_ttl_collection_keeps_replayed_reports_and_indexes_as_the_plain_collection(backend, db):
    """Its time index is a TTL index whose retention is lengthened by the replayed data's age: the
    mock, which removes an expired document at the next read, keeps the 2018 reports too; the indexes
    are the plain collection's (an insert writes the same keys), and a bucket is kept an hour longer."""
    from helpers.buckets import BUCKETS, DOCUMENTS, bucket_reports, insert_reports, ttl_collection

    reports = _stream(5, aircraft=2, per_aircraft=30)
    docs, seconds = ttl_collection(db, "ttl_docs", design=DOCUMENTS, retention_days=30, oldest=T0)
    buckets, bucket_seconds = ttl_collection(db, "ttl_buckets", design=BUCKETS, retention_days=30, oldest=T0)
    assert bucket_seconds == seconds + 3600 and seconds > 30 * 86_400
    assert insert_reports(docs, reports) == len(reports) and bucket_reports(buckets, reports) == len(reports)
    assert docs.count_documents({}) == len(reports)
    assert sum(b["count"] for b in buckets.find({}, {"count": 1})) == len(reports)
    info = docs.index_information()
    assert info["time_1"]["expireAfterSeconds"] == seconds and "expireAfterSeconds" not in info["icao24_1_time_1"]
    assert buckets.index_information()["start_1"]["expireAfterSeconds"] == bucket_seconds
    assert buckets.index_information()["icao24_start_n"]["unique"]
    with pytest.raises(ValueError, match="time series"):
        ttl_collection(db, "ttl_ts", design="time series collection")


def test_the_ttl_form_is_the_measured_delete_without_its_round_trip_and_never_beats_a_collection_per_day():
    from helpers.buckets import BUCKETS, DOCUMENTS, TTL, Feed, daily_costs

    feed = Feed(batch=289, batches=13, windows=52, in_range=31.25, reports_per_day=2_500_000, retention_days=30)
    costs = daily_costs((DOCUMENTS, BUCKETS), feed, ttl=(DOCUMENTS, BUCKETS), **_measured_bill_inputs())
    for d, keys in ((DOCUMENTS, 3 * 2_500_000), (BUCKETS, 3 * 40 / 3535 * 2_500_000)):
        drop = costs[d]["drop a day"]
        form, delete = drop.forms["a TTL index"], drop.forms["delete_many by time"]
        assert drop.layouts["a TTL index"] == {TTL} and TTL in costs[d]["store a report"].layouts[
            "insert_many a batch" if d == DOCUMENTS else "the writer, no read"]
        assert form["round trips"] == 0 and delete["round trips"] == 1
        assert form["index keys written"] == delete["index keys written"] == pytest.approx(keys)
        assert form["docs written"] == delete["docs written"]
    workload = _bill_workload()
    billed = workload.billed(costs)
    assert billed[DOCUMENTS]["drop a day"] == billed[BUCKETS]["drop a day"] == "a collection per day"
    assert workload.pick(costs) == BUCKETS


def test_a_clustered_collection_per_day_drops_the_old_day_and_creates_the_next_clustered_and_indexed(backend, db):
    """The day of a clustered collection per day, measured: drop, create (clusteredIndex, no listCollections
    first), createIndexes: three round trips, no document written; the next day's collection is clustered,
    holds the design's indexes and is recorded as the workbook's; a collection the workbook did not create
    is never dropped."""
    from pymongo import IndexModel

    import helpers
    from helpers.buckets import CLUSTERED_INDEX, TIME_KEY, clustered_day
    from helpers.safety import ForeignCollectionError, is_workbook_collection

    if not backend.info.caps.clustered_collection:
        pytest.skip("the engine refuses clustered collections (caps.clustered_collection): not measured")
    old = helpers.fresh_collection(db, "days_1", clusteredIndex=CLUSTERED_INDEX)
    old.create_index(TIME_KEY)
    old.insert_one({"_id": "a", "time": T0})
    day = clustered_day(db, "days_1", "days_2", [IndexModel(TIME_KEY)])
    assert day["round trips"] == 3 and day["docs written"] == 0 and day["indexes dropped with it"] == 2
    assert day["commands"] == "drop + create + createIndexes"
    names = db.list_collection_names()
    assert "days_1" not in names and "days_2" in names
    options = db["days_2"].options()
    assert options["clusteredIndex"]["key"] == {"_id": 1}
    assert "time_1" in db["days_2"].index_information()
    assert is_workbook_collection(db, "days_2")
    assert clustered_day(db, "days_2", "days_2_again", [])["round trips"] == 2   # no index to create: one command less
    db.create_collection("somebody_elses")
    with pytest.raises(ForeignCollectionError):
        clustered_day(db, "somebody_elses", "days_3", [])
    assert "somebody_elses" in db.list_collection_names() and "days_3" not in db.list_collection_names()


def test_the_clustered_store_is_billed_with_a_clustered_collection_per_day():
    """Given a clustered collection per day (measured where the engine has clustered collections), the
    clustered store stands with it: each design is billed at the clustered store and that drop, the
    index keys a day fall by a key a document (7,500,000 to 5,000,000 here, 84,866 to 56,577), the round
    trips by none but the day's create; the pick stays buckets. Without it, the plain bill as before."""
    from helpers.buckets import BUCKETS, CLUSTERED, CLUSTERED_PER_DAY, DOCUMENTS, Feed, daily_costs

    feed = Feed(batch=289, batches=13, windows=52, in_range=3_000 * 15 / 1440, reports_per_day=2_500_000,
                retention_days=30)
    inputs = _measured_bill_inputs()
    days = {d: {"by day": {"round trips": 3, "docs written": 0}, "across": inputs["across"][d]}
            for d in (DOCUMENTS, BUCKETS)}
    costs = daily_costs((DOCUMENTS, BUCKETS), feed, clustered_days=days, **inputs)
    workload = _bill_workload()
    billed = workload.billed(costs)
    for d in (DOCUMENTS, BUCKETS):
        store, drop = costs[d]["store a report"], costs[d]["drop a day"]
        assert store.layouts["clustered"] == {CLUSTERED, CLUSTERED_PER_DAY}
        assert drop.layouts[CLUSTERED_PER_DAY] == {CLUSTERED_PER_DAY}
        assert drop.forms[CLUSTERED_PER_DAY]["round trips"] == 3
        assert drop.forms[CLUSTERED_PER_DAY]["index keys written"] == 0
        assert billed[d]["store a report"] == "clustered" and billed[d]["drop a day"] == CLUSTERED_PER_DAY
    daily = workload.weigh(costs)
    assert daily.loc[DOCUMENTS, "index keys written / day"] == pytest.approx(2 * 2_500_000)
    assert daily.loc[BUCKETS, "index keys written / day"] == pytest.approx(80 / 3535 * 2_500_000)
    assert daily.loc[DOCUMENTS, "round trips / day"] == pytest.approx(13 / 13 / 289 * 2_500_000 + 3_000 + 8_640
                                                                      + 3_000 + 3)
    assert workload.pick(costs) == BUCKETS
    plain = daily_costs((DOCUMENTS, BUCKETS), feed, **inputs)
    assert CLUSTERED_PER_DAY not in plain[DOCUMENTS]["drop a day"].forms
    assert workload.billed(plain)[DOCUMENTS]["drop a day"] == "a collection per day"
