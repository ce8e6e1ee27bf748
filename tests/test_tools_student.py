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


def test_a_solutions_heading_is_only_a_markdown_heading():
    assert student.is_solutions_heading(_cell("markdown", "## Solutions"))
    assert not student.is_solutions_heading(_cell("markdown", "See ## Solutions below"))
    assert not student.is_solutions_heading(_cell("code", "## Solutions"))
    assert not student.is_solutions_heading(_cell("markdown", "## Solution design: embedding"))  # a lesson's heading
    assert not student.is_solutions_heading(_cell("markdown", "Solutions are below.\n\nMore text."))


SECRET = "answer = 4242  # the secret answer"


def _notebook(tail_cells, exercise_cells=(), metadata=None):
    """A notebook with an Exercises section (an exercise, its check, ``exercise_cells``) and a tail."""
    return {"cells": [
        _cell("markdown", "# 09 · Title"),
        _cell("markdown", "## Exercises"),
        _cell("code", "answer = None  # your code here", ["exercise"]),
        *exercise_cells,
        _cell("code", 'helpers.check("9.1", answer)', ["check"]),
        _cell("markdown", "## Recap"),
        *tail_cells,
    ], "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 4}


def _solution_section(heading):
    return [_cell("markdown", heading), _cell("code", SECRET)]  # an untagged solution under the heading


#: the odd but plausible layouts a notebook's author may use, each with the answer SECRET somewhere
LAYOUTS = {
    "## Solutions": _notebook(_solution_section("## Solutions")),
    "### Solutions": _notebook(_solution_section("### Solutions")),
    "## Solution": _notebook(_solution_section("## Solution")),
    "## solutions": _notebook(_solution_section("## solutions")),
    "two spaces": _notebook(_solution_section("##  Solutions")),
    "numbered": _notebook(_solution_section("## 9. Solutions")),
    "html heading": _notebook(_solution_section("<h2>Solutions</h2>")),
    "anchor first": _notebook(_solution_section('<a id="solutions"></a>\n\n## Solutions')),
    "rule first": _notebook(_solution_section("---\n\n## Solutions")),
    "setext": _notebook(_solution_section("Solutions\n---------")),
    "bold numbered": _notebook(_solution_section("## **9.  SOLUTIONS** {#solutions}")),
    "mid-cell": _notebook([_cell("markdown", "Next: notebook 10.\n\n## Solutions\n\n" + SECRET)]),
    "hidden among exercises": _notebook(
        _solution_section("## Solutions"),
        [_cell("code", SECRET, jupyter={"source_hidden": True})]),
    "tag solution": _notebook([_cell("code", SECRET, ["solution"])]),
    "tag Solution": _notebook([_cell("code", SECRET, ["Solution"])]),
    "tag solutions": _notebook([_cell("code", SECRET, ["solutions"])]),
    "attachment": _notebook(_solution_section("## Solutions"), [{
        "cell_type": "markdown", "metadata": {}, "source": "![hint](attachment:hint.png)",
        "attachments": {"hint.png": {"image/png": SECRET}}}]),
    "widget state": _notebook(_solution_section("## Solutions"), metadata={"widgets": {
        "application/vnd.jupyter.widget-state+json": {"state": {"m": {"value": SECRET}}}}}),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_no_layout_of_the_solutions_leaks_into_the_student_copy(layout):
    nb = LAYOUTS[layout]
    assert SECRET in json.dumps(nb)
    out = student.student_copy(nb, layout)
    assert "4242" not in json.dumps(out)
    sources = [student._source(c) for c in out["cells"]]
    assert "answer = None  # your code here" in sources and 'helpers.check("9.1", answer)' in sources
    assert "## Recap" in sources
    if layout == "mid-cell":  # what stands above the heading in its cell stays
        assert sources[-1] == "Next: notebook 10.\n"


def test_a_notebook_whose_solutions_cannot_be_found_is_refused_and_nothing_is_written(tmp_path):
    src = tmp_path / "notebooks"
    src.mkdir()
    good = _notebook(_solution_section("## Solutions"))
    odd = _notebook(_solution_section("## Answers"))  # no heading or tag says solution
    (src / "01_good.ipynb").write_text(json.dumps(good))
    (src / "02_odd.ipynb").write_text(json.dumps(odd))
    with pytest.raises(student.StudentCopyError, match="02_odd.ipynb: it has exercises, but no Solutions heading"):
        student.build_student_copies(tmp_path / "student", src)
    assert not (tmp_path / "student").exists()
    (src / "02_odd.ipynb").unlink()
    assert [p.name for p in student.build_student_copies(tmp_path / "student", src)] == ["01_good.ipynb"]
    # a notebook with no exercises has nothing to hide
    assert student.student_copy({"cells": [_cell("markdown", "# Notes")], "metadata": {}})["cells"]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def _code(cells: list) -> list[str]:
    return [_text(c.get("source", "")) for c in cells if c.get("cell_type") == "code"]


def _run_copy(copy: dict, tmp_path, monkeypatch) -> str:
    """Run a student copy top to bottom on the mock (raises on an error); its code cells' printed text."""
    nb = nbformat.reads(json.dumps(copy), as_version=4)
    monkeypatch.setenv("WORKBOOK_BACKEND", "mock")
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("CI", "true")
    NotebookClient(nb, timeout=600, kernel_name="python3", kernel_manager_class=kernel_manager_class(),
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    recorded = json.loads((tmp_path / "progress.json").read_text())
    assert recorded and not any(any(v.values()) for v in recorded.values())
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


#: the one copy always run here, end to end (the smallest notebook)
RUN_ALWAYS = NBS[0]
def _nbval_options(cell: dict) -> dict[str, bool]:
    """What nbval does with a code cell, from its tags and its comment markers (nbval's own tables):
    ``check`` its output, expect an exception (``check_exception``), or ``skip`` it."""
    from nbval.plugin import find_comment_markers, metadata_tags

    options = {"check": True, "check_exception": False, "skip": False}
    markers = [metadata_tags[t] for t in cell["metadata"].get("tags", []) if t in metadata_tags]
    markers = [m if isinstance(m, tuple) else (m, True) for m in markers]
    options.update([*markers, *find_comment_markers(_text(cell["source"]))])
    return options


def _covered_by_nbval(copy: dict, original: dict) -> list[dict] | None:
    """The notebook's cells that stand for the copy's, or None if the copy must be run here.

    They do when the copy's code cells are the notebook's first code cells, unchanged and in order
    (its solutions all in the Solutions section at the end), nbval runs every one of them, none
    expecting an error (a run of the copy would stop there), and compares the output of each that
    holds an exercise or its check: the test command's notebook phases run those cells on every
    backend, the mock too, and fail on an error or an output unlike the stored one."""
    kept = _code(copy["cells"])
    stored = [c for c in original["cells"] if c["cell_type"] == "code"][:len(kept)]
    if kept != _code(stored):
        return None
    for cell in stored:
        options = _nbval_options(cell)
        if options["skip"] or options["check_exception"]:
            return None
        if {"exercise", "check"} & set(cell["metadata"].get("tags", [])) and not options["check"]:
            return None
    return stored


@pytest.mark.parametrize("path", NBS, ids=[p.name for p in NBS])
def test_student_copy_runs_with_exercises_not_done(path, tmp_path, monkeypatch):
    """Every student copy runs top to bottom and each exercise's check says "not done yet": run
    here when the notebook phases do not cover it (:func:`_covered_by_nbval`), and always for the
    first notebook, so the whole path (copy written, kernel, progress record) is exercised."""
    out = student.build_student_copies(tmp_path / "student", NOTEBOOKS)
    copy = json.loads(next(p for p in out if p.name == path.name).read_text(encoding="utf-8"))
    original = json.loads(path.read_text(encoding="utf-8"))
    n_exercises = sum("exercise" in c["metadata"].get("tags", []) for c in copy["cells"])
    covered = None if path == RUN_ALWAYS else _covered_by_nbval(copy, original)
    if covered is None:
        text = _run_copy(copy, tmp_path, monkeypatch)
    else:
        text = "".join(_text(o.get("text", "")) for c in covered for o in c["outputs"])
    assert text.count("not done yet") >= n_exercises >= 1
    assert ": correct." not in text


def test_a_copy_the_notebook_phases_do_not_cover_is_run_and_a_failing_one_fails(tmp_path, monkeypatch):
    """The shortcut above cannot hide a copy that breaks: a copy whose code is not the notebook's
    first cells, or whose check nbval would not compare, is not covered, and one that needs a
    removed solution raises when run."""
    from nbclient.exceptions import CellExecutionError

    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nb = {"cells": [{**_cell("code", "answer = 41 + 1", tags=["solution"]), "id": "a"},
                    {**_cell("code", "print(answer)"), "id": "b"}],
          "metadata": meta, "nbformat": 4, "nbformat_minor": 5}
    copy = student.student_copy(nb)
    assert _covered_by_nbval(copy, nb) is None
    with pytest.raises(CellExecutionError, match="NameError"):
        _run_copy(copy, tmp_path, monkeypatch)
    checked = {"cells": [{**_cell("code", "helpers.check('1.1', None)", tags=["check"]), "id": "c"},
                         {**_cell("markdown", "## Solutions"), "id": "d"},
                         {**_cell("code", "x = 1", tags=["solution"]), "id": "e"}], "metadata": meta}
    assert _covered_by_nbval(student.student_copy(checked), checked) is not None
    for tag, comment in (("nbval-ignore-output", "# NBVAL_IGNORE_OUTPUT"), ("nbval-skip", "# NBVAL_SKIP"),
                         ("raises-exception", "# NBVAL_RAISES_EXCEPTION")):
        check = checked["cells"][0]
        for marker in ({"metadata": {"tags": ["check", tag]}}, {"source": f"{comment}\n{check['source']}"}):
            nb = {**checked, "cells": [{**check, **marker}, *checked["cells"][1:]]}  # as a tag, as a comment
            assert _covered_by_nbval(student.student_copy(nb), nb) is None, marker


@pytest.mark.parametrize("summary", ["Solution", "<b>Show the answer</b>", "Answers", "solution 9.1",
                                     "Solution (try it first!)", "Click for the solution", "Answer to 9.1",
                                     "Reveal answer", "&#128161; Solution"])
def test_an_answer_folded_in_a_details_block_is_refused(summary):
    nb = {"cells": [
        _cell("markdown", "## Exercises"),
        _cell("code", "answer = None  # your code here", ["exercise"]),
        _cell("markdown", f"<details>\n<summary>{summary}</summary>\n\n```python\nanswer = 42\n```\n</details>"),
        _cell("markdown", "## Solutions"),
        _cell("code", "answer = 42", ["solution"]),
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    with pytest.raises(student.StudentCopyError, match=r"cell 3 holds an answer in a <details> block"):
        student.student_copy(nb, "09.ipynb")
    nb["cells"][2] = _cell("markdown", "<details>\n<summary>Why a bucket?</summary>\nFewer documents.\n</details>")
    assert len(student.student_copy(nb)["cells"]) == 3  # a lesson's own folded note stays


# --- the target folder: never the source folder, never over a notebook that is not a student copy


def _instructors_folder(tmp_path):
    """A folder of notebooks with solutions and outputs, as notebooks/ is: ``(folder, {path: bytes})``."""
    src = tmp_path / "notebooks"
    src.mkdir()
    for name in ("01_one.ipynb", "02_two.ipynb"):
        (src / name).write_text(json.dumps(_notebook(_solution_section("## Solutions"))))
    return src, {p: p.read_bytes() for p in src.iterdir()}


def _bytes(folder):
    return {p: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_source_folder_is_never_the_target(tmp_path):
    src, before = _instructors_folder(tmp_path)
    (tmp_path / "link").symlink_to(src)
    for target in (src, tmp_path / "link", tmp_path / "link" / ".." / "notebooks"):
        with pytest.raises(student.StudentCopyError, match="is the folder of the notebooks themselves"):
            student.build_student_copies(target, src)
        assert _bytes(src) == before


def test_a_notebook_that_is_not_a_student_copy_is_never_overwritten(tmp_path):
    src, _ = _instructors_folder(tmp_path)
    out = tmp_path / "elsewhere"
    out.mkdir()
    (out / "02_two.ipynb").write_bytes((src / "02_two.ipynb").read_bytes())  # an instructor's copy, solutions in
    (out / "notes.txt").write_text("mine")
    before = _bytes(out)
    with pytest.raises(student.StudentCopyError, match=r"02_two\.ipynb is not a student copy"):
        student.build_student_copies(out, src)
    assert _bytes(out) == before  # nothing written, not even the first copy
    # student copies are replaced (a learner's run of one is still a student copy: the mark stays)
    (out / "02_two.ipynb").unlink()
    written = student.build_student_copies(out, src)
    run = json.loads(written[0].read_text())
    run["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "ran"}]
    written[0].write_text(json.dumps(run))
    assert [p.name for p in student.build_student_copies(out, src)] == ["01_one.ipynb", "02_two.ipynb"]
    assert json.loads(written[0].read_text())["cells"][2]["outputs"] == []
    # without the mark (a copy made by hand, or a link to a notebook) it is not one
    unmarked = json.loads(written[1].read_text())
    del unmarked["metadata"][student.MARK_KEY]
    written[1].write_text(json.dumps(unmarked))
    before = _bytes(out)
    with pytest.raises(student.StudentCopyError, match=r"02_two\.ipynb is not a student copy \(without the mark"):
        student.build_student_copies(out, src)
    written[1].unlink()
    written[1].symlink_to(src / "02_two.ipynb")
    with pytest.raises(student.StudentCopyError, match=r"02_two\.ipynb is not a student copy \(a link"):
        student.build_student_copies(out, src)
    assert written[1].is_symlink() and written[0].read_bytes() == before[written[0]]  # nothing written


def test_the_command_refuses_a_folder_of_instructors_notebooks_and_writes_nothing(tmp_path):
    import subprocess
    import sys

    from tools.repo import ROOT

    out = tmp_path / "backup"
    out.mkdir()
    (out / NBS[0].name).write_bytes(NBS[0].read_bytes())  # a copy of the real notebook: outputs, solutions
    before = _bytes(out)
    done = subprocess.run([sys.executable, "-m", "tools.cli", "student-copies", str(out)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not a student copy" in done.stderr and NBS[0].name in done.stderr
    assert _bytes(out) == before


# --- the target folder is opened once, the caller's own, and each copy written inside it without a link
# followed: another user who can write the folder cannot plant a link between the check and the write


def test_a_target_folder_other_users_may_write_is_refused_and_nothing_is_written(tmp_path):
    src, before = _instructors_folder(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # as a folder in /tmp made for everyone
    with pytest.raises(student.StudentCopyError, match=r"shared.*may be written by other users"):
        student.build_student_copies(shared, src)
    assert list(shared.iterdir()) == [] and _bytes(src) == before


def test_a_link_planted_at_a_copys_name_after_the_check_is_never_followed(tmp_path, monkeypatch):
    src, before = _instructors_folder(tmp_path)
    out = tmp_path / "student"
    made = student.student_copy

    def copy_then_plant(nb, name="the notebook"):  # runs after the target was checked, before any write
        if not (out / "02_two.ipynb").is_symlink():
            out.mkdir(exist_ok=True)
            (out / "02_two.ipynb").symlink_to(src / "02_two.ipynb")
        return made(nb, name)

    monkeypatch.setattr(student, "student_copy", copy_then_plant)
    written = student.build_student_copies(out, src)
    assert _bytes(src) == before  # the instructor's notebook (solutions in) is untouched
    assert not (out / "02_two.ipynb").is_symlink()
    assert [student.is_student_copy(json.loads(p.read_text())) for p in written] == [True, True]
