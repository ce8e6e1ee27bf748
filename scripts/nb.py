#!/usr/bin/env python3
"""Maintainer tool: re-run notebooks top to bottom and save them clean ("Restart and run all").

    .venv/bin/python scripts/nb.py notebooks/02_outlier_pattern.ipynb [...]   # or: all

Runs each notebook in a fresh kernel on the embedded backend (``WORKBOOK_BACKEND=embedded``, no
``MONGODB_URI``), with the notebook folder as working directory, then strips volatile metadata, so
the committed file is exactly what a reader gets and what nbval compares against.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
KEEP_CELL_META = {"tags"}


def clean(nb: nbformat.NotebookNode) -> None:
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_META}
        cell.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4


def execute(path: Path, backend: str = "embedded") -> None:
    nb = nbformat.read(path, as_version=4)
    env_backup = dict(os.environ)
    os.environ.pop("MONGODB_URI", None)
    for var in ("WORKBOOK_SCALE", "WORKBOOK_DATASETS", "WORKBOOK_DB", "WORKBOOK_DEMO"):
        os.environ.pop(var, None)  # the committed run is the default one
    os.environ.update({"WORKBOOK_BACKEND": backend, "MPLBACKEND": "module://matplotlib_inline.backend_inline",
                       "PYTHONHASHSEED": "0", "CI": "true"})  # CI: no progress bars in saved outputs
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    clean(nb)
    nbformat.write(nb, path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    print(f"{path}: {sum(c.cell_type == 'code' for c in nb.cells)} code cells, "
          f"{len(errors)} errors")


def main(args: list[str]) -> int:
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if args == ["all"] else [Path(a) for a in args]
    for p in paths:
        execute(p.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
