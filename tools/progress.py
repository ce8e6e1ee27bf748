"""Read the progress record: which exercises of which notebook pass, for this learner.

    python3 workbook.py progress      # or: python -m tools.progress

``helpers.exercises.check`` writes the record (a JSON file, ``{notebook: {exercise: passed}}``) at
``helpers.settings.progress_file()``; this tool only reads it.
"""
from __future__ import annotations

import json
import sys

from helpers import settings

__all__ = ["ProgressError", "progress", "report"]


class ProgressError(ValueError):
    """The progress record cannot be read; the message names the file and what to do."""


def progress() -> dict[str, dict[str, bool]]:
    """Every recorded exercise result, by notebook."""
    path = settings.progress_file()
    fix = (f"Move it aside or delete it (`rm {path}`) to start a new record; checking an exercise "
           f"again records it again.")
    try:
        if not path.exists():
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ProgressError(f"{path}: line {e.lineno}: the progress record is not valid JSON ({e.msg}). "
                            + fix) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ProgressError(f"{path}: the progress record cannot be read ({type(e).__name__}: "
                            f"{getattr(e, 'strerror', None) or e}). " + fix) from None
    ok = isinstance(data, dict) and all(
        isinstance(nb, str) and isinstance(r, dict)
        and all(isinstance(k, str) and isinstance(v, bool) for k, v in r.items())
        for nb, r in data.items())
    if not ok:
        raise ProgressError(f"{path}: the progress record is not {{notebook: {{exercise: true/false}}}} "
                            f"as helpers.exercises writes it. " + fix)
    return data


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
    try:
        print(report())
    except ProgressError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
