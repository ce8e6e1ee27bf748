"""Deterministic costs: round trips, documents and bytes returned, documents written.

Introduced in notebook 00. On a server backend (a real MongoDB or the embedded SecantusDB) the
counts come from pymongo's command monitoring: every command the driver sends is one round trip,
and the documents of each reply batch are counted and measured with ``bson.encode``.

The mock has no wire protocol, so its adapter (``engines.mock.MockDatabase``) reports, through
:func:`record`, the same commands the driver would send for each call. The rules match pymongo's,
so the same calls give the same counts on every backend.

Not counted: connection handshakes and heartbeats, ``killCursors`` and ``endSessions`` cleanup.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Generic, Iterator, TypeVar

import bson
from pymongo import monitoring

__all__ = ["CommandCounter", "Counters", "count_commands", "attach_listener_client", "is_counting", "record", "recorder"]

IGNORED = {"hello", "ismaster", "ping", "endsessions", "killcursors", "saslstart", "saslcontinue",
           "buildinfo", "getlasterror"}


@dataclass
class CommandCounter:
    """What a block of code cost in deterministic terms."""

    round_trips: int = 0
    docs_returned: int = 0
    bytes_returned: int = 0
    docs_written: int = 0
    commands: list[str] = field(default_factory=list)
    #: with ``count_commands(keep_commands=True)``: each command document as sent (``$db`` added, an
    #: insert's documents replaced by their number ``n``), e.g. for ``helpers.advisor``'s workload
    keep_commands: bool = False
    command_documents: list[dict[str, Any]] = field(default_factory=list)
    #: documents returned plus the documents embedded in their top-level arrays (e.g. the nodes a
    #: ``$graphLookup`` carries back inside one document)
    nodes_returned: int = 0

    def add_command(self, name: str, command: dict[str, Any] | None = None) -> None:
        self.round_trips += 1
        self.commands.append(name)
        if self.keep_commands and command is not None:
            self.command_documents.append(_slim(command))

    def add_docs(self, docs: list[Any]) -> None:
        self.docs_returned += len(docs)
        self.bytes_returned += sum(len(bson.encode(d)) for d in docs)
        self.nodes_returned += sum(1 + sum(sum(isinstance(x, dict) for x in v) for v in d.values()
                                           if isinstance(v, list)) for d in docs if isinstance(d, dict))


_SESSION_FIELDS = {"lsid", "$clusterTime", "txnNumber", "autocommit", "startTransaction", "$readPreference",
                   "signature", "apiVersion", "apiStrict", "apiDeprecationErrors"}


def _slim(command: dict[str, Any]) -> dict[str, Any]:
    """The command without driver session fields, and an insert without its (possibly huge) documents."""
    out = {k: v for k, v in command.items() if k not in _SESSION_FIELDS}
    if "documents" in out and next(iter(out), None) == "insert":
        out["n"] = len(out.pop("documents") or [])
    return out


T = TypeVar("T")


class Counters(Generic[T]):
    """The counters open now, in any thread, and the fan-out of what happens to each of them: the one
    home of that bookkeeping, for MongoDB's commands (here) and Redis's (``helpers.kv.redis_backend``)."""

    def __init__(self) -> None:
        self._open: list[T] = []
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._open)

    @contextmanager
    def opened(self, counter: T) -> Iterator[T]:
        """``counter`` receives every event while the ``with`` block runs."""
        with self._lock:
            self._open.append(counter)
        try:
            yield counter
        finally:
            with self._lock:  # by identity: two counters that count the same are still two
                del self._open[next(i for i, c in enumerate(self._open) if c is counter)]

    def each(self, fn: Callable[[T], Any]) -> None:
        """``fn(counter)`` for every open counter (none open: nothing to do)."""
        if not self._open:
            return
        with self._lock:
            counters = list(self._open)
        for c in counters:
            fn(c)


_ACTIVE: Counters[CommandCounter] = Counters()


@contextmanager
def count_commands(keep_commands: bool = False) -> Iterator[CommandCounter]:
    """Count every command sent inside the ``with`` block, on any backend.

    ``keep_commands=True`` also keeps each command document (``counter.command_documents``): the
    workload that ``helpers.advisor`` reviews (notebook 06).
    """
    with _ACTIVE.opened(CommandCounter(keep_commands=keep_commands)) as counter:
        yield counter


# ---------------------------------------------------------------------------------------------
# server backends: pymongo command monitoring

class _Listener(monitoring.CommandListener):
    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if _ACTIVE and event.command_name.lower() not in IGNORED:
            command = {**event.command, "$db": event.database_name}
            _ACTIVE.each(lambda c: c.add_command(event.command_name, command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if not _ACTIVE or event.command_name.lower() in IGNORED:
            return
        reply = event.reply or {}
        name = event.command_name
        docs: list[Any] = []
        written = 0
        cursor = reply.get("cursor")
        if isinstance(cursor, dict):
            docs = list(cursor.get("firstBatch", cursor.get("nextBatch", [])) or [])
        if name == "insert" or name == "delete":
            written = int(reply.get("n", 0))
        elif name == "update":
            written = int(reply.get("nModified", 0)) + len(reply.get("upserted", []) or [])
        elif name == "findAndModify":
            value = reply.get("value")
            if value is not None:
                docs = [value]
            leo = reply.get("lastErrorObject", {}) or {}
            written = int(leo.get("n", 0)) if (value is not None or leo.get("upserted") is not None) else 0
        _ACTIVE.each(lambda c: (c.add_docs(docs), setattr(c, "docs_written", c.docs_written + written)))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


_LISTENER = _Listener()


def attach_listener_client() -> monitoring.CommandListener:
    """The listener every server client is created with (one per process)."""
    return _LISTENER


# ---------------------------------------------------------------------------------------------
# engines without command monitoring report their commands here


def record(name: str, docs: list[Any] | None = None, written: int = 0,
           command: dict[str, Any] | None = None) -> None:
    """Count one command (for an engine without command monitoring: the mock adapter).

    ``command`` is the command document pymongo would have sent, kept by ``count_commands(keep_commands=True)``.
    """
    if not _ACTIVE:
        return

    def f(c: CommandCounter) -> None:
        c.add_command(name, command)
        if docs:
            c.add_docs(docs)
        c.docs_written += written

    _ACTIVE.each(f)


def is_counting() -> bool:
    """True inside a ``count_commands()`` block (an adapter can skip the bookkeeping otherwise)."""
    return bool(_ACTIVE)


#: :func:`record` and :func:`is_counting` together: what an engine adapter reports to
#: (``engines.mock.MockDatabase``), one object the adapter is handed instead of this module
recorder = SimpleNamespace(record=record, is_counting=is_counting)
