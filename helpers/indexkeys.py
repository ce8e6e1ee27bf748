"""Index keys written: the part of a write's cost that grows with every index (introduced in notebook 01).

A write does more than store a document: every index on the collection gets its keys for it. An
insert adds one key per index (more for a multikey index: one per array element), a delete removes
them, and an update changes only the keys of the indexed fields it changed (MongoDB's slow-query log
and profiler report these as ``keysInserted`` and ``keysDeleted``). The workbook counts the same
thing the same way on every backend: it reads the documents a write may touch before and after it,
computes each one's keys in each of the collection's indexes, and counts the keys that appeared
plus those that went (:class:`KeySnapshot`). The figure follows from the documents and the index
definitions alone, so it is deterministic and equal on every engine; ``count_commands(index_keys=...)``
and ``benchmark(index_keys=...)`` take it (``helpers.counting``, ``helpers.measure``).

It is the **net** change over the block measured: a block that changes the same indexed value twice
(two ``$inc`` of an indexed counter), or deletes a document and inserts it again, counts what
changed between its start and its end, where the server wrote keys at each step. Measure one
operation per block, as a bill does. Keys compare as MongoDB's do: by value *and* type (``3`` to
``3.0`` rewrites the key, as the server's ``compareWithTypeBits`` does), while within one document
equal values of an array are one key.

Index types counted: ascending and descending (single field, compound, multikey, ``unique``,
``sparse``, partial with a ``partialFilterExpression``), ``hashed`` (floats truncated before hashing,
as the server does), and ``2dsphere`` on GeoJSON points (one key per point: a real server stores one
S2 cell per point). Any other index (``text``, wildcard, ``2dsphere`` on lines or polygons, an index
with a non-simple collation) makes the count unknown (``None``), never zero. A clustered
collection's ``_id`` (``clusteredIndex``, MongoDB 5.3+; ``listIndexes`` marks it ``clustered``) is no
separate index: the documents are stored in its order, so it writes no key of its own.
"""
from __future__ import annotations

from collections import Counter
from decimal import Decimal
from fractions import Fraction
from typing import Any, Mapping

import bson
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from bson.errors import InvalidDocument

__all__ = ["KeySnapshot", "docs_changed", "document_keys", "index_keys_written", "MAX_SNAPSHOT_DOCS"]

#: a snapshot reads at most this many documents: name the ones a write touches ({collection: filter})
MAX_SNAPSHOT_DOCS = 10_000

_MISSING = object()  # a missing field: indexed as null
_UNDEFINED = object()  # an empty array: indexed as undefined, a key of its own


def _values(doc: Any, path: list[str]) -> list[Any]:
    """The values a dotted path reaches in ``doc``, arrays expanded (MongoDB's multikey rule)."""
    if not path:
        if isinstance(doc, list):
            return list(doc) or [_UNDEFINED]
        return [doc]
    if isinstance(doc, list):
        out: list[Any] = []
        for element in doc:
            if isinstance(element, dict):
                out.extend(v for v in _values(element, path) if v is not _MISSING)
        if path[0].isdigit() and int(path[0]) < len(doc):
            out.extend(_values(doc[int(path[0])], path[1:]))
        return out or [_MISSING]
    if isinstance(doc, dict) and path[0] in doc:
        return _values(doc[path[0]], path[1:])
    return [_MISSING]


def _number(value: Any) -> str | None:
    """An exact, type-free spelling of a number (2**53 and 2**53 + 1 differ; 1, 1.0, Decimal128('1') agree)."""
    if isinstance(value, bool):
        return None
    if type(value).__name__ == "Decimal128":
        value = value.to_decimal()
    if isinstance(value, (int, float, Decimal)):
        try:
            return str(Fraction(value))
        except (ValueError, OverflowError):  # NaN, infinities
            return str(value)
    return None


def _frozen(value: Any, typed: bool = True) -> str:
    """A value as a string: ``typed`` (value and BSON type: how the server tells a key changed) or
    not (value only: how equal values of one array collapse into one key)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_frozen(v, typed)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_frozen(v, typed) for v in value) + "]"
    if value is _MISSING or value is None:
        return "null"
    if value is _UNDEFINED:
        return "undefined"
    number = _number(value)
    if number is not None:
        return f"{type(value).__name__}:{number}" if typed else f"number:{number}"
    return f"{type(value).__name__}:{value!r}"


_ENCODE = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)  # a native UUID (the mock's) encodes too


def _stored(doc: Mapping[str, Any]) -> bytes | str:
    """A document as a snapshot keeps it, to tell whether a write changed it: its BSON (field order,
    values and types: a byte that differs is a change), or, for what BSON cannot encode, its frozen
    spelling (the same document takes the same way in both snapshots)."""
    try:
        return bson.encode(doc, codec_options=_ENCODE)
    except (InvalidDocument, TypeError, ValueError, OverflowError):
        return _frozen(doc)


def _hashed(value: Any) -> str:
    """A hashed index's key: floats truncated to integers before hashing, as the server does."""
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        value = int(value)
    return "hash:" + _frozen(value, typed=False)


def _matches(doc: Mapping[str, Any], expression: Mapping[str, Any]) -> bool:
    from mongomock_ng.filtering import filter_applies  # the mock's matcher: the same rules on every backend

    return bool(filter_applies(dict(expression), dict(doc)))


def document_keys(doc: Mapping[str, Any], index: Mapping[str, Any]) -> Counter | None:
    """The keys ``doc`` has in ``index`` (one entry of ``list_indexes()``), as a multiset, or
    ``None`` for an index type this module does not count (see the module's docstring)."""
    key = list(dict(index["key"]).items())
    collation = index.get("collation")
    if collation and dict(collation).get("locale", "simple") != "simple":
        return None
    partial = index.get("partialFilterExpression")
    if partial is not None and not _matches(doc, partial):
        return Counter()
    per_field: list[list[tuple[str, str]]] = []  # per field: (value-only, typed) spellings
    for field, kind in key:
        values = _values(doc, field.split("."))
        if kind in (1, -1, 1.0, -1.0):
            per_field.append([(_frozen(v, typed=False), _frozen(v)) for v in values])
        elif kind == "hashed":
            per_field.append([(_hashed(v), _hashed(v)) for v in values])
        elif kind == "2dsphere":
            points = [v for v in values if v is not _MISSING]
            if any(not (isinstance(v, dict) and v.get("type") == "Point") for v in points):
                return None
            if not points and all(k != "2dsphere" or f == field for f, k in key):
                return Counter()  # a 2dsphere index (version 2 and later) is sparse on its geo field
            per_field.append([(_frozen(v, typed=False), _frozen(v)) for v in points] or [("null", "null")])
        else:
            return None
    if index.get("sparse") and all(v == [("null", "null")] for v in per_field):
        return Counter()
    keys: dict[tuple, tuple] = {(): ()}  # value-only key -> the typed key of its first occurrence
    for values in per_field:  # a compound multikey index: one key per combination, equal values once
        keys = {k + (plain,): t + (typed,) for k, t in keys.items() for plain, typed in values}
    return Counter(keys.values())


def _is_collection(target: Any) -> bool:
    # asked of the class: a database (pymongo's, the mock's) answers any attribute with a collection
    cls = type(target)
    return hasattr(cls, "find") and not hasattr(cls, "list_collection_names") \
        and callable(getattr(target, "list_indexes", None))


class KeySnapshot:
    """The index keys of some documents of some collections, taken before a write and again after it.

    ``targets`` is a collection, a sequence of collections (every document of each is read: at most
    :data:`MAX_SNAPSHOT_DOCS`), or a mapping ``{collection: filter}`` (the documents a write may
    touch; the second snapshot also reads again every document the first one found, so a write that
    moves a document out of the filter is still seen). ``count_commands`` takes its snapshots with
    counting paused, so they never add to the costs they serve.
    """

    def __init__(self, targets: Any) -> None:
        if isinstance(targets, Mapping):
            pairs = [(c, dict(f or {})) for c, f in targets.items()]
        elif _is_collection(targets):
            pairs = [(targets, {})]
        elif isinstance(targets, (list, tuple)):
            pairs = [(c, {}) for c in targets]
        else:
            pairs = [(targets, {})]
        bad = [type(c).__name__ for c, _ in pairs if not _is_collection(c)]
        if bad:
            raise TypeError(f"index_keys: pass a collection, a list of collections or {{collection: filter}}, "
                            f"not {', '.join(bad)}")
        if not pairs:
            raise ValueError("index_keys: name at least one collection whose index keys a write changes")
        self.targets = pairs

    def take(self, before: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """``{namespace: {"indexes": names, "keys": Counter, "ids": [...], "docs": {frozen id: the document's BSON},
        "whole": bool}}`` (``docs``: what ``$merge``/``$out`` counting compares; ``whole``:
        the snapshot read the collection without a filter), or ``None`` when an index cannot be counted.
        Given the ``before`` snapshot, also reads the documents it found."""
        out: dict[str, Any] = {}
        for coll, filter in self.targets:
            name = f"{coll.database.name}.{coll.name}"
            query = filter
            if filter and before and before.get(name, {}).get("ids"):
                query = {"$or": [filter, {"_id": {"$in": before[name]["ids"]}}]}
            indexes = list(coll.list_indexes())
            found: Counter = Counter()
            ids: list[Any] = []
            docs: dict[str, bytes | str] = {}
            for doc in coll.find(query, batch_size=1_000):
                ids.append(doc.get("_id"))
                doc_id = _frozen(doc.get("_id"))
                docs[doc_id] = _stored(doc)
                if len(ids) > MAX_SNAPSHOT_DOCS:
                    raise ValueError(f"index_keys: the snapshot of {coll.name} reads more than "
                                     f"{MAX_SNAPSHOT_DOCS:,} documents; give {{collection: filter}} naming "
                                     f"only the documents the write inserts, changes or deletes")
                for index in indexes:
                    if index.get("clustered"):  # a clustered collection's _id: the documents' own order, no key
                        continue
                    keys = document_keys(doc, index)
                    if keys is None:
                        return None
                    found.update({(index["name"], doc_id, k): n for k, n in keys.items()})
            out[name] = {"indexes": tuple(sorted(i["name"] for i in indexes)), "keys": found, "ids": ids,
                         "docs": docs, "whole": not filter}
        return out


def docs_changed(before: dict[str, Any] | None, after: dict[str, Any] | None, namespace: str) -> int | None:
    """Documents of ``namespace`` inserted, deleted or changed between two :meth:`KeySnapshot.take`
    results (what a ``$merge`` or ``$out`` wrote), or ``None`` unless both snapshots read it whole."""
    b, a = (before or {}).get(namespace), (after or {}).get(namespace)
    if b is None or a is None or not (b.get("whole") and a.get("whole")):
        return None
    old, new = b["docs"], a["docs"]
    return len(old.keys() ^ new.keys()) + sum(old[k] != new[k] for k in old.keys() & new.keys())


def index_keys_written(before: dict[str, Any] | None, after: dict[str, Any] | None) -> int | None:
    """Keys inserted plus keys deleted between two :meth:`KeySnapshot.take` results (``None`` when
    either holds an index this module cannot count). An index created or dropped in between is an
    error: its keys are not a write's."""
    if before is None or after is None:
        return None
    total = 0
    for name in set(before) | set(after):
        b, a = before.get(name), after.get(name)
        if b is None or a is None or b["indexes"] != a["indexes"]:
            raise ValueError(f"index_keys: the indexes of {name} changed inside the measured block; "
                             f"create them before it")
        total += sum((a["keys"] - b["keys"]).values()) + sum((b["keys"] - a["keys"]).values())
    return total
