"""A workload, stated first and used last: the operations an application runs, and how often.

Introduced in notebook 01, used by every design notebook. MongoDB's schema design process starts
from the workload ("identify the workload, map the relationships, apply patterns"): which operations
the application runs, how often each runs per day, how fast each must answer, and where each figure
comes from. A design notebook states its :class:`Workload` before its first section; its Recap
weighs the costs it measured per operation by those rates (:meth:`Workload.weigh`) into a daily cost
per design, and picks from that (:meth:`Workload.pick`): a design is cheaper *for an application*,
not per call.

Costs come from the workbook's own measurements: a :class:`helpers.measure.Measurement`, a
:class:`helpers.counting.CommandCounter`, or a mapping with the same keys (``"round trips"``,
``"docs returned"``, ``"bytes returned"``, ``"docs written"``, and optionally ``"median ms"``).
A cost may also carry the server's work, ``"keys examined"`` and ``"docs examined"`` (a
``Measurement`` has them where the engine explains faithfully: ``caps.explain``); the daily table
weighs them only when every design's every operation carries them, and never counts a missing one
as zero. ``"index keys written"`` (``helpers.indexkeys``) is the write side of the server's work: a
read writes none. Daily round trips, documents, bytes and index keys written are deterministic; keys
and documents examined are one engine's plans (a real MongoDB's may differ: docs/ENGINES.md); a daily
time is one engine's on one machine, and is labelled so wherever it is shown.

**A contest, not a choice.** An operation of a design can be written several ways: the obvious one,
the one a MongoDB engineer would write, any other a reviewer names. Give them all, as
:class:`Forms` ``{form: cost}``; :meth:`Workload.contest` shows every form with what it costs, the
ones not billed labelled as counter-examples. How a form is billed, column by column of the
workload's criterion (``Workload.by``): each design's cheapest possible day on the column is
compared, and designs within ``Workload.margin`` (3 % unless stated) of the cheapest stay level
(a tie), the others are out. A design that stays may be billed at forms that cost it more on that
column, to save on the next, while it stays within the margin of its best rival, so it never loses
a column it could tie; the design in front keeps a lead beyond the margin over every design out.
From the column that decides (for a design out, the column it went out on; for a design alone, the
first), a design is billed at its own cheapest forms: a form ties with its operation's cheapest when
what it costs the day more is within the operation's share of the margin (the margin of the
design's day on the column, divided among its operations), and the next column decides. So a
design's bill can change with the rivals it is weighed against; the margin is applied once on a
column; and a form added to one of two designs never loses it the pick
(``tests/test_workload.py``). With three designs or more a tie is not transitive (100 ties 103, 103
ties 106, 100 does not tie 106), so a third design can change which of two wins: the
:class:`Pick`'s sentence says which column decided. A read measured with the driver's default first batch (101 documents)
pays a ``getMore`` nobody chose: the bill refuses it, so every billed read sets its batch size. A
read that left a server cursor open (``CommandCounter.open_cursors``: a batch size equal to its
answer) is refused too, not priced: see :func:`billable`. Forms measured on layouts that cannot
stand together (one collection whose old reports a ``delete_many`` removes, a collection per day
that is dropped) say so (``Forms(layouts=...)``) and are never billed together.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["Operation", "Workload", "Forms", "Pick", "METRICS", "WORK", "billable", "cost_of", "plot_daily"]

#: the deterministic metrics a workload weighs, as :meth:`helpers.measure.Measurement.costs` names them
METRICS = ("round trips", "docs returned", "bytes returned", "docs written")
#: the server's work, weighed only when every cost carries it: keys and documents examined (from an
#: explain: ``caps.explain``) and index keys written (``helpers.indexkeys``; a read writes none)
WORK = ("keys examined", "docs examined", "index keys written")
#: the criterion a workload prices and picks by unless it states its own: round trips first, then
#: the server's work (documents fetched, then index keys read: a covered query fetches none and
#: still reads its keys), then bytes, then the writes' index keys (what each index costs its writes)
DEFAULT_BY = ("round trips / day", "docs examined / day", "keys examined / day", "MB returned / day",
              "index keys written / day")
#: two designs this close (a fraction of the better) are a tie on that column
DEFAULT_MARGIN = 0.03
#: the most combinations of forms (one per operation) the bill weighs for one design
_MAX_VARIANTS = 200_000
_KINDS = ("read", "write")
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class Operation:
    """One operation of a workload.

    ``per_day`` is how often it runs per day; ``source`` says where that figure comes from (an
    article and its numbers, or ``"assumption: ..."``); ``latency`` is the answer time it needs, in
    words (``"interactive, < 100 ms"``); ``returns`` is what it returns."""

    name: str
    kind: str
    per_day: float
    latency: str
    returns: str
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("an operation needs a name (a non-empty string)")
        if self.kind not in _KINDS:
            raise ValueError(f"operation {self.name!r}: kind must be 'read' or 'write', not {self.kind!r}")
        if isinstance(self.per_day, bool) or not isinstance(self.per_day, (int, float)) \
                or not math.isfinite(self.per_day) or self.per_day < 0:
            raise ValueError(f"operation {self.name!r}: per_day must be a number of runs a day, 0 or more, "
                             f"not {self.per_day!r}")
        if not str(self.source).strip():
            raise ValueError(f"operation {self.name!r}: say where its rate comes from (source=...), "
                             f"or 'assumption: ...'")

    @property
    def per_second(self) -> float:
        """The average rate, per second (a peak is higher: say so in ``latency`` where it matters)."""
        return self.per_day / SECONDS_PER_DAY


#: what a measured read can carry that the bill refuses to price (kept in a cost only when not 0)
_UNBILLABLE = ("default batch getMores", "open cursors")


def billable(cost: Mapping[str, float], where: str) -> None:
    """Raise ValueError, saying what to do, when a cost (:func:`cost_of`'s) cannot be billed as
    measured; ``where`` names the design, operation and form.

    A read that left its first batch to the driver's default paid a ``getMore`` nobody chose. A read
    that left a server cursor open (its batch size equal to its answer: the server cannot know that
    nothing is left) owes a ``killCursors`` that no count includes, and the server holds the cursor
    until it comes (or the cursor times out). It is refused rather than priced: the driver sends
    that ``killCursors`` when the cursor is closed, or, for a cursor dropped unclosed, later and from
    a background task that closes several in one command, so no per-run cost is right; and a
    MongoDB engineer writes the read so that its cursor ends with its answer (a batch size larger
    than the answer, a ``limit``, a single batch), reads it to the end (a ``getMore`` the count
    then includes), or closes it inside the measured block (its ``killCursors``, then counted)."""
    if cost.get("default batch getMores"):
        raise ValueError(
            f"{where}: the read left its first batch to the driver's default (101 documents) and paid "
            f"{cost['default batch getMores']:.0f} getMore for it; measure it with an explicit batch size "
            f"(find(..., batch_size=n), aggregate(..., batchSize=n)), as a competent engineer would")
    n = cost.get("open cursors")
    if n:
        raise ValueError(
            f"{where}: the read left {n:.0f} server cursor{'s' if n != 1 else ''} open (e.g. a batch size equal to "
            f"its answer), so it owes a killCursors round trip that no count includes; ask a batch size larger "
            f"than the answer (batch_size=n+1, or a limit), exhaust the cursor (read it to the end), or close "
            f"it inside the measured block (cursor.close(): its killCursors is then counted), then measure it again")


def cost_of(cost: Any) -> dict[str, float]:
    """The deterministic costs of one run of an operation, as a dict keyed by :data:`METRICS` (plus
    ``"median ms"`` when the cost carries a time, and :data:`WORK` where it carries the server's
    work): from a ``Measurement``, a ``CommandCounter`` or a mapping with those keys (a missing
    metric is an error, so no cost is silently zero; a missing or ``None`` server work is left out,
    not zero, except that a cost that wrote nothing wrote no index key). Every value is a finite
    number, 0 or more."""
    if hasattr(cost, "costs") and callable(cost.costs):  # helpers.measure.Measurement
        out = dict(cost.costs())
        out["median ms"] = cost.median_ms
        extra = {"keys examined": getattr(cost, "keys_examined", None),
                 "docs examined": getattr(cost, "docs_examined", None),
                 "index keys written": getattr(cost, "index_keys_written", None),
                 "default batch getMores": getattr(cost, "default_batch_getmores", 0),
                 "open cursors": getattr(cost, "open_cursors", 0)}
        wrote_unseen = False
    elif hasattr(cost, "round_trips") and hasattr(cost, "docs_written"):  # helpers.counting.CommandCounter
        if not getattr(cost, "docs_written_known", True):
            raise ValueError("a cost's docs written is unknown: a $merge or $out wrote documents no reply counts; "
                             "count it with count_commands(index_keys=<its target collection>)")
        out = {"round trips": cost.round_trips, "docs returned": cost.docs_returned,
               "bytes returned": cost.bytes_returned, "docs written": cost.docs_written}
        extra = {"index keys written": getattr(cost, "index_keys_written", None),
                 "default batch getMores": getattr(cost, "default_batch_getmores", 0),
                 "open cursors": len(getattr(cost, "open_cursors", ()))}
        wrote_unseen = bool(getattr(cost, "aggregate_writes", 0))
    elif isinstance(cost, Mapping):
        missing = [m for m in METRICS if m not in cost]
        if missing:
            raise ValueError(f"a cost needs {', '.join(METRICS)}; this one lacks {', '.join(missing)}: {dict(cost)!r}")
        out = {m: cost[m] for m in METRICS}
        if "median ms" in cost:
            out["median ms"] = cost["median ms"]
        extra = {k: cost.get(k) for k in (*WORK, *_UNBILLABLE)}
        wrote_unseen = False
    else:
        raise TypeError(f"a cost is a Measurement, a CommandCounter or a mapping of {METRICS}, not {type(cost).__name__}")
    out.update({k: v for k, v in extra.items() if v is not None and (v or k not in _UNBILLABLE)})
    if "index keys written" not in out and out["docs written"] == 0 and not wrote_unseen:
        out["index keys written"] = 0  # nothing written: no index key written
    for k, v in out.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"a cost's {k!r} must be a finite number, 0 or more, not {v!r}")
    return out


class Forms:
    """The forms of one operation of one design, each measured: ``{form label: cost}``.

    ``Forms({"one $lookup": m1, "two queries": m2})``, or ``Forms([m1, m2])`` with each
    ``Measurement``'s label. The contest bills the design at the forms its day is cheapest at by the
    workload's criterion (:meth:`Workload.billed`, the module's docstring says how); the others are
    counter-examples, shown with what they cost. ``teaching`` maps a form to the reason a notebook keeps it in view (``{"two queries": "the obvious form, 1.6"}``).
    ``layouts`` maps a form to the layout (or layouts) it was measured on and needs (``{"drop
    yesterday's collection": "a collection per day"}``, ``{"range scan": {"clustered", "clustered per
    day"}}``): a design is billed only at forms whose layouts stand together (one layout every form
    that names one names), so a form measured on one layout is never billed beside one that needs
    another. A form with none fits any."""

    def __init__(self, forms: Any, *, teaching: Mapping[str, str] | None = None,
                 layouts: Mapping[str, Any] | None = None) -> None:
        items = list(forms.items()) if isinstance(forms, Mapping) else [(getattr(m, "label", None), m) for m in forms]
        if not items:
            raise ValueError("Forms: give at least one measured form")
        labels = [label for label, _ in items]
        if any(not isinstance(label, str) or not label.strip() for label in labels):
            raise ValueError(f"Forms: every form needs a label (a non-empty string), not {labels!r}")
        if len(set(labels)) != len(labels):
            raise ValueError(f"Forms: form labels must differ; repeated: {sorted({x for x in labels if labels.count(x) > 1})}")
        self.forms = {label: cost_of(cost) for label, cost in items}
        carried = {label: tuple(k for k in WORK if k in c) for label, c in self.forms.items()}
        if len(set(carried.values())) > 1:
            raise ValueError("Forms: measure every form of an operation alike, so that they compare on the same "
                             "columns; the server's work carried: "
                             + "; ".join(f"{label}: {', '.join(k) or 'none'}" for label, k in carried.items()))
        self.teaching = dict(teaching or {})
        unknown = [label for label in self.teaching if label not in self.forms]
        if unknown:
            raise ValueError(f"Forms: teaching names {unknown}, which are not among the forms {labels}")
        self.layouts: dict[str, frozenset[str]] = {}
        for label, lay in dict(layouts or {}).items():
            if label not in self.forms:
                raise ValueError(f"Forms: layouts names {label!r}, which is not among the forms {labels}")
            names = (lay,) if isinstance(lay, str) else tuple(lay) if isinstance(lay, (set, frozenset, list, tuple)) else None
            if not names or any(not isinstance(x, str) or not x.strip() for x in names):
                raise ValueError(f"Forms: the layout of {label!r} is a name or a set of names, not {lay!r}")
            self.layouts[label] = frozenset(names)

    def __repr__(self) -> str:
        return f"Forms({list(self.forms)})"


class Pick(str):
    """What :meth:`Workload.pick` found: a design's name (a ``str``), or ``"tie: A, B"`` when the
    designs stay level on every criterion (so ``costs[pick]`` is an error for a tie: use
    ``pick.designs``); ``sentence`` says how it was decided, ``designs`` are the designs still level
    at the end (one: a decided pick), ``decided_by`` the column that decided (``None``: a tie)."""

    designs: tuple[str, ...]
    decided_by: str | None
    sentence: str

    def __new__(cls, designs: Sequence[str], decided_by: str | None, sentence: str) -> "Pick":
        value = designs[0] if len(designs) == 1 else "tie: " + ", ".join(designs)
        out = super().__new__(cls, value)
        out.designs, out.decided_by, out.sentence = tuple(designs), decided_by, sentence
        return out

    @property
    def tie(self) -> bool:
        return len(self.designs) > 1

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython shows the sentence
        p.text(self.sentence)


def _columns(by: Any, where: str) -> tuple[str, ...]:
    keys = (by,) if isinstance(by, str) else tuple(by)
    unknown = [k for k in keys if k not in COLUMNS]
    if not keys or unknown:
        raise ValueError(f"{where}: by names columns of weigh(): pick by one of {list(COLUMNS)}, not {list(keys)!r}")
    return keys


def _per_run(column: str) -> str:
    """The per-run metric behind a daily column (``"MB returned / day"`` -> ``"bytes returned"``)."""
    base = column.removesuffix(" / day")
    return {"MB returned": "bytes returned", "busy s": "median ms"}.get(base, base)


#: the columns of :meth:`Workload.weigh` (``busy s`` only when timed, the server's work only when measured)
COLUMNS = ("round trips / day", "docs returned / day", "MB returned / day", "docs written / day", "busy s / day",
           *(f"{k} / day" for k in WORK))


def _daily(metric: str, value: float) -> float:
    """A per-run difference in the units of its daily column (bytes -> MB, ms -> s)."""
    return value / 1e6 if metric == "bytes returned" else value / 1000 if metric == "median ms" else value


def _pct(part: float, whole: float) -> str:
    pct = 100 * part / whole if whole else 0.0
    if 99.5 <= pct < 100:
        return "over 99%"  # never "100%" for what is not all of it
    return f"{pct:.0f}%" if pct >= 10 or pct == 0 else f"{pct:.1f}%" if pct >= 0.1 else f"{pct:.2g}%"


def _more(best: float, gap: float) -> str:
    """How much more the runner-up costs, as a share of the best: the measure the margin is taken on,
    so a win never reads as a gap inside the margin ("2.9% less" of the runner-up is 3.0% more)."""
    if best == 0:
        return ""  # "0 against 5": nothing to add
    if gap < best:
        return f" ({_pct(gap, best)} more)"
    times = (best + gap) / best
    return f" ({times:,.1f} times as much)" if times < 100 else f" ({times:,.0f} times as much)"


def _no_better(forms: "Forms", labels: list[str], carried: list[str], a: str, b: str) -> bool:
    """Form ``a`` can never be billed over ``b``: same layout, ``b`` no dearer on any metric, and
    cheaper on one or given first."""
    ca, cb = forms.forms[a], forms.forms[b]
    if forms.layouts.get(a) != forms.layouts.get(b) or any(cb[m] > ca[m] for m in carried):
        return False
    return any(cb[m] < ca[m] for m in carried) or labels.index(b) < labels.index(a)


def _within(value: float, limit: float) -> bool:
    """``value <= limit``, but for the rounding of a sum of floats (a day summed in another order)."""
    return value <= limit + 1e-9 * max(1.0, abs(limit))


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:,.3g}"


@dataclass(frozen=True)
class Workload:
    """What an application does: its operations, each with its rate and where the rate comes from."""

    title: str
    operations: tuple[Operation, ...] = field(default_factory=tuple)
    #: the columns of :meth:`weigh` a design is priced and picked by, in order (ties go to the next)
    by: tuple[str, ...] = DEFAULT_BY
    #: designs within this fraction of the best on a column tie on it
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        ops = tuple(self.operations)
        object.__setattr__(self, "operations", ops)
        object.__setattr__(self, "by", _columns(self.by, f"workload {self.title!r}"))
        if isinstance(self.margin, bool) or not isinstance(self.margin, (int, float)) or not 0 <= self.margin < 1:
            raise ValueError(f"workload {self.title!r}: margin is a fraction between 0 and 1 (0.03 is 3 %), "
                             f"not {self.margin!r}")
        if not ops:
            raise ValueError(f"workload {self.title!r} has no operations")
        names = [o.name for o in ops]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload {self.title!r}: operation names must differ; repeated: {dupes}")

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.operations]

    def operation(self, name: str) -> Operation:
        for o in self.operations:
            if o.name == name:
                return o
        raise KeyError(f"workload {self.title!r} has no operation {name!r}; it has {self.names}")

    def with_rate(self, name: str, per_day: float, source: str = "changed by hand") -> "Workload":
        """The same workload with one operation's rate changed (an exercise's "what if")."""
        self.operation(name)  # a clear error for an unknown name
        return replace(self, operations=tuple(replace(o, per_day=per_day, source=source) if o.name == name else o
                                              for o in self.operations))

    def table(self) -> Any:
        """The workload as a table (a pandas DataFrame): one row per operation."""
        import pandas as pd

        rows = [{"operation": o.name, "kind": o.kind, "per day": o.per_day, "per second": round(o.per_second, 3),
                 "latency needed": o.latency, "returns": o.returns, "rate's source": o.source}
                for o in self.operations]
        return pd.DataFrame(rows).set_index("operation")

    def _forms(self, costs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Forms]]:
        """Every design's every operation as :class:`Forms` (a single cost is one form, "as measured")."""
        if not isinstance(costs, Mapping) or not costs:
            raise ValueError("costs: a mapping {design: {operation: cost}} with at least one design")
        out: dict[str, dict[str, Forms]] = {}
        for design, per_op in costs.items():
            if not isinstance(per_op, Mapping):
                raise TypeError(f"costs[{design!r}] must map operation names to costs, not {type(per_op).__name__}")
            unknown = [op for op in per_op if op not in self.names]
            missing = [op for op in self.names if op not in per_op]
            if unknown:
                raise ValueError(f"design {design!r}: no operation named {unknown} in workload {self.title!r} "
                                 f"(its operations: {self.names})")
            if missing:
                raise ValueError(f"design {design!r} has no measured cost for {missing}: measure every "
                                 f"operation of the workload for every design")
            out[str(design)] = {op: c if isinstance(c, Forms) else Forms({"as measured": c})
                                for op, c in ((op, per_op[op]) for op in self.names)}
        return out

    def _criterion(self, by: Any, margin: Any) -> tuple[tuple[str, ...], float]:
        keys = self.by if by is None else _columns(by, "pick")
        margin = self.margin if margin is None else margin
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
            raise ValueError(f"margin is a fraction between 0 and 1 (0.03 is 3 %), not {margin!r}")
        return keys, float(margin)

    def _variants(self, design: str, per_op: Mapping[str, Forms], keys: tuple[str, ...]) -> list[tuple]:
        """Every way the design can be built, one form per operation: ``(choice, day)``, where
        ``choice`` is a tuple of form labels in the workload's order, ``day`` maps each metric of
        ``keys`` (and round trips and bytes, the tie-breaks) that every operation carries to the
        design's total a day, and ``chosen`` holds the forms' costs, in the same order. A form the bill cannot price (:func:`billable`) is left out while
        the operation has another; a form no better than another of its operation on every column
        (and the tie-breaks) is left out too (it can never be the cheaper), as is a combination of
        forms measured on layouts that cannot stand together (``Forms(layouts=...)``)."""
        metrics = list(dict.fromkeys([*(_per_run(k) for k in keys), "round trips", "bytes returned"]))
        options = []
        for o in self.operations:
            forms = per_op[o.name]
            labels = [x for x in forms.forms if not any(forms.forms[x].get(k) for k in _UNBILLABLE)] \
                or list(forms.forms)  # only unpriceable forms: billed, and refused when priced (billable)
            carried = [m for m in metrics if all(m in forms.forms[x] for x in labels)]

            kept = [a for a in labels if not any(_no_better(forms, labels, carried, a, b) for b in labels if b != a)]
            options.append([(x, forms.layouts.get(x)) for x in kept])
        count = math.prod(len(x) for x in options)
        if count > _MAX_VARIANTS:
            raise ValueError(f"design {design!r}: {count:,} combinations of its operations' forms are more than the "
                             f"bill weighs ({_MAX_VARIANTS:,}); measure fewer forms of an operation (each form "
                             f"kept is already cheaper than the others somewhere)")
        out = []
        for combo in itertools.product(*options):
            layouts = [set(lay) for _, lay in combo if lay is not None]
            if layouts and not set.intersection(*layouts):
                continue  # forms measured on layouts that cannot stand together
            choice = tuple(x for x, _ in combo)
            chosen = tuple(per_op[o.name].forms[x] for o, x in zip(self.operations, choice))
            day = {}
            for m in metrics:
                if all(m in c for c in chosen):
                    day[m] = sum(o.per_day * c[m] for o, c in zip(self.operations, chosen))
            out.append((choice, day, chosen))
        if not out:
            raise ValueError(f"design {design!r}: no combination of its forms stands on one layout (Forms(layouts=...)): "
                             f"measure each operation on a layout the others were measured on")
        return out

    def _settle(self, variants: list[tuple], metrics: Sequence[str], margin: float) -> tuple:
        """One design on its own, from the column it was decided at: column by column, a form ties
        with its operation's cheapest (among the ways of building the design still in play) when what
        it costs the day more is within the operation's share of ``margin``: ``margin`` times the
        design's cheapest day on the column, divided among the operations that carry it (a day of 0:
        exact ties), so no one operation spends the whole margin; the next column decides. Then the
        fewest round trips and bytes a day, then a run, then the forms in the order given."""
        ops = self.operations
        for m in metrics:
            if len(variants) == 1:
                break
            carrying = [i for i in range(len(ops)) if all(m in v[2][i] for v in variants)]
            if not carrying:
                continue  # a metric no operation of this design carries (for every form)
            low = {i: min(ops[i].per_day * v[2][i][m] for v in variants) for i in carrying}
            share = margin * sum(low.values()) / len(carrying)
            kept = [v for v in variants
                    if all(_within(ops[i].per_day * v[2][i][m] - low[i], share) for i in carrying)]
            if not kept:  # the cheapest forms of each operation do not stand together: the design's day decides
                total = {id(v): sum(ops[i].per_day * v[2][i][m] for i in carrying) for v in variants}
                best = min(total.values())
                kept = [v for v in variants if _within(total[id(v)], best * (1 + margin))]
            variants = kept
        return min(variants, key=lambda v: (v[1]["round trips"], v[1]["bytes returned"],
                                            sum(c["round trips"] for c in v[2]), sum(c["bytes returned"] for c in v[2])))

    def _contest(self, costs: Mapping[str, Mapping[str, Any]], keys: tuple[str, ...], margin: float) -> tuple:
        """The contest behind :meth:`billed`, :meth:`weigh` and :meth:`pick`: ``(bills, steps, level)``.

        Column by column (``keys``, those every design's every operation carries), each design's
        cheapest day on the column over the ways of building it still in play is compared with the
        cheapest of all: within ``margin`` of it, the design stays (a tie); beyond, it is out, and
        billed at its own cheapest forms from that column on. A design that stays keeps the ways of
        building it whose day on the column is within ``margin`` of its best rival's cheapest: a form
        may cost it more on this column to save on the next, never so much that it would lose a
        column it ties; and the cheapest design keeps only those beyond ``margin`` ahead of every
        design out, so a design out is out against the bill as shown. When one design is left, it is
        billed at its own cheapest forms from the deciding column on (:meth:`_settle`). So adding a
        form to one of two designs never loses that design the pick, and the margin is applied once
        on a column: between designs while they are level (a design's day on it at most the margin
        above its best rival's cheapest), within one design from its deciding column on.
        ``steps`` is ``[(column, designs kept, designs out)]``; ``level`` the designs left at the end."""
        per_design = self._forms(costs)
        variants = {d: self._variants(d, per_op, keys) for d, per_op in per_design.items()}
        metrics = [_per_run(k) for k in keys]
        shared = [k for k in keys if all(_per_run(k) in v[1] for vs in variants.values() for v in vs)]
        live, level, steps, settled = dict(variants), list(variants), [], {}
        for k in shared if len(level) > 1 else ():
            m = _per_run(k)
            low = {d: min(v[1][m] for v in live[d]) for d in level}
            best = min(low.values())
            kept = [d for d in level if _within(low[d], best * (1 + margin))]
            out = [d for d in level if d not in kept]
            for d in out:
                settled[d] = self._settle(live[d], metrics[keys.index(k):], margin)
            floor = min((low[d] for d in out), default=math.inf)
            cheapest = next(d for d in kept if low[d] == best)
            for d in kept:
                rivals = [low[e] for e in kept if e != d]
                top = best * (1 + margin) if not rivals else min(rivals) * (1 + margin)
                ways = [v for v in live[d] if _within(v[1][m], top)]
                if d == cheapest and out:
                    ways = [v for v in ways if v[1][m] * (1 + margin) < floor]
                live[d] = ways
            steps.append((k, kept, out))
            level = kept
            if len(level) == 1:
                break
        rest = (metrics[keys.index(steps[-1][0]):] if steps and len(level) == 1  # decided: from that column on
                else [_per_run(k) for k in keys if k not in shared] if steps else metrics)  # a tie; one design
        for d in level:
            settled[d] = self._settle(live[d], rest, margin)
        bills = {d: dict(zip(self.names, settled[d][0])) for d in variants}
        return bills, steps, level

    def billed(self, costs: Mapping[str, Mapping[str, Any]], by: Any = None, *,
               margin: float | None = None) -> dict[str, dict[str, str]]:
        """Which form the bill prices, for each design's each operation: ``{design: {operation: form}}``
        (by the workload's ``by``, or the ``by`` given), as the contest among the designs given
        decides it (see :meth:`_contest`): a design is billed at the forms that keep it level with its
        best rival on each column it ties, and at its own cheapest from the column that decides."""
        keys, margin = self._criterion(by, margin)
        return self._contest(costs, keys, margin)[0]

    def _costs(self, costs: Mapping[str, Mapping[str, Any]], by: Any = None,
               margin: float | None = None, bills: Mapping[str, Mapping[str, str]] | None = None
               ) -> dict[str, dict[str, dict[str, float]]]:
        """Each design's each operation at its billed form (the bill's prices; ``bills``: the
        contest's, when the caller has them already)."""
        bills = self.billed(costs, by, margin=margin) if bills is None else bills
        out: dict[str, dict[str, dict[str, float]]] = {}
        for design, per_op in self._forms(costs).items():
            out[design] = {}
            for op, forms in per_op.items():
                label = bills[design][op]
                cost = forms.forms[label]
                billable(cost, f"design {design!r}, operation {op!r}, form {label!r}")
                out[design][op] = cost
        return out

    def contest(self, costs: Mapping[str, Mapping[str, Any]], by: Any = None) -> Any:
        """Every measured form of every operation of every design, one row each (a DataFrame indexed
        by design, operation, form): its costs per run, ``"billed"`` (the form the bill prices, the
        one :meth:`billed` names) or ``"counter-example"``, and a ``"note"``: the notebook's reason to
        show it, what it costs a day against the billed form, and what its count leaves out (a cursor
        left open). A billed form the bill cannot price is refused, as in :meth:`weigh` (:func:`billable`)."""
        import pandas as pd

        keys, margin = self._criterion(by, None)
        bills = self._contest(costs, keys, margin)[0]
        rows = []
        for design, per_op in self._forms(costs).items():
            for o in self.operations:
                forms = per_op[o.name]
                best = bills[design][o.name]
                b = forms.forms[best]
                billable(b, f"design {design!r}, operation {o.name!r}, form {best!r}")
                for label, c in forms.forms.items():
                    diffs = []
                    if label != best:
                        for column in keys:
                            metric = _per_run(column)
                            if metric in c and metric in b and c[metric] != b[metric]:
                                d = _daily(metric, c[metric] - b[metric]) * o.per_day
                                if d:  # an operation run 0 times a day costs the day nothing either way
                                    diffs.append(f"{'+' if d > 0 else '-'}{_fmt(abs(d))} {column}")
                    unpriced = (f"left {c['open cursors']:.0f} server cursor{'s' if c['open cursors'] != 1 else ''} "
                                f"open: a killCursors not counted"
                                if c.get("open cursors") else "")
                    note = "; ".join(x for x in (forms.teaching.get(label, ""),
                                                 ("against the billed form: " + ", ".join(diffs)) if diffs else "",
                                                 unpriced) if x)
                    rows.append({"design": design, "operation": o.name, "form": label,
                                 "billed": "billed" if label == best else "counter-example",
                                 **{m: c[m] for m in METRICS}, **{k: c.get(k) for k in WORK}, "note": note})
        table = pd.DataFrame(rows).set_index(["design", "operation", "form"])
        return table.dropna(axis=1, how="all")

    def weigh(self, costs: Mapping[str, Mapping[str, Any]], *, per_operation: bool = False, by: Any = None,
              margin: float | None = None) -> Any:
        """Daily costs per design: each operation's measured cost times its rate per day, summed.

        ``costs`` maps each design to ``{operation name: cost}`` for every operation (see
        :func:`cost_of`). Returns a DataFrame indexed by design with ``round trips / day``,
        ``docs returned / day``, ``MB returned / day`` and ``docs written / day``, and, when every
        cost carries a time, ``busy s / day`` (the sum of median times times rates: one engine on
        one machine, a comparison between designs, not a capacity plan), and, when every cost
        carries the server's work, ``keys examined / day``, ``docs examined / day`` and ``index keys
        written / day`` (each only when every design's every operation has it: a missing one is never
        counted as zero). An operation given as :class:`Forms` is priced at the form the contest
        among the designs given bills, by the workload's ``by`` (or the ``by`` given; see :meth:`billed`).
        ``per_operation=True`` gives the rows by (design, operation) instead, with the ``billed form`` of each."""
        return self._weigh(costs, per_operation, by, margin, None)

    def _weigh(self, costs: Mapping[str, Mapping[str, Any]], per_operation: bool, by: Any, margin: float | None,
               bills: Mapping[str, Mapping[str, str]] | None) -> Any:
        import pandas as pd

        bills = self.billed(costs, by, margin=margin) if bills is None else bills
        measured = self._costs(costs, by, margin, bills)
        forms = bills
        timed = all("median ms" in c for per_op in measured.values() for c in per_op.values())
        work = [k for k in WORK if all(k in c for per_op in measured.values() for c in per_op.values())]
        rows = []
        for design, per_op in measured.items():
            for o in self.operations:
                c = per_op[o.name]
                row = {"design": design, "operation": o.name,
                       "round trips / day": c["round trips"] * o.per_day,
                       "docs returned / day": c["docs returned"] * o.per_day,
                       "MB returned / day": c["bytes returned"] * o.per_day / 1e6,
                       "docs written / day": c["docs written"] * o.per_day}
                if timed:
                    row["busy s / day"] = c["median ms"] * o.per_day / 1000
                for k in work:
                    row[f"{k} / day"] = c[k] * o.per_day
                if per_operation:
                    row["billed form"] = forms[design][o.name]
                rows.append(row)
        table = pd.DataFrame(rows).set_index(["design", "operation"])
        if per_operation:
            return table
        return table.groupby(level="design", sort=False).sum()

    def pick(self, costs: Mapping[str, Mapping[str, Any]], by: str | Sequence[str] | None = None, *,
             margin: float | None = None) -> Pick:
        """The design with the lowest daily cost by the columns ``by`` of :meth:`weigh`, in order (the
        workload's ``by`` unless given; each design billed at its forms as the contest decides, by the
        same columns, :meth:`billed`): designs within ``margin`` (the workload's, 3 % unless stated) of the best on a column tie on
        it, and the next column decides among them. Returns a :class:`Pick`: the design's name, or
        ``"tie: A, B"`` when no column separates them, with a ``sentence`` that says which column
        decided and by how much. A column named explicitly must be in the table; the workload's own
        ``by`` skips columns the engine could not measure (keys and documents examined need
        ``caps.explain``) or the costs do not carry (index keys written need ``index_keys=``), and the
        sentence says so."""
        keys, margin = self._criterion(by, margin)
        bills, trace, level = self._contest(costs, keys, margin)
        daily = self._weigh(costs, False, keys, margin, bills)
        if by is not None:
            for k in keys:
                if k not in daily.columns:
                    raise ValueError(f"pick by one of {list(daily.columns)}, not {k!r}")
        if not any(k in daily.columns for k in keys):
            raise ValueError(f"pick: no column of {list(keys)} was measured for every operation of every design; "
                             f"measure one of them (keys and documents examined need an explain: caps.explain), "
                             f"or pick by one of {list(daily.columns)}")
        skipped = [k for k in keys if k not in daily.columns]
        keys = tuple(k for k in keys if k in daily.columns)
        steps: list[str] = []
        decided_by = None
        if len(daily) == 1:
            steps.append("there is one design only: nothing to compare")
            decided_by = keys[0]
        for k, kept, out in trace:
            values = {d: float(daily.loc[d, k]) for d in (*kept, *out)}
            if len(kept) > 1:
                low, high = min(values[d] for d in kept), max(values[d] for d in kept)
                steps.append(f"{k}: {', '.join(kept)} tie ({_fmt(low)} to {_fmt(high)}, within {margin:.0%})")
            else:
                runner = min(out, key=lambda d: values[d])
                best, gap = values[kept[0]], values[runner] - values[kept[0]]
                steps.append(f"{k}: {kept[0]} is cheapest, {_fmt(best)} against {_fmt(values[runner])} for "
                             f"{runner}{_more(best, gap)}")
                decided_by = k
        if len(level) > 1:
            level = sorted(level, key=lambda d: tuple(float(daily.loc[d, k]) for k in keys))
            steps.append("no column separates them")
        head = f"Pick: {level[0]}" if len(level) == 1 else f"Tie: {', '.join(level)}"
        unmeasured = [k for k in skipped if k != "index keys written / day"]  # an explain this engine lacks
        uncounted = [k for k in skipped if k == "index keys written / day"]  # said when it could have decided
        note = "".join([f" ({', '.join(unmeasured)}: not measured on this engine)" if unmeasured else "",
                        f" ({', '.join(uncounted)}: not counted for every write)" if uncounted and len(level) > 1 else ""])
        said = "; ".join(steps)
        return Pick(level, decided_by, f"{head}. {said[:1].upper()}{said[1:]}{note}.")

def plot_daily(daily: Any, metrics: Iterable[str] = ("round trips / day", "docs returned / day",
                                                     "MB returned / day", "docs written / day"),
               *, title: str | None = None) -> Any:
    """Bar chart of :meth:`Workload.weigh`'s table: one panel per metric, one bar per design."""
    import matplotlib.pyplot as plt

    metrics = [m for m in metrics if m in daily.columns]
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics) + 1, 0.5 * len(daily) + 1.6),
                             sharey=True, squeeze=False)
    labels = [str(i) for i in daily.index]
    for ax, metric in zip(axes[0], metrics):
        values = [float(v) for v in daily[metric]]
        ax.barh(labels, values, color="#4C72B0")
        ax.set_title(metric, fontsize=11)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:,.4g}", va="center", fontsize=9)
        ax.set_xlim(0, max(values + [1]) * 1.35)
    axes[0][0].invert_yaxis()
    if title:
        fig.suptitle(title, fontsize=13)
    fig.tight_layout()
    plt.show()
    return fig
