"""The mongomock-ng adapter: a mock database that costs what a server's would.

mongomock-ng runs in process and has no wire protocol, so nothing can monitor its commands.
:class:`MockDatabase` wraps it and reports to ``helpers.counting`` the commands pymongo would send
for each call (one ``find`` plus a ``getMore`` per further batch of 101, then up to 16 MiB,
documents; one ``insert`` per 100,000 documents or 48 MB; ...), so the same calls give the same
counts on every backend. ``helpers.backends.connect("mock")`` wraps its database in it.
"""
from __future__ import annotations

import itertools
import threading
import warnings
from typing import Any, Callable, Protocol

import bson
from pymongo.errors import BulkWriteError

__all__ = ["MockDatabase", "MockCollection", "MockCursor", "MockClient", "MockSession", "Counter", "install_id_lookup",
           "install_trusted_inserts", "insert_trusted", "FIRST_BATCH",
           "MAX_BATCH_BYTES", "MAX_WRITE_BATCH", "MAX_MESSAGE_BYTES"]


class Counter(Protocol):
    """Where the adapter reports the commands pymongo would send (``helpers.counting`` is one)."""

    def record(self, name: str, docs: list[Any] | None = None, written: int = 0,
               command: dict[str, Any] | None = None, default_batch: bool = False,
               read_cursor: int | None = None, open_cursor: int | None = None) -> None: ...

    def is_counting(self) -> bool: ...

    def cursor_closed(self, cursor_id: int, command: dict[str, Any] | None = None) -> None: ...


def install_listed_pipelines() -> None:
    """Give every pipeline mongomock-ng runs its documents as a list.

    Its ``$lookup`` hands a sub-pipeline a generator of the matched documents, and some stages read
    their input twice (``$addFields``/``$set`` copies it, then walks it again to add the fields; a
    nested ``$lookup`` walks it, then returns it): the second walk finds nothing, so the fields or the
    documents vanish from ``$lookup``'s ``as`` array (pinned: mongomock-ng 7.11.1). A list is what
    every stage of a top-level pipeline already gets; the answers are MongoDB's."""
    from mongomock_ng import aggregate as ma

    run = ma.process_pipeline
    if getattr(run, "listed", False):
        return

    def process_pipeline(collection: Any, *args: Any, **kwargs: Any) -> Any:
        return run(collection if isinstance(collection, list) else list(collection), *args, **kwargs)

    process_pipeline.listed = True  # type: ignore[attr-defined]
    ma.process_pipeline = process_pipeline


def install_id_lookup() -> None:
    """Answer ``{_id: <string or integer>}`` from mongomock-ng's store, which is keyed by ``_id``,
    instead of testing every document of the collection against the filter.

    mongomock-ng has no indexes, not even ``_id``'s: each ``update_one({"_id": x})`` of a bulk write
    scanned the whole collection (notebook 03's moves and renames: most of 3 s on the mock). The
    answer is the same: ``_id`` is unique, the one document found is still tested with
    mongomock-ng's own ``filter_applies``, and the query is recorded for its profiler exactly as
    its own ``Collection._iter_documents`` records it (pinned: mongomock-ng 7.11.1). Every other
    filter scans as before, so the mock still has no index to show (``caps.indexes`` stays false).
    """
    from mongomock_ng import collection as mc
    from mongomock_ng.filtering import filter_applies

    scan = mc.Collection._iter_documents
    if getattr(scan, "by_key", False):
        return

    def _iter_documents(self: Any, filter: Any) -> Any:
        if not (type(filter) is dict and len(filter) == 1 and type(filter.get("_id")) in (str, int)):
            return scan(self, filter)
        mc.get_profiler().record(filter, self.full_name, mc._profiler_get_operation(),
                                 dict(self._list_all_indexes()) if self._store.is_created else {},
                                 sort=mc._profiler_get_sort())
        try:
            doc = self._store[filter["_id"]]  # one read: expired or deleted meanwhile is a KeyError
        except KeyError:
            return iter(())
        return iter([doc] if filter_applies(filter, doc) else [])

    _iter_documents.by_key = True  # type: ignore[attr-defined]
    mc.Collection._iter_documents = _iter_documents


#: set, in one thread, while :func:`insert_trusted` runs
_TRUSTED = threading.local()


def install_trusted_inserts() -> None:
    """Let :func:`insert_trusted` skip mongomock-ng's re-check that each document
    could be BSON: it encodes every document to BSON and throws the bytes away, then walks its field
    names (a NUL, a top-level ``$``), about 30% of an insert. Both functions are replaced by ones
    that do exactly that, except in a thread inside :func:`insert_trusted` (pinned: mongomock-ng
    7.11.1, whose ``Collection._insert`` calls the module's ``_bson_encode`` and
    ``_validate_data_fields``; without them nothing is patched)."""
    from mongomock_ng import collection as mc

    encode, fields = getattr(mc, "_bson_encode", None), getattr(mc, "_validate_data_fields", None)
    if encode is None or fields is None or getattr(encode, "trusting", False):
        return  # installed already; or another mongomock-ng: insert_trusted then checks like insert_many

    def _bson_encode(document: Any, check_keys: Any, codec_options: Any) -> Any:
        if getattr(_TRUSTED, "on", False):
            return None
        return encode(document, check_keys, codec_options)

    def _validate_data_fields(data: Any) -> None:
        if not getattr(_TRUSTED, "on", False):
            fields(data)

    _bson_encode.trusting = True  # type: ignore[attr-defined]
    mc._bson_encode, mc._validate_data_fields = _bson_encode, _validate_data_fields


def insert_trusted(collection: "MockCollection", documents: Any) -> Any:
    """``collection.insert_many(documents, ordered=True)`` of documents the caller has just decoded
    from BSON, or encoded to BSON, and whose field names it fixed itself (``helpers.datasets``' typed
    copies: the catalogue's names, none with a leading ``$``): mongomock-ng does not encode each one
    again, nor walk its field names (:func:`install_trusted_inserts`). Everything else is
    ``insert_many``'s: the ``_id``, duplicate keys, unique indexes, a validator, the counts. A
    function of the adapter, not a method a learner's collection shows."""
    documents = list(documents)  # a generator runs here, checked as usual, before the flag is set
    install_trusted_inserts()  # done when the database was wrapped; a no-op then
    before = getattr(_TRUSTED, "on", False)
    _TRUSTED.on = True
    try:
        return collection.insert_many(documents, ordered=True)
    finally:
        _TRUSTED.on = before


FIRST_BATCH = 101
MAX_BATCH_BYTES = 16 * 1024 * 1024
MAX_WRITE_BATCH = 100_000
MAX_MESSAGE_BYTES = 48_000_000


class MockCursor:
    """A cursor over a mongomock-ng cursor that sends "batches" like a server cursor.

    Each batch is one round trip (``find``/``aggregate``, then ``getMore``), and its documents are
    counted when the batch arrives, as on a server: the first batch holds 101 documents (or
    ``batch_size``, or the limit), later ones ``batch_size`` or up to 16 MiB. A batch cut by its
    count leaves the server cursor open, so the driver sends one more ``getMore`` that comes back
    empty; a negative limit asks for a single batch. ``aggregate`` sends its command at once. A
    batch that leaves the server cursor open reports its id, and ``close`` closes it (a server's
    ``killCursors``), so a counter sees the cursors a server would keep open.
    """

    _CHAIN = {"sort", "limit", "skip", "batch_size", "hint", "max_time_ms", "comment", "collation",
              "allow_disk_use", "where", "max", "min", "max_scan", "add_option", "remove_option"}

    def __init__(self, inner: Any, command: str, counter: Counter, batch_size: int = 0, limit: int = 0,
                 eager: bool = False, document: dict[str, Any] | None = None,
                 batch_size_given: bool | None = None) -> None:
        self._inner = inner
        # whether the read chose its first batch (find: a batch size above 0; aggregate: any batchSize)
        self._batch_size_given = batch_size > 0 if batch_size_given is None else batch_size_given
        self._first_full_default = False
        self._counter = counter
        self._command = command
        self._document = document  # the command document pymongo would send (completed by chaining)
        self._batch_size = batch_size
        self._limit = limit  # > 0: at most this many; < 0: one batch of at most -limit
        self._it: Any = None
        self._lookahead: list[Any] = []
        self._buffer: list[Any] = []
        self._sent = 0  # batches fetched
        self._returned = 0
        self._closed = False  # the server cursor is known to be exhausted
        self._id = next(_CURSOR_IDS)  # the id a server would give the cursor while it stays open
        if eager:
            self._fetch()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in self._CHAIN and callable(attr):
            def chained(*args: Any, **kwargs: Any) -> "MockCursor":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # mongomock-ng: batch_size is a no-op
                    result = attr(*args, **kwargs)
                if self._document is not None and name in ("sort", "collation", "hint") and args:
                    value = args[0]
                    if name == "sort":
                        value = ({value: args[1] if len(args) > 1 else 1} if isinstance(value, str)
                                 else dict(value))
                    self._document[name] = value
                if name == "batch_size":
                    self._batch_size = int(args[0] if args else kwargs.get("batch_size", 0))
                    self._batch_size_given = self._batch_size > 0
                elif name == "limit":
                    self._limit = int(args[0] if args else kwargs.get("limit", 0))
                if result is not None and result is not self._inner:
                    self._inner = result
                return self
            return chained
        return attr

    def explain(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("explain")
        return self._inner.explain(*args, **kwargs)

    def clone(self) -> "MockCursor":
        """A fresh cursor for the same query (pymongo's ``Cursor.clone``): nothing sent until it is read."""
        return MockCursor(self._inner.clone(), self._command, self._counter, batch_size=self._batch_size,
                          limit=self._limit, document=dict(self._document) if self._document is not None else None,
                          batch_size_given=self._batch_size_given)

    def distinct(self, key: str) -> Any:
        """The cursor's query's distinct values of ``key``: one ``distinct`` command (pymongo's ``Cursor.distinct``)."""
        out = self._inner.distinct(key)
        doc = self._document or {}
        self._counter.record("distinct", command={"distinct": doc.get(self._command), "key": key,
                                                  "query": doc.get("filter") or {},
                                                  **({"$db": doc["$db"]} if "$db" in doc else {})})
        return out

    def __iter__(self) -> "MockCursor":
        return self

    def _next_inner(self) -> Any:
        if self._lookahead:
            return self._lookahead.pop()
        return next(self._it)

    def _fetch(self) -> None:
        """One round trip: the next batch, counted as it arrives."""
        if self._it is None:
            self._it = iter(self._inner)
        first = self._sent == 0
        self._sent += 1
        cap = (self._batch_size or FIRST_BATCH) if first else self._batch_size
        if self._limit < 0:
            cap = -self._limit
        elif self._limit > 0:
            remaining = self._limit - self._returned
            cap = min(cap, remaining) if cap else remaining
        batch: list[Any] = []
        size = 0
        cut_by_count = False
        while True:
            if cap and len(batch) >= cap:
                cut_by_count = True
                break
            try:
                doc = self._next_inner()
            except StopIteration:
                self._closed = True
                break
            s = len(bson.encode(doc))
            if batch and size + s > MAX_BATCH_BYTES:
                self._lookahead.append(doc)
                break
            batch.append(doc)
            size += s
        self._returned += len(batch)
        if first:  # the driver's default first batch (no batch size, no small limit) cut this reply
            self._first_full_default = (cut_by_count and not self._batch_size_given
                                        and (self._limit == 0 or abs(self._limit) > FIRST_BATCH))
        if self._limit < 0 or (self._limit > 0 and self._returned >= self._limit):
            self._closed = True  # a single batch, or the limit reached: the server closes the cursor
        elif cut_by_count and not self._lookahead:
            pass  # the server does not know yet that nothing is left: one more (empty) getMore
        self._counter.record(self._command if first else "getMore", batch,
               command=self._document if first else None,
               default_batch=self._sent == 2 and self._first_full_default,
               read_cursor=None if first else self._id, open_cursor=None if self._closed else self._id)
        self._buffer.extend(batch)

    def __next__(self) -> Any:
        while not self._buffer:
            if self._closed and self._sent:
                raise StopIteration
            self._fetch()
            if not self._buffer and self._closed:
                raise StopIteration
        return self._buffer.pop(0)

    next = __next__

    def to_list(self, length: int | None = None) -> list[Any]:
        return list(itertools.islice(self, length)) if length else list(self)

    def close(self) -> None:
        if self._sent and not self._closed:  # the driver's killCursors: one round trip, as on a server
            db = (self._document or {}).get("$db")
            self._counter.cursor_closed(self._id, {"killCursors": (self._document or {}).get(self._command),
                                                   "cursors": [self._id], **({"$db": db} if db else {})})
            self._closed = True

    def __enter__(self) -> "MockCursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _wrap(value: Any, db: "MockDatabase") -> Any:
    import mongomock_ng

    if isinstance(value, mongomock_ng.Collection):
        return MockCollection(value, db)
    if isinstance(value, mongomock_ng.MongoClient):
        return MockClient.of(value, db)
    return value


_CURSOR_IDS = itertools.count(1)  # the mock's server cursor ids
_SENT = [0]  # commands the adapter reported, in this process (a transaction that sent none commits silently)


class _Tally:
    """The database's counter, counting what goes through it in :data:`_SENT` (a transaction that
    sent no command commits without a round trip, as in pymongo)."""

    def __init__(self, counter: Counter) -> None:
        self._counter = counter

    @property
    def sent(self) -> int:
        return _SENT[0]

    def record(self, name: str, *args: Any, **kwargs: Any) -> None:
        _SENT[0] += 1
        self._counter.record(name, *args, **kwargs)

    def is_counting(self) -> bool:
        return self._counter.is_counting()

    def cursor_closed(self, cursor_id: int, command: dict[str, Any] | None = None) -> None:
        _SENT[0] += 1
        self._counter.cursor_closed(cursor_id, command)


class MockClient:
    """mongomock-ng's client, whose sessions report the commits and aborts pymongo would send."""

    _WRAPPED: dict[int, "MockClient"] = {}  # one wrapper per mongomock-ng client: the same object every time

    def __init__(self, inner: Any, database: "MockDatabase") -> None:
        self._inner = inner
        self._database = database

    @classmethod
    def of(cls, inner: Any, database: "MockDatabase") -> "MockClient":
        """The wrapper of ``inner`` (made once, so that ``db.client is db.client``, as in pymongo)."""
        found = cls._WRAPPED.get(id(inner))
        if found is None or found._inner is not inner:
            found = cls._WRAPPED[id(inner)] = cls(inner, database)
        return found

    def __getattr__(self, name: str) -> Any:
        import mongomock_ng

        value = getattr(self._inner, name)
        if isinstance(value, mongomock_ng.Database):  # client.<name>: a database, counted like client[name]
            return MockDatabase(value, self._database._counter)
        return value

    def __getitem__(self, name: str) -> "MockDatabase":
        return MockDatabase(self._inner[name], self._database._counter)

    def get_database(self, *args: Any, **kwargs: Any) -> "MockDatabase":
        return MockDatabase(self._inner.get_database(*args, **kwargs), self._database._counter)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MockClient) and other._inner == self._inner

    def __hash__(self) -> int:
        return hash(id(self._inner))

    def start_session(self, *args: Any, **kwargs: Any) -> "MockSession":
        return MockSession(self._inner.start_session(*args, **kwargs), self._database._counter)


class MockSession:
    """A mongomock-ng session: a transaction that ran a command ends with one ``commitTransaction``
    (or ``abortTransaction``) round trip, as pymongo sends; one that ran none sends nothing."""

    def __init__(self, inner: Any, tally: _Tally) -> None:
        self._inner = inner
        self._tally = tally
        self._sent_at: int | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> "MockSession":
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._inner.__exit__(*exc)

    def _end(self, command: str) -> None:
        if self._sent_at is not None and self._tally.sent > self._sent_at:
            self._tally.record(command)
        self._sent_at = None

    def start_transaction(self, *args: Any, **kwargs: Any) -> Any:
        self._sent_at = self._tally.sent
        return self._inner.start_transaction(*args, **kwargs)

    def commit_transaction(self) -> Any:
        out = self._inner.commit_transaction()
        self._end("commitTransaction")
        return out

    def abort_transaction(self) -> Any:
        out = self._inner.abort_transaction()
        self._end("abortTransaction")
        return out

    def with_transaction(self, callback: Callable[[Any], Any], *args: Any, **kwargs: Any) -> Any:
        self._sent_at = self._tally.sent
        try:
            out = self._inner.with_transaction(callback, *args, **kwargs)
        except BaseException:
            self._end("abortTransaction")
            raise
        self._end("commitTransaction")
        return out


class MockCollection:
    """mongomock-ng collection that counts the commands pymongo would send."""

    def __init__(self, inner: Any, database: "MockDatabase") -> None:
        self._inner = inner
        self._database = database
        self._counter = database._counter

    def __getattr__(self, name: str) -> Any:
        return _wrap(getattr(self._inner, name), self._database)

    def __getitem__(self, name: str) -> "MockCollection":
        return MockCollection(self._inner[name], self._database)

    def with_options(self, *args: Any, **kwargs: Any) -> "MockCollection":
        """The collection with other options, counted on the same counter (as every path to it is)."""
        return MockCollection(self._inner.with_options(*args, **kwargs), self._database)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MockCollection) and other._inner == self._inner

    def __hash__(self) -> int:
        return hash(self._inner.full_name)

    def __repr__(self) -> str:
        return f"MockCollection({self._inner.full_name!r})"

    @property
    def database(self) -> "MockDatabase":
        return self._database

    def _cmd(self, name: str, **fields: Any) -> dict[str, Any]:
        """The command document pymongo would send for this call (for ``count_commands(keep_commands=True)``)."""
        return {name: self._inner.name, **{k: v for k, v in fields.items() if v is not None},
                "$db": self._inner.database.name}

    def _find_cmd(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        sort = kwargs.get("sort")
        return self._cmd("find", filter=args[0] if args else kwargs.get("filter") or {},
                         projection=args[1] if len(args) > 1 else kwargs.get("projection"),
                         sort=dict(sort) if sort else None, collation=kwargs.get("collation"),
                         hint=kwargs.get("hint"))

    # reads
    def find(self, *args: Any, **kwargs: Any) -> MockCursor:
        return MockCursor(self._inner.find(*args, **kwargs), "find", self._counter,
                          batch_size=int(kwargs.get("batch_size", 0) or 0),
                          limit=int(kwargs.get("limit", 0) or 0), document=self._find_cmd(args, kwargs))

    def find_one(self, filter: Any = None, *args: Any, **kwargs: Any) -> Any:
        doc = self._inner.find_one(filter, *args, **kwargs)
        self._counter.record("find", [doc] if doc is not None else [], command=self._find_cmd((filter or {}, *args), kwargs))
        return doc

    def aggregate(self, pipeline: Any, *args: Any, **kwargs: Any) -> MockCursor:
        stages = list(pipeline)
        first = stages[0].get("$match") if stages and isinstance(stages[0], dict) and len(stages[0]) == 1 else None
        if isinstance(first, dict) and not args and set(kwargs) <= {"batchSize", "session"}:
            # mongomock-ng copies every document of the collection before the first stage; a leading
            # $match is applied by its find first (the same filter), so only the matches are copied.
            # The $match stays in the pipeline: the answer is the same.
            from mongomock_ng import aggregate as _aggregate

            inner = _aggregate.process_pipeline(list(self._inner.find(first)), self._inner.database, stages,
                                                kwargs.get("session"))
        else:  # the batch size is this adapter's to play (MockCursor), not mongomock-ng's (which warns)
            inner = self._inner.aggregate(pipeline, *args, **{k: v for k, v in kwargs.items() if k != "batchSize"})
        if stages and isinstance(stages[-1], dict) and ("$merge" in stages[-1] or "$out" in stages[-1]):
            list(inner)  # written; a server returns no document for a pipeline that ends in $merge or $out
            inner = []
        return MockCursor(inner, "aggregate", self._counter, batch_size=int(kwargs.get("batchSize", 0) or 0), eager=True,
                          batch_size_given="batchSize" in kwargs,
                          document=self._cmd("aggregate", pipeline=list(pipeline),
                                             collation=kwargs.get("collation")))

    def count_documents(self, filter: Any, *args: Any, **kwargs: Any) -> int:
        n = self._inner.count_documents(filter, *args, **kwargs)
        self._counter.record("aggregate", [{"_id": 1, "n": n}] if n else [],
               command=self._cmd("aggregate", pipeline=[{"$match": filter}, {"$group": {"_id": 1, "n": {"$sum": 1}}}],
                                 collation=kwargs.get("collation")))
        return n

    def estimated_document_count(self, *args: Any, **kwargs: Any) -> int:
        n = self._inner.estimated_document_count(*args, **kwargs)
        self._counter.record("count", command=self._cmd("count"))
        return n

    def distinct(self, *args: Any, **kwargs: Any) -> Any:
        out = self._inner.distinct(*args, **kwargs)
        self._counter.record("distinct", command=self._cmd("distinct", key=args[0] if args else kwargs.get("key"),
                                             query=args[1] if len(args) > 1 else kwargs.get("filter")))
        return out

    # writes
    def insert_one(self, *args: Any, **kwargs: Any) -> Any:
        written = 0
        try:
            result = self._inner.insert_one(*args, **kwargs)
            written = 1
            return result
        finally:  # a refused insert (duplicate key) was still sent
            self._counter.record("insert", written=written, command=self._cmd("insert", n=1))

    def insert_many(self, documents: Any, *args: Any, **kwargs: Any) -> Any:

        documents = list(documents)
        try:
            result = self._inner.insert_many(documents, *args, **kwargs)
        except BulkWriteError as e:  # the server still received the insert, and wrote some
            self._counter.record("insert", written=int(e.details.get("nInserted", 0)), command=self._cmd("insert", n=len(documents)))
            raise
        if self._counter.is_counting():
            batches, n, size = 0, 0, 0
            for d in documents:
                s = len(bson.encode(d))
                if n == 0 or n >= MAX_WRITE_BATCH or size + s > MAX_MESSAGE_BYTES:
                    batches, n, size = batches + 1, 0, 0
                n += 1
                size += s
            for i in range(batches):
                self._counter.record("insert", written=len(documents) if i == 0 else 0,
                       command=self._cmd("insert", n=len(documents) if i == 0 else None))
        return result

    def _update(self, method: str, *args: Any, **kwargs: Any) -> Any:
        q = args[0] if args else kwargs.get("filter")
        u = args[1] if len(args) > 1 else kwargs.get("update", kwargs.get("replacement"))
        pipeline = isinstance(u, list) and method != "replace_one"
        if pipeline:  # the documents it may change, for the copies below (uncounted: the adapter's own reads)
            ids = [d["_id"] for d in self._inner.find(q, {"_id": 1}, limit=1 if method == "update_one" else 0)]
        result = getattr(self._inner, method)(*args, **kwargs)
        if pipeline:
            # mongomock-ng stores a pipeline's {$literal: ...} value itself in every document it sets: the
            # documents then share one object, and a later update of one changes them all (docs/ENGINES.md).
            # Each document is stored again as its own copy, as on a server.
            for doc in self._inner.find({"_id": {"$in": ids}}):
                self._inner.replace_one({"_id": doc["_id"]}, doc)
        self._counter.record("update", written=result.modified_count + (1 if result.upserted_id is not None else 0),
               command=self._cmd("update", updates=[{"q": q, "u": u, "multi": method == "update_many",
                                                     "upsert": bool(kwargs.get("upsert"))}]))
        return result

    def update_one(self, *args: Any, **kwargs: Any) -> Any:
        return self._update("update_one", *args, **kwargs)

    def update_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._update("update_many", *args, **kwargs)

    def replace_one(self, *args: Any, **kwargs: Any) -> Any:
        return self._update("replace_one", *args, **kwargs)

    def _delete(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self._inner, method)(*args, **kwargs)
        self._counter.record("delete", written=result.deleted_count,
               command=self._cmd("delete", deletes=[{"q": args[0] if args else kwargs.get("filter"),
                                                     "limit": 1 if method == "delete_one" else 0}]))
        return result

    def delete_one(self, *args: Any, **kwargs: Any) -> Any:
        return self._delete("delete_one", *args, **kwargs)

    def delete_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._delete("delete_many", *args, **kwargs)

    def _find_and_modify(self, method: str, *args: Any, **kwargs: Any) -> Any:
        doc = getattr(self._inner, method)(*args, **kwargs)
        # no document back, but upsert=True: nothing matched, so one was inserted
        written = 1 if doc is not None or kwargs.get("upsert") else 0
        sort = kwargs.get("sort")
        self._counter.record("findAndModify", [doc] if doc is not None else [], written=written,
               command=self._cmd("findAndModify", query=args[0] if args else kwargs.get("filter"),
                                 update=args[1] if len(args) > 1 else None, sort=dict(sort) if sort else None,
                                 remove=True if method == "find_one_and_delete" else None))
        return doc

    def find_one_and_update(self, *args: Any, **kwargs: Any) -> Any:
        return self._find_and_modify("find_one_and_update", *args, **kwargs)

    def find_one_and_replace(self, *args: Any, **kwargs: Any) -> Any:
        return self._find_and_modify("find_one_and_replace", *args, **kwargs)

    def find_one_and_delete(self, *args: Any, **kwargs: Any) -> Any:
        return self._find_and_modify("find_one_and_delete", *args, **kwargs)

    def bulk_write(self, requests: Any, ordered: bool = True, **kwargs: Any) -> Any:
        requests = list(requests)
        piped = [getattr(r, "_filter", None) for r in requests
                 if type(r).__name__ in ("UpdateOne", "UpdateMany") and isinstance(getattr(r, "_doc", None), list)]
        ids = {d["_id"] for q in piped for d in self._inner.find(q, {"_id": 1})}  # uncounted, as in _update
        try:
            result = self._inner.bulk_write(requests, ordered=ordered, **kwargs)
        except BulkWriteError as e:  # what pymongo sent before the server stopped it, then the error
            self._record_bulk(requests, ordered, e.details)
            raise
        finally:
            self._own_copies(ids | {d["_id"] for q in piped for d in self._inner.find(q, {"_id": 1})})
        self._record_bulk(requests, ordered, None, result)
        return result

    def _own_copies(self, ids: set[Any]) -> None:
        """Store each document a pipeline update may have set again, as its own copy (see ``_update``)."""
        if ids:
            for doc in self._inner.find({"_id": {"$in": list(ids)}}):
                self._inner.replace_one({"_id": doc["_id"]}, doc)

    def _record_bulk(self, requests: list[Any], ordered: bool, details: dict[str, Any] | None,
                     result: Any = None) -> None:
        """The commands pymongo sends for ``requests``: one per run of the same kind (ordered) or per
        kind (unordered); an ordered bulk refused at an operation stops after that operation's run."""
        if self._counter.is_counting() and requests:
            def kind(r: Any) -> str:
                n = type(r).__name__
                return "insert" if n.startswith("Insert") else "delete" if n.startswith("Delete") else "update"
            kinds = [kind(r) for r in requests]
            runs = [(k, [r for _, r in group]) for k, group in itertools.groupby(zip(kinds, requests),
                                                                                 key=lambda t: t[0])] if ordered \
                else [(k, [r for r, kk in zip(requests, kinds) if kk == k])
                      for k in ("insert", "update", "delete") if k in kinds]  # pymongo's unordered order
            if details is None:
                written = (result.inserted_count + result.modified_count + result.upserted_count
                           + result.deleted_count)
            else:
                written = sum(int(details.get(k, 0) or 0) for k in ("nInserted", "nModified", "nUpserted", "nRemoved"))
                errors = details.get("writeErrors") or []
                if ordered and errors:  # the runs up to the one holding the refused operation were sent
                    first, seen, kept = int(errors[0].get("index", 0)), 0, []
                    for k, reqs in runs:
                        kept.append((k, reqs))
                        seen += len(reqs)
                        if seen > first:
                            break
                    runs = kept
            for i, (k, reqs) in enumerate(runs):
                if k == "insert":
                    command = self._cmd("insert", n=len(reqs))
                elif k == "update":
                    command = self._cmd("update", updates=[
                        {"q": getattr(r, "_filter", None), "u": getattr(r, "_doc", None),
                         "multi": type(r).__name__ == "UpdateMany", "upsert": bool(getattr(r, "_upsert", False))}
                        for r in reqs])
                else:
                    command = self._cmd("delete", deletes=[{"q": getattr(r, "_filter", None),
                                                            "limit": 0 if type(r).__name__ == "DeleteMany" else 1}
                                                           for r in reqs])
                self._counter.record(k, written=written if i == 0 else 0, command=command)

    def create_index(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("createIndexes")
        return self._inner.create_index(*args, **kwargs)

    def create_indexes(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("createIndexes")
        return self._inner.create_indexes(*args, **kwargs)

    def drop_index(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("dropIndexes")
        return self._inner.drop_index(*args, **kwargs)

    def drop(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("drop")
        return self._inner.drop(*args, **kwargs)

    def rename(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("renameCollection")
        return self._inner.rename(*args, **kwargs)

    def list_indexes(self, *args: Any, **kwargs: Any) -> Any:
        """The indexes, one document each, as the ``listIndexes`` command a server answers (counted)."""
        info = self._inner.index_information()
        docs = [{"v": spec.get("v", 2), "key": dict(spec["key"]), "name": name,
                 **{k: v for k, v in spec.items() if k not in ("v", "key")}} for name, spec in info.items()]
        self._counter.record("listIndexes", command=self._cmd("listIndexes"), docs=docs)
        return iter(docs)

    def index_information(self) -> dict[str, Any]:
        info = self._inner.index_information()
        # listIndexes returns one document per index: {"v", "key", "name", options...}
        self._counter.record("listIndexes", command=self._cmd("listIndexes"), docs=[{"v": spec.get("v", 2), "key": dict(spec["key"]), "name": name,
                              **{k: v for k, v in spec.items() if k not in ("v", "key")}}
                             for name, spec in info.items()])
        return info


class MockDatabase:
    """mongomock-ng database whose collections count commands like a server backend.

    ``counter`` receives them (``helpers.counting``). Wrapping a database installs the ``_id``
    lookup (:func:`install_id_lookup`), the trusted inserts (:func:`install_trusted_inserts`) and the
    listed sub-pipelines (:func:`install_listed_pipelines`):
    the adapter changes mongomock-ng when the mock is connected, never as a side effect of an import."""

    def __init__(self, inner: Any, counter: Counter) -> None:
        install_id_lookup()
        install_trusted_inserts()
        install_listed_pipelines()
        self._inner = inner._inner if isinstance(inner, MockDatabase) else inner  # wrapped once
        # a database reached from this one (client[name], with_options) shares its tally
        self._counter = counter if isinstance(counter, _Tally) else _Tally(counter)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _wrap(getattr(self._inner, name), self)

    def __getitem__(self, name: str) -> MockCollection:
        return MockCollection(self._inner[name], self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MockDatabase) and other._inner == self._inner

    def __hash__(self) -> int:
        return hash(self._inner.name)

    def __repr__(self) -> str:
        return f"MockDatabase({self._inner.name!r})"

    def with_options(self, *args: Any, **kwargs: Any) -> "MockDatabase":
        """The database with other options, counted on the same counter."""
        return MockDatabase(self._inner.with_options(*args, **kwargs), self._counter)

    def get_collection(self, name: str, *args: Any, **kwargs: Any) -> MockCollection:
        return MockCollection(self._inner.get_collection(name, *args, **kwargs), self)

    def create_collection(self, name: str, *args: Any, **kwargs: Any) -> MockCollection:
        # pymongo first asks whether the collection exists (listCollections), then creates it
        exists = name in self._inner.list_collection_names()
        self._counter.record("listCollections", [{"name": name, "type": "collection"}] if exists else [])
        self._counter.record("create")
        return MockCollection(self._inner.create_collection(name, *args, **kwargs), self)

    def drop_collection(self, name: Any, *args: Any, **kwargs: Any) -> Any:
        self._counter.record("drop")
        if isinstance(name, MockCollection):
            name = name.name
        return self._inner.drop_collection(name, *args, **kwargs)

    def aggregate(self, pipeline: Any, *args: Any, **kwargs: Any) -> MockCursor:
        return MockCursor(self._inner.aggregate(pipeline, *args, **kwargs), "aggregate", self._counter, eager=True,
                          document={"aggregate": 1, "pipeline": list(pipeline), "$db": self._inner.name})

    def list_collections(self, *args: Any, **kwargs: Any) -> Any:
        found = list(self._inner.list_collections(*args, **kwargs))
        self._counter.record("listCollections", found, command={"listCollections": 1, "$db": self._inner.name})
        return iter(found)

    def list_collection_names(self, *args: Any, **kwargs: Any) -> list[str]:
        names = self._inner.list_collection_names(*args, **kwargs)
        self._counter.record("listCollections", [{"name": n, "type": "collection"} for n in names],
               command={"listCollections": 1, "$db": self._inner.name})
        return names

    def command(self, *args: Any, **kwargs: Any) -> Any:
        self._counter.record(str(args[0]) if args and isinstance(args[0], str) else "command")
        return self._inner.command(*args, **kwargs)
