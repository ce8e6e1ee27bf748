"""Tests of tools/html.py: the static build."""
from __future__ import annotations

from tools import html as html_build
from tools.repo import NOTEBOOKS, notebooks


def test_html_build_has_every_notebook_with_outputs(tmp_path):
    pages = html_build.build_html(tmp_path / "site", NOTEBOOKS)
    assert pages[0].name == "index.html" and len(pages) == len(notebooks()) + 1
    html = pages[1].read_text()
    assert "Backend: embedded" in html  # the outputs are in: the build executes nothing
