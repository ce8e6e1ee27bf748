"""Explain plans, read: the walkers over an explain's tree (introduced in notebook 00).

:func:`plan_summary` gives a query's stages and the keys and documents it examined (notebooks 00,
01, 04, and ``helpers.measure.benchmark(explain=...)``), :func:`explain_find` the same for a ``find``
it explains (``helpers.embedding.find_work``, ``helpers.buckets.drop_plan``); :func:`lookup_summary` what a server
reports about a ``$lookup`` (``helpers.embedding.lookup_stage_stats``, notebook 01).
:func:`find_in_id_order` reads a collection in ``_id`` order along the ``_id`` index: the helpers that
read whole collections use it (``bson_sizes``, ``infer_schema``, ``miss_rate``, the advisor).
"""
from __future__ import annotations

from typing import Any, Iterator

__all__ = ["plan_summary", "explain_find", "lookup_summary", "examined", "find_in_id_order"]


def find_in_id_order(coll: Any, filter: dict | None = None, projection: Any = None, *,
                     limit: int = 0) -> Iterator[Any]:
    """The documents of ``coll`` (matching ``filter``) in ``_id`` order.

    With no filter the ``_id`` index is walked in order (``hint({_id: 1})``): the plan a real
    MongoDB picks for this sort by itself, which SecantusDB takes only when told (otherwise it
    reads and sorts every document in memory). With a filter the server plans the query. Where
    the hint is refused (a time-series collection has no ``_id`` index to hint), the same sorted
    query runs without it. The workbook's helpers read whole collections through this function.
    """
    from pymongo.errors import OperationFailure

    query = dict(filter or {})

    def first_of(hint: Any) -> tuple[Any, Any]:
        options = {"sort": [("_id", 1)], "limit": limit, **({"hint": hint} if hint else {})}
        cursor = coll.find(query, projection, **options)
        return next(cursor, None), cursor

    if query:
        first, cursor = first_of(None)
    else:
        try:
            first, cursor = first_of([("_id", 1)])
        except OperationFailure as e:  # only a refused hint: let the server plan the sort
            if "hint" not in str(e).lower():
                raise
            first, cursor = first_of(None)
    if first is not None:
        yield first
        yield from cursor


def plan_summary(explain: dict) -> tuple[str, int | None, int | None]:
    """Stages (outermost first), total keys examined and total documents examined of an explain: the
    explain's own ``executionStats`` where it has them, else the sum of its parts' (a sharded
    explain's shards, an aggregation's ``$cursor`` stage)."""
    keys = docs = None
    plans: list[list[str]] = []  # the stages of each winning plan met (a shard's, a $cursor's, the top's)

    def walk(node: Any, into: list[str] | None) -> None:
        nonlocal keys, docs
        if isinstance(node, dict):
            if into is not None and "stage" in node and isinstance(node["stage"], str):
                into.append(node["stage"])
            for k, v in node.items():
                if k == "executionStats" and isinstance(v, dict):
                    if "totalKeysExamined" in v:
                        keys = (keys or 0) + int(v["totalKeysExamined"])
                    if "totalDocsExamined" in v:
                        docs = (docs or 0) + int(v["totalDocsExamined"])
                if into is None and k in ("winningPlan", "queryPlan"):
                    plans.append([])
                    walk(v, plans[-1])
                else:
                    walk(v, into)
        elif isinstance(node, list):
            for v in node:
                walk(v, into)

    walk(explain, None)
    stages = plans[0] if plans else []  # one plan shown: the same plan reported twice reads once
    top = explain.get("executionStats") if isinstance(explain, dict) else None
    if isinstance(top, dict) and "totalKeysExamined" in top:
        # an engine that reports an aggregation's stats both at the top and inside its $cursor stage
        # (SecantusDB) would be counted twice: the top level is the whole plan's
        keys, docs = int(top["totalKeysExamined"]), int(top.get("totalDocsExamined", 0))
    seen: list[str] = []
    for s in stages:
        if not seen or seen[-1] != s:
            seen.append(s)
    return " > ".join(seen), keys, docs


def explain_find(collection: Any, filter: dict, sort: Any = None) -> tuple[str, int, int]:
    """Stages, keys examined and documents examined of ``collection.find(filter)`` (with ``sort``),
    from its explain. Only meaningful where ``caps.explain`` holds: an explain without counters is an
    error, never a zero."""
    cursor = collection.find(filter)
    if sort:
        cursor = cursor.sort(list(sort))
    stages, keys, docs = plan_summary(cursor.explain())
    if keys is None or docs is None:
        raise ValueError(f"explain on {collection.name!r} gives no keys/documents examined: check caps.explain first")
    return stages, keys, docs


def lookup_summary(plan: dict) -> dict[str, Any] | None:
    """The ``$lookup``'s join strategy, keys and documents examined in an aggregate's explain.

    A real MongoDB reports either counters on the ``$lookup`` stage (classic engine) or an
    ``EQ_LOOKUP`` plan stage with its ``strategy`` (slot-based engine, 6.0+), whose counters then
    cover the whole pipeline (reported with ``(whole pipeline)``). None when it reports neither.
    """
    counters = ("totalKeysExamined", "totalDocsExamined", "collectionScans", "indexesUsed")
    found: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$lookup" in node and "totalDocsExamined" in node and "lookup stage" not in found:
                found["lookup stage"] = {k: node[k] for k in counters if k in node}
            if str(node.get("stage", "")).startswith("EQ_LOOKUP") and "strategy" not in found:
                found["strategy"] = node.get("strategy")
                if node.get("indexName"):
                    found["index"] = node["indexName"]
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(plan)
    if not found:
        return None
    out: dict[str, Any] = dict(found.pop("lookup stage", {}))
    out.update(found)
    if "strategy" in out and "totalDocsExamined" not in out:
        stats = plan.get("executionStats", {}) or {}
        out.update({f"{k} (whole pipeline)": stats[k] for k in counters if k in stats})
    return out


def examined(database: Any, commands: list[dict]) -> tuple[int | None, int | None]:
    """Keys and documents the server examined for the ``find``/``aggregate`` commands among
    ``commands`` (``helpers.counting``'s ``count_commands(keep_commands=True)``), by explaining each
    (notebook 03); other commands (``getMore``, writes) are skipped.

    ``(None, None)`` when one of them is an aggregation with ``$lookup`` or ``$graphLookup``: its
    explain counts the first stage's reads, not the lookups the stage runs for every node, so a sum
    would understate the work. Call it only where ``caps.explain`` is True.
    """
    keys = docs = 0
    for command in commands:
        if next(iter(command), None) not in ("find", "aggregate"):
            continue
        stages = command.get("pipeline", []) if "aggregate" in command else []
        if any("$lookup" in stage or "$graphLookup" in stage for stage in stages):
            return None, None
        cmd = {k: v for k, v in command.items() if k not in ("cursor", "batchSize", "singleBatch", "$db")}
        if "aggregate" in cmd:
            cmd["cursor"] = {}
        plan = database.command("explain", cmd, verbosity="executionStats")
        _, k, d = plan_summary(plan)
        keys += k or 0
        docs += d or 0
    return keys, docs
