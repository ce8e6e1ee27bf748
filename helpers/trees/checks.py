"""Checkers of notebook 03 (tree patterns)."""
from __future__ import annotations

from typing import Any

from ..exercises import exercise, shown


def _tree(categories: Any) -> tuple[dict[Any, Any], dict[Any, str]]:
    """``(parent of each node, name of each node)`` from the loaded category rows."""
    rows = list(categories.find({}, {"parent_id": 1, "name": 1}))
    return {d["_id"]: d.get("parent_id") for d in rows}, {d["_id"]: d["name"] for d in rows}


def _below(parents: dict[Any, Any], node: Any) -> dict[Any, int]:
    """Every node below ``node`` with its depth under it (1 = a child), walked in Python."""
    children: dict[Any, list[Any]] = {}
    for n, p in parents.items():
        children.setdefault(p, []).append(n)
    found, level, depth = {}, [node], 0
    while level:
        depth += 1
        level = [c for n in level for c in children.get(n, [])]
        found.update({c: depth for c in level})
    return found


@exercise("3.1", hint="the materialized path already holds the names; split it on '/'")
def breadcrumbs(answer: Any, *, categories: Any, node: Any) -> str | None:
    """The names from the root down to ``node``, joined with " > ", rebuilt from the parent ids."""
    if not isinstance(answer, str):
        return f"breadcrumbs should be a string, not {type(answer).__name__}"
    parents, names = _tree(categories)
    if node not in parents:
        return f"there is no category {shown(node)}"
    chain, n = [], node
    while n is not None:
        chain, n = [names[n], *chain], parents[n]
    if answer != " > ".join(chain):
        return f"expected {len(chain)} names from the root down to node {node}, got {shown(answer)}"
    return None


@exercise("3.2", hint="the category itself plus tree.descendants(category), then one $in query on category_id",
          query_result=True)
def products_under(answer: Any, *, products: Any, categories: Any, category: Any, patterns: Any) -> str | None:
    """The sorted product ids in ``category`` or below it, per pattern."""
    names = sorted(patterns)
    if not isinstance(answer, dict) or sorted(answer) != names:
        return f"expected a dict with the keys {names}"
    parents, _ = _tree(categories)
    inside = [category, *_below(parents, category)]
    want = sorted(d["_id"] for d in products.find({"category_id": {"$in": inside}}, {"_id": 1}))
    wrong = [name for name, ids in sorted(answer.items()) if list(ids) != want]
    if wrong:
        return f"{', '.join(wrong)}: not the {len(want)} sorted ids of the products in the category or below it"
    return None


@exercise("3.3", hint="workload.with_rate(name, per_day) is the changed workload; its pick(designs, by=[...]) "
                     "ranks the designs by the daily columns you name")
def flipped_pick(answer: Any, *, workload: Any, designs: Any) -> str | None:
    """The design the workload picks by MB returned a day once nobody asks for descendants."""
    if answer not in designs:
        return f"{shown(answer)} is not one of the designs: {sorted(designs)}"
    by = ["MB returned / day", "round trips / day"]
    before = workload.pick(designs, by=by)
    want = workload.with_rate("descendants", 0).pick(designs, by=by)
    if answer == before and want != before:
        return f"{answer} is the pick before the change: set descendants to 0 a day first"
    if answer != want:
        daily = workload.with_rate("descendants", 0).weigh(designs)["MB returned / day"]
        return f"{answer} returns {daily[answer]:,.1f} MB a day; another design returns less"
    return None


@exercise("3.4", hint="maxDepth counts from 0: 0 = the children, 1 = children and grandchildren")
def menu_size(answer: Any, *, categories: Any, category: Any) -> str | None:
    """How many categories are at most two levels below ``category``, counted in Python."""
    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"menu_size should be a whole number, not {type(answer).__name__}"
    parents, _ = _tree(categories)
    want = sum(depth <= 2 for depth in _below(parents, category).values())
    if answer != want:
        return f"got {shown(answer)}: {'too many: is maxDepth 1?' if answer > want else 'too few: maxDepth 0 is only the children'}"
    return None
