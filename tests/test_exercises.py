"""Tests of helpers/exercises.py."""
from __future__ import annotations


def test_a_check_says_not_done_for_unanswered_tuples(capsys, tmp_path, monkeypatch):
    from helpers.exercises import check

    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    assert not check("9.1", (None, None), lambda a: "wrong", hint="h")
    assert not check("9.2", (1, None), lambda a: "half an answer", hint="h")
    out = capsys.readouterr().out
    assert "Exercise 9.1: not done yet" in out and "Exercise 9.2: not right yet: half an answer" in out
