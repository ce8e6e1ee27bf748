"""The advisor's vocabulary (notebook 06): its codes, the two named sets of thresholds with their
sources, and what a review returns (:class:`Finding`, :class:`AdvisorReport`).

Two sets of thresholds:

* ``"atlas"`` (the default, :data:`ATLAS`): the values of MongoDB Atlas' Performance Advisor schema
  triggers, as MongoDB's own MCP server describes them (``mongodb-js/mongodb-mcp-server``,
  ``src/common/atlas/performanceAdvisorUtils.ts``, ``SCHEMA_TRIGGER_DESCRIPTIONS``), and the drop-index
  rules of the Atlas documentation (Review Drop Index Recommendations);
* ``"workbook"`` (:data:`WORKBOOK`): this workbook's stricter teaching values, each with its reason
  (:data:`SOURCES`).

Every finding names its trigger and the value that crossed it.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

__all__ = ["CODES", "BEYOND_CODES", "SEVERITIES", "TRIGGERS", "SOURCES", "Thresholds", "ATLAS", "WORKBOOK",
           "thresholds_named", "Finding", "AdvisorReport", "REPORT_KEYS", "FINDING_KEYS"]

#: Atlas' seven schema suggestion codes
CODES = ("AVOID_UNBOUNDED_ARRAY", "REDUCE_DOCUMENT_SIZE", "REDUCE_LOOKUP_OPS", "REMOVE_UNNECESSARY_INDEXES",
         "REDUCE_NUMBER_OF_NAMESPACES", "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES", "OPTIMIZE_TEXT_QUERIES")
#: what the lessons teach and Atlas does not say (the same in both sets)
BEYOND_CODES = ("USE_OUTLIER_PATTERN", "USE_TIME_SERIES", "USE_ATTRIBUTE_PATTERN", "USE_SUBSET_PATTERN",
                "EXTENDED_REFERENCE_STALENESS")
SEVERITIES = ("high", "medium", "low")

_MCP = ("MongoDB's MCP server (mongodb-js/mongodb-mcp-server, src/common/atlas/performanceAdvisorUtils.ts, "
        "SCHEMA_TRIGGER_DESCRIPTIONS)")
_DROP = "the Atlas documentation (Performance Advisor: Review Drop Index Recommendations)"

#: Atlas' triggers, in the words MongoDB publishes them with
TRIGGERS: dict[str, str] = {
    "DOCS_CONTAIN_UNBOUNDED_ARRAY": "Arrays with over 10000 entries detected in the collection(s)",
    "DOC_SIZE_TOO_LARGE": "Documents larger than 2 MB found in the collection(s)",
    "PERCENT_QUERIES_USE_LOOKUP": "High percentage of queries (>50%) use $lookup operations",
    "NUMBER_OF_QUERIES_USE_LOOKUP": "High number of queries (>100) use $lookup operations",
    "NUMBER_OF_NAMESPACES": "Too many namespaces (collections) in the database (>100)",
    "NUM_INDEXES": "More than 30 indexes detected in the collection(s) scanned",
    "QUERIES_CONTAIN_CASE_INSENSITIVE_REGEX": "Queries use case-insensitive regular expressions",
}

#: Where each threshold comes from: Atlas' value with its source, and the workbook's value with its reason.
SOURCES: dict[str, str] = {
    "max_array_elements": (
        f"Atlas: more than 10,000 elements (trigger DOCS_CONTAIN_UNBOUNDED_ARRAY, 'Arrays with over 10000 entries', "
        f"{_MCP}). Workbook: more than 1,000, the lessons' scale: notebook 02's viral posts and 01's celebrity "
        f"product are past it long before 10,000, and a page shows tens, not thousands."),
    "large_document_bytes": (
        f"Atlas: larger than 2 MB (trigger DOC_SIZE_TOO_LARGE, 'Documents larger than 2 MB', {_MCP}); MongoDB does "
        f"not say decimal or binary, so the advisor takes the smaller, 2,000,000 bytes. Workbook: larger than "
        f"1 MiB (1/16 of the 16 MiB = 16,777,216-byte limit), where notebook 04's airline document already costs "
        f"every read a megabyte. Severity is high from half the limit on."),
    "lookup_share": (
        f"Both: more than half of a collection's reads use $lookup (trigger PERCENT_QUERIES_USE_LOOKUP, "
        f"'>50%', {_MCP})."),
    "lookup_queries": (
        f"Both: more than 100 reads of a collection use $lookup (trigger NUMBER_OF_QUERIES_USE_LOOKUP, "
        f"'>100', {_MCP})."),
    "max_collections": (
        f"Both: more than 100 collections (and views) in the database, system collections not counted "
        f"(trigger NUMBER_OF_NAMESPACES, 'Too many namespaces (collections) in the database (>100)', {_MCP})."),
    "max_indexes": (
        f"Both: more than 30 indexes on a collection (trigger NUM_INDEXES, 'More than 30 indexes', {_MCP})."),
    "unused_index_days": (
        f"Atlas: an index is unused if it has not supported a query for 7 days or more, and only the 20 most "
        f"active collections are inspected ({_DROP}); the advisor judges unused indexes only from a workload "
        f"that covers at least this many days (ObservedWorkload.days). Workbook: 0, any recorded workload, taken "
        f"as the application's whole workload (a lesson's page is its application). Redundant prefixes need no workload."),
    "same_shape_collections": (
        "Atlas: none (off). Workbook: this many collections or more whose names differ only in their last part "
        "and that share their field names and indexes (the manual's Reduce the Number of Collections example "
        "keeps one collection per day, all of one shape): a collection per key value, growing with the keys."),
    "max_documents": (
        "Both: documents read per collection; a larger collection is sampled across ($sample, or random _id "
        "ranges where $sample is not served) and the report says how many it read and how; 0 reads none (the "
        "workload rules only). Not a MongoDB number."),
    "outlier_factor": (
        "Both (beyond Atlas): an array is an outlier when it is longer than this many times the 90th "
        "percentile of its field's lengths (notebook 02's rule of thumb: 99% under 100, over 1,000 is an outlier)."),
    "pattern_min_elements": (
        "Both (beyond Atlas): the outlier and subset findings need an array longer than this; shorter ones "
        "cost too little to redesign for."),
    "attribute_min_keys": (
        "Both (beyond Atlas): field names are data when one level holds more than this many distinct names "
        "across the documents and at least half of them look like dates, numbers or ids."),
    "time_series_min_documents": (
        "Both (beyond Atlas): a collection needs more than this many documents read before its shape (a date "
        "field in insertion order, a key that repeats, no arrays of events) says 'one document per event'."),
}

#: rules that need no number
_RULES_WITHOUT_NUMBERS = {
    "OPTIMIZE_CASE_INSENSITIVE_REGEX_QUERIES": (
        f"Both: any regex with the i option in the workload (trigger QUERIES_CONTAIN_CASE_INSENSITIVE_REGEX, {_MCP}). "
        "The manual: case-insensitive indexes do not improve $regex queries ($regex is not collation-aware)."),
    "OPTIMIZE_TEXT_QUERIES": (
        "Both: an unanchored regex (a text search that examines every index key, or every document without an "
        "index). Atlas publishes no trigger for this code (the MCP server's list has none); its page on it "
        "(Update $text queries to use MongoDB Search) is about $text, and its Search guide names $regex too: "
        "this rule is the workbook's reading. $text queries are not flagged."),
    "REMOVE_UNNECESSARY_INDEXES": (
        f"Both: more than max_indexes indexes; an index whose keys are a prefix of another's (Atlas: 'redundant "
        f"if it matches the prefix of another index', {_DROP}; not when the longer one is partial, sparse or "
        f"hidden); an index no operation of a long enough workload can use (unused_index_days). _id, unique and "
        f"TTL indexes are never flagged. The fix hides the index (hideIndex) and watches before dropping it."),
}


# ---------------------------------------------------------------------------------------------
# thresholds

_OPTIONAL = {"same_shape_collections"}  # None switches the rule off
_ZERO_OK = {"unused_index_days", "max_documents"}


@dataclass(frozen=True)
class Thresholds:
    """Every number the advisor uses. ``Thresholds()`` is Atlas' set (:data:`ATLAS`);
    ``Thresholds.named("workbook")`` is the workbook's stricter one (:data:`WORKBOOK`); override any
    field with ``replace(WORKBOOK, max_array_elements=200)`` or ``Thresholds(max_array_elements=200)``.

    Each value's source is in :data:`SOURCES` (``Thresholds().table()`` shows both sets). Introduced in
    notebook 06.
    """

    max_array_elements: int = 10_000  # flag an array with more elements than this
    large_document_bytes: int = 2_000_000  # flag a document larger than this
    lookup_share: float = 0.5  # flag a collection when more than this share of its reads use $lookup
    lookup_queries: int = 100  # ... or when more than this many of its reads do
    max_collections: int = 100  # flag a database with more collections than this
    max_indexes: int = 30  # flag a collection with more indexes than this
    unused_index_days: float = 7  # judge unused indexes only from a workload this long (0: any workload)
    same_shape_collections: int | None = None  # flag this many collections of one shape (None: off)
    max_documents: int = 50_000  # documents read per collection (more: a sample across it; 0: none)
    outlier_factor: int = 10  # beyond Atlas: an outlier array is this many times the p90 length
    pattern_min_elements: int = 100  # beyond Atlas: the outlier / subset findings need arrays this long
    attribute_min_keys: int = 20  # beyond Atlas: distinct names at one level that make names data
    time_series_min_documents: int = 100  # beyond Atlas: documents before a collection looks like events

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in _OPTIONAL:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or (value == 0 and f.name not in _ZERO_OK):
                raise ValueError(f"Thresholds.{f.name} must be a positive number, got {value!r}")
        if self.lookup_share >= 1:
            raise ValueError(f"Thresholds.lookup_share is a share [0 to 1), got {self.lookup_share!r}")

    def beyond_key(self) -> tuple:
        """The values the findings beyond Atlas use (two sets that share them find the same)."""
        return (self.outlier_factor, self.pattern_min_elements, self.attribute_min_keys, self.time_series_min_documents)

    @classmethod
    def named(cls, name: str) -> "Thresholds":
        """``"atlas"`` (the default) or ``"workbook"``."""
        return thresholds_named(name)

    @property
    def name(self) -> str:
        """``"atlas"``, ``"workbook"``, or ``"custom"`` for any other values."""
        return "atlas" if self == ATLAS else "workbook" if self == WORKBOOK else "custom"

    def table(self) -> Any:
        """Both sets side by side, this one's values, and the sources (a pandas DataFrame)."""
        import pandas as pd

        rows = [{"threshold": f.name, "atlas": getattr(ATLAS, f.name), "workbook": getattr(WORKBOOK, f.name),
                 **({"these": getattr(self, f.name)} if self.name == "custom" else {}),
                 "source": SOURCES[f.name]} for f in fields(self)]
        rows += [{"threshold": f"({code})", "atlas": "-", "workbook": "-",
                  **({"these": "-"} if self.name == "custom" else {}), "source": text}
                 for code, text in _RULES_WITHOUT_NUMBERS.items()]
        return pd.DataFrame(rows).set_index("threshold")


ATLAS = Thresholds()
WORKBOOK = Thresholds(max_array_elements=1_000, large_document_bytes=1_048_576, unused_index_days=0,
                      same_shape_collections=10)


def thresholds_named(name: Any) -> Thresholds:
    """The set called ``name`` (``"atlas"`` or ``"workbook"``); a :class:`Thresholds` is returned as is."""
    if isinstance(name, Thresholds):
        return name
    sets = {"atlas": ATLAS, "workbook": WORKBOOK}
    if name not in sets:
        raise ValueError(f"thresholds must be 'atlas', 'workbook' or a helpers.advisor.Thresholds, not {name!r}")
    return sets[name]


def _limit_text(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


# ---------------------------------------------------------------------------------------------
# findings and the report

#: the keys of AdvisorReport.to_dict() and of each finding in it (the JSON report's shape, kept stable)
REPORT_KEYS = ("database", "engine", "thresholds_set", "thresholds", "collections", "documents_read",
               "documents_total", "sampling", "workload", "workload_operations", "workload_days", "notes", "findings")
FINDING_KEYS = ("code", "collection", "field", "severity", "trigger", "value", "limit", "summary", "evidence",
                "lesson", "engine_note")


@dataclass(frozen=True)
class Finding:
    """One anti-pattern found: where, how bad, the trigger and the value that crossed it, the numbers
    that show it, and the lesson that fixes it."""

    code: str
    collection: str | None
    field: str | None
    severity: str
    evidence: dict[str, Any]
    summary: str
    lesson: str
    engine_note: str | None = None  # evidence this engine cannot show (from the probed capabilities)
    engine_keys: tuple[str, ...] = ()  # evidence keys whose value depends on an engine capability
    trigger: str = ""  # Atlas' trigger (e.g. DOCS_CONTAIN_UNBOUNDED_ARRAY) or the workbook's rule
    value: Any = None  # the measured value that crossed the limit
    limit: Any = None  # the limit it crossed (None: a rule without a number)

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        """(code, collection, field): what a fixture or an exercise compares."""
        return (self.code, self.collection, self.field)

    @property
    def crossed(self) -> str:
        """The trigger and the value that crossed it, in words."""
        if self.limit is None:
            return f"{self.trigger}: {_limit_text(self.value)}"
        return f"{self.trigger}: {_limit_text(self.value)} > {_limit_text(self.limit)}"

    def as_dict(self) -> dict[str, Any]:
        return _jsonable({k: getattr(self, k) for k in FINDING_KEYS})

    def evidence_text(self, engine_evidence: bool = False) -> str:
        """The evidence in one line; without the engine-dependent keys unless ``engine_evidence``."""
        return _evidence_text({k: v for k, v in self.evidence.items() if engine_evidence or k not in self.engine_keys})


@dataclass
class AdvisorReport:
    """What :func:`helpers.advisor.review` found in one database (print it, or ``to_json()`` for scripts)."""

    database: str
    engine: str | None
    collections: list[str]
    documents_read: int
    documents_total: int
    workload: str | None
    workload_operations: int
    findings: list[Finding]
    thresholds: Thresholds
    notes: list[str] = field(default_factory=list)
    sampling: list[dict[str, Any]] = field(default_factory=list)  # per collection: documents, read, how
    workload_days: float | None = None

    def keys(self) -> set[tuple[str, str | None, str | None]]:
        return {f.key for f in self.findings}

    def codes(self) -> list[str]:
        order = CODES + BEYOND_CODES
        return sorted({f.code for f in self.findings}, key=order.index)

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    def table(self, engine_evidence: bool = False) -> Any:
        """One row per finding: severity, code, collection, field, trigger crossed, evidence, fix (a pandas
        DataFrame). Evidence that depends on an engine capability is left out unless ``engine_evidence``,
        so the table is the same on every engine."""
        import pandas as pd

        rows = [{"severity": f.severity, "code": f.code, "collection": f.collection, "field": f.field,
                 "crossed": f.crossed, "evidence": f.evidence_text(engine_evidence),
                 "fix": f.lesson} for f in self.findings]
        return pd.DataFrame(rows, columns=["severity", "code", "collection", "field", "crossed", "evidence", "fix"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (its shape is documented in the README and kept stable: :data:`REPORT_KEYS`)."""
        return _jsonable({
            "database": self.database, "engine": self.engine, "thresholds_set": self.thresholds.name,
            "thresholds": asdict(self.thresholds), "collections": self.collections,
            "documents_read": self.documents_read, "documents_total": self.documents_total,
            "sampling": self.sampling, "workload": self.workload, "workload_operations": self.workload_operations,
            "workload_days": self.workload_days, "notes": self.notes,
            "findings": [f.as_dict() for f in self.findings]})

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def text(self) -> str:
        """The readable report."""
        counts = Counter(f.severity for f in self.findings)
        sampled = [s for s in self.sampling if s["read"] < s["documents"]]
        head = [f"Schema review of database {self.database!r}"
                + (f" ({self.engine})" if self.engine else "") + f", thresholds: {self.thresholds.name}:",
                f"  {len(self.collections)} collection{'' if len(self.collections) == 1 else 's'}, "
                f"{self.documents_read:,} of {self.documents_total:,} documents read"
                + (f" ({len(sampled)} sampled)" if sampled else "") + "; workload: "
                + (f"{self.workload_operations:,} operations ({self.workload})" if self.workload
                   else "none given (workload rules skipped)"),
                f"  {len(self.findings)} finding{'' if len(self.findings) == 1 else 's'}"
                + (" (" + ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s]) + ")" if self.findings
                   else ": nothing to fix at these thresholds")]
        body = []
        for f in self.findings:
            where = ".".join(p for p in (f.collection, f.field) if p) or "(database)"
            body += ["", f"[{f.severity}] {f.code}  {where}", f"  {f.summary}", f"  trigger: {f.crossed}",
                     f"  evidence: {_evidence_text(f.evidence)}", f"  fix: {f.lesson}"]
            if f.engine_note:
                body.append(f"  engine: {f.engine_note}")
        tail = [""] + [f"note: {n}" for n in self.notes] if self.notes else []
        return "\n".join(head + body + tail)

    __str__ = text


def _evidence_text(evidence: Mapping[str, Any]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return {True: "yes", False: "no", None: "unknown"}[v]
        if isinstance(v, int):
            return f"{v:,}"
        if isinstance(v, float):
            return f"{v:.0%}" if 0 <= v <= 1 else f"{v:,.1f}"
        if isinstance(v, (list, tuple)):
            return ", ".join(fmt(x) for x in v)
        return str(v)
    return "; ".join(f"{k} {fmt(v)}" for k, v in evidence.items())


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
