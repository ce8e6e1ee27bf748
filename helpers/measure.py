"""Measuring query shapes: wall time beside deterministic costs.

Introduced in notebook 00. ``measure`` runs a callable with a warm-up and repeats, times each run
with ``perf_counter_ns`` and, for the same call, counts round trips, documents and BSON bytes
returned and documents written (see ``helpers.counting``). Where the backend explains faithfully,
it also records keys and documents examined and the plan's stages.

Times are shown and plotted, never asserted: on an engine without indexes (the mock) they say
nothing about a real server. The deterministic costs mean the same on every backend.

The home of every cost table and chart: ``costs_table``, ``compare`` and ``plot_compare`` for
measured shapes, ``plot_costs`` for a table of costs by (operation, pattern) (notebook 03's
``trees.operation_costs``). Explain plans are read by ``helpers.plans``.

``helpers.backends.steady_gc`` keeps Python's full garbage collections out of the way of the timings
(``get_db`` calls it, so every notebook's first cell does).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .backends import backend_info
from .counting import count_commands
from .plans import plan_summary

__all__ = ["Measurement", "benchmark", "compare", "costs_table", "plot_compare", "plot_costs"]

@dataclass
class Measurement:
    """One query shape, measured: times (ms) and the deterministic costs of one run."""

    label: str
    times_ms: list[float]
    round_trips: int
    docs_returned: int
    bytes_returned: int
    docs_written: int
    commands: tuple[str, ...]
    keys_examined: int | None = None
    docs_examined: int | None = None
    #: index keys inserted plus deleted by one run (``benchmark(index_keys=...)``; a read: 0)
    index_keys_written: int | None = None
    #: ``getMore`` commands the driver's default first batch caused (a measured read sets ``batch_size``)
    default_batch_getmores: int = 0
    #: server cursors one run left open (``helpers.counting``: a ``killCursors`` no count includes)
    open_cursors: int = 0
    stages: str | None = None
    plan_note: str | None = None
    result: Any = field(default=None, repr=False)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def spread_ms(self) -> float:
        """Interquartile range of the repeats (max - min for fewer than 4 repeats)."""
        t = sorted(self.times_ms)
        if len(t) < 4:
            return t[-1] - t[0]
        q = statistics.quantiles(t, n=4)
        return q[2] - q[0]

    def costs(self) -> dict[str, Any]:
        """The deterministic part: equal on every backend for the same data and calls."""
        return {"round trips": self.round_trips, "docs returned": self.docs_returned,
                "bytes returned": self.bytes_returned, "docs written": self.docs_written}


def benchmark(label: str, fn: Callable[[], Any], *, repeat: int = 5, warmup: int = 1,
            setup: Callable[[], Any] | None = None, explain: Callable[[], dict] | None = None,
            explain_kind: str = "index", info: Any = None, index_keys: Any = None) -> Measurement:
    """Time ``fn`` (``warmup`` unmeasured runs, then ``repeat`` timed runs) and count its costs.

    ``setup`` runs before every run, untimed (use it to restore state when ``fn`` writes).
    ``index_keys`` names what a write changes (a collection, several, or ``{collection: filter}``):
    the first timed run also counts the index keys it inserted and deleted, from snapshots taken
    outside the timing (``helpers.indexkeys``); a run that writes nothing has written no keys.
    A cursor returned by ``fn`` is consumed inside the timing, so lazy queries are measured whole.
    ``explain`` returns an explain document for the *same* query (with its sort and limit); it is
    used only where the backend explains faithfully (``caps.explain``), else ``plan_note`` says why
    not. ``explain_kind`` says which engine deviation may make the plan differ from a real
    MongoDB's: ``"index"`` (none), ``"regex"`` (a prefix regex on a secondary index:
    ``caps.explain_regex``) or ``"id_range"`` (an ``_id`` range or prefix: ``caps.id_range_index``).
    Where the probe says the engine scans such a query, the plan shown is the engine's true plan
    and ``plan_note`` says that a real MongoDB would scan index bounds instead.
    """
    if explain_kind not in ("index", "regex", "id_range"):
        raise ValueError(f"explain_kind must be 'index', 'regex' or 'id_range', not {explain_kind!r}")
    if repeat < 1:
        raise ValueError("repeat must be at least 1")

    def run() -> tuple[float, Any]:
        t0 = time.perf_counter_ns()
        out = fn()
        if hasattr(out, "__next__") or type(out).__name__ in ("Cursor", "CommandCursor", "MockCursor"):
            out = list(out)
        return (time.perf_counter_ns() - t0) / 1e6, out

    for _ in range(warmup):
        if setup is not None:
            setup()
        run()
    times: list[float] = []
    result: Any = None
    first = None
    for i in range(repeat):
        if setup is not None:
            setup()  # untimed and uncounted
        if i == 0:
            with count_commands(index_keys=index_keys) as first:
                t, result = run()
        else:
            t, result = run()
        times.append(t)
    assert first is not None
    if not first.docs_written_known:
        raise ValueError(f"{label}: a $merge or $out wrote documents no reply counts; pass index_keys=<its "
                         f"target collection> so they are counted (unknown is not 0)")
    m = Measurement(label=label, times_ms=times, round_trips=first.round_trips,
                    docs_returned=first.docs_returned, bytes_returned=first.bytes_returned,
                    docs_written=first.docs_written, commands=tuple(first.commands), result=result,
                    index_keys_written=first.index_keys_written if index_keys is not None
                    else (0 if first.docs_written == 0 and not first.aggregate_writes else None),
                    default_batch_getmores=first.default_batch_getmores, open_cursors=len(first.open_cursors))
    if explain is not None:
        if info is None:
            info = backend_info()
        if not info.caps.explain:
            m.plan_note = f"{info.engine} cannot explain faithfully: no plan shown"
        else:
            m.stages, m.keys_examined, m.docs_examined = plan_summary(explain())
            scans = {"regex": not info.caps.explain_regex, "id_range": not info.caps.id_range_index}
            if scans.get(explain_kind):
                m.plan_note = (f"{info.engine} does not serve this query from the index (docs/ENGINES.md); "
                               f"a real MongoDB scans only the index bounds")
    return m


def costs_table(measurements: Iterable[Measurement]) -> Any:
    """The deterministic costs of several shapes, one row each (a pandas DataFrame)."""
    import pandas as pd

    rows = [{"shape": m.label, **m.costs()} for m in measurements]
    return pd.DataFrame(rows).set_index("shape")


def compare(measurements: Iterable[Measurement], *, plot: bool = True, title: str | None = None) -> Any:
    """Side-by-side table of several shapes (times and costs), plus a bar chart if ``plot``."""
    import pandas as pd

    ms = list(measurements)
    rows = []
    for m in ms:
        row = {"shape": m.label, "median ms": round(m.median_ms, 3), "spread ms": round(m.spread_ms, 3),
               **m.costs()}
        if any(x.keys_examined is not None or x.plan_note for x in ms):
            row.update({"keys examined": m.keys_examined, "docs examined": m.docs_examined,
                        "plan": "; ".join(x for x in (m.stages, m.plan_note) if x)})
        rows.append(row)
    table = pd.DataFrame(rows).set_index("shape")
    if plot:
        plot_compare(ms, title=title)
    return table


def plot_compare(measurements: Iterable[Measurement], *, title: str | None = None) -> Any:
    """Bar chart: median time (with spread), round trips and KiB returned, one bar per shape."""
    import matplotlib.pyplot as plt

    ms = list(measurements)
    labels = [m.label for m in ms]
    fig, axes = plt.subplots(1, 3, figsize=(13, max(2.5, 0.45 * len(ms) + 1.2)), sharey=True)
    panels = [
        ("median wall time, ms (this machine)", [m.median_ms for m in ms], [m.spread_ms / 2 for m in ms]),
        ("round trips", [m.round_trips for m in ms], None),
        ("KiB returned", [m.bytes_returned / 1024 for m in ms], None),
    ]
    for ax, (name, values, err) in zip(axes, panels):
        ax.barh(labels, values, xerr=err, color="#4C72B0" if err else "#55A868")
        ax.set_title(name, fontsize=12)
        ax.invert_yaxis() if ax is axes[0] else None
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:,.3g}" if isinstance(v, float) else f" {v:,}", va="center", fontsize=10)
    if title:
        fig.suptitle(title, fontsize=13)
    fig.tight_layout()
    plt.show()
    return fig


def plot_costs(table: Any, metrics: Sequence[str], *, title: str | None = None) -> Any:
    """Grouped bars of a cost table indexed by (row, group), e.g. ``trees.operation_costs``'s
    (operation, pattern): one panel per metric, log scale, a bar per group in each row."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    ops = list(dict.fromkeys(table.index.get_level_values(0)))
    pats = list(dict.fromkeys(table.index.get_level_values(1)))
    fig, axes = plt.subplots(1, len(metrics), figsize=(15, 0.2 * len(ops) * len(pats) + 2.5), sharey=True)
    colors = plt.get_cmap("tab10")
    height = 0.8 / len(pats)
    y = np.arange(len(ops))
    for ax, metric in zip(axes, metrics):
        top = 1
        for k, pat in enumerate(pats):
            values = [table[metric].get((op, pat), np.nan) for op in ops]
            ax.barh(y + k * height, [v if v == v else 0 for v in values], height,
                    label=pat if ax is axes[0] else None, color=colors(k))
            for yi, v in zip(y + k * height, values):
                if v == v:
                    top = max(top, v)
                    ax.text(v, yi, f" {int(v):,}", va="center", fontsize=8)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(0, top * 4)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
        ax.set_title(metric + " (log scale)", fontsize=12)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y + 0.4 - height / 2, ops)
    axes[0].invert_yaxis()
    fig.legend(loc="lower center", ncol=min(len(pats), 3), fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=13)
    fig.tight_layout(rect=(0, 0.05 + 0.012 * ((len(pats) + 2) // 3), 1, 1))
    plt.show()
    return fig
