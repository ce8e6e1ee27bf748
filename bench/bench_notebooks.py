"""Benchmark: each notebook's execution time per offline backend (a fresh kernel each).

    .venv/bin/python bench/bench_notebooks.py [--backends embedded,mock] [notebooks/NN_x.ipynb ...]
    WORKBOOK_SCALE=full .venv/bin/python bench/bench_notebooks.py --backends embedded   # demo scale
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import table  # noqa: E402

from helpers import settings  # noqa: E402
from tools.nbval_kernels import kernel_manager_class  # noqa: E402
from tools.repo import notebook_env, notebooks  # noqa: E402

#: a benchmark may run at another scale, data folder or demo style: only the backend is chosen here
KEEP = ("WORKBOOK_SCALE", "WORKBOOK_DATASETS", "WORKBOOK_DEMO")


def run(paths: list[Path] | None = None, backends: tuple[str, ...] = ("embedded", "mock")) -> list[dict]:
    paths = paths or notebooks()
    rows = []
    saved = dict(os.environ)
    try:
        for path in paths:
            row = {"notebook": path.name}
            for backend in backends:
                os.environ.clear()
                os.environ.update(notebook_env(backend, saved, keep=KEEP))
                nb = nbformat.read(path, as_version=4)
                t0 = time.perf_counter()
                NotebookClient(nb, timeout=1800, kernel_name="python3", kernel_manager_class=kernel_manager_class(),
                               resources={"metadata": {"path": str(path.parent)}}).execute()
                row[f"{backend} s"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return rows


if __name__ == "__main__":
    argv = sys.argv[1:]
    backends = ("embedded", "mock")
    if "--backends" in argv:
        i = argv.index("--backends")
        backends = tuple(argv[i + 1].split(","))
        del argv[i:i + 2]
    print(f"WORKBOOK_SCALE={settings.scale() or 'small (default)'}")
    print(table(run([Path(a) for a in argv] or None, backends)))
