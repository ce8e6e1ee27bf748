"""``python3 workbook.py advise``: the schema anti-pattern advisor of notebook 06, from the command line.

    python3 workbook.py advise [--json] [--database NAME] [--profile] [--thresholds atlas|workbook]
                               [--threshold NAME=VALUE ...]
    python3 workbook.py advise --demo [--json] [--thresholds atlas|workbook]

Reviews the database NAME (default: the workbook's own) on the server in ``MONGODB_URI`` and prints
a readable report (``--json``: the same as JSON, for scripts). It only reads: it never writes to
the database it reviews, and does not probe the engine (probing writes). ``--profile`` takes the
workload from that database's profiler output (``system.profile``; turn the profiler on yourself, at
level 1 with ``slowms``, ``sampleRate`` or a filter). ``--thresholds`` picks Atlas' trigger values
(``atlas``, the default) or the workbook's stricter set (``workbook``); ``--threshold
max_array_elements=200`` overrides one value of it (repeatable; see ``helpers.advisor.Thresholds``).
``--demo`` plants the advisor's fixtures (one planted case and one near miss per code) in a throwaway
in-memory engine and reviews them.

A thin layer over :mod:`helpers.advisor`; its options are parsed by ``tools/cli.py``, the command
line's one parser, so ``python3 workbook.py advise --help`` needs no environment.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from helpers import settings


def _thresholds(pairs: list[str], base: str = "atlas"):
    from dataclasses import replace

    from helpers.advisor import Thresholds

    names = {f.name: f.type for f in fields(Thresholds)}
    values = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in names:
            raise ValueError(f"--threshold {pair!r}: use NAME=VALUE with NAME one of {', '.join(names)}")
        try:
            values[name] = (float(value) if name in ("lookup_share", "unused_index_days")
                            else int(value.replace(",", "").replace("_", "")))
        except ValueError:
            raise ValueError(f"--threshold {pair!r}: {value!r} is not a number") from None
    try:
        return replace(Thresholds.named(base), **values)
    except ValueError as e:
        raise ValueError(f"--threshold: {e}") from None


def run(args: argparse.Namespace) -> int:
    """Review as ``args`` (parsed by ``tools.cli``) say; print the report; the exit status."""
    try:
        thresholds = _thresholds(args.threshold, args.thresholds)
    except ValueError as e:  # a wrong argument, as argparse says one: usage status 2
        print(f"python3 workbook.py advise: error: {e}", file=sys.stderr)
        return 2

    from helpers import advisor
    from helpers.backends import BackendError, connect

    if args.demo:
        try:
            conn = connect("embedded", db_name="advisor_demo")
        except BackendError:
            conn = connect("mock", db_name="advisor_demo")
        try:
            from helpers.advisor.cases import plant_fixtures

            fixtures = plant_fixtures(conn.db, thresholds=thresholds)
            report = advisor.review(conn.db, fixtures.workload, thresholds=thresholds, info=conn.info)
        finally:
            conn.close()
    else:
        if not settings.mongodb_uri():
            print("No MONGODB_URI: the offline engines keep their data inside a notebook's kernel, so there is "
                  "no database here to review.\n"
                  "  - set MONGODB_URI=mongodb://host:27017 to review a database on a server (read only);\n"
                  "  - or run the advisor in a notebook: helpers.advisor.review(db) (notebook 06);\n"
                  "  - or try: python3 workbook.py advise --demo", file=sys.stderr)
            return 2
        try:
            conn = connect("mongodb", db_name=args.database, probe=False)
        except BackendError as e:
            print(str(e), file=sys.stderr)
            return 2
        from pymongo.errors import OperationFailure

        try:
            workload = advisor.ObservedWorkload.from_profile(conn.db) if args.profile else None
            report = advisor.review(conn.db, workload, thresholds=thresholds, info=None)
        except OperationFailure as e:  # e.g. code 13: this user may not read a collection or system.profile
            print(f"The server refused a read of database {conn.db.name!r} (code {e.code}: "
                  f"{str(e).split(', full error')[0]}).\nFix: review with a user that has the read role on "
                  f"that database (and, for --profile, may read its system.profile).", file=sys.stderr)
            return 2
        finally:
            conn.close()
        if args.profile and not len(workload):
            report.notes.append(f"the profiler recorded no operation on {conn.db.name!r}: turn it on with "
                                f"{advisor.PROFILE_ADVICE}, then review")
        if not report.collections:
            report.notes.append(f"database {conn.db.name!r} holds no collection to review: check --database")
    print(report.to_json() if args.json else report.text())
    return 0
