"""Document sizes: exact BSON bytes, percentiles, plots against the 16 MiB limit.

Introduced in notebook 00. ``len(bson.encode(doc))`` is exactly what the server's ``$bsonSize``
returns, on any engine, so sizes are computed client-side everywhere and agree across backends.

Units, everywhere in the workbook: sizes are bytes, or binary multiples printed by
:func:`human_bytes` (1 KiB = 1,024 bytes, 1 MiB = 1,048,576 bytes). MongoDB's document limit is
16 MiB = 16,777,216 bytes (16 * 1024 * 1024, the ``maxBsonObjectSize`` a server reports; the manual's
"16 megabytes" means this number).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

import bson
from pymongo.errors import DocumentTooLarge

from . import backends
from .plans import find_in_id_order

__all__ = ["MAX_BSON_SIZE", "bson_sizes", "size_summary", "plot_sizes", "check_document_size",
           "server_bson_sizes", "human_bytes"]

MAX_BSON_SIZE = 16 * 1024 * 1024  # 16 MiB = 16,777,216 bytes: MongoDB's document limit
LIMIT_LABEL = "16 MiB"


def bson_sizes(documents: Any) -> Iterator[int]:
    """Yield the exact BSON size of each document, in order.

    ``documents`` is any iterable of documents, or a collection (read in ``_id`` order).
    """
    if hasattr(documents, "find") and hasattr(documents, "insert_one"):

        documents = find_in_id_order(documents)  # along the _id index
    for doc in documents:
        yield len(bson.encode(doc))


def human_bytes(n: float) -> str:
    """Binary units: 1536 -> '1.5 KiB', 16,777,216 -> '16.0 MiB' (1 KiB = 1,024 bytes)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def size_summary(sizes: Iterable[int]) -> dict[str, Any]:
    """Count, total, min, median, p90, p99, max of BSON sizes, and the share of the 16 MiB limit."""
    s = sorted(sizes)
    if not s:
        raise ValueError("no sizes: the collection or list is empty")

    def pct(p: float) -> int:  # nearest-rank percentile: always one of the real sizes
        k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
        return s[k]

    return {"documents": len(s), "total bytes": sum(s), "min": s[0], "median": pct(50),
            "p90": pct(90), "p99": pct(99), "max": s[-1],
            f"max % of {LIMIT_LABEL}": round(100 * s[-1] / MAX_BSON_SIZE, 3)}


def check_document_size(doc: Any, *, what: str = "document", server_enforces: bool | None = None) -> int:
    """Client-side 16 MiB check, the stand-in where an engine does not enforce the limit itself.

    Returns the size, or raises pymongo's ``DocumentTooLarge``, saying it is a client-side check and
    whether this engine enforces the limit too: ``server_enforces`` (default: the probed
    ``helpers.backend_info().caps.max_document_size`` of the open connection, if any).
    """
    size = len(bson.encode(doc))
    if size > MAX_BSON_SIZE:
        if server_enforces is None:
            server_enforces = _server_enforces()
        if server_enforces is None:
            who = "a MongoDB server rejects such a write itself"
        elif server_enforces:
            who = "this engine enforces the limit too, and would reject the write itself"
        else:
            who = f"this engine does not enforce {LIMIT_LABEL}; a real MongoDB server would reject the write"
        raise DocumentTooLarge(
            f"client-side check ({who}): the {what} is {size:,} bytes of BSON, over the "
            f"{MAX_BSON_SIZE:,}-byte ({LIMIT_LABEL}) limit")
    return size


def _server_enforces() -> bool | None:
    """The probed ``max_document_size`` of the process-wide connection, or None when not connected."""

    conn = backends.current_connection()
    return None if conn is None or conn.info is None else conn.info.caps.max_document_size


def server_bson_sizes(collection: Any) -> list[int] | None:
    """Sizes computed by the server with ``$bsonSize`` (``_id`` order), or None if unsupported."""
    from pymongo.errors import OperationFailure

    try:
        return [d["s"] for d in collection.aggregate(
            [{"$sort": {"_id": 1}}, {"$project": {"_id": 0, "s": {"$bsonSize": "$$ROOT"}}}])]
    except (OperationFailure, NotImplementedError, KeyError):
        return None


def plot_sizes(sizes: Sequence[int] | Iterable[int], *, against: Sequence[float] | None = None,
               xlabel: str | None = None, label: str | None = None, title: str | None = None,
               ax: Any = None, limit: bool = True) -> Any:
    """Plot BSON sizes on a log scale with the 16 MiB limit drawn.

    Without ``against``: a histogram of the size distribution (log-spaced bins). With it: size
    against that quantity (e.g. embedded review count), to see where growth meets the limit.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    sizes = list(sizes)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 4.5))
    if against is None:
        lo = max(1, min(sizes))
        hi = max(max(sizes), MAX_BSON_SIZE if limit else 1) * 1.5
        bins = np.logspace(np.log10(lo), np.log10(hi), 50)
        ax.hist(sizes, bins=bins, label=label, alpha=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("document size (bytes of BSON, log scale)")
        ax.set_ylabel("documents")
        if limit:
            ax.axvline(MAX_BSON_SIZE, color="crimson", linestyle="--", label=f"{LIMIT_LABEL} limit")
    else:
        ax.plot(list(against), sizes, marker=".", label=label)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel or "")
        ax.set_ylabel("document size (bytes of BSON, log scale)")
        if limit:
            ax.axhline(MAX_BSON_SIZE, color="crimson", linestyle="--", label=f"{LIMIT_LABEL} limit")
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    return ax
