"""Tree patterns: four models answering the same operations, and ``$graphLookup`` (notebook 03).

The lesson's face: every name notebook 03 uses, imported from its parts: ``base`` (what every pattern shares: checked input, loading, crash-safe rewrites), ``patterns`` (one
class per pattern, and ``$graphLookup``) and ``costs`` (a tree's shape, where patterns disagree, what each
operation costs); ``checks`` holds the exercises' checkers.
"""
from __future__ import annotations

from .base import (
    PENDING,
    SEPARATOR,
    CycleError,
    TreeError,
    UnknownNodeError,
    interrupt,
)
from .costs import (
    decision_table,
    design_costs,
    disagreements,
    operation_costs,
    plot_operation_costs,
    tree_shape,
)
from .patterns import (
    PATTERNS,
    AncestorsArray,
    ChildRefs,
    GraphLookup,
    MaterializedPaths,
    ParentRefs,
)

__all__ = [
    "SEPARATOR",
    "PENDING",
    "TreeError",
    "UnknownNodeError",
    "CycleError",
    "ParentRefs",
    "ChildRefs",
    "AncestorsArray",
    "MaterializedPaths",
    "PATTERNS",
    "GraphLookup",
    "tree_shape",
    "disagreements",
    "operation_costs",
    "plot_operation_costs",
    "decision_table",
    "design_costs",
    "interrupt",
]
