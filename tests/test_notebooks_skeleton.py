"""Every notebook has the workbook's skeleton (CONTRIBUTING.md).

Title, You will learn, You need; Setup in at most two code cells (connect with the banner, load the
data); numbered sections in order; ``## Exercises`` with one layout (exercise cell, check cell, one
``helpers.check("N.k", ...)`` call); ``## Recap``; ``## Solutions`` last, collapsed, with hidden
solution cells. Test plumbing stays out of the learner's cells. Notebooks are found by pattern, so
a new notebook is checked the day it lands.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
DRAW_MARK = "# extra code: draws the chart; safe to skip"


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _number(path: Path) -> int:
    return int(path.name[:2])


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _sections(nb) -> list[tuple[str, int]]:
    """``(level-2 heading, index of its cell)`` in order."""
    out = []
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown":
            out += [(line[3:].strip(), i) for line in c.source.splitlines() if line.startswith("## ")]
    return out


def _between(nb, start: str, end: str | None) -> list:
    heads = dict(_sections(nb))
    lo = heads[start]
    hi = heads[end] if end else len(nb.cells)
    return nb.cells[lo + 1:hi]


def _check_call(source: str) -> ast.Call | None:
    """The ``helpers.check(...)`` call if ``source`` is exactly one such statement."""
    body = ast.parse(source).body
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "check" and isinstance(f.value, ast.Name) and f.value.id == "helpers":
        return call
    return None


def _call_id(call: ast.Call) -> str | None:
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def _text(cell) -> str:
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


nb_param = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


@nb_param
def test_title_you_will_learn_you_need(path):
    nb = _read(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    title = first.source.splitlines()[0]
    assert re.fullmatch(rf"# {path.name[:2]} · \S.*", title), f"title must be '# {path.name[:2]} · Title', not {title!r}"
    learn = first.source.split("**You will learn**", 1)
    assert len(learn) == 2, "the first cell needs **You will learn**"
    bullets = re.findall(r"^- ", learn[1].split("**You need**")[0], re.M)
    assert 3 <= len(bullets) <= 5, f"You will learn has {len(bullets)} bullets; 3 to 5 expected"
    assert "**You need**" in first.source


@nb_param
def test_sections_in_order(path):
    nb = _read(path)
    n = _number(path)
    heads = [h for h, _ in _sections(nb)]
    assert heads[0] == "Setup", f"the first section is ## Setup, not {heads[0]!r}"
    assert heads[-3:] == ["Exercises", "Recap", "Solutions"], f"the last sections are {heads[-3:]}"
    numbered = heads[1:-3]
    if numbered and numbered[0] == "The workload":  # a design notebook states its workload first
        numbered = numbered[1:]
    assert numbered, "at least one numbered section"
    for k, head in enumerate(numbered, start=1):
        assert re.match(rf"{n}\.{k} \S", head), f"section {k} is {head!r}; expected '## {n}.{k} ...'"


@nb_param
def test_setup_is_at_most_two_cells_and_prints_the_banner(path):
    nb = _read(path)
    code = [c for c in _between(nb, "Setup", _sections(nb)[1][0]) if c.cell_type == "code"]
    assert 1 <= len(code) <= 2, f"Setup has {len(code)} code cells; at most two (connect, load)"
    first = code[0].source
    assert "import helpers" in first and "helpers.get_db()" in first and "print(helpers.banner())" in first
    assert "nbval-ignore-output" in _tags(code[0]), "the banner depends on the backend: tag it nbval-ignore-output"


def _exercise_ids(nb, n: int) -> list[str]:
    cells = _between(nb, "Exercises", "Recap")
    ids = []
    i = 0
    while i < len(cells):
        c = cells[i]
        m = re.match(r"### Exercise (\d+\.\d+): \S", c.source) if c.cell_type == "markdown" else None
        assert m, f"in ## Exercises, expected '### Exercise {n}.k: title', got {c.source[:60]!r}"
        eid = m.group(1)
        ex, chk = cells[i + 1], cells[i + 2]
        assert ex.cell_type == "code" and _tags(ex) == ["exercise"], f"exercise {eid}: a code cell tagged exercise"
        assert "# your code here" in ex.source and "None" in ex.source
        assert chk.cell_type == "code" and _tags(chk) == ["check"], f"exercise {eid}: then a code cell tagged check"
        call = _check_call(chk.source)
        assert call is not None, f"exercise {eid}: the check cell is one helpers.check(...) call, not {chk.source!r}"
        assert _call_id(call) == eid, f"exercise {eid}: the check is for {_call_id(call)!r}"
        ids.append(eid)
        i += 3
    return ids


@nb_param
def test_exercises_have_one_layout_and_ids_in_order(path):
    nb = _read(path)
    n = _number(path)
    ids = _exercise_ids(nb, n)
    assert ids == [f"{n}.{k}" for k in range(1, len(ids) + 1)], f"exercise ids {ids}"
    assert ids, "every notebook has exercises"
    checks = [c for c in _between(nb, "Exercises", "Recap") if "check" in _tags(c)]
    assert all("not done yet" in _text(c) for c in checks), "in the committed run the checks say 'not done yet'"


@nb_param
def test_solutions_are_last_collapsed_and_hidden(path):
    nb = _read(path)
    n = _number(path)
    ids = _exercise_ids(nb, n)
    heads = dict(_sections(nb))
    heading = nb.cells[heads["Solutions"]]
    assert heading.metadata.get("jp-MarkdownHeadingCollapsed") is True, "## Solutions must be collapsed"
    assert "solution" in _tags(heading), "tag the Solutions heading solution (student copies drop it)"
    cells = _between(nb, "Solutions", None)
    assert len(cells) == 2 * len(ids), "one '### Solution N.k' cell and one solution code cell per exercise"
    for eid, (head, sol) in zip(ids, zip(cells[0::2], cells[1::2])):
        assert head.cell_type == "markdown" and head.source.strip() == f"### Solution {eid}"
        assert "solution" in _tags(head)
        assert sol.cell_type == "code" and _tags(sol) == ["solution"], f"solution {eid}: tag it solution"
        assert sol.metadata.get("jupyter", {}).get("source_hidden") is True, f"solution {eid}: hide its source"
        last = ast.parse(sol.source).body[-1]
        call = _check_call(ast.unparse(last))
        assert call is not None and _call_id(call) == eid, f"solution {eid} ends with helpers.check({eid!r}, ...)"
        assert f"Exercise {eid}: correct." in _text(sol), f"solution {eid} does not print 'correct' in the committed run"
    tagged = {t: sum(t in _tags(c) for c in nb.cells if c.cell_type == "code") for t in ("exercise", "check", "solution")}
    assert tagged == {"exercise": len(ids), "check": len(ids), "solution": len(ids)}, tagged


@nb_param
def test_no_test_plumbing_in_learners_cells(path):
    nb = _read(path)
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        assert not re.search(r"^\s*#\s*NBVAL", c.source, re.M), f"an nbval marker as a comment: use a tag\n{c.source[:80]}"
        assert ".replace(" not in c.source, f"output sanitising goes in notebooks/sanitize.cfg\n{c.source[:80]}"


@nb_param
def test_show_source_shows_public_names(path):
    nb = _read(path)
    for c in nb.cells:
        if c.cell_type != "code" or "show_source" not in c.source:
            continue
        for node in ast.walk(ast.parse(c.source)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "show_source":
                for arg in node.args:
                    names = ast.unparse(arg).split(".")
                    assert not any(n.startswith("_") for n in names), f"show_source of a private name: {ast.unparse(arg)}"



@nb_param
def test_every_listing_is_displayed(path):
    """A ``helpers.show_source(...)`` that is not its cell's last expression shows nothing (IPython
    displays only the last one): it is the last, or is passed to ``display(...)``."""
    nb = _read(path)
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code" or "show_source" not in c.source:
            continue
        body = ast.parse(c.source).body
        for k, stmt in enumerate(body):
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                    and getattr(stmt.value.func, "attr", "") == "show_source"):
                assert k == len(body) - 1, (f"cell {i}: show_source(...) is not the cell's last expression, so its "
                                            f"listing is never shown: wrap it in display(...) or end the cell with it")

@nb_param
def test_drawing_cells_carry_the_one_mark(path):
    nb = _read(path)
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        if c.source.startswith("# extra code"):
            assert c.source.splitlines()[0] == DRAW_MARK, f"the one mark is {DRAW_MARK!r}"
        figures_only = c.outputs and all(o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
                                         for o in c.outputs)
        if figures_only:
            assert c.source.startswith(DRAW_MARK), f"a cell that only draws starts with {DRAW_MARK!r}:\n{c.source[:80]}"


@nb_param
def test_links_point_to_notebooks_that_exist(path):
    nb = _read(path)
    names = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    for c in nb.cells:
        if c.cell_type == "markdown":
            for name in re.findall(r"\b\d\d_[A-Za-z0-9_]+\.ipynb\b", c.source):
                assert name in names, f"{path.name} points to {name}, which does not exist"


@nb_param
def test_a_bill_is_a_contest_whose_pick_says_how_it_was_decided(path):
    """A notebook that weighs a workload into a daily bill (``.weigh(``) shows the contest of every
    measured form (``.contest(``) and prints how its pick was decided (a ``Pick``'s ``.sentence``: a
    tie is said to be one), in the committed run, outside the Solutions."""
    nb = _read(path)
    lesson = [c for c in nb.cells[:dict(_sections(nb))["Solutions"]] if c.cell_type == "code"]
    if not any(".weigh(" in c.source for c in lesson):
        return
    assert any(".contest(" in c.source for c in lesson), f"{path.name} weighs a bill but shows no contest of its forms"
    said = [c for c in lesson if ".sentence" in c.source]
    assert said, f"{path.name} weighs a bill but never prints a pick's sentence"
    assert any(re.search(r"\b(Pick|Tie): ", _text(c)) for c in said), f"{path.name}: no pick's sentence in the outputs"


def test_the_skeleton_test_sees_every_notebook():
    assert NOTEBOOKS and all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name) for p in NOTEBOOKS)


@nb_param
def test_answers_live_only_in_solution_cells(path):
    """A student copy (solution cells dropped) can check an answer without showing it."""
    nb = _read(path)
    kept = [c for c in nb.cells if "solution" not in _tags(c)]
    kept_code = "\n".join(c.source for c in kept if c.cell_type == "code")
    assert not re.search(r"^\s*def _?check\w*\(|_EXPECTED\b|^\s*want\s*=", kept_code, re.M), \
        "a checker or an expected value in a notebook cell: checkers live in their lesson's helpers/<lesson>/checks.py"
    kept_lines = {line.strip() for line in kept_code.splitlines()}
    for sol in (c for c in nb.cells if c.cell_type == "code" and "solution" in _tags(c)):
        answer = "\n".join(ast.get_source_segment(sol.source, n) for n in ast.parse(sol.source).body[:-1])
        for line in answer.splitlines():
            line = line.strip()
            if len(line) > 20 and not line.startswith(("print(", "#")) and not line.endswith(":"):
                assert line not in kept_lines, f"a solution line outside the Solutions section: {line!r}"


@nb_param
def test_nothing_after_the_exercises_uses_an_answer(path):
    nb = _read(path)
    answers = set()
    for c in nb.cells:
        if c.cell_type == "code" and "exercise" in _tags(c):
            for node in ast.walk(ast.parse(c.source)):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    answers.add(node.id)
    start = dict(_sections(nb))["Exercises"]
    for c in nb.cells[start:]:
        if c.cell_type != "code" or {"exercise", "check", "solution"} & set(_tags(c)):
            continue
        used = {n.id for n in ast.walk(ast.parse(c.source)) if isinstance(n, ast.Name)}
        assert not used & answers, f"a cell after the exercises uses an answer: {sorted(used & answers)}"
