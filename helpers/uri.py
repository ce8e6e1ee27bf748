"""MongoDB connection strings (and notebook 07's Redis URLs): the one parser, and redaction (no password is ever shown).

Introduced in notebook 00 (the banner shows the server's URI, redacted). ``helpers.backends`` uses
it to show and scrub a URI, ``helpers.settings`` to name a student's database after the login, and
``helpers.kv.redis_backend`` to show and scrub ``REDIS_URL`` (``redis://`` and ``rediss://`` URLs carry
their password in the same user-info part).

What is hidden: the password (and a Redis URL's user info without a ':', ``redis://secret@host``:
a password whose ':' was left out); the value of every option pymongo treats as sensitive
(``pymongo.common.SENSITIVE_OPTIONS_FOR_REPR``: ``tlsCertificateKeyFilePassword``,
``proxyUsername``, ``proxyPassword``) and of ``authMechanismProperties``, their aliases
(``sslPEMKeyPassword``) and any option whose name says password, secret, token or key; every
option pymongo does not know (it may be credential text typed in the wrong place); and a whole
string that is not a ``mongodb://``, ``mongodb+srv://``, ``redis://`` or ``rediss://`` URL (a
forgotten scheme leaves ``user:password@host``, which nothing could redact reliably).
"""
from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote, unquote_plus

__all__ = ["UriParts", "parse", "user_name", "database", "option_is_shown", "redact", "secrets", "scrub", "is_uri", "options", "UNPARSABLE",
           "SENSITIVE_OPTIONS", "port_problem"]

#: MongoDB connection strings, and Redis URLs (notebook 07's ``REDIS_URL``): the same user-info syntax
_SCHEME = re.compile(r"^((?:mongodb(?:\+srv)?|rediss?)://)", re.I)
_MONGODB = re.compile(r"^mongodb(?:\+srv)?://", re.I)
_REDIS = re.compile(r"^rediss?://", re.I)
_SECRET_WORDS = re.compile(r"(?i)pass|secret|token|credential|auth|key(?!file)|pem")


def _pymongo_sensitive() -> frozenset[str]:
    try:
        from pymongo import common
    except ImportError:  # pragma: no cover - pymongo is a dependency
        return frozenset()
    return frozenset(getattr(common, "SENSITIVE_OPTIONS_FOR_REPR", ()))


def _pymongo_known() -> frozenset[str]:
    try:
        from pymongo import common
    except ImportError:  # pragma: no cover
        return frozenset()
    return frozenset(getattr(common, "URI_OPTIONS_VALIDATOR_MAP", {}))


#: option names (lower case) whose values are never shown: pymongo's own list, and more
SENSITIVE_OPTIONS = _pymongo_sensitive() | {
    "tlscertificatekeyfilepassword", "sslpemkeypassword", "sslclientcertificatekeypassword",
    "proxyusername", "proxypassword", "authmechanismproperties", "password"}
#: option names shown in clear: those pymongo knows, minus the sensitive ones
_SAFE_OPTIONS = _pymongo_known() - SENSITIVE_OPTIONS
#: what a string that is not a MongoDB URI shows as (it is never echoed)
UNPARSABLE = "<hidden: not a mongodb://, mongodb+srv:// or redis:// URL>"
_HIDDEN = "****"


class UriParts(NamedTuple):
    """A URI's user info, split off the rest: scheme, user (as written), password or None, rest."""

    scheme: str
    user: str
    password: str | None
    rest: str


def _split(uri: str) -> tuple[str, str | None, str, str | None] | None:
    """``(scheme, userinfo or None, hosts and path, query or None)``, or None when not a MongoDB URI.

    The user info ends at the *last* '@' before the query: a password may itself contain
    unescaped '@', '/', ':' or '?' (pymongo then refuses the URI, and the error must not show it).
    The query starts at the first '?' after a '/' (pymongo requires the '/').
    """
    uri = uri.strip()
    m = _SCHEME.match(uri)
    if not m:
        return None
    rest = uri[m.end():]
    slash = rest.find("/")
    query_at = rest.find("?", slash) if slash >= 0 else -1
    at = rest.rfind("@", 0, query_at if query_at >= 0 else len(rest))
    if at < 0 and query_at >= 0 and "@" in rest[query_at:]:
        # No '@' before the '?', one after it: either an option value holding '@' (`?x=a@b`), or a
        # password holding an unescaped '/' and '?' (`user:pa/ss?word@host`, `user:12/pw?tls=x@host`,
        # where 'user:12' reads as a host and port). The two cannot be told apart: treat the string
        # as unparsable, so nothing of it is shown.
        return None
    userinfo = rest[:at] if at >= 0 else None
    after = rest[at + 1:]
    q = after.find("?", after.find("/")) if "/" in after else -1
    if q >= 0:
        return m.group(1), userinfo, after[:q], after[q + 1:]
    return m.group(1), userinfo, after, None


def is_uri(uri: str | None) -> bool:
    """True when ``uri`` starts with ``mongodb://`` or ``mongodb+srv://``."""
    return bool(uri) and _MONGODB.match(uri.strip()) is not None


def parse(uri: str) -> UriParts | None:
    """The URI's user info, or None when it has none (or is not a ``mongodb://`` or ``redis://`` URI)."""
    split = _split(uri)
    if split is None or split[1] is None:
        return None
    scheme, userinfo, hosts, query = split
    user, sep, password = userinfo.partition(":")
    return UriParts(scheme, user, password if sep else None,
                    hosts + ("?" + query if query is not None else ""))


def options(uri: str) -> list[tuple[str, str]]:
    """The URI's query options as ``(name, decoded value)``, in order (names as written)."""
    split = _split(uri)
    if split is None or not split[3]:
        return []
    out = []
    for piece in _query_pieces(split[3]):
        key, eq, value = piece.partition("=")
        if eq:
            out.append((key, unquote_plus(value)))
    return out


def user_name(uri: str | None) -> str | None:
    """The login name in ``uri`` (percent-decoded), or None when the URI carries none."""
    parts = parse(uri or "")
    if parts is None or not parts.user:
        return None
    return unquote(parts.user)


def database(uri: str | None) -> str | None:
    """The database a MongoDB URI's path names (``mongodb://h/NAME?...``, percent-decoded), or None."""
    split = _split(uri or "")
    if split is None or not _MONGODB.match(split[0]):
        return None
    _scheme, _userinfo, hosts, _query = split
    _hosts, slash, path = hosts.partition("/")
    name = unquote(path) if slash else ""
    return name or None


def _option(piece: str) -> tuple[str, str | None]:
    """How one ``key=value`` piece of the query shows: ``(shown, secret or None)``."""
    key, eq, value = piece.partition("=")
    name = key.lower()
    if not eq:
        return (_HIDDEN, piece) if piece else (piece, None)  # a bare word may be credential text
    if name in _SAFE_OPTIONS and not (_SECRET_WORDS.search(name) and name not in ("authsource", "authmechanism")):
        return piece, None
    if name in SENSITIVE_OPTIONS or _SECRET_WORDS.search(name):
        return f"{key}={_HIDDEN}", value
    return _HIDDEN, piece  # unknown to pymongo: the name itself may be credential text


def port_problem(uri: str) -> str | None:
    """What is wrong with a port the URI names (a host's ``:port``, ``mongodb://`` or ``redis://``),
    or None: a port is a number from 1 to 65535. Counted, never converted: Python's ``int()`` refuses
    a number of over 4,300 digits with an error (and advice) of its own."""
    split = _split(uri)
    if split is None or "+srv" in split[0].lower():  # mongodb+srv:// names no port (DNS gives them)
        return None
    for host in split[2].partition("/")[0].split(","):
        port = host.rpartition("]")[2] if host.startswith("[") else host  # [::1]:27017
        if ":" not in port:
            continue
        port = port.rpartition(":")[2]
        digits = port.lstrip("0")
        if not port or not re.fullmatch(r"[0-9]+", port) or len(digits) > 5 or not 1 <= int(digits or 0) <= 65535:
            shown = (f"a number of {len(port):,} digits" if re.fullmatch(r"[0-9]{9,}", port)
                     else "not a number" if not re.fullmatch(r"[0-9]+", port) else port)
            return f"the port after the host must be a number from 1 to 65535, not {shown}"
    return None


def _long_numbers(text: str) -> str:
    """``text`` with each run of over 20 digits replaced by its length (a 5,000-digit port is not echoed)."""
    return re.sub(r"[0-9]{21,}", lambda m: f"<{len(m[0]):,} digits>", text)


def option_is_shown(piece: str) -> bool:
    """True when a query option (``key=value``) is one :func:`redact` shows in clear: known to
    pymongo and unable to hold a secret (``tls=true``, not ``proxyPassword=...`` or an unknown name)."""
    return _option(piece)[1] is None and bool(piece)


def _query_pieces(query: str) -> list[str]:
    return re.split(r"[&;]", query)


def redact(uri: str) -> str:
    """The URI with the password, every sensitive or unknown option hidden (``****``).

    A string that is not a ``mongodb://`` / ``mongodb+srv://`` URI is not shown at all (:data:`UNPARSABLE`).
    """
    split = _split(uri)
    if split is None:
        return UNPARSABLE
    scheme, userinfo, hosts, query = split
    out = scheme
    if userinfo is not None:
        user, sep, _password = userinfo.partition(":")
        if not sep and _REDIS.match(scheme):  # `redis://secret@host`: a password that lost its ':'
            user = _HIDDEN
        out += user + (":" + _HIDDEN if sep else "") + "@"
    out += hosts
    if query is not None:
        delim = ";" if ";" in query and "&" not in query else "&"
        out += "?" + delim.join(_option(p)[0] for p in _query_pieces(query))
    return _long_numbers(out)


def secrets(uri: str) -> list[str]:
    """Every secret in ``uri`` (password, hidden options, or the whole of an unparsable string),
    as written and decoded, longest first."""
    found: list[str] = []
    split = _split(uri)
    if split is None:
        text = uri.strip()
        found.append(text)
        head = text.split("?", 1)[0]
        if "@" in head:  # a forgotten scheme: user:password@host
            userinfo = head.rsplit("@", 1)[0].split("://", 1)[-1]
            found += [userinfo, userinfo.partition(":")[2]]
    else:
        _scheme, userinfo, _hosts, query = split
        if userinfo is not None and ":" in userinfo:
            found.append(userinfo.partition(":")[2])
        elif userinfo and _REDIS.match(_scheme):
            found.append(userinfo)
        for piece in _query_pieces(query or ""):
            secret = _option(piece)[1]
            if secret:
                found.append(secret)
    decoded = []
    for s in found:
        decoded += [s, unquote(s), unquote_plus(s)]
    return sorted({s for s in decoded if s}, key=len, reverse=True)


def scrub(text: str, uri: str) -> str:
    """Remove every secret of ``uri`` from ``text`` (a driver's error message, say).

    A secret too short to replace safely (one or two characters) hides the whole text instead.
    """
    for secret in secrets(uri):
        if len(secret) < 3:
            if secret in text:
                return "details hidden: they would show the password"
            continue
        text = text.replace(secret, _HIDDEN)
    return text
