"""Engine adapters of the workbook, apart from the lessons' code (``helpers``).

* ``engines.mock``: the mongomock-ng adapter, which costs what a server's calls would
  (``helpers.backends.connect("mock")`` wraps its database in it and gives it the counters);
* ``engines.embedded``: the embedded SecantusDB server, in process (``connect("embedded")``) or as
  a separate process for tests and benchmarks (:func:`engines.embedded.secantus_process`);
* ``engines.redis_server``: Debian's ``redis-server`` on a free loopback port, for tests and CI
  (notebook 07's real-Redis phase).

The arrow runs one way: ``helpers`` uses these adapters; they import nothing from ``helpers``.

What each offline engine gets wrong, measured, and how to see it: docs/ENGINES.md.
"""
