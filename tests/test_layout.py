"""Tests of the repository's layout: one home per concern, nothing pointing outside it.

* ``helpers/`` (the learner's package) holds lesson code only: no test runner, CLI, admin or
  benchmark code, nothing imported from ``tools/`` or ``bench/``;
* ``helpers/`` is a small flat core (:data:`CORE`) beside one folder per lesson, whose face
  (``__init__.py``) names its notebook first: the lessons are found in the tree, never listed here;
* the import graph of helpers/, engines/ and tools/ (every import, at the top or inside a function,
  and the parent packages an import runs) has no circle and runs only down the layers: engines, then
  the core, then the lessons in notebook order (a lesson's parts below its face, its ``checks`` above
  it), then tools; helpers/ imports no tools, scripts or benchmarks;
* only ``helpers/settings.py`` reads the environment (in ``helpers/`` and ``engines/``);
* every module of a lesson names its notebook in its first docstring line;
* no module of ``helpers/`` is over 800 lines (one job each);
* a wheel of the project holds every module of ``helpers/`` and ``engines/``;
* ``tools/``, ``scripts/`` and ``workbook.py`` use only the public names of the modules they import;
* nothing refers to the session's shared folder outside the repository (a learner's clone has only the repository: docs/ENGINES.md);
* the linter configured in pyproject.toml runs here, so the configuration is not dead;
* the one-click set-ups (docker compose, dev container, Binder) use the project's requirements.
"""
from __future__ import annotations

import ast
import inspect
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import repo

ROOT = repo.ROOT
PACKAGES = ("helpers", "engines")
#: the core of ``helpers/``: flat modules of one job each, and the data package; everything else in
#: ``helpers/`` is a lesson's folder (its face names its notebook: ``helpers.exercises.lesson_folders``)
CORE = {"backends", "capabilities", "counting", "datasets", "display", "exercises", "generators", "indexkeys", "measure",
        "plans", "private", "safety", "settings", "sizes", "uri", "workload", "writes"}


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
    assert not imported & {"tools", "bench", "scripts", "pytest", "nbclient", "nbformat", "nbconvert", "subprocess"}, (
        f"{path.relative_to(ROOT)} imports maintainers' tooling: it belongs in tools/ or bench/")
    assert path.stem not in {"testrun", "cli", "student", "html", "classdb", "bench", "simulate"}


def test_tools_and_benchmarks_live_outside_the_package():
    assert {"testrun.py", "cli.py", "student.py", "progress.py", "html.py", "classdb.py", "repo.py"} <= \
        {p.name for p in (ROOT / "tools").glob("*.py")}
    assert (ROOT / "bench" / "classroom_load.py").is_file()
    assert {"mock.py", "embedded.py"} <= {p.name for p in (ROOT / "engines").glob("*.py")}
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'include = ["helpers", "helpers.*", "engines", "engines.*"]' in pyproject  # tools/ is not installed


def _lessons() -> dict[str, Path]:
    """``{notebook: folder}`` of every lesson, as the exercises find their checkers."""
    from helpers.exercises import lesson_folders

    return lesson_folders()


def _lesson_modules() -> list[Path]:
    return sorted(p for folder in _lessons().values() for p in folder.glob("*.py"))


def test_helpers_is_a_flat_core_beside_one_folder_per_lesson():
    lessons = {folder.name for folder in _lessons().values()}
    entries = {p.stem if p.suffix == ".py" else p.name for p in (ROOT / "helpers").iterdir()
               if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.name != "__init__.py"}
    strays = entries - CORE - lessons
    assert not strays, (f"helpers/ holds {sorted(strays)}: a lesson is a folder whose __init__.py names its "
                        f"notebook first ('... (notebook NN)'); anything else is a core module (CORE)")
    assert CORE <= entries, f"CORE names modules that are gone: {sorted(CORE - entries)}"
    faces = [f for f in (ROOT / "helpers").glob("*/__init__.py") if f.parent.name not in CORE]
    assert len(faces) == len(_lessons()), "one folder per notebook: two lessons' faces name the same notebook"
    assert {p.name[:2] for p in repo.notebooks()} <= set(_lessons()), "every notebook has its lesson folder"
    # no two top-level names share a prefix (``aerodata`` and ``aerodata_costs``): a lesson's parts go in its folder
    stems = sorted(entries)
    shared = [(a, b) for a in stems for b in stems if a != b and b.startswith(a + "_")]
    assert not shared, f"these share a name prefix: {shared}; put a lesson's parts in its folder"


@pytest.mark.parametrize("path", _lesson_modules(), ids=lambda p: str(p.relative_to(ROOT / "helpers")))
def test_every_lesson_module_names_its_notebook_first(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.splitlines()[0] if doc else ""
    m = re.search(r"notebook (\d\d)\b", first, re.IGNORECASE)
    assert m, f"{path.name}: the first docstring line must name its notebook ('... (notebook NN)'), not {first!r}"
    assert list(repo.NOTEBOOKS.glob(f"{m.group(1)}_*.ipynb")), f"{path.name}: no notebook {m.group(1)}"
    assert _lessons()[m.group(1)] == path.parent, f"{path}: names notebook {m.group(1)}, another lesson's"


@pytest.mark.parametrize("folder", sorted(_lessons().values()), ids=lambda p: p.name)
def test_a_lesson_face_names_its_parts_and_no_part_shadows_a_name(folder):
    """The face's docstring lists its parts (``keys``, ``store``, ...), and no part is named like a
    name the face exports: importing the part would replace the function on the package."""
    face = folder / "__init__.py"
    tree = ast.parse(face.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    parts = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    missing = [m for m in parts if f"``{m}``" not in doc]
    assert missing == [], f"{face.relative_to(ROOT)}'s docstring does not name {missing}"
    exported = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            exported = {e.value for e in node.value.elts}
    modules_exported = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module is None
                        for a in node.names}
    assert not (set(parts) & (exported - modules_exported)), (
        f"{folder.name}: a part is named like a name its face exports: {sorted(set(parts) & exported)}")


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
    """The package's first page lists its modules (for ``helpers``: the core, and that each lesson is
    a folder; the lessons' faces name their own parts), so it cannot lag behind them."""
    doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = sorted(p.stem for p in (ROOT / package).glob("*.py") if p.stem != "__init__")
    if package == "helpers":
        modules = sorted(CORE)
        assert "helpers/<lesson>/" in doc
    missing = [m for m in modules if f"``{m}``" not in doc and f"``{package}.{m}``" not in doc]
    assert missing == [], f"{package}/__init__.py's docstring does not name {missing}"


#: the tests of the whole project rather than of one module (README.md, "Layout")
PROJECT_TESTS = {"layout", "notebooks_skeleton", "repo", "manual_examples", "browser", "bench"}


def test_test_files_are_named_after_their_module():
    """``test_<module>[_<aspect>].py`` for ``helpers/``, ``test_tools_``/``test_engines_``/``test_scripts_``
    for the others, or one of the project-wide tests: so a module's tests are found by its name."""
    modules = {p.stem for p in (ROOT / "helpers").glob("*.py")} | {p.parent.name for p in (ROOT / "helpers").glob("*/__init__.py")}
    modules |= {f"{p.parent.name}_{p.stem}" for p in (ROOT / "helpers").glob("*/*.py") if p.stem != "__init__"}
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
        f"{rel} has {lines} lines (at most {MAX_MODULE_LINES}): split it into modules of one job each, parts "
        f"of its lesson's folder (or of the core), imported by the lesson's face so its names still import from there")


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
    assert {"catalogue", "checksums", "csvtyping", "cache", "prepare", "staging", "lease", "reload", "load",
            "table", "sampling"} <= set(modules)
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


# ---------------------------------------------------------------------------------------------
# the import graph: every import statement, at a module's top or inside a function

GRAPHED = ("helpers", "engines", "tools")


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _import_edges(path: Path) -> list[tuple[str, str, int, bool]]:
    """``(target module, name imported or "", line, inside a function)`` for each import of ours."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _dotted(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              for n in ast.walk(f) if n is not f}
    out = []
    for node in ast.walk(tree):
        inner = id(node) in nested
        if isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno, inner) for a in node.names if a.name.split(".")[0] in GRAPHED]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] not in GRAPHED:
                continue
            for a in node.names:
                sub = f"{module}.{a.name}"
                out.append((sub, "", node.lineno, inner) if _is_module(sub) else (module, a.name, node.lineno, inner))
                # importing a.b.c runs a/__init__ and a/b/__init__ first: edges to the parents outside ``here``
                parents = module.split(".")
                for k in range(1, len(parents)):
                    parent = ".".join(parents[:k])
                    if not (here == parent or here.startswith(parent + ".")) and _is_module(parent):
                        out.append((parent, "", node.lineno, inner))
    return out


def _graph() -> dict[str, list[tuple[str, str, int, bool]]]:
    return {_dotted(p): _import_edges(p) for p in _modules(*GRAPHED)}


def _cycles(graph: dict[str, list[tuple[str, str, int, bool]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in {t for t, *_ in graph.get(v, []) if t in graph}:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or any(t == v for t, *_ in graph.get(v, [])):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _place(module: str) -> tuple[str, str | None, str | None]:
    """``("engines" | "core" | "lesson" | "tools", notebook, role)``; a lesson's role: "face",
    "checks" or "part"."""
    top, _, rest = module.partition(".")
    if top != "helpers":
        return top, None, None
    first = rest.partition(".")[0]
    if not first or first in CORE:
        return "core", None, None
    notebook = next((nb for nb, folder in _lessons().items() if folder.name == first), None)
    if notebook is None:
        raise AssertionError(f"{module}: helpers/{first} is neither in CORE nor a lesson's folder (a face whose "
                             f"first docstring line ends '(notebook NN).')")
    sub = rest.partition(".")[2]
    return "lesson", notebook, "face" if not sub else "checks" if sub == "checks" else "part"


def _wrong_way(src: str, dst: str, name: str) -> str | None:
    """Why the import ``src`` -> ``dst`` (of ``name``) runs up the layers or across a lesson, else None."""
    (s, s_nb, s_role), (d, d_nb, d_role) = _place(src), _place(dst)
    if s == "engines":
        return None if d == "engines" else "engines/ is the bottom layer: it imports nothing of the workbook"
    if s == "core":
        return None if d in ("core", "engines") else "the core imports no lesson and no tool"
    if s == "tools":
        return None
    if d in ("core", "engines"):
        return None
    if d == "tools":
        return "a lesson imports no tool"
    if s_nb == d_nb:
        if d_role == "checks":
            return "nothing imports a lesson's checks (helpers.check finds them)"
        if s_role == "part" and d_role == "face":
            return "a part imports its siblings, never its own face (the face imports it)"
        if s_role == "face" and d_role == "face":
            return "a face imports its parts"
        return None
    if d_nb > s_nb:
        return f"notebook {s_nb}'s lesson imports notebook {d_nb}'s, a later one"
    if d_role != "face":
        return f"another lesson is imported through its face (helpers.{dst.split('.')[1]}), not its parts"
    if name.startswith("_"):
        return "another lesson's private name"
    return None


def test_the_import_graph_has_no_circle():
    cycles = _cycles(_graph())
    assert cycles == [], f"import circles (every import counted, at the top or in a function): {cycles}"


def test_every_import_runs_down_the_layers():
    wrong = [f"{src} line {line}: imports {dst}{'.' + name if name else ''}: {why}"
             for src, edges in _graph().items() for dst, name, line, _ in edges
             if (why := _wrong_way(src, dst, name)) is not None]
    assert wrong == [], "\n".join(wrong)


def test_a_lesson_reaches_another_lesson_only_through_its_faces_public_names():
    """``from .. import aerodata as ad`` then ``ad.keys`` or ``ad._airline_doc``: another lesson's part
    or private name, reached by attribute (the import graph sees only the import)."""
    wrong = []
    for path in _lesson_modules():
        here = _place(_dotted(path))[1]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level and node.module is None:
                for a in node.names:
                    target = _dotted(path.parent.parent if node.level == 2 else path.parent) + "." + a.name
                    if _is_module(target) and _place(target)[0] == "lesson" and _place(target)[1] != here:
                        aliases[a.asname or a.name] = target
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                target = aliases[node.value.id]
                if node.attr.startswith("_") or _is_module(f"{target}.{node.attr}"):
                    wrong.append(f"{path.relative_to(ROOT)} line {node.lineno}: {node.value.id}.{node.attr}")
    assert wrong == [], f"another lesson's part or private name: {wrong}"


def test_scripts_layout_finds_the_lessons_the_package_finds():
    """scripts/layout.py reads the faces without importing them: its lessons are helpers.exercises'."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("layout_script", ROOT / "scripts" / "layout.py")
    layout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout)
    rows = "\n".join(layout.rows())
    for nb, folder in _lessons().items():
        assert f"| `helpers/{folder.name}/` | [{nb}](" in rows, f"scripts/layout.py misses lesson {folder.name} ({nb})"
    assert rows.count("](notebooks/") == len(_lessons())


def test_the_learners_package_imports_its_own_modules_at_the_top():
    """A module's head shows the graph that runs: no import of the learner's package hides in a
    function. (An engine adapter, like pandas or matplotlib, may wait until it is used: the embedded
    engine's wheel does not exist on every platform.)"""
    hidden = [f"{src} line {line}: {dst}" for src, edges in _graph().items() if src.startswith(("helpers", "engines"))
              for dst, _, line, inner in edges if inner and dst.startswith("helpers")]
    assert hidden == [], f"move these imports to the top of their module: {hidden}"


def test_the_front_door_holds_what_notebooks_use_and_hides_no_module():
    """``helpers.X`` is a name the notebooks call, or a module: no function hides its module."""
    import helpers

    assert len(helpers.__all__) == len(set(helpers.__all__))
    for name in helpers.__all__:
        obj = getattr(helpers, name)
        assert not (ROOT / "helpers" / f"{name}.py").exists() and not (ROOT / "helpers" / name).is_dir(), (
            f"helpers.{name} is exported but is also a module's name: it hides helpers/{name}")
        assert obj is not None
    used = set()
    for path in repo.notebooks():
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                used |= set(re.findall(r"(?<![\w.])helpers\.([A-Za-z_]\w*)", "".join(cell["source"])))
    modules = {p.stem for p in (ROOT / "helpers").glob("*.py")} | {p.parent.name for p in (ROOT / "helpers").glob("*/__init__.py")}
    assert set(helpers.__all__) <= used, f"exported, used by no notebook: {sorted(set(helpers.__all__) - used)}"
    assert used - modules <= set(helpers.__all__), f"used by a notebook, not exported: {sorted(used - modules - set(helpers.__all__))}"
    import helpers.counting
    import helpers.measure

    assert inspect.ismodule(helpers.counting) and inspect.ismodule(helpers.measure)
    init = ast.parse((ROOT / "helpers" / "__init__.py").read_text(encoding="utf-8"))
    assigned = [n for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AugAssign))
                and "__all__" in {getattr(t, "id", "") for t in getattr(n, "targets", [getattr(n, "target", None)])}]
    assert len(assigned) == 1, "__all__ is built in one place"


def test_one_class_of_each_name_across_the_lessons_and_the_core():
    """Two classes named alike (``Workload`` in helpers/workload.py and the advisor's) read as one."""
    seen: dict[str, list[str]] = {}
    for path in _modules("helpers"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                seen.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    twice = {name: where for name, where in seen.items() if len(where) > 1}
    assert twice == {}, f"one class per name: {twice}"


def test_a_wheel_holds_every_module_of_the_package(tmp_path):
    """A non-editable install gets every subpackage: each lesson's folder and helpers/datasets/ too.
    Built from the tracked files alone, offline (setuptools is pinned in requirements.txt)."""
    src = tmp_path / "src"
    for path in _tracked_files():
        rel = path.relative_to(ROOT)
        if rel.parts[0] in PACKAGES or rel.name in ("pyproject.toml", "LICENSE", "README.md"):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).write_bytes(path.read_bytes())
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--quiet",
                           "--disable-pip-version-check", str(src), "-w", str(tmp_path / "dist")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    import zipfile

    (wheel,) = (tmp_path / "dist").glob("*.whl")
    held = {n for n in zipfile.ZipFile(wheel).namelist() if n.split("/")[0] in PACKAGES}
    tracked = {str(p.relative_to(ROOT)) for p in _tracked_files()
               if p.relative_to(ROOT).parts[0] in PACKAGES and p.suffix == ".py"}
    assert held == tracked, f"in git, not in the wheel: {sorted(tracked - held)}; in the wheel only: {sorted(held - tracked)}"


def test_every_listing_is_short_enough_to_read():
    """A listing (``helpers.show_source``) is what a learner reads: at most 60 lines, median at most 25
    (its docstrings cut to their first sentence); a longer one moves its hardening into private helpers
    it calls by name (``tools/listings.py`` lists them all)."""
    from tools import listings

    found = listings.listings()
    assert len(found) >= 50, "the notebooks' show_source calls were not all found"
    long = [f"{x.notebook} cell {x.cell}: {x.call} ({x.lines} lines)" for x in found if x.lines > listings.MAX_LINES]
    assert long == [], f"listings over {listings.MAX_LINES} lines: {long}"
    lines = sorted(x.lines for x in found)
    assert statistics.median(lines) <= listings.MAX_MEDIAN, f"median listing {statistics.median(lines)} lines"


def test_no_listing_shows_a_test_hook():
    """Test hooks (``_AFTER_RESERVE``, a crash injected by a test) are called from private helpers,
    never from the body a learner reads."""
    from tools import listings

    hooks = [f"{x.notebook} cell {x.cell}: {x.call}" for x in listings.listings()
             if any(hook in x.text for hook in ("_AFTER_RESERVE", "_after_step", "simulated_crash("))]
    assert hooks == [], f"these listings show a test hook: {hooks}"
