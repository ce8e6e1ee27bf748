"""Shared helpers of the MongoDB schema-design workbook (start with notebooks/00_start_here.ipynb).

One module per job: ``backends`` (connect, capabilities, banner), ``safety`` (the workbook's own
collections, reset), ``counting`` and ``measure`` (costs and timings), ``sizes`` (BSON sizes and
the 16 MB limit), ``exercises`` (self-checks), ``display`` (show a helper's real source).
"""
from .backends import (BackendError, BackendInfo, Capabilities, backend_info, banner, connect, get_client,
                       get_db, redact_uri)
from .counting import CommandCounter, counting
from .display import show_source
from .exercises import check
from .measure import Measurement, compare, costs_table, measure, plot_compare
from .safety import ForeignCollectionError, reset_workbook, track_collection, workbook_collection
from .sizes import MAX_BSON_SIZE, bson_sizes, check_document_size, human_bytes, plot_sizes, size_summary

__all__ = [
    "BackendError", "BackendInfo", "Capabilities", "backend_info", "banner", "connect", "get_client",
    "get_db", "redact_uri", "CommandCounter", "counting", "show_source", "check", "Measurement",
    "compare", "costs_table", "measure", "plot_compare", "ForeignCollectionError", "reset_workbook",
    "track_collection", "workbook_collection", "MAX_BSON_SIZE", "bson_sizes", "check_document_size",
    "human_bytes", "plot_sizes", "size_summary",
]
from .display import apply_style as _apply_style

_apply_style()

from .datasets import DatasetError, dataset_names, lesson_scale, load_dataset  # noqa: E402

__all__ += ["DatasetError", "dataset_names", "lesson_scale", "load_dataset"]
