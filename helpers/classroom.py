"""The progress record's writer, kept for ``helpers.exercises`` (introduced in notebook 00).

Every ``helpers.check`` records its latest result here, for ``python3 workbook.py progress``
(``tools/progress.py`` reads the record). The file is ``helpers.settings.progress_file()``.
The instructors' tools that lived here moved out of the learner's package: ``tools/`` (student
copies, progress report, HTML build, class list/drop), ``bench/classroom_load.py`` (load test);
the student database's name is ``helpers.settings.student_db_name``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from . import settings

__all__ = ["record_progress"]


def _notebook_name(exercise: str) -> str:
    session = settings.notebook_session()  # set by Jupyter for the notebook's kernel
    if session.endswith(".ipynb"):
        return Path(session).stem
    m = re.match(r"^(\d+)", exercise)
    return f"notebook {int(m.group(1)):02d}" if m else "notebook ?"


def record_progress(exercise: str, passed: bool) -> None:
    """Remember the latest result of an exercise (never raises: progress is a convenience)."""
    try:
        path = settings.progress_file()
        data = json.loads(path.read_text()) if path.exists() else {}
        data.setdefault(_notebook_name(exercise), {})[exercise] = bool(passed)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except Exception:
        pass
