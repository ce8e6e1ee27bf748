"""Exercises: self-checks that say what is wrong and give a hint, without showing the answer.

Introduced in notebook 00. Every notebook gathers its exercises in an ``## Exercises`` section: an
exercise cell (tag ``exercise``) sets an answer to ``None``; a check cell (tag ``check``) calls

    helpers.check("2.1", threshold_999, posts_embedded=posts_embedded)

and the ``## Solutions`` section at the end (tag ``solution``; student copies drop it) sets the
answer and calls the same check. The checker itself lives in the package, in
the lesson's folder (``helpers/<lesson>/checks.py``, the lesson whose face names notebook NN),
registered with :func:`exercise`; it recomputes what is right from the
data passed as context, so neither the expected value nor its formula is in the notebook.

A check never raises on a wrong or missing answer: an unfinished exercise reports "not done yet"
and nothing more (its hint comes with a wrong attempt, never before one: a hint often names the way
to the answer), so a student copy still runs top to bottom. Each result is recorded in the progress
file (``helpers.settings.progress_file()``: ``WORKBOOK_PROGRESS``, else
``~/.schema_workbook/progress.json``), which ``python3 workbook.py progress`` (``tools/progress.py``) reads:
a file of the user's own in a folder no other user can write (:mod:`helpers.private`); when it cannot
be recorded (another user's file or folder, a link, a FIFO, a file that is not a progress record), the
check's result is printed all the same and a second line says why and where.
On a server (``MONGODB_URI``) each answered check is also recorded in the learner's own database, in
the workbook's ``workbook_progress`` collection (:func:`record_server_progress`), which the
instructor's ``python3 workbook.py class progress`` reads.
"""
from __future__ import annotations

import datetime as _dt
import functools
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import backends, capabilities, private, safety, settings
from .safety import PROGRESS, workbook_collection

__all__ = ["Checker", "exercise", "check", "evaluate", "checker", "progress_file", "record_progress",
           "read_progress", "reset_progress", "ProgressRecordError", "LOCK_WAIT", "record_server_progress", "exercise_ids", "shown",
           "SHOWN_MOST", "PAUSED"]

#: ``fn(answer, **context) -> None`` when the answer is right, else what is wrong (never the expected value)
Checker = Callable[..., "str | None"]

_ID = re.compile(r"^(\d+)\.(\d+)$")
#: what an unanswered exercise's check says: no hint, which comes only with a wrong attempt
NOT_DONE = "not done yet: set the answer in the cell above, run it, then run this check."
#: what a check says when the learner's function paused the workbook's counting (``paused()``):
#: the commands it sent then went uncounted, so the check cannot judge them (checkers test
#: ``cost.paused_inside`` on the counter around the learner's call)
PAUSED = ("your function paused the workbook's counting (helpers.counting.paused), so the commands it sent "
          "then were not counted: send every read as a plain query and let the check count it")
#: the most characters of an answer a checker's message shows (:func:`shown`)
SHOWN_MOST = 200


def shown(value: Any, most: int = SHOWN_MOST) -> str:
    """``repr(value)`` for a checker's message, cut to ``most`` characters with ``...`` and its
    length when longer: a 20 MB answer is never printed (or saved with the notebook) whole. Every
    checker echoes what it was given through this, never with ``!r``."""
    try:
        text = repr(value)
    except ValueError:  # an int of over 4,300 digits: repr() refuses it
        if isinstance(value, int):
            return f"a whole number of about {int(value.bit_length() * 0.30103):,} digits"
        raise
    return _cut(text, most)


def _cut(text: str, most: int = SHOWN_MOST) -> str:
    """``text`` cut to ``most`` characters, its head and tail kept, and its length said."""
    if len(text) <= most:
        return text
    head = most * 2 // 3
    return f"{text[:head]}...{text[-(most - head):]} ({len(text):,} characters)"


@dataclass(frozen=True)
class _Registered:
    fn: Checker
    hint: str
    query_result: bool = False  # the answer is the result of the learner's own query


_CHECKERS: dict[str, _Registered] = {}


def exercise(exercise_id: str, *, hint: str, query_result: bool = False) -> Callable[[Checker], Checker]:
    """Register ``fn(answer, **context)`` as the checker of exercise ``exercise_id`` (``"N.k"``).

    Used in each lesson's ``helpers/<lesson>/checks.py``. The hint is printed with every result that is not correct.
    ``query_result=True`` says the answer is what the learner's own query returned: when such an
    answer is empty on an engine where a query form silently matches nothing (a probed capability,
    e.g. ``bare_regex_indexed``), the hint also names that engine deviation.
    """
    if not isinstance(exercise_id, str) or not _ID.match(exercise_id):
        raise ValueError(f"exercise id must look like '2.1' (notebook number, then exercise number), "
                         f"got {exercise_id!r}")
    if not isinstance(hint, str) or not hint.strip():
        raise ValueError(f"exercise {exercise_id}: give a hint (a sentence that points the way)")

    def register(fn: Checker) -> Checker:
        _CHECKERS[exercise_id] = _Registered(fn, hint.strip(), query_result)
        return fn

    return register


def checker(exercise_id: str) -> tuple[Checker, str]:
    """The registered checker and hint of ``exercise_id``, importing its lesson's ``checks`` on demand."""
    reg = _registered(exercise_id)
    return reg.fn, reg.hint


def _registered(exercise_id: str) -> _Registered:
    m = _ID.match(exercise_id) if isinstance(exercise_id, str) else None
    if not m:
        raise ValueError(f"exercise id must look like '2.1' (notebook number, then exercise number), "
                         f"got {exercise_id!r}")
    if exercise_id not in _CHECKERS:
        notebook = f"{int(m.group(1)):02d}"
        lesson = lesson_folders().get(notebook)
        if lesson is not None and (lesson / "checks.py").is_file():
            importlib.import_module(f"{__package__}.{lesson.name}.checks")
        if exercise_id not in _CHECKERS:
            where = f"helpers/{lesson.name}/checks.py" if lesson else f"the checks.py of notebook {notebook}'s lesson"
            raise KeyError(f"no checker for exercise {exercise_id}: register one in {where} with "
                           f"@exercise({exercise_id!r}, hint=...)")
    return _CHECKERS[exercise_id]


#: a lesson face's first docstring line names its notebook, in brackets: "... (notebook 04)." (the rule
#: scripts/layout.py reads too)
_NOTEBOOK_OF_FACE = re.compile(r'^\s*[rRuU]?"""[^\n]*?\(notebook (\d\d)\)')


@functools.lru_cache(maxsize=1)
def lesson_folders() -> dict[str, Path]:
    """``{"04": helpers/aerodata, ...}``: each lesson's folder by the notebook its face names first
    (``helpers/<lesson>/__init__.py``); read from the files, so the core imports no lesson."""
    out: dict[str, Path] = {}
    for face in sorted(Path(__file__).parent.glob("*/__init__.py")):
        m = _NOTEBOOK_OF_FACE.match(face.read_text(encoding="utf-8"))
        if m and m.group(1) not in out:
            out[m.group(1)] = face.parent
    return dict(sorted(out.items()))


def _not_done(answer: Any) -> bool:
    """None (or ...) is an answer not given yet; so is a tuple of them, e.g. ``query, why = None, None``."""
    if answer is None or answer is Ellipsis:
        return True
    return isinstance(answer, tuple) and len(answer) > 0 and all(a is None or a is Ellipsis for a in answer)


def _empty(answer: Any) -> bool:
    """An empty result: ``[]``, ``{}``, or a dict whose values are all empty (one result per pattern)."""
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__"):
        return False
    if len(answer) == 0:
        return True
    return isinstance(answer, dict) and all(
        hasattr(v, "__len__") and not isinstance(v, (str, bytes)) and len(v) == 0 for v in answer.values())


def _engine_note(context: dict[str, Any]) -> str | None:
    """Why an empty query result may be the engine's doing, from the probed capabilities of the
    connection that the context's collections or database belong to."""

    for value in context.values():
        info = backends.info_of(value)
        if info is not None:
            silent = capabilities.warnings(info.caps, info.engine)
            return f"your answer is empty, and {silent[0]} instead (docs/ENGINES.md)" if silent else None
    return None


def _said(error: BaseException) -> str:
    """An exception's message (which may hold the whole answer), cut like :func:`shown`."""
    try:
        return _cut(str(error), 2 * SHOWN_MOST)
    except ValueError:  # its message is an int of over 4,300 digits
        return "(its message is too long to show)"


def _half_loaded(context: dict[str, Any]) -> str | None:
    """What to do when the data a check is given holds part of a load (a kernel stopped mid-load:
    ``helpers.safety.incomplete``): a collection in the context that is marked, or any marked
    collection of a database in it. None when all is there (or it cannot be told)."""
    seen: dict[int, tuple[Any, set[str] | None]] = {}
    for value in context.values():  # asked of the class: a Database makes any attribute a Collection
        if hasattr(type(value), "find") and hasattr(type(value), "insert_one"):  # a collection
            db, names = seen.setdefault(id(value.database), (value.database, set()))
            if names is not None:
                names.add(value.name)
        elif hasattr(type(value), "list_collection_names"):  # a database: any of its collections
            seen[id(value)] = (value, None)
    for db, names in seen.values():
        try:
            notes = safety.incomplete_notes(db, names)
        except Exception:  # noqa: BLE001 - a database this login may not read: checked as before
            continue
        if notes:
            return notes[0]
    return None


def evaluate(exercise_id: str, answer: Any, **context: Any) -> tuple[str, str]:
    """``(status, line)`` for an answer, without printing or recording: status is ``"correct"``,
    ``"not right yet"``, ``"not done yet"`` or ``"not checked"`` (the data it was given holds part of
    a load that did not finish: the line says to run the Setup cell again); line is what :func:`check`
    prints."""
    reg = _registered(exercise_id)
    fn, hint = reg.fn, reg.hint
    if _not_done(answer):
        return "not done yet", f"Exercise {exercise_id}: {NOT_DONE}"
    partial = _half_loaded(context)
    if partial:  # judged on part of the data, a right answer could fail and a wrong one pass
        return "not checked", f"Exercise {exercise_id}: not checked: {partial}"
    try:
        problem = fn(answer, **context)
    except Exception as e:  # a wrong shape of answer should teach, not crash
        problem = f"checking it raised {type(e).__name__}: {_said(e)}"
    if problem:  # a message that grew past a sentence (an answer in it): cut, as shown() cuts one answer
        problem = _cut(str(problem), 5 * SHOWN_MOST)
    if problem:
        if reg.query_result and _empty(answer):
            note = _engine_note(context)
            if note:
                hint = f"{hint}. Note: {note}"
        return "not right yet", f"Exercise {exercise_id}: not right yet: {problem}. Hint: {hint}"
    return "correct", f"Exercise {exercise_id}: correct."


def check(exercise_id: str, answer: Any, **context: Any) -> None:
    """Check ``answer`` to exercise ``exercise_id`` ("N.k") against the data in ``context``.

    Prints one line, the same on every backend: ``Exercise N.k: correct.``, ``... not right yet:
    <what is wrong>. Hint: ...`` or ``... not done yet: ...`` (no hint before an attempt); records the result for the
    progress report (:func:`record_progress`; when it cannot, a second line says why and where).
    Data holding part of a load that did not finish is not judged: ``... not checked: <which
    collection, and to run the Setup cell again>``, and nothing is recorded. Returns nothing, so a
    check cell shows only what it prints.
    """
    status, line = evaluate(exercise_id, answer, **context)
    print(line)
    if status == "not checked":  # judged on no data: nothing to record
        return
    refused = record_progress(exercise_id, status == "correct")
    if refused:
        print(refused)
    if status != "not done yet":  # an answer given: an attempt
        server = _server_db()
        if server is not None:
            record_server_progress(server, exercise_id, status == "correct")


def exercise_ids() -> list[str]:
    """Every exercise that has a checker in a lesson's ``checks.py``, in notebook and exercise order (a
    checker registered from elsewhere, as the tests do, is not a lesson's exercise)."""
    modules = set()
    for _, lesson in sorted(lesson_folders().items()):
        if (lesson / "checks.py").is_file():
            modules.add(importlib.import_module(f"{__package__}.{lesson.name}.checks").__name__)
    ours = [e for e, reg in _CHECKERS.items() if getattr(reg.fn, "__module__", None) in modules]
    return sorted(ours, key=lambda e: tuple(int(x) for x in e.split(".")))


# ---------------------------------------------------------------------------------------------
# the progress record on a server: one document per exercise in the learner's own database

def _server_db() -> Any:
    """The learner's own database when this process works on a server, else None (never connects)."""

    conn = backends.current_connection()
    if conn is None or conn._closed or conn.info.name != "mongodb":
        return None
    return conn.db


def record_server_progress(db: Any, exercise_id: str, passed: bool) -> bool:
    """Record an attempt at ``exercise_id`` in ``db`` (the learner's own database), in the workbook's
    ``workbook_progress`` collection (:data:`helpers.safety.PROGRESS`, recorded as the workbook's):
    ``{_id: exercise id, notebook, passed, attempts, last}``, ``passed`` the latest result and
    ``last`` its time (UTC). One update, so two kernels never lose an attempt.

    Returns False (and raises nothing: progress is a convenience) when the server refused it, e.g.
    a ``workbook_progress`` collection that the workbook did not create.
    """

    try:
        workbook_collection(db, PROGRESS).update_one(
            {"_id": exercise_id},
            {"$set": {"notebook": _notebook_name(exercise_id), "passed": bool(passed),
                      "last": _dt.datetime.now(_dt.timezone.utc)},
             "$inc": {"attempts": 1}},
            upsert=True)
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------------
# the progress record: {notebook: {exercise id: passed}} in one JSON file

#: how long a check waits for another kernel's update of the record before saying it is not recorded (seconds)
LOCK_WAIT = 5.0


class ProgressRecordError(ValueError):
    """The progress record cannot be used; the message names the file, why, and what to do."""


def progress_file() -> Path:
    """``WORKBOOK_PROGRESS`` if set, else ``~/.schema_workbook/progress.json`` (``helpers.settings``)."""
    return settings.progress_file()


def _notebook_name(exercise_id: str) -> str:
    session = settings.notebook_session()  # set by Jupyter for the notebook's kernel
    if session.endswith(".ipynb"):
        return Path(session).stem
    m = re.match(r"^(\d+)", exercise_id)
    return f"notebook {int(m.group(1)):02d}" if m else "notebook ?"


def _fix(path: Path) -> str:
    return f"move it aside or delete it (`rm {path}`) to start a new record"


def _unsafe(path: Path, err: private.Unsafe) -> ProgressRecordError:
    if isinstance(err, private.Busy):
        return ProgressRecordError(f"{path}: not used as the progress record this time, because {err}; check "
                                   f"the exercise again to record it.")
    return ProgressRecordError(f"{path}: not used as the progress record, because {err}; keep WORKBOOK_PROGRESS "
                               f"in a folder only you can write (unset, it is {settings.DEFAULT_PROGRESS}).")


#: the most bytes of a progress record read (a real one is a few KiB); a larger file is not one
MAX_RECORD_BYTES = 1024 * 1024
#: a notebook's name as :func:`_notebook_name` gives it: a notebook file's stem (no folder in it) or "notebook NN"
_NOTEBOOK_KEY = re.compile(r"^[^/\\\x00-\x1f]{1,255}$")


def _is_record(data: Any) -> bool:
    """``data`` has the shape :func:`record_progress` writes, strictly: ``{notebook: {exercise id: bool}}``,
    every notebook a name as :func:`_notebook_name` gives it with at least one result, every exercise id
    ``N.k``. ``{}`` is a record with nothing in it yet (any other key or value: not a record)."""
    return isinstance(data, dict) and all(
        isinstance(nb, str) and _NOTEBOOK_KEY.match(nb) and nb.strip() == nb and nb not in (".", "..")
        and isinstance(r, dict) and r
        and all(isinstance(k, str) and _ID.match(k) and isinstance(v, bool) for k, v in r.items())
        for nb, r in data.items())


def _read_record(path: Path) -> bytes:
    """The bytes of the record (:mod:`helpers.private`), at most one over :data:`MAX_RECORD_BYTES`."""
    return private.read(path.parent, path.name, limit=MAX_RECORD_BYTES + 1)


def _parse(path: Path, raw: bytes) -> dict[str, dict[str, bool]]:
    """The record in ``raw`` (the bytes of ``path``), or :class:`ProgressRecordError` saying why not:
    not UTF-8, not JSON (nested too deeply, an integer too long), over :data:`MAX_RECORD_BYTES`, or not
    of the record's shape (:func:`_is_record`)."""
    if len(raw) > MAX_RECORD_BYTES:
        raise ProgressRecordError(f"{path} is not a progress record (it is over the {MAX_RECORD_BYTES // (1024 * 1024)} MiB "
                                  f"a record may take; a real one is a few KiB), so it is left as it is; if it is "
                                  f"an old record, {_fix(path)}.")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        why = f"it cannot be read as UTF-8 text: {e.reason} at byte {e.start}"
    except json.JSONDecodeError as e:
        why = f"line {e.lineno} is not valid JSON: {e.msg}"
    except RecursionError:
        why = "its JSON is nested too deeply to be a record"
    except ValueError as e:  # an integer of thousands of digits
        why = f"it is not valid JSON: {e}"
    else:
        if _is_record(data):
            return data
        if isinstance(data, dict) and "cells" in data and "nbformat" in data:
            raise ProgressRecordError(f"{path} is a notebook, not a progress record, so it is left as it is; "
                                      f"point WORKBOOK_PROGRESS at a file of its own (e.g. progress.json).")
        why = "not {notebook: {exercise N.k: true/false}} as helpers.check writes it"
    raise ProgressRecordError(f"{path} is not a progress record ({why}), so it is left as it is; if it is an "
                              f"old record, {_fix(path)}.")


def read_progress() -> dict[str, dict[str, bool]]:
    """Every recorded result, by notebook (``{}`` before the first, or from a file holding ``{}``); only a
    file of the record's shape is one (:func:`_is_record`: notebook names, exercise ids ``N.k``, true or
    false; at most :data:`MAX_RECORD_BYTES`); the record is read as
    :func:`record_progress` writes it (:mod:`helpers.private`: a regular file of the user's own, in a
    folder nobody else can write). Raises :class:`ProgressRecordError`, whose message names the file,
    why it is not used and what to do."""
    path = progress_file()
    try:
        return _parse(path, _read_record(path))
    except private.Missing:
        return {}
    except private.Unsafe as e:
        raise _unsafe(path, e) from None
    except OSError as e:
        raise ProgressRecordError(f"{path}: the progress record cannot be read ({type(e).__name__}: "
                                  f"{e.strerror or e}); {_fix(path)}.") from None


def record_progress(exercise_id: str, passed: bool) -> str | None:
    """Remember the latest result of an exercise. Returns None, or the sentence saying why it was
    not recorded and where (never raises: progress is a convenience).

    The record is a file of the user's own in a folder nobody else can write, never a link or a
    FIFO (:mod:`helpers.private`); two kernels (two notebooks open at once) update it in turn under
    a lock beside it (``<record>.lock``), waited for at most :data:`LOCK_WAIT` seconds. A file that
    is not a progress record (not JSON, another shape, a notebook) is left byte for byte as it is.
    """
    path = progress_file()
    try:
        with private.locked(path.parent, path.name + ".lock", wait=LOCK_WAIT):
            try:
                data = _parse(path, _read_record(path))
            except private.Missing:
                data = {}
            data.setdefault(_notebook_name(exercise_id), {})[exercise_id] = bool(passed)
            private.write(path.parent, path.name, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
        return None
    except ProgressRecordError as e:
        return f"Progress not recorded: {e}"
    except private.Unsafe as e:
        return f"Progress not recorded: {_unsafe(path, e)}"
    except OSError as e:
        return f"Progress not recorded: {path} cannot be written ({type(e).__name__}: {e.strerror or e})."
    except Exception as e:  # noqa: BLE001 - progress is a convenience: a check never fails because of it
        return f"Progress not recorded in {path}: {type(e).__name__}: {e}."


def reset_progress(notebook: str | None = None) -> list[str]:
    """Start the record again: forget every result (``notebook=None``) or one notebook's (``"02"``,
    ``"2"`` or its file's stem, ``"02_outlier_pattern"``). Returns the notebooks forgotten (none when
    there was nothing to forget). Updates the record as :func:`record_progress` does, under its lock;
    raises :class:`ProgressRecordError` (which names the file, why and what to do) when the record
    cannot be used, and leaves a file that is not a record byte for byte as it is. Only this record
    (the file): what a server keeps for the instructor is the instructor's report of attempts."""
    path = progress_file()
    if notebook is not None:
        wanted = str(notebook).strip()
        number = f"{int(wanted):02d}" if re.fullmatch(r"[0-9]{1,3}", wanted) else None
        if not wanted or wanted in (".", "..") or (number is None and not _NOTEBOOK_KEY.match(wanted)):
            raise ProgressRecordError(f"{notebook!r} is not a notebook: give its number (e.g. 02) or its "
                                      f"file's name (e.g. 02_outlier_pattern)")

    def forget(name: str) -> bool:
        if notebook is None:
            return True
        if number is not None:  # "02": 02_outlier_pattern, or "notebook 02" (a check run outside Jupyter)
            return name == f"notebook {number}" or re.match(rf"^{number}(?:_|$)", name) is not None
        return name == wanted or name == Path(wanted).stem
    try:
        try:
            _read_record(path)  # no record: nothing to forget, and no folder or lock file made for it
        except private.Missing:
            return []
        with private.locked(path.parent, path.name + ".lock", wait=LOCK_WAIT):
            try:
                data = _parse(path, _read_record(path))
            except private.Missing:
                return []
            gone = sorted(nb for nb in data if forget(nb))
            if gone:
                kept = {nb: r for nb, r in data.items() if nb not in gone}
                private.write(path.parent, path.name, json.dumps(kept, indent=1, sort_keys=True).encode("utf-8"))
            return gone
    except private.Busy as e:
        raise ProgressRecordError(f"{path}: not reset, because {e}; run the reset again.") from None
    except private.Unsafe as e:
        raise _unsafe(path, e) from None
    except OSError as e:
        raise ProgressRecordError(f"{path}: the progress record cannot be written ({type(e).__name__}: "
                                  f"{e.strerror or e}); {_fix(path)}.") from None
