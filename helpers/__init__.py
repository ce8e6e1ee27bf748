"""Shared helpers of the MongoDB schema-design workbook (start with notebooks/00_start_here.ipynb).

The top level holds what every notebook uses; everything else is one import away.

The core, one module per job: ``backends`` (connect, the banner, the process-wide connection),
``capabilities`` (what the engine really does: each capability declared once, probed on connect),
``settings`` (the environment, defaults), ``uri`` (connection strings, redacted), ``safety`` (the
workbook's own collections, reset), ``counting`` (round trips, documents and bytes of each command),
``indexkeys`` (the index keys a write inserts and deletes), ``measure`` (timings beside those costs, cost tables and plots), ``workload`` (a design's workload,
weighed into a daily cost), ``plans`` (explain plans), ``sizes`` (BSON sizes and the 16 MiB limit), ``writes`` (is a write error only duplicate keys),
``datasets`` and ``generators`` (the data), ``exercises`` (self-checks and the progress record),
``private`` (files of the user's own, reached safely: the typed copies, the progress record) and
``display`` (a helper's real source, the plot style).

One folder per lesson, ``helpers/<lesson>/``: its face (``__init__.py``, the names its notebook uses,
its first docstring line naming the notebook), its parts and its exercise checkers (``checks.py``).
The lessons: ``start`` (00), ``embedding`` (01), ``outlier`` (02), ``trees`` (03), ``aerodata``
(04), ``schema`` (05), ``advisor`` (06), ``kv`` (07), ``buckets`` (08). The core imports no lesson;
a lesson imports the core and earlier lessons' faces (``tests/test_layout.py`` checks the graph).

Engine adapters live in ``engines/``; maintainers' tools in ``tools/``; benchmarks in ``bench/``.
"""
from .backends import backend_info, banner, get_db, timed_on
from .counting import count_commands
from .datasets import lesson_scale, load_dataset
from .display import apply_style as _apply_style
from .display import show_source
from .exercises import check
from .measure import benchmark, compare, costs_table
from .safety import drop_workbook_collection, fresh_collection, reset_workbook, workbook_collection
from .sizes import MAX_BSON_SIZE, bson_sizes, check_document_size, human_bytes, plot_sizes, size_summary

__all__ = [
    # connect and say where the numbers come from
    "get_db", "backend_info", "banner", "timed_on",
    # measure: costs, timings, tables
    "count_commands", "benchmark", "compare", "costs_table",
    # BSON sizes
    "MAX_BSON_SIZE", "bson_sizes", "check_document_size", "human_bytes", "plot_sizes", "size_summary",
    # the data, the workbook's own collections, the exercises, the source shown
    "load_dataset", "lesson_scale", "workbook_collection", "fresh_collection", "drop_workbook_collection", "reset_workbook",
    "check",
    "show_source",
]

_apply_style()
