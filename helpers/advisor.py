"""Lesson module of notebooks/06_schema_advisor.ipynb (notebook 06): a read-only schema anti-pattern advisor.

:func:`review` looks at a database on any backend, and optionally at a workload (the commands a
block of code sent, kept by ``helpers.counting(keep_commands=True)``, or a real server's profiler
output), and reports findings under the seven codes of MongoDB Atlas' Performance Advisor schema
suggestions:

=========================================  ======================================================
``AVOID_UNBOUNDED_ARRAY``                  an array longer than ``max_array_elements``
``REDUCE_DOCUMENT_SIZE``                   a document larger than ``large_document_bytes``
``REDUCE_LOOKUP_OPS``                      ``$lookup`` in ``lookup_share`` or more of a collection's reads
``REMOVE_UNNECESSARY_INDEXES``             an index no operation of the workload can use, or the prefix
                                           of another index
``REDUCE_NUMBER_OF_NAMESPACES``            ``max_namespaces`` collections + indexes, or
                                           ``same_shape_collections`` collections of one shape
``OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES``  a regex with the ``i`` option in the workload
``OPTIMIZE_TEXT_QUERIES``                  an unanchored regex (a text search) in the workload
=========================================  ======================================================

Each finding carries the collection and field, the evidence (numbers measured from the data or the
workload), a severity and the lesson that fixes it. Severity ``high``: the design is on its way to
failing (a document past half of 16 MiB, or an array over the threshold that the workload keeps
growing without ``$slice``); ``medium``: it costs now; ``low``: worth a look (an index another covers). :class:`Thresholds` holds every number, with
its source (:data:`SOURCES`): MongoDB publishes few of them, and says so.

The advisor only reads: ``listCollections``, ``listIndexes``, ``count`` and ``find`` (and the
profiler's ``system.profile`` when asked). It never writes to the database it reviews. Sizes are
``len(bson.encode(doc))`` (what ``$bsonSize`` returns) and every rule works on the data and the
command documents, so the findings are the same on every engine, except where the probe says an
engine cannot show a piece of evidence (a finding then says which, in ``engine_note``).

The cases it is checked on (fixtures, the lessons' designs, the capstone) are in
:mod:`helpers.advisor_cases`.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Iterable, Iterator, Mapping

import bson

from .sizes import MAX_BSON_SIZE

__all__ = ["CODES", "SOURCES", "Thresholds", "Finding", "Report", "Operation", "Workload", "review",
           "record_workload"]

CODES = ("AVOID_UNBOUNDED_ARRAY", "REDUCE_DOCUMENT_SIZE", "REDUCE_LOOKUP_OPS", "REMOVE_UNNECESSARY_INDEXES",
         "REDUCE_NUMBER_OF_NAMESPACES", "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", "OPTIMIZE_TEXT_QUERIES")
SEVERITIES = ("high", "medium", "low")
_SKIP = re.compile(r"^(system\.|workbook_registry$|workbook_probe_)")  # not the reviewed schema

#: Where each threshold comes from, as the sources say it (checked against MongoDB's documentation).
SOURCES: dict[str, str] = {
    "max_array_elements": (
        "MongoDB publishes no element count. The manual (Schema Design Anti-Patterns: Avoid Unbounded "
        "Arrays) warns of arrays that grow without limit towards the 16 MiB document limit and slow "
        "index performance; Atlas raises AVOID_UNBOUNDED_ARRAY (trigger DOCS_CONTAIN_UNBOUNDED_ARRAY) "
        "for 'an array field with too many elements' without a number. 1,000 is this workbook's default: "
        "set it to what your reads can use."),
    "large_document_bytes": (
        "MongoDB publishes no size: the manual (Bloated Documents) and Atlas (REDUCE_DOCUMENT_SIZE, "
        "trigger DOC_SIZE_TOO_LARGE) say documents larger than the common query needs strain RAM and "
        "bandwidth. The hard limit is 16 MiB = 16,777,216 bytes (MongoDB Limits and Thresholds). "
        "1 MiB (1/16 of the limit) is this workbook's default; severity is high from half the limit on."),
    "lookup_share": (
        "Atlas raises REDUCE_LOOKUP_OPS on the share and on the number of queries that use $lookup "
        "(triggers PERCENT_QUERIES_USE_LOOKUP, NUMBER_OF_QUERIES_USE_LOOKUP) without publishing the values. "
        "Half of a collection's reads in the workload is this workbook's default."),
    "max_namespaces": (
        "'In general, we recommend limiting collections to 10,000 per replica set' (MongoDB Developer "
        "Center, Massive Number of Collections). The Atlas FAQ recommends at most 5,000 collections and "
        "indexes combined on an M10, 10,000 on M20/M30, 100,000 on M40 and up. Compared here with the "
        "database's collections plus indexes."),
    "same_shape_collections": (
        "No MongoDB number. The manual's Reduce the Number of Collections example keeps one collection "
        "per day, all of one shape. This workbook flags that shape: this many collections or more whose "
        "names differ only in their last part and that share their field names and indexes."),
    "max_documents": "Documents read per collection, in _id order (the rest is not sampled); not a MongoDB number.",
}
_RULES_WITHOUT_NUMBERS = {
    "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES": (
        "Any regex with the i option in the workload. The manual: case-insensitive indexes do not improve "
        "$regex queries ($regex is not collation-aware); Atlas raises this code (trigger "
        "QUERIES_CONTAIN_CASE_INSENSITIVE_REGEX) and recommends MongoDB Search."),
    "OPTIMIZE_TEXT_QUERIES": (
        "Any unanchored regex in the workload: a text search that examines every index key, or every "
        "document without an index. Atlas also raises this code for $text queries (recommending $search); "
        "this advisor does not flag $text."),
    "REMOVE_UNNECESSARY_INDEXES": (
        "An index no operation of the workload can use (only when the workload reads that collection), "
        "or one whose keys are a prefix of another index's that is not partial, sparse or hidden (the "
        "manual: unnecessary indexes are rarely used, redundant because another compound index covers "
        "them, or not used at all). _id, unique "
        "and TTL indexes are never flagged. Atlas also counts indexes (trigger NUM_INDEXES) without "
        "publishing a number; the count is reported as evidence."),
}

_LESSONS = {
    "outlier": "02 · the outlier pattern (2.3): embed the first N children, move the rest to overflow documents",
    "reference": "01 · reference the children from a collection of their own (1.7), or bucket them (1.6)",
    "per_child": "04 · one document per child in a single collection (4.5), or a bounded subset with $push $slice (4.4)",
    "split": "01 · move what the main read does not need to a referenced collection (1.7)",
    "REDUCE_LOOKUP_OPS": "04 · one polymorphic collection read by one query instead of three joined by "
                         "$lookup (4.5); 01 · embed what is read together (1.1)",
    "REMOVE_UNNECESSARY_INDEXES": "04 · index use (4.7): a compound index led by the equality field serves the "
                                  "queries; 01 · what an index buys and costs (1.3)",
    "REDUCE_NUMBER_OF_NAMESPACES": "04 · one collection with a type field and a compound key (4.5) instead of "
                                   "a collection per key value",
    "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES": "06 · an equality on a lower-case copy, or with a collation "
                                               "(strength 2) on an index with the same collation (6.3); 04 · 4.7: "
                                               "why the regex examines every key",
    "OPTIMIZE_TEXT_QUERIES": "06 · keywords in an indexed array, matched by equality (6.3), or a text index "
                             "($text) / MongoDB Search ($search); 04 · 4.7: an unanchored regex examines every key",
}


# ---------------------------------------------------------------------------------------------
# thresholds

@dataclass(frozen=True)
class Thresholds:
    """Every number the advisor uses; override any with ``Thresholds(max_array_elements=200)``.

    The sources of each default are in :data:`SOURCES` (``Thresholds().table()`` shows them).
    """

    max_array_elements: int = 1_000  # flag an array longer than this
    large_document_bytes: int = 1_048_576  # flag a document larger than this (1 MiB)
    lookup_share: float = 0.5  # flag a collection when this share of its reads use $lookup
    max_namespaces: int = 10_000  # flag a database with this many collections + indexes
    same_shape_collections: int = 10  # flag this many collections of one shape (a collection per key)
    max_documents: int = 50_000  # documents read per collection

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Thresholds.{f.name} must be a positive number, got {value!r}")
        if self.lookup_share > 1:
            raise ValueError(f"Thresholds.lookup_share is a share (0 to 1], got {self.lookup_share!r}")

    def table(self) -> Any:
        """The thresholds with their values and sources (a pandas DataFrame)."""
        import pandas as pd

        rows = [{"threshold": f.name, "value": getattr(self, f.name), "source": SOURCES[f.name]}
                for f in fields(self)]
        rows += [{"threshold": f"({code})", "value": "-", "source": text}
                 for code, text in _RULES_WITHOUT_NUMBERS.items()]
        return pd.DataFrame(rows).set_index("threshold")


# ---------------------------------------------------------------------------------------------
# findings and the report

@dataclass(frozen=True)
class Finding:
    """One anti-pattern found: where, how bad, the numbers that show it, and the lesson that fixes it."""

    code: str
    collection: str | None
    field: str | None
    severity: str
    evidence: dict[str, Any]
    summary: str
    lesson: str
    engine_note: str | None = None  # evidence this engine cannot show (from the probed capabilities)
    engine_keys: tuple[str, ...] = ()  # evidence keys whose value depends on an engine capability

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        """(code, collection, field): what a fixture or an exercise compares."""
        return (self.code, self.collection, self.field)

    def as_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    def evidence_text(self, engine_evidence: bool = False) -> str:
        """The evidence in one line; without the engine-dependent keys unless ``engine_evidence``."""
        return _evidence_text({k: v for k, v in self.evidence.items() if engine_evidence or k not in self.engine_keys})


@dataclass
class Report:
    """What :func:`review` found in one database (print it, or ``to_json()`` for scripts)."""

    database: str
    engine: str | None
    collections: list[str]
    documents_read: int
    documents_total: int
    workload: str | None
    workload_operations: int
    findings: list[Finding]
    thresholds: Thresholds
    notes: list[str] = field(default_factory=list)

    def keys(self) -> set[tuple[str, str | None, str | None]]:
        return {f.key for f in self.findings}

    def codes(self) -> list[str]:
        return sorted({f.code for f in self.findings}, key=CODES.index)

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    def table(self, engine_evidence: bool = False) -> Any:
        """One row per finding: severity, code, collection, field, evidence, lesson (a pandas DataFrame).

        Evidence that depends on an engine capability is left out unless ``engine_evidence``, so the
        table is the same on every engine.
        """
        import pandas as pd

        rows = [{"severity": f.severity, "code": f.code, "collection": f.collection, "field": f.field,
                 "evidence": f.evidence_text(engine_evidence),
                 "fix": f.lesson} for f in self.findings]
        return pd.DataFrame(rows, columns=["severity", "code", "collection", "field", "evidence", "fix"])

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({
            "database": self.database, "engine": self.engine, "collections": self.collections,
            "documents_read": self.documents_read, "documents_total": self.documents_total,
            "workload": self.workload, "workload_operations": self.workload_operations,
            "thresholds": asdict(self.thresholds), "notes": self.notes,
            "findings": [f.as_dict() for f in self.findings]})

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def text(self) -> str:
        """The readable report."""
        counts = Counter(f.severity for f in self.findings)
        head = [f"Schema review of database {self.database!r}"
                + (f" ({self.engine})" if self.engine else "") + ":",
                f"  {len(self.collections)} collection{'' if len(self.collections) == 1 else 's'}, "
                f"{self.documents_read:,} of {self.documents_total:,} "
                f"documents read; workload: " + (f"{self.workload_operations:,} operations ({self.workload})"
                                                 if self.workload else "none given (workload rules skipped)"),
                f"  {len(self.findings)} finding{'' if len(self.findings) == 1 else 's'}"
                + (" (" + ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s]) + ")" if self.findings
                   else ": nothing to fix at these thresholds")]
        body = []
        for f in self.findings:
            where = ".".join(p for p in (f.collection, f.field) if p) or "(database)"
            body += ["", f"[{f.severity}] {f.code}  {where}", f"  {f.summary}",
                     f"  evidence: {_evidence_text(f.evidence)}", f"  fix: {f.lesson}"]
            if f.engine_note:
                body.append(f"  engine: {f.engine_note}")
        tail = [""] + [f"note: {n}" for n in self.notes] if self.notes else []
        return "\n".join(head + body + tail)

    __str__ = text


def _evidence_text(evidence: Mapping[str, Any]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return {True: "yes", False: "no", None: "unknown"}[v]
        if isinstance(v, int):
            return f"{v:,}"
        if isinstance(v, float):
            return f"{v:.0%}" if 0 <= v <= 1 else f"{v:,.1f}"
        if isinstance(v, (list, tuple)):
            return ", ".join(fmt(x) for x in v)
        return str(v)
    return "; ".join(f"{k} {fmt(v)}" for k, v in evidence.items())


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


# ---------------------------------------------------------------------------------------------
# the workload: command documents, parsed into operations

@dataclass(frozen=True)
class Operation:
    """One command of a workload, as the rules need it."""

    kind: str  # find | aggregate | count | distinct | update | delete | findAndModify | insert | other
    collection: str
    filters: tuple[dict, ...] = ()  # predicates that can use this collection's indexes
    sort: dict | None = None
    collation: dict | None = None
    pipeline: tuple[dict, ...] = ()
    updates: tuple[Any, ...] = ()  # update documents (u), for array growth
    key: str | None = None  # distinct's key
    all_predicates: tuple[dict, ...] = ()  # every $match / filter, for the regex rules

    @property
    def is_read(self) -> bool:
        return self.kind in ("find", "aggregate", "count", "distinct")


_READ_KINDS = {"find": "find", "aggregate": "aggregate", "count": "count", "distinct": "distinct",
               "update": "update", "delete": "delete", "findandmodify": "findAndModify", "insert": "insert"}


@dataclass
class Workload:
    """The operations a workload sent, per collection (build it with :meth:`from_commands`)."""

    operations: list[Operation]
    source: str = "recorded commands"

    @classmethod
    def from_commands(cls, commands: Iterable[Mapping[str, Any]], database: str | None = None,
                      source: str = "recorded commands") -> "Workload":
        """Parse command documents as sent (``counter.command_documents``); others databases' are skipped."""
        ops: list[Operation] = []
        for cmd in commands:
            if database is not None and cmd.get("$db") not in (None, database):
                continue
            ops.extend(_parse_command(cmd))
        return cls(ops, source)

    @classmethod
    def from_counter(cls, counter: Any, database: str | None = None) -> "Workload":
        """The workload a ``helpers.counting(keep_commands=True)`` block recorded."""
        if not getattr(counter, "keep_commands", False):
            raise ValueError("this counter kept no command documents: record the workload with "
                             "helpers.counting(keep_commands=True) (or helpers.advisor.record_workload)")
        return cls.from_commands(counter.command_documents, database)

    @classmethod
    def from_profile(cls, db: Any, limit: int = 10_000) -> "Workload":
        """The operations a real server's profiler recorded in ``db.system.profile`` (read only).

        Turn the profiler on yourself first (``db.command("profile", 2)`` logs every operation, on
        that mongod only); the advisor never changes the server's settings.
        """
        docs = db["system.profile"].find({"ns": {"$regex": f"^{re.escape(db.name)}\\."}}).sort("ts", 1).limit(limit)
        commands = []
        for d in docs:
            coll = str(d.get("ns", "")).split(".", 1)[-1]
            cmd = dict(d.get("command") or {})
            op = d.get("op")
            if op in ("update", "remove") and "q" in cmd:  # profiler form of a single update/delete
                cmd = ({"update": coll, "updates": [cmd]} if op == "update"
                       else {"delete": coll, "deletes": [cmd]})
            if op == "getmore" or not cmd:
                continue
            commands.append(cmd)
        return cls.from_commands(commands, source="the profiler's system.profile")

    def on(self, collection: str) -> list[Operation]:
        return [op for op in self.operations if op.collection == collection]

    def __len__(self) -> int:
        return len(self.operations)


def record_workload(fn: Callable[[], Any], database: str | None = None) -> Workload:
    """Run ``fn`` and return the workload it sent (``helpers.counting(keep_commands=True)`` around it)."""
    from .counting import counting

    with counting(keep_commands=True) as counter:
        result = fn()
        if hasattr(result, "__next__"):
            list(result)
    return Workload.from_counter(counter, database)


def _first_key(cmd: Mapping[str, Any]) -> str:
    return next((k for k in cmd if not k.startswith("$")), "")


def _parse_command(cmd: Mapping[str, Any]) -> list[Operation]:
    name = _first_key(cmd)
    kind = _READ_KINDS.get(name.lower())
    coll = cmd.get(name)
    if kind is None or not isinstance(coll, str):
        return []
    collation = cmd.get("collation")
    if kind == "find":
        f = dict(cmd.get("filter") or {})
        return [Operation("find", coll, (f,), _as_dict(cmd.get("sort")), collation, all_predicates=(f,))]
    if kind == "count":
        f = dict(cmd.get("query") or {})
        return [Operation("count", coll, (f,), None, collation, all_predicates=(f,))]
    if kind == "distinct":
        f = dict(cmd.get("query") or {})
        return [Operation("distinct", coll, (f,), None, collation, key=cmd.get("key"), all_predicates=(f,))]
    if kind == "aggregate":
        pipeline = tuple(cmd.get("pipeline") or ())
        first = pipeline[0] if pipeline else {}
        filters: tuple[dict, ...] = (dict(first["$match"]),) if "$match" in first else ()
        sort = None
        for stage in pipeline[:2]:
            if "$sort" in stage:
                sort = dict(stage["$sort"])
                break
            if "$match" not in stage:
                break
        ops = [Operation("aggregate", coll, filters, sort, collation, pipeline,
                         all_predicates=tuple(_matches(pipeline)))]
        ops += _lookup_accesses(pipeline, collation)
        return ops
    if kind == "update":
        ups = list(cmd.get("updates") or [])
        return [Operation("update", coll, tuple(dict(u.get("q") or {}) for u in ups), None,
                          ups[0].get("collation") if ups else None,
                          updates=tuple(u.get("u") for u in ups),
                          all_predicates=tuple(dict(u.get("q") or {}) for u in ups))]
    if kind == "delete":
        dels = list(cmd.get("deletes") or [])
        qs = tuple(dict(d.get("q") or {}) for d in dels)
        return [Operation("delete", coll, qs, None, None, all_predicates=qs)]
    if kind == "findAndModify":
        q = dict(cmd.get("query") or {})
        return [Operation("findAndModify", coll, (q,), _as_dict(cmd.get("sort")), collation,
                          updates=(cmd.get("update"),) if cmd.get("update") is not None else (),
                          all_predicates=(q,))]
    return [Operation("insert", coll)]


def _as_dict(sort: Any) -> dict | None:
    if not sort:
        return None
    return dict(sort) if not isinstance(sort, (list, tuple)) else {k: v for k, v in sort}


def _matches(pipeline: Iterable[Any]) -> Iterable[dict]:
    """Every $match a pipeline runs on its own collection ($facet branches included; a $lookup's
    pipeline runs on the foreign collection: see :func:`_lookup_accesses`)."""
    for stage in pipeline:
        if not isinstance(stage, Mapping):
            continue
        for op, spec in stage.items():
            if op == "$match" and isinstance(spec, Mapping):
                yield dict(spec)
            elif op == "$facet" and isinstance(spec, Mapping):
                for sub in spec.values():
                    yield from _matches(sub)


def _lookups(pipeline: Iterable[Any]) -> list[dict]:
    out = []
    for stage in pipeline:
        if isinstance(stage, Mapping):
            for op, spec in stage.items():
                if op == "$lookup" and isinstance(spec, Mapping):
                    out.append(dict(spec))
                    out += _lookups(spec.get("pipeline") or ())
                elif op == "$facet" and isinstance(spec, Mapping):
                    for sub in spec.values():
                        out += _lookups(sub)
    return out


def _lookup_accesses(pipeline: Iterable[Any], collation: dict | None) -> list[Operation]:
    """The queries a $lookup / $graphLookup runs on its foreign collection (they can use its indexes)."""
    ops = []
    for stage in pipeline:
        if not isinstance(stage, Mapping):
            continue
        spec = stage.get("$lookup") or stage.get("$graphLookup")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("from"), str):
            continue
        foreign = spec.get("foreignField") or spec.get("connectToField")
        filters = [{foreign: 0}] if isinstance(foreign, str) else []
        sub = list(spec.get("pipeline") or ())
        if sub and "$match" in sub[0]:
            filters.append(dict(sub[0]["$match"]))
        ops.append(Operation("lookup", spec["from"], tuple(filters), None, collation,
                             all_predicates=tuple(_matches(sub))))
        ops += _lookup_accesses(sub, collation)
    return ops


# ---------------------------------------------------------------------------------------------
# predicates: fields, regexes

def _predicate_fields(pred: Any) -> dict[str, Any]:
    """Top-level field -> condition of a query predicate ($and/$or/$nor branches included)."""
    out: dict[str, Any] = {}
    if not isinstance(pred, Mapping):
        return out
    for k, v in pred.items():
        if k in ("$and", "$or", "$nor") and isinstance(v, (list, tuple)):
            for branch in v:
                for kk, vv in _predicate_fields(branch).items():
                    out.setdefault(kk, vv)
        elif k == "$text":
            out.setdefault("$text", v)
        elif not k.startswith("$"):
            out.setdefault(k, v)
    return out


@dataclass(frozen=True)
class _Regex:
    field: str
    pattern: str
    case_insensitive: bool

    @property
    def anchored(self) -> bool:
        return self.pattern.startswith("^") or self.pattern.startswith("\\A")

    @property
    def exact(self) -> bool:  # ^...$ without other regex syntax: an equality that ignores case
        body = self.pattern.lstrip("^").removeprefix("\\A").rstrip("$")
        return self.anchored and self.pattern.endswith("$") and not re.search(r"(?<!\\)[.*+?()\[\]{}|]", body)

    def shown(self) -> str:
        return f"/{self.pattern}/{'i' if self.case_insensitive else ''}"


def _regex_of(value: Any) -> tuple[str, bool] | None:
    if isinstance(value, re.Pattern):
        return value.pattern, bool(value.flags & re.IGNORECASE)
    if isinstance(value, bson.Regex):
        flags = value.flags
        ci = "i" in flags if isinstance(flags, str) else bool(flags & re.IGNORECASE)
        return str(value.pattern), ci
    return None


def _regexes(pred: Any) -> list[_Regex]:
    out: list[_Regex] = []
    for fld, cond in _predicate_fields(pred).items():
        if fld == "$text":
            continue
        candidates = [cond]
        if isinstance(cond, Mapping):
            if "$regex" in cond:
                got = _regex_of(cond["$regex"])
                pattern, ci = got if got else (str(cond["$regex"]), False)
                ci = ci or "i" in str(cond.get("$options", ""))
                out.append(_Regex(fld, pattern, ci))
                continue
            candidates = list(cond.get("$in") or []) + [v for k, v in cond.items() if k == "$eq"]
            if "$elemMatch" in cond:
                out += [_Regex(f"{fld}.{r.field}", r.pattern, r.case_insensitive) for r in _regexes(cond["$elemMatch"])]
        for c in candidates:
            got = _regex_of(c)
            if got:
                out.append(_Regex(fld, *got))
    return out


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


def _array_lengths(value: Any, path: str, out: dict[str, list[int]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _array_lengths(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list):
        out[path].append(len(value))
        for item in value:
            if isinstance(item, Mapping):
                _array_lengths(item, path, out)


def _in_id_order(coll: Any, limit: int) -> Iterator[dict[str, Any]]:
    """The first ``limit`` documents in ``_id`` order, along the ``_id`` index (:func:`helpers.plans.find_in_id_order`)."""
    from .plans import find_in_id_order

    return find_in_id_order(coll, limit=limit)


def _read_collection(db: Any, name: str, max_documents: int) -> _Collection:
    coll = db[name]
    count = coll.estimated_document_count()
    sizes = []
    arrays: dict[str, list[int]] = defaultdict(list)
    top_fields: set[str] | None = None
    read = 0
    for doc in _in_id_order(coll, max_documents):
        read += 1
        size = len(bson.encode(doc))
        big_field, big = None, 0
        for k, v in doc.items():
            if k == "_id":
                continue
            s = len(bson.encode({k: v})) - 5
            if s > big:
                big_field, big = k, s
        sizes.append((size, doc.get("_id"), big_field, big))
        _array_lengths({k: v for k, v in doc.items() if k != "_id"}, "", arrays)
        if top_fields is None:
            top_fields = set(doc)
    try:
        indexes = coll.index_information()
    except Exception as e:  # a view has no indexes of its own (OperationFailure on a server)
        if type(e).__name__ != "OperationFailure":
            raise
        indexes = {}
    return _Collection(name, count, read, sizes, dict(arrays), indexes, frozenset(top_fields or ()))


def _nearest_rank(values: list[int], p: float) -> int:
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


# ---------------------------------------------------------------------------------------------
# the rules

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


def _array_findings(c: _Collection, t: Thresholds, workload: Workload | None) -> list[Finding]:
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
        lesson = _LESSONS["per_child"] if "." in path else (
            _LESSONS["outlier"] if share <= 0.1 else _LESSONS["reference"])
        out.append(Finding(
            "AVOID_UNBOUNDED_ARRAY", c.name, path, "high" if high else "medium", evidence,
            f"{over:,} of {len(lengths):,} '{path}' arrays hold more than {t.max_array_elements:,} elements "
            f"(longest {max(lengths):,})" + ("; the workload keeps pushing to it without $slice" if unbounded else ""),
            lesson))
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
    lesson = (_LESSONS["per_child"] if any(p.startswith(f"{fld}.") for p in c.arrays) else
              _LESSONS["reference"] if is_array else _LESSONS["split"])
    return [Finding("REDUCE_DOCUMENT_SIZE", c.name, fld, "high" if biggest[0] > MAX_BSON_SIZE // 2 else "medium",
                    evidence, f"{len(over):,} document{'' if len(over) == 1 else 's'} over {t.large_document_bytes:,} bytes; the largest is "
                              f"{biggest[0]:,} bytes ({evidence['largest % of 16 MiB']}% of 16 MiB), mostly '{fld}'",
                    lesson)]


def _lookup_findings(c: _Collection, t: Thresholds, workload: Workload) -> list[Finding]:
    reads = [op for op in workload.on(c.name) if op.is_read]
    with_lookup = [op for op in reads if op.kind == "aggregate" and _lookups(op.pipeline)]
    if not with_lookup or len(with_lookup) / len(reads) < t.lookup_share:
        return []
    joined = sorted({str(lk.get("from")) for op in with_lookup for lk in _lookups(op.pipeline)})
    share = len(with_lookup) / len(reads)
    evidence = {"reads": len(reads), "reads with $lookup": len(with_lookup), "share": round(share, 2),
                "$lookup stages": sum(len(_lookups(op.pipeline)) for op in with_lookup)}
    return [Finding("REDUCE_LOOKUP_OPS", c.name, ", ".join(joined), "medium", evidence,
                    f"{len(with_lookup)} of {len(reads)} reads of '{c.name}' join {', '.join(joined)} with $lookup",
                    _LESSONS["REDUCE_LOOKUP_OPS"])]


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


def _usable(spec: Mapping[str, Any], op: Operation, collations: bool) -> bool:
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


def _index_findings(c: _Collection, workload: Workload | None, collations: bool) -> list[Finding]:
    out = []
    specs = {n: s for n, s in c.indexes.items()}
    ops = [op for op in workload.on(c.name) if op.filters or op.sort or op.kind == "distinct"] if workload else []
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
        if workload is not None:
            evidence["operations on the collection"] = len(ops)
            evidence["operations that can use it"] = sum(_usable(spec, op, collations) for op in ops)
        if covering:
            evidence["prefix of"] = covering[0]
        why = "; ".join(w for w, on in ((f"its keys are a prefix of {covering[0] if covering else ''}, which "
                                          f"serves the same queries", bool(covering)),
                                         ("no operation of the workload can use it", unused)) if on)
        out.append(Finding("REMOVE_UNNECESSARY_INDEXES", c.name, name, "medium" if unused else "low", evidence,
                           f"index {name}: {why}; every write still maintains it", _LESSONS["REMOVE_UNNECESSARY_INDEXES"],
                           None if collations or not spec.get("collation") else
                           "this engine drops index collations: collation matching is not checked"))
    return out


def _family_key(name: str) -> str:
    digits = re.sub(r"[0-9]+", "#", name)
    parts = re.split(r"([_.\-])", digits)
    return "".join(parts[:-1]) + "*" if len(parts) > 1 else digits


def _namespace_findings(colls: list[_Collection], t: Thresholds, namespaces: int, total_colls: int) -> list[Finding]:
    out = []
    if namespaces >= t.max_namespaces:
        out.append(Finding("REDUCE_NUMBER_OF_NAMESPACES", None, None, "high",
                           {"collections": total_colls, "collections + indexes": namespaces},
                           f"{namespaces:,} collections and indexes (threshold {t.max_namespaces:,})",
                           _LESSONS["REDUCE_NUMBER_OF_NAMESPACES"]))
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
                           f"key value, growing with the keys", _LESSONS["REDUCE_NUMBER_OF_NAMESPACES"]))
    return out


def _regex_findings(colls: dict[str, _Collection], workload: Workload, collations: bool) -> list[Finding]:
    seen: dict[tuple[str, str, str], list[_Regex]] = defaultdict(list)
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
        else:
            summary = (f"{len(found)} unanchored regex quer{'y' if len(found) == 1 else 'ies'} on '{fld}': a text "
                       f"search that examines every " + ("index key" if specs else "document"))
        out.append(Finding(code, coll, fld, "medium", evidence, summary, _LESSONS[code], note,
                           ("case-insensitive index on the field",) if code.startswith("OPTIMIZE_CASE") else ()))
    return out


# ---------------------------------------------------------------------------------------------
# review

def _index_count(db: Any, name: str) -> int:
    try:
        return len(db[name].index_information())
    except Exception as e:  # a view, or a system collection this user may not list
        if type(e).__name__ != "OperationFailure":
            raise
        return 0


_CURRENT = object()


def review(db: Any, workload: Workload | None = None, *, thresholds: Thresholds | None = None,
           collections: Iterable[str] | None = None, info: Any = _CURRENT) -> Report:
    """Review ``db`` (and ``workload``, if given) and return a :class:`Report`. Only reads.

    ``collections`` limits the review to those names (the namespace count still covers the whole
    database); ``info`` is the backend's ``BackendInfo`` (default: that of the connection ``db`` was
    opened with, ``helpers.backends.info_of(db)``; the review never connects or probes, since probing
    writes), whose probed capabilities say which evidence this engine can show; ``info=None`` for an
    engine that was not probed (``workbook.py advise``, or a ``db`` of your own client): its index
    collations are then taken as reported. Introduced in notebook 06.
    """
    t = thresholds or Thresholds()
    if workload is not None and not isinstance(workload, Workload):
        raise TypeError(f"workload must be a helpers.advisor.Workload (from Workload.from_counter or "
                        f"record_workload), not {type(workload).__name__}")
    if info is _CURRENT:
        from .backends import info_of
        info = info_of(db)
    collations = bool(getattr(info.caps, "collation", True)) if info is not None else True
    names = sorted(db.list_collection_names())
    reviewed = [n for n in names if not _SKIP.match(n)]
    if collections is not None:
        wanted = set(collections)
        missing = sorted(wanted - set(names))
        reviewed = [n for n in reviewed if n in wanted]
    else:
        missing = []
    colls = {n: _read_collection(db, n, t.max_documents) for n in reviewed}
    index_counts = {n: len(colls[n].indexes) if n in colls else _index_count(db, n) for n in names}
    findings: list[Finding] = []
    for c in colls.values():
        findings += _array_findings(c, t, workload)
        findings += _size_findings(c, t)
        findings += _index_findings(c, workload, collations)
        if workload is not None:
            findings += _lookup_findings(c, t, workload)
    findings += _namespace_findings(list(colls.values()), t, len(names) + sum(index_counts.values()), len(names))
    if workload is not None:
        findings += _regex_findings(colls, workload, collations)
    findings.sort(key=lambda f: (SEVERITIES.index(f.severity), CODES.index(f.code), str(f.collection), str(f.field)))
    notes = []
    if missing:
        notes.append(f"not in the database (not reviewed): {', '.join(missing)}")
    partial = [c.name for c in colls.values() if c.read < c.count]
    if partial:
        notes.append(f"read the first {t.max_documents:,} documents (in _id order) of: {', '.join(partial)}")
    if workload is None:
        notes.append("no workload: REDUCE_LOOKUP_OPS, unused indexes and the regex rules need one "
                     "(helpers.advisor.record_workload, or Workload.from_profile on a real server)")
    if info is None:
        notes.append("capabilities not probed (probing writes): index collations are taken as the server reports them")
    engine = f"{info.engine} {info.version}" if info is not None else None
    return Report(db.name, engine, reviewed, sum(c.read for c in colls.values()),
                  sum(c.count for c in colls.values()), workload.source if workload is not None else None,
                  len(workload) if workload is not None else 0, findings, t, notes)

