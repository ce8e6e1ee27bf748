"""Comparing notebook 03's tree patterns: a tree's shape, where patterns disagree, what each operation costs (notebook 03).

:func:`operation_costs` runs the same calls on every pattern of :mod:`helpers.trees` and counts
each one; :func:`workload_costs` measures a workload's operations in every form each pattern has
(``forms_of``), as :class:`helpers.workload.Forms` for the bill; :func:`decision_table` reads the
bill one operation at a time. :func:`server_work` gives the keys and documents the server examined
for what a call sent, ``$lookup`` and ``$graphLookup`` included. The lesson imports all of it from
:mod:`helpers.trees`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from ..backends import engine_limits, info_of
from ..counting import count_commands, paused
from ..measure import plot_costs
from ..plans import plan_summary
from ..workload import Forms
from .base import BATCH, Rows, TreeError, _check_rows

__all__ = ["tree_shape", "disagreements", "operation_costs", "plot_operation_costs", "server_work",
           "workload_costs", "decision_table", "TEACHING"]

#: the writes of a tree: measured with the index keys they write, and undone after counting
WRITES = ("add", "move", "rename")
#: why a notebook keeps a weaker form in view, ``{(method, form): note}``, or ``{(pattern class, method,
#: form): note}`` for one pattern's form (shown beside a form the bill does not price)
TEACHING = {
    ("breadcrumbs", "one query per level"): "the obvious loop (3.3): a round trip per level; a competent "
                                            "engineer walks up on the server with $graphLookup (3.7)",
    ("descendants", "one query per level"): "the obvious loop (3.3): a round trip per level; a competent "
                                            "engineer walks down on the server with $graphLookup (3.7)",
    ("breadcrumbs", "two queries"): "the obvious form: the ancestors' ids, then their names ($in); one "
                                    "aggregate with $lookup joins them on the server (exercise 3.3)",
    ("menu", "two queries"): "the obvious form: the children's ids, then their names ($in); one aggregate "
                             "with $lookup joins them on the server",
    ("move", "one command a write"): "the same updates, one command each (a round trip each); one ordered "
                                     "bulk_write sends them together (3.6 crashes this form between two)",
    ("rename", "one command a write"): "the node's name, then its copies, one command each; one ordered "
                                       "bulk_write sends both",
    ("move", "a query checks first"): "a find for the new path before the update; in a transaction the "
                                      "unique index on path refuses a taken path itself",
    ("breadcrumbs", "find_one, the names"): "the names as fields of an array (with their keys); one aggregate "
                                            "returns them as one string ($reduce), fewer bytes",
    ("descendants", "the path, then its prefix"): "the obvious form: read the node's path, then query its "
                                                  "prefix; one aggregate joins the key range with $lookup (let, $expr)",
    ("rename", "one bulk_write in a transaction"): "the same bulk in a transaction: all or nothing, and the "
                                                   "commit a round trip more; the bill takes display copies "
                                                   "that may be a moment stale (the Extended Reference pattern)",
    ("menu", "a regex for one more segment"): "the path index scans the keys of the whole subtree for it; "
                                              "the parent index holds only the children's keys there",
    ("add", "read the parent, then insert"): "the obvious form: read the parent's way up, then insert the "
                                              "child; one aggregate derives it on the server and ends in $merge",
    ("breadcrumbs", "one $graphLookup"): "each ancestor found as a document, its field names and depth with it; "
                                         "the same walk returns the names as one string ($reduce), fewer bytes",
    ("breadcrumbs", "one $lookup"): "the ancestors joined as documents; the same $lookup returns their names "
                                    "as one string ($reduce), fewer bytes",
    ("descendants", "one $graphLookup"): "each node found as a document with its depth; the same walk returns "
                                         "the ids as one array, fewer bytes",
    ("descendants", "the children, then $graphLookup"): "a document a node; the same walk grouped into one "
                                                        "document ($group), fewer bytes",
    ("descendants", "a document a node"): "the same query, a document a node (its field name each); one "
                                          "aggregate groups the ids into one document ($group), fewer bytes",
    ("descendants", "one $lookup, a key range"): "the nodes joined as documents; the same $lookup returns "
                                                 "their ids as one array, fewer bytes",
    ("menu", "a document a child"): "the same query, a document a child; one aggregate groups the ids and "
                                    "names into one document ($group), fewer bytes",
    ("menu", "one $lookup"): "the children joined as documents; the same $lookup returns their ids and "
                             "names as two arrays, fewer bytes",
    ("menu", "the parent index"): "the same query, a document a child; one aggregate groups them into one "
                                  "document ($group), fewer bytes",
    ("menu", "the path, then a regex"): "the obvious form: read the node's path, then a regex for one more "
                                        "segment: a round trip more, the children's documents alone examined",
    ("rename", "a query checks first"): "a find for the new path before the update; in a transaction the "
                                        "unique index on path refuses a taken path itself",
    ("descendants", "one $graphLookup, one array, no index on parent"):
        "the same walk with the index on parent (its connectToField) dropped: each level's lookup scans the "
        "collection; measured on that layout, never billed (where the engine cannot explain, the scans do not show)",
    ("ChildRefs", "add", "one bulk_write"): "a collection's bulk_write sends one command per kind of write: the "
                                            "insert, then the parent's $push, two round trips; MongoDB 8.0's "
                                            "bulkWrite (client.bulk_write) sends both in one",
    ("move", "the subtree walked, then _id $in"):
        "one aggregate reads both nodes and walks the subtree over the parent index, then one bulk_write updates "
        "the descendants by _id ($in): the same round trips, no collection scan (where the engine cannot explain, "
        "that does not show)",
    ("rename", "the subtree walked, then _id $in, no transaction"):
        "a walk of the subtree over the parent index, then one bulk_write updates the copies by _id ($in): a round "
        "trip more, no collection scan",
    ("rename", "the subtree walked, then _id $in, in a transaction"):
        "the same walk and bulk_write in a transaction: all or nothing, and the commit a round trip more",
    ("AncestorsWithNamesByParent", "move", "one bulk_write"):
        "the descendants' update finds them itself: with no index on ancestors._id it scans the collection, on any "
        "server; walked first over parent, they are found by _id ($in)",
    ("AncestorsWithNamesByParent", "rename", "one bulk_write, no transaction"):
        "one round trip, the copies found by a collection scan (no index on ancestors._id, on any server); walked "
        "first over parent, they are found by _id ($in), a round trip more",
    ("breadcrumbs", "one string ($reduce), no index on children"):
        "the same walk with the index on children (its connectToField) dropped: each level's lookup scans the "
        "collection; measured on that layout, never billed (where the engine cannot explain, the scans do not show)",
}


def tree_shape(rows: Rows) -> dict[str, int]:
    """Nodes, roots, leaves, the deepest level (a root is level 0) and the most children of one node."""
    ordered = _check_rows(rows)
    depth: dict[Any, int] = {}
    kids: dict[Any, int] = {}
    for n, p, _name in ordered:
        depth[n] = 0 if p is None else depth[p] + 1
        if p is not None:
            kids[p] = kids.get(p, 0) + 1
    return {"nodes": len(ordered), "roots": sum(p is None for _n, p, _ in ordered),
            "leaves": len(ordered) - len(kids), "max depth": max(depth.values(), default=0),
            "max children": max(kids.values(), default=0)}


def disagreements(patterns: Mapping[str, Any], nodes: Iterable[Any],
                  operations: Sequence[str] = ("parent", "children", "ancestors", "descendants")) -> list[tuple]:
    """``(operation, node, pattern)`` wherever a pattern's answer differs from the first pattern's.

    A pattern without the operation is skipped. An empty list means they all agree. Notebook 03.
    """
    out = []
    for node in nodes:
        for op in operations:
            first: Any = None
            for label, tree in patterns.items():
                fn = getattr(tree, op, None)
                if fn is None:
                    continue
                answer = fn(node)
                if first is None:
                    first = (answer,)
                elif answer != first[0]:
                    out.append((op, node, label))
    return out


def _short(result: Any) -> str:
    if isinstance(result, list):
        shown = [x if not isinstance(x, tuple) else x[-1] for x in result[:4]]
        head = ", ".join(map(str, shown))
        what = "names" if result and isinstance(result[0], (str, tuple)) else "ids"
        return f"{len(result)} {what} [{head}{', ...' if len(result) > 4 else ''}]"
    return str(result)


# ---------------------------------------------------------------------------------------------
# what the server examined

_METACHARS = set("\\.^$|?*+()[]{}")


def _prefix(regex: str) -> str | None:
    """The literal text an anchored regex (``^...``) starts with, as MongoDB reads it for index bounds."""
    if not regex.startswith("^"):
        return None
    out, i = [], 1
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex) and regex[i + 1] in _METACHARS:
            ch, i = regex[i + 1], i + 1
        elif ch in _METACHARS:
            break
        if i + 1 < len(regex) and regex[i + 1] in "?*{":  # an optional character is no prefix
            break
        out.append(ch)
        i += 1
    return "".join(out) or None


def _as_ranges(query: Any) -> Any:
    """``query`` with each anchored ``$regex`` replaced by the key range of its literal prefix: the
    bounds a real MongoDB scans in the index for it (for an engine that scans the collection instead)."""
    if isinstance(query, list):
        return [_as_ranges(q) for q in query]
    if not isinstance(query, Mapping):
        return query
    out = {}
    for key, value in query.items():
        head = _prefix(value["$regex"]) if isinstance(value, Mapping) and isinstance(value.get("$regex"), str) else None
        if head:
            rest = {k: v for k, v in value.items() if k not in ("$regex", "$options")}
            out[key] = {**rest, "$gte": head, "$lt": head[:-1] + chr(ord(head[-1]) + 1)}
        else:
            out[key] = _as_ranges(value) if key in ("$or", "$and", "$nor") else value
    return out


def _explain(database: Any, coll: str, query: Mapping[str, Any]) -> dict:
    return database.command("explain", {"find": coll, "filter": dict(query)}, verbosity="executionStats")


def _indexed_equalities(database: Any, coll: str, query: Mapping[str, Any]) -> list[dict]:
    """Each equality of ``query`` on a field that leads an index (a value, or ``{"$in": [values]}``:
    one index point per value), alone, when ``query`` has more than one condition."""
    leading = {next(iter(ix["key"])) for ix in database[coll].list_indexes()}
    if len(query) < 2:
        return []
    return [{k: v} for k, v in query.items() if k in leading and (not _is_operator(v) or _is_in(v))]


def _is_in(value: Any) -> bool:
    return isinstance(value, Mapping) and list(value) == ["$in"] and isinstance(value["$in"], list) \
        and not any(_is_operator(x) or hasattr(x, "pattern") for x in value["$in"])


def _is_operator(value: Any) -> bool:
    return isinstance(value, Mapping) and any(str(k).startswith("$") for k in value)


def _found(database: Any, coll: str, query: Mapping[str, Any], ranges: bool) -> tuple[int, int]:
    """Keys and documents examined by ``find(query)`` on ``coll``, from its explain. With ``ranges``
    an anchored regex counts as a real MongoDB runs it: the keys of its prefix's range, and only the
    documents whose key the regex matches (it filters the keys before fetching). Where the engine
    scans the collection for an indexed equality joined to another condition (SecantusDB:
    docs/ENGINES.md), the equality's index scan is counted, the plan a real MongoDB runs (the other
    condition filters the documents it fetched), and where it scans for an ``$or`` whose every branch
    leads with an indexed field, one index scan per branch is counted, as a real MongoDB's OR plan.
    An indexed ``$in`` joined to another condition (``{_id: {$in: ids}, ...}``) counts as an
    equality: the index points of its values, then the other condition on the documents fetched.
    Where several indexed equalities could lead, the one whose scan fetches the fewest documents is
    counted (the plan MongoDB's ranker favours; a real server may choose another of them)."""
    bounded = _as_ranges(query) if ranges else query
    stages, keys, docs = plan_summary(_explain(database, coll, bounded))
    if bounded != query and len(query) == 1:  # one field, its regex filtered on the keys: fetch the matches
        docs = int(_explain(database, coll, query).get("executionStats", {}).get("nReturned", docs or 0))
    elif "COLLSCAN" in stages and (equal := _indexed_equalities(database, coll, bounded)):
        stages, keys, docs = min((plan_summary(_explain(database, coll, e)) for e in equal),
                                 key=lambda p: (p[2] or 0, p[1] or 0))
    elif "COLLSCAN" in stages and list(bounded) == ["$or"] and _indexed_branches(database, coll, bounded["$or"]):
        branches = [_found(database, coll, b, False) for b in bounded["$or"]]  # an OR of index scans
        keys, docs = sum(k for k, _ in branches), sum(d for _, d in branches)
    return keys or 0, docs or 0


def _indexed_branches(database: Any, coll: str, branches: Any) -> bool:
    """Does every branch of an ``$or`` lead with an indexed field (so a real MongoDB scans one index
    range per branch instead of the collection)?"""
    leading = {next(iter(ix["key"])) for ix in database[coll].list_indexes()}
    return isinstance(branches, list) and bool(branches) and all(
        isinstance(b, Mapping) and b and next(iter(b)) in leading for b in branches)


def _value(doc: Mapping[str, Any], path: str) -> Any:
    for part in path.split("."):
        doc = doc.get(part) if isinstance(doc, Mapping) else None
    return doc


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _graph_reads(database: Any, spec: Mapping[str, Any], start: Mapping[str, Any]) -> list[dict]:
    """The queries a ``$graphLookup`` runs for one input document, level by level: each level asks
    for ``connectToField`` in the values still to look up (with ``restrictSearchWithMatch``)."""
    coll = database[spec["from"]]
    cap = spec.get("maxDepth", engine_limits(database)[0])
    restrict = dict(spec.get("restrictSearchWithMatch") or {})
    frontier, asked, seen, depth, queries = _values(_value(start, spec["startWith"].lstrip("$"))), [], set(), 0, []
    while frontier and (cap is None or depth <= cap):
        query = {spec["connectToField"]: {"$in": frontier}}
        query = {"$and": [query, restrict]} if restrict else query
        queries.append(query)
        asked.extend(frontier)
        with paused():
            docs = list(coll.find(query, {spec["connectFromField"]: 1}, batch_size=BATCH))
        following = []
        for d in docs:
            if d["_id"] not in seen:
                seen.add(d["_id"])
                following.extend(_values(_value(d, spec["connectFromField"])))
        frontier = [v for v in dict.fromkeys(following) if v not in asked]
        depth += 1
    return queries


def _aggregate_work(database: Any, command: Mapping[str, Any], ranges: bool) -> tuple[int, int]:
    """An aggregate's work: its leading ``$match`` (from an explain), then the queries each
    ``$lookup`` (``localField``/``foreignField``) or ``$graphLookup`` runs per input document, each
    explained as the ``find`` it is (an aggregate's explain need not count them)."""
    coll, stages = command["aggregate"], list(command.get("pipeline", []))
    if not stages or "$match" not in stages[0]:
        raise TreeError(f"server_work replays a pipeline that starts with $match, not {stages[:1]!r}")
    keys, docs = _found(database, coll, stages[0]["$match"], ranges)
    with paused():
        inputs = list(database[coll].find(stages[0]["$match"], batch_size=BATCH))
    for stage in stages[1:]:
        if "$lookup" in stage:
            spec = stage["$lookup"]
            joins = _nested_joins(spec)
            if "pipeline" in spec and "localField" not in spec:
                reads = [(spec["from"], _let_filter(database, coll, spec, d)) for d in inputs]
                if joins:  # the documents the sub-pipeline's $match found, once: each inner join runs per one
                    with paused():
                        found = [x for _, q in reads for x in database[spec["from"]].find(q, batch_size=BATCH)]
                for inner in joins:  # a localField/foreignField $lookup inside: its query per document found
                    reads += [(inner["from"], {inner["foreignField"]: {"$in": _values(_value(x, inner["localField"]))}})
                              for x in found]
            elif "localField" not in spec:
                raise TreeError("server_work replays a $lookup with localField and foreignField, or with let "
                                "and a sub-pipeline that starts with a $match of $expr comparisons")
            else:
                reads = [(spec["from"], {spec["foreignField"]: {"$in": _values(_value(d, spec["localField"]))}})
                         for d in inputs]
        elif "$graphLookup" in stage:
            reads = [(stage["$graphLookup"]["from"], q) for d in inputs
                     for q in _graph_reads(database, stage["$graphLookup"], d)]
        elif any(k in stage for k in _UNREPLAYED):
            raise TreeError(f"server_work does not replay {next(k for k in _UNREPLAYED if k in stage)}: its reads "
                            f"would go uncounted")
        else:
            continue  # $project, $unwind, $sort: no reads
        for target, query in reads:
            k, d = _found(database, target, query, ranges)
            keys, docs = keys + k, docs + d
    return keys, docs


def _nested_joins(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``localField``/``foreignField`` ``$lookup`` stages of a ``$lookup`` sub-pipeline that
    :func:`_aggregate_work` replays: each runs once per document the leading ``$match`` found, so
    only ``$project``/``$set``/``$addFields``/``$unset`` may come between; any other stage that reads
    raises :class:`TreeError` (its reads would go uncounted)."""
    joins, stages = [], list(spec.get("pipeline") or [])[1:]
    for i, st in enumerate(stages):
        if not isinstance(st, Mapping):
            continue
        inner = st.get("$lookup")
        plain = isinstance(inner, Mapping) and {"localField", "foreignField", "from"} <= set(inner) and "pipeline" not in inner
        if plain and "localField" not in spec and all(
                isinstance(x, Mapping) and set(x) <= {"$project", "$set", "$addFields", "$unset", "$lookup"}
                for x in stages[:i]):
            joins.append(inner)
            continue
        read = next((k for k in (*_UNREPLAYED, "$lookup", "$graphLookup") if k in st), None)
        if read:
            raise TreeError(f"server_work does not replay a {read} inside a $lookup (only a localField/foreignField "
                            f"$lookup right after the sub-pipeline's $match): its reads would go uncounted")
    return joins


_COMPARISONS = ("$eq", "$lt", "$lte", "$gt", "$gte")
_UNREPLAYED = ("$facet", "$unionWith")  # stages that read (or run pipelines that read) unseen
_FLIPPED = {"$eq": "$eq", "$lt": "$gt", "$lte": "$gte", "$gt": "$lt", "$gte": "$lte"}  # operands swapped


def _let_filter(database: Any, coll: str, spec: Mapping[str, Any], doc: Mapping[str, Any]) -> dict:
    """The ``find`` filter a ``$lookup`` sub-pipeline's leading ``$match`` of ``$expr`` comparisons
    (``$eq``, ``$lt``, ``$lte``, ``$gt``, ``$gte`` between a field and a ``let`` variable, in either order, joined by
    ``$and``) stands for, with the variables computed for ``doc``: what MongoDB 5.0 and later scans
    in the ``from`` collection's index for it."""
    stages = list(spec.get("pipeline") or [])
    expr = stages[0].get("$match", {}).get("$expr") if stages else None
    terms = expr.get("$and", [expr]) if isinstance(expr, Mapping) else []
    with paused():
        values = next(iter(database[coll].aggregate([{"$match": {"_id": doc["_id"]}},
                                                     {"$project": {"_id": 0, **dict(spec.get("let", {}))}}])), {})
    query: dict[str, dict] = {}
    for term in terms:
        op, args = next(iter(term.items())) if isinstance(term, Mapping) and len(term) == 1 else (None, None)
        if op not in _COMPARISONS or not isinstance(args, list) or len(args) != 2:
            raise TreeError(f"server_work replays $expr comparisons of a field with a let variable, not {term!r}")
        field, var = args
        if isinstance(var, str) and not var.startswith("$$") and isinstance(field, str) and field.startswith("$$"):
            field, var, op = var, field, _FLIPPED[op]  # {$lt: ["$$v", "$f"]} is {$gt: ["$f", "$$v"]}
        if not (isinstance(field, str) and field.startswith("$") and not field.startswith("$$")
                and isinstance(var, str) and var.startswith("$$") and var[2:] in values):
            raise TreeError(f"server_work replays $expr comparisons of a field with a let variable, not {term!r}")
        query.setdefault(field[1:], {})[op] = values[var[2:]]
    if not query:
        raise TreeError("server_work replays a $lookup sub-pipeline that starts with a $match of $expr comparisons")
    return query


def server_work(database: Any, commands: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """Keys and documents the server examined for ``commands`` (``count_commands(keep_commands=True)``),
    each from an explain: a ``find`` as sent; an ``aggregate`` as its ``$match`` plus the queries
    its ``$lookup`` or ``$graphLookup`` runs (explained one by one); an ``update`` or ``delete`` as
    the ``find`` of its filter (the work of finding what it changes), and so each update or delete of
    a ``bulkWrite`` (MongoDB 8.0's, ``client.bulk_write``) in its namespace. Where the engine scans the
    collection for an anchored prefix regex (``caps.explain_regex`` False), the regex is explained
    as the key range a real MongoDB scans for it. Where the engine cannot explain (``caps.explain``
    False) there is no plan to count: :class:`TreeError` says so, rather than a count of 0. Notebook 03."""
    info = info_of(database)
    if info is not None and not info.caps.explain:
        raise TreeError(f"server_work: {info.engine} cannot explain its plans (caps.explain is False), so the keys "
                        f"and documents its server examined are unknown, not 0; measure without examined=True here")
    ranges = info is not None and not info.caps.explain_regex
    keys = docs = 0
    for command in commands:
        name = next(iter(command), None)
        if name == "find":
            found = [_found(database, command["find"], command.get("filter", {}), ranges)]
        elif name == "aggregate":
            found = [_aggregate_work(database, command, ranges)]
        elif name in ("update", "delete"):
            statements = command.get("updates" if name == "update" else "deletes", [])
            found = [_found(database, command[name], s.get("q", {}), ranges) for s in statements]
        elif name == "findAndModify":
            found = [_found(database, command[name], command.get("query", {}), ranges)]
        elif name == "bulkWrite":  # MongoDB 8.0's: each update or delete finds by its filter, in its namespace
            spaces = [str((ns or {}).get("ns", "")).split(".", 1)[-1] for ns in command.get("nsInfo") or []]
            found = [_found(database, spaces[op[kind]], op.get("filter", {}), ranges)
                     for op in command.get("ops") or [] for kind in ("update", "delete") if kind in op]
        else:  # getMore, insert, commitTransaction, ...: nothing more to find
            continue
        keys += sum(k for k, _ in found)
        docs += sum(d for _, d in found)
    return keys, docs


# ---------------------------------------------------------------------------------------------
# measuring calls

def _measure(tree: Any, method: str, fn: Callable[..., Any], args: tuple, examined: bool) -> dict[str, Any]:
    """One call, counted: round trips, documents, nodes and bytes returned, documents and index keys
    written (a write is undone afterwards, uncounted), and with ``examined`` the server's work."""
    inner = getattr(tree, "tree", tree)
    undo = None
    if method == "move":
        undo = (inner.move, (args[0], inner.parent(args[0])))
    elif method == "rename":
        undo = (inner.rename, (args[0], inner._require(args[0], {"name": 1})["name"]))
    elif method == "add":
        undo = (inner._unadd, (args[0], args[1]))
    with count_commands(keep_commands=examined, index_keys=inner.collection if undo else None) as c:
        result = fn(*args)
    if undo is not None:
        undo[0](*undo[1])  # first, so the writes' filters are explained on the tree they ran on
    if not c.docs_written_known:  # unknown is not 0
        raise TreeError(f"{method}: a $merge or $out wrote documents the counter could not count")
    row = {"result": result, "round trips": c.round_trips, "docs returned": c.docs_returned,
           "nodes returned": c.nodes_returned, "bytes returned": c.bytes_returned, "docs written": c.docs_written,
           "index keys written": c.index_keys_written if undo else 0,
           "default batch getMores": c.default_batch_getmores, "open cursors": len(c.open_cursors)}
    if examined:
        row["keys examined"], row["docs examined"] = server_work(inner.collection.database, c.command_documents)
    return row


def operation_costs(patterns: Mapping[str, Any], calls: Sequence[tuple[str, tuple]], *,
                    examined: bool = False) -> Any:
    """Run each call on each pattern and count it: a DataFrame indexed by (operation, pattern).

    ``calls`` are ``(method, args)``, e.g. ``("ancestors", (3,))``, or ``(method, args, label)`` to
    name the row (several calls of one method); a pattern without that method is skipped. Columns:
    ``result`` (short), ``round trips``, ``docs returned`` (documents sent back to the client),
    ``nodes returned`` (those documents plus the node documents embedded in their arrays: a
    ``$graphLookup`` returns one document carrying every node it found), ``bytes returned``,
    ``docs written``, ``index keys written`` (``helpers.indexkeys``) and ``same result`` (equal to
    the first pattern's answer). With ``examined`` (only where ``backend_info().caps.explain``),
    also ``keys examined`` and ``docs examined`` on the server (:func:`server_work`). A ``move`` or
    ``rename`` is undone afterwards (not counted), so every call sees the same tree. Raises
    :class:`TreeError` if a call fails on one pattern. Notebook 03.
    """
    import pandas as pd

    rows = []
    for call in calls:
        if len(call) not in (2, 3) or not isinstance(call[1], tuple):
            raise TreeError(f"each call must be (method, args) or (method, args, label) with args a tuple, "
                            f"not {call!r}; e.g. ('ancestors', (3,))")
        method, args = call[0], call[1]
        label_op = call[2] if len(call) == 3 else method
        first: Any = None
        for label, tree in patterns.items():
            fn: Callable | None = getattr(tree, method, None)
            if fn is None:
                continue
            row = _measure(tree, method, fn, args, examined)
            result = row.pop("result")
            row.pop("default batch getMores")
            row.pop("open cursors")
            if first is None:
                first = (result,)
            rows.append({"operation": label_op, "pattern": label, "result": _short(result), **row,
                         "same result": result == first[0]})
    table = pd.DataFrame(rows).set_index(["operation", "pattern"])
    if examined:
        table = table.astype({"keys examined": "Int64", "docs examined": "Int64"})
    return table


def plot_operation_costs(table: Any, *, title: str | None = None) -> Any:
    """One chart of an :func:`operation_costs` table: round trips, nodes returned, docs written per
    pattern (drawn by ``helpers.measure.plot_costs``, the home of every cost chart)."""
    return plot_costs(table, ["round trips", "nodes returned", "docs written"], title=title)


def workload_costs(patterns: Mapping[str, Any], calls: Mapping[str, tuple[str, tuple]], *,
                   examined: bool = False) -> dict[str, dict[str, Forms]]:
    """``{design: {operation: Forms}}`` for :meth:`helpers.workload.Workload.weigh`: each operation
    of a workload (``calls`` maps its name to ``(method, args)``) measured in every form each pattern
    has for that method (its ``forms_of``: the obvious one and the competent one), as
    :func:`operation_costs` counts a call, with the server's work where ``examined``. A kept weaker
    form carries its :data:`TEACHING` note. Every form of every design must give the same answer
    (else :class:`TreeError`). Notebook 03."""
    out: dict[str, dict[str, Forms]] = {}
    first: dict[str, tuple] = {}

    def measure(design: str, tree: Any, op: str, method: str, label: str, fn: Callable, args: tuple) -> dict:
        row = _measure(tree, method, fn, args, examined)
        result = row.pop("result")
        if first.setdefault(op, (result, design, label))[0] != result:
            raise TreeError(f"{design} ({label}) answers {op} differently from {first[op][1]} "
                            f"({first[op][2]}): {_short(result)} against {_short(first[op][0])}")
        row.pop("nodes returned")
        return row

    for design, tree in patterns.items():
        measured: dict[str, dict[str, dict]] = {}
        unindexed: dict[str, tuple[str, str]] = {}  # {op: (form label, field)}
        for op, (method, args) in calls.items():
            measured[op] = {label: measure(design, tree, op, method, label, fn, args)
                            for label, fn in tree.forms_of(method).items()}
            extra = getattr(tree, "unindexed", {}).get(method)
            if extra is not None:  # the same walk with its connectToField's index dropped (a counter-example)
                label, name, field = extra
                measured[op][label] = _without_index(tree, field, measure, design, tree, op, method, label,
                                                     getattr(tree, name), args)
                unindexed[op] = (label, field)
        # the forms measured with the index stand on that layout, the one without it on its own: never billed together
        indexed = {f"an index on {field}" for _, field in unindexed.values()}
        out[design] = {}
        for op, (method, _args) in calls.items():
            notes = {label: TEACHING.get((type(tree).__name__, method, label), TEACHING.get((method, label)))
                     for label in measured[op]}
            teaching = {label: note for label, note in notes.items() if note}
            layouts = {label: ({f"no index on {unindexed[op][1]}"} if op in unindexed and label == unindexed[op][0]
                               else indexed) for label in measured[op]} if indexed else None
            out[design][op] = Forms(measured[op], teaching=teaching, layouts=layouts)
    return out


def _without_index(tree: Any, field: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with the tree's index on ``field`` dropped, then built again (neither counted): the
    cost of a walk that finds no index on its ``connectToField``."""
    coll = tree.collection
    with paused():
        found = [ix["name"] for ix in coll.list_indexes() if list(ix["key"]) == [field]]
        if not found:
            raise TreeError(f"{tree!r} has no index on {field!r} to measure a walk without")
        coll.drop_index(found[0])
    try:
        return fn(*args)
    finally:
        with paused():
            coll.create_index(field, **dict(tree.indexes).get(field, {}))


_PER_RUN = {"round trips / day": "round trips", "docs examined / day": "docs examined",
            "keys examined / day": "keys examined", "MB returned / day": "bytes returned",
            "docs written / day": "docs written", "index keys written / day": "index keys written"}


def decision_table(workload: Any, costs: Mapping[str, Mapping[str, Any]]) -> Any:
    """For each operation of ``workload`` as "the most frequent query": the designs it would pick
    (each at its billed form, :meth:`~helpers.workload.Workload.contest`) and the dearest one.

    Designs are compared per run by the workload's own criterion (``workload.by``), then documents
    and index keys written; designs within ``workload.margin`` on a column tie on it and the next
    column decides. A column the engine did not measure (documents examined on the mock) is skipped.
    Notebook 03."""
    import pandas as pd

    contest = workload.contest(costs)
    billed = contest[contest["billed"] == "billed"].reset_index(level="form")
    columns = [_PER_RUN[c] for c in workload.by if c in _PER_RUN] + ["docs written", "index keys written"]
    columns = [c for c in dict.fromkeys(columns) if c in billed.columns and billed[c].notna().all()]

    def fmt(r: Any) -> str:
        parts = [f"{int(r['round trips'])} RT"]
        if "docs examined" in columns:
            parts.append(f"{int(r['docs examined'])} docs examined")
        parts.append(f"{int(r['bytes returned']):,} B")
        if r["docs written"]:
            parts.append(f"{int(r['docs written'])} written")
        return f"{r['form']}: " + ", ".join(parts)

    rows = []
    for op in workload.names:
        sub = billed.xs(op, level="operation")
        level = list(sub.index)
        for column in columns:
            best = min(float(sub.loc[d, column]) for d in level)
            level = [d for d in level if float(sub.loc[d, column]) <= best * (1 + workload.margin)]
        worst = max(sub.index, key=lambda d: tuple(float(sub.loc[d, c]) for c in columns))
        rows.append({"most frequent query": op, "choose": " or ".join(level), "its cost": fmt(sub.loc[level[0]]),
                     "dearest": f"{worst} ({fmt(sub.loc[worst])})"})
    return pd.DataFrame(rows).set_index("most frequent query")
