"""Tests of tools/cli.py and workbook.py: one parser, the same help and errors, standard library only."""
from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tools import cli
from tools.repo import ROOT


def _workbook(*args, tmp_path):
    """``workbook.py`` as a learner runs it before .venv exists: a bare interpreter, no site-packages."""
    env = {"PATH": "/usr/bin:/bin", "WORKBOOK_VENV": str(tmp_path / "venv")}
    return subprocess.run([sys.executable, "-I", "-S", str(ROOT / "workbook.py"), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path)


def test_help_and_errors_need_no_environment_and_create_none(tmp_path):
    shown = _workbook("--help", tmp_path=tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python3 workbook.py")
    for command in ("lab", "test", "setup", "student-copies", "progress", "html", "advise", "class"):
        assert f"    {command}" in shown.stdout
    shown = _workbook("class", "--help", tmp_path=tmp_path)
    assert shown.returncode == 0 and all(s in shown.stdout for s in ("list", "drop", "logins", "progress"))
    shown = _workbook("advise", "--help", tmp_path=tmp_path)
    assert shown.returncode == 0 and all(s in shown.stdout for s in ("--json", "--database", "--profile",
                                                                     "--thresholds", "--threshold", "--demo"))
    for args, says in ([(), "the following arguments are required: COMMAND"],
                       [("frob",), "invalid choice: 'frob'"],
                       [("class", "drop", "--frob"), "class drop: error: unrecognized arguments: --frob"],
                       [("class", "logins"), "the following arguments are required: ROSTER.csv"],
                       [("progress", "x"), "progress: error: unrecognized arguments: x"],
                       [("advise", "--thresholds", "lax"), "advise: error: argument --thresholds: invalid choice"]):
        done = _workbook(*args, tmp_path=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith("usage: python3 workbook.py"), args
        assert says in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "venv").exists()  # nothing was set up to say that


def test_workbook_py_and_tools_cli_print_the_same_help(tmp_path, capsys):
    for args in (["--help"], ["class", "--help"], ["class", "progress", "--help"], ["student-copies", "--help"],
                 ["advise", "--help"]):
        with pytest.raises(SystemExit) as done:
            cli.main(args)
        assert done.value.code == 0
        assert capsys.readouterr().out == _workbook(*args, tmp_path=tmp_path).stdout


def test_errors_of_tools_cli_are_argparse_errors(capsys):
    for args in (["class"], ["class", "drop", "--frob"], ["html", "a", "b"]):
        with pytest.raises(SystemExit) as done:
            cli.main(args)
        assert done.value.code == 2 and "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["lab"])
    assert "run by workbook.py itself" in capsys.readouterr().err


def test_commands_that_belong_to_other_programs_keep_their_arguments_the_rest_are_parsed():
    args, extra = cli.parse(["lab", "--port=8889", "--no-browser"])
    assert args.command == "lab" and extra == ["--port=8889", "--no-browser"]
    args, extra = cli.parse(["advise", "--json", "--database", "x"])
    assert (args.command, args.json, args.database, args.thresholds, extra) == ("advise", True, "x", "atlas", [])
    args, extra = cli.parse(["class", "drop", "a", "b", "--yes"])
    assert (args.class_command, args.databases, args.yes, extra) == ("drop", ["a", "b"], True, [])


def test_a_class_command_without_a_server_is_a_sentence(monkeypatch, capsys):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert cli.main(["class", "list"]) == 2
    err = capsys.readouterr().err
    assert "Set MONGODB_URI" in err and "Traceback" not in err


def test_a_roster_that_cannot_be_read_is_a_sentence(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:9/")  # never reached: the roster is read first
    assert cli.run(["class", "logins", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv" in capsys.readouterr().err


@pytest.mark.parametrize("path", ["tools/cli.py", "workbook.py"])
def test_the_parser_imports_only_the_standard_library_at_the_top(path):
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in top if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names)
