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
from common import table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run(paths: list[Path] | None = None, backends: tuple[str, ...] = ("embedded", "mock")) -> list[dict]:
    paths = paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    rows = []
    saved = dict(os.environ)
    try:
        os.environ.pop("MONGODB_URI", None)
        os.environ["CI"] = "true"  # no progress bars
        for path in paths:
            row = {"notebook": path.name}
            for backend in backends:
                os.environ["WORKBOOK_BACKEND"] = backend
                nb = nbformat.read(path, as_version=4)
                t0 = time.perf_counter()
                NotebookClient(nb, timeout=1800, kernel_name="python3",
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
    print(f"WORKBOOK_SCALE={os.environ.get('WORKBOOK_SCALE') or 'small (default)'}")
    print(table(run([Path(a) for a in argv] or None, backends)))
