"""Read the progress records: which exercises of which notebook pass, for this learner or the class.

    python3 workbook.py progress                                  # this learner (the local file)
    python3 workbook.py class progress [--json] [--html FILE]     # every learner on MONGODB_URI

``helpers.exercises.check`` writes the record (a JSON file, ``{notebook: {exercise: passed}}``) at
``helpers.settings.progress_file()`` and, on a server, one document per exercise in the learner's
own database (``workbook_progress``); this tool only reads them. ``class progress`` needs only the
rights to list the server's databases and read the workbook's (the readAnyDatabase role).
"""
from __future__ import annotations

import datetime as _dt
import html
import sys
from typing import Any

from helpers import settings
from helpers.exercises import ProgressRecordError, read_progress

__all__ = ["ProgressError", "progress", "report", "class_progress", "class_report", "class_html"]


#: the progress record cannot be read; the message names the file, why and what to do
ProgressError = ProgressRecordError


def progress() -> dict[str, dict[str, bool]]:
    """Every recorded exercise result, by notebook: read as ``helpers.check`` writes it (a regular
    file of the learner's own, in a folder nobody else can write; never a link or a FIFO)."""
    return read_progress()


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


def class_progress(client: Any) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """``{"databases": {database: {exercise id: {"passed", "attempts", "last"}}}}`` for every
    workbook database on the server (as ``class list`` finds them; one with no attempts is ``{}``).

    ``passed`` is the latest attempt's result, ``attempts`` how many answers were checked, ``last``
    the latest attempt's time (ISO 8601, UTC). A record that is not the workbook's shape, or not of an
    exercise with a checker (``helpers.exercises.exercise_ids``: the only ones ``helpers.check`` records),
    is left out: a learner writes their own database, and made-up exercises must not fill the class's page.
    Raises ``tools.classdb.ClassError`` naming the right the login lacks.
    """
    from pymongo.errors import OperationFailure

    from helpers.exercises import exercise_ids
    from helpers.safety import PROGRESS
    from tools import classdb

    known = set(exercise_ids())

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in classdb.workbook_database_names(client):
        try:
            if classdb.collection_kinds(client[name]).get(PROGRESS, "collection") != "collection":  # a learner's view: its pipeline is not run
                out[name] = {}
                continue
            docs = list(client[name][PROGRESS].find({}, sort=[("_id", 1)]))
        except OperationFailure as e:
            if classdb.is_denied(e):
                raise classdb.ClassError(f"This login may not read the database {name!r} (the find action): "
                                         f"class progress needs read on every learner's database (the "
                                         f"readAnyDatabase or root role) in MONGODB_URI.") from None
            raise
        rows = {}
        for d in docs:
            ex, passed, attempts, last = d.get("_id"), d.get("passed"), d.get("attempts"), _iso(d.get("last"))
            if isinstance(ex, str) and ex in known and isinstance(passed, bool) \
                    and isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 0 and last:
                rows[ex] = {"passed": passed, "attempts": attempts, "last": last}
        out[name] = dict(sorted(rows.items(), key=lambda kv: _order(kv[0])))
    return {"databases": out}


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


def class_report(data: dict) -> str:
    """The class's progress as text: per learner, passed, failed (with attempts) and not attempted."""
    columns = _columns(data)
    lines = []
    for database, rows in data["databases"].items():
        passed = [e for e in columns if rows.get(e, {}).get("passed") is True]
        failed = [e for e in columns if rows.get(e, {}).get("passed") is False]
        lines.append(f"{database}: {len(passed)} passed, {len(failed)} failed, "
                     f"{len(columns) - len(passed) - len(failed)} not attempted"
                     + (f" (last {max(r['last'] for r in rows.values())})" if rows else ""))
        if passed:
            lines.append("   passed: " + ", ".join(passed))
        if failed:
            lines.append("   failed: " + ", ".join(f"{e} ({_attempts(rows[e]['attempts'])})" for e in failed))
    lines.append(f"{len(data['databases'])} workbook databases, {len(columns)} exercises")
    return "\n".join(lines)


def class_html(data: dict) -> str:
    """One self-contained page (no script, no file or address outside it): a grid of learners by
    exercises, large enough for a projector. ✓ passed, ✗ failed (the number of attempts), blank not attempted."""
    columns = _columns(data)
    notebooks: dict[str, int] = {}
    for e in columns:
        notebooks[e.split(".")[0]] = notebooks.get(e.split(".")[0], 0) + 1
    esc = html.escape
    head = "".join(f'<th colspan="{n}">notebook {int(nb):02d}</th>' for nb, n in notebooks.items())
    sub = "".join(f"<th>{esc(e)}</th>" for e in columns)
    body = []
    for database, rows in data["databases"].items():
        cells = []
        for e in columns:
            r = rows.get(e)
            if r is None:
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
            "td.none{background:#f2f2f2}</style>"
            f"<h1>Class progress</h1><p>{len(data['databases'])} learners, {len(columns)} exercises; "
            f"✓ passed, ✗n failed after n attempts, blank not attempted. As of {when}.</p>"
            f"<table><tr><th rowspan='2'>learner</th>{head}<th rowspan='2'>passed</th></tr><tr>{sub}</tr>"
            + "".join(body) + "</table></html>\n")


if __name__ == "__main__":
    try:
        print(report())
    except ProgressError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
