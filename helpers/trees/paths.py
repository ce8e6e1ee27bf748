"""Materialized paths of notebook 03, and the variant whose links carry the path (notebook 03).

* :class:`MaterializedPaths`: ``{_id, name, path: "/Electronics/Phones/Smartphones"}`` (the path of
  names, the node's own name last); unique index on ``path``. A path of names is only unambiguous
  when sibling names are unique (as in a file system), so this pattern refuses a load, move or
  rename that would give two siblings the same name. A move or rename rewrites every path below
  the node with one pipeline update on the server; in a transaction the unique index refuses a
  taken path (the transaction aborts), without one a query checks first.
* :class:`PathInLink`: the same documents plus each node's ``parent``, read from the id and path a
  link carries (a category page's address spells them): a category page and a menu are one query
  each, no read of the node first; the links change with every move or rename above them.

:data:`PATTERNS` lists the lesson's five stores in order. The lesson imports all of it from
:mod:`helpers.trees`.
"""
from __future__ import annotations

from typing import Any, Mapping

from pymongo import UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from ..backends import engine_limits, info_of
from ..writes import only_duplicates
from .base import BATCH, SEPARATOR, Row, TreeError, _check_name, _in_one, _pairs_in_one, _Pattern
from .patterns import AncestorsArray, AncestorsWithNames, ChildRefs, ParentRefs

__all__ = ["MaterializedPaths", "PathInLink", "PATTERNS"]


_KEEP = object()  # repath: the node's parent does not change (a rename)


def _regex_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "\\.^$|?*+()[]{}" else ch for ch in text)


class MaterializedPaths(_Pattern):
    """Materialized paths of names, '/Electronics/Phones/Smartphones'. Notebook 03."""

    pattern = "materialized paths"
    indexes: tuple = (("path", {"unique": True}),)
    #: does each document hold its ``parent`` id? :class:`PathInLink` does, for its menu
    stores_parent = False
    forms = {"descendants": {"one $lookup, one array": "compact_lookup_descendants", "one $lookup, a key range": "lookup_descendants",
                             "the path, then its prefix": "descendants"},
             "menu": {"one $lookup, a key range, one document": "lookup_menu", "the path, then a regex": "menu"},
             "add": {"one aggregate, $merge": "add", "read the parent, then insert": "add_reading_parent"},
             "move": {"the unique index checks": "move", "a query checks first": "move_checking_first"},
             "rename": {"the unique index checks": "rename", "a query checks first": "rename_checking_first"}}

    def __init__(self, collection: Any, *, transaction: bool | None = None) -> None:
        super().__init__(collection, transaction=transaction)

    def _check_load(self, ordered: list[Row]) -> None:
        seen = set()
        for n, p, name in ordered:
            if (p, name) in seen:
                raise TreeError(f"node {n!r}: another child of {p!r} is also named {name!r}; materialized "
                                f"paths of names need unique sibling names (rename one of them)")
            seen.add((p, name))

    def documents(self, ordered: list[Row]) -> list[dict]:
        paths: dict[Any, str] = {}
        docs = []
        for n, p, name in ordered:
            paths[n] = ("" if p is None else paths[p]) + SEPARATOR + name
            docs.append({"_id": n, "name": name, "path": paths[n]})
        return docs

    @staticmethod
    def subtree_regex(path: str, *, children_only: bool = False, itself: bool = False) -> dict:
        """The regex filter for the nodes below ``path``: an anchored, case-sensitive prefix regex on
        ``path``, written ``{"$regex": ...}`` (the form every engine matches; docs/ENGINES.md), which a
        real MongoDB turns into an index key range. Notebook 03."""
        head = "^" + _regex_escape(path)
        if children_only:
            return {"path": {"$regex": head + SEPARATOR + "[^" + SEPARATOR + "]+$"}}
        return {"path": {"$regex": head + ("(" + SEPARATOR + "|$)" if itself else SEPARATOR)}}

    @staticmethod
    def _below_range(path: str, *, children_only: bool = False, itself: bool = False) -> dict:
        """The same filter as :meth:`subtree_regex` written as the key range the regex stands for:
        ``[path + "/", path + "0")`` ("0" follows "/"), for engines that refuse long regexes."""
        within = {"$gte": path + SEPARATOR, "$lt": path + chr(ord(SEPARATOR) + 1)}
        if children_only:  # one more segment: exactly one more separator than the path has
            levels = path.count(SEPARATOR) + 1
            return {"path": {**within, "$regex": "^(" + SEPARATOR + "[^" + SEPARATOR + "]+){%d}$" % levels}}
        if itself:
            return {"$or": [{"path": path}, {"path": within}]}
        return {"path": within}

    def subtree_filter(self, path: str, *, children_only: bool = False, itself: bool = False) -> dict:
        """The filter for the nodes below ``path`` (with ``itself``, the node too; with ``children_only``,
        one level): :meth:`subtree_regex`, unless its regex is longer than the engine accepts
        (``regex_max_length``, docs/ENGINES.md): then the same key range (:meth:`_below_range`). Notebook 03."""
        kwargs = {"children_only": children_only, "itself": itself}
        query = self.subtree_regex(path, **kwargs)
        limit = engine_limits(self.collection.database)[1]
        if limit is not None and len(query["path"]["$regex"]) > limit:
            return self._below_range(path, **kwargs)
        return query

    def _child_expr(self, node: Any, name: str) -> dict:
        doc = {"_id": {"$literal": node}, "name": {"$literal": name}, "path": {"$concat": ["$path", SEPARATOR + name]}}
        return {**doc, "parent": "$_id"} if self.stores_parent else doc

    def _child_of(self, doc: Mapping[str, Any], node: Any, name: str) -> dict:
        child = {"_id": node, "name": name, "path": doc["path"] + SEPARATOR + name}
        return {**child, "parent": doc["_id"]} if self.stores_parent else child

    def _path(self, node: Any, what: str = "node_id") -> str:
        return self._require(node, {"path": 1}, what)["path"]

    def parent(self, node: Any) -> Any:
        """The parent's id (None for a root): read the node's path, then find the parent's path."""
        path = self._path(node)
        head = path.rsplit(SEPARATOR, 1)[0]
        if not head:
            return None
        doc = self.collection.find_one({"path": head}, {"_id": 1})
        if doc is None:
            raise TreeError(f"no node has path {head!r}, the parent of {node!r}; fix the data")
        return doc["_id"]

    def children(self, node: Any) -> list[Any]:
        """Sorted ids of the children: read the node's path, then a regex for one more segment."""
        return [n for n, _name in self.menu(node)]

    def menu(self, node: Any) -> list[tuple[Any, str]]:
        """``(id, name)`` of each child, sorted by id: read the node's path, then a regex for one more segment."""
        below = self.subtree_filter(self._path(node), children_only=True)
        return sorted((d["_id"], d["name"]) for d in self.collection.find(below, {"name": 1}, batch_size=BATCH))

    def lookup_menu(self, node: Any) -> list[tuple[Any, str]]:
        """The same menu from one aggregate: the node, then a ``$lookup`` of the key range below its
        path (``let`` bounds, served by the ``path`` index) kept to one more segment (``$size`` of the
        ``$split`` path), replied as one document: one round trip, every key of the subtree examined."""
        within = {"$and": [{"$gte": ["$path", "$$lo"]}, {"$lt": ["$path", "$$hi"]}]}
        one_more = {"$eq": [{"$size": {"$split": ["$path", SEPARATOR]}}, "$$n"]}
        pipeline = [{"$match": {"_id": node}},
                    {"$lookup": {"from": self.collection.name, "as": "below",
                                 "let": {"lo": {"$concat": ["$path", SEPARATOR]},
                                         "hi": {"$concat": ["$path", chr(ord(SEPARATOR) + 1)]},
                                         "n": {"$add": [{"$size": {"$split": ["$path", SEPARATOR]}}, 1]}},
                                 "pipeline": [{"$match": {"$expr": within}}, {"$match": {"$expr": one_more}},
                                              {"$project": {"_id": 1, "name": 1}}]}},
                    {"$project": {"_id": 0, "i": {"$map": {"input": "$below", "in": "$$this._id"}},
                                  "n": {"$map": {"input": "$below", "in": "$$this.name"}}}}]
        return _pairs_in_one(self, node, pipeline)

    def breadcrumbs(self, node: Any) -> list[str]:
        """Names from the root down to the node, its own last: one read of the node's path alone
        (the path holds them; no ``_id`` travels back)."""
        return self._require(node, {"_id": 0, "path": 1})["path"].split(SEPARATOR)[1:]

    def ancestors(self, node: Any) -> list[Any]:
        """Ids from the root down to the parent: read the path, then fetch each prefix (``$in``)."""
        path = self._path(node)
        parts = path.split(SEPARATOR)[1:-1]
        prefixes = [SEPARATOR + SEPARATOR.join(parts[: i + 1]) for i in range(len(parts))]
        if not prefixes:
            return []
        by_path = {d["path"]: d["_id"] for d in self.collection.find({"path": {"$in": prefixes}}, {"path": 1},
                                                                      batch_size=BATCH)}
        if len(by_path) != len(prefixes):
            raise TreeError(f"some ancestors of {node!r} ({path!r}) have no document; fix the data")
        return [by_path[p] for p in prefixes]

    def descendants(self, node: Any) -> list[Any]:
        """Sorted ids of the whole subtree: read the path, then one anchored prefix regex."""
        path = self._path(node)
        return sorted(d["_id"] for d in self.collection.find(self.subtree_filter(path), {"_id": 1}, batch_size=BATCH))

    def compact_lookup_descendants(self, node: Any) -> list[Any]:
        """:meth:`lookup_descendants` whose reply is one array of ids (no field name per node)."""
        return self.lookup_descendants(node, one=True)

    def lookup_descendants(self, node: Any, *, one: bool = False) -> list[Any]:
        """The same ids from one aggregate: the node, then a ``$lookup`` on the same collection for the
        key range of the paths below its own (``let`` bounds, ``$gte``/``$lt`` in ``$expr``: served by the
        ``path`` index since MongoDB 5.0)."""
        within = {"$and": [{"$gte": ["$path", "$$lo"]}, {"$lt": ["$path", "$$hi"]}]}
        pipeline = [{"$match": {"_id": node}},
                    {"$lookup": {"from": self.collection.name, "as": "below",
                                 "let": {"lo": {"$concat": ["$path", SEPARATOR]},
                                         "hi": {"$concat": ["$path", chr(ord(SEPARATOR) + 1)]}},
                                 "pipeline": [{"$match": {"$expr": within}}, {"$project": {"_id": 1}}]}},
                    {"$project": {"_id": 0, "below": {"$map": {"input": "$below", "in": "$$this._id"}} if one else 1}}]
        out = list(self.collection.aggregate(pipeline, batchSize=BATCH))
        if not out:
            raise self._unknown(node)
        return sorted(out[0]["below"]) if one else sorted(d["_id"] for d in out[0]["below"])

    def is_ancestor(self, a: Any, b: Any) -> bool:
        """True if ``a`` is an ancestor of ``b``: read both paths, compare prefixes."""
        docs = {d["_id"]: d["path"] for d in self.collection.find({"_id": {"$in": [a, b]}}, {"path": 1}, batch_size=BATCH)}
        for node, what in ((a, "a"), (b, "b")):
            if node not in docs:
                raise self._unknown(node, what)
        return docs[b].startswith(docs[a] + SEPARATOR)

    def _check_free(self, new: str) -> None:
        if self.collection.find_one({"path": new}, {"_id": 1}) is not None:
            raise self._taken(new)

    def _taken(self, new: str) -> TreeError:
        return TreeError(f"a node with path {new!r} exists already: materialized paths of names need "
                         f"unique sibling names; rename one of them first")

    def repath(self, node: Any, old: str, new: str, name: str | None = None, *, check: bool = False,
               parent: Any = _KEEP) -> None:
        """Rewrite the path of ``node`` (at ``old``) and of every node below it to begin with ``new``
        (a move gives the node's new ``parent``, for a pattern that stores it).
        In a transaction the unique index on ``path`` refuses a taken path and the transaction
        aborts; without one (or with ``check``), a query checks first: a rewrite the index stops
        half-way could not be finished."""
        if check or not self.transaction:
            self._check_free(new)
        intent = {"op": "repath", "from": old, "to": new, "name": name}
        if parent is not _KEEP and self.stores_parent:
            intent["parent"] = parent
        try:
            self.rewrite(node, intent, lambda session: self.finish(node, intent, session))
        except (DuplicateKeyError, BulkWriteError) as e:
            if only_duplicates(e):
                raise self._taken(new) from None  # nothing written: the transaction aborted
            raise

    @property
    def server_side(self) -> bool:
        """Can the engine rewrite the paths itself (``$substrCP`` in an update pipeline)? From the
        connect probe (``Capabilities.update_pipeline_strings``); an unknown client is assumed to."""
        info = info_of(self.collection)
        return info is None or info.caps.update_pipeline_strings

    def writes(self, node: Any, intent: Mapping[str, Any]) -> list[tuple[str, dict, Any]]:
        """One pipeline update: every path still at or below ``old`` becomes ``new`` plus what followed
        ``old`` (the node's name too, on a rename). It can run again: a path rewritten no longer matches."""
        old, new, name = intent["from"], intent["to"], intent.get("name")
        rest = {"$substrCP": ["$path", len(old), {"$subtract": [{"$strLenCP": "$path"}, len(old)]}]}
        change: dict[str, Any] = {"path": {"$concat": [new, rest]}}
        if name:
            change["name"] = {"$cond": [{"$eq": ["$_id", {"$literal": node}]}, name, "$name"]}
        if "parent" in intent:  # a move: the node's own parent changes, no other
            change["parent"] = {"$cond": [{"$eq": ["$_id", {"$literal": node}]}, {"$literal": intent["parent"]}, "$parent"]}
        return [("many", self.subtree_filter(old, itself=True), [{"$set": change}])]

    def finish(self, node: Any, intent: Mapping[str, Any], session: Any = None) -> int:
        """The one pipeline update of :meth:`writes`, on the server: no document comes back to the client."""
        if not self.server_side:  # the engine lacks $substrCP: read the subtree, one bulk write (labelled)
            return self._repath_client_side(node, intent, self.subtree_filter(intent["from"], itself=True), session)
        return super().finish(node, intent, session)

    finish_in_steps = finish  # one write: nothing to split

    def _repath_client_side(self, node: Any, intent: Mapping[str, Any], below: dict, session: Any) -> int:
        """The fallback for an engine without ``$substrCP`` in update pipelines: read the subtree's
        paths into the client, then one bulk write of one ``UpdateOne`` per node (a document per
        node travels both ways: not what a real MongoDB needs)."""
        old, new, name = intent["from"], intent["to"], intent.get("name")
        subtree = list(self.collection.find(below, {"path": 1}, session=session, batch_size=BATCH))
        if subtree:
            self.collection.bulk_write([
                UpdateOne({"_id": d["_id"]},
                          {"$set": {"path": new + d["path"][len(old):],
                                    **({"parent": intent["parent"]} if "parent" in intent and d["_id"] == node else {}),
                                    **({"name": name} if name and d["_id"] == node else {})}})
                for d in subtree], ordered=True, session=session)
        return len(subtree)

    def move(self, node: Any, new_parent: Any) -> None:
        """Rewrite the path of the node and of every descendant: read the node and the new parent
        (one query), then one pipeline update on the server (:meth:`repath`)."""
        self._move(node, new_parent, False)

    def move_checking_first(self, node: Any, new_parent: Any) -> None:
        """The same move with a query for the new path first (the counter-example: a round trip more)."""
        self._move(node, new_parent, True)

    def _move(self, node: Any, new_parent: Any, check: bool) -> None:
        wanted = [node] if new_parent is None else [node, new_parent]
        docs = {d["_id"]: d for d in self.collection.find({"_id": {"$in": wanted}}, {"path": 1, "name": 1},
                                                          batch_size=BATCH)}
        if node not in docs:
            raise self._unknown(node)
        if new_parent is not None and new_parent not in docs:
            raise self._unknown(new_parent, "new_parent_id")
        old = docs[node]["path"]
        head = "" if new_parent is None else docs[new_parent]["path"]
        if new_parent == node or head.startswith(old + SEPARATOR):
            self._check_new_parent(node, new_parent, [node])
        new = head + SEPARATOR + docs[node]["name"]
        if new != old:
            self.repath(node, old, new, check=check, parent=new_parent)

    def rename(self, node: Any, new_name: str) -> None:
        """Rename the node: its path and every path below it change (read the node, then one pipeline
        update on the server, :meth:`repath`)."""
        self._rename(node, new_name, False)

    def rename_checking_first(self, node: Any, new_name: str) -> None:
        """The same rename with a query for the new path first (the counter-example: a round trip more)."""
        self._rename(node, new_name, True)

    def _rename(self, node: Any, new_name: str, check: bool) -> None:
        _check_name(new_name)
        old = self._path(node)
        new = old.rsplit(SEPARATOR, 1)[0] + SEPARATOR + new_name
        if new != old:
            self.repath(node, old, new, new_name, check=check)


class PathInLink(MaterializedPaths):
    """Materialized paths read from the link: a category's pages are addressed by its id and path
    (``/c/133/Electronics/Phones``), so a category page and a menu start from what the link carries,
    with no read of the node first. The documents of :class:`MaterializedPaths` plus each node's
    ``parent`` id, indexed beside the unique ``path``: a category page is the key range of the
    paths below the link's, a menu an equality on ``parent`` (only the children's keys; the price: a
    move writes one more key, the moved node's parent). A product holds its category's id, so
    breadcrumbs read the path once, as there. Notebook 03."""

    pattern = "materialized paths, the path in the link"
    indexes = (("path", {"unique": True}), ("parent", {}))
    stores_parent = True
    forms = {**MaterializedPaths.forms,
             "descendants": {"one document ($group)": "compact_descendants", "a document a node": "descendants"},
             "menu": {"the parent index, one document": "compact_menu", "the parent index": "menu",
                      "a regex for one more segment": "menu_by_regex"}}

    def documents(self, ordered: list[Row]) -> list[dict]:
        parents = {n: p for n, p, _name in ordered}
        return [{**d, "parent": parents[d["_id"]]} for d in super().documents(ordered)]

    def __init__(self, collection: Any, *, transaction: bool | None = None) -> None:
        super().__init__(collection, transaction=transaction)
        #: the path each category's links carry (its pages' addresses), by id: a stand-in for the
        #: site's links, rewritten with every move or rename above them
        self.links = {d["_id"]: d["path"] for d in collection.find({}, {"path": 1}, batch_size=BATCH)}

    def load(self, rows: Any) -> int:
        n = super().load(rows)
        self.links = {d["_id"]: d["path"] for d in self.collection.find({}, {"path": 1}, batch_size=BATCH)}
        return n

    def add(self, node: Any, parent: Any, name: str) -> None:
        """As :meth:`MaterializedPaths.add`; the new category's links carry its path."""
        super().add(node, parent, name)
        self.links[node] = self.link(parent) + SEPARATOR + name

    def add_reading_parent(self, node: Any, parent: Any, name: str) -> None:
        super().add_reading_parent(node, parent, name)
        self.links[node] = self.link(parent) + SEPARATOR + name

    def _unadd(self, node: Any, parent: Any) -> None:
        super()._unadd(node, parent)
        self.links.pop(node, None)

    def link(self, node: Any) -> str:
        """The path a link to ``node`` carries (no round trip: the page was asked for by it)."""
        if node not in self.links:
            raise self._unknown(node)
        return self.links[node]

    def descendants(self, node: Any) -> list[Any]:
        """Sorted ids of the whole subtree: one anchored prefix regex on the path the link carries."""
        below = self.subtree_filter(self.link(node))
        return sorted(d["_id"] for d in self.collection.find(below, {"_id": 1}, batch_size=BATCH))

    def menu(self, node: Any) -> list[tuple[Any, str]]:
        """``(id, name)`` of each child, sorted by id: one query on the ``parent`` index, for the id the
        link carries (the index holds exactly the children's keys there)."""
        self.link(node)  # a node the site links to
        return sorted((d["_id"], d["name"]) for d in self.collection.find({"parent": node}, {"name": 1}, batch_size=BATCH))

    def compact_descendants(self, node: Any) -> list[Any]:
        """:meth:`descendants` from one aggregate whose reply is one document (an array of ids)."""
        return _in_one(self, None, self.subtree_filter(self.link(node)), names=False)  # the link checked the node

    def compact_menu(self, node: Any) -> list[tuple[Any, str]]:
        """:meth:`menu` from one aggregate whose reply is one document (two arrays)."""
        self.link(node)
        return _in_one(self, node, {"parent": node}, names=True)

    def menu_by_regex(self, node: Any) -> list[tuple[Any, str]]:
        """The same children from a regex for one more segment of the link's path (the counter-example:
        the ``path`` index scans the keys of the whole subtree for it; no ``parent`` needed)."""
        below = self.subtree_filter(self.link(node), children_only=True)
        return sorted((d["_id"], d["name"]) for d in self.collection.find(below, {"name": 1}, batch_size=BATCH))

    def repath(self, node: Any, old: str, new: str, name: str | None = None, *, check: bool = False,
               parent: Any = _KEEP) -> None:
        """As :meth:`MaterializedPaths.repath`; then every link at or below ``old`` carries ``new``."""
        super().repath(node, old, new, name, check=check, parent=parent)
        self.links = {n: new + p[len(old):] if p == old or p.startswith(old + SEPARATOR) else p
                      for n, p in self.links.items()}


#: the four patterns of MongoDB's manual and the ancestors' variant with names, in the lesson's order
PATTERNS = (ParentRefs, ChildRefs, AncestorsArray, AncestorsWithNames, MaterializedPaths)
