"""Checkers of notebook 04 (aircraft tracking in one polymorphic collection)."""
from __future__ import annotations

import random
from typing import Any

import bson

from ..counting import count_commands
from ..exercises import PAUSED, exercise, shown
from ..safety import check_copies, workbook_collection
from ..sizes import human_bytes
from . import GEO_FIELD, IN_AIRLINE, airline_of_callsign, distance_km, make_id, message_number

# the givens of exercise 4.3, as its text states them
_DAYS, _REPORTS_PER_DAY = 7, 2_500_000


@exercise("4.1", hint="def last_positions(aircraft, reports, airline): one aggregate on the collections it is given "
                      "(aircraft or reports), "
                      "https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html#pymongo.collection.Collection.aggregate")
def last_positions(answer: Any, *, aircraft: Any, reports: Any, airline: str) -> str | None:
    """Call the learner's ``last_positions(aircraft, reports, airline)`` on this check's own copy of the
    airline's aircraft and reports (fresh collections under a random name, with 4.4's indexes), into
    which it first adds a newer report of one aircraft, so that only an answer read inside the call
    from the collections given can be right, the reports inserted in shuffled order; and again on a
    second copy, unindexed and shuffled again, comparing its answer only (an answer that leans on the
    order documents are stored or scanned in, ``$last`` without a ``$sort``, fails on one of them);
    counting its commands on the first: the right ``{icao24: (timestamp,
    lat, lon)}``, in one round trip, with no more documents returned than aircraft and a small reply (at
    most twice an aircraft and a report per aircraft, in bytes): any form that keeps one report per
    aircraft on the server (a ``$lookup`` sub-pipeline with ``$limit``, ``$group`` with ``$first``
    after a ``$sort``, ``$top``, ...)."""
    if not callable(answer):
        return ("last_positions should be a function: def last_positions(aircraft, reports, airline): ... "
                "returning {icao24: (timestamp, lat, lon)}")
    planes = list(aircraft.find({"airline": airline}, batch_size=100_000))
    rows = list(reports.find({"airline": airline}, batch_size=100_000))
    if not planes or not rows:
        return f"aircraft_c and reports_c hold no {airline} documents: run section 4.4 again"
    db = reports.database
    rng = random.SystemRandom()  # never seeded from the name the learner's function is given
    plane = rng.choice(sorted({r["icao24"] for r in rows}))  # the aircraft the check moves
    last = max((r for r in rows if r["icao24"] == plane), key=lambda r: r["timestamp"])
    when = last["timestamp"] + rng.randint(1, 600)
    moved = {**last, "_id": make_id(airline, plane, message_number(when)), "timestamp": when,
             "lat": round(last["lat"] + rng.uniform(-0.5, 0.5), 6), "lon": round(last["lon"] + rng.uniform(-0.5, 0.5), 6)}
    answers = []
    prefixes = [f"exercise_4_1_{kind}" for kind in ("aircraft", "reports", "aircraft_plain", "reports_plain")]
    with check_copies(db, *prefixes) as names:  # one set per call: two kernels never share (or drop) them
        a_c, r_c, a_p, r_p = (workbook_collection(db, name) for name in names)
        for source, copy in ((aircraft, a_c), (reports, r_c)):
            for index in source.index_information().values():
                if index["key"] != [("_id", 1)]:
                    copy.create_index(index["key"])
        # the reports in shuffled order, so that no answer may lean on the order they were stored in
        # ($last without a $sort); the second copy, without indexes and shuffled again, is read in a
        # plain scan: its answer is compared, its cost is not
        for a_x, r_x in ((a_c, r_c), (a_p, r_p)):
            stored = rows + [moved]
            rng.shuffle(stored)
            a_x.insert_many([dict(p) for p in planes])
            r_x.insert_many([dict(r) for r in stored])
        with count_commands() as cost:
            answers.append(answer(a_c, r_c, airline))
        if cost.paused_inside:
            return PAUSED
        answers.append(answer(a_p, r_p, airline))
    want: dict[str, tuple] = {}
    for r in rows + [moved]:
        want[r["icao24"]] = max(want.get(r["icao24"], ()), (r["timestamp"], r["lat"], r["lon"]))
    small = 2 * len(want) * (max(len(bson.encode(p)) for p in planes) + max(len(bson.encode(r)) for r in rows))
    for got in answers:
        if not isinstance(got, dict):
            return f"last_positions(aircraft, reports, '{airline}') returned {shown(got)}: return a dict {{icao24: (timestamp, lat, lon)}}"
        if set(got) != set(want):
            return f"expected the {len(want)} aircraft of {airline}'s fleet, got {len(got)} keys"
        if isinstance(got[plane], (tuple, list)) and tuple(got[plane]) == (last["timestamp"], last["lat"], last["lon"]):
            return (f"{plane} has a newer report in the collections the check passed: read the positions inside "
                    f"last_positions, from its aircraft and reports arguments (not aircraft_c, reports_c or an answer "
                    f"computed before)")
        wrong = sorted(k for k in want if not isinstance(got[k], (tuple, list)) or tuple(got[k]) != want[k])
        if wrong:
            return (f"{len(wrong)} aircraft have another position, e.g. {wrong[0]}: the latest report is the one with "
                    f"the greatest timestamp, whatever order the reports are stored in (sort newest first, then "
                    f"keep one per aircraft, every field from the same report)")
    if cost.round_trips == 0:
        return ("it sent no command: read the positions inside last_positions, from its aircraft and reports "
                "arguments, in one aggregate")
    if cost.round_trips > 1:
        return (f"it took {cost.round_trips} round trips ({', '.join(sorted(set(cost.commands)))}); one aggregate is "
                f"enough: the fleet with a $lookup whose pipeline sorts the aircraft's reports newest first and "
                f"keeps one ($limit), or the airline's reports sorted newest first and grouped by icao24 ($first)")
    if cost.docs_returned > len(want):
        return (f"the server sent {cost.docs_returned:,} documents for {len(want)} aircraft: let it keep one report "
                f"per aircraft ($limit in a $lookup pipeline, or $group with $first) and send only those")
    if cost.bytes_returned > small:
        return (f"the server sent {human_bytes(cost.bytes_returned)} for {len(want)} positions (more than an aircraft "
                f"and a report each, twice over: {human_bytes(small)}): keep one report per aircraft on the server "
                f"($limit in a $lookup pipeline, $first after a $sort, $top), not all of them ($push)")
    return None


@exercise("4.2", hint="tight bounds need ^ and case sensitivity on an indexed field; see section 4.7")
def slow_query(answer: Any, *, aerodata: Any) -> str | None:
    """``(filter, why)``: a filter that matches documents but, by the model of 4.7, cannot use tight bounds."""
    if not isinstance(answer, tuple) or len(answer) != 2:
        return "give a pair: (filter, why)"
    query, reason = answer
    if not isinstance(query, dict) or len(query) != 1:
        return "give a filter on exactly one field, e.g. {'_id': {'$regex': ...}}"
    if reason not in ("unanchored", "case-insensitive", "no index"):
        return f"why={shown(reason)} is not one of the three reasons"
    if aerodata.find_one(query, {"_id": 1}) is None:
        return "the filter matches nothing: pick one that returns documents"
    (field, cond), = query.items()
    indexed = {k[0] for i in aerodata.index_information().values() for k in i["key"]}
    if reason == "no index":
        return None if field not in indexed else f"{shown(field)} has an index"
    pattern = cond.get("$regex", "") if isinstance(cond, dict) else ""
    if field != "_id" or not isinstance(pattern, str) or not pattern:
        return "use a $regex on _id for 'unanchored' or 'case-insensitive'"
    if reason == "unanchored":
        return None if not pattern.startswith("^") else "this pattern is anchored: it has tight bounds"
    return None if "i" in cond.get("$options", "") else "a case-insensitive regex needs $options: 'i'"


@exercise("4.3", hint="days x reports per day x average report size (section 4.9)")
def week_bytes(answer: Any, *, aerodata: Any) -> str | None:
    """The bytes of a week of report documents, at the average report size measured again here."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return f"give a number of bytes, not {shown(answer)}"
    sizes = [len(bson.encode(d)) for d in aerodata.find({"recordType": 3}, batch_size=100_000)]
    if not sizes:
        return "there are no reports: run the notebook from the top"
    want = _DAYS * _REPORTS_PER_DAY * sum(sizes) / len(sizes)
    if abs(answer - want) > 0.01 * want:
        return f"{human_bytes(answer)} is more than 1% away from the size of a week of reports"
    return None


@exercise("4.4", hint="a $geoWithin with $centerSphere (radians: km / ad.EARTH_RADIUS_KM), or ad.within_km(positions, ZRH, 10) "
                      "of section 4.11; collect the icao24 of the reports it returns")
def near_zurich(answer: Any, *, aerodata: Any, point: Any) -> str | None:
    """The icao24 of every aircraft with a report within 10 km of ``point``, recomputed client-side."""

    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(a, str) for a in answer):
        return "give a set of icao24 strings"
    center = point["coordinates"] if isinstance(point, dict) else point
    inner, outer = set(), set()  # a report right on the 10 km edge may fall either way on another sphere model
    for r in aerodata.find({"recordType": 3}, {"icao24": 1, GEO_FIELD: 1}, batch_size=100_000):
        d = distance_km(center, r[GEO_FIELD]["coordinates"])
        if d <= 9.99:
            inner.add(r["icao24"])
        if d <= 10.01:
            outer.add(r["icao24"])
    got = set(answer)
    if not inner <= got:
        return f"{len(inner - got)} aircraft heard within 10 km are missing"
    if not got <= outer:
        return f"{len(got - outer)} of your aircraft were never heard within 10 km (longitude first?)"
    return None


@exercise("4.5", hint="build each message's key by the second with ad.make_id(airline, icao24, int(timestamp)) and "
                      "count the keys that are not new")
def lost_by_second(answer: Any, *, messages: Any) -> str | None:
    """How many of ``messages`` a key by the epoch second refuses as duplicates."""

    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"give a whole number of messages, not {shown(answer)}"
    keys = [(airline_of_callsign(m.get("callsign")), m["icao24"], int(m["timestamp"])) for m in messages]
    want = len(keys) - len(set(keys))
    if answer != want:
        return f"{shown(answer)} is not the number of messages whose key by the second was taken already"
    return None


@exercise("4.6", hint="a dict like {'lat': {'minimum': ..., 'maximum': ...}, 'lon': {...}}: bounds around the "
                      "receiver's region that every stored report meets, and that a swapped pair (lat near 8, "
                      "lon near 47) does not")
def region_rules(answer: Any, *, aerodata: Any) -> str | None:
    """``$jsonSchema`` properties for ``lat`` and ``lon`` that accept every stored report of ``aerodata``
    and refuse each of them with latitude and longitude swapped (checked client-side, the same on every
    engine, by :func:`_number_rule_breaks`)."""

    if not isinstance(answer, dict) or set(answer) != {"lat", "lon"} or \
            not all(isinstance(v, dict) for v in answer.values()):
        return "give a dict with two keys, 'lat' and 'lon', each a $jsonSchema rule (a dict)"
    reports = list(aerodata.find({"recordType": 3}, {"_id": 1, "lat": 1, "lon": 1}, batch_size=100_000).sort("_id", 1))
    if not reports:
        return "the collection given holds no position reports: pass the one of section 4.11"
    try:
        refused = [r["_id"] for r in reports if _breaks(answer, {"lat": r["lat"], "lon": r["lon"]})]
        swapped_ok = [r["_id"] for r in reports if not _breaks(answer, {"lat": r["lon"], "lon": r["lat"]})]
    except ValueError as e:
        return f"the rules use a keyword this check cannot evaluate ({e}); bsonType, minimum and maximum suffice"
    if refused:
        return f"{len(refused)} of the {len(reports)} stored reports break these rules, e.g. {refused[0]}"
    if swapped_ok:
        return f"{len(swapped_ok)} reports with latitude and longitude swapped still pass, e.g. {swapped_ok[0]}"
    return None


@exercise("4.7", hint="tracker.weigh(designs) has a 'docs written / day' column: the airline's subset's row "
                      "(ad.IN_AIRLINE) minus one collection's")
def subset_extra_writes(answer: Any, *, workload: Any, designs: Any) -> str | None:
    """How many more documents a day the subset in the airline writes than one collection: the
    followed airline's update on every batch that hears it, the price of its one-document map."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return f"{shown(answer)} is not a number of documents a day"
    day = workload.weigh(designs)["docs written / day"]
    want = day[IN_AIRLINE] - day["one collection"]
    if abs(answer - want) <= 0.01 * abs(want):
        return None
    if abs(answer - day[IN_AIRLINE]) <= 0.01 * abs(want):
        return f"{answer:,.0f} is every document the airline's subset writes a day; subtract one collection's"
    other = day.get("one collection + subset")
    if other is not None and abs(answer - (other - day["one collection"])) <= 0.01 * abs(want):
        return f"{answer:,.0f} is what the subset in each aircraft adds; take the row of the subset in the airline"
    return f"{answer:,.0f} is not the difference of the two rows of 'docs written / day'"


#: the ``bsonType`` aliases of numbers (``"number"`` is any of them)
_NUMBER_TYPES = ("int", "long", "double", "decimal")


def _number_type(value: Any) -> str | None:
    """The BSON type a number is stored as (pymongo's rule: an int past 32 bits is a long), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, bson.int64.Int64):
        return "long"
    if isinstance(value, int):
        return "int" if -2**31 <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, bson.decimal128.Decimal128):
        return "decimal"
    return None


def _number_rule_breaks(rule: Any, value: Any) -> bool:
    """Whether ``value`` breaks the ``$jsonSchema`` rule ``rule`` of a number field, for the keywords
    a range needs (``bsonType``, ``minimum``, ``maximum``), evaluated as MongoDB does; ValueError for any
    other keyword, rather than guess."""
    unknown = set(rule) - {"bsonType", "minimum", "maximum"}
    if unknown:
        raise ValueError(f"keyword(s) {sorted(unknown)} not evaluated here")
    kind = _number_type(value)
    if "bsonType" in rule:
        wanted = [rule["bsonType"]] if isinstance(rule["bsonType"], str) else list(rule["bsonType"])
        if kind not in wanted and not ("number" in wanted and kind is not None):
            return True
    if kind is None:  # minimum and maximum apply to numbers only
        return False
    number = float(value.to_decimal()) if kind == "decimal" else value
    return ("minimum" in rule and number < rule["minimum"]) or ("maximum" in rule and number > rule["maximum"])


def _breaks(rules: dict[str, Any], doc: dict[str, Any]) -> bool:
    return any(_number_rule_breaks(rules[field], doc[field]) for field in ("lat", "lon"))
