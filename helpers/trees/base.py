"""What every tree pattern of notebook 03 shares: checked input, loading, crash-safe rewrites (notebook 03).

The base class of :mod:`helpers.trees`' four patterns, and its errors. It checks every node id,
name and row before anything is written, loads an empty collection, and runs a move or rename that
writes several documents either in a transaction or marked (``pending``) so that ``interrupted()``
lists what a dead process left half-done and ``repair()`` finishes it; :func:`interrupt` plays that
dead process. The lesson imports all of it from :mod:`helpers.trees`.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from bson.regex import Regex
from pymongo import UpdateMany, UpdateOne

from ..backends import info_of
from ..safety import track_collection

__all__ = ["SEPARATOR", "PENDING", "BATCH", "TreeError", "UnknownNodeError", "CycleError", "interrupt"]

#: the first batch every read of the patterns asks for: the whole answer in one reply (the driver's
#: default first batch of 101 documents would add a ``getMore`` round trip nobody chose)
BATCH = 10_000
#: the path separator of :class:`MaterializedPaths`; no node name may contain it, in any pattern
SEPARATOR = "/"
#: the field that marks a node whose multi-document move or rename has started and not finished
PENDING = "pending"


class TreeError(ValueError):
    """Bad input for a tree operation; nothing was written. The message says what to do."""


class UnknownNodeError(TreeError, LookupError):
    """The node id is not in the tree's collection."""


class CycleError(TreeError):
    """A move would put a node under itself or under one of its descendants (or the data has a cycle)."""


Row = tuple[Any, Any, str]  # (node_id, parent_id or None, name)
Rows = Iterable[tuple[Hashable, Hashable | None, str]]


def _check_name(name: Any, what: str = "new_name") -> str:
    if not isinstance(name, str) or not name:
        raise TreeError(f"{what} must be a non-empty string, not {name!r}")
    if SEPARATOR in name:
        raise TreeError(f"{what}={name!r} contains the path separator {SEPARATOR!r}, which would break "
                        f"materialized paths; use another character, e.g. {name.replace(SEPARATOR, '-')!r}")
    return name


def _is_operator(value: Any) -> bool:
    """A query operator or a regular expression: in a filter either matches other nodes."""
    if isinstance(value, (re.Pattern, Regex)):
        return True
    return isinstance(value, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in value)


def _check_id(value: Any, what: str = "node_id") -> Any:
    """Refuse a query operator (``{"$gt": 0}``) where a node id goes: in a filter it would match other
    nodes, and a write would land on whichever matched first."""
    if _is_operator(value):
        raise TreeError(f"{what}={value!r} is a query operator or a regular expression, not a node id: pass the _id value itself "
                        f"(e.g. 3 or 'books'); nothing was read or written")
    return value


def _check_ids(**ids: Any) -> None:
    for what, value in ids.items():
        _check_id(value, what)


def _checking_ids(fn: Callable, what: tuple[str, ...]) -> Callable:
    """``fn`` with its id arguments checked first; its source (``inspect.getsource``) stays ``fn``'s."""
    import functools

    @functools.wraps(fn)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        for name, value in zip(what, args):
            _check_id(value, name)
        return fn(self, *args, **kwargs)

    checked._checks_ids = True  # type: ignore[attr-defined]
    return checked


def _check_rows(rows: Rows) -> list[Row]:
    """Validate ``(node_id, parent_id, name)`` rows as a forest; return them parents first."""
    rows = list(rows)
    by_id: dict[Any, tuple[Any, Any, str]] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, (tuple, list)) or len(row) != 3:
            raise TreeError(f"rows[{i}] = {row!r} is not a (node_id, parent_id, name) tuple")
        node, parent, name = row
        if node is None:
            raise TreeError(f"rows[{i}]: node_id is None; every node needs an id")
        _check_id(node, f"rows[{i}] node_id")
        _check_id(parent, f"rows[{i}] parent_id")
        _check_name(name, f"rows[{i}] name")
        if node in by_id:
            raise TreeError(f"rows[{i}]: node_id {node!r} appears twice; node ids must be unique")
        by_id[node] = (node, parent, name)
    kids: dict[Any, list[Any]] = {}
    roots = []
    for i, (node, parent, _name) in enumerate(rows):
        if parent is None:
            roots.append(node)
        elif parent not in by_id:
            raise TreeError(f"rows[{i}]: parent_id {parent!r} of node {node!r} is not a node id in rows; "
                            f"add that node or use None for a root")
        else:
            kids.setdefault(parent, []).append(node)
    ordered: list[tuple[Any, Any, str]] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        ordered.append(by_id[node])
        stack.extend(reversed(kids.get(node, [])))
    if len(ordered) != len(rows):
        stuck = sorted((str(n) for n in by_id if n not in {r[0] for r in ordered}))[:5]
        raise TreeError(f"rows contain a cycle (no root above nodes {', '.join(stuck)}); every chain of "
                        f"parent_id must end at a root (parent_id None)")
    return ordered


# replies in one document or string (notebook 03's compact forms)

def _in_one(tree: Any, node: Any, match: Mapping[str, Any], names: bool) -> list[Any]:
    """The ids (with ``names``, ``(id, name)``) of the documents ``match`` finds, from one aggregate
    whose reply is one document: ``$group`` pushes them into arrays, so no field name travels per node."""
    group = {"_id": None, "i": {"$push": "$_id"}, **({"n": {"$push": "$name"}} if names else {})}
    out = list(tree.collection.aggregate([{"$match": dict(match)}, {"$group": group}, {"$project": {"_id": 0}}],
                                         batchSize=BATCH))
    if not out or not out[0]["i"]:  # (one engine groups an empty input into one empty document)
        if node is not None:  # none found: a leaf, or an unknown id?
            tree._require(node)
        return []
    return sorted(zip(out[0]["i"], out[0]["n"])) if names else sorted(out[0]["i"])


def _pairs_in_one(tree: Any, node: Any, pipeline: list[dict]) -> list[tuple[Any, str]]:
    """The sorted ``(id, name)`` pairs of a menu whose one reply document holds them as two arrays,
    ``i`` and ``n`` (``pipeline`` starts with ``{"$match": {"_id": node}}``: no reply, an unknown node)."""
    out = list(tree.collection.aggregate(pipeline, batchSize=BATCH))
    if not out:
        raise tree._unknown(node)
    return sorted(zip(out[0]["i"], out[0]["n"]))


def _joined(names: Any) -> dict:
    """``"/root/.../node"``: an expression joining the array ``names`` and the document's ``name``."""
    return {"$concat": [{"$reduce": {"input": names, "initialValue": "", "in": {"$concat": ["$$value", SEPARATOR, "$$this"]}}},
                        SEPARATOR, "$name"]}


def _split(tree: Any, node: Any, out: list[dict]) -> list[str]:
    if not out:
        raise tree._unknown(node)
    if out[0].get("c") is None:  # no node (one engine groups nothing into a document), or an ancestor without one
        tree._require(node)
        raise TreeError(f"an ancestor of {node!r} has no document; fix the data")
    return out[0]["c"].split(SEPARATOR)[1:]



class _Pattern:
    """What every pattern shares: the collection, input checks, and the default ``is_ancestor``."""

    pattern = "?"
    indexes: tuple[tuple[str, dict], ...] = ()

    #: the public methods whose positional arguments are node ids, and what each argument is called
    _ID_ARGS = {"parent": ("node_id",), "children": ("node_id",), "ancestors": ("node_id",),
                "descendants": ("node_id",), "is_ancestor": ("a", "b"), "move": ("node_id", "new_parent_id"),
                "move_in_steps": ("node_id", "new_parent_id"), "move_checking_first": ("node_id", "new_parent_id"),
                "rename": ("node_id",), "rename_in_steps": ("node_id",), "move_by_ids": ("node_id", "new_parent_id"),
                "rename_by_ids": ("node_id",), "rename_by_ids_without_transaction": ("node_id",), "rename_checking_first": ("node_id",), "graph_pipeline": ("node_id",), "graph_walk": ("node_id",),
                "graph_ancestors": ("node_id",), "graph_descendants": ("node_id",), "subtree_sizes": (),
                "breadcrumbs": ("node_id",), "graph_breadcrumbs": ("node_id",),
                "lookup_breadcrumbs": ("node_id",), "menu": ("node_id",), "lookup_menu": ("node_id",)}
    #: every way this pattern answers an operation, ``{method: {form label: method name}}``: the
    #: forms a bill measures (:func:`helpers.trees.workload_costs`); a method not named has one form
    forms: dict[str, dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every public method that takes node ids refuses a query operator first (:func:`_check_id`)."""
        super().__init_subclass__(**kwargs)
        for name, what in _Pattern._ID_ARGS.items():
            fn = getattr(cls, name, None)
            if fn is None or not callable(fn) or getattr(fn, "_checks_ids", False) or not what:
                continue
            setattr(cls, name, _checking_ids(fn, what))

    def __init__(self, collection: Any, *, transaction: bool | None = None) -> None:
        """``transaction``: run a multi-document move or rename in a transaction (None: where the
        engine has them, as its connect probe says; False: mark, write, unmark, see :meth:`repair`)."""
        if not hasattr(collection, "find_one") or not hasattr(collection, "database"):
            raise TypeError(f"{type(self).__name__}(collection) needs a collection such as db['tree'], "
                            f"not {type(collection).__name__}")
        self.collection = collection
        if transaction is None:
            info = info_of(collection)
            transaction = bool(info is not None and info.caps.transactions)
        self.transaction = bool(transaction)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.collection.name!r})"

    # -- loading --------------------------------------------------------------------------
    def load(self, rows: Rows) -> int:
        """Insert the tree (rows ``(node_id, parent_id, name)``) into the empty collection, with its indexes.

        Returns the number of documents inserted.
        """
        ordered = _check_rows(rows)
        self._check_load(ordered)
        coll = self.collection
        if coll.find_one({}, {"_id": 1}) is not None:
            raise TreeError(f"collection {coll.name!r} is not empty; load into an empty collection "
                            f"(helpers.reset_workbook(db) drops the workbook's collections)")
        track_collection(coll.database, coll.name)
        for key, options in self.indexes:
            coll.create_index(key, **options)
        docs = self.documents(ordered)
        if docs:
            coll.insert_many(docs, ordered=True)
        return len(docs)

    def _check_load(self, ordered: list[Row]) -> None:
        pass

    def documents(self, ordered: list[Row]) -> list[dict]:
        """The documents this pattern stores for ``ordered`` rows (parents before children, as ``load`` orders them)."""
        raise NotImplementedError

    # -- shared helpers -------------------------------------------------------------------
    def _unknown(self, node: Any, what: str = "node_id") -> UnknownNodeError:
        return UnknownNodeError(f"{what}={node!r} is not in collection {self.collection.name!r}; "
                                f"pick an existing _id (e.g. {self.collection.name}.find_one()['_id'])")

    def _require(self, node: Any, projection: Mapping[str, int] | None = None, what: str = "node_id") -> dict:
        doc = self.collection.find_one({"_id": node}, dict(projection or {"_id": 1}))
        if doc is None:
            raise self._unknown(node, what)
        return doc

    def _check_new_parent(self, node: Any, new_parent: Any, chain: Sequence[Any]) -> None:
        """``chain``: the ancestors of ``new_parent``. Refuse a move under the node's own subtree."""
        if new_parent == node:
            raise CycleError(f"cannot move node {node!r} under itself; pick a new_parent_id outside its subtree")
        if node in chain:
            raise CycleError(f"cannot move node {node!r} under {new_parent!r}, one of its own descendants: "
                             f"the subtree would be cut off in a cycle; pick a new_parent_id outside the subtree")

    def add(self, node: Any, parent: Any, name: str) -> None:
        """Add a category ``node`` named ``name`` below ``parent``, its stored way up derived from the
        parent's document on the server: one aggregate that ends in ``$merge`` (it inserts; a taken
        ``_id`` fails). Patterns that store only a step override it."""
        _check_name(name, "name")
        self.collection.aggregate([{"$match": {"_id": parent}}, {"$project": self._child_expr(node, name)},
                                   {"$merge": {"into": self.collection.name, "on": "_id",
                                               "whenMatched": "fail", "whenNotMatched": "insert"}}])

    def add_reading_parent(self, node: Any, parent: Any, name: str) -> None:
        """The same category in two round trips: read the parent, then insert the child built from it."""
        _check_name(name, "name")
        way_up = {"name": 1, "ancestors": 1, "path": 1, "depth": 1}  # what the patterns derive a child from
        self.collection.insert_one(self._child_of(self._require(parent, way_up, "parent_id"), node, name))

    def _unadd(self, node: Any, parent: Any) -> None:
        """Undo :meth:`add` (the measurement's, uncounted)."""
        self.collection.delete_one({"_id": node})

    def forms_of(self, method: str) -> dict[str, Callable[..., Any]]:
        """Every form of ``method`` this pattern has, ``{form label: bound method}`` (see ``forms``)."""
        named = self.forms.get(method, {"as measured": method})
        return {label: getattr(self, name) for label, name in named.items()}

    def ancestors(self, node: Any) -> list[Any]:  # pragma: no cover - every pattern overrides
        raise NotImplementedError

    def _walk_up(self, node: Any) -> list[Any]:
        """The ancestors' ids, root first, as a move's check and ``is_ancestor`` read them."""
        return self.ancestors(node)

    def _ancestors_of(self, node: Any, what: str) -> list[Any]:
        try:
            return self._walk_up(node)
        except UnknownNodeError as e:
            if node is None or not str(e).startswith("node_id="):
                raise
            raise self._unknown(node, what) from None

    def is_ancestor(self, a: Any, b: Any) -> bool:
        """True if ``a`` is an ancestor of ``b`` (a node is not its own ancestor): walk up from ``b``."""
        if a in self._ancestors_of(b, "b"):
            return True
        self._require(a, what="a")
        return False

    def rename(self, node: Any, new_name: str) -> None:
        """Set the node's name: one write (nothing else holds the name)."""
        _check_name(new_name)
        if self.collection.update_one({"_id": node}, {"$set": {"name": new_name}}).matched_count == 0:
            raise self._unknown(node)

    # -- writes to several documents: all or nothing, or marked and repairable -------------------
    def rewrite(self, node: Any, intent: dict, writes: Callable[[Any], None]) -> None:
        """Run ``writes(session)``, several writes that change one move or rename, so that a process
        dying half-way cannot leave a tree that nobody can tell is broken.

        With a transaction: all of them or none (a dead client's transaction is aborted by the
        server: at once by ``killSessions``, else after ``transactionLifetimeLimitSeconds``).
        Without: mark the node with ``intent`` first, then the writes (each can be run again), then
        remove the mark; :meth:`repair` finishes whatever is still marked."""
        if self.transaction:
            with self.collection.database.client.start_session() as session:
                session.with_transaction(writes)
            return
        self.collection.update_one({"_id": node}, {"$set": {PENDING: intent}})
        writes(None)
        self.collection.update_one({"_id": node}, {"$unset": {PENDING: ""}})

    def interrupted(self) -> list[dict]:
        """The moves and renames a process started and did not finish: ``{"_id": node, "pending":
        what it was doing}`` for each marked node (only without transactions; see :meth:`repair`)."""
        return list(self.collection.find({PENDING: {"$exists": True}}, {PENDING: 1}, batch_size=BATCH).sort("_id", 1))

    def repair(self) -> int:
        """Finish every interrupted move or rename (:meth:`interrupted`) and remove its mark; returns
        how many. Each write of a rewrite can run twice without harm, so finishing is running it again."""
        done = 0
        for doc in self.interrupted():
            self.finish(doc["_id"], doc[PENDING], None)
            self.collection.update_one({"_id": doc["_id"]}, {"$unset": {PENDING: ""}})
            done += 1
        return done

    def writes(self, node: Any, intent: Mapping[str, Any]) -> list[tuple[str, dict, Any]]:
        """The writes of a move or rename described by ``intent``, ``("one" | "many", filter, update)``
        each, in order, each safe to run twice."""
        raise TreeError(f"{type(self).__name__} has no multi-document rewrite to finish; unset "
                        f"{PENDING!r} on node {node!r}")

    def finish(self, node: Any, intent: Mapping[str, Any], session: Any = None) -> int:
        """Send the writes of ``intent`` as one ordered ``bulk_write``: one command, one round trip.
        Returns the documents they matched."""
        ops = [(UpdateOne if kind == "one" else UpdateMany)(q, u) for kind, q, u in self.writes(node, intent)]
        return self.collection.bulk_write(ops, ordered=True, session=session).matched_count

    def finish_in_steps(self, node: Any, intent: Mapping[str, Any], session: Any = None) -> int:
        """The same writes, one command each: a round trip each (the counter-example of :meth:`finish`)."""
        return sum(getattr(self.collection, f"update_{kind}")(q, u, session=session).matched_count
                   for kind, q, u in self.writes(node, intent))


class _Crashed(Exception):
    """Raised by :func:`interrupt`'s stand-in collection where the process would have died."""


class _Dying:
    """A collection that performs ``after`` writes, then fails every other one (a process that dies)."""

    _WRITES = ("update_one", "update_many", "bulk_write", "insert_one", "insert_many", "replace_one",
               "delete_one", "delete_many")

    def __init__(self, collection: Any, after: int) -> None:
        self._collection, self._left = collection, after

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._collection, name)
        if name not in self._WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            if self._left <= 0:
                raise _Crashed(name)
            self._left -= 1
            return attr(*args, **kwargs)

        return write


def interrupt(tree: Any, method: str, *args: Any, after: int) -> bool:
    """Run ``tree.<method>(*args)`` as a process that dies after its first ``after`` writes (the
    next write never reaches the server): what such a crash leaves is then in the collection.
    Returns True if it stopped there, False if the operation finished in ``after`` writes or fewer.
    A transaction's writes are aborted when it dies (``with_transaction`` aborts on any error).
    Notebook 03."""
    import copy

    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise TreeError(f"after must be a whole number of writes >= 0, not {after!r}")
    dying = copy.copy(tree)
    dying.collection = _Dying(tree.collection, after)
    try:
        getattr(dying, method)(*args)
    except _Crashed:
        return True
    return False
