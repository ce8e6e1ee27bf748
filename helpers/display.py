"""Showing the code that runs: a notebook displays a helper's real source, never a copy.

Introduced in notebook 00.
"""
from __future__ import annotations

import inspect
from typing import Any

__all__ = ["show_source"]


def show_source(*objects: Any) -> Any:
    """Render the source of functions, classes or modules as highlighted Python code."""
    from IPython.display import Code

    return Code("\n\n".join(inspect.getsource(o) for o in objects), language="python")
