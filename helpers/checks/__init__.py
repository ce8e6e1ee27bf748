"""The exercise checkers, one module per notebook (``nb00.py`` for notebook 00, ...).

Each module registers its checkers with :func:`helpers.exercises.exercise`; ``helpers.check("N.k",
...)`` imports ``helpers.checks.nbNN`` the first time it needs it. A checker recomputes what is
right from the data it is given (the collections, the run's tables), so no expected value and no
formula for one sits in a notebook, and a student copy lets a student check an answer without
reading it.
"""
