"""Infer a collection's schema from a seeded sample, like Compass's schema view (notebook 05).

:func:`infer_schema` (or :func:`infer_documents`, for documents already in hand) reports, per field
path, how often the field is present, its BSON types and their shares, array lengths, an estimate of
its distinct values and a few example values; :func:`miss_rate` measures how often a sample of a
given size misses a rare field. :class:`SchemaError` (bad input) is defined here and shared by
:mod:`helpers.schema.validate` and :mod:`helpers.schema.migrate`. Its names are also imported from
:mod:`helpers.schema`, the lesson module.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import heapq
import json
import random
import re
import statistics
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Mapping

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

from ..plans import find_in_id_order

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
        self._add_hash(_hash_value(value, kind))

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


def _hash_bytes(data: bytes) -> int:
    """A 64-bit hash of BSON bytes, the same on every run and machine."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _hash_key(key: Any) -> int:
    """The hash of a value's BSON bytes (``{"v": value}``), from its :func:`_exact_key`."""
    return _hash_bytes(key if isinstance(key, bytes)
                       else bson.encode({"v": key[1]} if key[0] != "long" else {"v": Int64(key[1])}))


_PACK_I32 = struct.Struct("<i").pack
_PACK_DOUBLE = struct.Struct("<d").pack


def _hash_value(value: Any, kind: str) -> int:
    """``_hash_key(_exact_key(value, kind))``, the same number, with the BSON bytes of ``{"v": value}``
    written here for a str, an int32 and a float (exactly these types: a subclass, a bool or a long
    goes the general way) rather than by ``bson.encode``: a sample past ``EXACT_DISTINCT`` values
    hashes every value it sees (about a fifth of its time on the posts dataset)."""
    cls = type(value)
    if cls is str:
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: bson.encode's own error
            return _hash_key(_exact_key(value, kind))
        data = b"".join((_PACK_I32(len(raw) + 13), b"\x02v\x00", _PACK_I32(len(raw) + 1), raw, b"\x00\x00"))
    elif cls is int and kind == "int":
        data = b"".join((b"\x0c\x00\x00\x00\x10v\x00", _PACK_I32(value), b"\x00"))
    elif cls is float:  # every double, NaN and -0.0 too: struct packs the same 8 bytes bson.encode does
        data = b"".join((b"\x10\x00\x00\x00\x01v\x00", _PACK_DOUBLE(value), b"\x00"))
    else:
        return _hash_key(_exact_key(value, kind))
    return _hash_bytes(data)


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
