"""Version and migrate ADS-B reports: version 1 ``lat``/``lon`` to version 2 GeoJSON ``position`` (notebook 05).

:func:`read_report` reads either version; :func:`write_lazy` upgrades a report when the application
writes it; :func:`migrate_in_batches` upgrades the rest in the background, never overwriting a
concurrent write; :func:`within_box` queries both versions while they coexist; :func:`content_digest`
proves nothing was lost; :func:`versioned_validator` accepts each version while the migration
runs. Its names are also imported from :mod:`helpers.schema`, the lesson module.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import bson
from bson.son import SON
from pymongo import ReplaceOne

from ..plans import find_in_id_order
from .infer import SchemaError, bson_type
from .validate import _NUMBERS, one_of_by

# ------------------------------------------------------------------------------------------
# Versioning: ADS-B reports, version 1 (lat/lon) -> version 2 (GeoJSON position)
# ------------------------------------------------------------------------------------------
VERSION_FIELD = "schemaVersion"
CURRENT_VERSION = 2
#: a report still at version 1: no ``schemaVersion`` (written before it existed), or ``schemaVersion: 1``
NOT_CURRENT = {VERSION_FIELD: {"$in": [None, 1]}}

_IS_V1 = {"$in": [{"$ifNull": ["$" + VERSION_FIELD, 1]}, [1]]}  # the same test, as an expression
_HAS_LAT_LON = {"$and": [{"$ne": [{"$type": "$lat"}, "missing"]}, {"$ne": [{"$type": "$lon"}, "missing"]}]}
_POINT = {"type": "Point", "coordinates": ["$lon", "$lat"]}
#: version 1 -> 2 on the server (an update with an aggregation pipeline), for documents the filter
#: already limits to version 1: the same result as :func:`upgrade_report`, no document leaves the server
UPGRADE_PIPELINE: list[dict[str, Any]] = [
    {"$set": {VERSION_FIELD: CURRENT_VERSION,
              "position": {"$cond": [_HAS_LAT_LON, _POINT, "$$REMOVE"]}}},
    {"$unset": ["lat", "lon"]},
]


def versioned_validator(schemas: Mapping[int, Mapping[str, Any]], *, field_name: str | None = None,
                        unversioned: int = 1) -> dict[str, Any]:
    """The validator for a migration in progress: exactly one version's schema must match.

    Documents without ``schemaVersion`` are version ``unversioned``. Introduced in notebook 05.
    """
    return one_of_by(field_name or VERSION_FIELD, schemas, absent=unversioned)


def version_of(doc: Mapping[str, Any]) -> int:
    """A report's schema version: its ``schemaVersion``, or 1 for a document written before the
    field existed. Introduced in notebook 05."""
    version = doc.get(VERSION_FIELD)
    if version is None:  # absent, or null: version 1, as :data:`NOT_CURRENT` matches on the server
        version = 1
    if version not in (1, 2):
        raise SchemaError(f"document {doc.get('_id')!r}: unknown {VERSION_FIELD} {version!r}; "
                          f"this reader knows versions 1 and 2: deploy the newer reader first")
    return version


def upgrade_report(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: ``lat``/``lon`` become a GeoJSON point ``position`` (longitude first, as
    GeoJSON orders coordinates), plus ``schemaVersion: 2``; every other field is kept as it is.
    A report without a position gets no ``position``. A version 2 report is returned unchanged.
    Introduced in notebook 05."""
    if version_of(doc) == 2:
        return dict(doc)
    new = {k: v for k, v in doc.items() if k not in ("lat", "lon")}
    new[VERSION_FIELD] = 2
    if "lat" in doc and "lon" in doc:
        new["position"] = {"type": "Point", "coordinates": [doc["lon"], doc["lat"]]}
    return new


def read_report(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What the application reads, whatever the stored version: the version 2 shape.

    The upgrade happens in memory only; the stored document is not touched. Introduced in notebook 05.
    """
    return upgrade_report(doc)


def lazy_pipeline(changes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The update pipeline of :func:`write_lazy`: upgrade the report *if it is version 1*, then apply
    ``changes`` (each value wrapped in ``$literal``, so a string such as ``"$lat"`` stays a string).

    Every expression of a ``$set`` stage sees the document as it entered the stage, so the version
    test and the new ``position`` both read the stored ``lat``/``lon``. Introduced in notebook 05.
    """
    if not isinstance(changes, Mapping) or not changes:
        raise SchemaError(f"changes={changes!r}: give the fields to set, e.g. {{'altitude': 36000.0}}")
    bad = [k for k in changes if not isinstance(k, str) or not k or k.startswith("$")
           or k in ("_id", VERSION_FIELD, "lat", "lon", "position")]
    if bad:
        raise SchemaError(f"changes: {bad[0]!r} cannot be set by an application write (not _id, "
                          f"{VERSION_FIELD}, lat, lon, position, or a name starting with '$')")
    return [
        {"$set": {VERSION_FIELD: CURRENT_VERSION,
                  "position": {"$cond": [{"$and": [_IS_V1, _HAS_LAT_LON]}, _POINT, "$position"]}}},
        {"$unset": ["lat", "lon"]},
        {"$set": {k: {"$literal": v} for k, v in changes.items()}},
    ]


def write_lazy(collection: Any, report_id: Any, changes: Mapping[str, Any]) -> str:
    """The application's write (``$set`` of version 2 fields) that also upgrades a version 1 report.

    One command, whatever the version: an ``update`` by ``_id`` with :func:`lazy_pipeline`, which
    upgrades the report only if it is still version 1 (the test runs on the server, inside the
    single-document update, so no other writer can come between the test and the write) and applies
    ``changes``. Returns ``"written"``, or ``"missing"`` when no report has that ``_id``. A report of a
    newer version than this writer knows is never matched (the filter names versions 1 and 2), so it
    is never stamped back to version 2: :class:`SchemaError`. Introduced in notebook 05.
    """
    pipeline = lazy_pipeline(changes)
    result = collection.update_one({"_id": report_id, VERSION_FIELD: {"$in": [None, 1, CURRENT_VERSION]}}, pipeline)
    if result.matched_count:
        return "written"
    # nothing matched: no such report, or one of a newer version (only on this rare path, a second read)
    stored = collection.find_one({"_id": report_id}, {VERSION_FIELD: 1})
    if stored is None:
        return "missing"
    raise SchemaError(f"write_lazy: report {report_id!r} is at {VERSION_FIELD} {stored.get(VERSION_FIELD)!r}, newer "
                      f"than this writer knows ({CURRENT_VERSION}); it was left untouched: deploy the newer writer")


def _bracket(value: Any) -> str:
    """The group of BSON types a range on ``_id`` stays within (``$gt``/``$lte`` compare within it)."""
    kind = bson_type(value)
    return "number" if kind in _NUMBERS else kind


def _next_batch_ids(collection: Any, batch_size: int) -> list[Any]:
    """The ``_id`` of the first ``batch_size`` version 1 reports in ``_id`` order, cut at the first
    change of BSON type (a range compares within one type): only ``_id`` values leave the server."""
    ids = [d["_id"] for d in find_in_id_order(collection, NOT_CURRENT, {"_id": 1}, limit=batch_size)]
    if ids:
        first = _bracket(ids[0])
        ids = list(itertools.takewhile(lambda i: _bracket(i) == first, ids))
    return ids


@dataclass
class BatchResult:
    """One batch of a background migration: ``_id`` values read, reports upgraded, and reports
    found already upgraded when the batch's update ran (the application wrote them meanwhile)."""

    ids: list[Any]
    upgraded: int
    skipped: int


def migrate_batch(collection: Any, batch_size: int, *,
                  after_read: Callable[[list[Any]], Any] | None = None) -> BatchResult:
    """Upgrade the next ``batch_size`` version 1 reports on the server, shipping no document bodies.

    One query returns the ``_id`` of the first ``batch_size`` version 1 reports (in ``_id`` order,
    within one BSON type); one ``update_many`` over that ``_id`` range, still limited to version 1
    reports (:data:`NOT_CURRENT`), runs :data:`UPGRADE_PIPELINE` on the server. A report the
    application wrote meanwhile is version 2 already (every application write upgrades it, see
    :func:`write_lazy`), so the filter skips it: nothing it wrote is overwritten. Two round trips.
    ``after_read`` gets the ``_id`` values between the read and the update: the window a concurrent
    writer races in. Introduced in notebook 05.
    """
    ids = _next_batch_ids(collection, batch_size)
    if not ids:
        return BatchResult([], 0, 0)
    if after_read is not None:
        after_read(list(ids))
    result = collection.update_many({"_id": {"$gte": ids[0], "$lte": ids[-1]}, **NOT_CURRENT},
                                    UPGRADE_PIPELINE)
    return BatchResult(ids, result.modified_count, max(0, len(ids) - result.modified_count))


def migrate_batch_naive(collection: Any, batch_size: int, *,
                        after_read: Callable[[list[Any]], Any] | None = None) -> BatchResult:
    """The counter-example: read the batch's documents, upgrade them in the client, and replace each
    by ``_id`` alone. A report the application rewrote between the read and the replace gets the
    stale copy back: its write is lost, with no error. Ships every document twice (read, replace).
    Notebook 05 runs it to count what it loses; never use it. Introduced in notebook 05.
    """
    docs = list(find_in_id_order(collection, NOT_CURRENT, limit=batch_size))
    if not docs:
        return BatchResult([], 0, 0)
    ids = [d["_id"] for d in docs]
    if after_read is not None:
        after_read(list(ids))
    result = collection.bulk_write([ReplaceOne({"_id": d["_id"]}, upgrade_report(d)) for d in docs],
                                   ordered=False)
    return BatchResult(ids, result.modified_count, 0)


@dataclass
class MigrationResult:
    """What a background migration did: batches, reports upgraded, reports skipped because the
    application had upgraded them first, and the version 1 reports left (0 unless it stopped)."""

    batches: int = 0
    upgraded: int = 0
    skipped: int = 0
    left: int = 0


def migrate_in_batches(collection: Any, batch_size: int = 500, *,
                       after_read: Callable[[list[Any]], Any] | None = None,
                       between: Callable[[], Any] | None = None, naive: bool = False) -> MigrationResult:
    """Upgrade every version 1 report, ``batch_size`` at a time (:func:`migrate_batch`; with
    ``naive=True`` the counter-example :func:`migrate_batch_naive`), until no version 1 report is
    left, whatever the types of the ``_id`` values (each batch starts again from the first version 1
    report, so nothing is passed over). ``between`` runs after each batch (readers and writers keep
    working). Raises :class:`SchemaError`, naming the reports, if a batch upgrades none of the
    reports it found and finds them again. Introduced in notebook 05.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise SchemaError(f"batch_size={batch_size!r} must be a positive integer")
    step = migrate_batch_naive if naive else migrate_batch
    result = MigrationResult()
    stuck: list[Any] | None = None
    while True:
        batch = step(collection, batch_size, after_read=after_read)
        if not batch.ids:
            return result
        result.batches += 1
        result.upgraded += batch.upgraded
        result.skipped += batch.skipped
        if batch.upgraded == 0 and batch.ids == stuck:
            result.left = collection.count_documents(NOT_CURRENT)
            raise SchemaError(f"migrate_in_batches: {len(batch.ids)} version 1 report(s) from "
                              f"{batch.ids[0]!r} to {batch.ids[-1]!r} were found twice and not upgraded "
                              f"({result.left:,} version 1 reports left); check them by hand")
        stuck = batch.ids if batch.upgraded == 0 else None
        if between is not None:
            between()


def within_box(west: float, south: float, east: float, north: float, *,
               both_versions: bool = True) -> dict[str, Any]:
    """The filter "reports inside this box" while both versions are stored.

    Version 2: ``position`` ``$geoWithin`` the box as a GeoJSON polygon (served by a ``2dsphere``
    index on ``position``). Version 1 keeps ``lat``/``lon``, which no geo operator reads, so
    ``both_versions`` adds an ``$or`` branch with a range on each (served by a ``{lat: 1, lon: 1}``
    index). The polygon's west and east edges are meridians, its north and south edges are great-circle
    arcs, not parallels: near those edges the two branches can disagree by a few tens of metres.
    Introduced in notebook 05.
    """
    ring = [[west, south], [east, south], [east, north], [west, north], [west, south]]
    by_position = {"position": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [ring]}}}}
    if not both_versions:
        return by_position
    by_lat_lon = {**NOT_CURRENT, "lat": {"$gte": south, "$lte": north}, "lon": {"$gte": west, "$lte": east}}
    return {"$or": [by_position, by_lat_lon]}


def content_digest(documents: Iterable[Mapping[str, Any]]) -> str:
    """A SHA-256 of what the documents *say*, whatever their stored version: each document is read
    as version 2 (:func:`read_report`), its keys sorted at every level, and the documents taken in
    ``_id`` order. Two collections with the same digest hold the same reports. Introduced in notebook 05.
    """
    def canonical(value: Any) -> Any:
        if isinstance(value, Mapping):
            return SON(sorted((k, canonical(v)) for k, v in value.items()))
        if isinstance(value, list):
            return [canonical(v) for v in value]
        return value

    digest = hashlib.sha256()
    for doc in sorted((read_report(d) for d in documents), key=lambda d: bson.encode({"k": d["_id"]})):
        digest.update(bson.encode(canonical(doc)))
    return digest.hexdigest()
