"""Tree patterns: four models and their variants answering the same operations, and ``$graphLookup`` (notebook 03).

The lesson's face: every name notebook 03 uses, imported from its parts: ``base`` (what every pattern
shares: checked input, loading, crash-safe rewrites), ``patterns`` (references, ancestors arrays,
``$graphLookup``), ``by_parent`` (the ancestors array with names indexed on ``parent`` alone), ``paths`` (materialized paths, and the variant whose links carry the path) and
``costs`` (a tree's shape, where patterns disagree, what each operation costs in each of its forms,
and the server's work); ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .base import (
    BATCH,
    PENDING,
    SEPARATOR,
    CycleError,
    TreeError,
    UnknownNodeError,
    interrupt,
)
from .by_parent import AncestorsWithNamesByParent
from .costs import (
    TEACHING,
    decision_table,
    disagreements,
    operation_costs,
    plot_operation_costs,
    server_work,
    tree_shape,
    workload_costs,
)
from .paths import PATTERNS, MaterializedPaths, PathInLink
from .patterns import (
    AncestorsArray,
    AncestorsWithNames,
    ChildRefs,
    GraphLookup,
    ParentRefs,
)

__all__ = [
    "SEPARATOR",
    "PENDING",
    "BATCH",
    "TreeError",
    "UnknownNodeError",
    "CycleError",
    "ParentRefs",
    "ChildRefs",
    "AncestorsArray",
    "AncestorsWithNames",
    "AncestorsWithNamesByParent",
    "MaterializedPaths",
    "PathInLink",
    "PATTERNS",
    "GraphLookup",
    "tree_shape",
    "disagreements",
    "operation_costs",
    "plot_operation_costs",
    "server_work",
    "workload_costs",
    "TEACHING",
    "decision_table",
    "interrupt",
]
