"""Student copies: every notebook without its solutions, outputs cleared.

    python3 workbook.py student-copies [DIR]      # or: python -m tools.student [DIR]

A student copy drops the Solutions section (from its heading to the end of the notebook), every
cell tagged ``solution``, and every cell hidden with ``source_hidden`` among the exercises (an
answer collapsed out of sight is still an answer); the exercise cells and their checks stay, so the
copy runs top to bottom and each check says "not done yet". Headings and tags are matched without
regard to letter case, spacing, numbering or markup: ``## Solutions``, ``### solution``,
``## 9. Solutions``, ``<h2>Solutions</h2>``, one after an anchor or a ``---`` line; tags
``solution``, ``Solution``, ``solutions``. It also drops what could carry an answer unseen: every
output, cell attachments (pasted images), and the widget state kept in the notebook's metadata.

A notebook with exercises whose solutions cannot be found is refused (:class:`StudentCopyError`),
and so is one with an answer folded into a ``<details>`` block (its ``<summary>`` has the word
Solution or Answer in it) before the Solutions section: no copy is written, since a copy that might hold the answers
is worse than none.

A copy's metadata says it is one (``"schema_workbook": {"student_copy": true}``, kept when a learner
runs and saves it). Nothing is written into the notebooks' own folder (links resolved), nor over a
file of a copy's name that is not a student copy (an instructor's notebook, a link): the whole
build is refused first, and only earlier copies are ever replaced. The folder is opened once and must
be the caller's own, writable by nobody else (created 0700 if missing); each copy is written inside the
open folder through a temporary file renamed into place, never through a link (:class:`tools.repo.OutFolder`).
"""
from __future__ import annotations

import copy
import html
import json
import re
import sys
from pathlib import Path

from helpers import private
from tools.repo import NOTEBOOKS, ROOT, OutFolder, notebooks, same_folder

__all__ = ["StudentCopyError", "MARK", "MARK_KEY", "student_copy", "build_student_copies", "is_student_copy",
           "is_solutions_heading", "heading_title"]


#: what a student copy's metadata carries under :data:`MARK_KEY`: how a folder of copies (which a new
#: build replaces) is told from a folder of notebooks (which it never overwrites)
MARK_KEY = "schema_workbook"
MARK = {"student_copy": True}


class StudentCopyError(ValueError):
    """A notebook's solutions cannot be told apart; the message names the notebook and what to do."""


_SOLUTION_WORDS = {"solution", "solutions"}
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]*(.*?)[ \t#]*$")
_HTML_HEADING = re.compile(r"^\s*<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.I | re.S)
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
_ANCHOR = re.compile(r"^\s*(<a\b[^>]*>\s*</a>|<a\b[^>]*/>|<span\b[^>]*>\s*</span>|<div\b[^>]*>\s*</div>)\s*$", re.I)
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*[.):]?|(?:[ivxlc]+|[a-z])[.):])\s+", re.I)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _norm(text: str) -> str:
    """A heading's or a tag's words: no markup, numbering, punctuation or case; spaces collapsed."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    text = re.sub(r"\{#[^}]*\}", " ", text)  # a {#anchor} id
    text = " ".join(re.sub(r"[^\w\s.):]|_", " ", text).split())
    text = _NUMBERING.sub("", text)
    return " ".join(re.sub(r"[^\w ]|_", " ", text).lower().split())


def _headings(source: str) -> list[tuple[int, int, str]]:
    """Every heading of a markdown source: ``(line index, level, title)`` (ATX, setext or HTML)."""
    lines = source.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _ATX.match(line)
        if m:
            out.append((i, len(m.group(1)), m.group(2)))
            continue
        m = _HTML_HEADING.match("\n".join(lines[i:i + 3]))
        if m and line.lstrip().lower().startswith("<h"):
            out.append((i, int(m.group(1)), m.group(2)))
            continue
        if i + 1 < len(lines) and line.strip() and not _RULE.match(line) and _SETEXT.match(lines[i + 1]) \
                and (i == 0 or not lines[i - 1].strip() or _ANCHOR.match(lines[i - 1])):
            out.append((i, 1 if lines[i + 1].strip()[0] == "=" else 2, line))
    return out


def heading_title(title: str) -> str:
    """A heading's title as compared here: ``'## 9. **Solutions**'`` -> ``'solutions'``."""
    return _norm(title)


#: a Solutions heading's whole title, as :func:`heading_title` gives it ("Solution 9.1" too; not
#: "Solution design: embedding", a lesson's own heading)
_SOLUTIONS_TITLE = re.compile(r"^(?:exercises? )?solutions?(?: (?:to|for) (?:the )?exercises?)?(?: \d+)*$")


def _is_solutions_title(title: str) -> bool:
    return bool(_SOLUTIONS_TITLE.match(heading_title(title)))


def _solutions_at(cell: dict) -> int | None:
    """The line where a Solutions heading starts in a markdown cell (anchors and rules just above
    it go with it), or None."""
    if cell.get("cell_type") != "markdown":
        return None
    lines = _source(cell).splitlines()
    for i, _level, title in _headings(_source(cell)):
        if _is_solutions_title(title):
            while i > 0 and (not lines[i - 1].strip() or _ANCHOR.match(lines[i - 1]) or _RULE.match(lines[i - 1])):
                i -= 1
            return i
    return None


def is_solutions_heading(cell: dict) -> bool:
    """True for a markdown cell that holds the heading of the notebook's Solutions section."""
    return _solutions_at(cell) is not None


def _tags(cell: dict) -> set[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return {_norm(t) for t in tags if isinstance(t, str)} if isinstance(tags, list) else set()


def _is_solution_cell(cell: dict) -> bool:
    return bool(_tags(cell) & _SOLUTION_WORDS)


def _is_exercises_heading(cell: dict) -> bool:
    return cell.get("cell_type") == "markdown" and any(
        heading_title(t).split()[:1] in (["exercise"], ["exercises"]) for _i, _l, t in _headings(_source(cell)))


_SUMMARY = re.compile(r"<summary\b[^>]*>(.*?)</summary\s*>", re.I | re.S)
_ANSWER_WORDS = {"solution", "solutions", "answer", "answers"}


def _details_answer(cell: dict) -> bool:
    """A markdown cell with a collapsible ``<details>`` block whose ``<summary>`` has the word
    Solution or Answer in it ("Solution (try it first!)", "Click for the answer"): an answer one
    click away, wherever it stands."""
    return cell.get("cell_type") == "markdown" and "<details" in _source(cell).lower() and any(
        _ANSWER_WORDS & set(heading_title(t).split()) for t in _SUMMARY.findall(_source(cell)))


def _hidden(cell: dict) -> bool:
    jupyter = cell.get("metadata", {}).get("jupyter", {})
    return isinstance(jupyter, dict) and bool(jupyter.get("source_hidden"))


def student_copy(nb: dict, name: str = "the notebook") -> dict:
    """The notebook without its solutions (see the module's docstring), outputs cleared.

    Raises :class:`StudentCopyError` for a notebook with exercises (an Exercises heading, or cells
    tagged ``exercise`` or ``check``) and no Solutions heading or ``solution`` cell to remove.
    """
    out = copy.deepcopy(nb)
    cells = out.get("cells", [])
    cut, keep_lines = len(cells), None
    for i, c in enumerate(cells):
        at = _solutions_at(c)
        if at is not None:
            cut, keep_lines = i, at
            break
    has_exercises = any(_is_exercises_heading(c) or _tags(c) & {"exercise", "exercises", "check"} for c in cells)
    if has_exercises and cut == len(cells) and not any(_is_solution_cell(c) for c in cells):
        raise StudentCopyError(
            f"{name}: it has exercises, but no Solutions heading (e.g. '## Solutions') and no cell tagged "
            f"'solution', so its answers cannot be told apart and no student copy was written. Put the "
            f"solutions under a '## Solutions' heading at the end, each solution cell tagged 'solution'.")
    folded = [i for i, c in enumerate(cells[:cut]) if _details_answer(c)]
    if folded:
        raise StudentCopyError(
            f"{name}: cell {', '.join(str(i + 1) for i in folded)} holds an answer in a <details> block (its "
            f"<summary> says Solution or Answer), before the Solutions section: a student copy would keep it, so "
            f"none was written. Move it under the '## Solutions' heading at the end, in a cell tagged 'solution'.")
    kept = []
    in_exercises = False
    for c in cells[:cut]:
        if _is_exercises_heading(c):
            in_exercises = True
        if _is_solution_cell(c) or (in_exercises and _hidden(c)):
            continue
        kept.append(c)
    if keep_lines:  # the part of the heading's cell above the heading stays
        head = copy.deepcopy(cells[cut])
        head["source"] = "\n".join(_source(head).splitlines()[:keep_lines]).rstrip() + "\n"
        if head["source"].strip():
            kept.append(head)
    for c in kept:
        c.pop("attachments", None)
        if c.get("cell_type") == "code":
            c["outputs"] = []
            c["execution_count"] = None
    out["cells"] = kept
    out.setdefault("metadata", {}).pop("widgets", None)
    out["metadata"][MARK_KEY] = dict(MARK)
    return out


def is_student_copy(nb: object) -> bool:
    """True for a notebook (parsed JSON) that this tool wrote: its metadata carries :data:`MARK`
    (kept when a learner opens, runs and saves it)."""
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    mark = meta.get(MARK_KEY) if isinstance(meta, dict) else None
    return isinstance(mark, dict) and mark.get("student_copy") is True


def _refuse_target(out: OutFolder, src_dir: Path, names: list[str]) -> None:
    """:class:`StudentCopyError` when writing the copies into the open folder ``out`` would overwrite
    anything but student copies: it is the source folder itself, or one of the files it would write is
    there and is not a student copy (a notebook with its solutions, a link, anything else)."""
    if same_folder(out.path, src_dir) or out.holds(src_dir):
        raise StudentCopyError(
            f"{out.path} is the folder of the notebooks themselves ({src_dir.resolve()}): their student copies "
            f"would overwrite them (solutions, outputs, edits), so nothing was written; name another folder "
            f"(the default is student/).")
    for name in names:
        why = None
        try:
            raw = out.read(name)
        except private.Unsafe as e:
            raw, why = None, "a link" if "is a link" in str(e) else str(e)
        if raw is not None:
            try:
                if not is_student_copy(json.loads(raw.decode("utf-8"))):
                    why = f"without the mark this tool writes (metadata {MARK_KEY}: student_copy)"
            except (UnicodeDecodeError, ValueError, RecursionError):
                why = "not a notebook this tool can read"
        if why:
            raise StudentCopyError(
                f"{out.path / name} is not a student copy ({why}), so no copy was written (it would be "
                f"overwritten); name another folder, or move it aside if it is an old copy.")


def build_student_copies(out_dir: Path | str = ROOT / "student", src_dir: Path | str = NOTEBOOKS) -> list[Path]:
    """Write a student copy of every notebook into ``out_dir``; returns their paths.

    Every notebook is checked first: if one cannot be copied safely (:class:`StudentCopyError`),
    none is written; nor is any when ``out_dir`` is the source folder, holds a file of a copy's
    name that is not a student copy (:func:`is_student_copy`): only earlier copies are replaced; or is
    not the caller's own, or may be written by other users (:class:`tools.repo.OutFolder`: the folder is
    opened once and each copy written inside it, never through a link).
    """
    out_dir, src_dir = Path(out_dir), Path(src_dir)
    sources = notebooks(src_dir)
    if same_folder(out_dir, src_dir):  # before the folder is opened (or created)
        raise StudentCopyError(
            f"{out_dir} is the folder of the notebooks themselves ({src_dir.resolve()}): their student copies "
            f"would overwrite them (solutions, outputs, edits), so nothing was written; name another folder "
            f"(the default is student/).")
    with OutFolder(out_dir, StudentCopyError, "student/") as out:
        _refuse_target(out, src_dir, [src.name for src in sources])
        copies = []
        for src in sources:
            nb = json.loads(src.read_text(encoding="utf-8"))
            copies.append((src.name, student_copy(nb, str(src))))
        return [out.write(name, (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
                for name, nb in copies]


if __name__ == "__main__":
    try:
        for path in build_student_copies(*sys.argv[1:2]):
            print("wrote", path)
    except StudentCopyError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
