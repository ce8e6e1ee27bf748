"""Tests of helpers/uri.py: the one URI parser, and redaction."""
from __future__ import annotations

import pytest

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


def test_the_database_a_uri_path_names():
    assert uri.database("mongodb://ana:pw@h:27017/schema_workbook_ana_1a2b?authSource=admin") == \
        "schema_workbook_ana_1a2b"
    assert uri.database("mongodb+srv://c0.example.net/mydb") == "mydb"
    for no_db in ("mongodb://h:27017/", "mongodb://h:27017", "mongodb://h/?tls=true", None, "redis://h/0",
                  "not a uri"):
        assert uri.database(no_db) is None


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


# --- every option pymongo treats as sensitive, any delimiter, and unparsable URIs


@pytest.mark.parametrize("option", ["tlsCertificateKeyFilePassword", "proxyPassword", "proxyUsername",
                                    "sslPEMKeyPassword", "TLSCERTIFICATEKEYFILEPASSWORD",
                                    "authMechanismProperties", "secretToken"])
@pytest.mark.parametrize("delim", ["&", ";"])
def test_every_sensitive_option_is_redacted(option, delim):
    raw = f"mongodb://h:27017/?tls=true{delim}{option}=Hunter2Secret{delim}appName=lab"
    shown = uri.redact(raw)
    assert "Hunter2Secret" not in shown
    assert "appName=lab" in shown and "tls=true" in shown  # harmless options stay readable
    assert "Hunter2Secret" in uri.secrets(raw)
    assert "Hunter2Secret" not in uri.scrub(f"error near Hunter2Secret in {raw}", raw)


def test_pymongo_own_sensitive_list_is_covered():
    from pymongo import common

    for option in getattr(common, "SENSITIVE_OPTIONS_FOR_REPR", ()):
        assert "zz-secret" not in uri.redact(f"mongodb://h/?{option}=zz-secret")


def test_an_unknown_option_may_be_credential_text_and_is_hidden():
    raw = "mongodb://h/?retryWrites=true&hunter2&pssword=zz-typo-secret"
    shown = uri.redact(raw)
    assert "hunter2" not in shown and "zz-typo-secret" not in shown and "retryWrites=true" in shown


@pytest.mark.parametrize("raw", ["ana:Hunter2Secret@db.example.net:27017",
                                 "mongodb:/ana:Hunter2Secret@db.example.net",
                                 "mongo://ana:Hunter2Secret@db.example.net",
                                 "  Hunter2Secret  "])
def test_an_unparsable_uri_is_never_echoed(raw):
    shown = uri.redact(raw)
    assert "Hunter2Secret" not in shown
    assert "Hunter2Secret" not in uri.scrub(f"bad: {raw.strip()}", raw)


@pytest.mark.parametrize("text", ["mongodb://alice:pa/ss?word@127.0.0.1:1/?tls=false",
                                 "mongodb://alice:pa/ss?k=v@127.0.0.1:1/",
                                 "mongodb://alice:12/ss?word@127.0.0.1:1/"])
def test_a_password_with_slash_and_question_mark_is_never_shown(text, monkeypatch):
    from helpers import backends
    from helpers.backends import BackendError, connect

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT_MS", 300)  # the message is asserted, not the wait

    shown = uri.redact(text)
    for part in ("pa", "ss", "word", "k=v"):
        assert part not in shown.replace("mongodb", ""), shown
    with pytest.raises(BackendError) as err:
        connect("mongodb", uri=text, db_name="wbtest_x", probe=False)
    for part in ("pa/ss", "?word", "12/ss", "k=v"):
        assert part not in str(err.value), str(err.value)


@pytest.mark.parametrize("text", ["mongodb://alice:12/pw9?tls=v@127.0.0.1:1/",
                                 "mongodb://u:12/s3cret?appName=x@h/"])
def test_a_password_that_reads_as_a_port_a_path_and_an_option_is_never_shown(text):
    """'alice:12/pw9?tls=v' before the '@' reads as host 'alice', port 12, database 'pw9' and an
    option: nothing of it is shown."""
    password = text.split("://", 1)[1].split("@")[0].partition(":")[2]
    assert uri.redact(text) == uri.UNPARSABLE
    assert password not in uri.scrub(f"error: {text}", text)
    for part in password.replace("?", "/").replace("=", "/").split("/"):
        assert part not in uri.scrub(f"error: {text}", text).replace("mongodb", "").replace("error", "")
