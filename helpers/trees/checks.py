"""Checkers of notebook 03 (tree patterns)."""
from __future__ import annotations

from typing import Any

from ..backends import info_of
from ..counting import count_commands, paused
from ..exercises import exercise, shown
from .base import TreeError
from .costs import server_work


def _tree(categories: Any) -> tuple[dict[Any, Any], dict[Any, str]]:
    """``(parent of each node, name of each node)`` from the loaded category rows."""
    rows = list(categories.find({}, {"parent_id": 1, "name": 1}, batch_size=10_000))
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


def _chain(parents: dict[Any, Any], node: Any) -> list[Any]:
    """``node`` and its ancestors, the root first."""
    chain, n = [], node
    while n is not None:
        chain, n = [n, *chain], parents[n]
    return chain


def _crumbs(answer: Any, categories: Any, node: Any, only: Any = None) -> str | None:
    """Call ``answer(n)`` on ``node``, its parent and its root, counting what each call sends: the
    names from the root down joined with " > ", in one round trip, reading no more documents than
    there are names: none more returned, and, where the engine explains (``caps.explain``), none more
    examined on the server (and with ``only``, a collection, reading nothing else)."""
    if not callable(answer):
        return "give a function: def breadcrumbs(node): ... that returns the text for that node"
    parents, names = _tree(categories)
    if node not in parents:
        return f"there is no category {shown(node)}"
    chain = _chain(parents, node)
    for n in dict.fromkeys((node, parents[node] if parents[node] is not None else node, chain[0])):
        want = [names[x] for x in _chain(parents, n)]
        with count_commands(keep_commands=True) as cost:
            got = answer(n)
        if got != " > ".join(want):
            return f"node {n}: got {shown(got)}, not its {len(want)} names from the root down joined with ' > '"
        if cost.round_trips > 1:
            return f"node {n} took {cost.round_trips} round trips ({', '.join(cost.commands)}); one is enough"
        if cost.round_trips == 0:
            return (f"node {n}: no round trip: the text came from data already in Python, not from the database; "
                    f"read the category's document{'s in ' + only.name if only is not None else ''}")
        if cost.docs_returned > len(want):
            return (f"node {n}: {cost.docs_returned:,} documents came back for {len(want)} names; read only "
                    f"the documents that hold them")
        try:
            examined = _examined(categories.database, cost.command_documents, strict=True)
        except TreeError as e:  # not judged is not passed
            return f"node {n}: {_unjudged(e, cost.command_documents, 'join with localField and foreignField')}"
        if examined is not None and examined > len(want):
            return (f"node {n}: the server examined {examined:,} documents for {len(want)} names; start from "
                    f"the node's _id and read only the documents that hold its names")
        if only is not None:
            read = _read(cost.command_documents)
            if read - {only.name}:
                return f"read the ancestors array's collection ({only.name}) only, not {', '.join(sorted(read - {only.name}))}"
            if only.name not in read:
                return f"node {n}: read the names from the ancestors array's collection ({only.name})"
    return None


def _read(commands: Any) -> set[str]:
    """The collections ``commands`` read: each ``find`` or ``aggregate``, and every ``$lookup`` or
    ``$graphLookup`` ``from`` (sub-pipelines too)."""
    def froms(pipeline: Any) -> set[str]:
        out: set[str] = set()
        for st in pipeline or []:
            for op in ("$lookup", "$graphLookup", "$unionWith"):
                spec = st.get(op) if isinstance(st, dict) else None
                if isinstance(spec, dict):
                    out |= {str(spec.get("from") or spec.get("coll"))} | froms(spec.get("pipeline"))
                elif isinstance(spec, str):
                    out.add(spec)
        return out
    read = {str(c.get(k)) for c in commands for k in ("find", "aggregate") if k in c}
    return read | {name for c in commands for name in froms(c.get("pipeline"))}


def _examined(database: Any, commands: Any, *, strict: bool = False) -> int | None:
    """Documents the server examined for ``commands`` (None: the engine cannot explain, or the
    commands are not ones :func:`server_work` replays: then only what came back is checked; with
    ``strict``, commands it cannot replay raise :class:`TreeError` instead, so they are not let pass)."""
    info = info_of(database)
    if info is None or not info.caps.explain:
        return None
    scans = [c for c in commands if "aggregate" in c and not (c.get("pipeline") or [{}])[0].get("$match")]
    with paused():  # a pipeline that does not start with $match reads the whole collection
        scanned = sum(database[c["aggregate"]].estimated_document_count() for c in scans)
    try:
        return scanned + server_work(database, [c for c in commands if c not in scans])[1]
    except (TreeError, KeyError, TypeError, ValueError) as e:
        if strict:
            raise TreeError(str(e)) from e
        return None


def _unjudged(error: TreeError, commands: Any, fix: str) -> str:
    """Why a pipeline's server work could not be judged (not judged is not passed), with the reason the
    replay gave; ``$in`` is named only when the pipeline uses it."""
    uses_in = '"$in"' in str(commands) or "'$in'" in str(commands)
    return (f"the server's work of this pipeline cannot be judged here ({str(error)[:200]}); in a $lookup "
            f"sub-pipeline only $eq, $lt, $lte, $gt and $gte in $expr, a field against a let variable, use an "
            f"index{' (not $in)' if uses_in else ''}: {fix}")


@exercise("3.1", hint="one pattern keeps every name of the way up in the node's own document: read that "
                      "document (find_one with a projection) and split or list what it holds")
def breadcrumbs(answer: Any, *, categories: Any, node: Any) -> str | None:
    """Call the learner's ``breadcrumbs(node)`` on ``node``, on its parent and on its root, and
    compare with the names rebuilt from the parent ids: one round trip each, and no more documents
    than names."""
    return _crumbs(answer, categories, node)


@exercise("3.2", hint="per pattern: one aggregate that walks down in the pattern's fastest form ($graphLookup "
                      "over references, a $match on an ancestors array, a $lookup on the path's key range for "
                      "materialized paths), then $lookup from the products on category_id, with batchSize",
          query_result=True)
def products_under(answer: Any, *, products: Any, categories: Any, category: Any, patterns: Any) -> str | None:
    """Call each pattern's function on ``category`` and on a small category below it, counting
    round trips and documents: the sorted product ids in the category or below it, in as many round
    trips as the pattern's fastest walk down (one aggregate: the walk, then a ``$lookup`` of the products),
    returning no more than the subtree and its products and, where the engine explains, examining
    no more than the fastest walk does plus one document a product."""
    names = sorted(patterns)
    if not isinstance(answer, dict) or sorted(answer) != names:
        return f"expected a dict with the keys {names}: for each, a function of a category id"
    parents, _ = _tree(categories)
    below = _below(parents, category)
    small = min((n for n in below if _below(parents, n)), key=lambda n: (len(_below(parents, n)), n), default=category)
    for where in dict.fromkeys((category, small)):
        inside = [where, *_below(parents, where)]
        want = sorted(d["_id"] for d in products.find({"category_id": {"$in": inside}}, {"_id": 1}, batch_size=10_000))
        for name in names:
            tree = patterns[name]
            walks = []
            for walk in tree.forms_of("descendants").values():
                with count_commands(keep_commands=True) as fastest:
                    walk(where)
                walks.append((fastest.round_trips, _examined(categories.database, fastest.command_documents)))
            trips = min(w[0] for w in walks)
            read = min((w[1] for w in walks if w[0] == trips and w[1] is not None), default=None)
            if not callable(answer[name]):
                return f"{name}: give a function of a category id, not {shown(answer[name])}"
            with count_commands(keep_commands=True) as cost:
                got = answer[name](where)
            if not isinstance(got, list) or got != want:
                return f"{name}, category {where}: not the {len(want)} sorted ids of the products in it or below it"
            if cost.default_batch_getmores:
                return (f"{name}, category {where}: a read came back in two batches (the driver's first batch "
                        f"holds 101 documents); set batch_size")
            if cost.round_trips == 0:
                return (f"{name}, category {where}: no round trip: the answer came from data already in Python; "
                        f"ask the database, walking down {name}'s collection")
            if tree.collection.name not in _read(cost.command_documents):
                return (f"{name}, category {where}: the function never read {name}'s collection "
                        f"({tree.collection.name}); walk down the subtree in the pattern itself")
            if cost.round_trips > trips:
                return (f"{name}, category {where}: {cost.round_trips} round trips; {trips} is enough "
                        f"(one aggregate: the subtree, then $lookup from the products)")
            if cost.docs_returned > len(inside) + 1 + len(want):
                return (f"{name}, category {where}: {cost.docs_returned:,} documents came back; ask the server "
                        f"for the products of the subtree only")
            try:
                examined = _examined(categories.database, cost.command_documents, strict=True) if read is not None else None
            except TreeError as e:  # not judged is not passed: a $lookup the index cannot serve scans its collection
                join = "join the products with localField and foreignField"
                return f"{name}, category {where}: {_unjudged(e, cost.command_documents, join)}"
            if examined is not None and examined > read + 1 + len(want):
                return (f"{name}, category {where}: the server examined {examined:,} documents; the subtree "
                        f"needs {read + 1:,} at most (the category too) and its products one each, found "
                        f"through the category_id index")
    return None


@exercise("3.3", hint="one aggregate on the ancestors array's collection: $match the node, then $lookup from "
                      "the same collection with localField 'ancestors' and foreignField '_id'; put the names "
                      "in the order of the node's ancestors in Python")
def breadcrumbs_in_one(answer: Any, *, tree: Any, categories: Any, node: Any) -> str | None:
    """Call the learner's ``breadcrumbs(node)`` on ``node``, its parent and its root: the text from
    the root down, in one round trip, reading only the ancestors array's collection (``tree``)."""
    return _crumbs(answer, categories, node, only=tree.collection)


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
