"""The repository: its root, its notebooks, and the environment a notebook runs in.

One home for what the test command, ``scripts/nb.py`` (the committed run) and the benchmarks share.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["ROOT", "NOTEBOOKS", "NOTEBOOK_GLOB", "notebooks", "same_folder", "clean_env", "notebook_env", "readme_block"]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: every notebook of the workbook (found by pattern, never by a list: a new one is tested the day it lands)
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
#: matplotlib in a kernel as in JupyterLab (figures as inline PNG outputs)
INLINE = "module://matplotlib_inline.backend_inline"


def notebooks(folder: Path | str = NOTEBOOKS) -> list[Path]:
    """The numbered notebooks in ``folder``, in reading order."""
    return sorted(Path(folder).glob(NOTEBOOK_GLOB))


def same_folder(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one folder (links resolved; one folder under two names too): what the
    student copies and the HTML build never write into when ``b`` holds the notebooks."""
    try:
        return Path(a).resolve() == Path(b).resolve() or (Path(a).exists() and Path(b).exists()
                                                          and Path(a).samefile(b))
    except OSError:
        return False


def clean_env(base: Mapping[str, str] | None = None, *, keep: Iterable[str] = ()) -> dict[str, str]:
    """``base`` (default: this process's environment) without the workbook's settings (backend,
    database, scale, data folder, demo style, progress file, ``MONGODB_URI``; except those in
    ``keep``), without ``MPLBACKEND`` and the test command's own servers (``tools.worker_db``); a
    fixed hash seed. The default run, whatever the shell."""
    from helpers.settings import VARIABLES  # here, not at the top: scripts/toc.py needs only the stdlib
    from tools.worker_db import WORKER_URIS

    keep = set(keep)
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in ("MPLBACKEND", WORKER_URIS) and (k not in VARIABLES or k in keep)}
    env["PYTHONHASHSEED"] = "0"
    return env


def notebook_env(backend: str, base: Mapping[str, str] | None = None, *, keep: Iterable[str] = (),
                 **overrides: str) -> dict[str, str]:
    """The environment a notebook runs in (committed run, test, benchmark): the default run on
    ``backend``, inline figures, no progress bars (``CI``), then ``overrides``."""
    env = clean_env(base, keep=keep)
    env.update({"WORKBOOK_BACKEND": backend, "MPLBACKEND": INLINE, "CI": env.get("CI") or "true"})
    env.update(overrides)
    return env


def readme_block(start: str, end: str, body: str, argv: list[str], *, what: str, script: str) -> int:
    """Put ``body`` between the markers ``start`` and ``end`` of README.md (a generated block: the
    contents, the capability table); with ``--check`` in ``argv`` only compare, and say which
    ``script`` rewrites ``what`` when it is out of date. The exit status of ``scripts/toc.py`` and
    ``scripts/capabilities.py``."""
    path = ROOT / "README.md"
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"README.md needs the markers {start} and {end}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    new = head + start + "\n" + body + "\n" + end + tail
    if "--check" in argv:
        if new != text:
            print(f"README.md's {what} is out of date: run python3 {script}")
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0
