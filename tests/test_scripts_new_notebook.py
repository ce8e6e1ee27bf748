"""scripts/new_notebook.py: a new lesson's files (notebook, folder, test) pass the skeleton and layout tests the moment
they are written (run into a copy of the repository, never into this one)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tools.repo import ROOT


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The working tree's files (tracked, and new ones not ignored), in a git repository of their own."""
    dest = tmp_path_factory.mktemp("repo")
    for name in _tracked():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=dest, check=True)
    return dest


def _run(copy, *args, **kw):
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, **kw)


def _free(copy) -> str:
    """The next notebook number after the last one the workbook has (a new notebook takes it)."""
    return f"{max(int(p.name[:2]) for p in (copy / 'notebooks').glob('[0-9][0-9]_*.ipynb')) + 1:02d}"


def test_a_started_notebook_passes_the_skeleton_and_layout_tests_at_once(copy):
    nn = _free(copy)
    done = _run(copy, "scripts/new_notebook.py", nn, "caching")
    assert done.returncode == 0, done.stdout + done.stderr
    for rel in (f"notebooks/{nn}_caching.ipynb", "helpers/caching/__init__.py", "helpers/caching/pattern.py",
                "helpers/caching/checks.py", "tests/test_caching.py"):
        assert (copy / rel).is_file(), rel
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True)  # the layout tests read the tracked files
    # every layout test, and the notebook tests for the new notebook (the others pass here already)
    done = _run(copy, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-rA",
                "-k", f"not ipynb or {nn}_caching", "tests/test_notebooks_skeleton.py", "tests/test_layout.py",
                "tests/test_caching.py", "tests/test_repo.py")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ran = done.stdout
    for test in (f"test_sections_in_order[{nn}_caching.ipynb]", f"test_solutions_are_last_collapsed_and_hidden[{nn}_caching",
                 "test_every_lesson_module_names_its_notebook_first[caching/pattern.py]",
                 "test_a_lesson_face_names_its_parts_and_no_part_shadows_a_name[caching]",
                 "test_every_import_runs_down_the_layers", "test_readme_layout_table_is_generated_from_the_tree",
                 "test_ruff_finds_nothing",
                 "test_readme_contents_are_generated_from_the_notebooks", "test_count_by_kind_is_one_round_trip[mock]",
                 f"test_committed_notebook_is_a_clean_run[{nn}_caching.ipynb]"):
        assert "PASSED tests/" in ran and test in ran, test


def test_it_refuses_what_would_clash_and_writes_nothing(copy):
    def files():
        return sorted(p.relative_to(copy) for d in ("notebooks", "helpers", "tests") for p in (copy / d).rglob("*"))

    before = files()
    nn = _free(copy)
    for args, says in ((["9", "x"], "two digits"), ([nn, "Not-Snake"], "snake_case"),
                       (["00", "again"], "notebook 00 exists already"),
                       ([nn, "counting"], "already there: helpers/counting.py"),
                       ([nn, "compare"], "helpers.compare is a name every notebook uses"),
                       ([nn, "sizes_over_time"], "shares a name prefix with helpers/sizes")):
        done = _run(copy, "scripts/new_notebook.py", *args, "--no-run")
        assert done.returncode == 2 and says in done.stderr, done.stderr
    assert files() == before
