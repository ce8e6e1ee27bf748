"""Read the progress records: which exercises of which notebook pass, for this learner or the class.

    python3 workbook.py progress                                  # this learner (the local file)
    python3 workbook.py progress --reset [NN]                     # start it again (notebook NN, or all)
    python3 workbook.py class progress [--json] [--html FILE]     # every learner on MONGODB_URI

``helpers.exercises.check`` writes the record (a JSON file, ``{notebook: {exercise: passed}}``) at
``helpers.settings.progress_file()`` and, on a server, one document per exercise in the learner's
own database (``workbook_progress``); this tool reads them, and ``--reset`` starts the local
record again. ``class progress`` needs only the
rights to list the server's databases and read the workbook's (the readAnyDatabase role). A learner
may write anything into their own database, so it reads a bounded amount of each (one record per
exercise with a checker, three typed values of each; other records only counted) and shows a record
whose values are not the workbook's as untrusted, never as a pass (:func:`class_progress`).
"""
from __future__ import annotations

import datetime as _dt
import html
import sys
from typing import Any

from helpers import settings
from helpers.exercises import ProgressRecordError, read_progress, reset_progress

__all__ = ["ProgressError", "progress", "reset", "report", "class_progress", "class_report", "class_html", "MAX_RECORD_BYTES",
           "MAX_IGNORED", "CLOCK_SKEW"]


#: the progress record cannot be read; the message names the file, why and what to do
ProgressError = ProgressRecordError


def progress() -> dict[str, dict[str, bool]]:
    """Every recorded exercise result, by notebook: read as ``helpers.check`` writes it (a regular
    file of the learner's own, in a folder nobody else can write; never a link or a FIFO)."""
    return read_progress()


def reset(notebook: str | None = None) -> list[str]:
    """Forget the recorded results of ``notebook`` (``"02"`` or ``"02_outlier_pattern"``), or of every
    notebook: the notebooks forgotten (``helpers.exercises.reset_progress``)."""
    return reset_progress(notebook)


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


# ---------------------------------------------------------------------------------------------
# the class: every workbook database on the server, read from each one's workbook_progress

def _iso(value: Any) -> str | None:
    if not isinstance(value, _dt.datetime):
        return None
    if value.tzinfo is None:  # pymongo returns UTC without a zone unless asked
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: the largest record believed (the workbook writes about 120 bytes); a larger one is never read, only measured
MAX_RECORD_BYTES = 4096
#: records of no exercise with a checker are counted up to this many, never read
MAX_IGNORED = 1000
#: ``last`` is the learner's machine's clock: this far ahead of this machine's is still believed
CLOCK_SKEW = _dt.timedelta(minutes=10)


def _of_type(field: str, *types: str) -> dict:
    """A projection of ``field``: its value when its BSON type is one of ``types``, else the type's
    name (a short string): a value of the wrong type never leaves the server, whatever its size."""
    return {"$cond": [{"$in": [{"$type": f"${field}"}, list(types)]}, f"${field}", {"$type": f"${field}"}]}


#: what ``class progress`` reads of a record: three typed values and the record's size, nothing else
_PROJECTION = {"passed": _of_type("passed", "bool"), "attempts": _of_type("attempts", "int", "long"),
               "last": _of_type("last", "date"), "bytes": {"$bsonSize": "$$ROOT"}}


def _read_options() -> Any:
    """How a learner's records are decoded: a BSON date outside Python's years 1 to 9999 (a real
    MongoDB stores any int64 date) becomes a ``bson.DatetimeMS`` instead of raising InvalidBSON."""
    from bson.codec_options import CodecOptions, DatetimeConversion

    return CodecOptions(tz_aware=True, datetime_conversion=DatetimeConversion.DATETIME_AUTO)


def _distrust(doc: dict, now: _dt.datetime) -> str | None:
    """Why a record of a known exercise cannot be shown (None: it can)."""
    reasons = []
    size, passed, attempts, last = doc.get("bytes"), doc.get("passed"), doc.get("attempts"), doc.get("last")
    if not isinstance(size, int) or size > MAX_RECORD_BYTES:
        reasons.append(f"the record is larger than {MAX_RECORD_BYTES} bytes")
    if not isinstance(passed, bool):
        reasons.append("passed is not true or false")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        reasons.append("attempts is not a whole number of at least 1")
    from bson import DatetimeMS

    if isinstance(last, DatetimeMS):  # a date no clock of the learner's wrote
        reasons.append("last is a date outside the years 1 to 9999")
    elif not isinstance(last, _dt.datetime):
        reasons.append("last is not a date")
    elif (last if last.tzinfo else last.replace(tzinfo=_dt.timezone.utc)) > now + CLOCK_SKEW:
        reasons.append("last is in the future")
    return "; ".join(reasons) or None


def class_progress(client: Any) -> dict[str, dict[str, Any]]:
    """``{"databases": {database: {exercise id: {"passed", "attempts", "last"}}}, "untrusted":
    {database: {exercise id: why}}, "ignored": {database: count}}`` for every workbook database on
    the server (as ``class list`` finds them; one with no attempts is ``{}`` in ``databases``).

    ``passed`` is the latest attempt's result, ``attempts`` how many answers were checked, ``last``
    the latest attempt's time (ISO 8601, UTC). A learner writes their own database, so what is read
    is bounded and checked: only the records of exercises with a checker (``helpers.exercises.exercise_ids``:
    the only ones ``helpers.check`` records), at most one each, and of each only its three values, each
    of the right type or its type's name, and its size. A record whose values are not the workbook's
    (not a boolean ``passed``, not a whole number of ``attempts`` of at least 1, a ``last`` that is not
    a date, is a date outside the years 1 to 9999 (decoded, never raised) or is in the future, a record
    over :data:`MAX_RECORD_BYTES`) is listed under ``untrusted``
    with why, never under ``databases``; the records of any other ``_id`` are only counted (up to
    :data:`MAX_IGNORED`) under ``ignored``. Raises ``tools.classdb.ClassError`` naming the right the login lacks.
    """
    from pymongo.errors import OperationFailure

    from helpers.exercises import exercise_ids
    from helpers.safety import PROGRESS
    from tools import classdb

    known = exercise_ids()
    now = _dt.datetime.now(_dt.timezone.utc)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    untrusted: dict[str, dict[str, str]] = {}
    ignored: dict[str, int] = {}
    for name in classdb.workbook_database_names(client):
        try:
            if classdb.collection_kinds(client[name], [PROGRESS]).get(PROGRESS, "collection") != "collection":  # a learner's view: its pipeline is not run
                out[name] = {}
                continue
            coll = client[name].get_collection(PROGRESS, codec_options=_read_options())
            docs = list(coll.find({"_id": {"$in": known}}, _PROJECTION, sort=[("_id", 1)], limit=len(known)))
            others = coll.count_documents({"_id": {"$nin": known}}, limit=MAX_IGNORED)
        except OperationFailure as e:
            if classdb.is_denied(e):
                raise classdb.ClassError(f"This login may not read the database {name!r} (the find action): "
                                         f"class progress needs read on every learner's database (the "
                                         f"readAnyDatabase or root role) in MONGODB_URI.") from None
            raise
        rows, doubtful = {}, {}
        for d in docs:
            ex = d.get("_id")
            if not isinstance(ex, str) or ex not in known:  # the server's $in, checked again
                continue
            why = _distrust(d, now)
            if why:
                doubtful[ex] = why
            else:
                rows[ex] = {"passed": d["passed"], "attempts": d["attempts"], "last": _iso(d["last"])}
        out[name] = dict(sorted(rows.items(), key=lambda kv: _order(kv[0])))
        if doubtful:
            untrusted[name] = dict(sorted(doubtful.items(), key=lambda kv: _order(kv[0])))
        if others:
            ignored[name] = others
    return {"databases": out, "untrusted": untrusted, "ignored": ignored}


def _order(exercise_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in exercise_id.split("."))


def _columns(data: dict) -> list[str]:
    """Every exercise with a checker, and any other one in ``data`` (from a newer workbook, say), in order."""
    from helpers.exercises import exercise_ids

    seen = set(exercise_ids())
    for rows in data["databases"].values():
        seen.update(rows)
    return sorted(seen, key=_order)


def _learner(database: str) -> str:
    return database[len(settings.DB_PREFIX) + 1:] or database if database != settings.DB_PREFIX else database


def _attempts(n: int) -> str:
    return f"{n} attempt" + ("" if n == 1 else "s")


def _ignored(n: int) -> str:
    return (f"{'at least ' if n >= MAX_IGNORED else ''}{n} record{'' if n == 1 else 's'} of no exercise "
            f"with a checker ignored")


def _untrusted(data: dict, database: str, columns: list[str]) -> dict[str, str]:
    """The untrusted records of ``database`` shown in its row: ``{exercise: why}``, in column order."""
    doubtful = data.get("untrusted", {}).get(database, {})
    rows = data["databases"].get(database, {})
    return {e: doubtful[e] for e in columns if e in doubtful and e not in rows}


def class_report(data: dict) -> str:
    """The class's progress as text: per learner, passed, failed (with attempts), untrusted (never
    counted as anything) and not attempted."""
    columns = _columns(data)
    lines = []
    for database, rows in data["databases"].items():
        passed = [e for e in columns if rows.get(e, {}).get("passed") is True]
        failed = [e for e in columns if rows.get(e, {}).get("passed") is False]
        doubtful = _untrusted(data, database, columns)
        lines.append(f"{database}: {len(passed)} passed, {len(failed)} failed, "
                     + (f"{len(doubtful)} untrusted, " if doubtful else "")
                     + f"{len(columns) - len(passed) - len(failed) - len(doubtful)} not attempted"
                     + (f" (last {max(r['last'] for r in rows.values())})" if rows else ""))
        if passed:
            lines.append("   passed: " + ", ".join(passed))
        if failed:
            lines.append("   failed: " + ", ".join(f"{e} ({_attempts(rows[e]['attempts'])})" for e in failed))
        if doubtful:
            lines.append("   untrusted, not counted: " + ", ".join(f"{e} ({why})" for e, why in doubtful.items()))
        if data.get("ignored", {}).get(database):
            lines.append(f"   {_ignored(data['ignored'][database])}")
    lines.append(f"{len(data['databases'])} workbook databases, {len(columns)} exercises")
    return "\n".join(lines)


def class_html(data: dict) -> str:
    """One self-contained page (no script, no file or address outside it): a grid of learners by
    exercises, large enough for a projector. ✓ passed, ✗ failed (the number of attempts), ? an untrusted
    record (never counted), blank not attempted."""
    columns = _columns(data)
    notebooks: dict[str, int] = {}
    for e in columns:
        notebooks[e.split(".")[0]] = notebooks.get(e.split(".")[0], 0) + 1
    esc = html.escape
    head = "".join(f'<th colspan="{n}">notebook {int(nb):02d}</th>' for nb, n in notebooks.items())
    sub = "".join(f"<th>{esc(e)}</th>" for e in columns)
    body = []
    ignored = []
    for database, rows in data["databases"].items():
        cells = []
        doubtful = _untrusted(data, database, columns)
        if data.get("ignored", {}).get(database):
            ignored.append(f"{esc(_learner(database))}: {_ignored(data['ignored'][database])}")
        for e in columns:
            r = rows.get(e)
            if r is None and e in doubtful:
                cells.append(f'<td class="untrusted" title="untrusted record, not counted: {esc(doubtful[e])}">?</td>')
            elif r is None:
                cells.append('<td class="none" title="not attempted"></td>')
            elif r["passed"]:
                cells.append(f'<td class="pass" title="passed, {_attempts(r["attempts"])}, last {esc(r["last"])}">✓</td>')
            else:
                cells.append(f'<td class="fail" title="failed, {_attempts(r["attempts"])}, last {esc(r["last"])}">'
                             f'✗{r["attempts"]}</td>')
        passed = sum(1 for r in rows.values() if r["passed"])
        body.append(f'<tr><th class="who" title="{esc(database)}">{esc(_learner(database))}</th>{"".join(cells)}'
                    f"<td>{passed}/{len(columns)}</td></tr>")
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return ("<!doctype html><html lang='en'><meta charset='utf-8'><title>Class progress</title><style>"
            "body{font:20px/1.3 system-ui,sans-serif;margin:1em;color:#111;background:#fff}"
            "table{border-collapse:collapse}th,td{border:1px solid #999;padding:.2em .4em;text-align:center}"
            "th.who{text-align:left;white-space:nowrap}td.pass{background:#b7e4b0}td.fail{background:#f4b6b6}"
            "td.none{background:#f2f2f2}td.untrusted{background:#ffe08a}</style>"
            f"<h1>Class progress</h1><p>{len(data['databases'])} learners, {len(columns)} exercises; "
            f"✓ passed, ✗n failed after n attempts, ? a record that is not the workbook's (not counted), "
            f"blank not attempted. As of {when}.</p>"
            f"<table><tr><th rowspan='2'>learner</th>{head}<th rowspan='2'>passed</th></tr><tr>{sub}</tr>"
            + "".join(body) + "</table>"
            + (f"<p>{'; '.join(ignored)}.</p>" if ignored else "") + "</html>\n")


if __name__ == "__main__":
    try:
        print(report())
    except ProgressError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
