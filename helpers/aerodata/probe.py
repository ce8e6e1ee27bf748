"""What the engine behind notebook 04 can show, decided from the probe made on connect.

Notebook 04 runs on every backend. Where an engine cannot show what a real MongoDB does (no
indexes, an ``_id`` index that serves only equality, an explain that is wrong for a regex, no
``$jsonSchema``, no transactions, ``$near`` not nearest first), the lesson's cells call these
functions instead of branching on ``caps`` themselves: each runs what the engine can do and
returns the labelled line the lesson prints. Introduced in notebook 04; imported from
:mod:`helpers.aerodata`.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from pymongo.errors import WriteError

from ..backends import info_of
from ..capabilities import CAPABILITIES
from ..plans import plan_summary
from .validation import apply_validator, invalid_documents, why_refused

__all__ = ["bill_note", "prefix_scan_note", "range_forms_note", "explain_lines", "geo_notes", "TransactionMode",
           "transaction_mode", "validator_on", "insert_or_refusal", "validation_levels"]


def _info(coll: Any) -> Any:
    info = info_of(coll)
    if info is None:
        raise ValueError("helpers.aerodata.probe: the collection was not opened by helpers.get_db() or "
                         "helpers.backends.connect(), so its engine was never probed; open it through them")
    return info


def bill_note(db: Any) -> str:
    """What the bill of 4.12 cannot weigh on this engine, from the probe made on connect: "" where the
    engine explains (``caps.explain``); else the probe's label, and that a tie on what every engine
    counts is then this engine's, not a verdict: on a server that explains, keys and documents
    examined go on to decide."""
    info = _info(db)
    if info.caps.explain:
        return ""
    label = next(c.label for c in CAPABILITIES if c.name == "explain")
    return (f"{info.engine}: {label} (probed: caps.explain), so this bill weighs no keys or documents examined; "
            f"where its designs tie, on a server that explains they go on to decide")


def prefix_scan_note(coll: Any) -> str:
    """How this engine serves the anchored ``_id`` prefix queries of notebook 04 (4.5): "" on an engine
    that scans the ``_id`` index's bounds, as a real MongoDB does."""
    info = _info(coll)
    if not info.caps.indexes:
        return f"Read with care: {info.engine} has no indexes: every query above scans the collection."
    if not info.caps.id_range_index:
        return (f"Read with care: on {info.engine} the _id index serves equality only, so the three anchored-prefix "
                f"queries (everything for the airline, one aircraft's reports, and the _id part of the fleet) scan "
                f"the collection; a real MongoDB reads only the keys in their bounds (4.7).")
    return ""


def range_forms_note(coll: Any, keys_in_range: int) -> str:
    """What the two forms of one ``_id`` range (anchored regex, compound-index range) read on this engine;
    ``keys_in_range``: the keys the bounds model counts."""
    info = _info(coll)
    if not info.caps.indexes:
        return f"{info.engine} has no indexes: both forms scan the collection; the times say nothing about indexes."
    if not info.caps.id_range_index:
        return (f"{info.engine} serves only _id equality from the _id index: the regex scans the collection here "
                f"(a real MongoDB reads {keys_in_range + 1} keys); the compound form is a range scan.")
    return f"{info.engine} scans both as index ranges."


def explain_lines(coll: Any, shapes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per query: its live plan (stages, keys and documents examined) where this engine explains
    it faithfully, else why it is not shown. A shape whose name contains "unindexed" filters an
    unindexed field (a regex there is explained right even where a regex on an index is not)."""

    info = _info(coll)
    lines = []
    for name, query in shapes.items():
        indexed = "unindexed" not in name
        if info.caps.explain and (info.caps.explain_regex or not indexed):
            stages, keys, docs = plan_summary(coll.find(query).explain())
            lines.append(f"{name:34} live: {stages}, keys examined {keys}, docs examined {docs}")
        elif info.caps.explain:
            lines.append(f"{name:34} not shown: {info.engine} explains regex on an indexed field wrongly "
                         f"(docs/ENGINES.md); use the model above")
        else:
            lines.append(f"{name:34} not shown: {info.engine} cannot explain (no indexes at all); use the model above")
    return lines


def geo_notes(coll: Any) -> list[str]:
    """How this engine answered notebook 04's geo queries (4.11): the radius operator, the nearest-first
    order, the index."""
    info = _info(coll)
    lines = ["radius: " + ("$geoWithin/$centerSphere" if info.caps.geo_center_sphere
                           else "$near with $maxDistance (this engine has no $centerSphere: probed)")]
    if not info.caps.near_sorted:
        lines.append(f"nearest: {info.engine}'s $near does not return nearest first (probed): the helper fetched "
                     f"every report within the radius and sorted them client-side by distance; a real MongoDB "
                     f"returns them sorted")
    if not info.caps.indexes:
        lines.append(f"{info.engine} has no indexes: every geo query scans the collection")
    return lines


class TransactionMode(NamedTuple):
    on: bool     # pass as transaction=...: the engine has multi-document transactions (probed)
    label: str   # what to print next to the result


def transaction_mode(coll: Any) -> TransactionMode:
    """Whether multi-document writes on this engine can run in a transaction (probed on connect)."""
    info = _info(coll)
    if info.caps.transactions:
        return TransactionMode(True, "in transactions")
    return TransactionMode(False, f"no transactions on {info.engine}: rounds repeated until nothing is left")


def validator_on(db: Any, collection: str) -> Any:
    """Put notebook 04's validator on ``collection`` (:func:`helpers.aerodata.apply_validator`) where the
    engine validates; returns its validation options, or why it was not put on."""

    info = _info(db[collection])
    if not info.caps.json_schema:
        return f"not applied: {info.engine} does not validate ($jsonSchema, probed on connect)"
    return apply_validator(db, collection=collection)


def insert_or_refusal(coll: Any, doc: Mapping[str, Any]) -> tuple[int | None, str]:
    """Insert ``doc`` into a collection with a validator; returns (the error code or None, what happened).

    On an engine that does not validate (``caps.json_schema`` False) nothing is inserted: the answer
    says so, and what a real MongoDB does. ``errInfo`` is summarised by :func:`helpers.aerodata.why_refused`."""

    info = _info(coll)
    if not info.caps.json_schema:
        return None, (f"not tried: {info.engine} does not validate ($jsonSchema, probed on connect); "
                      f"a real MongoDB refuses it with code 121")
    try:
        coll.insert_one(dict(doc))
    except WriteError as e:
        return e.code, f"refused, code {e.code}; errInfo: {why_refused((e.details or {}).get('errInfo', {}))}"
    return None, "accepted"


def validation_levels(db: Any, collection: str, invalid: Mapping[str, Any],
                      another_invalid: Mapping[str, Any]) -> list[str]:
    """Notebook 04 (4.10): a document stored before the validator, then ``validationLevel`` strict and
    moderate on an update of it, then ``validationAction`` warn; leaves the collection as it found it
    (the two documents deleted, the validator back to strict/error). One line per step."""

    coll = db[collection]
    info = _info(coll)
    if not info.caps.json_schema:
        return [f"not shown: {info.engine} does not validate ($jsonSchema, probed on connect)"]
    lines = []
    apply_validator(db, collection=collection, level="off")
    coll.insert_one(dict(invalid))                                 # written before the rules
    apply_validator(db, collection=collection)                     # strict, error
    lines.append(f"stored before the validator and still there: "
                 f"{[d['_id'] for d in invalid_documents(db, collection=collection)]}")
    for level in ("strict", "moderate"):
        apply_validator(db, collection=collection, level=level)
        try:
            coll.update_one({"_id": invalid["_id"]}, {"$set": {"note": "touched"}})
            lines.append(f"validationLevel {level!r}: an update of the invalid document is accepted")
        except WriteError as e:
            lines.append(f"validationLevel {level!r}: an update of the invalid document is refused, code {e.code}")
    apply_validator(db, collection=collection, level="strict", action="warn")
    coll.insert_one(dict(another_invalid))
    lines.append(f"validationAction 'warn': {another_invalid['_id']} is accepted (the server logs it); "
                 f"invalid now: {len(invalid_documents(db, collection=collection))}")
    coll.delete_many({"_id": {"$in": [invalid["_id"], another_invalid["_id"]]}})
    lines.append(f"back to {apply_validator(db, collection=collection)} | invalid documents: "
                 f"{len(invalid_documents(db, collection=collection))}")
    return lines
