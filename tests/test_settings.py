"""Tests of helpers/settings.py: the one reader of the environment, and the defaults."""
from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from helpers import datasets, settings
from helpers.backends import connect


def test_student_database_names_need_no_setup():
    a = settings.student_db_name(None, user="Ana María", host="lab-pc-01")
    b = settings.student_db_name(None, user="Ana María", host="lab-pc-02")
    assert a.startswith("schema_workbook_ana_mar") and a != b  # one login name, two machines
    assert settings.student_db_name(None, user="Ana María", host="lab-pc-01") == a  # stable
    s07 = settings.student_db_name("mongodb://s07:pw@srv:27017/", user="ana", host="pc01")
    assert s07 == "schema_workbook_s07_ana_" + s07[-6:] and len(s07) == len("schema_workbook_s07_ana_") + 6
    assert settings.student_db_name("mongodb+srv://ana.lopez%40uni:p@ss@c0.example.net/").startswith(
        "schema_workbook_ana_lopez_uni_")
    # names that slug alike still get their own databases
    assert settings.student_db_name("mongodb://Ana:x@h/") != settings.student_db_name("mongodb://ana:x@h/")
    assert settings.student_db_name(None, user="ana.lopez", host="pc") != \
        settings.student_db_name(None, user="ana_lopez", host="pc")


def test_learners_who_share_a_server_login_never_share_a_database():
    shared = "mongodb://student:pw@lab-server:27017/"
    ana = settings.student_db_name(shared, user="ana", host="pc01")
    ben = settings.student_db_name(shared, user="ben", host="pc02")
    same_name = settings.student_db_name(shared, user="student", host="pc01")
    other_pc = settings.student_db_name(shared, user="student", host="pc02")
    assert len({ana, ben, same_name, other_pc}) == 4
    assert ana.startswith("schema_workbook_student_ana_") and ben.startswith("schema_workbook_student_ben_")
    # a login made for one database (class logins) names it in the URI's path: that database, on every machine
    own = settings.login_db_name("ana")
    uri = f"mongodb://ana:pw@lab-server:27017/{own}?authSource=admin"
    assert settings.student_db_name(uri, user="x", host="pc01") == own == \
        settings.student_db_name(uri, user="y", host="pc02")
    # a shared class URI whose path is a workbook database of another name is not a login's own: one each
    shared_path = "mongodb://student:pw@lab-server:27017/schema_workbook_class?authSource=admin"
    assert len({settings.student_db_name(shared_path, user=u, host=h) for u, h in (("ana", "pc01"), ("ben", "pc02"))}) == 2
    assert settings.student_db_name(f"mongodb://ben:pw@lab-server:27017/{own}?authSource=admin", user="ben",
                                    host="pc02") != own  # ana's database in ben's URI
    # any other path (an Atlas URI's /test, /admin) is only where the driver authenticates: not the database
    assert settings.student_db_name("mongodb://ana:pw@h/admin", user="ana", host="pc01") == \
        settings.student_db_name("mongodb://ana:pw@h/", user="ana", host="pc01")


@pytest.mark.parametrize("name", ["admin", "Admin", "ADMIN", "Local", "CONFIG", "config"])
def test_reserved_database_names_are_refused_in_any_letter_case(monkeypatch, name):
    from helpers.backends import BackendError

    monkeypatch.setenv("WORKBOOK_DB", name)
    with pytest.raises(BackendError, match="not admin, local or config in any letter case"):
        connect("mock")


def test_server_backend_defaults_to_the_students_own_database(monkeypatch, test_uri):
    monkeypatch.delenv("WORKBOOK_DB", raising=False)
    # a made-up login, so the test never touches the real learner's database on a real server
    login = f"wbtest{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(settings, "_os_user", lambda: login)
    uri = re.sub(r"^(mongodb(?:\+srv)?://)[^@/?]*@", r"\1", test_uri)  # no user in the URI either
    expected = settings.student_db_name(uri)
    conn = connect("mongodb", uri=uri)
    try:
        assert conn.db.name == expected and conn.info.database == expected
    finally:
        conn.client.drop_database(expected)  # made up above, so it is this test's own
        conn.close()


def test_every_variable_is_read_here_with_its_default(monkeypatch, tmp_path):
    for var in (*settings.VARIABLES, "CI", "REDIS_URL"):
        monkeypatch.delenv(var, raising=False)
    assert settings.backend() == "auto" and settings.mongodb_uri() is None
    assert settings.database_override() is None and settings.database_name(on_server=False) == "schema_workbook"
    assert settings.scale() is None and settings.datasets_folder() is None and settings.demo() is False
    assert settings.progress_file() == Path.home() / ".schema_workbook" / "progress.json"
    assert settings.progress_bars() is True and settings.redis_url() is None
    monkeypatch.setenv("WORKBOOK_BACKEND", " Mock ")
    monkeypatch.setenv("MONGODB_URI", " mongodb://h:27017 ")
    monkeypatch.setenv("WORKBOOK_DB", "mine")
    monkeypatch.setenv("WORKBOOK_SCALE", "full")
    monkeypatch.setenv("WORKBOOK_DATASETS", str(tmp_path))
    monkeypatch.setenv("WORKBOOK_DEMO", "yes")
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("REDIS_URL", "redis://localhost:6379/0")
    assert settings.backend() == "mock" and settings.mongodb_uri() == "mongodb://h:27017"
    assert settings.database_name(on_server=True, uri="mongodb://ana:pw@h/") == "mine"
    assert settings.scale() == "full" and settings.datasets_folder() == tmp_path and settings.demo() is True
    assert settings.progress_file() == tmp_path / "p.json" and settings.progress_bars() is False
    assert settings.redis_url() == "redis://localhost:6379/0"


@pytest.mark.parametrize("env, lesson_default, expected", [
    (None, 3, 3),            # unset: the lesson's own small
    ("small", 3, 3),         # the documented default means the same (notebook 03: 3 categories, not 10)
    ("full", 3, "full"),     # an instructor's demo
    ("25", 3, 25),           # a number of parent records
    ("small", 1_000, 1_000),
])
def test_one_scale_rule(monkeypatch, env, lesson_default, expected):
    if env is None:
        monkeypatch.delenv("WORKBOOK_SCALE", raising=False)
    else:
        monkeypatch.setenv("WORKBOOK_SCALE", env)
    assert datasets.lesson_scale(lesson_default) == expected


def test_a_bad_scale_names_the_variable(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SCALE", "huge")
    with pytest.raises(datasets.DatasetError, match="WORKBOOK_SCALE"):
        datasets.lesson_scale(3)


def test_a_relative_progress_file_is_the_same_for_a_kernel_and_for_the_progress_command(tmp_path, monkeypatch):
    """A kernel runs in notebooks/, ``workbook.py progress`` at the repository's root: a relative
    ``WORKBOOK_PROGRESS`` is taken from the repository's root for both; ``~`` is the home folder."""
    root = Path(settings.__file__).resolve().parent.parent
    monkeypatch.setenv("WORKBOOK_PROGRESS", "my_progress/p.json")
    seen = []
    for cwd in (root / "notebooks", root, tmp_path):
        monkeypatch.chdir(cwd)
        seen.append(settings.progress_file())
    assert seen == [root / "my_progress" / "p.json"] * 3
    monkeypatch.setenv("WORKBOOK_PROGRESS", "~/p.json")
    assert settings.progress_file() == Path.home() / "p.json"


@pytest.mark.parametrize("value", ["9" * 5000, " " + "1" * 4301 + " ", "0" * 4990 + "1" * 19])
def test_a_scale_of_thousands_of_digits_gets_the_workbooks_sentence(monkeypatch, value):
    # Python's own int() refuses more than 4,300 digits with a ValueError of its own: the sentence
    # must still name the variable and the values allowed, and not echo the 5,000 digits
    monkeypatch.setenv("WORKBOOK_SCALE", value)
    with pytest.raises(datasets.DatasetError) as raised:
        datasets.lesson_scale(3)
    said = str(raised.value)
    assert "WORKBOOK_SCALE" in said and "'full'" in said and len(said) < 400, said


def test_a_scale_argument_of_thousands_of_digits_gets_the_workbooks_sentence():
    from helpers.datasets.catalogue import check_scale

    for value in ("9" * 5000, 10 ** 5000):
        with pytest.raises(datasets.DatasetError) as raised:
            check_scale(value)
        said = str(raised.value)
        assert "scale" in said and "'full'" in said and len(said) < 400, said


def test_leading_zeros_do_not_count_against_a_scale(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SCALE", "0" * 4999 + "7")
    assert datasets.lesson_scale(3) == 7
