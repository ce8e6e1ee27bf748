"""Run every benchmark and print one table each (figures go into the maintainers' notes).

    .venv/bin/python bench/run.py
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

for script in ("bench_load.py", "bench_measure.py", "bench_classroom.py", "bench_notebooks.py"):
    if (HERE / script).exists():
        print(f"\n## {script}\n", flush=True)
        try:
            runpy.run_path(str(HERE / script), run_name="__main__")
        except SystemExit as done:  # a script's own sys.exit(main()) must not end the others
            if done.code not in (0, None):
                print(f"{script} exited with {done.code}")
