"""Showing the code that runs: a notebook displays a helper's real source, never a copy.

Introduced in notebook 00. A listing is the code as it runs, each docstring cut to its first
sentence (marked ``…``; ``help(fn)`` or ``fn?`` shows it whole), so what a learner reads is the
pattern and the prose around it says the rest. Also how results look: plots sized for a laptop or a projector, and
tables stored in one plain form (``apply_style``, run when ``helpers`` is imported).
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any

from .settings import demo as _demo

__all__ = ["show_source", "cut_docstrings", "SourceListing", "apply_style", "plain_tables"]


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


def show_source(*objects: Any, docstrings: str = "first sentence") -> SourceListing:
    """Show the source of functions, classes or modules as one Python code block (notebook 00).

    ``docstrings="first sentence"`` (the default) cuts each docstring to its first sentence, marked
    ``…``; ``"whole"`` keeps them as written."""
    if docstrings not in ("first sentence", "whole"):
        raise ValueError(f"show_source: docstrings={docstrings!r} must be 'first sentence' or 'whole'")
    sources = [inspect.getsource(o).rstrip() for o in objects]
    if docstrings == "first sentence":
        sources = [cut_docstrings(s) for s in sources]
    return SourceListing("\n\n".join(sources), [_name(o) for o in objects])


#: where a docstring's first sentence ends: a full stop, ! or ? before white space or the end (not
#: after "e.g", "i.e", "etc", "vs" or a single letter), or a blank line
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\b\w)[.!?](?=\s|$)|\n[ \t]*\n")


def cut_docstrings(source: str) -> str:
    """``source`` (a function, class or module) with every docstring cut to its first sentence, the
    cut marked ``…``; the code itself untouched, line for line."""
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:  # a source inspect cannot give whole (a lambda's line): shown as it is
        return source
    cuts = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not body:
            continue
        doc = body[0]
        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
            cuts.append((doc.lineno, doc.end_lineno))
    for first, last in sorted(cuts, reverse=True):
        text = "".join(lines[first - 1:last])
        quote = re.search(r'[rRbBuU]?("""|\'\'\'|"|\')', text)
        if quote is None:
            continue
        q = quote.group(1)
        start, end = quote.end(), text.rstrip().rfind(q)
        body_text = text[start:end]
        m = _SENTENCE_END.search(body_text)
        if m is None or not body_text[m.end():].strip():
            continue  # one sentence: kept whole
        kept = body_text[:m.start() + 1].rstrip() if m.group(0)[0] in ".!?" else body_text[:m.start()].rstrip()
        newline = "\n" if text.endswith("\n") else ""
        lines[first - 1:last] = [text[:start] + kept + " …" + q + newline]
    return "".join(lines)


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

    demo = _demo()
    base = 16 if demo else 11
    mpl.rcParams.update({
        "font.size": base, "axes.titlesize": base + 2, "axes.labelsize": base,
        "xtick.labelsize": base - 1, "ytick.labelsize": base - 1, "legend.fontsize": base - 1,
        "figure.dpi": 110 if demo else 100, "lines.linewidth": 2.5 if demo else 1.5,
        "axes.grid": True, "grid.alpha": 0.3,
    })
    plain_tables()
