"""tools/repo.py: the README's generated blocks (scripts/toc.py and scripts/capabilities.py write them)."""
from __future__ import annotations

import pytest

from tools import repo

START, END = "<!-- x: generated -->", "<!-- /x -->"


def test_a_readme_block_is_rewritten_between_its_markers_and_checked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(repo, "ROOT", tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# T\n{START}\nold\nrows\n{END}\nafter\n", encoding="utf-8")
    assert repo.readme_block(START, END, "new", ["--check"], what="table", script="scripts/x.py") == 1
    assert "README.md's table is out of date: run python3 scripts/x.py" in capsys.readouterr().out
    assert readme.read_text(encoding="utf-8") == f"# T\n{START}\nold\nrows\n{END}\nafter\n"  # --check writes nothing
    assert repo.readme_block(START, END, "new", [], what="table", script="scripts/x.py") == 0
    assert readme.read_text(encoding="utf-8") == f"# T\n{START}\nnew\n{END}\nafter\n"
    assert repo.readme_block(START, END, "new", ["--check"], what="table", script="scripts/x.py") == 0


def test_a_readme_without_the_markers_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(repo, "ROOT", tmp_path)
    (tmp_path / "README.md").write_text(f"# T\n{START}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="needs the markers"):
        repo.readme_block(START, END, "new", [], what="table", script="scripts/x.py")


def test_a_shells_worker_servers_never_reach_a_run():
    """The per-worker servers (tools/worker_db.py) are the test command's own: one named in the
    caller's shell is dropped from every environment built for a run."""
    from tools.repo import clean_env, notebook_env
    from tools.worker_db import WORKER_URIS

    shell = {"PATH": "/bin", WORKER_URIS: "mongodb://elsewhere:27017/", "MONGODB_URI": "mongodb://x:1/"}
    assert WORKER_URIS not in clean_env(shell) and WORKER_URIS not in notebook_env("mongodb", shell)
    assert clean_env(shell, keep=("MONGODB_URI",))["MONGODB_URI"] == "mongodb://x:1/"
