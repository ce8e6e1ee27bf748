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
as zero. Daily round trips, documents and bytes are deterministic; a daily time is one engine's on
one machine, and is labelled so wherever it is shown.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["Operation", "Workload", "METRICS", "WORK", "cost_of", "plot_daily"]

#: the deterministic metrics a workload weighs, as :meth:`helpers.measure.Measurement.costs` names them
METRICS = ("round trips", "docs returned", "bytes returned", "docs written")
#: the server's work, weighed only when every cost carries it (from an explain: ``caps.explain``)
WORK = ("keys examined", "docs examined")
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


def cost_of(cost: Any) -> dict[str, float]:
    """The deterministic costs of one run of an operation, as a dict keyed by :data:`METRICS` (plus
    ``"median ms"`` when the cost carries a time, and ``"keys examined"``/``"docs examined"`` when
    it carries the server's work): from a ``Measurement``, a ``CommandCounter`` or a mapping with
    those keys (a missing metric is an error, so no cost is silently zero; a missing or ``None``
    server work is left out, not zero)."""
    if hasattr(cost, "costs") and callable(cost.costs):  # helpers.measure.Measurement
        out = dict(cost.costs())
        out["median ms"] = cost.median_ms
        for key, value in (("keys examined", getattr(cost, "keys_examined", None)),
                           ("docs examined", getattr(cost, "docs_examined", None))):
            if value is not None:
                out[key] = value
        return out
    if hasattr(cost, "round_trips") and hasattr(cost, "docs_written"):  # helpers.counting.CommandCounter
        return {"round trips": cost.round_trips, "docs returned": cost.docs_returned,
                "bytes returned": cost.bytes_returned, "docs written": cost.docs_written}
    if isinstance(cost, Mapping):
        missing = [m for m in METRICS if m not in cost]
        if missing:
            raise ValueError(f"a cost needs {', '.join(METRICS)}; this one lacks {', '.join(missing)}: {dict(cost)!r}")
        out = {m: cost[m] for m in METRICS}
        if "median ms" in cost:
            out["median ms"] = cost["median ms"]
        for key in WORK:
            if cost.get(key) is not None:
                out[key] = cost[key]
        return out
    raise TypeError(f"a cost is a Measurement, a CommandCounter or a mapping of {METRICS}, not {type(cost).__name__}")


@dataclass(frozen=True)
class Workload:
    """What an application does: its operations, each with its rate and where the rate comes from."""

    title: str
    operations: tuple[Operation, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        ops = tuple(self.operations)
        object.__setattr__(self, "operations", ops)
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

    def _costs(self, costs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
        if not isinstance(costs, Mapping) or not costs:
            raise ValueError("costs: a mapping {design: {operation: cost}} with at least one design")
        out: dict[str, dict[str, dict[str, float]]] = {}
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
            out[str(design)] = {op: cost_of(per_op[op]) for op in self.names}
        return out

    def weigh(self, costs: Mapping[str, Mapping[str, Any]], *, per_operation: bool = False) -> Any:
        """Daily costs per design: each operation's measured cost times its rate per day, summed.

        ``costs`` maps each design to ``{operation name: cost}`` for every operation (see
        :func:`cost_of`). Returns a DataFrame indexed by design with ``round trips / day``,
        ``docs returned / day``, ``MB returned / day`` and ``docs written / day``, and, when every
        cost carries a time, ``busy s / day`` (the sum of median times times rates: one engine on
        one machine, a comparison between designs, not a capacity plan), and, when every cost
        carries the server's work, ``keys examined / day`` and ``docs examined / day`` (each only
        when every design's every operation has it: a missing one is never counted as zero).
        ``per_operation=True`` gives the rows by (design, operation) instead."""
        import pandas as pd

        measured = self._costs(costs)
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
                rows.append(row)
        table = pd.DataFrame(rows).set_index(["design", "operation"])
        if per_operation:
            return table
        return table.groupby(level="design", sort=False).sum()

    def pick(self, costs: Mapping[str, Mapping[str, Any]], by: str | Sequence[str] = "round trips / day") -> str:
        """The design with the lowest daily cost ``by`` one column of :meth:`weigh` (or several, in
        order: ties on the first are broken by the next), e.g. ``"docs examined / day"`` when the
        costs carry the server's work."""
        daily = self.weigh(costs)
        keys = [by] if isinstance(by, str) else list(by)
        for k in keys:
            if k not in daily.columns:
                raise ValueError(f"pick by one of {list(daily.columns)}, not {k!r}")
        return str(daily.sort_values(keys, kind="stable").index[0])


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
