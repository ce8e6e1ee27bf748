"""Tests of tools/html.py: the static build."""
from __future__ import annotations

import nbformat
import pytest

from tools import html as html_build
from tools.repo import NOTEBOOKS, notebooks


def test_html_build_has_every_notebook_with_outputs(tmp_path):
    pages = html_build.build_html(tmp_path / "site", NOTEBOOKS)
    assert pages[0].name == "index.html" and len(pages) == len(notebooks()) + 1
    html = pages[1].read_text()
    assert "Backend: embedded" in html  # the outputs are in: the build executes nothing


# --- a small synthetic build: what a notebook holds never becomes markup, a huge output is elided


def _notebook(folder, name, title, outputs=()):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nSome text."),
                nbformat.v4.new_code_cell("print('x')", outputs=list(outputs), execution_count=1)]
    nbformat.write(nb, folder / name)
    return folder / name


def _bytes(folder):
    return {p: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_heading_with_markup_is_escaped_in_the_index(tmp_path):
    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src, "01_evil.ipynb", "<script>alert('x')</script> & <b>bold</b>")
    index = html_build.build_html(tmp_path / "site", src)[0].read_text()
    assert "<script" not in index and "<b>" not in index
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in index


def test_a_huge_output_is_elided_with_a_note(tmp_path):
    src = tmp_path / "nbs"
    src.mkdir()
    huge = nbformat.v4.new_output("stream", name="stdout", text="y" * 3_000_000)
    small = nbformat.v4.new_output("stream", name="stdout", text="a small output stays\n")
    _notebook(src, "01_big.ipynb", "Big", [small, huge])
    pages = html_build.build_html(tmp_path / "site", src)
    page = pages[1].read_text()
    assert "y" * 1000 not in page and "a small output stays" in page
    assert "output elided" in page and "2.9 MiB" in page
    assert len(page.encode()) < 2_000_000 and src.joinpath("01_big.ipynb").stat().st_size > 3_000_000


def test_the_build_never_writes_into_a_folder_of_notebooks(tmp_path):
    import subprocess
    import sys

    from tools.repo import ROOT

    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src, "01_one.ipynb", "One")
    before = _bytes(src)
    (tmp_path / "link").symlink_to(src)
    for target in (src, tmp_path / "link"):
        with pytest.raises(html_build.HtmlBuildError, match="is the folder of the notebooks themselves"):
            html_build.build_html(target, src)
        assert _bytes(src) == before
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>my own page</p>")
    with pytest.raises(html_build.HtmlBuildError, match=r"index\.html was not written by this build"):
        html_build.build_html(site, src)
    assert _bytes(site) == {site / "index.html": b"<p>my own page</p>"}
    (site / "index.html").unlink()
    assert len(html_build.build_html(site, src)) == 2 and len(html_build.build_html(site, src)) == 2  # a rebuild
    done = subprocess.run([sys.executable, "-m", "tools.cli", "html", str(src)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "holds notebooks" in done.stderr
    assert _bytes(src) == before


# --- the output folder is opened once, the caller's own, and each page written inside it without a link
# followed: another user who can write the folder cannot plant a link between the check and the write


def test_an_output_folder_other_users_may_write_is_refused_and_nothing_is_written(tmp_path):
    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src, "01_one.ipynb", "One")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(html_build.HtmlBuildError, match=r"shared.*may be written by other users"):
        html_build.build_html(shared, src)
    assert list(shared.iterdir()) == []


def test_a_link_planted_at_a_pages_name_during_the_render_is_never_followed(tmp_path, monkeypatch):
    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src, "01_one.ipynb", "One")
    before = _bytes(src)
    site = tmp_path / "site"
    elide = html_build.elide_outputs

    def elide_then_plant(nb, *args, **kwargs):  # runs after the target was checked, before any write
        site.mkdir(exist_ok=True)
        for name, victim in (("index.html", "01_one.ipynb"), ("01_one.html", "01_one.ipynb")):
            if not (site / name).is_symlink():
                (site / name).symlink_to(src / victim)
        return elide(nb, *args, **kwargs)

    monkeypatch.setattr(html_build, "elide_outputs", elide_then_plant)
    pages = html_build.build_html(site, src)
    assert _bytes(src) == before  # the notebook the links point at is untouched
    assert [p.is_symlink() for p in pages] == [False, False]
    assert all(html_build.MARK in p.read_text() for p in pages)


# --- outputs and markdown cells are budgeted by their size on the page (escaped), not in the notebook:
# an output of "&" is five times larger once escaped ("&amp;"). Caps lowered so the notebooks stay small.


@pytest.mark.parametrize("each", [6_000, 1_500])  # one output over the cap once escaped; the page's budget
def test_outputs_are_budgeted_by_their_size_on_the_page(tmp_path, monkeypatch, each):
    monkeypatch.setattr(html_build, "OUTPUT_LIMIT", 10_000)
    monkeypatch.setattr(html_build, "PAGE_LIMIT", 50_000)
    src = tmp_path / "nbs"
    src.mkdir()
    outputs = [nbformat.v4.new_output("stream", name="stdout", text="&" * each) for _ in range(20)]
    _notebook(src, "01_amp.ipynb", "Ampersands", outputs)
    page = html_build.build_html(tmp_path / "site", src)[1].read_text()
    assert page.count("&amp;" * 100) * 500 <= 50_000  # the outputs' escaped bytes on the page stay in the budget
    assert "output elided" in page


def test_a_huge_markdown_cell_is_replaced_by_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(html_build, "MARKDOWN_LIMIT", 10_000)
    src = tmp_path / "nbs"
    src.mkdir()
    path = _notebook(src, "01_md.ipynb", "Text")
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("word & " * 3_000))
    nb.cells.append(nbformat.v4.new_markdown_cell("a short cell stays"))
    nbformat.write(nb, path)
    page = html_build.build_html(tmp_path / "site", src)[1].read_text()
    assert "word &amp; word" not in page and "a short cell stays" in page
    assert "markdown cell elided" in page
