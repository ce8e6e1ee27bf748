"""The repository: its root, its notebooks, and the environment a notebook runs in.

One home for what the test command, ``scripts/nb.py`` (the committed run) and the benchmarks share.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["ROOT", "NOTEBOOKS", "NOTEBOOK_GLOB", "notebooks", "clean_env", "notebook_env"]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: every notebook of the workbook (found by pattern, never by a list: a new one is tested the day it lands)
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
#: matplotlib in a kernel as in JupyterLab (figures as inline PNG outputs)
INLINE = "module://matplotlib_inline.backend_inline"


def notebooks(folder: Path | str = NOTEBOOKS) -> list[Path]:
    """The numbered notebooks in ``folder``, in reading order."""
    return sorted(Path(folder).glob(NOTEBOOK_GLOB))


def clean_env(base: Mapping[str, str] | None = None, *, keep: Iterable[str] = ()) -> dict[str, str]:
    """``base`` (default: this process's environment) without the workbook's settings (backend,
    database, scale, data folder, demo style, progress file, ``MONGODB_URI``; except those in
    ``keep``) and without ``MPLBACKEND``; a fixed hash seed. The default run, whatever the shell."""
    from helpers.settings import VARIABLES  # here, not at the top: scripts/toc.py needs only the stdlib

    keep = set(keep)
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k != "MPLBACKEND" and (k not in VARIABLES or k in keep)}
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
