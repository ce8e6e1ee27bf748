"""A static, executed HTML build of the notebooks, with an index page.

    python3 workbook.py html [DIR]      # or: python -m tools.html [DIR]

Each page is the notebook as committed (its outputs as produced; nothing is run). An output over
:data:`OUTPUT_LIMIT` (its size on the page: its JSON, images included, escaped as the page holds it, so
``&`` counts five bytes), or any output once a page's outputs reach :data:`PAGE_LIMIT`, is replaced by a
note saying it was elided and how large it was; so is a markdown cell over :data:`MARKDOWN_LIMIT`. The
index lists each notebook by its first heading, escaped (a heading is text, never markup).

The build writes only into a folder of its own: never into the notebooks' folder (links resolved),
nor into one that holds notebooks, nor over a file of a page's name that an earlier build did not
write (each page carries :data:`MARK`), nor into a folder that is not the caller's own or that other
users may write; it refuses the whole build first (:class:`HtmlBuildError`). The folder is opened once
(created 0700 if missing) and each page written inside it through a temporary file renamed into place,
never through a link (:class:`tools.repo.OutFolder`).
"""
from __future__ import annotations

import copy
import html
import json
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from helpers import private
from helpers.sizes import human_bytes
from tools.repo import NOTEBOOKS, ROOT, OutFolder, notebooks, same_folder

__all__ = ["HtmlBuildError", "OUTPUT_LIMIT", "PAGE_LIMIT", "MARKDOWN_LIMIT", "MARK", "build_html", "elide_outputs"]

#: the largest output copied into a page (bytes of its JSON once escaped for the page; the notebooks' largest
#: figure is about 100 KiB)
OUTPUT_LIMIT = 512 * 1024
#: the most output bytes copied into one page; later outputs are elided
PAGE_LIMIT = 8 * 1024 * 1024
#: the largest markdown cell copied into a page (bytes, escaped, its attachments included); a larger one is a note
MARKDOWN_LIMIT = 512 * 1024
#: in the first line of every file the build writes (after the doctype): what tells an earlier build's page
MARK = "<!-- written by workbook.py html (tools/html.py) -->"
TITLE = "MongoDB schema design, learned by measuring it"


class HtmlBuildError(ValueError):
    """The output folder is not one to write the build into; the message names it and what to do."""


def _note(size: int, why: str) -> Any:
    import nbformat

    return nbformat.v4.new_output("stream", name="stdout", text=(
        f"[output elided from this page: {human_bytes(size)}, {why}; run the notebook to see it]\n"))


def _page_size(text: str) -> int:
    """What ``text`` takes on a page, escaped as the page holds text (``&`` is ``&amp;``), in UTF-8 bytes."""
    return len(html.escape(text).encode("utf-8"))


def _markdown_note(size: int, limit: int) -> str:
    return (f"*[markdown cell elided from this page: {human_bytes(size)}, over the {human_bytes(limit)} a cell "
            f"may take here; open the notebook to read it]*")


def elide_outputs(nb: Any, limit: int | None = None, page_limit: int | None = None,
                  markdown_limit: int | None = None) -> tuple[Any, int]:
    """A copy of notebook ``nb`` (an nbformat node) whose outputs over ``limit`` bytes, and every
    output once the page holds ``page_limit`` bytes of them, are a note saying so, as is a markdown cell
    over ``markdown_limit``; and how many were elided. Sizes are as on the page: the output's or the
    cell's JSON, escaped (:func:`_page_size`). The limits default to :data:`OUTPUT_LIMIT`,
    :data:`PAGE_LIMIT` and :data:`MARKDOWN_LIMIT`."""
    limit = OUTPUT_LIMIT if limit is None else limit
    page_limit = PAGE_LIMIT if page_limit is None else page_limit
    markdown_limit = MARKDOWN_LIMIT if markdown_limit is None else markdown_limit
    out = copy.deepcopy(nb)
    total = elided = 0
    for cell in out.cells:
        if cell.get("cell_type") == "markdown":
            size = _page_size(json.dumps([cell.get("source", ""), cell.get("attachments", {})], ensure_ascii=False))
            if size > markdown_limit:
                cell.source = _markdown_note(size, markdown_limit)
                cell.pop("attachments", None)
                elided += 1
            continue
        if cell.get("cell_type") != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            size = _page_size(json.dumps(output, ensure_ascii=False))
            if size > limit:
                kept.append(_note(size, f"over the {human_bytes(limit)} an output may take here"))
                elided += 1
            elif total + size > page_limit:
                kept.append(_note(size, f"after {human_bytes(total)} of outputs on this page"))
                elided += 1
            else:
                total += size
                kept.append(output)
        cell.outputs = kept
    return out, elided


def _refuse_target(out: OutFolder, src_dir: Path, names: list[str]) -> None:
    if out.holds(src_dir):
        raise HtmlBuildError(f"{out.path} is the folder of the notebooks themselves ({src_dir.resolve()}), so "
                             f"nothing was written; name a folder of the build's own (the default is site/).")
    held = [n for n in out.names() if n.endswith(".ipynb")]
    if held:
        raise HtmlBuildError(f"{out.path} holds notebooks ({', '.join(held[:3])}{', ...' if len(held) > 3 else ''}), "
                             f"so nothing was written; name a folder of the build's own (the default is site/).")
    for name in names:
        try:
            page = out.read(name)
        except private.Unsafe:
            page = b""  # a link, a folder, a FIFO, another user's file
        if page is not None and MARK.encode() not in page[:4096]:
            raise HtmlBuildError(f"{out.path / name} was not written by this build (a link, a folder, or a page "
                                 f"without its mark), so nothing was written; name another folder, or move it aside.")


def build_html(out_dir: Path | str = ROOT / "site", src_dir: Path | str = NOTEBOOKS) -> list[Path]:
    """Render every committed (executed) notebook to HTML, with an index page (module docstring)."""
    import nbformat
    from nbconvert import HTMLExporter

    out_dir, src_dir = Path(out_dir), Path(src_dir)
    sources = notebooks(src_dir)
    if same_folder(out_dir, src_dir):  # before the folder is opened (or created)
        raise HtmlBuildError(f"{out_dir} is the folder of the notebooks themselves ({src_dir.resolve()}), so "
                             f"nothing was written; name a folder of the build's own (the default is site/).")
    with OutFolder(out_dir, HtmlBuildError, "site/") as out:
        _refuse_target(out, src_dir, ["index.html", *(f"{src.stem}.html" for src in sources)])
        exporter = HTMLExporter()
        rendered = []
        items = []
        for src in sources:
            nb, _ = elide_outputs(nbformat.read(src, as_version=4))
            body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": src.stem}})
            doctype, newline, rest = body.partition("\n")
            body = f"{doctype}{MARK}{newline}{rest}" if doctype.lower().startswith("<!doctype") else MARK + body
            name = f"{src.stem}.html"
            rendered.append((name, body))
            title = next((c.source.splitlines()[0].lstrip("# ").strip() for c in nb.cells
                          if c.cell_type == "markdown" and c.source.strip()), src.stem)
            items.append(f'<li><a href="{html.escape(urllib.parse.quote(name))}">{html.escape(title)}</a></li>')
        pages = [out.write(name, body.encode("utf-8")) for name, body in rendered]
        index = out.write("index.html", (
            f"<!doctype html>{MARK}\n<meta charset='utf-8'><title>{TITLE}</title><h1>{TITLE}</h1>"
            "<p>Executed notebooks, outputs as produced on the embedded backend.</p><ul>"
            + "".join(items) + "</ul>\n").encode("utf-8"))
    return [index, *pages]


if __name__ == "__main__":
    try:
        print(build_html(*sys.argv[1:2])[0])
    except HtmlBuildError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
