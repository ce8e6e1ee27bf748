"""Position reports over time: one document per report, capped buckets, a time series collection (notebook 08).

The lesson's face: every name notebook 08 uses, imported from its parts: ``pattern`` (the three designs' writes, reads and drops); ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .pattern import (
    BUCKETS,
    DESIGNS,
    DOCUMENTS,
    KEY,
    LATEST_KEY,
    REPORT_KEY,
    SPAN,
    TIMESERIES,
    bucket_reports,
    drop_filter,
    drop_plan,
    drop_range,
    ensure_bucket_index,
    hourly_summary,
    insert_reports,
    latest,
    report_id,
    storage,
    store_in_window,
    timeseries_collection,
    track,
    track_documents,
    window_start,
    window_state,
)

__all__ = [
    "SPAN",
    "KEY",
    "LATEST_KEY",
    "bucket_reports",
    "track",
    "window_start",
    "ensure_bucket_index",
    "DESIGNS",
    "DOCUMENTS",
    "BUCKETS",
    "TIMESERIES",
    "REPORT_KEY",
    "timeseries_collection",
    "report_id",
    "insert_reports",
    "track_documents",
    "latest",
    "hourly_summary",
    "drop_filter",
    "drop_range",
    "drop_plan",
    "storage",
    "window_state",
    "store_in_window",
]
