"""Infer, enforce and version a schema: a schema's life in MongoDB (notebook 05).

MongoDB does not require a schema, so a collection's schema is whatever its documents share. This
module measures it and then holds the application to it:

* **Infer.** :func:`infer_schema` reads a seeded sample of a collection (or all of it) and reports,
  per field path, how often the field is present, its BSON types and their shares, array lengths,
  an estimate of its distinct values and a few example values, like Compass's schema view.
  Paths use dots for embedded documents and ``[]`` for array elements: ``position.coordinates[]``.
  :func:`miss_rate` measures how often a sample of a given size misses a rare field.
* **Export and enforce.** :func:`to_json_schema` turns an inference into a ``$jsonSchema`` document
  for a collection validator (``collMod``/``create``); :func:`try_write` runs a write and reports the
  server's refusal (code 121 and its ``errInfo``); :func:`refusal_reasons` flattens ``errInfo``.
  :func:`schema_violations` checks a document against the same subset of ``$jsonSchema`` on the
  client, a labelled stand-in on an engine that cannot validate.
* **Version and migrate.** The schema versioning pattern on ADS-B reports: version 1 keeps
  ``lat``/``lon``; version 2 adds ``schemaVersion: 2`` and a GeoJSON ``position``.
  :func:`read_report` reads either version; :func:`write_lazy` upgrades a report when the
  application writes it; :func:`migrate_in_batches` upgrades the rest in the background, never
  overwriting a concurrent write; :func:`content_digest` proves nothing was lost;
  :func:`versioned_validator` accepts each version while the migration runs.

Bad input: ``sample`` must be a positive integer (or ``None`` for every document); an empty collection
gives an inference with ``sampled == 0`` and no fields, which :func:`to_json_schema` refuses to turn
into a validator (it would accept anything); a field seen with several types (say ``int`` and
``string``) is reported with each type's share and exported as a ``bsonType`` list, so the validator
accepts exactly the types seen (``conflicts()`` lists such fields).

One job per part, every name imported from here: ``infer`` (inference), ``validate`` (export,
enforce, check) and ``migrate`` (versions and migration); ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .infer import (  # noqa: F401 - re-exported: every public name imports from helpers.schema
    EXACT_DISTINCT,
    EXAMPLES,
    ID_CHUNK,
    INT32,
    KMV_K,
    MAX_NESTING,
    FieldStats,
    InferredSchema,
    MissRate,
    SchemaError,
    bson_type,
    infer_documents,
    infer_schema,
    miss_rate,
    percent,
    sample_ids,
)
from .migrate import (  # noqa: F401 - re-exported: every public name imports from helpers.schema
    CURRENT_VERSION,
    NOT_CURRENT,
    UPGRADE_PIPELINE,
    VERSION_FIELD,
    BatchResult,
    MigrationResult,
    content_digest,
    lazy_pipeline,
    migrate_batch,
    migrate_batch_naive,
    migrate_in_batches,
    read_report,
    upgrade_report,
    version_of,
    versioned_validator,
    within_box,
    write_lazy,
)
from .validate import (  # noqa: F401 - re-exported: every public name imports from helpers.schema
    WriteOutcome,
    count_valid,
    one_of_by,
    refusal_reasons,
    schema_violations,
    set_validator,
    to_json_schema,
    try_write,
    validation_rights,
    validator_of,
)

__all__ = [
    "SchemaError", "FieldStats", "InferredSchema", "MissRate", "WriteOutcome", "MigrationResult",
    "bson_type", "percent", "sample_ids", "infer_schema", "infer_documents", "miss_rate",
    "to_json_schema", "one_of_by", "versioned_validator", "set_validator", "validator_of", "validation_rights",
    "try_write", "refusal_reasons", "schema_violations", "count_valid",
    "VERSION_FIELD", "CURRENT_VERSION", "NOT_CURRENT", "version_of", "upgrade_report", "read_report",
    "UPGRADE_PIPELINE", "lazy_pipeline", "write_lazy", "BatchResult", "migrate_batch", "migrate_batch_naive",
    "migrate_in_batches", "within_box", "content_digest",
]
