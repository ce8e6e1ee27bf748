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

Index types counted: ascending and descending (single field, compound, multikey, ``unique``,
``sparse``, partial with a ``partialFilterExpression``), ``hashed``, and ``2dsphere`` on GeoJSON
points (one key per point: a real server stores one S2 cell per point). Any other index (``text``,
wildcard, ``2dsphere`` on lines or polygons) makes the count unknown (``None``), never zero.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

__all__ = ["KeySnapshot", "document_keys", "index_keys_written"]

_MISSING = object()


def _values(doc: Any, path: list[str]) -> list[Any]:
    """The values a dotted path reaches in ``doc``, arrays expanded (MongoDB's multikey rule)."""
    if not path:
        if isinstance(doc, list):
            return list(doc) or [None]  # an empty array is indexed as undefined; None stands in for it
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


def _frozen(value: Any) -> str:
    """A value as a string that equal index keys share (1 and 1.0 are one key, as in MongoDB)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_frozen(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_frozen(v) for v in value) + "]"
    if value is _MISSING or value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"number:{float(value)!r}"
    return f"{type(value).__name__}:{value!r}"


def _matches(doc: Mapping[str, Any], expression: Mapping[str, Any]) -> bool:
    from mongomock_ng.filtering import filter_applies  # the mock's matcher: the same rules on every backend

    return bool(filter_applies(dict(expression), dict(doc)))


def document_keys(doc: Mapping[str, Any], index: Mapping[str, Any]) -> Counter | None:
    """The keys ``doc`` has in ``index`` (one entry of ``list_indexes()``), as a multiset, or
    ``None`` for an index type this module does not count (see the module's docstring)."""
    key = list(dict(index["key"]).items())
    partial = index.get("partialFilterExpression")
    if partial is not None and not _matches(doc, partial):
        return Counter()
    per_field: list[list[Any]] = []
    for field, kind in key:
        values = _values(doc, field.split("."))
        if kind in (1, -1, 1.0, -1.0, "hashed"):
            per_field.append(values)
        elif kind == "2dsphere":
            points = [v for v in values if v is not _MISSING]
            if any(not (isinstance(v, dict) and v.get("type") == "Point") for v in points):
                return None
            per_field.append(points or [_MISSING])
        else:
            return None
    if index.get("sparse") and all(v == [_MISSING] for v in per_field):
        return Counter()
    if any(kind == "2dsphere" for _, kind in key) and all(
            v == [_MISSING] for (f, kind), v in zip(key, per_field) if kind == "2dsphere"):
        return Counter()  # a 2dsphere index (version 2 and later) is sparse on its geo field
    keys: list[tuple] = [()]
    for values in per_field:  # a compound multikey index: one key per combination (duplicates once)
        keys = [k + (v,) for k in keys for v in dict.fromkeys(_frozen(x) for x in values)]
    return Counter(keys)


class KeySnapshot:
    """The index keys of some documents of some collections, taken before a write and again after it.

    ``targets`` is a collection, a sequence of collections (every document of each is read), or a
    mapping ``{collection: filter}`` (only the documents a write may touch are read: keep the filter
    wide enough to hold every document the write inserts, changes or deletes). ``count_commands``
    takes its snapshots with counting paused, so they never add to the costs they serve.
    """

    def __init__(self, targets: Any) -> None:
        if isinstance(targets, Mapping):
            self.targets = [(c, dict(f or {})) for c, f in targets.items()]
        elif hasattr(targets, "find") and hasattr(targets, "list_indexes"):
            self.targets = [(targets, {})]
        else:
            self.targets = [(c, {}) for c in targets]
        if not self.targets:
            raise ValueError("index_keys: name at least one collection whose index keys a write changes")

    def take(self) -> dict[str, Counter] | None:
        out: dict[str, Counter] = {}
        for coll, filter in self.targets:
            indexes = list(coll.list_indexes())
            found: Counter = Counter()
            for doc in coll.find(filter, batch_size=10_000):
                for index in indexes:
                    keys = document_keys(doc, index)
                    if keys is None:
                        return None
                    found.update({(index["name"], _frozen(doc.get("_id")), k): n for k, n in keys.items()})
            out[f"{coll.database.name}.{coll.name}"] = found
        return out


def index_keys_written(before: dict[str, Counter] | None, after: dict[str, Counter] | None) -> int | None:
    """Keys inserted plus keys deleted between two :meth:`KeySnapshot.take` results (``None`` when
    either holds an index this module cannot count)."""
    if before is None or after is None:
        return None
    total = 0
    for name in set(before) | set(after):
        b, a = before.get(name, Counter()), after.get(name, Counter())
        total += sum((a - b).values()) + sum((b - a).values())
    return total

