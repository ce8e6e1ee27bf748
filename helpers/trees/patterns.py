"""Tree patterns of notebook 03: references, ancestors arrays (ids or names) and ``$graphLookup``.

Introduced in notebook 03 (tree patterns). One class per pattern, all with the same methods, so a
notebook or a test can run the same operation on each and count what it costs:

* :class:`ParentRefs`: ``{_id, name, parent}``, ``parent: None`` at a root; index on ``parent``.
* :class:`ChildRefs`: ``{_id, name, children: [ids]}``; multikey index on ``children``.
* :class:`AncestorsArray`: ``{_id, name, parent, ancestors: [root, ..., parent]}`` (the hybrid with
  the parent reference); indexes on ``parent`` and ``ancestors``.
* :class:`AncestorsWithNames`: the same with ``ancestors: [{_id, name}, ...]`` (extended references:
  the breadcrumbs in one read; a rename rewrites the name in every descendant); index on ``ancestors._id``.
* :class:`MaterializedPaths` (``{_id, name, path}``) and its variant live in :mod:`helpers.trees.paths`.

Build one as ``Pattern(collection)``, fill an empty collection with ``.load(rows)`` (rows are
``(node_id, parent_id, name)``, ``parent_id`` None at a root), then call ``parent``, ``children``
(sorted ids), ``menu`` (the children's ``(id, name)``), ``ancestors`` (ids, root first),
``breadcrumbs`` (names, root first, the node's own last), ``descendants`` (sorted ids),
``is_ancestor(a, b)``, ``move(node_id, new_parent_id)`` (``None`` makes it a root) and
``rename(node_id, new_name)``. ``ParentRefs`` and ``ChildRefs`` also have ``graph_ancestors`` /
``graph_descendants`` / ``graph_breadcrumbs`` (one ``$graphLookup`` round trip each) and
``graph_walk`` (``max_depth``, depths, ``restrict``); ``AncestorsArray.lookup_breadcrumbs`` and
``ChildRefs.lookup_menu`` join the names with one ``$lookup``. Each class's ``forms`` names every
way it answers an operation (the obvious one and the competent one), for a bill to measure. Every
read sets its first batch (``BATCH``), so no answer pays a ``getMore`` it did not choose.

Bad input (an unknown id, a move under the node itself or one of its descendants, a name that is
empty or contains ``/``) raises a :class:`TreeError` with what to do, before anything is written.

A move or rename that writes more than one document (``ChildRefs.move``, the ancestors arrays'
moves, ``AncestorsWithNames`` renames, and the paths' of :mod:`helpers.trees.paths`) sends its updates
as one ordered ``bulk_write`` (``move_in_steps``: one command each, the counter-example), in a
multi-document transaction where the engine has
them (``Capabilities.transactions``): a process that dies half-way leaves nothing. Elsewhere (a
standalone ``mongod``), or with ``transaction=False``, it first marks the node (``pending``: what it
is doing), then writes in an order that can be finished, then removes the mark: ``interrupted()``
lists what a dead process left half-done and ``repair()`` finishes it.

The base every pattern shares (input checks, loading, those rewrites), its errors and
:func:`interrupt` live in :mod:`helpers.trees.base`; the comparisons (:func:`tree_shape`,
:func:`operation_costs` and the tables read from it) in :mod:`helpers.trees.costs`. Every name
is imported from here.
"""
from __future__ import annotations

from typing import Any, Mapping

from pymongo import DeleteOne, InsertOne, UpdateOne

from ..backends import engine_limits, info_of
from .base import (
    BATCH,
    SEPARATOR,
    CycleError,
    Row,
    TreeError,
    _check_name,
    _in_one,
    _joined,
    _pairs_in_one,
    _Pattern,
    _split,
)

__all__ = ["ParentRefs", "ChildRefs", "AncestorsArray", "AncestorsWithNames", "GraphLookup"]


_BIG = 1 << 30  # "to the end of the array" for $slice


# ---------------------------------------------------------------------------------------------
class _Graph(_Pattern):
    """``$graphLookup`` walks for the patterns that store references (parent or child)."""

    up: dict[str, str] = {}
    down: dict[str, str] = {}
    #: a form measured without the index its walk looks up (the ``connectToField``), as a labelled
    #: counter-example: ``{method: (form label, method name, indexed field)}``; the bill measures it
    #: with that index dropped (:func:`helpers.trees.workload_costs`), and never bills it
    unindexed: dict[str, tuple[str, str, str]] = {}

    # ---------------------------------------------------------------------
    def graph_pipeline(self, node: Any, *, up: bool, max_depth: int | None = None,
                       restrict: Mapping[str, Any] | None = None, names: bool = False) -> list[dict]:
        """The aggregation that walks up (ancestors) or down (descendants) from ``node`` in one round
        trip; ``names`` keeps only what breadcrumbs show: each node's name, id and depth."""
        spec = {"from": self.collection.name, **(self.up if up else self.down), "as": "found",
                "depthField": "depth"}
        if max_depth is not None:
            if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 0:
                raise TreeError(f"max_depth must be a whole number >= 0 (0 = one level), not {max_depth!r}")
            spec["maxDepth"] = max_depth
        if restrict is not None:
            spec["restrictSearchWithMatch"] = dict(restrict)
        keep = {"found._id": 1, "found.depth": 1, **({"found.parent": 1} if up and not names else {}),
                **({"name": 1, "found.name": 1} if names else {})}  # breadcrumbs: the names, ids and order only
        return [{"$match": {"_id": node}}, {"$graphLookup": spec}, {"$project": keep}]

    def graph_walk(self, node: Any, *, up: bool, max_depth: int | None = None,
                   restrict: Mapping[str, Any] | None = None) -> list[tuple[Any, int]]:
        """``(id, depth)`` of every node ``$graphLookup`` reaches, sorted by depth then id (depth 0 = next)."""
        return [(d["_id"], d["depth"]) for d in self._graph(node, up, max_depth, restrict)]

    def _graph(self, node: Any, up: bool, max_depth: int | None = None,
               restrict: Mapping[str, Any] | None = None, names: bool = False) -> list[dict]:
        return self._graph_from(node, up, max_depth, restrict, names)[1]

    def _graph_from(self, node: Any, up: bool, max_depth: int | None = None,
                    restrict: Mapping[str, Any] | None = None, names: bool = False) -> tuple[dict, list[dict]]:
        """The start document and the nodes found, sorted by depth then id."""
        out = list(self.collection.aggregate(self.graph_pipeline(node, up=up, max_depth=max_depth,
                                                                 restrict=restrict, names=names),
                                             batchSize=BATCH))
        if not out:
            raise self._unknown(node)
        found = out[0].get("found", [])
        for d in found:
            d["depth"] = int(d["depth"])
        cap = engine_limits(self.collection.database)[0]
        if cap is not None and (max_depth is None or max_depth > cap):
            found = self._beyond(node, found, up, cap, max_depth, restrict, names)
        return out[0], sorted(found, key=lambda d: (d["depth"], d["_id"]))

    def _beyond(self, node: Any, found: list[dict], up: bool, cap: int, max_depth: int | None,
                restrict: Mapping[str, Any] | None, names: bool = False) -> list[dict]:
        """The engine's ``$graphLookup`` stops at depth ``cap`` when no ``maxDepth`` is given
        (``Capabilities.graph_max_depth``): walk on from the nodes found at that depth, one more
        ``$graphLookup`` per ``cap + 1`` levels, until no node is left there. A node met again
        (a true cycle) is kept once, so the cycle checks still see it."""
        seen = {d["_id"] for d in found}
        frontier = [d["_id"] for d in found if d["depth"] == cap]
        offset = 0
        while frontier:
            offset += cap + 1
            left = None if max_depth is None else max_depth - offset
            if left is not None and left < 0:
                break
            pipeline = self.graph_pipeline(node, up=up, max_depth=left, restrict=restrict, names=names)
            pipeline[0] = {"$match": {"_id": {"$in": frontier}}}
            frontier = []
            for doc in self.collection.aggregate(pipeline, batchSize=BATCH):
                for d in doc.get("found", []):
                    depth = int(d["depth"])
                    if d["_id"] in seen:
                        continue
                    seen.add(d["_id"])
                    if depth == cap:
                        frontier.append(d["_id"])
                    d["depth"] = depth + offset
                    found.append(d)
        return found

    def _level_below(self, frontier: list[Any]) -> list[Any] | None:
        """The ids one level below ``frontier``, one query (None: no document for the frontier)."""
        raise NotImplementedError

    def descendants(self, node: Any) -> list[Any]:
        """Sorted ids of the whole subtree below: one query per level (the level above ``$in``)."""
        found: list[Any] = []
        seen = {node}
        frontier = [node]
        while frontier:
            level = self._level_below(frontier)
            if not found and not level:
                if level is None or self.collection.find_one({"_id": node}, {"_id": 1}) is None:
                    raise self._unknown(node)
            level = level or []
            if seen.intersection(level):
                raise CycleError(f"the references below {node!r} form a cycle; fix the data")
            seen.update(level)
            found.extend(level)
            frontier = level
        return sorted(found)

    def graph_ancestors(self, node: Any) -> list[Any]:
        """Ids from the root down to the parent, from one ``$graphLookup`` (root first)."""
        found = self._graph(node, True)
        self._check_chain(node, found)
        return [d["_id"] for d in reversed(found)]

    def graph_breadcrumbs(self, node: Any) -> list[str]:
        """Names from the root down to the node, its own last: one ``$graphLookup`` that keeps the names."""
        start, found = self._graph_from(node, True, names=True)
        self._check_chain(node, found)
        return [d["name"] for d in reversed(found)] + [start["name"]]

    def _walk_up(self, node: Any) -> list[Any]:
        """A move's check walks up with one ``$graphLookup``, not one read per level."""
        return self.graph_ancestors(node)

    def _check_chain(self, node: Any, found: list[dict]) -> None:
        top_parent = found[-1].get("parent") if found else None
        if any(d["_id"] == node for d in found) or [d["depth"] for d in found] != list(range(len(found))) \
                or top_parent is not None:
            raise CycleError(f"the references above {node!r} do not form a single chain (a cycle, a node with "
                             f"two parents or a missing parent); fix the data")

    def string_breadcrumbs(self, node: Any) -> list[str]:
        """The names of :meth:`graph_breadcrumbs` from one ``$graphLookup`` whose reply is one string,
        ``"/root/.../node"`` (``$unwind``, ``$sort`` by depth, ``$group``, ``$reduce``), split here."""
        pipeline = self.graph_pipeline(node, up=True, names=True)[:2] + [
            {"$unwind": {"path": "$found", "preserveNullAndEmptyArrays": True}}, {"$sort": {"found.depth": -1}},
            {"$group": {"_id": None, "n": {"$push": "$found.name"}, "name": {"$first": "$name"}}},
            {"$project": {"_id": 0, "c": _joined("$n")}}]
        names = _split(self, node, list(self.collection.aggregate(pipeline, batchSize=BATCH)))
        cap = engine_limits(self.collection.database)[0]
        return self.graph_breadcrumbs(node) if cap is not None and len(names) > cap else names  # a capped walk

    def compact_descendants(self, node: Any) -> list[Any]:
        """The ids of :meth:`graph_descendants` from one ``$graphLookup`` whose reply is one array of ids."""
        pipeline = self.graph_pipeline(node, up=False)[:2] + [
            {"$project": {"_id": 0, "i": {"$map": {"input": "$found", "in": "$$this._id"}}}}]
        out = list(self.collection.aggregate(pipeline, batchSize=BATCH))
        if not out:
            raise self._unknown(node)
        cap = engine_limits(self.collection.database)[0]
        if (cap is not None and len(out[0]["i"]) > cap) or node in out[0]["i"]:  # a capped walk, or a cycle
            return self.graph_descendants(node)
        return sorted(out[0]["i"])

    def graph_descendants(self, node: Any) -> list[Any]:
        """Sorted ids of the whole subtree, from one ``$graphLookup``."""
        found = self._graph(node, False)
        if any(d["_id"] == node for d in found):
            raise CycleError(f"the references below {node!r} form a cycle; fix the data")
        return sorted(d["_id"] for d in found)


# ---------------------------------------------------------------------------------------------
class ParentRefs(_Graph):
    """Parent references: each node stores its parent's id (``None`` at a root). Notebook 03."""

    pattern = "parent references"
    indexes = (("parent", {}),)
    forms = {"breadcrumbs": {"one string ($reduce)": "string_breadcrumbs", "one $graphLookup": "graph_breadcrumbs",
                             "one query per level": "breadcrumbs"},
             "descendants": {"one $graphLookup, one array": "compact_descendants", "one $graphLookup": "graph_descendants",
                             "one query per level": "descendants"},
             "menu": {"one document ($group)": "compact_menu", "a document a child": "menu"}}
    unindexed = {"descendants": ("one $graphLookup, one array, no index on parent", "compact_descendants", "parent")}
    up = {"startWith": "$parent", "connectFromField": "parent", "connectToField": "_id"}
    down = {"startWith": "$_id", "connectFromField": "_id", "connectToField": "parent"}

    def documents(self, ordered: list[Row]) -> list[dict]:
        return [{"_id": n, "name": name, "parent": p} for n, p, name in ordered]

    def add(self, node: Any, parent: Any, name: str) -> None:
        """Add a category below ``parent``: one insert (a reference stores one step, nothing to derive)."""
        _check_name(name, "name")
        self.collection.insert_one({"_id": node, "name": name, "parent": parent})

    def parent(self, node: Any) -> Any:
        """The parent's id (None for a root): one read of the node."""
        return self._require(node, {"parent": 1})["parent"]

    def children(self, node: Any) -> list[Any]:
        """Sorted ids of the children: one query on the ``parent`` index."""
        kids = sorted(d["_id"] for d in self.collection.find({"parent": node}, {"_id": 1}, batch_size=BATCH))
        if not kids:
            self._require(node)  # a leaf, or an unknown id?
        return kids

    def menu(self, node: Any) -> list[tuple[Any, str]]:
        """``(id, name)`` of each child, sorted by id (one level of a menu): one query on ``parent``."""
        return _menu_by_parent(self, node)

    def compact_menu(self, node: Any) -> list[tuple[Any, str]]:
        """The same menu from one aggregate on ``parent`` whose reply is one document (two arrays)."""
        return _in_one(self, node, {"parent": node}, names=True)

    def breadcrumbs(self, node: Any) -> list[str]:
        """Names from the root down to the node, its own last: one read per level, walking up."""
        doc = self._require(node, {"name": 1, "parent": 1})
        names, seen = [doc["name"]], {node}
        while doc["parent"] is not None:
            parent = doc["parent"]
            if parent in seen:
                raise CycleError(f"the parent references above {node!r} form a cycle through {parent!r}; fix the data")
            seen.add(parent)
            doc = self.collection.find_one({"_id": parent}, {"name": 1, "parent": 1})
            if doc is None:
                raise TreeError(f"node {node!r} has an ancestor {parent!r} with no document; fix the data")
            names.append(doc["name"])
        return names[::-1]

    def ancestors(self, node: Any) -> list[Any]:
        """Ids from the root down to the parent: one read per level, walking up."""
        chain: list[Any] = []
        parent = self._require(node, {"parent": 1})["parent"]
        while parent is not None:
            if parent in chain or parent == node:
                raise CycleError(f"the parent references above {node!r} form a cycle through {parent!r}; "
                                 f"fix the data (every chain must end at parent None)")
            chain.append(parent)
            doc = self.collection.find_one({"_id": parent}, {"parent": 1})
            if doc is None:
                raise TreeError(f"node {chain[-2] if len(chain) > 1 else node!r} has parent {parent!r}, "
                                f"which does not exist in {self.collection.name!r}; fix the data")
            parent = doc["parent"]
        return chain[::-1]

    def _level_below(self, frontier: list[Any]) -> list[Any]:
        """The children of the frontier's nodes: one query on the ``parent`` index."""
        return [d["_id"] for d in self.collection.find({"parent": {"$in": frontier}}, {"_id": 1}, batch_size=BATCH)]

    def move(self, node: Any, new_parent: Any) -> None:
        """Make ``new_parent`` (None: a root) the parent of ``node``: one write, whatever the subtree."""
        chain = [] if new_parent is None else self._ancestors_of(new_parent, "new_parent_id") + [new_parent]
        self._check_new_parent(node, new_parent, chain)
        if self.collection.update_one({"_id": node}, {"$set": {"parent": new_parent}}).matched_count == 0:
            raise self._unknown(node)


# ---------------------------------------------------------------------------------------------
class ChildRefs(_Graph):
    """Child references: each node stores the array of its children's ids. Notebook 03."""

    pattern = "child references"
    indexes = (("children", {}),)
    forms = {"breadcrumbs": {"one string ($reduce)": "string_breadcrumbs", "one $graphLookup": "graph_breadcrumbs",
                             "one query per level": "breadcrumbs"},
             "descendants": {"one $graphLookup, one array": "compact_descendants", "one $graphLookup": "graph_descendants",
                             "one query per level": "descendants"},
             "menu": {"one $lookup, one document": "compact_lookup_menu", "one $lookup": "lookup_menu", "two queries": "menu"},
             "move": {"one bulk_write": "move", "one command a write": "move_in_steps"},
             "add": {"one client bulk_write": "add_in_one_command", "one bulk_write": "add"}}
    unindexed = {"breadcrumbs": ("one string ($reduce), no index on children", "string_breadcrumbs", "children")}
    up = {"startWith": "$_id", "connectFromField": "_id", "connectToField": "children"}
    down = {"startWith": "$children", "connectFromField": "children", "connectToField": "_id"}

    def documents(self, ordered: list[Row]) -> list[dict]:
        kids: dict[Any, list[Any]] = {n: [] for n, _p, _name in ordered}
        for n, p, _name in ordered:
            if p is not None:
                kids[p].append(n)
        return [{"_id": n, "name": name, "children": kids[n]} for n, _p, name in ordered]

    def graph_pipeline(self, node: Any, *, up: bool, max_depth: int | None = None,
                       restrict: Mapping[str, Any] | None = None, names: bool = False) -> list[dict]:
        """As for parent references, keeping only ``_id`` and ``depth`` of each node found (and names)."""
        pipeline = super().graph_pipeline(node, up=up, max_depth=max_depth, restrict=restrict, names=names)
        pipeline[-1]["$project"].pop("found.parent", None)
        return pipeline

    def add(self, node: Any, parent: Any, name: str) -> None:
        """Add a category below ``parent``: one ordered ``bulk_write``, the insert and the parent's ``$push``."""
        _check_name(name, "name")
        self.collection.bulk_write([InsertOne({"_id": node, "name": name, "children": []}),
                                    UpdateOne({"_id": parent}, {"$push": {"children": node}})], ordered=True)

    def add_in_one_command(self, node: Any, parent: Any, name: str) -> None:
        """The same insert and ``$push`` in one command, one round trip: MongoDB 8.0's ``bulkWrite``
        (``client.bulk_write``, ordered), where the engine has it (``caps.client_bulk_write``); a
        collection's ``bulk_write`` (:meth:`add`) sends one command per kind of write, two here."""
        _check_name(name, "name")
        ns = self.collection.full_name
        self.collection.database.client.bulk_write(
            [InsertOne({"_id": node, "name": name, "children": []}, namespace=ns),
             UpdateOne({"_id": parent}, {"$push": {"children": node}}, namespace=ns)], ordered=True)

    def forms_of(self, method: str) -> dict[str, Any]:
        """As for every pattern; the one-command add only where the engine has ``bulkWrite``."""
        out = super().forms_of(method)
        info = info_of(self.collection)
        if method == "add" and not (info is not None and info.caps.client_bulk_write):
            out.pop("one client bulk_write", None)
        return out

    def _unadd(self, node: Any, parent: Any) -> None:
        self.collection.bulk_write([DeleteOne({"_id": node}), UpdateOne({"_id": parent}, {"$pull": {"children": node}})])

    def parent(self, node: Any) -> Any:
        """The parent's id (None for a root): one query on the ``children`` index (two for a root)."""
        doc = self.collection.find_one({"children": node}, {"_id": 1})
        if doc is None:
            self._require(node)  # a root, or an unknown id?
            return None
        return doc["_id"]

    def children(self, node: Any) -> list[Any]:
        """Sorted ids of the children: one read of the node."""
        return sorted(self._require(node, {"children": 1})["children"])

    def menu(self, node: Any) -> list[tuple[Any, str]]:
        """``(id, name)`` of each child, sorted by id: the node's ``children``, then their names (two queries)."""
        kids = self._require(node, {"children": 1})["children"]
        found = self.collection.find({"_id": {"$in": kids}}, {"name": 1}, batch_size=BATCH) if kids else []
        return sorted((d["_id"], d["name"]) for d in found)

    def compact_lookup_menu(self, node: Any) -> list[tuple[Any, str]]:
        """The menu of :meth:`lookup_menu` whose reply is one document: the children's ids and names as two arrays."""
        pipeline = [{"$match": {"_id": node}},
                    {"$lookup": {"from": self.collection.name, "localField": "children", "foreignField": "_id",
                                 "as": "found"}},
                    {"$project": {"_id": 0, "i": {"$map": {"input": "$found", "in": "$$this._id"}},
                                  "n": {"$map": {"input": "$found", "in": "$$this.name"}}}}]
        return _pairs_in_one(self, node, pipeline)

    def lookup_menu(self, node: Any) -> list[tuple[Any, str]]:
        """The same menu from one aggregate: the node, its children's names joined by ``$lookup``."""
        pipeline = [{"$match": {"_id": node}},
                    {"$lookup": {"from": self.collection.name, "localField": "children", "foreignField": "_id",
                                 "as": "found"}},
                    {"$project": {"found._id": 1, "found.name": 1}}]
        out = list(self.collection.aggregate(pipeline, batchSize=BATCH))
        if not out:
            raise self._unknown(node)
        return sorted((d["_id"], d["name"]) for d in out[0]["found"])

    def breadcrumbs(self, node: Any) -> list[str]:
        """Names from the root down to the node, its own last: one query per level, walking up."""
        names, seen, current = [self._require(node, {"name": 1})["name"]], {node}, node
        while (doc := self.collection.find_one({"children": current}, {"name": 1})) is not None:
            if doc["_id"] in seen:
                raise CycleError(f"the child references above {node!r} form a cycle; fix the data")
            seen.add(doc["_id"])
            names.append(doc["name"])
            current = doc["_id"]
        return names[::-1]

    def ancestors(self, node: Any) -> list[Any]:
        """Ids from the root down to the parent: one query per level, walking up."""
        chain: list[Any] = []
        current = node
        while True:
            doc = self.collection.find_one({"children": current}, {"_id": 1})
            if doc is None:
                if not chain:
                    self._require(node)
                return chain[::-1]
            if doc["_id"] in chain or doc["_id"] == node:
                raise CycleError(f"the child references above {node!r} form a cycle; fix the data")
            chain.append(doc["_id"])
            current = doc["_id"]

    def _level_below(self, frontier: list[Any]) -> list[Any] | None:
        """The children of the frontier's nodes: one read of their ``children`` arrays."""
        docs = list(self.collection.find({"_id": {"$in": frontier}}, {"children": 1}, batch_size=BATCH))
        return [c for d in docs for c in d.get("children", [])] if docs else None

    def move(self, node: Any, new_parent: Any) -> None:
        """Pull ``node`` from its old parent's array and push it onto the new one's: one ``$graphLookup``
        checks both ids and the new parent's way up, then one ``bulk_write`` of the two updates."""
        intent = self._move_intent(node, new_parent)
        self.rewrite(node, intent, lambda session: self.finish(node, intent, session))

    def move_in_steps(self, node: Any, new_parent: Any) -> None:
        """The same move, each update its own command: a round trip each (the counter-example)."""
        intent = self._move_intent(node, new_parent)
        self.rewrite(node, intent, lambda session: self.finish_in_steps(node, intent, session))

    def _move_intent(self, node: Any, new_parent: Any) -> dict:
        """Check the move (both ids exist, no cycle) in one round trip; return what it will write."""
        if new_parent is None:
            self._require(node)
        else:
            self._check_new_parent(node, new_parent, self._chain_and_node(node, new_parent))
        return {"op": "move", "to": new_parent}

    def _chain_and_node(self, node: Any, new_parent: Any) -> list[Any]:
        """The ancestors of ``new_parent`` and ``new_parent`` itself, root first, from one ``$graphLookup``
        that starts at both nodes (so it also finds whether ``node`` exists)."""
        pipeline = self.graph_pipeline(new_parent, up=True)
        pipeline[0] = {"$match": {"_id": {"$in": [node, new_parent]}}}
        out = {d["_id"]: d for d in self.collection.aggregate(pipeline, batchSize=BATCH)}
        if node not in out:
            raise self._unknown(node)
        if new_parent not in out:
            raise self._unknown(new_parent, "new_parent_id")
        found = sorted(out[new_parent].get("found", []), key=lambda d: int(d["depth"]))
        cap = engine_limits(self.collection.database)[0]
        if cap is not None and found and int(found[-1]["depth"]) >= cap:  # the engine stopped: walk on
            return self._ancestors_of(new_parent, "new_parent_id") + [new_parent]
        for d in found:
            d["depth"] = int(d["depth"])
        self._check_chain(new_parent, found)
        return [d["_id"] for d in reversed(found)] + [new_parent]

    def writes(self, node: Any, intent: Mapping[str, Any]) -> list[tuple[str, dict, Any]]:
        """The two updates of a move (each a no-op once done): pull from the old parent, push onto the new."""
        new_parent = intent["to"]
        pull = ("one", {"children": node, "_id": {"$ne": new_parent}}, {"$pull": {"children": node}})
        if new_parent is None:
            return [pull]
        return [pull, ("one", {"_id": new_parent, "children": {"$ne": node}}, {"$push": {"children": node}})]


# ---------------------------------------------------------------------------------------------
class AncestorsArray(_Pattern):
    """Array of ancestors plus the parent reference (the hybrid). Notebook 03."""

    pattern = "array of ancestors"
    indexes = (("parent", {}), ("ancestors", {}))
    forms = {"breadcrumbs": {"one string ($lookup, $reduce)": "string_breadcrumbs", "one $lookup": "lookup_breadcrumbs",
                             "two queries": "breadcrumbs"},
             "descendants": {"one document ($group)": "compact_descendants", "a document a node": "descendants"},
             "menu": {"one document ($group)": "compact_menu", "a document a child": "menu"},
             "add": {"one aggregate, $merge": "add", "read the parent, then insert": "add_reading_parent"},
             "move": {"one bulk_write": "move", "one command a write": "move_in_steps"}}

    def documents(self, ordered: list[Row]) -> list[dict]:
        anc: dict[Any, list[Any]] = {}
        docs = []
        for n, p, name in ordered:
            anc[n] = [] if p is None else anc[p] + [p]
            docs.append({"_id": n, "name": name, "parent": p, "ancestors": anc[n]})
        return docs

    def parent(self, node: Any) -> Any:
        """The parent's id (None for a root): one read of the node."""
        return self._require(node, {"parent": 1})["parent"]

    #: the field the ``ancestors`` index holds the ids in (``AncestorsWithNames``: ``ancestors._id``)
    key = "ancestors"

    def _ids(self, ancestors: list[Any]) -> list[Any]:
        """The ids of a stored ``ancestors`` array."""
        return list(ancestors)

    def _link(self, doc: Mapping[str, Any]) -> Any:
        """What a child's ``ancestors`` array holds for ``doc`` (its id)."""
        return doc["_id"]

    #: :meth:`_link` as an aggregation expression on the parent's document
    _link_expr: Any = "$_id"

    def _child_expr(self, node: Any, name: str) -> dict:
        return {"_id": {"$literal": node}, "name": {"$literal": name}, "parent": "$_id",
                "ancestors": {"$concatArrays": ["$ancestors", [self._link_expr]]}}

    def _child_of(self, doc: Mapping[str, Any], node: Any, name: str) -> dict:
        return {"_id": node, "name": name, "parent": doc["_id"], "ancestors": [*doc["ancestors"], self._link(doc)]}

    def children(self, node: Any) -> list[Any]:
        """Sorted ids of the children: one query on the ``parent`` index."""
        kids = sorted(d["_id"] for d in self.collection.find({"parent": node}, {"_id": 1}, batch_size=BATCH))
        if not kids:
            self._require(node)
        return kids

    def menu(self, node: Any) -> list[tuple[Any, str]]:
        """``(id, name)`` of each child, sorted by id (one level of a menu): one query on ``parent``."""
        return _menu_by_parent(self, node)

    def ancestors(self, node: Any) -> list[Any]:
        """Ids from the root down to the parent: one read of the node, already in order."""
        return list(self._require(node, {"ancestors": 1})["ancestors"])

    def breadcrumbs(self, node: Any) -> list[str]:
        """Names from the root down to the node, its own last: read the node's ``ancestors``, then
        their names (``$in``): two queries (one for a root)."""
        doc = self._require(node, {"name": 1, "ancestors": 1})
        ids = doc["ancestors"]
        found = self.collection.find({"_id": {"$in": ids}}, {"name": 1}, batch_size=BATCH) if ids else []
        return _in_order(node, ids, {d["_id"]: d["name"] for d in found}) + [doc["name"]]

    def lookup_breadcrumbs(self, node: Any) -> list[str]:
        """The same names from one aggregate: the node, and its ancestors joined by ``$lookup`` on
        their ``_id`` (put in the order of the node's ``ancestors`` here, root first)."""
        pipeline = [{"$match": {"_id": node}},
                    {"$lookup": {"from": self.collection.name, "localField": "ancestors", "foreignField": "_id",
                                 "as": "found"}},
                    {"$project": {"name": 1, "ancestors": 1, "found._id": 1, "found.name": 1}}]
        out = list(self.collection.aggregate(pipeline, batchSize=BATCH))
        if not out:
            raise self._unknown(node)
        doc = out[0]
        return _in_order(node, doc["ancestors"], {d["_id"]: d["name"] for d in doc["found"]}) + [doc["name"]]

    def string_breadcrumbs(self, node: Any) -> list[str]:
        """The names of :meth:`lookup_breadcrumbs` from one aggregate whose reply is one string: each
        id of ``ancestors`` mapped to its joined name in order, then ``$reduce``; split here."""
        ids, names = {"$map": {"input": "$found", "in": "$$this._id"}}, {"$map": {"input": "$found", "in": "$$this.name"}}
        at = {"$indexOfArray": [ids, "$$this"]}
        ordered = {"$map": {"input": "$ancestors", "in": {"$cond": [{"$lt": [at, 0]}, None, {"$arrayElemAt": [names, at]}]}}}
        pipeline = [{"$match": {"_id": node}},
                    {"$lookup": {"from": self.collection.name, "localField": "ancestors", "foreignField": "_id",
                                 "as": "found"}},
                    {"$project": {"_id": 0, "c": _joined(ordered)}}]
        return _split(self, node, list(self.collection.aggregate(pipeline, batchSize=BATCH)))

    def compact_descendants(self, node: Any) -> list[Any]:
        """The ids of :meth:`descendants` from one aggregate whose reply is one document (an array of ids)."""
        return _in_one(self, node, {self.key: node}, names=False)

    def compact_menu(self, node: Any) -> list[tuple[Any, str]]:
        """The menu from one aggregate on ``parent`` whose reply is one document (two arrays)."""
        return _in_one(self, node, {"parent": node}, names=True)

    def descendants(self, node: Any) -> list[Any]:
        """Sorted ids of the whole subtree: one query on the multikey ``ancestors`` index."""
        found = sorted(d["_id"] for d in self.collection.find({"ancestors": node}, {"_id": 1}, batch_size=BATCH))
        if not found:
            self._require(node)
        return found

    def subtree_sizes(self) -> dict[Any, int]:
        """Descendants per node that has any, in one aggregation: what a move of each node rewrites."""
        pipeline = [{"$unwind": "$ancestors"}, {"$group": {"_id": "$" + self.key, "n": {"$sum": 1}}}]
        return {d["_id"]: int(d["n"]) for d in self.collection.aggregate(pipeline, batchSize=BATCH)}

    def is_ancestor(self, a: Any, b: Any) -> bool:
        """True if ``a`` is an ancestor of ``b``: one read of both nodes."""
        docs = {d["_id"]: d for d in self.collection.find({"_id": {"$in": [a, b]}}, {self.key: 1}, batch_size=BATCH)}
        for node, what in ((a, "a"), (b, "b")):
            if node not in docs:
                raise self._unknown(node, what)
        return a in self._ids(docs[b]["ancestors"])

    def move(self, node: Any, new_parent: Any) -> None:
        """Set the node's parent and ancestors and rewrite the ancestors of every descendant: read the
        node and the new parent, then one ``bulk_write`` (an ``UpdateOne`` and an ``UpdateMany``)."""
        intent = self._move_intent(node, new_parent)
        if intent is not None:
            self.rewrite(node, intent, lambda session: self.finish(node, intent, session))

    def move_in_steps(self, node: Any, new_parent: Any) -> None:
        """The same move, each update its own command: a round trip each (the counter-example)."""
        intent = self._move_intent(node, new_parent)
        if intent is not None:
            self.rewrite(node, intent, lambda session: self.finish_in_steps(node, intent, session))

    def _move_intent(self, node: Any, new_parent: Any) -> dict | None:
        """Read both nodes (one query), check the move; what it will write (None: already there)."""
        wanted = [node] if new_parent is None else [node, new_parent]
        docs = {d["_id"]: d for d in self.collection.find({"_id": {"$in": wanted}}, {"ancestors": 1, "name": 1},
                                                          batch_size=BATCH)}
        if node not in docs:
            raise self._unknown(node)
        if new_parent is not None and new_parent not in docs:
            raise self._unknown(new_parent, "new_parent_id")
        chain = [] if new_parent is None else docs[new_parent]["ancestors"] + [self._link(docs[new_parent])]
        self._check_new_parent(node, new_parent, self._ids(chain))
        old = docs[node]["ancestors"]
        return None if old == chain else {"op": "move", "from": old, "to": new_parent, "chain": chain}

    def writes(self, node: Any, intent: Mapping[str, Any]) -> list[tuple[str, dict, Any]]:
        """Set the node's parent and ancestors, then swap the old chain in front of every descendant's
        ancestors for the new one, on the server. Only descendants that still hold the old chain
        (the node at position ``len(old)``) match, so running it again finishes an interrupted move."""
        old, chain = list(intent["from"]), list(intent["chain"])
        at = f"ancestors.{len(old)}" + self.key[len("ancestors"):]  # "ancestors.2" or "ancestors.2._id"
        return [("one", {"_id": node}, {"$set": {"parent": intent["to"], "ancestors": chain}}),
                ("many", {self.key: node, at: node}, [{"$set": {"ancestors": {
                    "$concatArrays": [{"$literal": chain}, {"$slice": ["$ancestors", len(old), _BIG]}]}}}])]


def _in_order(node: Any, ids: list[Any], names: Mapping[Any, str]) -> list[str]:
    """The names of ``ids`` in their order (an ancestor without a document is an error)."""
    missing = [a for a in ids if a not in names]
    if missing:
        raise TreeError(f"ancestors {missing} of {node!r} have no document; fix the data")
    return [names[a] for a in ids]


def _menu_by_parent(tree: Any, node: Any) -> list[tuple[Any, str]]:
    """``(id, name)`` of the children of ``node``, sorted by id: one query on the ``parent`` index."""
    kids = sorted((d["_id"], d["name"]) for d in tree.collection.find({"parent": node}, {"name": 1}, batch_size=BATCH))
    if not kids:
        tree._require(node)
    return kids


# ---------------------------------------------------------------------------------------------
class AncestorsWithNames(AncestorsArray):
    """The array of ancestors as extended references, ``[{_id, name}, ...]`` root first, plus the
    parent (MongoDB's Extended Reference pattern: each reference carries the field the frequent
    read needs). Breadcrumbs in one read; a rename rewrites the name in every descendant. Notebook 03."""

    pattern = "array of ancestors with names"
    indexes = (("parent", {}), ("ancestors._id", {}))
    forms = {"breadcrumbs": {"one string ($reduce)": "string_breadcrumbs", "find_one, the names": "breadcrumbs"},
             "descendants": {"one document ($group)": "compact_descendants", "a document a node": "descendants"},
             "menu": {"one document ($group)": "compact_menu", "a document a child": "menu"},
             "add": {"one aggregate, $merge": "add", "read the parent, then insert": "add_reading_parent"},
             "move": {"one bulk_write": "move", "one command a write": "move_in_steps"},
             "rename": {"one bulk_write, no transaction": "rename_without_transaction",
                        "one bulk_write in a transaction": "rename", "one command a write": "rename_in_steps"}}
    key = "ancestors._id"

    def _ids(self, ancestors: list[Any]) -> list[Any]:
        return [a["_id"] for a in ancestors]

    def _link(self, doc: Mapping[str, Any]) -> Any:
        return {"_id": doc["_id"], "name": doc["name"]}

    _link_expr = {"_id": "$_id", "name": "$name"}

    def documents(self, ordered: list[Row]) -> list[dict]:
        anc: dict[Any, list[dict]] = {}
        names: dict[Any, str] = {}
        docs = []
        for n, p, name in ordered:
            names[n] = name
            anc[n] = [] if p is None else anc[p] + [{"_id": p, "name": names[p]}]
            docs.append({"_id": n, "name": name, "parent": p, "ancestors": anc[n]})
        return docs

    def ancestors(self, node: Any) -> list[Any]:
        """Ids from the root down to the parent: one read of the node, already in order."""
        return [a["_id"] for a in self._require(node, {"ancestors._id": 1})["ancestors"]]

    def descendants(self, node: Any) -> list[Any]:
        """Sorted ids of the whole subtree: one query on the multikey ``ancestors._id`` index."""
        found = sorted(d["_id"] for d in self.collection.find({"ancestors._id": node}, {"_id": 1}, batch_size=BATCH))
        if not found:
            self._require(node)
        return found

    def breadcrumbs(self, node: Any) -> list[str]:
        """Names from the root down to the node, its own last: one read of the node."""
        doc = self._require(node, {"name": 1, "ancestors.name": 1})
        return [a["name"] for a in doc["ancestors"]] + [doc["name"]]

    def string_breadcrumbs(self, node: Any) -> list[str]:
        """The same names from one aggregate that returns them as one string, ``"/root/.../node"``
        (``$reduce`` over the ``ancestors`` array: no field names, no ``_id`` travel back), split here."""
        crumbs = {"$concat": [{"$reduce": {"input": "$ancestors", "initialValue": "",
                                           "in": {"$concat": ["$$value", SEPARATOR, "$$this.name"]}}},
                              SEPARATOR, "$name"]}
        out = list(self.collection.aggregate([{"$match": {"_id": node}}, {"$project": {"_id": 0, "c": crumbs}}],
                                             batchSize=BATCH))
        if not out:
            raise self._unknown(node)
        return out[0]["c"].split(SEPARATOR)[1:]

    def lookup_breadcrumbs(self, node: Any) -> list[str]:
        """Nothing to join: the names are stored beside the ids (:meth:`breadcrumbs`, one read)."""
        return self.breadcrumbs(node)

    def rename(self, node: Any, new_name: str) -> None:
        """Rename the node and the copy of its name in every descendant's ``ancestors``: one
        ``bulk_write`` (the node's ``UpdateOne``, the copies' ``UpdateMany`` with the positional ``$``):
        1 + descendants documents written."""
        self._rename(node, new_name, self.finish)

    def rename_in_steps(self, node: Any, new_name: str) -> None:
        """The same rename, each update its own command: a round trip each (the counter-example)."""
        self._rename(node, new_name, self.finish_in_steps)

    def rename_without_transaction(self, node: Any, new_name: str) -> None:
        """The same ordered ``bulk_write``, alone: one round trip, no transaction and no mark. The
        node's name is written first, so a process dying between the two leaves copies that differ
        from the node's name: display copies a moment stale, which running the rename again fixes."""
        _check_name(new_name)
        if self.finish(node, {"op": "rename", "name": new_name}) == 0:
            raise self._unknown(node)

    def _rename(self, node: Any, new_name: str, send: Any) -> None:
        _check_name(new_name)
        intent = {"op": "rename", "name": new_name}

        def writes(session: Any) -> None:
            if send(node, intent, session) == 0:  # neither the node nor a copy of its name: no such node
                raise self._unknown(node)

        self.rewrite(node, intent, writes)

    def writes(self, node: Any, intent: Mapping[str, Any]) -> list[tuple[str, dict, Any]]:
        """A rename: the node's name, then every copy of it (the positional ``$``: the array element
        that matched). A move: as :meth:`AncestorsArray.writes`, the chain's elements being
        ``{_id, name}``. Each write can run again."""
        if intent["op"] == "rename":
            return [("one", {"_id": node}, {"$set": {"name": intent["name"]}}),
                    ("many", {"ancestors._id": node}, {"$set": {"ancestors.$.name": intent["name"]}})]
        return super().writes(node, intent)


class GraphLookup:
    """The ``$graphLookup`` answers of a :class:`ParentRefs` or :class:`ChildRefs` as ``ancestors``/``descendants``.

    Lets :func:`operation_costs` put the one-round-trip walks beside the patterns' own methods.
    """

    def __init__(self, tree: ParentRefs) -> None:
        if not hasattr(tree, "graph_ancestors"):
            raise TypeError(f"GraphLookup needs a ParentRefs or ChildRefs, not {type(tree).__name__}")
        self.tree = tree
        self.ancestors = tree.graph_ancestors
        self.descendants = tree.graph_descendants
        self.breadcrumbs = tree.graph_breadcrumbs
