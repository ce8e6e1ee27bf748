"""Showing the code that runs: a notebook displays a helper's real source, never a copy.

Introduced in notebook 00. Also how results look: plots sized for a laptop or a projector, and
tables stored in one plain form (``apply_style``, run when ``helpers`` is imported).
"""
from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["show_source", "SourceListing", "apply_style", "plain_tables"]


class SourceListing:
    """A helper's source as one Markdown code block: JupyterLab, GitHub and VS Code render it as
    highlighted Python, and the notebook stores it once, as plain text with no stylesheet.

    The plain-text form names what is shown and nothing more, so a notebook's stored listing never
    holds a second copy of the code (the notebook checker ignores the listing itself:
    ``notebooks/sanitize.cfg``)."""

    def __init__(self, source: str, names: list[str]):
        self.source = source
        self.names = names

    def _repr_markdown_(self) -> str:
        runs = re.findall(r"`{3,}", self.source)
        fence = "`" * max(3, max((len(r) for r in runs), default=0) + 1)
        return f"{fence}python\n{self.source.rstrip()}\n{fence}"

    def __repr__(self) -> str:
        return f"<source of {', '.join(self.names)}>"

    def __str__(self) -> str:
        return self.source


def _name(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
    qual = getattr(obj, "__qualname__", None)
    return f"{module}.{qual}" if qual and module else (qual or module or type(obj).__name__)


def show_source(*objects: Any) -> SourceListing:
    """Show the source of functions, classes or modules as one Python code block (notebook 00)."""
    return SourceListing("\n\n".join(inspect.getsource(o).rstrip() for o in objects),
                         [_name(o) for o in objects])


def _plain_html(frame: Any) -> str:
    """A DataFrame as an HTML table alone: pandas' own notebook form puts a stylesheet before every
    table, and a notebook would store one per table shown. The same rows and columns as pandas'
    display options allow."""
    import pandas as pd

    return frame.to_html(max_rows=pd.get_option("display.max_rows"), max_cols=pd.get_option("display.max_columns"),
                         show_dimensions=pd.get_option("display.show_dimensions"))


def plain_tables(shell: Any = None) -> bool:
    """Show pandas DataFrames in this IPython kernel (or ``shell``) as plain HTML tables; False
    outside IPython (a script prints DataFrames as text anyway)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    import pandas as pd

    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, _plain_html)
    return True


def apply_style() -> None:
    """Readable plots: larger type, and larger still for a projector (``WORKBOOK_DEMO=1``); tables
    as plain HTML (:func:`plain_tables`)."""

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
    plain_tables()
