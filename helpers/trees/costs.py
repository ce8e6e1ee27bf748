"""Comparing notebook 03's tree patterns: a tree's shape, where patterns disagree, what each operation costs (notebook 03).

:func:`operation_costs` runs the same calls on every pattern of :mod:`helpers.trees` and counts
each one; :func:`decision_table` and :func:`design_costs` read that table. The lesson imports all
of it from :mod:`helpers.trees`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from ..counting import count_commands
from ..measure import plot_costs
from ..plans import examined as _examined
from .base import Rows, TreeError, _check_rows

__all__ = ["tree_shape", "disagreements", "operation_costs", "plot_operation_costs", "decision_table", "design_costs"]


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
        head = ", ".join(map(str, result[:4]))
        return f"{len(result)} ids [{head}{', ...' if len(result) > 4 else ''}]"
    return str(result)


def operation_costs(patterns: Mapping[str, Any], calls: Sequence[tuple[str, tuple]], *,
                    examined: bool = False) -> Any:
    """Run each call on each pattern and count it: a DataFrame indexed by (operation, pattern).

    ``calls`` are ``(method, args)``, e.g. ``("ancestors", (3,))``, or ``(method, args, label)`` to
    name the row (several calls of one method); a pattern without that method is skipped. Columns:
    ``result`` (short), ``round trips``, ``docs returned`` (documents sent back to the client),
    ``nodes returned`` (those documents plus the node documents embedded in their arrays: a
    ``$graphLookup`` returns one document carrying every node it found), ``bytes returned``,
    ``docs written`` and ``same result`` (equal to the first pattern's answer). With ``examined``
    (only where ``backend_info().caps.explain``), also ``keys examined`` and ``docs examined`` on the
    server, from the explain of every read the call sent (empty for ``$graphLookup``: see
    :func:`helpers.plans.examined`). A ``move`` or ``rename`` is undone afterwards (not counted), so
    every call sees the same tree. Raises :class:`TreeError` if a call fails on one pattern. Notebook 03.
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
            undo = None
            if method == "move":
                undo = (tree.move, (args[0], tree.parent(args[0])))
            elif method == "rename":
                undo = (tree.rename, (args[0], _name_of(tree, args[0])))
            with count_commands(keep_commands=examined) as c:
                result = fn(*args)
            row = {"operation": label_op, "pattern": label, "result": _short(result),
                   "round trips": c.round_trips, "docs returned": c.docs_returned,
                   "nodes returned": c.nodes_returned, "bytes returned": c.bytes_returned,
                   "docs written": c.docs_written}
            if examined:
                collection = getattr(tree, "tree", tree).collection
                keys, docs = _examined(collection.database, c.command_documents)
                row.update({"keys examined": keys, "docs examined": docs})
            if undo is not None:
                undo[0](*undo[1])
            if first is None:
                first = (result,)
            rows.append({**row, "same result": result == first[0]})
    table = pd.DataFrame(rows).set_index(["operation", "pattern"])
    if examined:
        table = table.astype({"keys examined": "Int64", "docs examined": "Int64"})
    return table


def _name_of(tree: Any, node: Any) -> str:
    inner = getattr(tree, "tree", tree)
    return inner._require(node, {"name": 1})["name"]


def plot_operation_costs(table: Any, *, title: str | None = None) -> Any:
    """One chart of an :func:`operation_costs` table: round trips, nodes returned, docs written per
    pattern (drawn by ``helpers.measure.plot_costs``, the home of every cost chart)."""
    return plot_costs(table, ["round trips", "nodes returned", "docs written"], title=title)


def decision_table(table: Any, operations: Sequence[str] | None = None) -> Any:
    """For each operation as "the most frequent query": the cheapest and the dearest pattern, from ``table``.

    Cheapest = fewest round trips, then fewest nodes returned (documents, and the nodes embedded
    in them), then fewest written, then fewest bytes returned (all deterministic). Notebook 03.
    """
    import pandas as pd

    ops = operations or list(dict.fromkeys(table.index.get_level_values(0)))
    rows = []

    def fmt(label: str, r: Any) -> str:
        nodes = int(r["nodes returned"])
        return f"{label} ({r['round trips']} RT, {nodes} node{'' if nodes == 1 else 's'}, {r['docs written']} written)"

    keys = ["round trips", "nodes returned", "docs written", "bytes returned"]
    for op in ops:
        sub = table.loc[op]
        cost = {p: tuple(int(sub.loc[p, k]) for k in keys) for p in sub.index}
        order = sorted(sub.index, key=lambda p: (cost[p], p))
        best, worst = order[0], order[-1]
        tied = [p for p in order if cost[p] == cost[best]]
        rows.append({"most frequent query": op, "choose": " or ".join(tied),
                     "its cost": fmt("", sub.loc[best]).strip(" ()"),
                     "dearest": fmt(worst, sub.loc[worst])})
    return pd.DataFrame(rows).set_index("most frequent query")


def design_costs(table: Any, operations: Sequence[str] | None = None,
                 fill_from: Mapping[str, str] | None = None) -> dict[str, dict[str, dict]]:
    """``{design: {operation: cost}}`` from an :func:`operation_costs` table, the form
    :meth:`helpers.workload.Workload.weigh` takes (only ``operations``, e.g. a workload's ``names``,
    when given). A design without a row for an operation (the
    ``$graphLookup`` rows have only ancestors and descendants) takes it from the pattern
    ``fill_from[design]`` names. Notebook 03."""
    fill_from = dict(fill_from or {})
    keys = ("round trips", "docs returned", "bytes returned", "docs written")
    ops = list(operations) if operations is not None else list(dict.fromkeys(table.index.get_level_values(0)))
    out: dict[str, dict[str, dict]] = {}
    for design in dict.fromkeys(table.index.get_level_values(1)):
        per_op = {}
        for op in ops:
            row = (op, design) if (op, design) in table.index else (op, fill_from.get(design))
            if row not in table.index:
                raise TreeError(f"design {design!r} has no cost for {op!r}; name the pattern it uses "
                                f"for it in fill_from, e.g. {{{design!r}: 'ParentRefs'}}")
            per_op[op] = {k: int(table.loc[row, k]) for k in keys}
        out[str(design)] = per_op
    return out
