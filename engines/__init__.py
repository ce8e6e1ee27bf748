"""Engine adapters of the workbook, apart from the lessons' code (``helpers``).

* ``engines.mock``: the mongomock-ng adapter, which costs what a server's calls would
  (``helpers.backends.connect("mock")`` uses it);
* ``engines.embedded``: the embedded SecantusDB server, in process (``connect("embedded")``) or as
  a separate process for tests and benchmarks (:func:`engines.embedded.secantus_process`).

What each offline engine gets wrong, measured, and how to see it: docs/ENGINES.md.
"""
