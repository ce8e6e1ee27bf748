"""Where the data files are, and their check against ``datasets/checksums.sha256``."""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .. import settings
from .common import RESTORE, DatasetError

__all__ = ["DATASETS_DIR", "datasets_dir", "sha256", "verify_file", "verified_digest"]


def _others_cannot_write(path: Path) -> bool:
    """True if ``path`` is the user's own or root's, not a link, and not writable by all (POSIX;
    always True elsewhere). A group-writable clone (umask 002) passes."""
    if os.name != "posix":
        return True
    try:
        st = path.lstat()
    except OSError:
        return False
    return (not stat.S_ISLNK(st.st_mode) and st.st_uid in (os.getuid(), 0)
            and not st.st_mode & 0o002)


def _find_datasets_dir() -> Path:
    """The repository's ``datasets/``: beside this package (editable install), else the first
    ``datasets/checksums.sha256`` found from the working directory upwards (a notebook's folder)
    that the user or root owns and not everybody may write (another user's ``/tmp/datasets`` is
    passed over: the checksums could not vouch for files they wrote themselves)."""
    beside = Path(__file__).resolve().parents[2] / "datasets"
    if (beside / "checksums.sha256").is_file():
        return beside
    for folder in (Path.cwd(), *Path.cwd().parents):
        found = folder / "datasets"
        if (found / "checksums.sha256").is_file() and all(
                _others_cannot_write(p) for p in (found, found / "checksums.sha256")):
            return found
    return beside


DATASETS_DIR = _find_datasets_dir()


def datasets_dir() -> Path:
    """The folder read: ``WORKBOOK_DATASETS`` if set, else the repository's ``datasets/``."""
    return settings.datasets_folder() or DATASETS_DIR


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(folder: Path, name: str) -> Path:
    """Check ``folder/name`` against ``folder/checksums.sha256``; return its path."""
    path = folder / name
    sums = folder / "checksums.sha256"
    if not path.is_file():
        hint = (f" (WORKBOOK_DATASETS points at {folder}: unset it to use the shipped files)"
                if settings.datasets_folder() else "")
        raise DatasetError(f"{path}: the file is missing{hint}; " + RESTORE.format(name=name) + ".")
    if not sums.is_file():
        raise DatasetError(f"{sums}: the checksum list is missing, so {name} cannot be verified; "
                           "restore it with `git checkout -- datasets/checksums.sha256` or rerun "
                           "`python datasets/provenance.py`.")
    expected = None
    for line in sums.read_text(encoding="utf-8").splitlines():
        digest, _, listed = line.strip().partition("  ")
        if listed.lstrip("*") == name:
            expected = digest.lower()
    if expected is None:
        raise DatasetError(f"{sums}: no checksum listed for {name}; rerun "
                           "`python datasets/provenance.py` to rewrite the list.")
    actual = sha256(path)
    if actual != expected:
        raise DatasetError(f"{path}: checksum mismatch (sha256 {actual[:12]}..., expected "
                           f"{expected[:12]}...): the file was changed or truncated; "
                           + RESTORE.format(name=name) + ".")
    _VERIFIED[str(path)] = actual
    return path


#: the sha256 of each file as last verified (the key of its typed documents)
_VERIFIED: dict[str, str] = {}


def verified_digest(path: Path) -> str:
    """The sha256 of ``path`` as :func:`verify_file` last checked it (computed now if it did not)."""
    return _VERIFIED.get(str(path)) or sha256(path)
