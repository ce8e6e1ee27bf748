"""The outlier pattern: embed comments up to a threshold, overflow the rest (notebook 02).

The lesson's face: every name notebook 02 uses, imported from its parts: ``pattern`` (the write path, the read path, crash repair, the data) and ``bill`` (the server's work each operation costs, for the daily bill); ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .bill import examined, with_work
from .pattern import (
    BUCKET_SIZE,
    OUTLIER_FACTOR,
    OVERFLOW,
    OVERFLOW_BUCKETS,
    POSTS,
    Added,
    PostNotFoundError,
    PostState,
    WriterCrashed,
    add_comment,
    check_post,
    comment_count_stats,
    ensure_overflow_index,
    load_outlier_posts,
    newest_comments_reference,
    outlier_layout,
    read_comments,
    read_post,
    read_post_lookup,
    repair_post,
    simulated_crash,
)

__all__ = [
    "POSTS",
    "OVERFLOW",
    "OVERFLOW_BUCKETS",
    "BUCKET_SIZE",
    "PostNotFoundError",
    "Added",
    "add_comment",
    "PostState",
    "WriterCrashed",
    "simulated_crash",
    "check_post",
    "repair_post",
    "read_comments",
    "read_post",
    "read_post_lookup",
    "newest_comments_reference",
    "ensure_overflow_index",
    "outlier_layout",
    "load_outlier_posts",
    "comment_count_stats",
    "OUTLIER_FACTOR",
    "examined",
    "with_work",
]
