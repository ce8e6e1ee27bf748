"""The workbook's command line: one argparse parser for ``workbook.py`` and every subcommand.

``workbook.py`` parses its arguments with :func:`build_parser` before the virtual environment exists
(so this module imports only the standard library at the top), runs ``lab``, ``test`` and ``setup``
itself, and runs every other command as ``python -m tools.cli ...`` in the environment, where
:func:`main` parses the same arguments again and runs it. Help and errors look the same everywhere:
``python3 workbook.py --help``, ``python3 workbook.py class --help``, and a wrong argument gets
argparse's ``usage: ...`` line and ``error: ...`` on stderr, exit status 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["PROG", "PASS_THROUGH", "WORKBOOK_ONLY", "build_parser", "parse", "main", "run"]

PROG = "python3 workbook.py"
#: commands whose further arguments belong to another program (JupyterLab, the test runner)
PASS_THROUGH = ("lab", "test")
#: commands that ``workbook.py`` runs itself (they set up the environment first)
WORKBOOK_ONLY = ("lab", "test", "setup")

_DESCRIPTION = ("Set up and open the workbook, test it, and the instructor's tools. Set-up is a virtual "
                "environment in .venv (WORKBOOK_VENV) with requirements.txt installed; it is redone only "
                "when requirements.txt or pyproject.toml change.")


#: ``progress --reset`` given no notebook: every notebook (an object, so no notebook's name can mean it)
RESET_ALL = object()


def build_parser() -> argparse.ArgumentParser:
    """The one parser of ``workbook.py`` and its subcommands (standard library only)."""
    parser = argparse.ArgumentParser(prog=PROG, description=_DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub.add_parser("lab", help="set up .venv and open JupyterLab at notebooks/00_start_here.ipynb "
                               "(further options go to JupyterLab, e.g. --port=8889)")
    sub.add_parser("test", help="set up .venv and run every test: unit tests and every notebook, on "
                                "every backend (further options go to pytest, e.g. -x)")
    sub.add_parser("setup", help="only set up .venv and the typed copies of the data files")
    copies = sub.add_parser("student-copies", help="student copies of every notebook (solutions removed)")
    copies.add_argument("dir", nargs="?", metavar="DIR", help="where to write them (default: student/)")
    prog_local = sub.add_parser("progress", help="which exercises of which notebook pass, for this learner")
    prog_local.add_argument("--reset", nargs="?", const=RESET_ALL, metavar="NN",
                            help="start the record again: of notebook NN (e.g. 02), or of every notebook")
    site = sub.add_parser("html", help="a static HTML build of the executed notebooks")
    site.add_argument("dir", nargs="?", metavar="DIR", help="where to write it (default: site/)")
    advise = sub.add_parser("advise", help="review a database for schema anti-patterns, read only",
                            description="The schema anti-pattern advisor of notebook 06, on the database of "
                                        "the server in MONGODB_URI (read only; it does not probe the engine, "
                                        "since probing writes). Thresholds: Atlas' trigger values by default.")
    advise.add_argument("--json", action="store_true", help="print the report as JSON")
    advise.add_argument("--database", metavar="NAME", help="the database to review (default: the workbook's own)")
    advise.add_argument("--profile", action="store_true",
                        help="take the workload from the database's profiler output (system.profile; turn "
                             "the profiler on yourself, at level 1)")
    advise.add_argument("--thresholds", choices=("atlas", "workbook"), default="atlas",
                        help="Atlas' trigger values (default) or the workbook's stricter set")
    advise.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                        help="override one threshold of the set, e.g. max_array_elements=200 (repeatable; "
                             "see helpers.advisor.Thresholds)")
    advise.add_argument("--demo", action="store_true",
                        help="review the advisor's fixtures (one planted case and one near miss per code) "
                             "on a throwaway offline engine")

    klass = sub.add_parser("class", help="the class on the server in MONGODB_URI (an instructor's login)",
                           description="The class's databases and logins on the server in MONGODB_URI.")
    csub = klass.add_subparsers(dest="class_command", metavar="SUBCOMMAND", required=True)
    csub.add_parser("list", help="the class's workbook databases, with their sizes")
    drop = csub.add_parser("drop", help="list what --yes would drop: the workbook's collections of each "
                                        "database (all, or those named), each database left empty, and "
                                        "the logins `class logins` made for them")
    drop.add_argument("databases", nargs="*", metavar="DB", help="only these databases")
    drop.add_argument("--yes", action="store_true",
                      help="drop them (an instructor's login: root, or dbAdminAnyDatabase with "
                           "userAdminAnyDatabase)")
    logins = csub.add_parser("logins", help="one login per learner of ROSTER (readWrite on the learner's "
                                            "own database only); prints each new learner's MONGODB_URI once")
    logins.add_argument("roster", metavar="ROSTER.csv", help="one learner a line: the login (letters, "
                                                              "digits, '.', '_', '-'), first column of a CSV")
    prog = csub.add_parser("progress", help="every learner's exercises: passed, failed or not attempted")
    prog.add_argument("--json", action="store_true", help='print {"databases": {DB: {EXERCISE: {"passed", '
                                                          '"attempts", "last"}}}}')
    prog.add_argument("--html", metavar="FILE", help="also write one self-contained page (a grid for a projector)")
    parser.commands = {**sub.choices, **{f"class {name}": p for name, p in csub.choices.items()}}
    return parser


def parse(argv: list[str], parser: argparse.ArgumentParser | None = None) -> tuple[argparse.Namespace, list[str]]:
    """Parse ``argv``; further arguments are allowed only after a :data:`PASS_THROUGH` command."""
    parser = parser or build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in PASS_THROUGH:  # said by the subcommand's own parser: its usage line
        commands = getattr(parser, "commands", {})
        where = commands.get(f"{args.command} {getattr(args, 'class_command', '')}") or commands.get(args.command)
        (where or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    return args, extra


def main(argv: list[str]) -> int:
    parser = build_parser()
    args, extra = parse(argv, parser)
    if args.command in WORKBOOK_ONLY:
        parser.error(f"{args.command} is run by workbook.py itself: python3 workbook.py {args.command}")
    if args.command == "advise":
        from tools import advise
        return advise.run(args)
    from tools.repo import ROOT

    if args.command == "student-copies":
        from tools import student

        try:
            written = student.build_student_copies(Path(args.dir) if args.dir else ROOT / "student")
        except student.StudentCopyError as e:
            print(e, file=sys.stderr)
            return 2
        for path in written:
            print("wrote", path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
        return 0
    if args.command == "progress":
        from tools import progress

        try:
            if args.reset is not None:
                every = args.reset is RESET_ALL
                gone = progress.reset(None if every else args.reset)
                print(f"Forgot the results of {', '.join(gone)}." if gone else "Nothing to forget: no result recorded"
                      + ("" if every else f" for notebook {args.reset.rstrip('.')}") + ".")
            print(progress.report())
        except progress.ProgressError as e:
            print(e, file=sys.stderr)
            return 2
        return 0
    if args.command == "html":
        from tools import html

        try:
            pages = html.build_html(Path(args.dir) if args.dir else ROOT / "site")
        except html.HtmlBuildError as e:
            print(e, file=sys.stderr)
            return 2
        print(f"wrote {len(pages)} pages; open {pages[0]}")
        return 0
    from tools import classdb

    try:
        return _class(args)
    except classdb.ClassError as e:
        print(e, file=sys.stderr)
        return 2


def _client(quiet: bool = False):
    from helpers import settings
    from helpers.backends import BackendError, connect_uri, redact_uri
    from tools.classdb import ClassError

    uri = settings.mongodb_uri()
    if not uri:
        raise ClassError("Set MONGODB_URI to the class's server first, e.g. "
                         "MONGODB_URI=mongodb://teacher:PASSWORD@lab-server:27017/?authSource=admin")
    try:
        client, engine, version = connect_uri(uri)
    except BackendError as e:
        raise ClassError(str(e)) from None
    print(f"server: {redact_uri(uri)} ({engine} {version})", file=sys.stderr if quiet else sys.stdout)
    return client


def _class(args: argparse.Namespace) -> int:
    from pymongo.errors import PyMongoError

    from helpers import settings
    from tools import classdb

    sub = args.class_command
    if sub == "logins":  # the roster first: a bad line stops everything before the server is asked
        roster = classdb.read_roster(args.roster)
    client = _client(quiet=sub == "progress" and args.json)
    try:
        if sub == "list":
            from helpers.sizes import human_bytes

            rows = classdb.workbook_databases(client)
            for r in rows:
                print(f"{r['database']:<50} {r['collections']:>4} collections  {human_bytes(r['data bytes']):>10} data"
                      f"  {human_bytes(r['storage bytes']):>10} on disk")
            print(f"{len(rows)} workbook databases")
            return 0
        if sub == "progress":
            from tools import progress

            data = progress.class_progress(client)
            if args.html:
                Path(args.html).write_text(progress.class_html(data), encoding="utf-8")
            print(json.dumps(data, indent=1) if args.json else progress.class_report(data))
            if args.html:
                print(f"wrote {args.html}", file=sys.stderr if args.json else sys.stdout)
            return 0
        if sub == "logins":
            made = classdb.create_logins(client, settings.mongodb_uri() or "", roster)
            for login, uri, database in made:
                print(f"{login}: " + (uri or f"exists, unchanged (database {database}; its password is not "
                                             f"shown again)"))
            new = sum(1 for _login, uri, _db in made if uri)
            print(f"{new} logins created, {len(made) - new} unchanged. Each URI above is shown only now: give "
                  f"each learner theirs as MONGODB_URI (readWrite on their own database only).", file=sys.stderr)
            return 0
        return _drop(client, args.databases or None, args.yes)
    except PyMongoError as e:
        from helpers.uri import scrub

        raise classdb.ClassError(f"The server refused the class command ({type(e).__name__}: "
                                 f"{scrub(str(e), settings.mongodb_uri() or '')[:300]}); nothing more was done.") from None
    finally:
        client.close()


def _drop(client, names: list[str] | None, yes: bool) -> int:
    from tools import classdb

    if yes:  # the login first: a student's is refused before anything is looked at or dropped
        print(classdb.check_instructor(client))
    plan = classdb.drop_plan(client, names)
    try:
        users = {login: db for login, db in classdb.workbook_users(client).items() if db in plan or names is None}
        user_note = None
    except classdb.ClassError as e:
        users, user_note = {}, f"logins not looked at: {e}"
    if not yes:
        for name, what in plan.items():
            print(f"{name}: would drop {', '.join(what['drop']) or 'no collection'}"
                  + (f"; keeps {', '.join(what['keep'])} (not the workbook's)" if what["keep"] else
                     "; then the database, left empty"))
        if users:
            print(f"would remove the logins: {', '.join(sorted(users))}")
        if user_note:
            print(user_note)
        print(f"{len(plan)} workbook databases, {len(users)} logins. Nothing was dropped: add --yes to drop "
              f"exactly these (an instructor's login only).")
        return 2
    gone = classdb.drop_users(client, sorted(set(users.values()))) if users else []
    kept = classdb.drop_workbook_databases(client, list(plan), check=False)
    for name, others in kept.items():
        print(f"{name}: dropped {', '.join(plan[name]['drop']) or 'no collection'}"
              + ("; database dropped" if not others else f"; kept (not the workbook's): {', '.join(others)}"))
    if gone:
        print(f"removed the logins: {', '.join(gone)}")
    if user_note:
        print(user_note)
    print(f"{len(kept)} workbook databases cleaned, {len(gone)} logins removed")
    return 0


def run(argv: list[str]) -> int:
    """:func:`main`, with a file the command cannot read or write said in a sentence, not a traceback."""
    try:
        return main(argv)
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"{where}{e.strerror or e}. Check the path and its permissions, then run the command again.",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
