"""Aircraft tracking in one polymorphic collection (notebook 04): airlines, aircraft, position reports.

Introduced in notebook 04 (``notebooks/04_single_collection_aerodata.ipynb``). One collection,
``aerodata``, holds three record types with hierarchical ``_id`` values::

    DAL                          recordType 1: the airline (ICAO designator)
    DAL_a36f7e                   recordType 2: an aircraft of that airline (icao24 address)
    DAL_a36f7e_1533099600000     recordType 3: one position report (message number)

The message number is the report's UTC time in epoch milliseconds, zero-padded to 13 digits, so
that string order is number order (``_0000000000002`` sorts before ``_0000000000010``), re-sending
the same message produces the same ``_id`` (never a duplicate), and two reports of one aircraft in
the same second (a raw feed hears a position about twice a second) keep two keys. Every part has a
fixed width (3, 6, 13 characters), so a prefix like ``^DAL`` can never leak into a longer airline code.

Aircraft whose callsign does not start with a known airline designator (private flights,
registrations as callsigns, operators missing from OpenFlights) are filed under the airline
``000`` (:data:`NO_AIRLINE`): a code no ICAO designator can have (designators are letters), which
keeps every ``_id`` the same shape.

The lesson's parts, each imported from here: ``keys`` (the ``_id``, the airline table, index bounds),
``messages`` (validation, message number, the Stratux feed, a receiver's batches), ``store`` (ingest), ``queries`` (the
five queries, the fleet's latest positions, Python objects), ``rekey`` (re-keying, sharding), ``validation`` (the ``$jsonSchema``),
``geo`` (GeoJSON points, distance, the geo queries), ``costs`` (the tracker workload's measured
costs, every form of every operation: :func:`tracker_costs`), ``writers`` (the ingest writers that bill measures) and ``probe`` (what an engine can show, from the probe made on
connect: the lesson's labelled lines). ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .costs import (
    AIRLINE_UPSERTS,
    BULK,
    COVERED_MAP,
    COVERED_TRACK,
    DISTINCT,
    GROUP,
    HOURLY,
    ID_ONLY,
    ID_RANGE_TRACK,
    ID_TRACK,
    IN_AIRLINE,
    LOOKUP,
    LOOP,
    NEW,
    ON_ID_ONLY,
    PARENTS_EACH_BATCH,
    PARENTS_HOURLY,
    UPSERTS,
    WIDE,
    WIDE_INDEX,
    subset_statements,
    tracker_costs,
)
from .geo import (
    EARTH_RADIUS_KM,
    GEO_FIELD,
    distance_km,
    ensure_geo_index,
    geo_point,
    nearest,
    within_km,
)
from .keys import (
    AIRCRAFT,
    AIRLINE,
    COLLECTION,
    NO_AIRLINE,
    QUERY_BATCH,
    REPORT,
    SEQ_DIGITS,
    IdParts,
    airline_of_callsign,
    airline_table,
    keys_in_bounds,
    make_id,
    parse_id,
    prefix_bounds,
)
from .messages import (
    IngestResult,
    Rejected,
    message_number,
    parse_stratux,
    receiver_batch,
    receiver_batches,
    to_stratux_json,
    validate_message,
)
from .probe import (
    TransactionMode,
    bill_note,
    explain_lines,
    geo_notes,
    insert_or_refusal,
    prefix_scan_note,
    range_forms_note,
    transaction_mode,
    validation_levels,
    validator_on,
)
from .queries import (
    Aircraft,
    Airline,
    Report,
    aircraft,
    airline,
    airline_all,
    fleet,
    fleet_latest_group_pipeline,
    fleet_latest_pipeline,
    from_document,
    id_range,
    latest_positions,
    latest_report,
    prefix_regex,
    reports,
    subset_latest_pipeline,
)
from .rekey import (
    rekey_aircraft,
    shard_writes,
)
from .store import (
    batch_documents,
    ensure_indexes,
    ingest,
    ingest_batch,
    insert_new,
)
from .validation import (
    aerodata_schema,
    apply_validator,
    invalid_documents,
    why_refused,
)

__all__ = [
    "COLLECTION", "NO_AIRLINE", "SEQ_DIGITS", "QUERY_BATCH", "AIRLINE", "AIRCRAFT", "REPORT",
    "IdParts", "make_id", "parse_id", "airline_table", "airline_of_callsign",
    "Rejected", "IngestResult", "validate_message", "ingest", "ingest_batch", "batch_documents", "insert_new", "ensure_indexes",
    "prefix_regex", "airline_all", "airline", "fleet", "aircraft", "reports", "latest_report",
    "latest_positions", "id_range", "fleet_latest_pipeline", "fleet_latest_group_pipeline", "subset_latest_pipeline",
    "tracker_costs", "receiver_batch", "receiver_batches", "subset_statements", "LOOP", "LOOKUP", "GROUP", "DISTINCT", "BULK", "UPSERTS", "IN_AIRLINE", "ID_ONLY", "ID_TRACK", "ON_ID_ONLY", "ID_RANGE_TRACK", "PARENTS_EACH_BATCH", "PARENTS_HOURLY", "WIDE", "WIDE_INDEX", "COVERED_TRACK", "COVERED_MAP", "HOURLY", "AIRLINE_UPSERTS", "NEW", "bill_note",
    "to_stratux_json", "parse_stratux",
    "Airline", "Aircraft", "Report", "from_document",
    "prefix_bounds", "keys_in_bounds", "rekey_aircraft", "shard_writes",
    "GEO_FIELD", "EARTH_RADIUS_KM", "message_number", "geo_point", "distance_km", "nearest",
    "within_km", "ensure_geo_index",
    "aerodata_schema", "apply_validator", "invalid_documents", "why_refused",
    "prefix_scan_note", "range_forms_note", "explain_lines", "geo_notes", "TransactionMode",
    "transaction_mode", "validator_on", "insert_or_refusal", "validation_levels",
]
