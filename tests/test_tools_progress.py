"""Tests of tools/progress.py (the reader) with helpers/exercises.py's record_progress (the writer)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.exercises import record_progress
from tools import progress
from tools.repo import ROOT


def test_progress_is_recorded_and_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/02_outlier_pattern.ipynb")
    record_progress("2.1", True)
    record_progress("2.2", False)
    assert progress.progress() == {"02_outlier_pattern": {"2.1": True, "2.2": False}}
    env = {**os.environ, "WORKBOOK_PROGRESS": str(tmp_path / "p.json")}
    shown = subprocess.run([sys.executable, "-m", "tools.cli", "progress"], capture_output=True, text=True,
                           env=env, cwd=ROOT).stdout
    assert "02_outlier_pattern: 1/2 exercises pass" in shown


def _record(tmp_path, monkeypatch) -> dict:
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    for session, results in (("notebooks/02_outlier_pattern.ipynb", {"2.1": True, "2.2": False}),
                             ("notebooks/03_tree_patterns.ipynb", {"3.1": True}), ("", {"12.1": True})):
        monkeypatch.setenv("JPY_SESSION_NAME", session)
        for ex, passed in results.items():
            record_progress(ex, passed)
    return {**os.environ, "WORKBOOK_PROGRESS": str(tmp_path / "p.json")}


@pytest.mark.parametrize("which, forgotten", [("02", ["02_outlier_pattern"]), ("2", ["02_outlier_pattern"]),
                                              ("02_outlier_pattern", ["02_outlier_pattern"]),
                                              ("12", ["notebook 12"]), ("05", [])])
def test_reset_forgets_one_notebook_and_keeps_the_others(tmp_path, monkeypatch, which, forgotten):
    _record(tmp_path, monkeypatch)
    before = progress.progress()
    assert progress.reset(which) == forgotten
    assert progress.progress() == {nb: r for nb, r in before.items() if nb not in forgotten}


def test_reset_from_the_command_line(tmp_path, monkeypatch):
    env = _record(tmp_path, monkeypatch)
    run = [sys.executable, "-m", "tools.cli", "progress", "--reset"]
    one = subprocess.run([*run, "03"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert one.returncode == 0 and "Forgot the results of 03_tree_patterns." in one.stdout
    assert "02_outlier_pattern: 1/2 exercises pass" in one.stdout and "03_tree" not in one.stdout.split("\n", 1)[1]
    again = subprocess.run([*run, "03"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert "Nothing to forget: no result recorded for notebook 03." in again.stdout
    every = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT)
    assert every.returncode == 0 and progress.progress() == {} and "No exercise checked yet" in every.stdout
    for wrong in ("../x", ".", "..", "²", "٠٢", "9" * 5000):  # refused with a sentence, never a traceback
        bad = subprocess.run([*run, wrong], capture_output=True, text=True, env=env, cwd=ROOT)
        assert bad.returncode in (0, 2) and "Traceback" not in bad.stderr, wrong
        assert "is not a notebook" in bad.stderr or "Nothing to forget" in bad.stdout, wrong


def test_reset_all_is_not_a_notebook_called_all(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    (tmp_path / "p.json").write_text('{"all": {"1.1": true}, "02_x": {"2.1": true}}')
    env = {**os.environ, "WORKBOOK_PROGRESS": str(tmp_path / "p.json")}
    one = subprocess.run([sys.executable, "-m", "tools.cli", "progress", "--reset", "all"], capture_output=True,
                         text=True, env=env, cwd=ROOT)
    assert one.returncode == 0 and progress.progress() == {"02_x": {"2.1": True}}


def test_a_reset_with_no_record_makes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "new" / "p.json"))
    assert progress.reset() == [] and not (tmp_path / "new").exists()


def test_reset_leaves_a_file_that_is_not_a_record_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    (tmp_path / "p.json").write_text('{"cells": [], "nbformat": 4}')
    with pytest.raises(progress.ProgressError, match="is a notebook"):
        progress.reset()
    assert (tmp_path / "p.json").read_text() == '{"cells": [], "nbformat": 4}'


def test_no_progress_yet_says_where_it_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "none.json"))
    assert progress.progress() == {}
    assert str(tmp_path / "none.json") in progress.report()


# --- a corrupt progress file is a sentence, not a traceback


@pytest.mark.parametrize("content, says", [("{\"02_outlier\": {\"2.1\": tru", "line 1"),
                                           ("[1, 2]", "not {notebook"),
                                           ("{\"02\": {\"2.1\": \"yes\"}}", "not {notebook"),
                                           (b"\xff\xfe garbage", "cannot be read"),
                                           ('{"compilerOptions": {"strict": true}}', "not {notebook"),
                                           ("[" * 200_000, "nested too deeply"),
                                           ('{"a":' * 100_000, "nested too deeply"),
                                           ('{"02": {"2.1": ' + "9" * 5000 + "}}", "not valid JSON"),
                                           (" " * (1024 * 1024 + 1) + "{}", "over the 1 MiB")])
def test_a_corrupt_progress_file_is_explained(tmp_path, monkeypatch, content, says):
    path = tmp_path / "p.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(path))
    with pytest.raises(progress.ProgressError, match=says):
        progress.progress()
    env = {**os.environ, "WORKBOOK_PROGRESS": str(path)}
    done = subprocess.run([sys.executable, "-m", "tools.cli", "progress"], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(path) in done.stderr and "delete it" in done.stderr


def test_a_folder_the_cli_cannot_write_is_a_sentence(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the student copies should go")
    done = subprocess.run([sys.executable, "-m", "tools.cli", "student-copies", str(blocker / "out")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "not_a_folder" in done.stderr


def test_the_class_page_and_report_show_passed_failed_and_not_attempted():
    data = {"databases": {
        "schema_workbook_ana_1a2b": {"0.1": {"passed": True, "attempts": 2, "last": "2026-01-05T10:00:00Z"}},
        "schema_workbook_<b>en_3c4d": {"0.1": {"passed": False, "attempts": 3, "last": "2026-01-05T10:01:00Z"}},
        "schema_workbook_cleo_5e6f": {}}}
    page = progress.class_html(data)
    assert page.count('class="pass"') == 1 and page.count('class="fail"') == 1 and "✗3" in page
    assert "<b>en" not in page and "&lt;b&gt;en" in page  # names are escaped
    assert "<script" not in page and "http" not in page  # self-contained
    text = progress.class_report(data)
    assert "schema_workbook_ana_1a2b: 1 passed, 0 failed" in text and "failed: 0.1 (3 attempts)" in text
    assert "schema_workbook_cleo_5e6f: 0 passed, 0 failed" in text


def test_class_progress_reads_only_well_formed_records(test_uri):
    import datetime as dt
    import uuid

    import pymongo

    from helpers.exercises import record_server_progress
    from helpers.safety import PROGRESS, workbook_collection

    name = f"schema_workbook_wbtest{uuid.uuid4().hex[:8]}"
    client = pymongo.MongoClient(test_uri)
    try:
        db = client[name]
        record_server_progress(db, "2.1", True)
        workbook_collection(db, PROGRESS).insert_many([
            {"_id": "not an id", "passed": True, "attempts": 1},
            {"_id": "2.2", "passed": "yes", "attempts": 1},
            {"_id": "2.3", "passed": False, "attempts": 0},
            {"_id": {"ex": "2.4"}, "passed": True, "attempts": 1, "last": dt.datetime(2026, 1, 5)},
            # made-up exercises, written by a learner into their own database: not on the class's page
            *({"_id": f"9.{n}", "passed": True, "attempts": 1, "last": dt.datetime(2026, 1, 5)} for n in range(50)),
            {"_id": "2.4\n", "passed": True, "attempts": 1, "last": dt.datetime(2026, 1, 5)},
        ])
        rows = progress.class_progress(client)["databases"][name]
        assert list(rows) == ["2.1"] and rows["2.1"]["passed"] is True and rows["2.1"]["attempts"] == 1
    finally:
        client.drop_database(name)
        client.close()


def test_class_progress_never_runs_a_learners_view(test_uri):
    import uuid

    import pymongo

    from helpers.exercises import record_server_progress
    from helpers.safety import PROGRESS, workbook_collection

    name = f"schema_workbook_wbtest{uuid.uuid4().hex[:8]}"
    client = pymongo.MongoClient(test_uri)
    try:
        db = client[name]
        workbook_collection(db, "scores").insert_many([{"_id": "2.1", "n": 0}, {"_id": "2.2", "n": 1}])
        # a view named like the progress record: its pipeline (here one that fails) is never run
        db.command("create", PROGRESS, viewOn="scores", pipeline=[{"$project": {"x": {"$divide": [1, "$n"]}}}])
        assert progress.class_progress(client)["databases"][name] == {}
        other = f"schema_workbook_wbtest{uuid.uuid4().hex[:8]}"
        record_server_progress(client[other], "2.1", True)
        try:
            assert list(progress.class_progress(client)["databases"][other]) == ["2.1"]
        finally:
            client.drop_database(other)
    finally:
        client.drop_database(name)
        client.close()


# --- the reader trusts only a record of the learner's own: never another user's, a link or a FIFO

POSIX = os.name == "posix"


def _progress_cli(path) -> subprocess.CompletedProcess:
    env = {**os.environ, "WORKBOOK_PROGRESS": str(path)}
    return subprocess.run([sys.executable, "-m", "tools.cli", "progress"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=30)


@pytest.mark.skipif(not POSIX or os.geteuid() != 0, reason="another user's file needs root to make")
def test_a_record_written_by_another_user_is_not_shown(tmp_path):
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    path = folder / "p.json"
    path.write_text(json.dumps({"02_outlier_pattern": {"2.1": True, "2.2": True}}))
    os.chown(path, 65534, 65534)
    done = _progress_cli(path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "2/2" not in done.stdout
    assert str(path) in done.stderr and "another user" in done.stderr


@pytest.mark.skipif(not POSIX, reason="FIFOs and symlinks are POSIX")
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_record_that_is_a_fifo_or_a_link_is_a_sentence_not_a_hang(tmp_path, kind):
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    path = folder / "p.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        (tmp_path / "elsewhere.json").write_text(json.dumps({"02_outlier_pattern": {"2.1": True}}))
        path.symlink_to(tmp_path / "elsewhere.json")
    try:
        done = _progress_cli(path)
    except subprocess.TimeoutExpired:
        pytest.fail("workbook.py progress hung on a FIFO")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "1/1" not in done.stdout
    assert str(path) in done.stderr and ("not a regular file" if kind == "fifo" else "link") in done.stderr


# --- class progress reads a bounded amount of what learners wrote, and shows nothing it cannot trust as a pass

def test_class_progress_marks_records_it_cannot_trust(test_uri):
    import datetime as dt
    import uuid

    import pymongo

    from helpers.exercises import exercise_ids, record_server_progress
    from helpers.safety import PROGRESS, workbook_collection

    ids = exercise_ids()
    now = dt.datetime.now(dt.timezone.utc)
    name = f"schema_workbook_wbtest{uuid.uuid4().hex[:8]}"
    client = pymongo.MongoClient(test_uri)
    try:
        db = client[name]
        record_server_progress(db, ids[0], True)  # the one honest record
        good = {"passed": True, "attempts": 1, "last": now - dt.timedelta(hours=1)}
        forged = {  # a learner writes their own database: each of these claims a pass
            ids[1]: {**good, "attempts": "3"},
            ids[2]: {**good, "attempts": 2.5},
            ids[3]: {**good, "attempts": -4},
            ids[4]: {**good, "attempts": True},
            ids[5]: {**good, "last": now + dt.timedelta(days=30)},
            ids[6]: {**good, "last": "2026-01-05T10:00:00Z"},
            ids[7]: {**good, "passed": "yes"},
            ids[8]: {**good, "attempts": 0, "last": None},
        }
        workbook_collection(db, PROGRESS).insert_many([{"_id": ex, **d} for ex, d in forged.items()])
        db[PROGRESS].insert_many([{"_id": "99.1", **good}, {"_id": "not an id", **good}, {"_id": {"ex": ids[9]}, **good}])
        data = progress.class_progress(client)
        assert list(data["databases"][name]) == [ids[0]]  # a pass only where the record can be trusted
        untrusted = data["untrusted"][name]
        assert sorted(untrusted) == sorted(forged)
        for ex in (ids[1], ids[2], ids[3], ids[4]):
            assert "attempts" in untrusted[ex]
        assert "future" in untrusted[ids[5]] and "not a date" in untrusted[ids[6]]
        assert "passed" in untrusted[ids[7]]
        assert "attempts" in untrusted[ids[8]] and "not a date" in untrusted[ids[8]]
        assert data["ignored"][name] == 3
        text = progress.class_report(data)
        line = next(x for x in text.splitlines() if x.startswith(name))
        assert line.startswith(f"{name}: 1 passed, 0 failed, 8 untrusted, {len(ids) - 9} not attempted")
        assert "untrusted, not counted: " in text and "3 records of no exercise with a checker ignored" in text
        page = progress.class_html(data)
        row = page.split(f'title="{name}"', 1)[1].split("</tr>", 1)[0]
        assert row.count('class="pass"') == 1 and row.count('class="untrusted"') == 8 and row.count("✓") == 1
        assert f"<td>1/{len(ids)}</td>" in row
    finally:
        client.drop_database(name)
        client.close()


def test_class_progress_reads_a_bounded_amount_of_each_learners_records(test_uri):
    import datetime as dt
    import uuid

    import bson
    import pymongo
    from pymongo import monitoring

    from helpers.exercises import exercise_ids, record_server_progress
    from helpers.safety import PROGRESS, workbook_collection

    class Replies(monitoring.CommandListener):
        def __init__(self):
            self.database_of, self.bytes, self.documents = {}, 0, 0

        def started(self, event):
            self.database_of[event.request_id] = event.database_name

        def succeeded(self, event):
            if self.database_of.get(event.request_id) == name and event.command_name in ("find", "getMore", "aggregate"):
                self.bytes += len(bson.encode(event.reply))
                cursor = event.reply.get("cursor", {})
                self.documents += len(cursor.get("firstBatch", cursor.get("nextBatch", [])))

        def failed(self, event):
            pass

    ids = exercise_ids()
    name = f"schema_workbook_wbtest{uuid.uuid4().hex[:8]}"
    replies = Replies()
    client = pymongo.MongoClient(test_uri, event_listeners=[replies])
    try:
        db = client[name]
        record_server_progress(db, ids[0], False)
        last = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
        padding = "x" * (2 * 1024 * 1024)  # one 2 MiB record of a real exercise
        workbook_collection(db, PROGRESS).insert_one({"_id": ids[1], "passed": True, "attempts": 1, "last": last,
                                                      "notebook": padding})
        db[PROGRESS].insert_many([{"_id": f"9{n}.1", "passed": True, "attempts": 1, "last": last, "pad": "y" * 1000}
                                  for n in range(3000)])  # and 3,000 made-up exercises (3 MB)
        replies.bytes = replies.documents = 0
        data = progress.class_progress(client)
        assert replies.documents <= len(ids) and replies.bytes < 64 * 1024
        assert list(data["databases"][name]) == [ids[0]] and data["databases"][name][ids[0]]["passed"] is False
        assert "larger than" in data["untrusted"][name][ids[1]]
        assert data["ignored"][name] == progress.MAX_IGNORED  # counted up to a cap, never read
        assert f"at least {progress.MAX_IGNORED} records" in progress.class_report(data)
    finally:
        client.drop_database(name)
        client.close()


@pytest.mark.parametrize("ms", [2 ** 62, -2 ** 62])
def test_a_date_outside_pythons_years_in_a_raw_record_is_untrusted(ms):
    """A real MongoDB stores any int64 date (a learner's ``bson.DatetimeMS(2**62)``): it passes
    ``$type: "date"``, and pymongo's default decoding raises InvalidBSON, which crashed the whole class
    report. (SecantusDB 0.7.0b3 refuses to store such a date, code 2, so the record is built here.)"""
    import datetime as dt

    import bson
    from bson.errors import InvalidBSON

    raw = bson.encode({"_id": "0.1", "passed": True, "attempts": 1, "last": bson.DatetimeMS(ms), "bytes": 90})
    with pytest.raises(InvalidBSON):
        bson.decode(raw)  # what class progress read with before
    doc = bson.decode(raw, codec_options=progress._read_options())
    assert "years 1 to 9999" in progress._distrust(doc, dt.datetime.now(dt.timezone.utc))
    honest = bson.encode({"passed": True, "attempts": 1, "bytes": 90,
                          "last": dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)})
    assert progress._distrust(bson.decode(honest, codec_options=progress._read_options()),
                              dt.datetime.now(dt.timezone.utc)) is None


def test_the_class_listing_reads_only_the_collections_it_needs_by_name(test_uri):
    """A learner may make thousands of collections, or a large validator on workbook_progress: the
    listing of class list and class progress asks for the registry and progress by name only."""
    import uuid

    import bson
    import pymongo
    from pymongo import monitoring

    from helpers.exercises import exercise_ids, record_server_progress
    from helpers.safety import PROGRESS

    class Replies(monitoring.CommandListener):
        def __init__(self):
            self.database_of, self.bytes = {}, 0

        def started(self, event):
            self.database_of[event.request_id] = event.database_name

        def succeeded(self, event):
            if self.database_of.get(event.request_id) == name and event.command_name in ("listCollections", "getMore"):
                self.bytes += len(bson.encode(event.reply))

        def failed(self, event):
            pass

    name = f"schema_workbook_wbtest{uuid.uuid4().hex[:8]}"
    replies = Replies()
    client = pymongo.MongoClient(test_uri, event_listeners=[replies])
    try:
        db = client[name]
        record_server_progress(db, exercise_ids()[0], True)
        db.command("collMod", PROGRESS, validator={"$or": [{f"f{n}": {"$exists": False}} for n in range(20000)]})
        for n in range(30):
            db.create_collection(f"c{n:03d}")
        replies.bytes = 0
        data = progress.class_progress(client)
        assert list(data["databases"][name]) == [exercise_ids()[0]]
        assert 0 < replies.bytes < 4 * 1024
    finally:
        client.drop_database(name)
        client.close()
