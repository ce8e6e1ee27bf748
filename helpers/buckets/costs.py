"""What notebook 08's bill is made of, beyond round trips and documents: the server's work.

* :func:`batch_filter` and :func:`index_keys_of`: the documents a write may touch, so that
  ``helpers.count_commands(index_keys=...)`` reads only those before and after it and counts the
  index keys the write inserted and deleted (``helpers.indexkeys``);
* :func:`write_work`: the keys and documents the server examined for a write's commands, from the
  explain of each query it sent and each update or delete's filter (an insert examines nothing);
* :func:`measured_read`: ``helpers.benchmark`` of one of the lesson's reads, with the keys and
  documents the server examined, from the explain of the very commands the read sent, where the
  engine explains faithfully (``caps.explain``). Those counts are one engine's plans: where the
  engine sorts in memory what one of the collection's indexes already holds in order, the plan note
  says so and says what a real MongoDB reads instead.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from ..backends import backend_info, info_of
from ..counting import count_commands, paused
from ..measure import Measurement, benchmark
from .pattern import BUCKETS, DESIGNS, window_start

__all__ = ["batch_filter", "index_keys_of", "measured_read", "read_plan", "write_work"]


def batch_filter(reports: Iterable[Mapping[str, Any]], *, design: str) -> dict[str, Any]:
    """The documents a store of ``reports`` may insert or change, as a filter: their aircraft in their
    time span (one document per report, a time series collection), or those aircraft's buckets of
    those hours (buckets). Narrow, so that the index-key snapshots before and after read few documents."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, not {design!r}")
    reports = list(reports)
    if not reports:
        raise ValueError("batch_filter: give the reports of one write (at least one)")
    aircraft = sorted({r["icao24"] for r in reports})
    first, last = min(r["time"] for r in reports), max(r["time"] for r in reports)
    if design == BUCKETS:
        return {"icao24": {"$in": aircraft}, "start": {"$gte": window_start(first), "$lte": window_start(last)}}
    return {"icao24": {"$in": aircraft}, "time": {"$gte": first, "$lte": last}}


def index_keys_of(collection: Any, filter: Mapping[str, Any]) -> dict[Any, dict[str, Any]] | None:
    """What ``count_commands(index_keys=...)`` reads for a write to ``collection`` that touches only
    documents matching ``filter``: ``{collection: filter}``. ``None`` (not counted, never zero) for a
    real time series collection (``caps.timeseries_storage``): its indexes hold keys of the server's
    internal buckets, which the measurements read back do not show."""
    with paused():  # the workbook's own look-up, never part of a measured cost
        options = collection.options()
    info = info_of(collection)
    if options.get("timeseries") and (info is None or info.caps.timeseries_storage):
        return None
    return {collection: dict(filter)}


def _stats(plan: Mapping[str, Any]) -> tuple[Any, int, int]:
    """(winning plan, keys examined, documents examined) of one explain: its top-level
    ``executionStats`` where it has one (a find; an aggregation run by the slot-based engine), else
    the sum over the pipeline's ``$cursor`` stages (the classic engine). An engine that reports both
    is counted once."""
    if "executionStats" in plan:
        stats = [plan["executionStats"]]
        winning = (plan.get("queryPlanner") or {}).get("winningPlan")
    else:
        cursors = [s["$cursor"] for s in plan.get("stages", []) if isinstance(s, dict) and "$cursor" in s]
        stats = [c.get("executionStats", {}) for c in cursors]
        winning = (cursors[0].get("queryPlanner") or {}).get("winningPlan") if cursors else None
    if not stats or any("totalKeysExamined" not in s or "totalDocsExamined" not in s for s in stats):
        raise ValueError("this explain carries no keys/documents examined: check caps.explain first")
    return winning, sum(int(s["totalKeysExamined"]) for s in stats), sum(int(s["totalDocsExamined"]) for s in stats)


def _stages(node: Any) -> list[str]:
    if isinstance(node, dict):
        here = [node["stage"]] if isinstance(node.get("stage"), str) else []
        return here + [s for v in node.values() for s in _stages(v)]
    if isinstance(node, list):
        return [s for v in node for s in _stages(v)]
    return []


def _query_shape(command: Mapping[str, Any]) -> tuple[dict, list[tuple[str, int]], int]:
    """(filter, sort, limit) of a find, or of an aggregation's leading ``$match``/``$sort``/``$limit``."""
    if "find" in command:
        return dict(command.get("filter") or {}), list(dict(command.get("sort") or {}).items()), \
            abs(int(command.get("limit") or 0))
    filter: dict = {}
    sort: list = []
    limit = 0
    for stage in command.get("pipeline", []):
        if "$match" in stage and not sort:
            filter.update(stage["$match"])
        elif "$sort" in stage and not sort:
            sort = list(dict(stage["$sort"]).items())
        elif "$limit" in stage and sort:
            limit = int(stage["$limit"])
            break
        else:
            break
    return filter, sort, limit


def _index_in_order(collection: Any, filter: dict, sort: list[tuple[str, int]]) -> str | None:
    """The name of an index of ``collection`` that holds the matches of ``filter`` in ``sort`` order
    (its leading fields fixed by equality, then the sort's fields, all one way or all reversed)."""
    fixed = {f for f, v in filter.items() if not (isinstance(v, dict) and any(str(k).startswith("$") and k != "$eq"
                                                                            for k in v))}
    wanted = [(f, d) for f, d in sort if f not in fixed]
    ranges = set(filter) - fixed  # an index holds them in order only where they bound its first sorted field
    if ranges and (not wanted or ranges != {wanted[0][0]}):
        return None  # a range on another field: a real MongoDB may well prefer that field's index, then sort
    for index in collection.list_indexes():
        key = list(dict(index["key"]).items())
        while key and key[0][0] in fixed:
            key = key[1:]
        head = key[:len(wanted)]
        if [f for f, _ in head] == [f for f, _ in wanted] and (
                all(d == k for (_, d), (_, k) in zip(wanted, head)) or
                all(d == -k for (_, d), (_, k) in zip(wanted, head))):
            return index["name"]
    return None


def read_plan(collection: Any, read: Callable[[], Any]) -> tuple[dict[str, Any], str | None]:
    """Run ``read`` once, explain each ``find``/``aggregate`` it sent (with ``executionStats``), and
    return one explain document that ``helpers.plans.plan_summary`` reads (each command's winning plan
    and its keys and documents examined, counted once), and a note, or None: where the engine sorted
    in memory what an index of ``collection`` holds in order. Call it only where ``caps.explain``."""
    with count_commands(keep_commands=True) as sent:
        out = read()
        if hasattr(out, "__next__"):
            list(out)
    plans, notes = [], []
    engine = (info_of(collection) or backend_info()).engine
    for command in sent.command_documents:
        if next(iter(command), None) not in ("find", "aggregate"):
            continue
        cmd = {k: v for k, v in command.items() if k not in ("batchSize", "singleBatch", "cursor", "$db")}
        if "aggregate" in cmd:
            cmd["cursor"] = {}
        plan = collection.database.command("explain", cmd, verbosity="executionStats")
        winning, keys, docs = _stats(plan)
        plans.append({"queryPlanner": {"winningPlan": winning},
                      "executionStats": {"totalKeysExamined": keys, "totalDocsExamined": docs}})
        filter, sort, limit = _query_shape(cmd)
        # sorted apart from the index: a SORT stage in the plan, or a $sort the pipeline ran after its cursor
        apart = "SORT" in _stages(winning) or any("$sort" in s for s in plan.get("stages", []) if isinstance(s, dict))
        index = _index_in_order(collection, filter, sort) if sort and apart else None
        if index is not None:
            notes.append(f"{engine} sorts every match in memory; a real MongoDB reads the {index} index in order"
                         + (f" and stops after {limit}" if limit else " (no SORT stage)"))
    return {"commands": plans}, "; ".join(dict.fromkeys(notes)) or None  # a note once, however many commands


def measured_read(label: str, read: Callable[[], Any], collection: Any, *, repeat: int = 3) -> Measurement:
    """``helpers.benchmark(label, read)`` (no warm-up run, ``repeat`` timed runs) with the server's work
    where the engine explains faithfully (``caps.explain``): keys and documents examined from
    :func:`read_plan`, and its note beside the plan. Notebook 08, section 8.4."""
    info = info_of(collection) or backend_info()
    note: list[str | None] = []

    def explain() -> dict[str, Any]:
        plan, why = read_plan(collection, read)
        note.append(why)
        return plan

    m = benchmark(label, read, repeat=repeat, warmup=0, explain=explain, info=info)
    if note and note[0]:
        m.plan_note = "; ".join(x for x in (m.plan_note, note[0]) if x)
    return m


def write_work(collection: Any, commands: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Keys and documents examined by a write's ``commands`` (``count_commands(keep_commands=True)``):
    each ``find``/``aggregate`` explained as sent, each update's filter explained as the ``find`` that
    finds what it changes (``limit`` 1 for an update of one document), each delete's the same without
    a limit; an insert examines nothing. Explained after the write, on what it left (a filter on
    ``_id`` examines the same either way). Call it only where the engine explains (``caps.explain``)."""
    keys = docs = 0
    with paused():  # the workbook's own explains, never part of a measured cost
        for command in commands:
            verb = next(iter(command), None)
            if verb in ("find", "aggregate"):
                cmd = {k: v for k, v in command.items() if k not in ("batchSize", "singleBatch", "cursor", "$db")}
                if verb == "aggregate":
                    cmd["cursor"] = {}
                found = [cmd]
            elif verb in ("update", "delete"):
                found = [{"find": command[verb], "filter": s["q"], **({"limit": 1} if not s.get("multi") and
                                                                        s.get("limit", 1) else {})}
                         for s in command["updates" if verb == "update" else "deletes"]]
            else:
                continue
            for cmd in found:
                _, k, d = _stats(collection.database.command("explain", cmd, verbosity="executionStats"))
                keys, docs = keys + k, docs + d
    return {"keys examined": keys, "docs examined": docs}
