"""The repository keeps its promises: two commands, a generated contents list, clean notebooks."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "python3 workbook.py test" in readme and "python3 workbook.py lab" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec python3 workbook\.py test$", ci, re.M)


def test_readme_contents_are_generated_from_the_notebooks():
    rc = subprocess.run([sys.executable, str(ROOT / "scripts" / "toc.py"), "--check"], capture_output=True, text=True)
    assert rc.returncode == 0, rc.stdout
    readme = (ROOT / "README.md").read_text()
    for nb in NOTEBOOKS:
        assert f"(notebooks/{nb.name})" in readme


def test_readme_layout_table_is_generated_from_the_tree():
    """The table of helpers/ is scripts/layout.py's: a moved, added or removed file cannot leave a stale
    row; and no other line of the README or CONTRIBUTING names a helpers/ path that is not there."""
    rc = subprocess.run([sys.executable, str(ROOT / "scripts" / "layout.py"), "--check"], capture_output=True, text=True)
    assert rc.returncode == 0, rc.stdout + rc.stderr
    stale = []
    for doc in ("README.md", "CONTRIBUTING.md", "docs/ENGINES.md"):
        for n, line in enumerate((ROOT / doc).read_text(encoding="utf-8").splitlines(), 1):
            for path in re.findall(r"`(helpers/[\w/.]+)`", line):
                if "<" not in path and not (ROOT / path).exists() and not _starter_path(path):
                    stale.append(f"{doc}:{n}: {path}")
    for nb in NOTEBOOKS:
        for i, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            for path in re.findall(r"`(helpers/[\w/.]+)`", "".join(cell["source"])):
                if not (ROOT / path).exists():
                    stale.append(f"{nb.name} cell {i}: {path}")
    assert stale == [], f"paths that are not in the tree: {stale}"


def _starter_path(path: str) -> bool:
    """CONTRIBUTING's worked example names the files scripts/new_notebook.py writes for ``caching``
    (read from the script: a file it does not write is stale)."""
    script = (ROOT / "scripts" / "new_notebook.py").read_text(encoding="utf-8")
    written = {f"helpers/caching/{name}" for name in re.findall(r'ROOT / "helpers" / topic / "([\w.]+)"', script)}
    return path in written or (path == "helpers/caching/" and bool(written))


def test_docker_compose_pins_a_mongo_8_image():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    image = compose["services"]["mongo"]["image"]
    assert re.fullmatch(r"mongo:8\.\d+\.\d+", image), image
    assert "docker compose up -d mongo" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_is_a_clean_run(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        "execution counts are not 1..n: re-run it with scripts/nb.py"
    secret = re.compile(r"mongodb(\+srv)?://[^\s\"']*:[^\s\"'@*]+@")
    abs_path = re.compile(r"(/home/|/root/|/Users/|/work/|[A-Z]:\\\\)")
    for c in code:
        assert set(c["metadata"]) <= {"tags", "jupyter"}, f"stray cell metadata {c['metadata']}"
        assert set(c["metadata"].get("jupyter", {})) <= {"source_hidden"}, f"stray cell metadata {c['metadata']}"
        for o in c["outputs"]:
            assert o["output_type"] != "error", f"committed error: {o.get('ename')}: {o.get('evalue')}"
            text = "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
            assert not secret.search(text), "an output shows a credential"
            assert not abs_path.search(text), f"an output shows a machine path: {abs_path.search(text).group(0)}"
            assert "<style" not in "".join(o.get("data", {}).get("text/html", "")), \
                "an output stores a stylesheet (tables are plain HTML: helpers.display.plain_tables)"
    first = code[0]
    assert "helpers.banner()" in "".join(first["source"]), "the first code cell must print the banner"
    assert set(nb["metadata"]) <= {"kernelspec", "language_info"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_exercise_has_a_solution_and_a_check(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            assert set(c["metadata"]) <= {"tags", "jp-MarkdownHeadingCollapsed"}, f"stray cell metadata {c['metadata']}"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tags = [c.get("metadata", {}).get("tags", []) for c in code]
    n_ex = sum("exercise" in t for t in tags)
    assert n_ex >= 1 and n_ex == sum("solution" in t for t in tags) == sum("check" in t for t in tags)

    def out(c):
        return "".join("".join(o.get("text", "")) for o in c["outputs"])

    checks = "".join(out(c) for c, t in zip(code, tags) if "check" in t)
    solutions = "".join(out(c) for c, t in zip(code, tags) if "solution" in t)
    everything = "".join(out(c) for c in code)
    assert checks.count("not done yet") == n_ex, "in the committed run every exercise's check says 'not done yet'"
    assert solutions.count(": correct.") == n_ex, "in the committed run every solution's check says 'correct'"
    assert "not right yet" not in everything
