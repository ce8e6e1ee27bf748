"""The array of ancestors with names, indexed on ``parent`` only (notebook 03, 3.12): a part of the trees
lesson, imported by :mod:`helpers.trees` (its face), from which every name is imported."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from ..backends import engine_limits
from .base import BATCH, _check_name
from .patterns import AncestorsWithNames

__all__ = ["AncestorsWithNamesByParent"]


class AncestorsWithNamesByParent(AncestorsWithNames):
    """:class:`AncestorsWithNames` without the multikey ``ancestors._id`` index: the same documents,
    indexed on ``parent`` alone. Breadcrumbs still read one document; a category page walks down
    from the children with ``$graphLookup`` over ``parent``; a move or rename finds the copies to
    rewrite with no index (a collection scan, on any server), or walks the subtree over ``parent``
    first and updates them by ``_id`` (``$in``: :meth:`move_by_ids`, :meth:`rename_by_ids`), for a
    fraction of the index keys a write changes. Notebook 03 (3.12)."""

    pattern = "array of ancestors with names, indexed on parent only"
    indexes = (("parent", {}),)
    forms = {**AncestorsWithNames.forms,
             "descendants": {"the children, then $graphLookup, one document": "compact_descendants",
                             "the children, then $graphLookup": "graph_descendants"},
             "move": {**AncestorsWithNames.forms["move"], "the subtree walked, then _id $in": "move_by_ids"},
             "rename": {**AncestorsWithNames.forms["rename"],
                        "the subtree walked, then _id $in, no transaction": "rename_by_ids_without_transaction",
                        "the subtree walked, then _id $in, in a transaction": "rename_by_ids"}}

    def _walk_below(self, node: Any, new_parent: Any = None, *, to: bool = False, session: Any = None) -> dict:
        """One aggregate: the node (its ``ancestors`` and name), the ids of its whole subtree from a
        ``$graphLookup`` over the ``parent`` index (``ids``; None where the engine's depth cap may have
        stopped the walk, ``caps.graph_max_depth``: then the writes find the copies by a scan), and with
        ``to`` the new parent's document, joined by ``_id`` (``let``). Raises for an unknown id."""
        walk = {"from": self.collection.name, "startWith": "$_id", "connectFromField": "_id",
                "connectToField": "parent", "as": "below", "depthField": "d"}
        keep = {"ancestors": 1, "name": 1, "ids": {"$map": {"input": "$below", "in": "$$this._id"}},
                "deepest": {"$max": {"$map": {"input": "$below", "in": "$$this.d"}}}}
        pipeline: list[dict] = [{"$match": {"_id": node}}, {"$graphLookup": walk}]
        if to:
            keep["to"] = 1
            pipeline.append({"$lookup": {"from": self.collection.name, "let": {"p": {"$literal": new_parent}},
                                         "pipeline": [{"$match": {"$expr": {"$eq": ["$_id", "$$p"]}}},
                                                      {"$project": {"ancestors": 1, "name": 1}}], "as": "to"}})
        out = list(self.collection.aggregate([*pipeline, {"$project": keep}], batchSize=BATCH, session=session))
        if not out:
            raise self._unknown(node)
        doc = out[0]
        cap = engine_limits(self.collection.database)[0]
        if cap is not None and doc.get("deepest") is not None and int(doc["deepest"]) >= cap:
            doc["ids"] = None  # the walk may have stopped at the engine's cap: find the copies by a scan
        return doc

    def move_by_ids(self, node: Any, new_parent: Any) -> None:
        """The same move, the subtree found first: one aggregate reads the node and the new parent and
        walks the node's subtree over the ``parent`` index (:meth:`_walk_below`); one ``bulk_write``
        then updates the node and its descendants by ``_id`` (``$in``), no collection scan. In a
        transaction the walk is its first read (a node added below since is found or conflicts, as
        with the scan); without one, the mark holds the move without the ids, so :meth:`repair`
        finds the copies by a scan (a node added during the interruption is not missed)."""
        def walked(session: Any) -> dict | None:
            doc = self._walk_below(node, new_parent, to=new_parent is not None, session=session)
            if new_parent is not None and not doc["to"]:
                raise self._unknown(new_parent, "new_parent_id")
            chain = [] if new_parent is None else doc["to"][0]["ancestors"] + [self._link(doc["to"][0])]
            self._check_new_parent(node, new_parent, self._ids(chain))
            if doc["ancestors"] == chain:
                return None
            return {"op": "move", "from": doc["ancestors"], "to": new_parent, "chain": chain, "ids": doc["ids"]}

        self._by_ids(node, walked)

    def _by_ids(self, node: Any, walked: Callable[[Any], dict | None]) -> None:
        """Run a walk-first rewrite: ``walked(session)`` reads what to write (an intent with the
        subtree's ``ids``, or None: nothing to do). In a transaction, the walk and the writes in one
        (a retried transaction walks again); without, the walk, then the mark (the intent without
        its ids: :meth:`repair` rescans), the writes and the mark removed (:meth:`rewrite`)."""
        if self.transaction:
            def writes(session: Any) -> None:
                intent = walked(session)
                if intent is not None:
                    self.finish(node, intent, session)

            with self.collection.database.client.start_session() as session:
                session.with_transaction(writes)
            return
        intent = walked(None)
        if intent is None:
            return
        marked = {k: v for k, v in intent.items() if k != "ids"}
        self.rewrite(node, marked, lambda session: self.finish(node, intent, session))

    def rename_by_ids(self, node: Any, new_name: str) -> None:
        """The same rename, the subtree found first (:meth:`_walk_below`), then one ``bulk_write``: the
        node's name, and the copies in its descendants updated by ``_id`` (``$in``), in a transaction
        where the engine has them, the walk its first read (else marked without the ids, as
        :meth:`move_by_ids`)."""
        _check_name(new_name)
        self._by_ids(node, lambda session: {"op": "rename", "name": new_name,
                                            "ids": self._walk_below(node, session=session)["ids"]})

    def rename_by_ids_without_transaction(self, node: Any, new_name: str) -> None:
        """:meth:`rename_by_ids`'s ``bulk_write`` alone, no transaction and no mark (display copies a
        moment stale after a crash, as :meth:`rename_without_transaction`)."""
        _check_name(new_name)
        self.finish(node, {"op": "rename", "name": new_name, "ids": self._walk_below(node)["ids"]})

    def writes(self, node: Any, intent: Mapping[str, Any]) -> list[tuple[str, dict, Any]]:
        """As :meth:`AncestorsWithNames.writes`; where the intent carries the subtree's ``ids`` (the
        ``_id $in`` forms), the descendants' update finds them by ``_id``, its other conditions kept
        (only copies still old match, so it can run again), and a leaf has none to update."""
        out = super().writes(node, intent)
        ids = intent.get("ids")
        if ids is None:
            return out
        kind, query, update = out[-1]
        return out[:-1] + ([(kind, {"_id": {"$in": list(ids)}, **query}, update)] if ids else [])

    def graph_descendants(self, node: Any, *, one: bool = False) -> list[Any]:
        """Sorted ids of the whole subtree, one round trip: the children (``parent`` index), each
        child's subtree by ``$graphLookup`` over ``parent``, returned as one ``{_id}`` per node (with
        ``one``, all of them in one document's array)."""
        walk = {"from": self.collection.name, "startWith": "$_id", "connectFromField": "_id",
                "connectToField": "parent", "as": "found"}
        pipeline = [{"$match": {"parent": node}}, {"$graphLookup": walk},
                    {"$project": {"i": {"$concatArrays": [["$_id"], {"$map": {"input": "$found", "in": "$$this._id"}}]}}},
                    {"$unwind": "$i"},
                    *([{"$group": {"_id": None, "i": {"$push": "$i"}}}, {"$project": {"_id": 0}}] if one
                      else [{"$project": {"_id": "$i"}}])]
        out = list(self.collection.aggregate(pipeline, batchSize=BATCH))
        found = sorted(out[0]["i"] if out else []) if one else sorted(d["_id"] for d in out)
        cap = engine_limits(self.collection.database)[0]
        if cap is not None and len(found) > cap:  # the engine may have stopped the walk at its depth cap
            return AncestorsWithNames.descendants(self, node)  # the same answer, from a collection scan
        if not found:
            self._require(node)
        return found

    descendants = graph_descendants

    def compact_descendants(self, node: Any) -> list[Any]:
        """:meth:`graph_descendants` whose reply is one document."""
        return self.graph_descendants(node, one=True)
