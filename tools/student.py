"""Student copies: every notebook without its solutions, outputs cleared.

    python3 workbook.py student-copies [DIR]      # or: python -m tools.student [DIR]

A student copy drops the ``## Solutions`` section (from the markdown cell that starts with
``## Solutions`` to the end of the notebook) and any other cell tagged ``solution``; the exercise
cells and their checks stay, so the copy runs top to bottom and each check says "not done yet".
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from tools.repo import NOTEBOOKS, ROOT, notebooks

__all__ = ["student_copy", "build_student_copies", "is_solutions_heading"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_solutions_heading(cell: dict) -> bool:
    """The markdown cell that opens the notebook's ``## Solutions`` section."""
    return cell.get("cell_type") == "markdown" and _source(cell).lstrip().startswith("## Solutions")


def student_copy(nb: dict) -> dict:
    """The notebook without its Solutions section and ``solution`` cells, outputs cleared."""
    out = copy.deepcopy(nb)
    cells = out["cells"]
    cut = next((i for i, c in enumerate(cells) if is_solutions_heading(c)), len(cells))
    out["cells"] = [c for c in cells[:cut] if "solution" not in c.get("metadata", {}).get("tags", [])]
    for c in out["cells"]:
        if c["cell_type"] == "code":
            c["outputs"] = []
            c["execution_count"] = None
    return out


def build_student_copies(out_dir: Path | str = ROOT / "student", src_dir: Path | str = NOTEBOOKS) -> list[Path]:
    """Write a student copy of every notebook into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in notebooks(src_dir):
        nb = json.loads(src.read_text(encoding="utf-8"))
        dest = out_dir / src.name
        dest.write_text(json.dumps(student_copy(nb), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(dest)
    return written


if __name__ == "__main__":
    for path in build_student_copies(*sys.argv[1:2]):
        print("wrote", path)
