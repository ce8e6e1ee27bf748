"""Tests of bench/: the classroom load test finds no lost or crossed work; the schema and suite benchmarks
read and report what they measure."""
from __future__ import annotations

from bench.bench_schema import differences, workbook_side
from bench.classroom_load import simulate_class
from bench.run import failures, suite_phases


def test_thirty_students_at_once_lose_nothing_and_never_cross(test_uri):
    """Thirty simulated students on one server (a SecantusDB process started for the tests)."""
    report = simulate_class(test_uri, students=30, posts=2, comments=15, threshold=5)
    assert report["problems"] == []
    assert report["operations"] == 30 * 2 * 15
    print(f"\nclass load test: {report}")


def test_the_schema_benchmark_compares_paths_types_and_array_lengths():
    """bench/bench_schema.py's comparison with mongodb-schema finds each kind of difference (and none
    between equal answers), so its "same answers" column can fail."""
    _, _, ours = workbook_side([{"a": 1, "b": [1, 2, 3], "c": {"d": "x"}}, {"a": "s", "b": []}], repeat=1)
    assert ours == {"a": {"types": {"int": 1, "string": 1}, "lengths": None},
                    "b": {"types": {"array": 2}, "lengths": [0, 1.5, 3]},
                    "c": {"types": {"object": 1}, "lengths": None}, "c.d": {"types": {"string": 1}, "lengths": None},
                    "b[]": {"types": {"int": 3}, "lengths": None}}
    assert differences(ours, ours) == []
    theirs = {**ours, "a": {"types": {"int": 2}, "lengths": None}, "b": {"types": {"array": 2}, "lengths": [0, 2, 3]}}
    del theirs["c.d"]
    assert differences(ours, theirs) == ["a: types {'int': 1, 'string': 1} vs {'int': 2}",
                                         "b: array lengths [0, 1.5, 3] vs [0, 2, 3]", "c.d: only in the workbook"]


def test_the_suite_benchmark_reads_each_phase_and_the_total_from_the_test_commands_output():
    """bench/run.py splits the fresh-clone time into set-up and phases from tools/testrun.py's own
    lines; a phase that failed still counts, a line of another shape does not."""
    from tools.testrun import closing, phase_line

    unit, mock = {"passed": 3, "failed": 0, "skipped": 1}, {"passed": 2, "failed": 1, "skipped": 0}
    lines, _ = closing([("unit tests", 0, unit), ("notebooks on mock", 1, mock)], 0, 42.4)
    output = "\n".join(["[workbook] installing requirements.txt ...", "=== unit tests ===",
                        phase_line("unit tests", unit, 30.2, 0), phase_line("notebooks on mock", mock, 11.8, 1),
                        "=== notebooks on mock: 2 passed in soon ===", "", *lines])
    assert suite_phases(output) == ({"unit tests": 30.0, "notebooks on mock": 12.0}, 42.0)
    assert suite_phases("[workbook] pip install -r requirements.txt failed: see the message above.") == ({}, None)


def test_a_failed_suite_benchmark_shows_what_failed_and_no_password(monkeypatch):
    uri = "mongodb://teacher:s3cret-Pw@db.example:27017/"
    monkeypatch.setenv("MONGODB_URI", uri)
    output = "\n".join(["=== unit tests ===", f"E   CompletedProcess(args=['x', '{uri}'])",
                        f"FAILED tests/test_x.py::test_y - AssertionError: {uri}",
                        "=== unit tests: 1 passed, 1 failed, 0 skipped in 3 s (exit 1) ==="])
    shown = failures(output)
    assert "s3cret-Pw" not in shown and "CompletedProcess" not in shown
    assert "FAILED tests/test_x.py::test_y" in shown and "=== unit tests: 1 passed" in shown


def test_the_notebook_benchmark_counts_the_faster_run_of_each_notebook(monkeypatch, tmp_path):
    """With repeats, each notebook's faster run is the one measured (its own slowest cell too), the
    whole list runs before any notebook runs again, and the other run is shown beside it with its
    slowest cell; a run that fails is a row that does not hold, and the other notebooks still run."""
    import bench.run as run
    import tools.repo

    a, b, c = tmp_path / "01_a.ipynb", tmp_path / "02_b.ipynb", tmp_path / "03_c.ipynb"
    times = {a: [(25.0, 4.0, 3), (18.0, 2.5, 7)], b: [(12.0, 1.0, 2), (30.0, 9.0, 1)],
             c: [RuntimeError("cell 4 raised\nKeyError: 'x'"), (5.0, 0.5, 1)]}
    order = []

    def fake_run(path, backend, keep=()):
        order.append(path.name)
        got = times[path].pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(tools.repo, "notebooks", lambda: [a, b, c])
    monkeypatch.setattr(run, "run_notebook", fake_run)
    rows = run.bench_notebooks(["embedded"], repeats=2)
    assert order == ["01_a.ipynb", "02_b.ipynb", "03_c.ipynb"] * 2
    shown = [" ".join(map(str, r.values())) for r in rows]
    assert "01_a.ipynb: 18.0 s (cell 7: 2.5 s); other run 25.0 s (cell 3: 4.0 s)" in shown[0]
    assert "faster of 2" in shown[0] and rows[0]["holds"] == "yes"
    assert "02_b.ipynb: 12.0 s (cell 2: 1.0 s); other run 30.0 s (cell 1: 9.0 s)" in shown[1]
    assert rows[1]["holds"] == "yes"
    assert "03_c.ipynb: 1 of 2 runs failed: RuntimeError: KeyError: 'x'" in shown[2] and rows[2]["holds"] == "NO"
