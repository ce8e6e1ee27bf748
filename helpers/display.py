"""Showing the code that runs: a notebook displays a helper's real source, never a copy.

Introduced in notebook 00.
"""
from __future__ import annotations

import inspect
from typing import Any

__all__ = ["show_source", "apply_style"]


def show_source(*objects: Any) -> Any:
    """Render the source of functions, classes or modules as highlighted Python code."""
    from IPython.display import Code

    return Code("\n\n".join(inspect.getsource(o) for o in objects), language="python")


def apply_style() -> None:
    """Readable plots: larger type, and larger still for a projector (``WORKBOOK_DEMO=1``)."""

    import matplotlib as mpl

    from .settings import demo as _demo

    demo = _demo()
    base = 16 if demo else 11
    mpl.rcParams.update({
        "font.size": base, "axes.titlesize": base + 2, "axes.labelsize": base,
        "xtick.labelsize": base - 1, "ytick.labelsize": base - 1, "legend.fontsize": base - 1,
        "figure.dpi": 110 if demo else 100, "lines.linewidth": 2.5 if demo else 1.5,
        "axes.grid": True, "grid.alpha": 0.3,
    })
