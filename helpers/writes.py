"""Writes that may meet a document already stored: is an error only duplicate keys (code 11000)?

Introduced in notebook 03. An idempotent load inserts unordered and lets the unique ``_id`` index
refuse what is already there, so a re-run, or a retry after a crash, stores nothing twice and needs
no read first. Such a write succeeds in every way that matters when each of its errors is a
duplicate key (code 11000, ``E11000``); any other error (a validator's refusal, a network error, a
write concern error) must still be raised. :func:`only_duplicates` is that test, for the three
errors pymongo raises: ``DuplicateKeyError`` (one statement), ``BulkWriteError`` (a collection's
bulk write or ``insert_many``) and ``ClientBulkWriteException`` (MongoDB 8.0's client ``bulkWrite``).
"""
from __future__ import annotations

from typing import Any

__all__ = ["DUPLICATE_KEY", "only_duplicates", "refused"]

#: the server's error code for a write refused by a unique index
DUPLICATE_KEY = 11000


def _write_errors(error: BaseException) -> list[dict[str, Any]] | None:
    """The error's per-statement write errors; None when it is not a write error at all, or carries
    an error that is not a statement's (a top-level or write concern error)."""
    from pymongo.errors import BulkWriteError, ClientBulkWriteException, DuplicateKeyError

    if isinstance(error, DuplicateKeyError):
        return [{"index": 0, "code": DUPLICATE_KEY}]
    if isinstance(error, BulkWriteError):
        details = error.details or {}
        if details.get("writeConcernErrors"):
            return None
        return list(details.get("writeErrors", []))
    if isinstance(error, ClientBulkWriteException):
        if error.error is not None or error.write_concern_errors:
            return None
        return [w or {} for w in (error.write_errors or [])]
    return None


def only_duplicates(error: BaseException) -> bool:
    """True when ``error`` is a write error whose every failed statement is a duplicate key (11000):
    the documents it refused are already stored. False for anything else (raise it)."""
    errors = _write_errors(error)
    return bool(errors) and all(w.get("code") == DUPLICATE_KEY for w in errors)


def refused(error: BaseException) -> set[int]:
    """The positions, in the batch sent, of the statements ``error`` refused (for an unordered
    write: every other statement was applied)."""
    return {int(w.get("index", 0)) for w in (_write_errors(error) or [])}
