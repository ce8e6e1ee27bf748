"""Classroom kit: a database per student, the instructor's list and drop, student copies, progress."""
from __future__ import annotations

import json
import os
import re
import uuid
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from helpers import classroom, settings
from helpers.backends import connect
from helpers.safety import workbook_collection

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_student_database_names_need_no_setup():
    a = classroom.student_db_name(None, user="Ana María", host="lab-pc-01")
    b = classroom.student_db_name(None, user="Ana María", host="lab-pc-02")
    assert a.startswith("schema_workbook_ana_mar") and a != b  # shared login, two machines
    assert classroom.student_db_name(None, user="Ana María", host="lab-pc-01") == a  # stable
    s07 = classroom.student_db_name("mongodb://s07:pw@srv:27017/")
    assert s07.startswith("schema_workbook_s07_") and len(s07) == len("schema_workbook_s07_") + 4
    assert classroom.student_db_name("mongodb+srv://ana.lopez%40uni:p@ss@c0.example.net/").startswith(
        "schema_workbook_ana_lopez_uni_")
    # names that slug alike still get their own databases
    assert classroom.student_db_name("mongodb://Ana:x@h/") != classroom.student_db_name("mongodb://ana:x@h/")
    assert classroom.student_db_name(None, user="ana.lopez", host="pc") != \
        classroom.student_db_name(None, user="ana_lopez", host="pc")


def test_server_backend_defaults_to_the_students_own_database(monkeypatch, test_uri):
    monkeypatch.delenv("WORKBOOK_DB", raising=False)
    # a made-up login, so the test never touches the real learner's database on a real server
    login = f"wbtest{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(settings, "_os_user", lambda: login)  # database naming: helpers.settings
    uri = re.sub(r"^(mongodb(?:\+srv)?://)[^@/?]*@", r"\1", test_uri)  # no user in the URI either
    expected = settings.student_db_name(uri)
    conn = connect("mongodb", uri=uri)
    try:
        assert conn.db.name == expected and conn.info.database == expected
    finally:
        conn.client.drop_database(expected)  # made up above, so it is this test's own
        conn.close()


def test_instructor_lists_and_drops_only_what_the_workbook_created(test_uri):
    conn = connect("mongodb", uri=test_uri, db_name=f"wbtest_{uuid.uuid4().hex[:10]}")
    client = conn.client
    tag = uuid.uuid4().hex[:8]  # fresh names: the test only ever drops databases it created
    alice, bob = f"schema_workbook_wbtest{tag}_alice", f"schema_workbook_wbtest{tag}_bob"
    lookalike, other = f"schema_workbook_wbtest{tag}_lookalike", f"wbtest_{tag}_other"
    mine = [alice, bob, lookalike, other]
    assert not set(mine) & set(client.list_database_names())
    try:
        for n in (alice, bob):
            workbook_collection(client[n], "posts").insert_one({"_id": 1, "by": n})
        client[bob]["bobs_own_notes"].insert_one({"_id": 1})  # a student's own collection
        client[lookalike]["x"].insert_one({"_id": 1})  # the prefix, but not the workbook's
        client[other]["keep"].insert_one({"_id": 1})
        listed = {d["database"]: d for d in classroom.workbook_databases(client)}
        assert {alice, bob} <= set(listed) and lookalike not in listed
        assert listed[alice]["collections"] == 1 and listed[alice]["data bytes"] > 0
        with pytest.raises(ValueError, match="left alone"):
            classroom.drop_workbook_databases(client, [lookalike])
        report = classroom.drop_workbook_databases(client, [alice, bob])
        assert report == {alice: [], bob: ["bobs_own_notes"]}
        remaining = set(client.list_database_names())
        assert alice not in remaining and {bob, lookalike, other} <= remaining
        assert client[bob].list_collection_names() == ["bobs_own_notes"]
    finally:
        for n in mine:
            client.drop_database(n)
        conn.close()


def test_student_copy_drops_solutions_only():
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "x"},
        {"cell_type": "code", "metadata": {"tags": ["exercise"]}, "source": "a = None", "outputs": [], "execution_count": 1},
        {"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": "a = 1", "outputs": [], "execution_count": 2},
        {"cell_type": "code", "metadata": {}, "source": "check(a)", "outputs": [{"output_type": "stream"}], "execution_count": 3},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    out = classroom.student_copy(nb)
    assert [c["source"] for c in out["cells"]] == ["x", "a = None", "check(a)"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in out["cells"] if c["cell_type"] == "code")
    assert len(nb["cells"]) == 4  # the source is untouched


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_student_copy_runs_top_to_bottom_with_exercises_not_done(path, tmp_path, monkeypatch):
    out = classroom.build_student_copies(tmp_path / "student", ROOT / "notebooks")
    copy = next(p for p in out if p.name == path.name)
    nb = nbformat.read(copy, as_version=4)
    n_exercises = sum("exercise" in c.metadata.get("tags", []) for c in nb.cells)
    monkeypatch.setenv("WORKBOOK_BACKEND", "mock")
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("CI", "true")
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()  # raises on an error
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert text.count("not done yet") >= n_exercises >= 1
    assert ": correct." not in text
    recorded = json.loads((tmp_path / "progress.json").read_text())
    assert recorded and not any(any(v.values()) for v in recorded.values())


def test_progress_is_recorded_and_reported(tmp_path, monkeypatch):
    from helpers.exercises import check

    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/02_outlier_pattern.ipynb")
    assert check("2.1", 5, lambda a: None if a == 5 else "no", hint="h")
    assert not check("2.2", None, lambda a: None, hint="h")
    assert classroom.progress() == {"02_outlier_pattern": {"2.1": True, "2.2": False}}
    env = {**os.environ, "WORKBOOK_PROGRESS": str(tmp_path / "p.json")}
    shown = subprocess.run([sys.executable, "-m", "helpers.cli", "progress"], capture_output=True, text=True,
                           env=env, cwd=ROOT).stdout
    assert "02_outlier_pattern: 1/2 exercises pass" in shown


def test_html_build_has_every_notebook_with_outputs(tmp_path):
    pages = classroom.build_html(tmp_path / "site", ROOT / "notebooks")
    assert pages[0].name == "index.html" and len(pages) == len(NOTEBOOKS) + 1
    html = pages[1].read_text()
    assert "Backend: embedded" in html  # the outputs are in: the build executes nothing


def test_docker_compose_runs_mongo_and_the_workbook_as_the_readme_says():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["mongo"]["image"].startswith("mongo:8.")
    wb = services["workbook"]
    assert wb["environment"]["MONGODB_URI"] == "mongodb://mongo:27017"
    assert wb["command"][:3] == ["python", "workbook.py", "lab"]
    assert wb["depends_on"]["mongo"]["condition"] == "service_healthy"
    readme = (ROOT / "README.md").read_text()
    assert "docker compose up workbook" in readme and "docker compose up -d mongo" in readme


def test_thirty_students_at_once_lose_nothing_and_never_cross(test_uri):
    """Thirty simulated students on one server (a SecantusDB process started for the tests)."""
    report = classroom.simulate_class(test_uri, students=30, posts=2, comments=15, threshold=5)
    assert report["problems"] == []
    assert report["operations"] == 30 * 2 * 15
    print(f"\nclass load test: {report}")


def test_a_check_says_not_done_for_unanswered_tuples(capsys, tmp_path, monkeypatch):
    from helpers.exercises import check

    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    assert not check("9.1", (None, None), lambda a: "wrong", hint="h")
    assert not check("9.2", (1, None), lambda a: "half an answer", hint="h")
    out = capsys.readouterr().out
    assert "Exercise 9.1: not done yet" in out and "Exercise 9.2: not right yet: half an answer" in out
