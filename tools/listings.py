"""Maintainers' report on the listings the notebooks show: lines per ``helpers.show_source`` call.

    .venv/bin/python -m tools.listings        # every listing, longest first, and the figures

A listing is what a learner reads (``helpers.display``): the figures are the median and the longest,
against the layout's goal (at most 60 lines each, median at most 25; ``tests/test_layout.py``).
"""
from __future__ import annotations

import ast
import json
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from tools.repo import notebooks

__all__ = ["Listing", "listings", "main", "MAX_LINES", "MAX_MEDIAN"]

MAX_LINES, MAX_MEDIAN = 60, 25


@dataclass(frozen=True)
class Listing:
    notebook: str
    cell: int
    call: str
    lines: int
    text: str


def _namespace(source: str) -> dict[str, Any]:
    """The names a notebook's import cells bind (``from helpers import aerodata as ad``, ...)."""
    ns: dict[str, Any] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (getattr(node, "module", None) or "").startswith("helpers") \
                or isinstance(node, ast.Import) and any(a.name.startswith("helpers") for a in node.names):
            exec(compile(ast.Module([node], []), "<imports>", "exec"), ns)  # noqa: S102 - the workbook's own imports
    return ns


def listings() -> list[Listing]:
    """Every ``helpers.show_source(...)`` call of every notebook, resolved and measured."""
    from helpers.display import show_source

    out = []
    for path in notebooks():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        ns = _namespace("\n".join(line for src in code for line in src.splitlines()
                                  if line.lstrip().startswith(("import helpers", "from helpers"))))
        for i, c in enumerate(cells):
            if c["cell_type"] != "code":
                continue
            for node in ast.walk(ast.parse("".join(c["source"]))):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "show_source":
                    objs = [eval(compile(ast.Expression(a), "<arg>", "eval"), ns) for a in node.args]  # noqa: S307
                    kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                    text = str(show_source(*objs, **kw))
                    out.append(Listing(path.name[:2], i, ", ".join(ast.unparse(a) for a in node.args),
                                       len(text.splitlines()), text))
    return out


def main(argv: list[str]) -> int:
    found = sorted(listings(), key=lambda x: -x.lines)
    for x in found:
        print(f"{x.lines:4d}  {x.notebook} cell {x.cell:3d}  {x.call}")
    lines = [x.lines for x in found]
    print(f"{len(found)} listings: median {statistics.median(lines)} lines (goal <= {MAX_MEDIAN}), "
          f"longest {max(lines)} (goal <= {MAX_LINES}), {sum(n > MAX_LINES for n in lines)} over {MAX_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
