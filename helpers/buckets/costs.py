"""What notebook 08's bill is made of, beyond round trips and documents: the server's work.

* :func:`batch_filter` and :func:`index_keys_of`: the documents a write may touch, so that
  ``helpers.count_commands(index_keys=...)`` reads only those before and after it and counts the
  index keys the write inserted and deleted (``helpers.indexkeys``);
* :func:`write_work`: the keys and documents the server examined for a write's commands, from the
  explain of each query it sent and each update or delete's filter (an insert examines nothing);
* :func:`measured_read`: ``helpers.benchmark`` of one of the lesson's reads, with the keys and
  documents the server examined, from the explain of the very commands the read sent, where the
  engine explains faithfully (``caps.explain``). Those counts are one engine's plans: where the
  engine sorts in memory what one of the collection's indexes already holds in order, the plan note
  says so and says what a real MongoDB reads instead;
* the daily bill (section 8.7): :class:`Feed` (how the sample's batches relate to the workload's),
  :func:`at_workload` (a batched write's costs at the workload's batch), :func:`drop_a_day` and
  :func:`by_collection` (a day's retention), and :func:`daily_costs`, every measured form of every
  operation of each design as ``helpers.workload.Forms``, each form's layout declared (:data:`PLAIN`,
  :data:`CLUSTERED`, :data:`PER_DAY`, :data:`CLUSTERED_PER_DAY`), so that forms measured on layouts
  that cannot stand together are never billed together; :func:`clustered_day` measures a day of a
  clustered collection per day (the old day's collection dropped, the next created clustered and indexed).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..backends import backend_info, info_of
from ..counting import count_commands, paused
from ..measure import Measurement, benchmark
from ..safety import (
    ForeignCollectionError,
    drop_workbook_collection,
    forget,
    is_workbook_collection,
    note_created,
    record,
)
from ..workload import Forms, cost_of
from .pattern import BATCH_SIZE, BUCKETS, DESIGNS, window_start

__all__ = ["batch_filter", "index_keys_of", "measured_read", "read_plan", "write_work", "Feed", "PLAIN", "CLUSTERED",
           "PER_DAY", "TTL", "CLUSTERED_PER_DAY", "CLUSTERED_INDEX", "LAYOUTS", "clustered_day", "per_stored", "at_workload", "drop_a_day", "by_collection", "daily_costs",
           "without_pair_index"]


def batch_filter(reports: Iterable[Mapping[str, Any]], *, design: str) -> dict[str, Any]:
    """The documents a store of ``reports`` may insert or change, as a filter: their aircraft in their
    time span (one document per report, a time series collection), or those aircraft's buckets of
    those hours (buckets). Narrow, so that the index-key snapshots before and after read few documents."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, not {design!r}")
    reports = list(reports)
    if not reports:
        raise ValueError("batch_filter: give the reports of one write (at least one)")
    aircraft = sorted({r["icao24"] for r in reports})
    first, last = min(r["time"] for r in reports), max(r["time"] for r in reports)
    if design == BUCKETS:
        return {"icao24": {"$in": aircraft}, "start": {"$gte": window_start(first), "$lte": window_start(last)}}
    return {"icao24": {"$in": aircraft}, "time": {"$gte": first, "$lte": last}}


def index_keys_of(collection: Any, filter: Mapping[str, Any]) -> dict[Any, dict[str, Any]] | None:
    """What ``count_commands(index_keys=...)`` reads for a write to ``collection`` that touches only
    documents matching ``filter``: ``{collection: filter}``. ``None`` (not counted, never zero) for a
    real time series collection (``caps.timeseries_storage``): its indexes hold keys of the server's
    internal buckets, which the measurements read back do not show."""
    with paused():  # the workbook's own look-up, never part of a measured cost
        options = collection.options()
    info = info_of(collection)
    if options.get("timeseries") and (info is None or info.caps.timeseries_storage):
        return None
    return {collection: dict(filter)}


def _stats(plan: Mapping[str, Any]) -> tuple[Any, int, int]:
    """(winning plan, keys examined, documents examined) of one explain: its top-level
    ``executionStats`` where it has one (a find; an aggregation run by the slot-based engine), else
    the sum over the pipeline's ``$cursor`` stages (the classic engine). An engine that reports both
    is counted once."""
    if "executionStats" in plan:
        stats = [plan["executionStats"]]
        winning = (plan.get("queryPlanner") or {}).get("winningPlan")
    else:
        cursors = [s["$cursor"] for s in plan.get("stages", []) if isinstance(s, dict) and "$cursor" in s]
        stats = [c.get("executionStats", {}) for c in cursors]
        winning = (cursors[0].get("queryPlanner") or {}).get("winningPlan") if cursors else None
    if not stats or any("totalKeysExamined" not in s or "totalDocsExamined" not in s for s in stats):
        raise ValueError("this explain carries no keys/documents examined: check caps.explain first")
    return winning, sum(int(s["totalKeysExamined"]) for s in stats), sum(int(s["totalDocsExamined"]) for s in stats)


def _stages(node: Any) -> list[str]:
    if isinstance(node, dict):
        here = [node["stage"]] if isinstance(node.get("stage"), str) else []
        return here + [s for v in node.values() for s in _stages(v)]
    if isinstance(node, list):
        return [s for v in node for s in _stages(v)]
    return []


def _query_shape(command: Mapping[str, Any]) -> tuple[dict, list[tuple[str, int]], int]:
    """(filter, sort, limit) of a find, or of an aggregation's leading ``$match``/``$sort``/``$limit``."""
    if "find" in command:
        return dict(command.get("filter") or {}), list(dict(command.get("sort") or {}).items()), \
            abs(int(command.get("limit") or 0))
    filter: dict = {}
    sort: list = []
    limit = 0
    for stage in command.get("pipeline", []):
        if "$match" in stage and not sort:
            filter.update(stage["$match"])
        elif "$sort" in stage and not sort:
            sort = list(dict(stage["$sort"]).items())
        elif "$limit" in stage and sort:
            limit = int(stage["$limit"])
            break
        else:
            break
    return filter, sort, limit


def _index_in_order(collection: Any, filter: dict, sort: list[tuple[str, int]]) -> str | None:
    """The name of an index of ``collection`` that holds the matches of ``filter`` in ``sort`` order
    (its leading fields fixed by equality, then the sort's fields, all one way or all reversed)."""
    fixed = {f for f, v in filter.items() if not (isinstance(v, dict) and any(str(k).startswith("$") and k != "$eq"
                                                                            for k in v))}
    wanted = [(f, d) for f, d in sort if f not in fixed]
    ranges = set(filter) - fixed  # an index holds them in order only where they bound its first sorted field
    if ranges and (not wanted or ranges != {wanted[0][0]}):
        return None  # a range on another field: a real MongoDB may well prefer that field's index, then sort
    for index in collection.list_indexes():
        key = list(dict(index["key"]).items())
        while key and key[0][0] in fixed:
            key = key[1:]
        head = key[:len(wanted)]
        if [f for f, _ in head] == [f for f, _ in wanted] and (
                all(d == k for (_, d), (_, k) in zip(wanted, head)) or
                all(d == -k for (_, d), (_, k) in zip(wanted, head))):
            return index["name"]
    return None


def read_plan(collection: Any, read: Callable[[], Any]) -> tuple[dict[str, Any], str | None]:
    """Run ``read`` once, explain each ``find``/``aggregate`` it sent (with ``executionStats``), and
    return one explain document that ``helpers.plans.plan_summary`` reads (each command's winning plan
    and its keys and documents examined, counted once), and a note, or None: where the engine sorted
    in memory what an index of ``collection`` holds in order. Call it only where ``caps.explain``."""
    with count_commands(keep_commands=True) as sent:
        out = read()
        if hasattr(out, "__next__"):
            list(out)
    plans, notes = [], []
    engine = (info_of(collection) or backend_info()).engine
    for command in sent.command_documents:
        if next(iter(command), None) not in ("find", "aggregate"):
            continue
        cmd = {k: v for k, v in command.items() if k not in ("batchSize", "singleBatch", "cursor", "$db")}
        if "aggregate" in cmd:
            cmd["cursor"] = {}
        plan = collection.database.command("explain", cmd, verbosity="executionStats")
        winning, keys, docs = _stats(plan)
        plans.append({"queryPlanner": {"winningPlan": winning},
                      "executionStats": {"totalKeysExamined": keys, "totalDocsExamined": docs}})
        filter, sort, limit = _query_shape(cmd)
        # sorted apart from the index: a SORT stage in the plan, or a $sort the pipeline ran after its cursor
        apart = "SORT" in _stages(winning) or any("$sort" in s for s in plan.get("stages", []) if isinstance(s, dict))
        index = _index_in_order(collection, filter, sort) if sort and apart else None
        if index is not None:
            notes.append(f"{engine} sorts every match in memory; a real MongoDB reads the {index} index in order"
                         + (f" and stops after {limit}" if limit else " (no SORT stage)"))
    return {"commands": plans}, "; ".join(dict.fromkeys(notes)) or None  # a note once, however many commands


def measured_read(label: str, read: Callable[[], Any], collection: Any, *, repeat: int = 3) -> Measurement:
    """``helpers.benchmark(label, read)`` (no warm-up run, ``repeat`` timed runs) with the server's work
    where the engine explains faithfully (``caps.explain``): keys and documents examined from
    :func:`read_plan`, and its note beside the plan. Notebook 08, section 8.4."""
    info = info_of(collection) or backend_info()
    note: list[str | None] = []

    def explain() -> dict[str, Any]:
        plan, why = read_plan(collection, read)
        note.append(why)
        return plan

    m = benchmark(label, read, repeat=repeat, warmup=0, explain=explain, info=info)
    if note and note[0]:
        m.plan_note = "; ".join(x for x in (m.plan_note, note[0]) if x)
    return m


def write_work(collection: Any, commands: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Keys and documents examined by a write's ``commands`` (``count_commands(keep_commands=True)``):
    each ``find``/``aggregate`` explained as sent, each update's filter explained as the ``find`` that
    finds what it changes (``limit`` 1 for an update of one document), each delete's the same without
    a limit; an insert examines nothing. Explained after the write, on what it left (a filter on
    ``_id`` examines the same either way). Call it only where the engine explains (``caps.explain``)."""
    keys = docs = 0
    with paused():  # the workbook's own explains, never part of a measured cost
        for command in commands:
            verb = next(iter(command), None)
            if verb in ("find", "aggregate"):
                cmd = {k: v for k, v in command.items() if k not in ("batchSize", "singleBatch", "cursor", "$db")}
                if verb == "aggregate":
                    cmd["cursor"] = {}
                found = [cmd]
            elif verb in ("update", "delete"):
                found = [{"find": command[verb], "filter": s["q"], **({"limit": 1} if not s.get("multi") and
                                                                        s.get("limit", 1) else {})}
                         for s in command["updates" if verb == "update" else "deletes"]]
            else:
                continue
            for cmd in found:
                _, k, d = _stats(collection.database.command("explain", cmd, verbosity="executionStats"))
                keys, docs = keys + k, docs + d
    return {"keys examined": keys, "docs examined": docs}


#: the layouts the bill's forms are measured on: a form needs its layout, and forms of one design are
#: billed together only where their layouts stand together (``Forms(layouts=...)``). A plain
#: collection's writes are also a day's collection's writes (each day's collection is a plain one with
#: the same indexes) and a TTL-indexed collection's (its time index carries ``expireAfterSeconds``: an
#: insert writes the same keys; ``ttl_collection``); a clustered collection's are its own, and so are a
#: clustered collection per day's (each day's collection a clustered one with the same indexes); its
#: delete stands only with its own store, and so does a clustered collection per day's drop.
PLAIN, CLUSTERED, PER_DAY, TTL = "a plain collection", "a clustered collection", "a collection per day", "a TTL index"
CLUSTERED_PER_DAY = "a clustered collection per day"
LAYOUTS = (PLAIN, CLUSTERED, PER_DAY, TTL, CLUSTERED_PER_DAY)
_CLUSTERED_WRITES = frozenset({CLUSTERED, CLUSTERED_PER_DAY})
#: the ``clusteredIndex`` option of notebook 08's clustered collections (MongoDB 5.3+): documents in ``_id`` order
CLUSTERED_INDEX = {"key": {"_id": 1}, "unique": True}
_PLAIN_WRITES = frozenset({PLAIN, PER_DAY, TTL})
#: what a batched write of the bucket design costs per bucket it touches (its share of a batch)
PER_BUCKET = ("docs written", "docs returned", "bytes returned", "keys examined", "docs examined")
_PER_RUN = ("round trips", "docs returned", "bytes returned", "docs written", "index keys written", "keys examined",
            "docs examined")


@dataclass(frozen=True)
class Feed:
    """The feed a write was measured on, and the workload's: ``batch`` reports a batch at the
    workload's rate (the map's freshness), the sample stored in ``batches`` batches that touched
    ``windows`` aircraft-hours in all (summed batch by batch), and ``in_range`` aircraft a batch at the
    workload; ``reports_per_day`` and ``retention_days`` the workload's."""

    batch: int
    batches: int
    windows: int
    in_range: float
    reports_per_day: float
    retention_days: int

    def __post_init__(self) -> None:
        for name in ("batch", "batches", "windows", "in_range", "reports_per_day", "retention_days"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"Feed: {name} is a number above 0, not {v!r}")


def per_stored(w: Mapping[str, Any]) -> dict[str, float]:
    """A stored feed's costs (notebook 08's ``store_feed``) per report stored; a metric the engine
    could not count (``None``) is left out, not zero."""
    if not w.get("reports stored"):
        raise ValueError("per_stored: the measured feed stored no reports ('reports stored' is "
                         f"{w.get('reports stored')!r}): store a feed of at least one report, then measure")
    return {m: w[m] / w["reports stored"] for m in _PER_RUN if w.get(m) is not None}


def at_workload(w: Mapping[str, Any], feed: Feed, per_window: Iterable[str] = ()) -> dict[str, float]:
    """A batched write's costs per report at the workload's batch: its round trips a batch over
    ``feed.batch`` reports (the sample's last batch is short: a batch, not a report, is what costs a
    round trip), and each metric of ``per_window`` per aircraft-hour it touched, at ``feed.in_range``
    aircraft a batch, not the sample's few. ``"round trips"`` in ``per_window``: the read round trips
    a batch, plus the others per aircraft-hour (``bucket_reports``' writes)."""
    per_window = tuple(per_window)
    rt = w["read round trips"] if "round trips" in per_window else w["round trips"]
    out = per_stored(w) | {"round trips": rt / feed.batches / feed.batch}
    for m in (k for k in per_window if w.get(k) is not None):
        v = (w[m] - (w["read round trips"] if m == "round trips" else 0)) / feed.windows
        out[m] = (out[m] if m == "round trips" else 0) + v * feed.in_range / feed.batch
    return out


def drop_a_day(drop: Mapping[str, Any], docs_per_report: float, feed: Feed,
               plan: Mapping[str, Any] | None = None, *, by_server: bool = False) -> dict[str, float]:
    """One ``delete_many`` of a day's documents (``docs_per_report`` times the day's reports), with the
    index keys each deleted document held in the measured ``drop`` (``round trips``, ``docs deleted``,
    ``index keys written``), and, given its ``plan`` (``drop_plan``'s), the server's work: per
    document deleted for an index scan, per document held (``retention_days`` of them) for a scan.
    ``by_server``: the same documents deleted by the server's TTL task (a TTL index on the time the
    delete's filter reads): what it deletes, document by document, with each document's index keys,
    and no round trip from the application."""
    if not drop.get("docs deleted"):
        raise ValueError("drop_a_day: the measured delete removed no documents ('docs deleted' is "
                         f"{drop.get('docs deleted')!r}): measure a delete of a day that holds reports")
    docs, keys = docs_per_report * feed.reports_per_day, drop["index keys written"]
    out = {"round trips": 0 if by_server else drop["round trips"], "docs returned": 0, "bytes returned": 0, "docs written": docs,
           "index keys written": None if keys is None else keys / drop["docs deleted"] * docs}
    if plan is not None:
        per, n = (plan["would delete"], docs) if "IXSCAN" in plan["plan"] else (plan["documents held"],
                                                                                  docs * feed.retention_days)
        out |= {m: plan[m] / per * n for m in ("keys examined", "docs examined")}
    return {m: v for m, v in out.items() if v is not None}


def by_collection(by_day: Mapping[str, Any], live_map: Any, across: Any, *, across_a_day: float) -> dict[str, float]:
    """A day's collection dropped and the next one's indexes created (``by_day``: their ``round
    trips``, ``docs written``), with what the map pays more on the ``across_a_day`` refreshes a day
    whose minute spans two days' collections (``across``, measured against ``live_map``)."""
    out = {"round trips": by_day["round trips"], "docs returned": 0, "bytes returned": 0,
           "docs written": by_day["docs written"], "index keys written": 0}
    one, two = cost_of(live_map), cost_of(across)
    extra = {m: max(0, v - one.get(m, 0)) for m, v in two.items()
             if m in ("round trips", "docs returned", "bytes returned", "keys examined", "docs examined")}
    return {m: out.get(m, 0) + across_a_day * v for m, v in extra.items()} | {m: v for m, v in out.items()
                                                                             if m not in extra}


def clustered_day(db: Any, old: str, new: str, indexes: Iterable[Any]) -> dict[str, Any]:
    """A day later in a clustered collection per day, measured: the workbook's collection ``old``
    dropped, ``new`` created clustered on ``_id`` (:data:`CLUSTERED_INDEX`, ``check_exists=False``: no
    ``listCollections`` first) and given ``indexes`` (``IndexModel`` s, one ``createIndexes``). Returns
    its ``round trips``, ``commands``, ``docs written`` and the ``indexes dropped with it`` (``_id``'s
    included). Through ``helpers.safety``, outside the count: ``old`` must be the workbook's (refused,
    ``ForeignCollectionError``, before anything is dropped), a ``new`` left by an earlier run is dropped
    only if the workbook's, and ``new`` is recorded before it is created and by its UUID after."""
    indexes = list(indexes)
    with paused():  # the workbook's own checks and records, never part of a measured cost
        if not is_workbook_collection(db, old):
            raise ForeignCollectionError(f"clustered_day: {old!r} in database {db.name!r} is not a collection "
                                         f"this workbook created, so it will not drop it")
        if new == old:
            raise ValueError("clustered_day: the next day's collection needs a name of its own")
        held = len(db[old].index_information())
        drop_workbook_collection(db, new)  # an earlier run's, if any: refused if somebody else's
        record(db, new)
    with count_commands() as cost:
        db.drop_collection(old)
        db.create_collection(new, clusteredIndex=CLUSTERED_INDEX, check_exists=False)
        if indexes:
            db[new].create_indexes(indexes)
    with paused():
        forget(db, [old])
        note_created(db, new)
    return {"round trips": cost.round_trips, "commands": " + ".join(cost.commands), "docs written": cost.docs_written,
            "indexes dropped with it": held}


def daily_costs(designs: Iterable[str], feed: Feed, *, writes: Mapping[str, Any], bucket_forms: Mapping[str, Any],
                clustered: Mapping[str, Mapping[str, Any]], reads: Mapping[str, Mapping[str, Any]],
                default_batch: Mapping[str, Any], map_loop: Mapping[str, Any], every_kept: Mapping[str, Any],
                docs_per_report: Mapping[str, float], drops: Mapping[str, Any],
                drop_plans: Mapping[str, Any] | None, by_day: Mapping[str, Any], across: Mapping[str, Any],
                across_a_day: float, ttl: Iterable[str] = (),
                clustered_days: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """``{design: {operation: cost or Forms}}`` for notebook 08's workload, every form measured:

    * storing a report: ``writes[design]`` (one ``insert`` a batch; the bucket writer), the bucket
      design's other forms (``bucket_forms``: ``"read, then write"``, ``"bucket_reports"``,
      ``"upserts"``), and the design in a clustered collection where one was measured
      (``clustered[design]["write"]``), each at the workload's batch (:func:`at_workload`; the bucket
      forms' documents and bytes per aircraft-hour a batch touches);
    * the reads of ``reads[design]``, with their counter-examples: the track at the driver's default
      batch (``default_batch``), the map as one read per aircraft (``map_loop``) and without its
      ``$match`` on time (``every_kept``);
    * dropping a day: one ``delete_many`` (:func:`drop_a_day`, from ``drops`` and ``drop_plans``),
      the day's collection dropped (:func:`by_collection`, from ``by_day`` and ``across``), and the
      clustered collection's delete (``clustered[design]["drop"]``, ``["plan"]``), and, for the designs
      of ``ttl`` (their store measured on a ``ttl_collection`` as on the plain one), the TTL task's
      deletes (:func:`drop_a_day` ``by_server``), not run: priced from the measured delete, and, for
      the designs of ``clustered_days`` (``{"by day": clustered_day's, "across": the map across
      midnight on those collections}``), a clustered collection per day dropped (:func:`by_collection`).

    Each store and drop form names its layout: the plain collection's store stands with its delete,
    with a collection per day and with a TTL index, the clustered collection's store with its own
    delete and with a clustered collection per day."""
    ttl = set(ttl)
    costs: dict[str, dict[str, Any]] = {}
    for d in designs:
        per = PER_BUCKET if d == BUCKETS else ()
        first = "the writer, no read" if d == BUCKETS else "insert_many a batch"
        store, teaching, layouts = {first: at_workload(writes[d], feed, per)}, {}, {first: _PLAIN_WRITES}
        if d in clustered:
            store["clustered"] = at_workload(clustered[d]["write"], feed, per)
            teaching[first] = "a plain collection: a separate _id index"
            teaching["clustered"] = ("a clustered collection: billed with its own delete_many or a clustered "
                                     "collection per day")
            layouts["clustered"] = _CLUSTERED_WRITES
        if d == BUCKETS:
            b = bucket_forms["bucket_reports"]
            writes_per_window = (b["round trips"] - b["read round trips"]) / feed.windows
            store |= {"read, then write": at_workload(bucket_forms["read, then write"], feed, PER_BUCKET),
                      "bucket_reports": at_workload(b, feed, ("round trips",) + PER_BUCKET),
                      "upserts": at_workload(bucket_forms["upserts"], feed, PER_BUCKET)}
            teaching |= {"read, then write": "any writer: bk.read_then_bulk, a read and one bulk_write a batch",
                         "bucket_reports": f"the teaching form, any writer: a read a batch, then {writes_per_window:.2f} "
                                           f"writes per aircraft-hour (measured), at ~{feed.in_range:.0f} aircraft a "
                                           f"batch (the sample's {feed.windows / feed.batches:.1f} aircraft-hours scaled)",
                         "upserts": "stores a re-send again (8.5)"}
            layouts |= {f: _PLAIN_WRITES for f in ("read, then write", "bucket_reports", "upserts")}
        drop = {"delete_many by time": drop_a_day(drops[d], docs_per_report[d], feed,
                                                  drop_plans[d] if drop_plans else None),
                "a collection per day": by_collection(by_day[d], reads[d]["the live map"], across[d],
                                                      across_a_day=across_a_day)}
        drop_teaching = {"a collection per day": "drop + createIndexes: no document or index key removed one by one; "
                                                 f"{across_a_day:g} maps a day read two collections (included)"}
        drop_layouts = {"delete_many by time": PLAIN, "a collection per day": PER_DAY}
        if d in ttl:
            drop["a TTL index"] = drop_a_day(drops[d], docs_per_report[d], feed, drop_plans[d] if drop_plans else None,
                                             by_server=True)
            drop_teaching["a TTL index"] = ("the server's TTL task deletes each expired document, as delete_many does, "
                                            "with no round trip (priced from the measured delete, not run)")
            drop_layouts["a TTL index"] = TTL
        if d in clustered:
            c = clustered[d]
            drop["clustered"] = drop_a_day(c["drop"], docs_per_report[d], feed, c["plan"] if drop_plans else None)
            drop_teaching["delete_many by time"] = "a plain collection: a separate _id index"
            drop_teaching["clustered"] = "a clustered collection's delete_many: billed only with its own store"
            drop_layouts["clustered"] = CLUSTERED
        if d in clustered and d in (clustered_days or {}):
            c = clustered_days[d]
            drop[CLUSTERED_PER_DAY] = by_collection(c["by day"], reads[d]["the live map"], c["across"],
                                                    across_a_day=across_a_day)
            drop_teaching[CLUSTERED_PER_DAY] = (f"drop + create (clusteredIndex) + createIndexes: billed only with the "
                                                f"clustered store; {across_a_day:g} maps a day read two collections "
                                                f"(included)")
            drop_layouts[CLUSTERED_PER_DAY] = CLUSTERED_PER_DAY
        track = reads[d]["track for an hour"]
        if d != BUCKETS:  # the buckets' track returns a few buckets: no batch to cut
            track = Forms({f"batch_size={BATCH_SIZE:,}": track, "default batch": default_batch[d]},
                          teaching={"default batch": "the obvious form: 101 documents, then a getMore"})
        costs[d] = {
            "store a report": Forms(store, teaching=teaching, layouts=layouts),
            "track for an hour": track,
            "the live map": Forms({"one aggregate": reads[d]["the live map"], "one read per aircraft": map_loop[d],
                                   "every aircraft kept": every_kept[d]},
                                  teaching={"one read per aircraft": "the obvious form: a round trip per aircraft",
                                            "every aircraft kept": "no $match on time: 30 days of aircraft"}),
            "hourly summary": reads[d]["hourly summary"],
            "drop a day": Forms(drop, teaching=drop_teaching, layouts=drop_layouts)}
    return costs


def without_pair_index(costs: Mapping[str, Mapping[str, Any]], design: str) -> dict[str, dict[str, Any]]:
    """``costs`` (:func:`daily_costs`') with ``design``'s store and drop forms writing one index key
    fewer per document written: the per-report design without its ``(icao24, time)`` index, which a
    real MongoDB does not need for a track written as an ``_id`` range (``report_id`` bounds). Every
    form keeps its teaching note and its layout."""
    def fewer(c: Any) -> dict[str, float]:
        c = cost_of(c)
        return {**c, "index keys written": c["index keys written"] - c["docs written"]}

    out = {d: dict(ops) for d, ops in costs.items()}
    for op in ("store a report", "drop a day"):
        forms = costs[design][op]
        forms = forms if isinstance(forms, Forms) else Forms({"as measured": forms})
        out[design][op] = Forms({f: fewer(c) for f, c in forms.forms.items()}, teaching=forms.teaching,
                                layouts={f: set(lay) for f, lay in forms.layouts.items()})
    return out
