#!/usr/bin/env python3
"""Maintainer tool: start a new lesson, with everything the tests ask of one, passing them at once.

    .venv/bin/python scripts/new_notebook.py 09 topic             # write, then run it (embedded engine)
    .venv/bin/python scripts/new_notebook.py 09 topic --no-run    # write only (run scripts/nb.py later)

Writes, from the workbook's skeleton (CONTRIBUTING.md):

* ``notebooks/09_topic.ipynb``: title, You will learn, You need, Setup (the banner cell tagged
  ``nbval-ignore-output``), one numbered section, one exercise with its check, Recap, and the
  collapsed Solutions (tags ``exercise``, ``check``, ``solution``; solution code hidden);
* ``helpers/topic/``, the lesson's folder: ``__init__.py`` (its face: the names the notebook uses,
  its first docstring line naming notebook 09), ``pattern.py`` (the lesson's pattern code) and
  ``checks.py`` (the exercise's checker: it recomputes the answer from the data);
* ``tests/test_topic.py``: the lesson code's tests, run on every backend;

runs the notebook cleanly with ``scripts/nb.py`` (committed outputs), and rewrites the README's
contents (``scripts/toc.py``) and its layout table (``scripts/layout.py``).
The example in each file (documents per kind, counted) is a placeholder: replace it with the lesson.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

FACE = '''"""{title} (notebook {nn}).

The lesson's face: the names notebook {nn} uses, imported from its parts: ``pattern`` (the lesson's
pattern code); ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .pattern import COLLECTION, count_by_kind, load_example

__all__ = ["COLLECTION", "load_example", "count_by_kind"]
'''

LESSON = '''"""{title} (notebook {nn}): the lesson's pattern code.

Shown in ``notebooks/{nn}_{topic}.ipynb`` with ``helpers.show_source`` and tested in
``tests/test_{topic}.py`` on every backend. The example below (documents per kind) is the starter's
placeholder: replace it with the lesson's pattern.
"""
from __future__ import annotations

from typing import Any

from ..safety import workbook_collection

__all__ = ["COLLECTION", "load_example", "count_by_kind"]

#: the lesson's collection (recorded as the workbook's own, so a reset drops it)
COLLECTION = "{topic}_items"


def load_example(db: Any, n: int = 100) -> Any:
    """Write ``n`` example documents (``kind`` "a" or "b" in turn) into :data:`COLLECTION`, replacing
    what it held; return the collection."""
    coll = workbook_collection(db, COLLECTION)
    coll.delete_many({{}})
    coll.insert_many([{{"_id": i, "kind": "ab"[i % 2], "value": i}} for i in range(n)])
    return coll


def count_by_kind(coll: Any) -> dict[str, int]:
    """Documents per ``kind``, counted by the server in one aggregation (one round trip)."""
    pipeline = [{{"$group": {{"_id": "$kind", "n": {{"$sum": 1}}}}}}, {{"$sort": {{"_id": 1}}}}]
    return {{d["_id"]: d["n"] for d in coll.aggregate(pipeline)}}
'''

CHECKS = '''"""Checkers of notebook {nn} ({title_lower})."""
from __future__ import annotations

from typing import Any

{imports}


@exercise("{n}.1", hint="one $group stage on kind, with {{\\"$sum\\": 1}}")
def documents_per_kind(answer: Any, *, items: Any) -> str | None:
    """The answer is ``{{kind: documents}}`` for the collection ``items``, recomputed from it."""
    if not isinstance(answer, dict):
        return f"give a dict of kind -> number of documents, not {{type(answer).__name__}}"
    right = count_by_kind(items)
    if set(answer) != set(right):
        return f"your kinds are {{shown(sorted(answer))}}; the collection has {{len(right)}} kinds"
    wrong = sorted(k for k in right if answer[k] != right[k])
    if wrong:
        return f"the count of kind {{shown(wrong[0])}} is not what the collection holds"
    return None
'''

TEST = '''"""Tests of helpers/{topic}/ (notebook {nn}), on every backend."""
from __future__ import annotations

from helpers import {topic}
from helpers.counting import count_commands
from helpers.exercises import evaluate


def test_count_by_kind_is_one_round_trip(db):
    items = {topic}.load_example(db, n=11)
    with count_commands() as cost:
        assert {topic}.count_by_kind(items) == {{"a": 6, "b": 5}}
    assert cost.round_trips == 1


def test_the_exercise_checker_recomputes_the_answer(db):
    items = {topic}.load_example(db, n=11)
    assert evaluate("{n}.1", {{"a": 6, "b": 5}}, items=items)[0] == "correct"
    assert evaluate("{n}.1", {{"a": 5, "b": 6}}, items=items)[0] == "not right yet"
    assert evaluate("{n}.1", None, items=items)[0] == "not done yet"
'''


def notebook(nn: str, topic: str, title: str) -> Any:
    """The notebook, as ``nbformat`` writes it (imported here: a refusal needs none of it)."""
    import nbformat

    def _md(source: str, **meta: Any) -> Any:
        return nbformat.v4.new_markdown_cell(source, metadata=meta)

    def _code(source: str, **meta: Any) -> Any:
        return nbformat.v4.new_code_cell(source, metadata=meta)

    n = int(nn)
    cells = [
        _md(f"# {nn} · {title}\n\n"
            "**You will learn**\n"
            "- what this lesson measures (replace these three to five bullets);\n"
            "- which design wins, by round trips, documents and bytes;\n"
            "- when the other design is the right one.\n\n"
            "**You need**\n"
            "- `00_start_here.ipynb` (how the workbook measures)."),
        _md("## Setup\nConnect and print the backend banner; write the lesson's example collection and drop the "
            "workbook's other collections."),
        _code("import helpers\ndb = helpers.get_db()\nprint(helpers.banner())", tags=["nbval-ignore-output"]),
        _code(f"from helpers import {topic}\n"
              f"items = {topic}.load_example(db)\n"
              f"_ = helpers.reset_workbook(db, keep=[{topic}.COLLECTION])"),
        _md(f"## {n}.1 The first measurement\n"
            "**Question.** How many documents of each kind, and what does asking cost? One aggregation, "
            "counted:"),
        _code(f"helpers.show_source({topic}.count_by_kind)"),
        _code(f"with helpers.count_commands() as cost:\n"
              f"    counts = {topic}.count_by_kind(items)\n"
              f"print(counts, \"|\", cost.round_trips, \"round trip\")"),
        _md("## Exercises\nEach exercise has a check cell: run it after your answer; it says what is wrong and gives "
            "a hint, without showing the answer."),
        _md(f"### Exercise {n}.1: documents per kind\n"
            "Count the documents of each `kind` in `items` with one aggregation: a dict from kind to count."),
        _code("per_kind = None  # your code here", tags=["exercise"]),
        _code(f'helpers.check("{n}.1", per_kind, items=items)', tags=["check"]),
        _md(f"## Recap\n- The first measurement ({n}.1): one aggregation, one round trip.\n\n"
            "**Next:** the next notebook."),
        _md("## Solutions\nTry each exercise first: its check tells you what is wrong and gives a hint. The solutions "
            "below are hidden; click a cell to show its code. Each one sets the answer and runs the same check.",
            tags=["solution"], **{"jp-MarkdownHeadingCollapsed": True}),
        _md(f"### Solution {n}.1", tags=["solution"]),
        _code('per_kind = {d["_id"]: d["n"] for d in items.aggregate([{"$group": {"_id": "$kind", "n": {"$sum": 1}}}])}\n'
              f'helpers.check("{n}.1", per_kind, items=items)',
              tags=["solution"], jupyter={"source_hidden": True}),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    for cell in nb.cells:
        cell.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb


def _exported_names(init: Path) -> set[str]:
    """The names ``helpers/__init__.py`` exports (its ``__all__``), read without importing it."""
    import ast

    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/new_notebook.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("number", help="two digits, the next notebook's number (e.g. 09)")
    parser.add_argument("topic", help="snake_case: the notebook's name and its lesson module's (e.g. caching)")
    parser.add_argument("--title", help="the notebook's title (default: from the topic)")
    parser.add_argument("--no-run", action="store_true", help="write the files only; run scripts/nb.py yourself")
    args = parser.parse_args(argv)
    nn, topic = args.number, args.topic
    if not re.fullmatch(r"\d\d", nn):
        parser.error(f"the number must be two digits (e.g. 09), not {nn!r}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", topic):
        parser.error(f"the topic must be snake_case (letters, digits, _; e.g. caching), not {topic!r}")
    notebooks = ROOT / "notebooks"
    taken = sorted(p.name for p in notebooks.glob(f"{nn}_*.ipynb"))
    if taken:
        parser.error(f"notebook {nn} exists already ({taken[0]}): take the next free number")
    paths = {
        "notebook": notebooks / f"{nn}_{topic}.ipynb",
        "face": ROOT / "helpers" / topic / "__init__.py",
        "lesson": ROOT / "helpers" / topic / "pattern.py",
        "checks": ROOT / "helpers" / topic / "checks.py",
        "test": ROOT / "tests" / f"test_{topic}.py",
    }
    exported = _exported_names(ROOT / "helpers" / "__init__.py")
    if topic in exported:
        parser.error(f"helpers.{topic} is a name every notebook uses (helpers/__init__.py): a lesson folder of that "
                     f"name would hide it; pick another topic")
    entries = sorted(p.stem for p in (ROOT / "helpers").iterdir() if p.suffix == ".py" or p.is_dir())
    prefixed = [e for e in entries if e != topic and (e.startswith(topic + "_") or topic.startswith(e + "_"))]
    if prefixed:
        parser.error(f"the topic shares a name prefix with helpers/{prefixed[0]}: a lesson's parts go in its "
                     f"folder, so top-level names differ before their first '_'; pick another topic")
    clashes = [ROOT / "helpers" / f"{topic}.py", ROOT / "helpers" / topic, *paths.values()]
    existing = [str(p.relative_to(ROOT)) + ("/" if p.is_dir() else "") for p in clashes if p.exists()]
    if existing:
        parser.error(f"already there: {', '.join(existing)}; pick another topic")
    title = args.title or topic.replace("_", " ").capitalize()
    imports = "from ..exercises import exercise, shown\nfrom . import count_by_kind"
    fields = dict(nn=nn, n=int(nn), topic=topic, title=title, title_lower=title[:1].lower() + title[1:],
                  imports=imports)
    paths["face"].parent.mkdir()
    paths["face"].write_text(FACE.format(**fields), encoding="utf-8")
    paths["lesson"].write_text(LESSON.format(**fields), encoding="utf-8")
    paths["checks"].write_text(CHECKS.format(**fields), encoding="utf-8")
    paths["test"].write_text(TEST.format(**fields), encoding="utf-8")
    import nbformat

    nbformat.write(notebook(nn, topic, title), paths["notebook"])
    for path in paths.values():
        print("wrote", path.relative_to(ROOT))
    if not args.no_run:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "nb.py"), str(paths["notebook"])], check=True)
    for script in ("toc.py", "layout.py"):
        subprocess.run([sys.executable, str(ROOT / "scripts" / script)], check=True)
    print("Next, by hand: the lesson itself (replace the example in the notebook, its folder and its test), "
          "the previous notebook's **Next:** line, and any engine difference it meets (a capability in "
          "helpers/capabilities.py, a row in docs/ENGINES.md).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
