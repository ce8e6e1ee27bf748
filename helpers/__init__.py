"""Shared helpers of the MongoDB schema-design workbook (start with notebooks/00_start_here.ipynb).

One module per job: ``backends`` (connect, the banner, the process-wide connection),
``capabilities`` (what the engine really does: each capability declared once, probed on connect),
``settings`` (the environment, defaults), ``uri`` (connection strings, redacted), ``safety`` (the
workbook's own collections, reset), ``counting`` and ``measure`` (costs, timings, cost tables and
plots), ``workload`` (a design's workload, weighed into a daily cost), ``plans`` (explain plans),
``sizes`` (BSON sizes and the 16 MiB limit), ``datasets`` and ``generators`` (the data),
``exercises`` (self-checks) and ``checks/`` (each notebook's checkers, ``checks/nbNN.py``),
``display`` (show a helper's real source), ``redis_backend`` (notebook 07's Redis); and one module
per lesson, its first docstring line naming its notebook: ``embedding`` (01, with
``embedding_migrate``), ``outlier`` (02),
``trees`` (03, with ``trees_base`` and ``trees_costs``), ``aerodata`` (04, with
``aerodata_messages``, ``aerodata_geo``, ``aerodata_costs`` and ``aerodata_probe``), ``schema`` (05, with ``schema_infer``,
``schema_validate`` and ``schema_migrate``), ``advisor`` (split into
``advisor_rules``, ``advisor_findings`` and ``advisor_workload``) and ``advisor_cases`` (06), ``kv`` (07),
``buckets`` (08).
Engine adapters live in ``engines/``; maintainers' tools in ``tools/``; benchmarks in ``bench/``.
"""
from .backends import (
                       BackendError,
                       BackendInfo,
                       Capabilities,
                       backend_info,
                       banner,
                       connect,
                       get_db,
                       redact_uri,
)
from .counting import CommandCounter, counting
from .display import show_source
from .exercises import check
from .measure import Measurement, compare, costs_table, measure, plot_compare
from .safety import ForeignCollectionError, reset_workbook, track_collection, workbook_collection
from .sizes import MAX_BSON_SIZE, bson_sizes, check_document_size, human_bytes, plot_sizes, size_summary

__all__ = [
    "BackendError", "BackendInfo", "Capabilities", "backend_info", "banner", "connect",
    "get_db", "redact_uri", "CommandCounter", "counting", "show_source", "check", "Measurement",
    "compare", "costs_table", "measure", "plot_compare", "ForeignCollectionError", "reset_workbook",
    "track_collection", "workbook_collection", "MAX_BSON_SIZE", "bson_sizes", "check_document_size",
    "human_bytes", "plot_sizes", "size_summary",
]
from .display import apply_style as _apply_style

_apply_style()

from .datasets import DatasetError, dataset_names, lesson_scale, load_dataset  # noqa: E402

__all__ += ["DatasetError", "dataset_names", "lesson_scale", "load_dataset"]

from .backends import timed_on  # noqa: E402

__all__ += ["timed_on"]
