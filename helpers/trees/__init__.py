"""Tree patterns: four models and a variant answering the same operations, and ``$graphLookup`` (notebook 03).

The lesson's face: every name notebook 03 uses, imported from its parts: ``base`` (what every pattern
shares: checked input, loading, crash-safe rewrites), ``patterns`` (one class per pattern, and
``$graphLookup``) and ``costs`` (a tree's shape, where patterns disagree, what each operation costs
in each of its forms, and the server's work); ``checks`` holds the exercises' checkers.
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
from .patterns import (
    PATTERNS,
    AncestorsArray,
    AncestorsWithNames,
    ChildRefs,
    GraphLookup,
    MaterializedPaths,
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
    "MaterializedPaths",
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
