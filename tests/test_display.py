"""helpers/display.py: a shown listing is the code that runs, stored once as a Markdown code block."""
from __future__ import annotations

import configparser
import inspect
import re

import pytest

from helpers import display
from helpers.display import SourceListing, show_source
from tools.repo import ROOT


def test_a_listing_is_the_real_source_in_one_python_code_block():
    listing = show_source(display.apply_style)
    source = inspect.getsource(display.apply_style).rstrip()
    assert listing._repr_markdown_() == f"```python\n{source}\n```"
    assert str(listing) == source  # the text is the code, byte for byte
    assert repr(listing) == "<source of helpers.display.apply_style>"  # the stored plain form: a name, no code
    assert not hasattr(listing, "_repr_html_") and not hasattr(listing, "_repr_latex_")  # stored once


def test_several_objects_are_one_listing_in_order():
    listing = show_source(display.apply_style, SourceListing, docstrings="whole")
    assert str(listing) == (inspect.getsource(display.apply_style).rstrip() + "\n\n"
                            + inspect.getsource(SourceListing).rstrip())
    assert repr(listing) == "<source of helpers.display.apply_style, helpers.display.SourceListing>"


def test_a_listing_cuts_each_docstring_to_its_first_sentence_and_keeps_the_code():
    source = inspect.getsource(SourceListing).rstrip()
    listing = str(show_source(SourceListing))
    assert ('"""A helper\'s source as one Markdown code block: JupyterLab, GitHub and VS Code render it as\n'
            '    highlighted Python, and the notebook stores it once, as plain text with no stylesheet. …"""') in listing
    assert "The plain-text form" not in listing and listing.count("\n") < source.count("\n")
    docstring_end = source.index('``notebooks/sanitize.cfg``)."""') + len('``notebooks/sanitize.cfg``)."""')
    assert listing.endswith(source[docstring_end:])  # the code after the docstring, byte for byte
    # a docstring of one sentence stays whole; an abbreviation does not end a sentence
    one = 'def f():\n    """One sentence, e.g. this one."""\n    return 1\n'
    assert display.cut_docstrings(one) == one
    assert display.cut_docstrings('def f():\n    """First. Second."""\n    return 1\n') == \
        'def f():\n    """First. …"""\n    return 1\n'
    assert display.cut_docstrings("def f():\n    '''First\n\n    more.'''\n    return 1\n") == \
        "def f():\n    '''First …'''\n    return 1\n"
    with pytest.raises(ValueError, match="docstrings="):
        show_source(SourceListing, docstrings="none")


def test_a_fence_inside_the_code_gets_a_longer_fence():
    listing = SourceListing('doc = """\n````\n"""\n', ["doc"])
    md = listing._repr_markdown_()
    assert md.startswith("`````python\n") and md.endswith("\n`````") and "\n````\n" in md


def test_notebooks_sanitize_cfg_replaces_exactly_a_listing():
    """nbval ignores a listing (a docstring fix needs no re-run), and nothing else of that shape."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "notebooks" / "sanitize.cfg")
    listing_section, name_section = [s for s in cfg.sections() if s.startswith("shown source")]
    regex, replace = cfg[listing_section]["regex"], cfg[listing_section]["replace"]
    for listing in (show_source(display.apply_style), SourceListing("x = '```'\n", ["x"])):
        assert re.sub(regex, replace, listing._repr_markdown_()) == replace
    assert re.sub(regex, replace, "```python\nx = 1\n```\nand more text") != replace
    # its plain-text form names what is shown: ignored too, so a helper may move between modules
    regex, replace = cfg[name_section]["regex"], cfg[name_section]["replace"]
    assert re.sub(regex, replace, repr(show_source(display.apply_style))) == replace
    assert re.sub(regex, replace, "<source of x> and more") != replace


@pytest.mark.parametrize("demo, size", [("1", 16), ("", 11)])
def test_plots_are_larger_for_a_projector(monkeypatch, demo, size):
    import matplotlib as mpl

    monkeypatch.setenv("WORKBOOK_DEMO", demo)
    saved = dict(mpl.rcParams)
    try:
        display.apply_style()
        assert mpl.rcParams["font.size"] == size and mpl.rcParams["axes.titlesize"] == size + 2
    finally:
        mpl.rcParams.update(saved)


def test_a_dataframe_is_shown_as_a_plain_table_in_a_kernel():
    """No stylesheet before the table: pandas' notebook form stores one with every table."""
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    frame = pd.DataFrame({"design": ["embed", "reference"], "round trips": [1, 2]})
    before = shell.display_formatter.format(frame)[0]["text/html"]
    assert "<style" in before  # pandas' own form, until the workbook's is registered
    assert display.plain_tables(shell)
    html, _ = shell.display_formatter.format(frame)
    assert "<style" not in html["text/html"] and "<table" in html["text/html"] and "reference" in html["text/html"]
    assert html["text/plain"] == repr(frame)
    many = pd.DataFrame({"n": range(500)})  # pandas' display options still cut a long table
    assert "..." in shell.display_formatter.format(many)[0]["text/html"]
