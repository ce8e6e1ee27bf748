"""Evenly spaced sampling: the one rule every scaled dataset and feed picks its parent keys by."""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["evenly_spaced"]


def evenly_spaced(keys: Iterable[Any], n: int | None) -> set[Any] | None:
    """``n`` of the distinct ``keys``, evenly spaced over their sorted order (``None``: all of them,
    unpicked). The same keys and ``n`` always give the same sample, spread over the whole range:
    a scale of 100 aircraft is every ``len/100``-th aircraft, not the first 100."""
    if n is None:
        return None
    ordered = sorted(set(keys))
    if n >= len(ordered):
        return set(ordered)
    return {ordered[i * len(ordered) // n] for i in range(n)}
