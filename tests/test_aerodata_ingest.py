"""helpers.aerodata.ingest under hostile input, on every backend.

A value BSON cannot hold (an integer wider than 64 bits, a 17 MB callsign, text that is not
UTF-8) used to abort the whole batch (0 of 5 stored). Each such message is now rejected with its
reason like every other bad message, and the rest of the batch is stored.
"""
from __future__ import annotations

import pytest

from helpers import aerodata as ad

GOOD = [{"icao24": "4b1805", "callsign": "SWR12A", "timestamp": 1533099600 + i, "lat": 47.4 + i / 100,
         "lon": 8.5, "altitude": 3000.0 + i} for i in range(3)]
HOSTILE = [
    ({**GOOD[0], "timestamp": 1533099700, "altitude": 2 ** 70}, "bad altitude"),
    ({**GOOD[0], "timestamp": 1533099701, "vertical_rate": -(2 ** 64)}, "bad vertical_rate"),
    ({**GOOD[0], "timestamp": 1533099702, "callsign": "A" * (17 * 1024 * 1024)}, "bad callsign"),
    ({**GOOD[0], "timestamp": 1533099703, "callsign": "SWR\ud80012"}, "bad callsign"),
]


def _interleaved() -> list:
    out = []
    for good, (bad, _) in zip(GOOD + GOOD[:1], HOSTILE):
        out += [good, bad]
    return out


def test_a_value_bson_cannot_hold_rejects_that_message_only(db):
    batch = _interleaved()  # good, bad, good, bad, good, bad, good (a repeat), bad
    result = ad.ingest(db, batch)
    assert result.inserted == 3 and result.duplicates == 1
    assert [r.index for r in result.rejected] == [1, 3, 5, 7]
    assert [r.reason.split(":")[0] for r in result.rejected] == [why for _, why in HOSTILE]
    assert all(r.message is batch[r.index] for r in result.rejected)
    coll = db[ad.COLLECTION]
    assert coll.count_documents({"recordType": ad.REPORT}) == 3
    assert coll.count_documents({"recordType": ad.AIRCRAFT}) == 1  # parents created once
    assert coll.count_documents({"recordType": ad.AIRLINE}) == 1
    again = ad.ingest(db, batch)  # idempotent
    assert (again.inserted, again.duplicates, len(again.rejected)) == (0, 4, 4)


@pytest.mark.parametrize("value", [2 ** 63 - 1, -(2 ** 63), 1e300])
def test_the_widest_numbers_bson_holds_are_accepted(db, value):
    result = ad.ingest(db, [{**GOOD[0], "altitude": value}])
    assert result.inserted == 1 and result.rejected == []
    assert db[ad.COLLECTION].find_one({"recordType": ad.REPORT})["altitude"] == value


def test_one_batch_of_many_with_one_bad_message(db):
    """The rejection does not cost the other 999 messages of its batch."""
    many = [{**GOOD[0], "timestamp": 1533000000 + i} for i in range(1_000)]
    many[500] = {**many[500], "groundspeed": 10 ** 30}
    result = ad.ingest(db, many)
    assert (result.inserted, [r.index for r in result.rejected]) == (999, [500])


def test_every_stored_report_has_the_id_and_point_the_public_functions_make(db):
    """ingest writes a report's _id and GeoJSON point out in full (its fast path); they must be
    exactly make_id(...) and geo_point(...) of the stored fields, for ints and floats alike."""
    messages = [{"icao24": "4B1805", "timestamp": 1533099600 + i * 0.25, "lat": 47.0 + i / 100,
                 "lon": 8 + i, "callsign": c, "altitude": a}
                for i, (c, a) in enumerate([("SWR12", 38000.0), ("HBZZA", 12), (None, None), ("DAL7", 1.5)])]
    result = ad.ingest(db, messages)
    assert result.inserted == 4 and not result.rejected
    for doc in db[ad.COLLECTION].find({"recordType": ad.REPORT}):
        assert doc["_id"] == ad.make_id(doc["airline"], doc["icao24"], ad.message_number(doc["timestamp"]))
        assert doc[ad.GEO_FIELD] == ad.geo_point(doc["lon"], doc["lat"])
        assert ad.parse_id(doc["_id"]) == (doc["airline"], doc["icao24"], ad.message_number(doc["timestamp"]))


def test_ingest_pauses_the_cycle_collector_only_while_it_runs(db):
    import gc

    seen = []
    real = ad.ingest_batch

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    assert gc.isenabled()
    try:
        ad.store.ingest_batch = spy  # ingest looks it up in its module at call time
        ad.ingest(db, GOOD)
        assert seen == [False] and gc.isenabled()
        with pytest.raises(TypeError):
            ad.ingest(db, "not a list of messages")
        assert gc.isenabled()  # back on after an error too
        gc.disable()
        ad.ingest(db, GOOD)
        assert not gc.isenabled()  # and left off when it was off
    finally:
        ad.store.ingest_batch = real
        gc.enable()


def test_ingest_batch_returns_the_inserts_refused_and_keeps_the_subset_for_the_airlines_given(db):
    """``ingest_batch`` returns how many inserts the ``_id`` index refused (a parent already stored, a
    re-sent report), and with ``airlines`` pushes onto those airlines' aircraft alone (the map read)."""
    other = [{**m, "icao24": "3c6444", "callsign": "DLH4AB"} for m in GOOD]  # Lufthansa: not followed
    coll = db[ad.COLLECTION]
    ad.ensure_indexes(db)
    result = ad.IngestResult()
    batch = list(enumerate(GOOD[:2] + other[:2]))
    assert ad.ingest_batch(coll, batch, result, 1, airlines={"SWR"}) == 0  # all new
    # again, plus one new report each: 2 airlines + 2 aircraft + 4 reports refused, the new ones stored
    again = list(enumerate(GOOD + other))
    assert ad.ingest_batch(coll, again, result, 1, airlines={"SWR"}) == 8
    assert (result.inserted, result.duplicates) == (6, 4)
    swr, dlh = coll.find_one({"_id": "SWR_4b1805"}), coll.find_one({"_id": "DLH_3c6444"})
    assert [r["timestamp"] for r in swr["last_reports"]] == [GOOD[2]["timestamp"]]
    assert "last_reports" not in dlh
    assert ad.ingest_batch(coll, [(0, {"icao24": "nope"})], result) == 0  # nothing valid: nothing sent
