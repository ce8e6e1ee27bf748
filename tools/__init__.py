"""Maintainers' and instructors' tools: not installed, not imported by the lessons.

Run from the repository's root as ``python -m tools.<name>`` (``workbook.py`` does):
``testrun`` (the test command), ``cli`` (the one parser of ``workbook.py`` and its subcommands),
``student`` (student copies), ``progress`` (read the progress record), ``html`` (static build),
``classdb`` (the class's databases and logins: list, drop, logins), ``advise`` (``workbook.py
advise``: the schema advisor on a server's database), ``repo`` (the repository's root, its notebooks,
the environment a notebook runs in), ``listings`` (the length of every listing the notebooks show);
and two pytest plugins the test command loads,
``nbval_kernels`` (kernels that start reliably on a busy machine) and ``worker_db`` (a database per
xdist worker for the notebooks on a server).
"""
