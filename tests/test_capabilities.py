"""Each engine capability is declared once (helpers/capabilities.py); everything else follows from it.

The probes themselves run on every backend in tests/test_backends.py; these tests need no database.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import pytest

from helpers import capabilities
from helpers.backends import BackendInfo
from helpers.capabilities import CAPABILITIES, Capabilities
from tools.repo import ROOT


def test_the_fields_are_the_declarations_in_order():
    assert [f.name for f in dataclasses.fields(Capabilities)] == [c.name for c in CAPABILITIES]
    assert len({c.name for c in CAPABILITIES}) == len(CAPABILITIES)
    for c in CAPABILITIES:
        assert c.meaning and c.mongodb and c.label and c.embedded[1] and c.mock[1], c.name
        assert ("{value" in c.label) == c.limit, c.name  # a limit's label names the number met


def test_the_unprobed_stub_is_every_capability_missing_but_what_needs_no_round_trip():
    for is_mock in (True, False):
        stub = Capabilities.unprobed(is_mock).as_dict()
        assert stub.pop("indexes") is (not is_mock)
        assert stub == {c.name: None if c.limit else False for c in CAPABILITIES if c.name != "indexes"}


def _info(**caps) -> BackendInfo:
    perfect = {c.name: None if c.limit else True for c in CAPABILITIES}
    return BackendInfo(name="x", engine="Engine9", version="1", database="d", uri=None,
                       caps=Capabilities(**{**perfect, **caps}))


def test_each_missing_capability_gives_its_own_label_and_its_warning():
    assert _info().cannot_show() == [] and _info().warnings() == []
    for c in CAPABILITIES:
        info = _info(**{c.name: 7 if c.limit else False})
        assert info.cannot_show() == [c.label.format(value=7) if c.limit else c.label], c.name
        if c.warning:
            assert info.warnings() == [f"Warning: on Engine9 {c.warning} (docs/ENGINES.md)"]
            assert "\n" not in info.warnings()[0]
        else:
            assert info.warnings() == []
    # a label that only applies where its premise holds: no index, so no "the _id index does not serve a range"
    assert _info(indexes=False, id_range_index=False, explain_regex=False).cannot_show() == [
        capabilities.BY_NAME["indexes"].label]


def test_a_probe_that_raises_finds_its_capability_missing(monkeypatch):
    def broken(p):
        raise NotImplementedError("not in this engine")

    declared = tuple(dataclasses.replace(c, probe=broken) if c.name in ("explain", "graph_max_depth") else c
                     for c in CAPABILITIES)
    monkeypatch.setattr(capabilities, "CAPABILITIES", declared)
    # no throwaway collection is made when no probe asks for one, so no database is needed here
    assert capabilities.probe(None, False, names=("explain", "graph_max_depth")) == {
        "explain": False, "graph_max_depth": None}


def test_the_readme_table_is_written_from_the_declarations():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "capabilities.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for c in CAPABILITIES:
        assert f"(`{c.name}`) | {c.mongodb} | {c.embedded[1]} | {c.mock[1]} |" in readme


def _engines_rows() -> dict[str, list[str]]:
    """docs/ENGINES.md's fidelity rows by the capability their last column names (``caps.<name>``)."""
    text = (ROOT / "docs" / "ENGINES.md").read_text(encoding="utf-8")
    table = text.split("## Fidelity", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("|") and len(cells) == 4:
            for name in re.findall(r"`caps\.(\w+)`", cells[3]):
                assert name not in rows, f"docs/ENGINES.md: two rows name caps.{name}"
                rows[name] = cells
    return rows


@pytest.mark.parametrize("cap", CAPABILITIES, ids=lambda c: c.name)
def test_docs_engines_has_a_row_that_agrees_with_the_declaration(cap):
    """The row naming ``caps.<name>`` says PASS for an engine exactly where the capability declares the
    engine has it (True, or no cap met)."""
    rows = _engines_rows()
    assert cap.name in rows, f"docs/ENGINES.md's fidelity table needs a row naming `caps.{cap.name}`"
    _check, mock_cell, secantus_cell, _how = rows[cap.name]
    for (value, _), cell, engine in ((cap.mock, mock_cell, "mongomock-ng"), (cap.embedded, secantus_cell, "SecantusDB")):
        has_it = value is None if cap.limit else value
        assert cell.startswith("PASS") == has_it, f"docs/ENGINES.md, caps.{cap.name}, {engine}: {cell[:80]!r}"


def test_docs_engines_names_no_capability_that_is_not_declared():
    assert set(_engines_rows()) <= {c.name for c in CAPABILITIES}
