"""Lesson module of notebooks/05_schema_lifecycle.ipynb (notebook 05): infer, enforce and version a schema.

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
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import heapq
import itertools
import json
import random
import re
import statistics
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping

import bson
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.son import SON
from bson.timestamp import Timestamp
from pymongo import ReplaceOne
from pymongo.errors import BulkWriteError, OperationFailure

from .plans import find_in_id_order

__all__ = [
    "SchemaError", "FieldStats", "InferredSchema", "MissRate", "WriteOutcome", "MigrationResult",
    "bson_type", "percent", "sample_ids", "infer_schema", "infer_documents", "miss_rate",
    "to_json_schema", "one_of_by", "versioned_validator", "set_validator", "validator_of", "validation_rights",
    "try_write", "refusal_reasons", "schema_violations", "count_valid",
    "VERSION_FIELD", "CURRENT_VERSION", "NOT_CURRENT", "version_of", "upgrade_report", "read_report",
    "UPGRADE_PIPELINE", "lazy_pipeline", "write_lazy", "BatchResult", "migrate_batch", "migrate_batch_naive",
    "migrate_in_batches", "within_box", "content_digest",
]

ID_CHUNK = 100  # _ids per $in query when fetching a sample: each query stays small on every engine
EXAMPLES = 3  # example values kept per field
KMV_K = 1024  # hashes kept per field by the distinct-value estimator
EXACT_DISTINCT = 16_384  # distinct values counted exactly per field, before the estimator takes over
MAX_NESTING = 100  # MongoDB stores at most 100 levels of nesting (each embedded document or array is one)
INT32 = 2 ** 31


class SchemaError(ValueError):
    """Bad input to an inference or an export; the message says what to pass instead."""


# ------------------------------------------------------------------------------------------
# BSON types
# ------------------------------------------------------------------------------------------
def bson_type(value: Any) -> str:
    """The ``$type`` alias a value is stored as (``"int"``, ``"double"``, ``"string"``, ...).

    A Python ``int`` is stored as ``int`` when it fits in 32 bits, else ``long`` (pymongo's rule;
    an ``Int64`` is always ``long``). Introduced in notebook 05.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: True is an int in Python
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if -INT32 <= value < INT32 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, _dt.datetime):
        return "date"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, (Decimal128, Decimal)):
        return "decimal"
    if isinstance(value, (bytes, Binary)):
        return "binData"
    if isinstance(value, (Regex, re.Pattern)):
        return "regex"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, Code):
        return "javascript"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    raise SchemaError(f"bson_type: a {type(value).__name__} cannot be stored in MongoDB")


# ------------------------------------------------------------------------------------------
# Inference
# ------------------------------------------------------------------------------------------
class _Distinct:
    """Distinct values: counted exactly up to ``EXACT_DISTINCT``, then estimated by K minimum values.

    Each value is hashed (its BSON bytes, so 1 and 1.0 and "1" are three values); the ``k``
    smallest hashes of ``n`` distinct values are spread evenly over [0, 1), so if the k-th smallest
    is ``h``, about ``(k - 1) / h`` values were seen (within about 1/sqrt(k), some 3% here).

    Up to ``EXACT_DISTINCT`` distinct values nothing is hashed: the values themselves are kept
    (keyed by their BSON type, so 1 and 1.0 stay two) and counted exactly. The first value past
    that hashes the kept ones, and from then on every value is hashed: the estimate is the same as
    hashing every value from the start.
    """

    __slots__ = ("exact", "kept", "heap", "saturated")

    def __init__(self) -> None:
        self.exact: set[Any] | None = set()  # (kind, value) keys while at most EXACT_DISTINCT values
        self.kept: set[int] = set()
        self.heap: list[int] = []  # the kept hashes, negated: heap[0] is minus the largest
        self.saturated = False

    def add(self, value: Any, kind: str) -> None:
        exact = self.exact
        if exact is not None:
            key = _exact_key(value, kind)
            if key in exact:
                return
            if len(exact) < EXACT_DISTINCT:
                exact.add(key)
                return
            self.exact = None  # past EXACT_DISTINCT distinct values: hash the kept ones, then this one
            for k in exact:
                self._add_hash(_hash_key(k))
        self._add_hash(_hash_key(_exact_key(value, kind)))

    def _add_hash(self, h: int) -> None:
        if h in self.kept:
            return
        if len(self.heap) < KMV_K:
            self.kept.add(h)
            heapq.heappush(self.heap, -h)
            return
        self.saturated = True
        if h < -self.heap[0]:
            self.kept.discard(-heapq.heapreplace(self.heap, -h))
            self.kept.add(h)

    def estimate(self) -> tuple[int, bool]:
        if self.exact is not None:
            return len(self.exact), True
        if not self.saturated:
            return len(self.heap), True
        kth = -self.heap[0] / 2 ** 64
        return round((KMV_K - 1) / kth), False


#: kinds whose Python values compare as their BSON bytes do (a value of another kind, or a NaN, is
#: keyed by its BSON bytes)
_PLAIN_KINDS = frozenset(("string", "int", "long", "double", "bool", "null", "objectId"))


def _exact_key(value: Any, kind: str) -> Any:
    if kind in _PLAIN_KINDS and value == value and (value or kind != "double"):  # NaN, -0.0: by their bytes
        if kind == "long":
            value = int(value)  # an Int64 and a large int are the same BSON long
        return (kind, value)
    return bson.encode({"v": value})


def _hash_key(key: Any) -> int:
    """A 64-bit hash of a value's BSON bytes, the same on every run and machine."""
    data = key if isinstance(key, bytes) else bson.encode({"v": key[1]} if key[0] != "long" else {"v": Int64(key[1])})
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


#: the BSON type of a value of exactly these Python types (subclasses go through ``bson_type``)
_KIND_OF_TYPE: dict[type, str] = {str: "string", float: "double", bool: "bool", type(None): "null", dict: "object",
                                  SON: "object", list: "array", tuple: "array", _dt.datetime: "date",
                                  ObjectId: "objectId", Int64: "long"}


class _Node:
    """Everything seen at one path: types, array lengths, distinct values, children."""

    __slots__ = ("count", "docs", "_last_doc", "types", "lengths", "distinct", "examples", "children", "items")

    def __init__(self) -> None:
        self.count = 0  # values seen (each array element once, at the element's path)
        self.docs = 0  # sampled documents with at least one value here
        self._last_doc = -1
        self.types: dict[str, int] = {}
        self.lengths: list[int] = []
        self.distinct = _Distinct()
        self.examples: list[Any] = []
        self.children: dict[str, _Node] = {}  # keys of the object values
        self.items: _Node | None = None  # elements of the array values

    def add(self, value: Any, doc_index: int, depth: int = 0) -> None:
        if depth > MAX_NESTING:
            raise SchemaError(f"infer_documents: document {doc_index} nests more than {MAX_NESTING} levels "
                              f"(embedded documents and arrays); MongoDB stores at most {MAX_NESTING}")
        self.count += 1
        if doc_index != self._last_doc:
            self._last_doc = doc_index
            self.docs += 1
        cls = type(value)
        kind = _KIND_OF_TYPE.get(cls)
        if kind is None:
            kind = ("int" if -INT32 <= value < INT32 else "long") if cls is int else bson_type(value)
        types = self.types
        types[kind] = types.get(kind, 0) + 1
        if kind == "object":
            children = self.children
            for key, sub in value.items():
                child = children.get(key)
                if child is None:
                    child = children[key] = _Node()
                sub_kind = _KIND_OF_TYPE.get(type(sub))
                if sub_kind is None or sub_kind == "object" or sub_kind == "array":
                    child.add(sub, doc_index, depth + 1)
                else:  # the hot path, inlined: a scalar field of a document (the same steps as below)
                    child.count += 1
                    if doc_index != child._last_doc:
                        child._last_doc = doc_index
                        child.docs += 1
                    sub_types = child.types
                    sub_types[sub_kind] = sub_types.get(sub_kind, 0) + 1
                    child.distinct.add(sub, sub_kind)
                    examples = child.examples
                    if len(examples) < EXAMPLES and sub not in examples:
                        examples.append(sub)
        elif kind == "array":
            self.lengths.append(len(value))
            items = self.items
            if items is None:
                items = self.items = _Node()
            for element in value:
                items.add(element, doc_index, depth + 1)
        else:
            self.distinct.add(value, kind)
            examples = self.examples
            if len(examples) < EXAMPLES and value not in examples:
                examples.append(value)


@dataclass(frozen=True)
class FieldStats:
    """What a sample shows about one field path (``a.b`` inside documents, ``a[]`` for array elements).

    ``presence`` is the share of sampled documents holding the path at least once; ``required``
    says the field is in *every* sampled instance of its parent document (what ``to_json_schema``
    exports as ``required``). ``types`` counts values per BSON type, ``type_shares`` divides by
    ``count``. ``array_lengths`` is (min, median, max) when the field holds arrays. ``distinct`` is
    exact when ``distinct_exact`` (at most ``EXACT_DISTINCT`` = 16,384 values), else an estimate; documents and arrays
    are not counted. Introduced in notebook 05.
    """

    path: str
    count: int
    documents: int
    presence: float
    required: bool
    types: dict[str, int]
    type_shares: dict[str, float]
    array_lengths: tuple[int, float, int] | None
    distinct: int | None
    distinct_exact: bool
    examples: tuple[Any, ...]

    @property
    def conflict(self) -> bool:
        """More than one type, ignoring the int/long/double mix of numbers (a real conflict: int and string)."""
        kinds = {"number" if t in ("int", "long", "double", "decimal") else t for t in self.types}
        return len(kinds) > 1

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for tests and tables."""
        return {"path": self.path, "count": self.count, "documents": self.documents,
                "presence": self.presence, "required": self.required, "types": dict(self.types),
                "type_shares": dict(self.type_shares), "array_lengths": self.array_lengths,
                "distinct": self.distinct, "distinct_exact": self.distinct_exact,
                "examples": list(self.examples)}


@dataclass
class InferredSchema:
    """The result of :func:`infer_schema`: the fields of a sample, by path, in first-seen order.

    ``sampled`` documents were read out of ``total`` matching the filter; ``how`` says how they
    were picked. Introduced in notebook 05.
    """

    source: str
    sampled: int
    total: int
    how: str
    fields: dict[str, FieldStats]
    _root: _Node = field(repr=False, default_factory=_Node)

    def __getitem__(self, path: str) -> FieldStats:
        if path not in self.fields:
            raise KeyError(f"no field {path!r} in the sample of {self.source} "
                           f"({self.sampled} documents); fields: {', '.join(self.fields)}")
        return self.fields[path]

    def __contains__(self, path: object) -> bool:
        return path in self.fields

    def paths(self) -> list[str]:
        return list(self.fields)

    def conflicts(self) -> list[str]:
        """Paths whose values have more than one kind of type (numbers count as one kind)."""
        return [p for p, f in self.fields.items() if f.conflict]

    def as_dict(self) -> dict[str, Any]:
        """A plain structure a test can compare: source, sizes, and each field's statistics."""
        return {"source": self.source, "sampled": self.sampled, "total": self.total, "how": self.how,
                "fields": {p: f.as_dict() for p, f in self.fields.items()}}

    def table(self) -> Any:
        """One row per field path (a pandas DataFrame), like Compass's schema view."""
        import pandas as pd

        rows = []
        for f in self.fields.values():
            lengths = f.array_lengths
            rows.append({
                "field": f.path,
                "present": percent(f.presence),
                "types": ", ".join(f"{t} {percent(s)}" for t, s in f.type_shares.items()),
                "array lengths min/median/max": "" if lengths is None else
                f"{lengths[0]}/{lengths[1]:g}/{lengths[2]}",
                "distinct": "" if f.distinct is None else
                (f"{f.distinct:,}" if f.distinct_exact else f"~{f.distinct:,}"),
                "examples": ", ".join(_short(v) for v in f.examples),
            })
        return pd.DataFrame(rows).set_index("field") if rows else pd.DataFrame(rows)


def percent(share: float) -> str:
    """A share as a percentage that never rounds a partial share to 100% or 0% (99.97% is ">99.9%")."""
    text = f"{share:.1%}"
    if share < 1 and text == "100.0%":
        return ">99.9%"
    if share > 0 and text == "0.0%":
        return "<0.1%"
    return text


def _short(value: Any, width: int = 24) -> str:
    text = repr(value) if not isinstance(value, _dt.datetime) else value.isoformat(sep=" ")
    return text if len(text) <= width else text[:width - 3] + "..."


def _segment(key: str) -> str:
    """A key as one segment of a path: quoted (JSON) when it holds ``.``, ``[``, ``]`` or ``"`` or is
    empty, so a real ``"a.b"`` key and the ``b`` inside ``a`` get two different paths."""
    return json.dumps(key) if not key or any(c in key for c in '.[]"') else key


def _flatten(node: _Node, sampled: int, path: str, out: dict[str, FieldStats],
             parent_objects: int | None) -> None:
    for key, child in node.children.items():
        _emit(child, sampled, f"{path}.{_segment(key)}" if path else _segment(key), out,
              required=parent_objects is not None and child.count == parent_objects)
    if node.items is not None and node.items.count:  # arrays that were always empty have no elements to show
        _emit(node.items, sampled, f"{path}[]", out, required=False)


def _emit(node: _Node, sampled: int, path: str, out: dict[str, FieldStats], required: bool) -> None:
    types = dict(sorted(node.types.items(), key=lambda kv: (-kv[1], kv[0])))
    lengths = None
    if node.lengths:
        lengths = (min(node.lengths), float(statistics.median(node.lengths)), max(node.lengths))
    scalars = node.count - node.types.get("object", 0) - node.types.get("array", 0)
    distinct, exact = node.distinct.estimate() if scalars else (None, True)
    out[path] = FieldStats(path=path, count=node.count, documents=node.docs,
                           presence=node.docs / sampled if sampled else 0.0, required=required,
                           types=types, type_shares={t: n / node.count for t, n in types.items()},
                           array_lengths=lengths, distinct=distinct, distinct_exact=exact,
                           examples=tuple(node.examples))
    _flatten(node, sampled, path, out, node.types.get("object", 0) or None)


def infer_documents(documents: Iterable[Mapping[str, Any]], *, source: str = "documents",
                    total: int | None = None, how: str = "given") -> InferredSchema:
    """Infer the schema of documents already in hand (the pure part of :func:`infer_schema`).

    Introduced in notebook 05.
    """
    root = _Node()
    sampled = 0
    for i, doc in enumerate(documents):
        if not isinstance(doc, Mapping):
            raise SchemaError(f"infer_documents: item {i} is a {type(doc).__name__}, not a document (dict)")
        root.add(doc, i)
        sampled += 1
    out: dict[str, FieldStats] = {}
    _flatten(root, sampled, "", out, sampled or None)
    return InferredSchema(source=source, sampled=sampled, total=sampled if total is None else total,
                          how=how, fields=out, _root=root)


def _check_sample(sample: Any) -> int | None:
    if sample is None:
        return None
    if isinstance(sample, bool) or not isinstance(sample, int):
        raise SchemaError(f"sample={sample!r} must be a whole number of documents (e.g. 1000), "
                          f"or None to read every document")
    if sample <= 0:
        raise SchemaError(f"sample={sample} must be at least 1 document (or None to read every "
                          f"document): a sample of {sample} shows no fields at all")
    return sample


def sample_ids(ids: list[Any], sample: int, seed: int) -> list[Any]:
    """``sample`` of ``ids`` picked at random with ``seed`` (all of them if there are fewer), sorted.

    The same ids and seed give the same picks on every run and engine. Introduced in notebook 05.
    """
    sample = _check_sample(sample) or len(ids)
    if sample >= len(ids):
        return list(ids)
    chosen = random.Random(seed).sample(range(len(ids)), sample)
    return [ids[i] for i in sorted(chosen)]


def _id_key(value: Any) -> Any:
    """A hashable key of an ``_id`` (its BSON bytes, so 1 and 1.0 stay two, as the server keeps them)."""
    return bson.encode({"v": value})


def infer_schema(collection: Any, sample: int | None = 1000, *, seed: int | None = 7,
                 filter: Mapping[str, Any] | None = None) -> InferredSchema:  # noqa: A002
    """Infer ``collection``'s schema from a sample of its documents.

    ``sample``: how many documents (a positive integer), or ``None`` for every document (one
    query). With a ``seed`` (default 7) the sample is reproducible: the matching ``_id`` values are
    read in order (one query returning only ``_id``), ``sample`` of them are picked with
    ``random.Random(seed)``, and those documents are fetched, ``ID_CHUNK`` ids per query. With
    ``seed=None`` the server picks them (a ``$sample`` stage, as Compass does): a new sample on
    each run, each document counted once (in case the stage returns one twice). ``filter``
    restricts the documents (one shape of a polymorphic collection, say).
    An empty collection (or filter) gives ``sampled == 0`` and no fields. Introduced in notebook 05.
    """
    sample = _check_sample(sample)
    query = dict(filter or {})
    name = getattr(collection, "name", "collection")
    # in _id order, along the _id index when there is no filter (helpers.plans.find_in_id_order)
    if sample is None:
        docs = list(find_in_id_order(collection, query))
        return infer_documents(docs, source=name, total=len(docs), how="every document")
    if seed is None:
        total = collection.count_documents(query)
        # $sample first (no $match before it when there is no filter): on a real MongoDB it then reads
        # only the sample through a pseudo-random cursor when sample < 5% of more than 100 documents
        pipeline = ([{"$match": query}] if query else []) + [{"$sample": {"size": sample}}]
        # the pseudo-random cursor may return a document more than once: keep each _id once
        docs = list({_id_key(d["_id"]): d for d in collection.aggregate(pipeline)}.values())
        return infer_documents(docs, source=name, total=total, how=f"$sample of {sample} (server-random)")
    ids = [d["_id"] for d in find_in_id_order(collection, query, {"_id": 1})]
    picked = sample_ids(ids, sample, seed)
    docs: list[Any] = []
    for start in range(0, len(picked), ID_CHUNK):
        chunk = picked[start:start + ID_CHUNK]
        docs += collection.find({"_id": {"$in": chunk}}).sort("_id", 1)
    return infer_documents(docs, source=name, total=len(ids),
                           how=f"seeded sample of {min(sample, len(ids))} (seed {seed})")


@dataclass(frozen=True)
class MissRate:
    """How often a seeded sample of ``sample`` documents missed ``field``, over ``trials`` seeds,
    beside the probability computed from the counts (the hypergeometric distribution)."""

    field: str
    holders: int  # documents that have the field
    total: int
    sample: int
    trials: int
    misses: int

    @property
    def measured(self) -> float:
        return self.misses / self.trials

    @property
    def expected(self) -> float:
        """P(no holder among ``sample`` documents drawn without replacement from ``total``)."""
        p = 1.0
        for i in range(min(self.sample, self.total)):
            p *= max(0, self.total - self.holders - i) / (self.total - i)
        return p


def miss_rate(collection: Any, field_path: str, sample: int, *, trials: int = 200, seed: int = 0,
              filter: Mapping[str, Any] | None = None) -> MissRate:  # noqa: A002
    """Run ``trials`` seeded samples (seeds ``seed``, ``seed + 1``, ...) of ``sample`` documents,
    picked exactly as :func:`infer_schema` picks them, and count those with no document holding
    ``field_path``. Two queries in all (the ``_id`` values, and those of the holders), whatever the
    number of trials. Introduced in notebook 05.
    """
    sample = _check_sample(sample)
    if sample is None or not isinstance(trials, int) or trials < 1:
        raise SchemaError("miss_rate: give a sample size >= 1 and trials >= 1")
    query = dict(filter or {})
    ids = [d["_id"] for d in find_in_id_order(collection, query, {"_id": 1})]  # as infer_schema reads them
    holders = {d["_id"] for d in collection.find({**query, field_path: {"$exists": True}}, {"_id": 1})}
    misses = sum(1 for t in range(trials) if holders.isdisjoint(sample_ids(ids, sample, seed + t)))
    return MissRate(field=field_path, holders=len(holders), total=len(ids), sample=sample,
                    trials=trials, misses=misses)


# ------------------------------------------------------------------------------------------
# Export: $jsonSchema
# ------------------------------------------------------------------------------------------
def _node_schema(node: _Node, required: bool, additional: bool, exact: bool) -> dict[str, Any]:
    kinds = sorted(node.types) if exact else sorted({"number" if t in _NUMBERS else t for t in node.types})
    schema: dict[str, Any] = {"bsonType": kinds[0] if len(kinds) == 1 else kinds}
    if "object" in node.types:
        objects = node.types["object"]
        if node.children:
            schema["properties"] = {k: _node_schema(c, required, additional, exact)
                                    for k, c in node.children.items()}
        must = [k for k, c in node.children.items() if c.count == objects]
        if required and must:
            schema["required"] = must
        if not additional:
            schema["additionalProperties"] = False
    if "array" in node.types and node.items is not None and node.items.count:
        schema["items"] = _node_schema(node.items, required, additional, exact)
    return schema


def to_json_schema(inferred: InferredSchema, *, required: bool = True,
                   additional_properties: bool = True, exact_types: bool = False) -> dict[str, Any]:
    """A ``$jsonSchema`` document accepting every document of the sample ``inferred`` came from.

    Each field gets the ``bsonType`` (or list of types) seen, a numeric one as ``"number"`` (any of
    ``int``, ``long``, ``double``, ``decimal``: an application that writes ``36000`` for a field
    stored as ``36000.0`` sends an ``int``); ``exact_types=True`` keeps the exact numeric types
    seen. Embedded documents get their
    ``properties``; arrays get ``items`` (the types of all their elements). With ``required``, a
    field present in every sampled instance of its parent is ``required`` (so a field the sample
    happened to always see is required even if unsampled documents lack it: check the validator
    against the whole collection before enforcing it). ``additional_properties=False`` also refuses
    fields the sample never saw. Use it as ``{"$jsonSchema": to_json_schema(inferred)}``.
    Raises :class:`SchemaError` for an inference of no documents. Introduced in notebook 05.
    """
    if inferred.sampled == 0:
        raise SchemaError(f"to_json_schema: the inference of {inferred.source} saw no documents "
                          f"(an empty collection or filter), so it knows no fields: a validator "
                          f"from it would accept anything. Load data first or widen the filter.")
    return _node_schema(inferred._root, required, additional_properties, exact_types)


def one_of_by(field_name: str, schemas: Mapping[Any, Mapping[str, Any]], *,
              absent: Any = None) -> dict[str, Any]:
    """``{"oneOf": [...]}`` with one branch per value of a discriminating field (``recordType``,
    ``schemaVersion``): each branch is its schema with ``field_name`` pinned to its value (``enum``).
    The branch of ``absent`` also accepts documents without the field (version 1 before versioning
    existed); every other branch requires it. Introduced in notebook 05.
    """
    branches = []
    for value, schema in schemas.items():
        branch = {**schema, "properties": {**schema.get("properties", {}), field_name: {"enum": [value]}}}
        must = [k for k in schema.get("required", []) if k != field_name]
        if value != absent or absent is None:
            must.append(field_name)
        if must:
            branch["required"] = must
        else:
            branch.pop("required", None)
        branches.append(branch)
    return {"oneOf": branches}


def versioned_validator(schemas: Mapping[int, Mapping[str, Any]], *, field_name: str | None = None,
                        unversioned: int = 1) -> dict[str, Any]:
    """The validator for a migration in progress: exactly one version's schema must match.

    Documents without ``schemaVersion`` are version ``unversioned``. Introduced in notebook 05.
    """
    return one_of_by(field_name or VERSION_FIELD, schemas, absent=unversioned)


# ------------------------------------------------------------------------------------------
# Enforce: validators, refusals
# ------------------------------------------------------------------------------------------
def set_validator(db: Any, name: str, json_schema: Mapping[str, Any] | None, *, level: str = "strict",
                  action: str = "error") -> dict[str, Any]:
    """Set (``collMod``) a collection's validator, ``validationLevel`` and ``validationAction``.

    ``json_schema=None`` removes the validator (``validator: {}``). Unknown levels and actions are
    refused here, before the command is sent (an engine may accept what MongoDB refuses). So is a
    collection the workbook did not create, and its own registry (``helpers.safety``): the workbook
    changes only what it made. Returns the collection's options as the server now reports them
    (``listCollections``). Introduced in notebook 05.
    """
    if level not in ("off", "strict", "moderate"):
        raise SchemaError(f"level={level!r}: use 'strict' (the default), 'moderate' or 'off'")
    if action not in ("error", "warn", "errorAndLog"):
        raise SchemaError(f"action={action!r}: use 'error' (the default), 'warn', or 'errorAndLog' "
                          f"(MongoDB 8.1 and later)")
    from .safety import REGISTRY, ForeignCollectionError, is_workbook_collection

    if name == REGISTRY:
        raise SchemaError(f"set_validator: {REGISTRY!r} is the workbook's own registry; a validator there "
                          f"would break every later workbook_collection(); pick one of your collections")
    if not is_workbook_collection(db, name):
        raise ForeignCollectionError(
            f"set_validator: the collection {name!r} in database {db.name!r} was not created by this "
            f"workbook, so the workbook will not change its validator. Create it with "
            f"helpers.workbook_collection(db, {name!r}) first, or run collMod yourself if it is yours.")
    validator = {} if json_schema is None else {"$jsonSchema": dict(json_schema)}
    db.command("collMod", name, validator=validator, validationLevel=level, validationAction=action)
    return validator_of(db, name)


def validation_rights(db: Any) -> dict[str, bool]:
    """Whether this database user may change a validator (``collMod``) and bypass one
    (``bypassDocumentValidation``), tried on a scratch collection of the workbook's, then dropped.

    On a shared server a student with only the ``readWrite`` role has neither (``dbAdmin`` has both):
    the server refuses with code 13 (Unauthorized). Only meaningful where validators are enforced.
    Introduced in notebook 05.
    """
    from .safety import workbook_collection

    name = "schema_rights_probe"
    workbook_collection(db, name)
    rights = {"collMod": False, "bypassDocumentValidation": False}
    try:
        db.drop_collection(name)
        db.create_collection(name, validator={"$jsonSchema": {"required": ["a"]}})
        try:
            db.command("collMod", name, validationLevel="strict")
            rights["collMod"] = True
        except OperationFailure:
            pass
        try:
            db[name].insert_one({"b": 1}, bypass_document_validation=True)
            rights["bypassDocumentValidation"] = True
        except OperationFailure:
            pass
    finally:
        db.drop_collection(name)
    return rights


def validator_of(db: Any, name: str) -> dict[str, Any]:
    """The collection's validation options as the server reports them (``listCollections``)."""
    for info in db.list_collections(filter={"name": name}):
        options = info.get("options", {})
        return {k: options[k] for k in ("validator", "validationLevel", "validationAction") if k in options}
    raise SchemaError(f"no collection {name!r} in database {db.name!r}")


@dataclass(frozen=True)
class WriteOutcome:
    """A write's fate: accepted, or refused with the server's code and reasons."""

    accepted: bool
    code: int | None = None
    reasons: tuple[str, ...] = ()
    error: str | None = None  # the error class, for anything other than a refusal

    def __str__(self) -> str:
        if self.accepted:
            return "accepted"
        head = f"refused, code {self.code}" if self.code is not None else f"failed: {self.error}"
        return head + "".join(f"\n    {r}" for r in self.reasons)


def try_write(write: Callable[[], Any]) -> WriteOutcome:
    """Run ``write`` and report whether the server accepted it; a refusal (code 121, "Document
    failed validation") carries its reasons, flattened from ``errInfo``. Introduced in notebook 05.
    """
    try:
        write()
        return WriteOutcome(True)
    except BulkWriteError as e:
        errors = e.details.get("writeErrors", [])
        first = errors[0] if errors else {}
        return WriteOutcome(False, first.get("code"), tuple(refusal_reasons(first.get("errInfo"))))
    except OperationFailure as e:
        info = (e.details or {}).get("errInfo")
        return WriteOutcome(False, e.code, tuple(refusal_reasons(info)))
    except NotImplementedError as e:
        return WriteOutcome(False, None, (), error=f"NotImplementedError: {e}")


def refusal_reasons(err_info: Mapping[str, Any] | None) -> list[str]:
    """``errInfo`` of a validation failure as readable lines: ``"lat: maximum 90, got 123.4"``.

    The server's ``errInfo.details`` nests one entry per failed rule; this walks it and names the
    field path of each failure. Introduced in notebook 05.
    """
    out: list[str] = []

    def walk(items: Any, path: str) -> None:
        for item in items or []:
            op = item.get("operatorName", "?")
            if op == "properties":
                for prop in item.get("propertiesNotSatisfied", []):
                    name = prop.get("propertyName", "?")
                    walk(prop.get("details"), f"{path}.{name}" if path else name)
            elif op == "required":
                out.append(f"{path or '(document)'}: missing required {', '.join(item.get('missingProperties', []))}")
            elif op == "items":
                walk(item.get("details"), f"{path}[{item.get('itemIndex', '?')}]")
            elif op in ("oneOf", "anyOf", "allOf"):
                branches = item.get("schemasNotSatisfied", [])
                if not branches and op == "oneOf":
                    out.append(f"{path or '(document)'}: oneOf: matches more than one schema "
                               f"({item.get('matchingSchemaIndexes', '?')})")
                for b in branches:
                    walk(b.get("details"), path + f"<{op} {b.get('index', '?')}>")
            elif op == "additionalProperties":
                out.append(f"{path or '(document)'}: fields not allowed: "
                           f"{', '.join(item.get('additionalProperties', []))}")
            else:
                spec = item.get("specifiedAs", {})
                got = item.get("consideredValue", item.get("consideredType", ""))
                rule = ", ".join(f"{k} {v}" for k, v in spec.items()) if spec else op
                out.append(f"{path or '(document)'}: {rule}, got {got!r}"
                           + (f" ({item['consideredType']})" if "consideredType" in item and
                              "consideredValue" in item else ""))

    details = (err_info or {}).get("details", {})
    walk([details] if details.get("operatorName") != "$jsonSchema" else details.get("schemaRulesNotSatisfied"), "")
    return out


# ------------------------------------------------------------------------------------------
# The same $jsonSchema subset, checked on the client (a labelled stand-in for engines that cannot)
# ------------------------------------------------------------------------------------------
_NUMBERS = ("int", "long", "double", "decimal")
_KEYWORDS = {"bsonType", "required", "properties", "additionalProperties", "items", "minimum",
             "maximum", "enum", "oneOf", "anyOf", "description", "title"}


def _type_ok(value: Any, wanted: Any) -> bool:
    kinds = [wanted] if isinstance(wanted, str) else list(wanted)
    actual = bson_type(value)
    return actual in kinds or ("number" in kinds and actual in _NUMBERS)


def _equal(a: Any, b: Any) -> bool:
    """BSON equality for enum: numbers compare by value (1 == 1.0), a bool is not a number."""
    ta, tb = bson_type(a), bson_type(b)
    if ta in _NUMBERS and tb in _NUMBERS:
        return float(a) == float(b)
    return ta == tb and a == b


def schema_violations(doc: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Why ``doc`` fails ``schema`` (empty list: it passes), for the ``$jsonSchema`` subset this
    module writes: ``bsonType``, ``required``, ``properties``, ``additionalProperties`` (boolean),
    ``items`` (one schema), ``minimum``, ``maximum``, ``enum``, ``oneOf``, ``anyOf``.

    A client-side stand-in, labelled as such, for an engine that does not validate; a real server's
    verdict is the reference (the tests compare the two on SecantusDB). Raises :class:`SchemaError`
    for any other keyword rather than guess. Introduced in notebook 05.
    """
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise SchemaError(f"schema_violations: keyword(s) {sorted(unknown)} not supported client-side; "
                          f"validate on a server that enforces $jsonSchema")
    where = path or "(document)"
    out: list[str] = []
    if "bsonType" in schema and not _type_ok(doc, schema["bsonType"]):
        return [f"{where}: bsonType {schema['bsonType']}, got {doc!r} ({bson_type(doc)})"]
    if "enum" in schema and not any(_equal(doc, v) for v in schema["enum"]):
        out.append(f"{where}: enum {schema['enum']}, got {doc!r}")
    if bson_type(doc) in _NUMBERS:
        if "minimum" in schema and doc < schema["minimum"]:
            out.append(f"{where}: minimum {schema['minimum']}, got {doc!r}")
        if "maximum" in schema and doc > schema["maximum"]:
            out.append(f"{where}: maximum {schema['maximum']}, got {doc!r}")
    if isinstance(doc, Mapping):
        missing = [k for k in schema.get("required", []) if k not in doc]
        if missing:
            out.append(f"{where}: missing required {', '.join(missing)}")
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key in doc:
                out += schema_violations(doc[key], sub, f"{path}.{key}" if path else key)
        if schema.get("additionalProperties") is False:
            extra = [k for k in doc if k not in props]
            if extra:
                out.append(f"{where}: fields not allowed: {', '.join(extra)}")
    if isinstance(doc, (list, tuple)) and isinstance(schema.get("items"), Mapping):
        for i, element in enumerate(doc):
            out += schema_violations(element, schema["items"], f"{path}[{i}]")
    for op in ("oneOf", "anyOf"):
        if op in schema:
            results = [schema_violations(doc, branch, path) for branch in schema[op]]
            passing = sum(1 for r in results if not r)
            if op == "anyOf" and passing == 0 or op == "oneOf" and passing != 1:
                out.append(f"{where}: {op}: {passing} of {len(results)} schemas match")
    return out


def count_valid(collection: Any, json_schema: Mapping[str, Any], *, server: bool) -> int:
    """How many documents of ``collection`` satisfy ``json_schema``: on the server with the
    ``$jsonSchema`` query operator (``server=True``), else checked client-side with
    :func:`schema_violations` (every document is read). Introduced in notebook 05.
    """
    if server:
        return collection.count_documents({"$jsonSchema": dict(json_schema)})
    return sum(1 for d in collection.find() if not schema_violations(d, json_schema))


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
