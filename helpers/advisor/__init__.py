"""A read-only schema advisor: anti-patterns found in a database and its workload (notebook 06).

:func:`review` looks at a database on any backend, and optionally at a workload (the commands a
block of code sent, kept by ``helpers.count_commands(keep_commands=True)``, or a real server's profiler
output), and reports findings under the seven codes of MongoDB Atlas' Performance Advisor schema
suggestions, then the five findings beyond Atlas that the lessons teach:

=========================================  ======================================================
``AVOID_UNBOUNDED_ARRAY``                  an array longer than ``max_array_elements`` (Atlas: 10,000)
``REDUCE_DOCUMENT_SIZE``                   a document larger than ``large_document_bytes`` (Atlas: 2 MB)
``REDUCE_LOOKUP_OPS``                      more than half, or more than 100, of a collection's reads use ``$lookup``
``REMOVE_UNNECESSARY_INDEXES``             more than 30 indexes; a prefix of another index; an index no query of
                                           a long enough workload can use (Atlas: 7 days)
``REDUCE_NUMBER_OF_NAMESPACES``            more than 100 collections (the workbook set: also a collection per key)
``OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES``  a regex with the ``i`` option in the workload
``OPTIMIZE_TEXT_QUERIES``                  an unanchored regex (a text search) in the workload
``USE_OUTLIER_PATTERN``                    array lengths with a heavy tail (notebook 02)
``USE_TIME_SERIES``                        one document per event, in time order, per entity (notebook 08)
``USE_ATTRIBUTE_PATTERN``                  field names that are data
``USE_SUBSET_PATTERN``                     large arrays the workload reads only a ``$slice`` of
``EXTENDED_REFERENCE_STALENESS``           a copied field the workload updates at its source (notebook 01)
=========================================  ======================================================

The thresholds come in two named sets (:mod:`helpers.advisor.findings`): ``"atlas"``, the default,
Atlas' own trigger values with their source, and ``"workbook"``, stricter teaching values with their
reasons. Every finding names its trigger and the value that crossed it.

The advisor only reads: ``listCollections``, ``listIndexes``, ``count``, ``find`` and ``aggregate``
(``$sample``, for a collection larger than ``max_documents``), and the profiler's ``system.profile``
when asked. It never writes, never changes an index, an option or the profiler level. A view whose
pipeline fails, or a collection that vanishes while the review runs, is skipped with a note naming
the cause. Sizes are ``len(bson.encode(doc))`` (what ``$bsonSize`` returns), so findings are the same
on every engine, except where the probe says an engine cannot show a piece of evidence (a finding
then says which, in ``engine_note``).

The lesson's parts: ``findings`` (codes, thresholds, the report), ``observed`` (the observed
workload: the commands an application sent), ``rules`` (reading the database, and the rules); the
face holds :func:`review` and :func:`reviews`. ``cases`` holds the planted cases it is checked on
and notebook 06's designs (``from helpers.advisor import cases``); ``checks`` the exercises' checkers.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..backends import info_of
from .findings import (
    ATLAS,
    BEYOND_CODES,
    CODES,
    FINDING_KEYS,
    REPORT_KEYS,
    SEVERITIES,
    SOURCES,
    TRIGGERS,
    WORKBOOK,
    AdvisorReport,
    Finding,
    Thresholds,
    thresholds_named,
)
from .observed import ObservedOperation, ObservedWorkload, record_workload
from .rules import _SKIP, atlas_findings, beyond_findings, read_collection

__all__ = ["CODES", "BEYOND_CODES", "SOURCES", "TRIGGERS", "Thresholds", "ATLAS", "WORKBOOK", "Finding", "AdvisorReport",
           "REPORT_KEYS", "FINDING_KEYS", "ObservedOperation", "ObservedWorkload", "review", "reviews", "record_workload",
           "PROFILE_ADVICE"]

#: how to turn the profiler on without harming a busy server (the advisor never does it)
PROFILE_ADVICE = ('db.command("profile", 1, slowms=100, sampleRate=0.1) on that mongod: level 1 keeps '
                  'operations slower than slowms, sampled (or set a filter); level 2 writes every operation. '
                  'Run the application, then db.command("profile", 0)')

#: ``info``'s default: the ``BackendInfo`` of the connection ``db`` was opened with (``info_of(db)``)
_FROM_CONNECTION = object()


def _cause(e: Exception) -> str:
    return str(e).split(", full error")[0].split(" :: caused by :: ")[-1]


def review(db: Any, workload: ObservedWorkload | None = None, *, thresholds: Thresholds | str | None = None,
           collections: Iterable[str] | None = None, info: Any = _FROM_CONNECTION) -> AdvisorReport:
    """Review ``db`` (and ``workload``, if given) and return a :class:`AdvisorReport`. Only reads.

    ``thresholds``: ``"atlas"`` (the default: Atlas' trigger values), ``"workbook"`` (the stricter
    teaching set) or a :class:`Thresholds`. ``collections`` limits the review to those names (the
    collection count still covers the whole database); ``info`` is the backend's ``BackendInfo``
    (default: that of the connection ``db`` was opened with, ``helpers.backends.info_of(db)``; the
    review never connects or probes, since probing writes), whose probed capabilities say which
    evidence this engine can show; ``info=None`` for an engine that was not probed (``workbook.py
    advise``, or a ``db`` of your own client). Introduced in notebook 06.
    """
    t = thresholds_named(thresholds) if thresholds is not None else ATLAS
    return reviews(db, workload, thresholds=(t,), collections=collections, info=info)[t.name]


def reviews(db: Any, workload: ObservedWorkload | None = None, *, thresholds: Iterable[Thresholds | str] = ("atlas", "workbook"),
            collections: Iterable[str] | None = None, info: Any = _FROM_CONNECTION) -> dict[str, AdvisorReport]:
    """:func:`review` with several sets of thresholds, reading the database once: ``{set name: AdvisorReport}``
    (``"custom"`` for a :class:`Thresholds` of your own; give one custom set at most). Introduced in notebook 06."""
    sets = [thresholds_named(x) for x in thresholds]
    if len({x.name for x in sets}) != len(sets):
        raise ValueError("thresholds: give each set once (and at most one custom Thresholds)")
    if workload is not None and not isinstance(workload, ObservedWorkload):
        raise TypeError(f"workload must be a helpers.advisor.ObservedWorkload (from ObservedWorkload.from_counter or "
                        f"record_workload), not {type(workload).__name__}")
    if info is _FROM_CONNECTION:
        info = info_of(db)
    collations = bool(getattr(info.caps, "collation", True)) if info is not None else True
    names = sorted(db.list_collection_names())
    reviewed = [n for n in names if not _SKIP.match(n)]
    missing: list[str] = []
    if collections is not None:
        wanted = set(collections)
        missing = sorted(wanted - set(names))
        reviewed = [n for n in reviewed if n in wanted]
    read_notes: list[str] = []
    colls = {}
    limit = max(x.max_documents for x in sets)
    breakdown = min(x.large_document_bytes for x in sets)
    for n in reviewed:
        try:
            colls[n] = read_collection(db, n, limit, breakdown)
        except Exception as e:  # a view whose pipeline fails on the server (e.g. $divide by zero)
            if type(e).__name__ != "OperationFailure":
                raise
            read_notes.append(f"skipped {n!r}: reading it failed ({_cause(e)}; code {getattr(e, 'code', None)}): "
                              f"if it is a view, its pipeline fails on this data; the rest was reviewed")
    after = set(db.list_collection_names())
    vanished = sorted(n for n in colls if n not in after)
    for n in vanished:
        del colls[n]
    namespaces = sum(1 for n in names if not n.startswith("system."))
    beyond = beyond_findings(db, colls, sets[0], workload)  # the same in every set
    out = {}
    for t in sets:
        findings = atlas_findings(colls, t, workload, collations, namespaces)
        findings += beyond if t.beyond_key() == sets[0].beyond_key() else beyond_findings(db, colls, t, workload)
        order = CODES + BEYOND_CODES
        findings.sort(key=lambda f: (order.index(f.code) >= len(CODES), SEVERITIES.index(f.severity),
                                     order.index(f.code), str(f.collection), str(f.field)))
        notes = list(read_notes)
        if vanished:
            notes.append(f"dropped while the review ran (not reviewed): {', '.join(vanished)}")
        if missing:
            notes.append(f"not in the database (not reviewed): {', '.join(missing)}")
        for c in colls.values():
            if c.read < c.count:
                notes.append(f"{c.name}: read {c.read:,} of {c.count:,} documents ({c.how})")
        if workload is None:
            notes.append("no workload: REDUCE_LOOKUP_OPS, unused indexes, the regex rules, the subset pattern and "
                         "copied fields need one (helpers.advisor.record_workload, or ObservedWorkload.from_profile on a "
                         "real server)")
        elif not workload.complete:
            notes.append(f"unused indexes not judged: {workload.source} holds only some operations (at level 1 "
                         f"the slow or sampled ones), and an index that serves only fast queries is in none of them")
        elif t.unused_index_days and (workload.days is None or workload.days < t.unused_index_days):
            notes.append("unused indexes not judged: the workload covers "
                         + ("an unknown time" if workload.days is None else f"{workload.days:,.1f} days")
                         + f", less than {t.unused_index_days:g} (unused_index_days)")
        if info is None:
            notes.append("capabilities not probed (probing writes): index collations are taken as the server reports them")
        engine = f"{info.engine} {info.version}" if info is not None else None
        sampling = [{"collection": c.name, "documents": c.count, "read": c.read, "how": c.how} for c in colls.values()]
        out[t.name] = AdvisorReport(db.name, engine, sorted(colls), sum(c.read for c in colls.values()),
                             sum(c.count for c in colls.values()), workload.source if workload is not None else None,
                             len(workload) if workload is not None else 0, findings, t, notes, sampling,
                             workload.days if workload is not None else None)
    return out
