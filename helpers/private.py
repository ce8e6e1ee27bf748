"""Private files: a file of the user's own, reached without following a link, through folders nobody else controls.

What the workbook keeps per user and reads back goes through here: the typed copies of the large
data files and their key (:mod:`helpers.datasets.cache`) and the progress record
(:mod:`helpers.exercises`). On POSIX:

* **The folder** is reached from ``/`` one name at a time, each folder opened relative to the one
  before with ``O_NOFOLLOW`` (a symlink swapped in meanwhile is never followed by the kernel; a link
  on the way is read and followed only if the user or root owns it, so another user's link, even in
  ``/tmp``, never chooses the folder), and checked on the opened folder itself (``fstat``): every
  folder above it owned by root or the user and writable by nobody else unless it is sticky (as
  ``/tmp``: others may add entries there, but not rename or delete the user's); the folder itself
  owned by the user and writable by nobody else, sticky or not (created 0700). In a folder others
  may add entries to, another user could create the file (or its lock) before the user does.
* **The file** is opened in that folder with ``O_NOFOLLOW | O_NONBLOCK`` (a link is refused, a FIFO
  never blocks) and checked on the open file: a regular file with one link, owned by the user,
  writable by nobody else (``secret``: readable by nobody else either).
* **A write** is a temporary file (0600, ``<name>.<8 hex>.tmp``, created exclusively) renamed over
  the file: a reader sees the old content or the new, never half of it.
* **A lock** (:func:`locked`) is a file of its own beside it, checked as any file, and waited for a
  bounded time: then :class:`Busy`, never a hang.

On Windows there are no ``O_NOFOLLOW``, folder descriptors or ``flock``: files are opened by path, a
link is refused, owners and modes are not checked (the profile folder is private by default) and
nothing is locked. Every refusal is :class:`Unsafe`, its message naming the file or folder and why
(:class:`Missing` when it does not exist).
"""
from __future__ import annotations

import contextlib
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

try:  # POSIX: a lock file
    import fcntl
except ImportError:  # Windows: no lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["POSIX", "Unsafe", "Missing", "Busy", "open_folder", "read", "write", "read_in", "write_in", "locked"]

POSIX = os.name == "posix" and os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
#: how often a lock held by another is tried again while waiting for it
_LOCK_POLL = 0.02


class Unsafe(Exception):
    """A folder or file on the way is not one to trust; the message names it and says why."""


class Missing(Unsafe):
    """The folder or the file does not exist."""


class Busy(Unsafe):
    """A lock stayed held by another process for longer than the wait allowed."""


def _check_folder(st: os.stat_result, where: str, last: bool) -> None:
    uid = os.getuid()
    if not stat.S_ISDIR(st.st_mode):
        raise Unsafe(f"{where} is not a folder")
    if last:  # the file's own folder: nobody else may add or replace files in it
        if st.st_uid != uid:
            raise Unsafe(f"its folder {where} belongs to another user")
        if st.st_mode & 0o022 and st.st_mode & stat.S_ISVTX:  # /tmp: another user may create the file first
            raise Unsafe(f"its folder {where} is shared: other users may write files in it")
        if st.st_mode & 0o022:
            raise Unsafe(f"its folder {where} may be written by other users (chmod go-w {where})")
    elif st.st_uid not in (uid, 0) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
        # another user could rename what is below (a sticky folder lets them only add their own entries)
        raise Unsafe(f"the folder {where} above it is controlled by another user")


def open_folder(folder: Path, create: bool) -> int:
    """A descriptor of ``folder``, reached from ``/`` one name at a time without the kernel following
    any link, every folder on the way checked (module docstring); missing folders created 0700 when
    ``create``. POSIX only. Raises :class:`Unsafe` (:class:`Missing`)."""
    todo = list(Path(os.path.abspath(folder)).parts[1:])
    where = Path("/")
    fd = os.open("/", _DIR_FLAGS & ~os.O_NOFOLLOW)
    links = 0
    try:
        _check_folder(os.fstat(fd), str(where), last=not todo)
        while todo:
            part = todo.pop(0)
            try:
                new = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise Missing(f"{where / part} does not exist") from None
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                new = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:  # ELOOP / ENOTDIR: a link, or a file where a folder should be
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    raise Unsafe(f"{where / part} is not a folder ({exc.strerror})") from None
                links += 1
                if st.st_uid not in (os.getuid(), 0):
                    raise Unsafe(f"{where / part} is a link of another user's") from None
                if links > 40:
                    raise Unsafe(f"{where / part}: too many links") from None
                target = os.readlink(part, dir_fd=fd)
                parts = list(Path(target).parts)
                if os.path.isabs(target):
                    new = os.open("/", _DIR_FLAGS & ~os.O_NOFOLLOW)
                    parts = parts[1:]
                    os.close(fd)
                    fd = new
                    where = Path("/")
                todo[:0] = parts
                _check_folder(os.fstat(fd), str(where), last=not todo)
                continue
            os.close(fd)
            fd = new
            where = where.parent if part == ".." else where if part == "." else where / part
            _check_folder(os.fstat(fd), str(where), last=not todo)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _check_file(st: os.stat_result, where: str, secret: bool = False) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise Unsafe(f"{where} is a link")
    if not stat.S_ISREG(st.st_mode):
        raise Unsafe(f"{where} is not a regular file (a FIFO, a device or a folder)")
    if st.st_nlink != 1:
        raise Unsafe(f"{where} has {st.st_nlink} names (hard links)")
    if not POSIX:
        return
    if st.st_uid != os.getuid():
        raise Unsafe(f"{where} belongs to another user")
    if st.st_mode & (0o077 if secret else 0o022):
        raise Unsafe(f"{where} may be {'read' if secret else 'written'} by other users")


def _open_file(dir_fd: int, name: str, where: str, flags: int, secret: bool = False) -> int:
    """``name`` in ``dir_fd`` opened with ``flags`` (plus no link, no blocking), checked (:func:`_check_file`)."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, 0o600, dir_fd=dir_fd)
    except FileNotFoundError:
        raise Missing(f"{where} does not exist") from None
    except OSError as exc:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            raise Unsafe(f"{where}: {exc.strerror}") from None
        _check_file(st, where, secret)  # a link: ELOOP
        raise Unsafe(f"{where}: {exc.strerror}") from None
    try:
        _check_file(os.fstat(fd), where, secret)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_in(dir_fd: int, name: str, where: str, secret: bool = False, limit: int = -1) -> bytes:
    """The bytes of ``name`` in the folder :func:`open_folder` opened (``where``: the path its messages
    name), opened without following a link and checked as the module docstring says, or
    :class:`Unsafe` (:class:`Missing`); at most ``limit`` bytes when it is given. POSIX only."""
    fd = _open_file(dir_fd, name, where, os.O_RDONLY, secret)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)


def read(folder: Path, name: str, secret: bool = False, limit: int = -1) -> bytes:
    """The bytes of ``folder/name`` (at most ``limit`` when it is given), reached and checked as the
    module docstring says, or :class:`Unsafe` (:class:`Missing`)."""
    where = str(Path(folder) / name)
    if not POSIX:  # Windows: by path; a link is refused
        path = Path(folder) / name
        if path.is_symlink():
            raise Unsafe(f"{where} is a link")
        if not path.exists():
            raise Missing(f"{where} does not exist")
        with open(path, "rb") as fh:
            _check_file(os.fstat(fh.fileno()), where, secret)
            return fh.read(limit)
    dir_fd = open_folder(folder, create=False)
    try:
        return read_in(dir_fd, name, where, secret, limit)
    finally:
        os.close(dir_fd)


def write_in(dir_fd: int, name: str, data: bytes, *, exclusive: bool = False, mode: int = 0o600) -> None:
    """Write ``name`` in the folder :func:`open_folder` opened, atomically: a temporary file
    (``<name>.<8 hex>.tmp``, ``mode`` less the umask, created with ``O_EXCL | O_NOFOLLOW``) renamed over
    it (``exclusive``: created, never replaced: :class:`FileExistsError`). A link standing at ``name``
    is replaced itself, its target never written. POSIX only."""
    tmp = f"{name}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if exclusive:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        else:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # a reader sees all or nothing
    finally:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass


def write(folder: Path, name: str, data: bytes, *, exclusive: bool = False,
          before: Callable[[int], None] | None = None, mode: int = 0o600) -> None:
    """Write ``folder/name`` (``mode``, 0600 unless told) atomically: a temporary file renamed over it
    (``exclusive``: created, never replaced: :class:`FileExistsError`). The folder is created 0700 if
    missing; a link standing there is replaced itself, its target never written (:func:`read` what
    stands there first to refuse it instead). ``before(folder descriptor)`` runs first (the cache
    tidies its old files there)."""
    if not POSIX:
        folder = Path(folder)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = folder / name
        tmp = folder / f"{name}.{uuid.uuid4().hex[:8]}.tmp"
        with open(tmp, "xb") as fh:
            fh.write(data)
        (os.rename if exclusive else os.replace)(tmp, target)
        return
    dir_fd = open_folder(folder, create=True)
    try:
        if before is not None:
            before(dir_fd)
        write_in(dir_fd, name, data, exclusive=exclusive, mode=mode)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def locked(folder: Path, name: str, wait: float) -> Iterator[None]:
    """Hold an exclusive lock on the lock file ``folder/name`` (created 0600, checked as any file:
    never a link, a FIFO or another user's) while the block runs; the folder is created 0700 if
    missing. A lock held by another process is tried again for ``wait`` seconds, then
    :class:`Busy` (saying so). Windows: nothing is locked."""
    if not POSIX or fcntl is None:
        Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
        yield
        return
    where = str(Path(folder) / name)
    dir_fd = open_folder(folder, create=True)
    try:
        fd = _open_file(dir_fd, name, where, os.O_RDWR | os.O_CREAT)
    finally:
        os.close(dir_fd)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(f"{where} stayed locked for {wait:g} s (another kernel is writing, or "
                                 f"stopped while writing)") from None
                time.sleep(_LOCK_POLL)
        yield
    finally:
        os.close(fd)  # closing releases the lock
