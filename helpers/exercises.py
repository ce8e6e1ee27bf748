"""Exercises: self-checks that say what is wrong and give a hint.

Introduced in notebook 00. An exercise cell (tag ``exercise``) sets an answer to ``None``; the
solution cell after it (tag ``solution``) fills it in; student copies drop the solution cells.
A check never raises: an unfinished exercise reports "not done yet" with its hint, so a student
copy still runs top to bottom.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["check", "results"]

_RESULTS: dict[str, bool] = {}


def _not_done(answer: Any) -> bool:
    """None (or ...) is an answer not given yet; so is a tuple of them, e.g. ``query, why = None, None``."""
    if answer is None or answer is Ellipsis:
        return True
    return isinstance(answer, tuple) and len(answer) > 0 and all(a is None or a is Ellipsis for a in answer)


def check(exercise: str, answer: Any, test: Callable[[Any], str | None], hint: str) -> bool:
    """Check ``answer`` with ``test`` (returns None when right, else what is wrong).

    Prints one line (the same on every backend) and returns True when the answer is right.
    """
    if _not_done(answer):
        print(f"Exercise {exercise}: not done yet. Hint: {hint}")
        _record(exercise, False)
        return False
    try:
        problem = test(answer)
    except Exception as e:  # a wrong shape of answer should teach, not crash
        problem = f"checking it raised {type(e).__name__}: {e}"
    if problem:
        print(f"Exercise {exercise}: not right yet: {problem}. Hint: {hint}")
        _record(exercise, False)
        return False
    print(f"Exercise {exercise}: correct.")
    _record(exercise, True)
    return True


def _record(exercise: str, passed: bool) -> None:
    from .classroom import record_progress

    _RESULTS[exercise] = passed
    record_progress(exercise, passed)  # for `python3 workbook.py progress`


def results() -> dict[str, bool]:
    """Which exercises of this kernel session passed (for the progress report)."""
    return dict(_RESULTS)
