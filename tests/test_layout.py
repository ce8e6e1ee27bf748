"""Tests of the repository's layout: one home per concern, nothing pointing outside it.

* ``helpers/`` (the learner's package) holds lesson code only: no test runner, CLI, admin or
  benchmark code, nothing imported from ``tools/`` or ``bench/``;
* only ``helpers/settings.py`` reads the environment (in ``helpers/`` and ``engines/``);
* every lesson module's first docstring line names its notebook;
* no module of ``helpers/`` is over 800 lines (one job each);
* ``tools/``, ``scripts/`` and ``workbook.py`` use only the public names of the modules they import;
* nothing refers to the session's shared folder outside the repository (a learner's clone has only the repository: docs/ENGINES.md);
* the linter configured in pyproject.toml runs here, so the configuration is not dead;
* the one-click set-ups (docker compose, dev container, Binder) use the project's requirements.
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import repo

ROOT = repo.ROOT
PACKAGES = ("helpers", "engines")
#: helpers modules that are not a lesson's pattern code (the rest must name their notebook)
INFRASTRUCTURE = {"__init__", "backends", "capabilities", "counting", "datasets", "display", "exercises",
                  "generators", "measure", "plans", "safety", "settings", "sizes", "uri", "workload"}


def _modules(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def _tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


@pytest.mark.parametrize("path", _modules(*PACKAGES), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_settings_reads_the_environment(path):
    if path == ROOT / "helpers" / "settings.py":
        return
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\bos\.(environ|getenv|putenv)\b|\bgetenv\(|from os import", text), (
        f"{path.relative_to(ROOT)} reads the environment: ask helpers.settings instead")


@pytest.mark.parametrize("path", _modules("helpers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_learners_package_has_no_tools_or_benchmarks(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"tools", "bench", "pytest", "nbclient", "nbformat", "nbconvert", "subprocess"}, (
        f"{path.relative_to(ROOT)} imports maintainers' tooling: it belongs in tools/ or bench/")
    assert path.stem not in {"testrun", "cli", "student", "html", "classdb", "bench", "simulate"}


def test_tools_and_benchmarks_live_outside_the_package():
    assert {"testrun.py", "cli.py", "student.py", "progress.py", "html.py", "classdb.py", "repo.py"} <= \
        {p.name for p in (ROOT / "tools").glob("*.py")}
    assert (ROOT / "bench" / "classroom_load.py").is_file()
    assert {"mock.py", "embedded.py"} <= {p.name for p in (ROOT / "engines").glob("*.py")}
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'packages = \["helpers", "engines"\]', pyproject)  # tools/ is not installed


def _lesson_modules() -> list[Path]:
    return [p for p in _modules("helpers") if p.parent.name == "helpers" and p.stem not in INFRASTRUCTURE]


@pytest.mark.parametrize("path", _lesson_modules(), ids=lambda p: p.stem)
def test_every_lesson_module_names_its_notebook_first(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.splitlines()[0] if doc else ""
    m = re.search(r"notebook (\d\d)\b", first)
    assert m, f"{path.name}: the first docstring line must name its notebook ('... (notebook NN)'), not {first!r}"
    assert list(repo.NOTEBOOKS.glob(f"{m.group(1)}_*.ipynb")), f"{path.name}: no notebook {m.group(1)}"


SHARED = "../" + "shared"  # spelled apart, so this file does not name it either


def test_nothing_points_at_the_shared_folder():
    offenders = []
    for path in _tracked_files():
        if path.is_file() and path.suffix not in (".gz", ".png"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if SHARED in text or SHARED.replace("/", "\\") in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], f"point at docs/ENGINES.md or docs/DATA_SOURCES.md instead: {offenders}"
    assert (ROOT / "docs" / "ENGINES.md").is_file() and (ROOT / "docs" / "DATA_SOURCES.md").is_file()


def test_ruff_finds_nothing():
    """The lint configuration in pyproject.toml is run, not decoration (ruff is pinned)."""
    pinned = re.search(r"^ruff==([\d.]+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned, "pin ruff in requirements.txt"
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_notebook_env_is_the_default_run_whatever_the_shell():
    shell = {"PATH": "/bin", "WORKBOOK_SCALE": "full", "WORKBOOK_DB": "mine", "MONGODB_URI": "mongodb://h/",
             "WORKBOOK_DEMO": "1", "MPLBACKEND": "Agg", "HOME": "/home/x"}
    env = repo.notebook_env("mock", shell)
    assert env == {"PATH": "/bin", "HOME": "/home/x", "PYTHONHASHSEED": "0", "WORKBOOK_BACKEND": "mock",
                   "MPLBACKEND": repo.INLINE, "CI": "true"}
    kept = repo.notebook_env("embedded", shell, keep=("WORKBOOK_SCALE",), WORKBOOK_PROGRESS="/tmp/p.json")
    assert kept["WORKBOOK_SCALE"] == "full" and kept["WORKBOOK_PROGRESS"] == "/tmp/p.json"
    assert "MONGODB_URI" not in kept
    assert [p.name for p in repo.notebooks()] == sorted(p.name for p in repo.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def test_the_notebook_run_environment_has_one_home():
    """The test command, the committed run and the benchmark all take it from tools.repo."""
    for rel in ("tools/testrun.py", "scripts/nb.py", "bench/bench_notebooks.py"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert "notebook_env" in text, rel
        assert "matplotlib_inline" not in text and "[0-9][0-9]_" not in text, rel
    assert "tools.testrun" in (ROOT / "workbook.py").read_text() and "tools.cli" in (ROOT / "workbook.py").read_text()


def test_docker_compose_runs_mongo_and_the_workbook_as_the_readme_says():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["mongo"]["image"].startswith("mongo:8.")
    wb = services["workbook"]
    assert wb["environment"]["MONGODB_URI"] == "mongodb://mongo:27017"
    assert wb["command"][:3] == ["python", "workbook.py", "lab"]
    assert wb["depends_on"]["mongo"]["condition"] == "service_healthy"
    readme = (ROOT / "README.md").read_text()
    assert "docker compose up workbook" in readme and "docker compose up -d mongo" in readme


def test_dev_container_and_binder_set_up_from_the_requirements():
    dev = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())
    assert "notebooks/00_start_here.ipynb" in json.dumps(dev)
    assert dev["postCreateCommand"] == "python3 workbook.py setup"  # the same set-up as `lab` and `test`
    assert "-r requirements.txt" in (ROOT / "binder" / "postBuild").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "mybinder.org" in readme and "codespaces" in readme.lower()


#: a reference a cloner cannot follow: the project's tracker numbers and its private plan (spelled
#: apart, so this file does not match itself)
PRIVATE_REFERENCE = re.compile(r"\b" + "issues?" + r" ?#?\d+\b|\b" + "PLAN" + r"\.md\b|\bshared/" + "DATA_SOURCES",
                               re.IGNORECASE)


def test_nothing_refers_to_the_trackers_numbers_or_a_private_plan():
    offenders = []
    for path in _tracked_files():
        if path.is_file() and path.suffix not in (".gz", ".png"):
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if PRIVATE_REFERENCE.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert offenders == [], f"say what the code does, not which issue asked for it: {offenders}"


@pytest.mark.parametrize("package", ["helpers", "engines", "tools"])
def test_each_packages_docstring_names_every_module(package):
    """The package's first page lists its modules, so it cannot lag behind them."""
    doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = sorted(p.stem for p in (ROOT / package).glob("*.py") if p.stem != "__init__")
    missing = [m for m in modules if f"``{m}``" not in doc and f"``{package}.{m}``" not in doc]
    assert missing == [], f"{package}/__init__.py's docstring does not name {missing}"


#: the tests of the whole project rather than of one module (README.md, "Layout")
PROJECT_TESTS = {"layout", "notebooks_skeleton", "repo", "manual_examples", "browser", "bench"}


def test_test_files_are_named_after_their_module():
    """``test_<module>[_<aspect>].py`` for ``helpers/``, ``test_tools_``/``test_engines_``/``test_scripts_``
    for the others, or one of the project-wide tests: so a module's tests are found by its name."""
    modules = {p.stem for p in (ROOT / "helpers").glob("*.py")} | {p.parent.name for p in (ROOT / "helpers").glob("*/__init__.py")}
    for prefix, folder in (("tools_", "tools"), ("engines_", "engines"), ("scripts_", "scripts")):
        modules |= {prefix + p.stem for p in (ROOT / folder).glob("*.py")}
    modules -= {"__init__", "tools___init__", "engines___init__"}
    strays = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        name = path.stem[len("test_"):]
        if name not in PROJECT_TESTS and not any(name == m or name.startswith(m + "_") for m in modules):
            strays.append(path.name)
    assert strays == [], f"name these after the module they test (README.md, Layout): {strays}"


#: the most lines a module of ``helpers/`` may have: one job each, readable in one sitting
MAX_MODULE_LINES = 800
#: modules still over the limit: their split is pending (none today)
OVERSIZED: set[str] = set()


@pytest.mark.parametrize("path", _modules("helpers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_helpers_module_is_over_800_lines(path):
    rel = path.relative_to(ROOT).as_posix()
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if rel in OVERSIZED:
        pytest.skip(f"{rel}: split pending")
    assert lines <= MAX_MODULE_LINES, (
        f"{rel} has {lines} lines (at most {MAX_MODULE_LINES}): split it into modules of one job each, "
        f"re-exported from the lesson module so its names still import from there")


def test_the_oversized_list_holds_only_oversized_modules():
    """An exception that no longer applies (the module was split, or removed) is taken off the list."""
    stale = [rel for rel in sorted(OVERSIZED)
             if not (ROOT / rel).is_file() or len((ROOT / rel).read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES]
    assert stale == [], f"remove {stale} from OVERSIZED in tests/test_layout.py: they are no longer over the limit"


def test_the_loader_is_a_package_with_one_job_per_module():
    """helpers/datasets/: catalogue, checksums, CSV typing, the typed cache, staging, the lease, the
    reload, load_dataset, read_table and sampling, each a module of its own and none over 800 lines."""
    modules = {p.stem: len(p.read_text(encoding="utf-8").splitlines())
               for p in (ROOT / "helpers" / "datasets").glob("*.py")}
    assert {"catalogue", "checksums", "csvtyping", "cache", "staging", "lease", "reload", "load", "table",
            "sampling"} <= set(modules)
    assert not {name: n for name, n in modules.items() if n > 800}


def _private_names_reached(path: Path) -> list[str]:
    """``from x import _name`` and ``module._name`` in ``path``, where x/module is another module of the
    repository (helpers, engines, tools): a name a tool shares gets a public name in its home."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ours = ("helpers", "engines", "tools")
    modules: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in ours:
            for a in node.names:
                modules[a.asname or a.name] = f"{node.module}.{a.name}"
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"line {node.lineno}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ours:
                    modules[a.asname or a.name.split(".")[0]] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", sorted([*(ROOT / "tools").glob("*.py"), *(ROOT / "scripts").glob("*.py"),
                                         *(ROOT / "bench").glob("*.py"), ROOT / "workbook.py"]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_tools_use_only_public_names_of_other_modules(path):
    reached = _private_names_reached(path)
    assert reached == [], (f"{path.relative_to(ROOT)} reaches into another module's private names ({reached}): "
                           f"give them a public name in their home")
