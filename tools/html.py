"""A static, executed HTML build of the notebooks, with an index page.

    python3 workbook.py html [DIR]      # or: python -m tools.html [DIR]
"""
from __future__ import annotations

import sys
from pathlib import Path

from tools.repo import NOTEBOOKS, ROOT, notebooks

__all__ = ["build_html"]


def build_html(out_dir: Path | str = ROOT / "site", src_dir: Path | str = NOTEBOOKS) -> list[Path]:
    """Render every committed (executed) notebook to HTML, with an index page."""
    import nbformat
    from nbconvert import HTMLExporter

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter()
    pages = []
    items = []
    for src in notebooks(src_dir):
        nb = nbformat.read(src, as_version=4)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": src.stem}})
        dest = out_dir / f"{src.stem}.html"
        dest.write_text(body, encoding="utf-8")
        pages.append(dest)
        title = next((c.source.splitlines()[0].lstrip("# ").strip() for c in nb.cells
                      if c.cell_type == "markdown" and c.source.strip()), src.stem)
        items.append(f'<li><a href="{dest.name}">{title}</a></li>')
    index = out_dir / "index.html"
    index.write_text("<!doctype html><meta charset='utf-8'><title>MongoDB schema design, learned by measuring it"
                     "</title><h1>MongoDB schema design, learned by measuring it</h1>"
                     "<p>Executed notebooks, outputs as produced on the embedded backend.</p><ul>"
                     + "".join(items) + "</ul>\n", encoding="utf-8")
    return [index, *pages]


if __name__ == "__main__":
    print(build_html(*sys.argv[1:2])[0])
