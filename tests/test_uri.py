"""Tests of helpers/uri.py: the one URI parser, and redaction."""
from __future__ import annotations

from helpers import uri


def test_parse_splits_the_user_info_at_the_last_at_sign():
    assert uri.parse("mongodb://ana:p@ss/w:rd@h:27017/?authSource=admin") == \
        ("mongodb://", "ana", "p@ss/w:rd", "h:27017/?authSource=admin")
    assert uri.parse("mongodb+srv://ana@c0.example.net/") == ("mongodb+srv://", "ana", None, "c0.example.net/")
    assert uri.parse("mongodb://h:27017/?x=a@b") is None  # an '@' in the query is not user info
    assert uri.parse("postgres://u:p@h/") is None


def test_user_name_is_decoded_and_database_naming_uses_it():
    from helpers.settings import student_db_name

    assert uri.user_name("mongodb+srv://ana.lopez%40uni:pw@c0.example.net/") == "ana.lopez@uni"
    assert uri.user_name("mongodb://h:27017/") is None and uri.user_name(None) is None
    assert student_db_name("mongodb://s07:pw@srv/").startswith("schema_workbook_s07_")


def test_redact_and_scrub_never_show_a_secret():
    raw = "mongodb://teacher:s3cr%21t@h/?authMechanismProperties=AWS_SESSION_TOKEN:tok123"
    shown = uri.redact(raw)
    assert "s3cr" not in shown and "tok123" not in shown and shown.startswith("mongodb://teacher:****@h/")
    assert uri.scrub("failed for s3cr!t and s3cr%21t", raw) == "failed for **** and ****"
    assert uri.scrub("pw is x", "mongodb://u:x@h/") == "details hidden: they would show the password"


def test_redis_urls_are_redacted_the_same_way():
    assert uri.redact("redis://:s3cret@h:6379/0") == "redis://:****@h:6379/0"
    assert uri.redact("rediss://default:s3cret@cache.example.net:6380/0") == \
        "rediss://default:****@cache.example.net:6380/0"
    assert uri.redact("redis://localhost:6379/0") == "redis://localhost:6379/0"
    assert uri.scrub("AUTH s3cret failed", "redis://:s3cret@h/") == "AUTH **** failed"
