"""Checkers of notebook 05 (a schema's life: infer it, enforce it, evolve it)."""
from __future__ import annotations

import math
from typing import Any, Mapping

from ..exercises import exercise, shown
from ..plans import find_in_id_order
from ..safety import check_copies, workbook_collection
from . import SchemaError, infer_schema, read_report, schema_violations

PROBE = "schema_exercise_probe"  # a scratch copy of the workbook's per check (``_<8 random hex>`` added), dropped after it


def _verdicts(db: Any, docs: list[dict[str, Any]], json_schema: Mapping[str, Any], server: bool) -> list[bool]:
    """Does each document satisfy ``json_schema``? Asked of the server when it validates
    (the ``$jsonSchema`` query operator, on a scratch copy), else checked client-side."""
    if not server:
        return [not schema_violations(d, json_schema) for d in docs]
    with check_copies(db, PROBE) as (name,):  # one per call: two kernels never share (or drop) it
        probe = workbook_collection(db, name)
        probe.insert_many(docs)
        ok = {d["_id"] for d in probe.find({"$jsonSchema": dict(json_schema)}, {"_id": 1}, batch_size=len(docs) + 1)}
        return [d["_id"] in ok for d in docs]


@exercise("5.1", hint="start from to_json_schema(...) and give properties.lat a minimum and a maximum "
                      "(latitudes run from -90 to 90 degrees)")
def latitude_validator(answer: Any, *, db: Any, reports: Any, server: bool) -> str | None:
    """A ``$jsonSchema`` that accepts every stored report and refuses latitudes outside [-90, 90]."""
    if not isinstance(answer, Mapping) or "$jsonSchema" in answer:
        return "give the $jsonSchema document itself (a dict with bsonType, properties, ...), " \
               "not {'$jsonSchema': ...}"
    stored = list(find_in_id_order(reports))  # along the _id index: no in-memory sort on SecantusDB
    if not stored:
        return "the reports collection is empty: run the notebook from the top"
    try:
        if server:
            passing = reports.count_documents({"$jsonSchema": dict(answer)})
        else:
            passing = sum(1 for d in stored if not schema_violations(d, answer))
    except SchemaError as e:
        return str(e)
    if passing != len(stored):
        return f"it refuses {len(stored) - passing} of the {len(stored)} stored reports"
    base = stored[0]
    # copies of a real report with another latitude (and a distinct _id of the same type)
    lats = (90.0, -90.0, 0.0, 90.5, -90.5, 123.4, -1000.0)
    copies = [{**base, "_id": f"{base['_id']}~{i}" if isinstance(base["_id"], str) else -1 - i, "lat": v}
              for i, v in enumerate(lats)]
    edge, out = copies[:3], copies[3:]
    try:
        verdicts = _verdicts(db, copies, answer, server)
    except SchemaError as e:
        return str(e)
    if not all(verdicts[:len(edge)]):
        return "it refuses a latitude inside [-90, 90] (the poles included)"
    let_through = [d["lat"] for d, ok in zip(out, verdicts[len(edge):]) if ok]
    if let_through:
        return f"it accepts latitude {let_through[0]}, which is out of range"
    return None


@exercise("5.2", hint="version_of(doc) tells the version; version 2 keeps [longitude, latitude] in "
                      "position.coordinates, version 1 keeps lat and lon")
def position_reader(answer: Any, *, versioned: Any, reports: Any) -> str | None:
    """``position_of(doc) -> (lat, lon)`` or ``None``, for a stored report of either version."""
    if not callable(answer):
        return "give a function: position_of(doc) -> (lat, lon), or None without a position"
    original = {d["_id"]: d for d in reports.find({}, {"lat": 1, "lon": 1})}
    docs = list(versioned.find().sort("_id", 1))
    versions = {d.get("schemaVersion", 1) for d in docs}
    if versions != {1, 2}:
        return "the versioned collection should hold both versions: run section 5.5 first"
    for doc in docs:
        src = original.get(doc["_id"])
        want = (src["lat"], src["lon"]) if src and "lat" in src and "lon" in src else None
        got = answer(doc)
        if (tuple(got) if got is not None else None) != want:
            return f"for a version {doc.get('schemaVersion', 1)} report it returns {shown(got)}"
    bare = {k: v for k, v in docs[0].items() if k not in ("lat", "lon", "position", "schemaVersion")}
    for doc in (bare, read_report(bare)):
        if answer(doc) is not None:
            return "a report without a position should give None"
    return None


@exercise("5.3", hint="compare the paths of infer_schema(aerodata, sample=None) with those of the seeded 1% "
                      "sample (math.ceil of 1% of the documents)")
def missed_paths(answer: Any, *, aerodata: Any) -> str | None:
    """The field paths of ``aerodata`` that the seeded 1% sample (seed 7) never saw."""
    if isinstance(answer, str) or not isinstance(answer, (set, frozenset, list, tuple)):
        return "give a set of field paths, e.g. {'name', 'country'}"
    everything = infer_schema(aerodata, sample=None)
    if everything.sampled == 0:
        return "aerodata is empty: run the notebook from the top"
    one_percent = infer_schema(aerodata, sample=math.ceil(everything.sampled / 100), seed=7)
    missed = {p for p in everything.paths() if p not in one_percent}
    given = set(answer)
    unknown = sorted(p for p in given if p not in everything)
    if unknown:
        return f"{shown(unknown[0])} is not a field path of aerodata"
    seen = sorted(given - missed)
    if seen:
        return f"the 1% sample did see {shown(seen[0])}"
    if given != missed:
        return f"{len(missed - given)} more path(s) are missed by the sample"
    return None
