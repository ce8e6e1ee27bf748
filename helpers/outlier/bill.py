"""The server's work in notebook 02's daily bill: keys and documents each operation makes it examine.

A page view or a comment is priced in round trips, documents and bytes (``helpers.count_commands``,
``helpers.benchmark``) and in index keys written (``count_commands(index_keys=...)``); this part adds
the keys and documents the server examines, read from the explain of each ``find`` an operation
amounts to. A page that joins with ``$lookup`` is explained as the two finds it runs (the post by
``_id``, then the joined documents by ``post_id`` in order): SecantusDB's aggregate explain gives
keys and documents examined for the ``$match`` only, its ``$lookup`` stage none (a MongoDB 5.0+
``executionStats`` explain reports them for the ``$lookup`` too); a write as the find of the document it changes, by ``_id``
(SecantusDB plans an ``_id`` equality with further conditions as a collection scan, where a real
MongoDB uses the ``_id`` index: docs/ENGINES.md). Only where the engine explains faithfully
(``caps.explain``); elsewhere the bill leaves the columns out, never zero.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..backends import backend_info
from ..plans import explain_find
from ..workload import cost_of

__all__ = ["examined", "with_work"]


def examined(*queries: tuple[Any, dict] | tuple[Any, dict, Sequence[tuple[str, int]]]) -> dict[str, int]:
    """Keys and documents the server examines for ``queries``, summed from the explain of each:
    ``(collection, filter)`` or ``(collection, filter, sort)``. No queries (an insert): zero.
    Only where ``caps.explain`` holds (an explain without counters is an error). Notebook 02."""
    keys = docs = 0
    for collection, filter, *sort in queries:
        _stages, k, d = explain_find(collection, filter, sort[0] if sort else None)
        keys, docs = keys + k, docs + d
    return {"keys examined": keys, "docs examined": docs}


def with_work(cost: Any, *queries: Any) -> Any:
    """``cost`` (a ``Measurement``, a ``CommandCounter`` or a mapping) with the server's work of
    ``queries`` (:func:`examined`) added, where the engine explains faithfully (``caps.explain``);
    elsewhere ``cost`` itself, so the bill leaves the columns out. Notebook 02, section 2.6."""
    if not backend_info().caps.explain:
        return cost
    return {**cost_of(cost), **examined(*queries)}
