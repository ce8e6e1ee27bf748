"""The repository: its root, its notebooks, and the environment a notebook runs in.

One home for what the test command, ``scripts/nb.py`` (the committed run) and the benchmarks share.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping

from helpers import private

__all__ = ["ROOT", "NOTEBOOKS", "NOTEBOOK_GLOB", "notebooks", "same_folder", "OutFolder", "clean_env",
           "notebook_env", "readme_block"]

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


class OutFolder:
    """A build's output folder (student copies, the HTML build), opened once and written only inside it.

    ``with OutFolder(path, refuse) as out:`` opens ``path`` with :func:`helpers.private.open_folder`
    (created 0700 if missing, no link on the way followed unless the user's or root's): it must be the
    caller's own and writable by nobody else, or ``refuse(sentence)`` is raised before anything is written.
    :meth:`read` and :meth:`write` then reach each file by name inside that open folder, never following a
    link (a write is a temporary file, ``O_EXCL | O_NOFOLLOW``, renamed into place): a link another user
    planted after the checks is never written through, and none can be, since nobody else may write the
    folder. A folder this created is removed again (when still empty) if the build then fails.
    On Windows (no folder descriptors) files are reached by path (:mod:`helpers.private`).
    """

    def __init__(self, path: Path | str, refuse: Callable[[str], Exception], default: str) -> None:
        self.path, self._refuse, self._default = Path(path), refuse, default
        self._fd: int | None = None
        self._made = False

    def __enter__(self) -> "OutFolder":
        self._made = not (self.path.exists() or self.path.is_symlink())
        if not private.POSIX:
            self.path.mkdir(parents=True, exist_ok=True)
            return self
        try:
            self._fd = private.open_folder(self.path, create=True)
        except private.Unsafe as e:
            why = str(e).replace("its folder ", "the folder ", 1)
            raise self._refuse(f"{self.path} is not a folder to write into: {why}; so nothing was written; name "
                               f"a folder only you can write (the default is {self._default}).") from None
        except OSError as e:
            raise self._refuse(f"{self.path} cannot be opened or created ({e.strerror or e}), so nothing was "
                               f"written; name a folder only you can write (the default is {self._default}).") \
                from None
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if kind is not None and self._made:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when empty; never follows a link

    def holds(self, folder: Path) -> bool:
        """The open folder is ``folder`` itself (the same inode, whatever the names on the way)."""
        try:
            st = os.fstat(self._fd) if self._fd is not None else os.stat(self.path)
            return os.path.samestat(st, os.stat(folder))
        except OSError:
            return False

    def names(self) -> list[str]:
        """The names in the open folder."""
        return sorted(os.listdir(self._fd if self._fd is not None else self.path))

    def read(self, name: str) -> bytes | None:
        """The bytes of ``name`` in the folder, or None when there is none; :class:`helpers.private.Unsafe`
        for a link, a FIFO, a folder, a file with several names or one of another user's."""
        try:
            if self._fd is None:
                return private.read(self.path, name)
            return private.read_in(self._fd, name, str(self.path / name))
        except private.Missing:
            return None

    def write(self, name: str, data: bytes) -> Path:
        """Write ``name`` in the folder (0644 less the umask) through a temporary file renamed into
        place; a link standing there is replaced, never followed. Returns its path."""
        if self._fd is None:
            private.write(self.path, name, data, mode=0o644)
        else:
            private.write_in(self._fd, name, data, mode=0o644)
        return self.path / name


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
