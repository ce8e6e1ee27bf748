"""The advisor's observed workload (notebook 06): command documents, as sent or as the profiler kept
them, parsed into the operations the rules need (filters, sorts, collations, pipelines, updates,
projections), and the regexes their predicates hold.

A different thing from :mod:`helpers.workload`, which *states* an application's workload (named
operations with daily rates and their sources) before a design is measured: this one is *observed*,
one entry per command sent, with no rate and no name. :func:`helpers.advisor.review` reads it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import bson

from ..counting import count_commands

__all__ = ["ObservedOperation", "ObservedWorkload", "record_workload"]

# ---------------------------------------------------------------------------------------------
# the workload: command documents, parsed into operations

@dataclass(frozen=True)
class ObservedOperation:
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
    projection: dict | None = None  # find's projection, or the first $project of a pipeline

    @property
    def is_read(self) -> bool:
        return self.kind in ("find", "aggregate", "count", "distinct")


_READ_KINDS = {"find": "find", "aggregate": "aggregate", "count": "count", "distinct": "distinct",
               "update": "update", "delete": "delete", "findandmodify": "findAndModify", "insert": "insert"}


@dataclass
class ObservedWorkload:
    """The operations a workload sent, per collection (build it with :meth:`from_commands`)."""

    operations: list[ObservedOperation]
    source: str = "recorded commands"
    #: the time the workload covers, in days (None: not known). Unused indexes are judged only from a
    #: workload long enough to say so (``Thresholds.unused_index_days``): a page run once is not a week.
    days: float | None = None
    #: False when the workload holds only some of the operations sent: the profiler at level 1 keeps the
    #: slow ones (``slowms``), sampled (``sampleRate``) or filtered, so an index that serves only fast
    #: queries is in none of them. Unused indexes are then not judged (the report's notes say so).
    complete: bool = True

    @classmethod
    def from_commands(cls, commands: Iterable[Mapping[str, Any]], database: str | None = None,
                      source: str = "recorded commands", days: float | None = None) -> "ObservedWorkload":
        """Parse command documents as sent (``counter.command_documents``); others databases' are skipped."""
        ops: list[ObservedOperation] = []
        for cmd in commands:
            if database is not None and cmd.get("$db") not in (None, database):
                continue
            ops.extend(_parse_command(cmd))
        return cls(ops, source, days)

    @classmethod
    def from_counter(cls, counter: Any, database: str | None = None, days: float | None = None) -> "ObservedWorkload":
        """The workload a ``helpers.count_commands(keep_commands=True)`` block recorded; ``days``: the time
        of the application's life it stands for, if you know it (see :attr:`days`)."""
        if not getattr(counter, "keep_commands", False):
            raise ValueError("this counter kept no command documents: record the workload with "
                             "helpers.count_commands(keep_commands=True) (or helpers.advisor.record_workload)")
        return cls.from_commands(counter.command_documents, database, days=days)

    @classmethod
    def from_profile(cls, db: Any, limit: int = 10_000) -> "ObservedWorkload":
        """The operations a real server's profiler recorded in ``db.system.profile`` (read only).

        Turn the profiler on yourself first, in the form that is safe on a busy server: level 1 with
        a slow-operation threshold, a sample rate or a filter, e.g. ``db.command("profile", 1,
        slowms=0, sampleRate=0.05)`` (one operation in twenty), on that mongod only; level 2 writes
        every operation to ``system.profile``. The advisor never changes the server's settings.
        :attr:`days` is the time between the first and the last entry read. The workload is not
        :attr:`complete` (a level 1 profiler leaves the fast operations out, and those are the ones an
        index makes fast), so the review does not call an index unused from it.
        """
        docs = db["system.profile"].find({"ns": {"$regex": f"^{re.escape(db.name)}\\."}}).sort("ts", 1).limit(limit)
        commands, stamps = [], []
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
            if hasattr(d.get("ts"), "timestamp"):
                stamps.append(d["ts"])
        days = (max(stamps) - min(stamps)).total_seconds() / 86_400 if stamps else None
        workload = cls.from_commands(commands, source="the profiler's system.profile", days=days)
        workload.complete = False
        return workload

    def on(self, collection: str) -> list[ObservedOperation]:
        return [op for op in self.operations if op.collection == collection]

    def __len__(self) -> int:
        return len(self.operations)


def record_workload(fn: Callable[[], Any], database: str | None = None, days: float | None = None) -> ObservedWorkload:
    """Run ``fn`` and return the workload it sent (``helpers.count_commands(keep_commands=True)`` around it).

    ``days``: the time of the application's life this run stands for (see :attr:`ObservedWorkload.days`).
    Introduced in notebook 06."""

    with count_commands(keep_commands=True) as counter:
        result = fn()
        if hasattr(result, "__next__"):
            list(result)
    return ObservedWorkload.from_counter(counter, database, days)


def _first_key(cmd: Mapping[str, Any]) -> str:
    return next((k for k in cmd if not k.startswith("$")), "")


def _parse_command(cmd: Mapping[str, Any]) -> list[ObservedOperation]:
    name = _first_key(cmd)
    kind = _READ_KINDS.get(name.lower())
    coll = cmd.get(name)
    if kind is None or not isinstance(coll, str):
        return []
    collation = cmd.get("collation")
    if kind == "find":
        f = dict(cmd.get("filter") or {})
        proj = cmd.get("projection")
        return [ObservedOperation("find", coll, (f,), _as_dict(cmd.get("sort")), collation, all_predicates=(f,),
                          projection=dict(proj) if isinstance(proj, Mapping) else None)]
    if kind == "count":
        f = dict(cmd.get("query") or {})
        return [ObservedOperation("count", coll, (f,), None, collation, all_predicates=(f,))]
    if kind == "distinct":
        f = dict(cmd.get("query") or {})
        return [ObservedOperation("distinct", coll, (f,), None, collation, key=cmd.get("key"), all_predicates=(f,))]
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
        project = next((dict(st["$project"]) for st in pipeline
                        if isinstance(st, Mapping) and isinstance(st.get("$project"), Mapping)), None)
        ops = [ObservedOperation("aggregate", coll, filters, sort, collation, pipeline,
                         all_predicates=tuple(_matches(pipeline)), projection=project)]
        ops += _lookup_accesses(pipeline, collation)
        return ops
    if kind == "update":
        ups = list(cmd.get("updates") or [])
        return [ObservedOperation("update", coll, tuple(dict(u.get("q") or {}) for u in ups), None,
                          ups[0].get("collation") if ups else None,
                          updates=tuple(u.get("u") for u in ups),
                          all_predicates=tuple(dict(u.get("q") or {}) for u in ups))]
    if kind == "delete":
        dels = list(cmd.get("deletes") or [])
        qs = tuple(dict(d.get("q") or {}) for d in dels)
        return [ObservedOperation("delete", coll, qs, None, None, all_predicates=qs)]
    if kind == "findAndModify":
        q = dict(cmd.get("query") or {})
        return [ObservedOperation("findAndModify", coll, (q,), _as_dict(cmd.get("sort")), collation,
                          updates=(cmd.get("update"),) if cmd.get("update") is not None else (),
                          all_predicates=(q,))]
    return [ObservedOperation("insert", coll)]


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


def _lookup_accesses(pipeline: Iterable[Any], collation: dict | None) -> list[ObservedOperation]:
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
        ops.append(ObservedOperation("lookup", spec["from"], tuple(filters), None, collation,
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
