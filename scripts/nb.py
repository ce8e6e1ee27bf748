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
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.nbval_kernels import kernel_manager_class  # noqa: E402
from tools.repo import notebook_env, notebooks  # noqa: E402

# tags (nbval markers, exercise/check/solution); the Solutions heading collapsed and solution code
# hidden in JupyterLab
KEEP_CELL_META = {"tags", "jupyter", "jp-MarkdownHeadingCollapsed"}


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
    progress = tempfile.TemporaryDirectory()  # the run's exercise results are not the maintainer's
    # the committed run is the default one: no WORKBOOK_* or MONGODB_URI, no progress bars in outputs
    os.environ.clear()
    os.environ.update(notebook_env(backend, env_backup, WORKBOOK_PROGRESS=str(Path(progress.name) / "p.json")))
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3", kernel_manager_class=kernel_manager_class(),
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
        progress.cleanup()
    clean(nb)
    nbformat.write(nb, path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    print(f"{path}: {sum(c.cell_type == 'code' for c in nb.cells)} code cells, "
          f"{len(errors)} errors")


def main(args: list[str]) -> int:
    paths = notebooks() if args == ["all"] else [Path(a) for a in args]
    for p in paths:
        execute(p.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
