"""Deterministic costs: round trips, documents and bytes returned, documents written.

Introduced in notebook 00. On a server backend (a real MongoDB or the embedded SecantusDB) the
counts come from pymongo's command monitoring: every command the driver sends is one round trip,
and the documents of each reply batch are counted and measured with ``bson.encode``.

The mock has no wire protocol, so its adapter (``engines.mock.MockDatabase``) reports, through
:func:`record`, the same commands the driver would send for each call. The rules match pymongo's,
so the same calls give the same counts on every backend.

Not counted: connection handshakes and heartbeats, ``endSessions`` cleanup, and the ``killCursors``
the driver's background thread sends for a cursor dropped unclosed (when it comes is the driver's
choice, so the cursor stays open in the count, and a bill refuses the read: ``workload.billable``).
A ``killCursors`` the application sends (``cursor.close()``, leaving a ``with`` block) is a round
trip in its own thread, and counted.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

import bson
from pymongo import monitoring

from .indexkeys import KeySnapshot, docs_changed, index_keys_written

__all__ = ["CommandCounter", "Counters", "count_commands", "paused", "attach_listener_client", "is_counting", "record", "recorder"]

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
    #: ``getMore`` commands sent because a read left its first batch to the driver's default (101
    #: documents): a round trip the read's author did not choose. A measured read sets ``batch_size``.
    default_batch_getmores: int = 0
    #: the cursors a read of the block left open (a non-zero cursor id at the end of the block, e.g. a
    #: batch size equal to the answer, not larger): the driver later sends a ``killCursors`` that no
    #: block counts, so a bill refuses such a read (``helpers.workload``). A measured read asks for more
    #: than its answer. The mock reports the cursors a server would keep (:func:`record`).
    open_cursors: set[int] = field(default_factory=set)
    #: how many times counting was paused (``paused()``) while this counter was open: what was sent
    #: then reached no counter, so a check (an exercise) refuses a learner's function that paused it
    paused_inside: int = 0
    #: with ``count_commands(index_keys=...)``: the index keys the block inserted plus those it deleted
    #: (``helpers.indexkeys``), ``None`` when not asked for or not countable
    index_keys_written: int | None = None
    #: aggregations that write (``$merge``, ``$out``): no reply says how many documents they wrote, so
    #: ``count_commands`` counts them from a snapshot of their target (``index_keys`` naming it, whole)
    aggregate_writes: int = 0
    #: the namespaces those aggregations write (``db.collection``, from their last stage)
    aggregate_targets: list[str] = field(default_factory=list)
    #: the namespaces the block's insert, update, delete and findAndModify commands write
    written_namespaces: set[str] = field(default_factory=set)
    #: False when an aggregation wrote documents the counter could not count (its target was not
    #: snapshotted whole, other commands wrote it too, or it has an index the snapshot cannot count):
    #: ``docs_written`` is then unknown, never 0
    docs_written_known: bool = True

    def add_command(self, name: str, command: dict[str, Any] | None = None) -> None:
        self.round_trips += 1
        self.commands.append(name)
        if name == "aggregate" and command is not None and any(
                isinstance(stage, dict) and ("$merge" in stage or "$out" in stage)
                for stage in command.get("pipeline") or []):
            self.aggregate_writes += 1
            target = _write_target(command)
            if target is None:
                self.docs_written_known = False
            else:
                self.aggregate_targets.append(target)
        elif name in ("insert", "update", "delete", "findAndModify") and command is not None:
            self.written_namespaces.add(f"{command.get('$db')}.{command.get(name)}")
        elif name == "bulkWrite":  # MongoDB 8.0's cross-collection bulk write: its namespaces are in nsInfo
            self.written_namespaces.update(str((ns or {}).get("ns")) for ns in (command or {}).get("nsInfo") or [])
        if self.keep_commands and command is not None:
            self.command_documents.append(_slim(command))

    def add_docs(self, docs: list[Any]) -> None:
        self.docs_returned += len(docs)
        self.bytes_returned += sum(len(bson.encode(d)) for d in docs)
        self.nodes_returned += sum(1 + sum(sum(isinstance(x, dict) for x in v) for v in d.values()
                                           if isinstance(v, list)) for d in docs if isinstance(d, dict))


def _write_target(command: Mapping[str, Any]) -> str | None:
    """The namespace an aggregate's last stage (``$merge`` or ``$out``) writes, or None if not written plainly."""
    stages = command.get("pipeline") or []
    last = stages[-1] if stages and isinstance(stages[-1], dict) else {}
    spec = last.get("$merge", {}).get("into") if isinstance(last.get("$merge"), dict) else last.get("$merge", last.get("$out"))
    db = command.get("$db")
    if isinstance(spec, dict):
        db, spec = spec.get("db", db), spec.get("coll")
    return f"{db}.{spec}" if isinstance(spec, str) and db is not None else None


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
        self._local = threading.local()  # .paused: this thread's events go to no counter

    def __bool__(self) -> bool:
        return bool(self._open) and not getattr(self._local, "paused", 0)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No counter receives what *this thread* sends while the ``with`` block runs (the
        workbook's own reads that serve a measurement, such as an index-key snapshot); other
        threads count as before."""
        self._local.paused = getattr(self._local, "paused", 0) + 1
        with self._lock:  # each open counter learns that something it would have counted was not
            for counter in self._open:
                if hasattr(counter, "paused_inside"):
                    counter.paused_inside += 1
        try:
            yield
        finally:
            self._local.paused -= 1

    @contextmanager
    def opened(self, counter: T) -> Iterator[T]:
        """``counter`` receives every event while the ``with`` block runs."""
        with self._lock:
            self._open.append(counter)
        try:
            yield counter
        finally:
            with self._lock:  # by identity: two counters that count the same are still two
                self._open[:] = [c for c in self._open if c is not counter]

    def each(self, fn: Callable[[T], Any]) -> None:
        """``fn(counter)`` for every open counter (none open, or this thread paused: nothing to do)."""
        if not self:
            return
        with self._lock:
            counters = list(self._open)
        for c in counters:
            fn(c)


_ACTIVE: Counters[CommandCounter] = Counters()


@contextmanager
def count_commands(keep_commands: bool = False, index_keys: Any = None) -> Iterator[CommandCounter]:
    """Count every command sent inside the ``with`` block, on any backend.

    ``keep_commands=True`` also keeps each command document (``counter.command_documents``): the
    workload that ``helpers.advisor`` reviews (notebook 06). ``index_keys`` names the collections a
    write changes (a collection, several, or ``{collection: filter}``): their index keys are read
    before and after the block, uncounted, and ``counter.index_keys_written`` is the keys inserted
    plus the keys deleted (``helpers.indexkeys``). A ``$merge`` or ``$out`` reports no count: the
    documents it wrote are those its target gained, lost or changed, counted when ``index_keys``
    snapshots that target whole; otherwise ``counter.docs_written_known`` is False (unknown, not 0).
    """
    snapshot = KeySnapshot(index_keys) if index_keys is not None else None
    with _ACTIVE.paused():
        before = snapshot.take() if snapshot is not None else None
    with _ACTIVE.opened(CommandCounter(keep_commands=keep_commands)) as counter:
        yield counter
    after = None
    if snapshot is not None:
        with _ACTIVE.paused():
            after = snapshot.take(before)
            counter.index_keys_written = index_keys_written(before, after)
    for target in dict.fromkeys(counter.aggregate_targets):  # what a $merge or $out wrote: its target's changes
        changed = docs_changed(before, after, target) if target not in counter.written_namespaces else None
        if changed is None:
            counter.docs_written_known = False
        else:
            counter.docs_written += changed


@contextmanager
def paused() -> Iterator[None]:
    """Nothing is counted inside the ``with`` block (reads that serve a measurement, not part of it)."""
    with _ACTIVE.paused():
        yield


# ---------------------------------------------------------------------------------------------
# server backends: pymongo command monitoring

def _explicit_batch(command: Mapping[str, Any]) -> bool:
    """Whether a find or aggregate chose its first batch (a batch size, a single batch, a small limit)."""
    if "aggregate" in command:
        return "batchSize" in (command.get("cursor") or {})
    limit = command.get("limit") or 0
    return "batchSize" in command or bool(command.get("singleBatch")) or 0 < abs(limit) <= 101


#: the thread pymongo closes dropped cursors from (pymongo/synchronous/mongo_client.py)
_DRIVER_KILL_THREAD = "pymongo_kill_cursors_thread"


class _Listener(monitoring.CommandListener):
    def __init__(self) -> None:
        self._defaulted: dict[int, bool] = {}  # request id -> its find/aggregate left the batch to the driver
        self._default_cursors: set[int] = set()  # cursors whose first batch was the driver's default
        self._getmores: dict[int, int] = {}  # request id -> the cursor its getMore reads

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if _ACTIVE and event.command_name == "killCursors":
            if threading.current_thread().name == _DRIVER_KILL_THREAD:
                return  # the driver's, for a cursor dropped unclosed, when it chooses: the cursor stays open
            killed = set(event.command.get("cursors") or ())
            command = {**event.command, "$db": event.database_name}
            _ACTIVE.each(lambda c: (c.add_command("killCursors", command), c.open_cursors.difference_update(killed)))
            return
        if _ACTIVE and event.command_name == "getMore":
            self._getmores[event.request_id] = event.command.get("getMore")
        if _ACTIVE and event.command_name.lower() not in IGNORED:
            command = {**event.command, "$db": event.database_name}
            name = event.command_name
            if name in ("find", "aggregate"):
                self._defaulted[event.request_id] = not _explicit_batch(event.command)
            default = name == "getMore" and event.command.get("getMore") in self._default_cursors
            if default:
                self._default_cursors.discard(event.command.get("getMore"))

            def add(c: CommandCounter) -> None:
                c.add_command(name, command)
                c.default_batch_getmores += default
            _ACTIVE.each(add)

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
            # the default first batch is 101 documents; a shorter one was cut by size (16 MiB), not by it
            if self._defaulted.pop(event.request_id, False) and cursor.get("id") and len(docs) >= 101:
                self._default_cursors.add(cursor["id"])
            read = self._getmores.pop(event.request_id, None)
            cid = cursor.get("id")
            _ACTIVE.each(lambda c: (c.open_cursors.discard(read), c.open_cursors.add(cid) if cid else None))
        if name == "bulkWrite":  # MongoDB 8.0's cross-collection bulk write: its cursor holds per-operation results
            docs = []
            written = sum(int(reply.get(k, 0) or 0) for k in ("nInserted", "nModified", "nUpserted", "nDeleted"))
        elif name == "insert" or name == "delete":
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
        self._defaulted.pop(event.request_id, None)
        self._getmores.pop(event.request_id, None)


_LISTENER = _Listener()


def attach_listener_client() -> monitoring.CommandListener:
    """The listener every server client is created with (one per process)."""
    return _LISTENER


# ---------------------------------------------------------------------------------------------
# engines without command monitoring report their commands here


def record(name: str, docs: list[Any] | None = None, written: int = 0,
           command: dict[str, Any] | None = None, default_batch: bool = False,
           read_cursor: int | None = None, open_cursor: int | None = None) -> None:
    """Count one command (for an engine without command monitoring: the mock adapter).

    ``command`` is the command document pymongo would have sent, kept by ``count_commands(keep_commands=True)``;
    ``default_batch`` marks a ``getMore`` sent because the read left its first batch to the driver;
    ``read_cursor`` is the cursor a ``getMore`` reads, ``open_cursor`` the cursor id the reply
    returns when the server keeps the cursor open (as a server's non-zero id: ``open_cursors``).
    """
    if not _ACTIVE:
        return

    def f(c: CommandCounter) -> None:
        c.add_command(name, command)
        if docs:
            c.add_docs(docs)
        c.docs_written += written
        c.default_batch_getmores += default_batch
        c.open_cursors.discard(read_cursor)
        if open_cursor:
            c.open_cursors.add(open_cursor)

    _ACTIVE.each(f)


def cursor_closed(cursor_id: int, command: dict[str, Any] | None = None) -> None:
    """A cursor the application closed: the driver's ``killCursors``, one round trip (as on a server)."""
    _ACTIVE.each(lambda c: (c.add_command("killCursors", command), c.open_cursors.discard(cursor_id)))


def is_counting() -> bool:
    """True inside a ``count_commands()`` block (an adapter can skip the bookkeeping otherwise)."""
    return bool(_ACTIVE)


#: :func:`record`, :func:`is_counting` and :func:`cursor_closed` together: what an engine adapter reports to
#: (``engines.mock.MockDatabase``), one object the adapter is handed instead of this module
recorder = SimpleNamespace(record=record, is_counting=is_counting, cursor_closed=cursor_closed)
