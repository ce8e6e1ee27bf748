"""The advisor's reading of a database and its rules (notebook 06): Atlas' seven codes, each with its
trigger, and the five findings beyond Atlas that the lessons teach.

:func:`read_collection` only reads (``count``, ``find``, ``aggregate`` with ``$sample``, ``listIndexes``).
A collection of at most ``max_documents`` documents is read whole, in ``_id`` order; a larger one is
sampled across: ``$sample`` where the engine serves it (each document counted once: below 5 % of a
collection a server's pseudo-random cursor may return one twice), otherwise random runs of documents in ``_id``
order, and the report says which, and how many documents were read. :func:`helpers.advisor.review`
runs the rules; this module holds them.
"""
from __future__ import annotations

import datetime as _dt
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import bson

from ..plans import find_in_id_order
from ..sizes import MAX_BSON_SIZE
from .findings import ATLAS, Finding, Thresholds
from .observed import ObservedOperation, ObservedWorkload, _lookups, _predicate_fields, _regexes

__all__ = ["read_collection", "atlas_findings", "beyond_findings", "LESSONS"]

#: the lesson that fixes each finding
LESSONS = {
    "outlier": "02 · the outlier pattern (2.3): embed the first N children, move the rest to overflow documents",
    "reference": "01 · reference the children from a collection of their own (1.7), or bucket them (1.6)",
    "per_child": "04 · one document per child in a single collection (4.5), or a bounded subset with $push $slice (4.4)",
    "split": "01 · move what the main read does not need to a referenced collection (1.7)",
    "REDUCE_LOOKUP_OPS": "04 · one polymorphic collection read by one query instead of three joined by "
                         "$lookup (4.5); 01 · embed what is read together (1.1)",
    "REMOVE_UNNECESSARY_INDEXES": "hide it first (db.collection.hideIndex(name), or collMod with index.hidden), "
                                  "watch the workload for as long as it takes every query to run (Atlas waits 7 "
                                  "days), unhide it at once if a query slows, drop it only then; 04 · index use "
                                  "(4.7); 01 · what an index buys and costs (1.3)",
    "REDUCE_NUMBER_OF_NAMESPACES": "04 · one collection with a type field and a compound key (4.5) instead of "
                                   "a collection per key value",
    "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES": "06 · an equality on a lower-case copy, or with a collation "
                                               "(strength 2) on an index with the same collation (6.5); 04 · 4.7: "
                                               "why the regex examines every key",
    "OPTIMIZE_TEXT_QUERIES": "06 · keywords in an indexed array, matched by equality (6.5), or a text index "
                             "($text) / MongoDB Search ($search); 04 · 4.7: an unanchored regex examines every key",
    "USE_OUTLIER_PATTERN": "02 · the outlier pattern (2.3): embed up to a threshold with one atomic update, "
                           "overflow the rest to documents of their own under a unique (parent, seq) key",
    "USE_TIME_SERIES": "08 · the bucket pattern (one document per entity and time window) or a time series "
                       "collection (timeField, metaField)",
    "USE_ATTRIBUTE_PATTERN": "the attribute pattern: an array of {k, v} documents and one index on (k, v) "
                             "instead of a field per key value",
    "USE_SUBSET_PATTERN": "04 · the subset pattern (4.4): keep the N elements the page reads in the document "
                          "($push with $each and $slice), the rest in a collection of their own",
    "EXTENDED_REFERENCE_STALENESS": "01 · the extended reference (1.4, 1.5): copy only fields that rarely "
                                    "change; every change of one must update every copy (updateMany), or "
                                    "reference the source instead",
}
_SKIP = re.compile(r"^(system\.|workbook_registry$|workbook_probe_)")  # not the reviewed schema
_DATA_KEY = re.compile(r"^(\d|[0-9a-f]{24}$|[0-9a-f]{8}-[0-9a-f]{4}-)", re.I)  # numbers, dates, ObjectIds, UUIDs
_RUNS = 10  # random _id runs when $sample is not served


# ---------------------------------------------------------------------------------------------
# reading the database (only reads)

@dataclass
class _Collection:
    name: str
    count: int
    read: int
    sizes: list[tuple[int, Any, str | None, int]]  # (size, _id, largest field, its bytes)
    arrays: dict[str, list[int]]
    indexes: dict[str, dict[str, Any]]
    fields: frozenset[str]
    how: str = "all, in _id order"
    scalars: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)  # (_id, top-level scalars)
    objects: dict[str, list[frozenset]] = field(default_factory=dict)  # key sets per sub-document path
    refs: dict[str, list[dict]] = field(default_factory=dict)  # embedded documents with an _id, per path


def _walk(value: Any, path: str, arrays: dict, objects: dict, refs: dict) -> None:
    if isinstance(value, Mapping):
        objects[path].append(frozenset(str(k) for k in value if not (path == "" and k == "_id")))
        if path and "_id" in value and len(value) > 1 and len(refs[path]) < 50:
            refs[path].append(dict(value))
        for k, v in value.items():
            if path == "" and k == "_id":
                continue
            _walk(v, f"{path}.{k}" if path else str(k), arrays, objects, refs)
    elif isinstance(value, list):
        arrays[path].append(len(value))
        for item in value:
            if isinstance(item, Mapping):
                _walk(item, path, arrays, objects, refs)


def _documents(coll: Any, count: int, limit: int, seed: int) -> tuple[Iterable[dict], str]:
    """All documents in _id order, or a sample across the collection, and how it was read."""

    if limit == 0:
        return [], "none (max_documents=0: the workload rules only)"
    if count <= limit:
        return find_in_id_order(coll), "all, in _id order"
    try:
        sampled = list(coll.aggregate([{"$sample": {"size": limit}}]))
    except (NotImplementedError, Exception) as e:  # an engine without $sample (OperationFailure on a server)
        if not isinstance(e, NotImplementedError) and type(e).__name__ != "OperationFailure":
            raise
    else:  # asked for under 5 % of a collection, a server's $sample may return a document twice: count it once
        distinct: dict[Any, dict] = {}
        for d in sampled:
            distinct.setdefault(repr(d.get("_id")), d)
        twice = len(sampled) - len(distinct)
        return list(distinct.values()), f"a $sample of {limit:,}" + (
            f" ({twice:,} returned twice, counted once)" if twice else "")
    rng = random.Random(seed)  # the same runs for the same collection size: a review can be repeated
    run = max(1, limit // _RUNS)
    docs: dict[Any, dict] = {}
    for start in sorted(rng.randrange(0, max(1, count - run)) for _ in range(_RUNS)):
        for d in coll.find({}).sort("_id", 1).skip(start).limit(run):
            docs.setdefault(repr(d.get("_id")), d)
    return list(docs.values()), f"{_RUNS} runs of {run:,} in _id order from random places ($sample not served)"


def read_collection(db: Any, name: str, max_documents: int, breakdown_bytes: int = 0) -> _Collection:
    """What the rules need of one collection; only reads. The largest field is measured only in
    documents larger than ``breakdown_bytes`` (the smallest size threshold in use)."""
    coll = db[name]
    count = coll.estimated_document_count()
    sizes = []
    arrays: dict[str, list[int]] = defaultdict(list)
    objects: dict[str, list[frozenset]] = defaultdict(list)
    refs: dict[str, list[dict]] = defaultdict(list)
    scalars: list[tuple[Any, dict[str, Any]]] = []
    top_fields: set[str] | None = None
    read = 0
    docs, how = _documents(coll, count, max_documents, seed=count)
    for doc in docs:
        read += 1
        size = len(bson.encode(doc))
        big_field, big = None, 0
        for k, v in (doc.items() if size > breakdown_bytes else ()):
            if k == "_id":
                continue
            s = len(bson.encode({k: v})) - 5
            if s > big:
                big_field, big = k, s
        sizes.append((size, doc.get("_id"), big_field, big))
        _walk(doc, "", arrays, objects, refs)
        scalars.append((doc.get("_id"), {k: v for k, v in doc.items() if k != "_id"
                                         and isinstance(v, (str, int, float, _dt.datetime)) and not isinstance(v, bool)}))
        if top_fields is None:
            top_fields = set(doc)
    try:
        indexes = coll.index_information()
    except Exception as e:  # a view has no indexes of its own (OperationFailure on a server)
        if type(e).__name__ != "OperationFailure":
            raise
        indexes = {}
    return _Collection(name, count, read, sizes, dict(arrays), indexes, frozenset(top_fields or ()), how,
                       scalars, dict(objects), dict(refs))


def _nearest_rank(values: list[int], p: float) -> int:
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def _trigger(t: Thresholds, name: str, atlas_trigger: str) -> str:
    """Atlas' trigger when the threshold is Atlas' value, else the threshold's name and set."""
    return atlas_trigger if getattr(t, name) == getattr(ATLAS, name) else f"{name} ({t.name})"


# ---------------------------------------------------------------------------------------------
# Atlas' codes

def _push_paths(update: Any) -> list[tuple[str, bool]]:
    """(array path, bounded by $slice) for each $push / $addToSet of an update document."""
    out = []
    if not isinstance(update, Mapping):
        return out
    for op in ("$push", "$addToSet"):
        for path, value in (update.get(op) or {}).items():
            clean = ".".join(p for p in str(path).split(".") if not (p.startswith("$") or p.isdigit()))
            bounded = op == "$push" and isinstance(value, Mapping) and "$slice" in value
            out.append((clean, bounded))
    return out


def _array_findings(c: _Collection, t: Thresholds, workload: ObservedWorkload | None) -> list[Finding]:
    out = []
    pushes: dict[str, list[bool]] = defaultdict(list)
    if workload is not None:
        for op in workload.on(c.name):
            for u in op.updates:
                for path, bounded in _push_paths(u):
                    pushes[path].append(bounded)
    largest = max((s for s, *_ in c.sizes), default=0)
    for path, lengths in sorted(c.arrays.items()):
        over = sum(n > t.max_array_elements for n in lengths)
        if not over:
            continue
        unbounded = sum(not b for b in pushes.get(path, []))
        evidence = {"longest": max(lengths), "median": _nearest_rank(lengths, 50),
                    "p99": _nearest_rank(lengths, 99), "arrays": len(lengths),
                    "threshold": t.max_array_elements, "over the threshold": over}
        if workload is not None:
            evidence["pushes in the workload"] = len(pushes.get(path, []))
            evidence["pushes without $slice"] = unbounded
        high = unbounded > 0 or largest > MAX_BSON_SIZE // 2
        share = over / len(lengths)
        lesson = LESSONS["per_child"] if "." in path else (LESSONS["outlier"] if share <= 0.1 else LESSONS["reference"])
        out.append(Finding(
            "AVOID_UNBOUNDED_ARRAY", c.name, path, "high" if high else "medium", evidence,
            f"{over:,} of {len(lengths):,} '{path}' arrays hold more than {t.max_array_elements:,} elements "
            f"(longest {max(lengths):,})" + ("; the workload keeps pushing to it without $slice" if unbounded else ""),
            lesson, trigger=_trigger(t, "max_array_elements", "DOCS_CONTAIN_UNBOUNDED_ARRAY"),
            value=max(lengths), limit=t.max_array_elements))
    return out


def _size_findings(c: _Collection, t: Thresholds) -> list[Finding]:
    over = [s for s in c.sizes if s[0] > t.large_document_bytes]
    if not over:
        return []
    sizes = [s for s, *_ in c.sizes]
    biggest = max(c.sizes, key=lambda s: (s[0], str(s[1])))
    fields_over = Counter(s[2] for s in over)
    fld = min(fields_over, key=lambda f: (-fields_over[f], str(f)))
    evidence = {"largest bytes": biggest[0], "largest % of 16 MiB": round(100 * biggest[0] / MAX_BSON_SIZE, 1),
                "median bytes": _nearest_rank(sizes, 50), "p99 bytes": _nearest_rank(sizes, 99),
                "threshold bytes": t.large_document_bytes, "documents over the threshold": len(over),
                "the field's share of the largest": round(biggest[3] / biggest[0], 2) if biggest[2] == fld else None}
    is_array = fld in c.arrays
    lesson = (LESSONS["per_child"] if any(p.startswith(f"{fld}.") for p in c.arrays) else
              LESSONS["reference"] if is_array else LESSONS["split"])
    return [Finding("REDUCE_DOCUMENT_SIZE", c.name, fld, "high" if biggest[0] > MAX_BSON_SIZE // 2 else "medium",
                    evidence, f"{len(over):,} document{'' if len(over) == 1 else 's'} over {t.large_document_bytes:,} "
                              f"bytes; the largest is {biggest[0]:,} bytes ({evidence['largest % of 16 MiB']}% of "
                              f"16 MiB), mostly '{fld}'",
                    lesson, trigger=_trigger(t, "large_document_bytes", "DOC_SIZE_TOO_LARGE"),
                    value=biggest[0], limit=t.large_document_bytes)]


def _lookup_findings(c: _Collection, t: Thresholds, workload: ObservedWorkload) -> list[Finding]:
    reads = [op for op in workload.on(c.name) if op.is_read]
    with_lookup = [op for op in reads if op.kind == "aggregate" and _lookups(op.pipeline)]
    if not with_lookup:
        return []
    share = len(with_lookup) / len(reads)
    if share > t.lookup_share:
        trigger, value, limit = _trigger(t, "lookup_share", "PERCENT_QUERIES_USE_LOOKUP"), round(share, 2), t.lookup_share
    elif len(with_lookup) > t.lookup_queries:
        trigger, value, limit = _trigger(t, "lookup_queries", "NUMBER_OF_QUERIES_USE_LOOKUP"), len(with_lookup), t.lookup_queries
    else:
        return []
    joined = sorted({str(lk.get("from")) for op in with_lookup for lk in _lookups(op.pipeline)})
    evidence = {"reads": len(reads), "reads with $lookup": len(with_lookup), "share": round(share, 2),
                "$lookup stages": sum(len(_lookups(op.pipeline)) for op in with_lookup)}
    return [Finding("REDUCE_LOOKUP_OPS", c.name, ", ".join(joined), "medium", evidence,
                    f"{len(with_lookup)} of {len(reads)} reads of '{c.name}' join {', '.join(joined)} with $lookup",
                    LESSONS["REDUCE_LOOKUP_OPS"], trigger=trigger, value=value, limit=limit)]


def _key_list(spec: Mapping[str, Any]) -> list[tuple[str, Any]]:
    key = spec.get("key")
    return list(key.items()) if isinstance(key, Mapping) else [tuple(k) for k in key]


def _same_collation(a: Any, b: Any) -> bool:
    def norm(c: Any) -> tuple | None:  # None: the simple binary comparison
        if not c or c.get("locale") == "simple":
            return None
        return (c.get("locale"), int(c.get("strength", 3)))
    return norm(a) == norm(b)


def _compares_strings(condition: Any) -> bool:
    """Whether a query condition compares strings (a string, a regex, or an operator holding one)."""
    if isinstance(condition, (str, re.Pattern, bson.Regex)):
        return True
    if isinstance(condition, Mapping):
        return any(_compares_strings(v) for v in condition.values())
    if isinstance(condition, (list, tuple)):
        return any(_compares_strings(v) for v in condition)
    return False


def _usable(spec: Mapping[str, Any], op: ObservedOperation, collations: bool) -> bool:
    keys = _key_list(spec)
    lead, kind = keys[0]
    index_collation = spec.get("collation") if collations else None
    op_collation = op.collation if collations else None
    if kind == "text":
        return any("$text" in _predicate_fields(f) for f in op.filters)
    if "$**" in lead:  # a wildcard index: any filtered field may use it
        return any(_predicate_fields(f) for f in op.filters)
    for f in op.filters:
        conds = _predicate_fields(f)
        if lead in conds:
            # the manual (Collation and Index Use): a string comparison can use an index only under the
            # index's collation; a comparison of a non-string value can use it under any collation
            if _compares_strings(conds[lead]) and not _same_collation(index_collation, op_collation):
                continue
            return True
    if op.sort and next(iter(op.sort)) == lead:
        return True
    return op.kind == "distinct" and op.key == lead


def _workload_long_enough(workload: ObservedWorkload | None, t: Thresholds) -> bool:
    if workload is None or not workload.complete:
        return False
    return t.unused_index_days == 0 or (workload.days is not None and workload.days >= t.unused_index_days)


def _index_findings(c: _Collection, workload: ObservedWorkload | None, collations: bool,
                    t: Thresholds = ATLAS) -> list[Finding]:
    out = []
    specs = dict(c.indexes)
    if len(specs) > t.max_indexes:
        out.append(Finding("REMOVE_UNNECESSARY_INDEXES", c.name, None, "medium",
                           {"indexes on the collection": len(specs), "threshold": t.max_indexes},
                           f"{len(specs)} indexes on '{c.name}': every write maintains each of them",
                           LESSONS["REMOVE_UNNECESSARY_INDEXES"],
                           trigger=_trigger(t, "max_indexes", "NUM_INDEXES"), value=len(specs), limit=t.max_indexes))
    judge_unused = _workload_long_enough(workload, t)
    ops = [op for op in workload.on(c.name) if op.filters or op.sort or op.kind == "distinct"] \
        if workload is not None and judge_unused else []
    for name, spec in sorted(specs.items()):
        keys = _key_list(spec)
        if name == "_id_" or spec.get("unique") or "expireAfterSeconds" in spec:
            continue
        # a longer index covers this one only if it serves every query this one serves: not when it
        # is partial, sparse or hidden (and a partial or sparse index of its own is kept on purpose)
        covering = [other for other, o in sorted(specs.items()) if other != name
                    and len(_key_list(o)) > len(keys) and _key_list(o)[:len(keys)] == keys
                    and not spec.get("partialFilterExpression") and not spec.get("sparse")
                    and not any(o.get(option) for option in ("partialFilterExpression", "sparse", "hidden"))
                    and _same_collation(spec.get("collation"), o.get("collation"))]
        unused = bool(ops) and not any(_usable(spec, op, collations) for op in ops)
        if not covering and not unused:
            continue
        evidence = {"keys": ", ".join(f"{k}: {v}" for k, v in keys), "indexes on the collection": len(specs)}
        if judge_unused:
            evidence["operations on the collection"] = len(ops)
            evidence["operations that can use it"] = sum(_usable(spec, op, collations) for op in ops)
        if covering:
            evidence["prefix of"] = covering[0]
        why = "; ".join(w for w, on in ((f"its keys are a prefix of {covering[0] if covering else ''}, which "
                                          f"serves the same queries", bool(covering)),
                                         ("no operation of the workload can use it", unused)) if on)
        days = workload.days if workload is not None else None
        trigger = "REDUNDANT_PREFIX (Atlas drop-index rule)" if covering else \
            f"UNUSED_INDEX (no query in {'the recorded workload' if days is None else f'{days:,.1f} days'})"
        out.append(Finding("REMOVE_UNNECESSARY_INDEXES", c.name, name, "medium" if unused else "low", evidence,
                           f"index {name}: {why}; every write still maintains it", LESSONS["REMOVE_UNNECESSARY_INDEXES"],
                           None if collations or not spec.get("collation") else
                           "this engine drops index collations: collation matching is not checked",
                           trigger=trigger, value=f"prefix of {covering[0]}" if covering else
                           f"0 of {len(ops)} operations can use it", limit=None))
    return out


def _family_key(name: str) -> str:
    digits = re.sub(r"[0-9]+", "#", name)
    parts = re.split(r"([_.\-])", digits)
    return "".join(parts[:-1]) + "*" if len(parts) > 1 else digits


def _namespace_findings(colls: list[_Collection], t: Thresholds, namespaces: int) -> list[Finding]:
    out = []
    if namespaces > t.max_collections:
        out.append(Finding("REDUCE_NUMBER_OF_NAMESPACES", None, None, "high",
                           {"collections and views (system ones not counted)": namespaces},
                           f"{namespaces:,} collections in the database (threshold {t.max_collections:,})",
                           LESSONS["REDUCE_NUMBER_OF_NAMESPACES"],
                           trigger=_trigger(t, "max_collections", "NUMBER_OF_NAMESPACES"),
                           value=namespaces, limit=t.max_collections))
    if not t.same_shape_collections:
        return out
    families: dict[tuple, list[_Collection]] = defaultdict(list)
    for c in colls:
        shape = (_family_key(c.name), c.fields,
                 frozenset(tuple(map(tuple, _key_list(s))) for n, s in c.indexes.items() if n != "_id_"))
        families[shape].append(c)
    for (key, flds, _), members in sorted(families.items(), key=lambda kv: kv[0][0]):
        if len(members) < t.same_shape_collections or not flds:
            continue
        names = sorted(m.name for m in members)
        evidence = {"collections of one shape": len(members), "examples": names[:3],
                    "shared fields": sorted(flds)[:6], "documents": sum(m.count for m in members),
                    "namespaces they use (collections + indexes)": sum(1 + len(m.indexes) for m in members)}
        out.append(Finding("REDUCE_NUMBER_OF_NAMESPACES", key, None, "medium", evidence,
                           f"{len(members)} collections named {key} hold documents of one shape: a collection per "
                           f"key value, growing with the keys", LESSONS["REDUCE_NUMBER_OF_NAMESPACES"],
                           trigger=f"same_shape_collections ({t.name})", value=len(members),
                           limit=t.same_shape_collections - 1))
    return out


def _regex_findings(colls: dict[str, _Collection], workload: ObservedWorkload, collations: bool) -> list[Finding]:
    seen: dict[tuple[str, str, str], list] = defaultdict(list)
    for op in workload.operations:
        if op.collection not in colls:
            continue
        for pred in op.all_predicates:
            for rx in _regexes(pred):
                code = ("OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES" if rx.case_insensitive
                        else "OPTIMIZE_TEXT_QUERIES" if not rx.anchored else None)
                if code:
                    seen[(code, op.collection, rx.field)].append(rx)
    out = []
    for (code, coll, fld), found in sorted(seen.items()):
        c = colls[coll]
        specs = [s for n, s in c.indexes.items() if _key_list(s)[0][0] == fld]
        ci_index = any((s.get("collation") or {}).get("strength") in (1, 2) for s in specs) if collations else None
        evidence = {"queries": len(found), "example": found[0].shown(), "field indexed": bool(specs),
                    "documents in the collection": c.count}
        note = None
        if code == "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES":
            evidence["case-insensitive index on the field"] = ci_index
            exact = all(r.exact for r in found)
            summary = (f"{len(found)} case-insensitive regex quer{'y' if len(found) == 1 else 'ies'} on '{fld}' "
                       + ("(exact matches that ignore case: an equality with a collation does it on an index)" if exact
                          else "(a text search that ignores case)"))
            if not collations:
                note = "this engine drops index collations: whether a case-insensitive index exists is not shown"
            trigger = "QUERIES_CONTAIN_CASE_INSENSITIVE_REGEX"
        else:
            summary = (f"{len(found)} unanchored regex quer{'y' if len(found) == 1 else 'ies'} on '{fld}': a text "
                       f"search that examines every " + ("index key" if specs else "document"))
            trigger = "UNANCHORED_REGEX (the workbook's reading; Atlas publishes no trigger for this code)"
        out.append(Finding(code, coll, fld, "medium", evidence, summary, LESSONS[code], note,
                           ("case-insensitive index on the field",) if code.startswith("OPTIMIZE_CASE") else (),
                           trigger=trigger, value=found[0].shown(), limit=None))
    return out


def atlas_findings(colls: dict[str, _Collection], t: Thresholds, workload: ObservedWorkload | None, collations: bool,
                   namespaces: int) -> list[Finding]:
    """Atlas' seven codes on the collections read."""
    findings: list[Finding] = []
    for c in colls.values():
        findings += _array_findings(c, t, workload)
        findings += _size_findings(c, t)
        findings += _index_findings(c, workload, collations, t)
        if workload is not None:
            findings += _lookup_findings(c, t, workload)
    findings += _namespace_findings(list(colls.values()), t, namespaces)
    if workload is not None:
        findings += _regex_findings(colls, workload, collations)
    return findings


# ---------------------------------------------------------------------------------------------
# beyond Atlas: what the lessons teach

def _outlier_findings(c: _Collection, t: Thresholds) -> list[Finding]:
    out = []
    for path, lengths in sorted(c.arrays.items()):
        if len(lengths) < 20:  # too few arrays for a percentile to mean anything
            continue
        p90 = _nearest_rank(lengths, 90)
        cut = max(p90, 1) * t.outlier_factor
        outliers = [n for n in lengths if n > cut]
        if not outliers or max(lengths) <= t.pattern_min_elements or len(outliers) > 0.05 * len(lengths):
            continue
        evidence = {"arrays": len(lengths), "median": _nearest_rank(lengths, 50), "p90": p90,
                    "longest": max(lengths), "outliers (over factor x p90)": len(outliers)}
        out.append(Finding("USE_OUTLIER_PATTERN", c.name, path, "medium", evidence,
                           f"'{path}' has a heavy tail: 90% of arrays hold at most {p90:,} elements, {len(outliers)} "
                           f"hold{'s' if len(outliers) == 1 else ''} more than {cut:,} (longest {max(lengths):,})", LESSONS["USE_OUTLIER_PATTERN"],
                           trigger="HEAVY_TAILED_ARRAY (outlier_factor x p90)", value=max(lengths), limit=cut))
    return out


def _time_series_findings(c: _Collection, t: Thresholds) -> list[Finding]:
    n = len(c.scalars)
    if n <= t.time_series_min_documents:
        return []
    if any(_nearest_rank(lengths, 50) > 1 for path, lengths in c.arrays.items() if "." not in path):
        return []  # documents that hold many events each: already bucketed
    try:  # in _id order: insertion order for ObjectId and counter keys
        rows = sorted(c.scalars, key=lambda r: r[0])
    except TypeError:  # _id values of several types: the order read
        rows = list(c.scalars)
    present = Counter(k for _, r in rows for k in r)
    dates = [k for k, m in present.items() if m >= 0.9 * n
             and sum(isinstance(r.get(k), _dt.datetime) for _, r in rows) >= 0.9 * n]
    for date in sorted(dates):
        stamps = [r[date] for _, r in rows if isinstance(r.get(date), _dt.datetime)]
        in_order = sum(b >= a for a, b in zip(stamps, stamps[1:])) / max(1, len(stamps) - 1)
        if in_order < 0.9:
            continue
        keys = []
        for k, m in present.items():
            if k == date or m < 0.9 * n:
                continue
            values = [r[k] for _, r in rows if isinstance(r.get(k), (str, int)) and not isinstance(r.get(k), bool)]
            distinct = len(set(values))
            if len(values) >= 0.9 * n and 1 <= distinct <= n / 5:
                keys.append((distinct, k))
        if not keys:
            continue
        distinct, key = max(keys)
        evidence = {"documents": c.count, "date field": date, "entity key": key, "entities": distinct,
                    "documents per entity (mean)": round(n / distinct, 1), "in time order": round(in_order, 2),
                    "documents read": n}
        return [Finding("USE_TIME_SERIES", c.name, date, "low", evidence,
                        f"one document per event: {c.count:,} documents with a date '{date}' inserted in time order, "
                        f"{n / distinct:,.1f} per '{key}' on average", LESSONS["USE_TIME_SERIES"],
                        trigger="TIME_SERIES_SHAPE (date, entity key, time order, one document per event)",
                        value=c.count, limit=t.time_series_min_documents)]
    return []


def _attribute_findings(c: _Collection, t: Thresholds) -> list[Finding]:
    out = []
    for path, keysets in sorted(c.objects.items()):
        names = Counter(k for ks in keysets for k in ks)
        if len(names) <= t.attribute_min_keys:
            continue
        data_like = sum(bool(_DATA_KEY.match(k)) for k in names) / len(names)
        coverage = sum(len(ks) for ks in keysets) / len(keysets) / len(names)
        if data_like < 0.5:  # many named fields (a polymorphic collection, a wide record) are a schema, not data
            continue
        examples = sorted(names, key=lambda k: (-names[k], k))[:3]
        evidence = {"distinct names": len(names), "objects": len(keysets), "names that look like data": round(data_like, 2),
                    "names per object / distinct names": round(coverage, 2), "examples": examples}
        where = f"'{path}'" if path else "the top level"
        out.append(Finding("USE_ATTRIBUTE_PATTERN", c.name, path or None, "medium", evidence,
                           f"{len(names):,} distinct field names at {where}: the names are data (each needs its own "
                           f"index to be queried)", LESSONS["USE_ATTRIBUTE_PATTERN"],
                           trigger="FIELD_NAMES_ARE_DATA (distinct names at one level)", value=len(names),
                           limit=t.attribute_min_keys))
    return out


def _slice_of(projection: Mapping[str, Any] | None, path: str) -> str:
    """How a read's projection treats the array at ``path``: "whole", "part" (a $slice) or "none"."""
    if projection is None:
        return "whole"
    spec = projection.get(path)
    if isinstance(spec, Mapping) and "$slice" in spec:
        return "part"
    if spec in (1, True) or (isinstance(spec, str) and spec == f"${path}"):
        return "whole"
    if spec in (0, False):
        return "none"
    if spec is not None:
        return "part" if isinstance(spec, Mapping) and any(k in spec for k in ("$slice", "$firstN", "$lastN")) else "whole"
    inclusive = any(v not in (0, False) for k, v in projection.items() if k != "_id")
    return "none" if inclusive else "whole"


def _subset_findings(c: _Collection, t: Thresholds, workload: ObservedWorkload) -> list[Finding]:
    out = []
    reads = [op for op in workload.on(c.name) if op.kind in ("find", "aggregate")]
    for path, lengths in sorted(c.arrays.items()):
        if "." in path or max(lengths) <= t.pattern_min_elements or not reads:
            continue
        ways = Counter(_slice_of(op.projection, path) for op in reads)
        if not ways["part"] or ways["whole"]:
            continue
        evidence = {"longest": max(lengths), "median": _nearest_rank(lengths, 50), "reads of a $slice": ways["part"],
                    "reads of the whole array": 0, "reads of the collection": len(reads)}
        out.append(Finding("USE_SUBSET_PATTERN", c.name, path, "medium", evidence,
                           f"every read of '{path}' takes a $slice, yet the documents carry up to {max(lengths):,} "
                           f"elements: each read loads them all from disk", LESSONS["USE_SUBSET_PATTERN"],
                           trigger="ARRAY_READ_IN_PART (only $slice reads of a large array)", value=max(lengths),
                           limit=t.pattern_min_elements))
    return out


def _sets(update: Any) -> set[str]:
    """The field paths an update document (or pipeline) sets."""
    out: set[str] = set()
    stages = update if isinstance(update, list) else [update]
    for u in stages:
        if isinstance(u, Mapping):
            for op in ("$set", "$addFields", "$rename", "$unset", "$inc"):
                spec = u.get(op)
                if isinstance(spec, Mapping):
                    out |= {str(k) for k in spec} | {str(v) for v in spec.values() if op == "$rename"}
            if not any(str(k).startswith("$") for k in u):
                out |= {str(k) for k in u}  # a replacement document
    return out


def _staleness_findings(db: Any, colls: dict[str, _Collection], workload: ObservedWorkload) -> list[Finding]:
    out = []
    for a in colls.values():
        for path, copies in sorted(a.refs.items()):
            ids = [r["_id"] for r in copies]
            for b in colls.values():
                if b.name == a.name:
                    continue
                try:
                    sources = {repr(d["_id"]): d for d in db[b.name].find({"_id": {"$in": ids}})}
                except Exception as e:  # a view whose pipeline fails: no source to compare with
                    if type(e).__name__ != "OperationFailure":
                        raise
                    continue
                matched = [(r, sources[repr(r["_id"])]) for r in copies if repr(r["_id"]) in sources]
                if len(matched) < 0.8 * len(copies):
                    continue
                copied = sorted(k for k in {k for r, _ in matched for k in r if k != "_id"}
                                if sum(s.get(k) == r.get(k) for r, s in matched) >= 0.8 * len(matched))
                if not copied:
                    continue
                updates = [op for op in workload.on(b.name) if op.kind in ("update", "findAndModify")
                           and any(set(copied) & _sets(u) for u in op.updates)]
                if not updates:
                    continue
                refreshed = [op for op in workload.on(a.name) if op.kind in ("update", "findAndModify")
                             and any({f"{path}.{k}" for k in copied} & _sets(u) for u in op.updates)]
                evidence = {"copied fields": [f"{path}.{k}" for k in copied], "source": b.name,
                            "updates of the source's copied fields": len(updates),
                            "updates of the copies": len(refreshed), "copies read": len(copies)}
                out.append(Finding(
                    "EXTENDED_REFERENCE_STALENESS", a.name, path, "low" if refreshed else "medium", evidence,
                    f"'{a.name}.{path}' copies {', '.join(copied)} from '{b.name}', and the workload updates "
                    + ("them there: every update must rewrite every copy" if refreshed
                       else "them there without updating the copies: they go stale"),
                    LESSONS["EXTENDED_REFERENCE_STALENESS"],
                    trigger="COPIED_FIELD_UPDATED (the workload updates a field another collection copies)",
                    value=len(updates), limit=0))
                break
    return out


def beyond_findings(db: Any, colls: dict[str, _Collection], t: Thresholds, workload: ObservedWorkload | None) -> list[Finding]:
    """The five findings beyond Atlas, on the collections read (the same in both sets)."""
    findings: list[Finding] = []
    for c in colls.values():
        findings += _outlier_findings(c, t)
        findings += _time_series_findings(c, t)
        findings += _attribute_findings(c, t)
        if workload is not None:
            findings += _subset_findings(c, t, workload)
    if workload is not None:
        findings += _staleness_findings(db, colls, workload)
    return findings
