"""MongoDB connection strings (and notebook 07's Redis URLs): the one parser, and redaction (no password is ever shown).

Introduced in notebook 00 (the banner shows the server's URI, redacted). ``helpers.backends`` uses
it to show and scrub a URI, ``helpers.settings`` to name a student's database after the login, and
``helpers.redis_backend`` to show and scrub ``REDIS_URL`` (``redis://`` and ``rediss://`` URLs carry
their password in the same user-info part).
"""
from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote

__all__ = ["UriParts", "parse", "user_name", "redact", "secrets", "scrub"]

#: MongoDB connection strings, and Redis URLs (notebook 07's ``REDIS_URL``): the same user-info syntax
_SCHEME = re.compile(r"^((?:mongodb(?:\+srv)?|rediss?)://)", re.I)
_SECRET_OPTIONS = re.compile(r"(?i)((?:^|[?&])(?:password|secret|token|authMechanismProperties)[^=&]*=)[^&]*")


class UriParts(NamedTuple):
    """A URI's user info, split off the rest: scheme, user (as written), password or None, rest."""

    scheme: str
    user: str
    password: str | None
    rest: str


def parse(uri: str) -> UriParts | None:
    """The URI's user info, or None when it has none (or is not a ``mongodb://`` or ``redis://`` URI).

    The user info ends at the *last* '@' before the query: a password may itself contain
    unescaped '@', '/' or ':' (pymongo then refuses the URI, and the error must not show it).
    """
    uri = uri.strip()
    m = _SCHEME.match(uri)
    if not m:
        return None
    rest = uri[m.end():]
    query = rest.find("?")
    at = rest.rfind("@", 0, query if query >= 0 else len(rest))
    if at < 0:
        return None
    userinfo, after = rest[:at], rest[at + 1:]
    user, sep, password = userinfo.partition(":")
    return UriParts(m.group(1), user, password if sep else None, after)


def user_name(uri: str | None) -> str | None:
    """The login name in ``uri`` (percent-decoded), or None when the URI carries none."""
    parts = parse(uri or "")
    if parts is None or not parts.user:
        return None
    return unquote(parts.user)


def redact(uri: str) -> str:
    """The URI with any password replaced by ``****`` (and secret query options too)."""
    uri = uri.strip()
    parts = parse(uri)
    if parts is not None and parts.password is not None:
        uri = f"{parts.scheme}{parts.user}:****@{parts.rest}"
    return _SECRET_OPTIONS.sub(r"\1****", uri)


def secrets(uri: str) -> list[str]:
    """Every secret in ``uri`` (password, secret options), as written and decoded, longest first."""
    parts = parse(uri)
    found = []
    if parts is not None and parts.password:
        found += [parts.password, unquote(parts.password)]
    for m in _SECRET_OPTIONS.finditer(uri):
        value = uri[m.end():].split("&", 1)[0]
        found += [value, unquote(value)]
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text: str, uri: str) -> str:
    """Remove every secret of ``uri`` from ``text`` (a driver's error message, say).

    A secret too short to replace safely (one or two characters) hides the whole text instead.
    """
    for secret in secrets(uri):
        if len(secret) < 3:
            if secret in text:
                return "details hidden: they would show the password"
            continue
        text = text.replace(secret, "****")
    return text
