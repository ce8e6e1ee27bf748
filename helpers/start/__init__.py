"""Start here: how to measure, and the course's method (notebook 00).

Notebook 00 uses the core (``helpers``) only; this package holds its exercises' checkers, ``checks``.
"""
