"""Tests of tools/student.py: student copies without solutions, that still run."""
from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from tools import student
from tools.nbval_kernels import kernel_manager_class
from tools.repo import NOTEBOOKS, notebooks

NBS = notebooks()


def _cell(kind, source, tags=(), **meta):
    cell = {"cell_type": kind, "metadata": {**({"tags": list(tags)} if tags else {}), **meta}, "source": source}
    if kind == "code":
        cell.update(outputs=[{"output_type": "stream", "name": "stdout", "text": "x"}], execution_count=1)
    return cell


def test_student_copy_drops_solutions_only():
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "x"},
        {"cell_type": "code", "metadata": {"tags": ["exercise"]}, "source": "a = None", "outputs": [], "execution_count": 1},
        {"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": "a = 1", "outputs": [], "execution_count": 2},
        {"cell_type": "code", "metadata": {}, "source": "check(a)", "outputs": [{"output_type": "stream"}], "execution_count": 3},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    out = student.student_copy(nb)
    assert [c["source"] for c in out["cells"]] == ["x", "a = None", "check(a)"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in out["cells"] if c["cell_type"] == "code")
    assert len(nb["cells"]) == 4  # the source is untouched


def test_student_copy_drops_the_solutions_section():
    nb = {"cells": [
        _cell("markdown", "# 09 · Title"),
        _cell("markdown", "## Exercises"),
        _cell("code", "answer = None  # your code here", ["exercise"]),
        _cell("code", 'helpers.check("9.1", answer)', ["check"]),
        _cell("markdown", "## Recap"),
        _cell("markdown", ["## Solutions\n", "Open a solution when you are done."],
              **{"jp-MarkdownHeadingCollapsed": True}),
        _cell("markdown", "### Solution 9.1"),
        _cell("code", 'answer = 1\nhelpers.check("9.1", answer)', ["solution"]),
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    out = student.student_copy(nb)
    assert [c["source"] for c in out["cells"]] == [
        "# 09 · Title", "## Exercises", "answer = None  # your code here", 'helpers.check("9.1", answer)', "## Recap"]
    assert all(c["outputs"] == [] for c in out["cells"] if c["cell_type"] == "code")
    assert len(nb["cells"]) == 8


def test_a_solutions_heading_is_only_a_markdown_cell_starting_with_it():
    assert student.is_solutions_heading(_cell("markdown", "## Solutions"))
    assert not student.is_solutions_heading(_cell("markdown", "See ## Solutions below"))
    assert not student.is_solutions_heading(_cell("code", "## Solutions"))


@pytest.mark.parametrize("path", NBS, ids=[p.name for p in NBS])
def test_student_copy_runs_top_to_bottom_with_exercises_not_done(path, tmp_path, monkeypatch):
    out = student.build_student_copies(tmp_path / "student", NOTEBOOKS)
    copy = next(p for p in out if p.name == path.name)
    nb = nbformat.read(copy, as_version=4)
    n_exercises = sum("exercise" in c.metadata.get("tags", []) for c in nb.cells)
    monkeypatch.setenv("WORKBOOK_BACKEND", "mock")
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("CI", "true")
    NotebookClient(nb, timeout=600, kernel_name="python3", kernel_manager_class=kernel_manager_class(),
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()  # raises on an error
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert text.count("not done yet") >= n_exercises >= 1
    assert ": correct." not in text
    recorded = json.loads((tmp_path / "progress.json").read_text())
    assert recorded and not any(any(v.values()) for v in recorded.values())
