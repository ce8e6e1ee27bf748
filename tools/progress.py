"""Read the progress record: which exercises of which notebook pass, for this learner.

    python3 workbook.py progress      # or: python -m tools.progress

``helpers.exercises.check`` writes the record (a JSON file, ``{notebook: {exercise: passed}}``) at
``helpers.settings.progress_file()``; this tool only reads it.
"""
from __future__ import annotations

import json
import sys

from helpers import settings

__all__ = ["progress", "report"]


def progress() -> dict[str, dict[str, bool]]:
    """Every recorded exercise result, by notebook."""
    path = settings.progress_file()
    return json.loads(path.read_text()) if path.exists() else {}


def report() -> str:
    """The record as the ``progress`` command prints it."""
    data = progress()
    if not data:
        return f"No exercise checked yet (progress is kept in {settings.progress_file()})."
    lines = []
    for notebook in sorted(data):
        results = data[notebook]
        lines.append(f"{notebook}: {sum(results.values())}/{len(results)} exercises pass")
        lines += [f"   {'✓' if results[ex] else '·'} {ex}" for ex in sorted(results)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
    sys.exit(0)
