"""The typed copy of a large data file, kept per machine: a load then costs little more than its inserts.

A large file (139,098 ADS-B rows: about 1.5 s to read, type and key) is typed once per machine
(``workbook.py setup`` and ``lab`` call :func:`helpers.datasets.prepare.prepare_cache`) and kept in the cache folder
(``settings.cache_folder()``: ``WORKBOOK_CACHE``, default ``~/.schema_workbook/cache``), named by
the file's sha256 (verified against ``checksums.sha256`` just before) and by the typing
(:func:`typing_tag`). What keeps a copy from being anything but the file's own typed rows:

* **Data only.** A copy is BSON: the documents' own bytes, which pymongo inserts as they are
  (``RawBSONDocument``) and a reload compares byte for byte. Reading BSON runs no code, whatever
  the bytes are (a pickle would).
* **Signed by the user's own key.** Each copy carries a keyed BLAKE2b MAC over the data file's
  name, sha256, the typing and the whole content, with a 32-byte key of the user's own
  (``~/.schema_workbook/cache.key``, created 0600 on first use). A copy that does not verify
  (damaged, truncated, one document where the file has 139,098, written by anybody or anything
  else) is refused, the file is typed again from the source and the copy rewritten.
* **Reached without following a link, through folders only the user (or root) controls** (POSIX;
  :mod:`helpers.private`, which the progress record uses too). The cache folder's path is walked from ``/`` one name at a time, each folder opened relative to
  the one before with ``O_NOFOLLOW`` (a symlink swapped in meanwhile is never followed by the
  kernel; a link on the way is read and followed only if the user or root owns it, so another
  user's link, even in ``/tmp``, never chooses the folder) and checked on the opened folder itself
  (``fstat``): every folder above the cache owned by root or the user and writable by nobody else,
  unless it is sticky (as ``/tmp``: others may add entries there, but not rename or delete the
  user's); the cache folder itself owned by the user and writable by nobody else (created 0700).
  The copy is opened in that folder with ``O_NOFOLLOW`` and checked on the open file: a regular
  file with one link, owned by the user, writable by nobody else. The key is reached the same way,
  and refused if anybody else may read it; a key that passes every check but is not 32 bytes long
  is replaced once by a new one, atomically (its old copies then fail their check and are typed
  again), and anything else is never written to: :func:`key_advice` says what to do. A folder failing a check means no cache (the file is
  typed each time), never a copy from it.
* **On Windows** there are no ``O_NOFOLLOW`` or folder descriptors: the cache and the key are
  opened by path, a copy that is a link is refused, and owners and modes are not checked (the
  profile folder is private by default). What protects there is the format (no code runs) and the
  key (a copy nobody could sign without the user's key is refused).

Writing never deletes anything but the cache's own files: a name of the cache's pattern
(``<shipped data file>.<16 hex>.<16 hex>.typed.bson``, the older ``.pickle`` copies, and their
``.<8 hex>.tmp`` leftovers), a regular file of the user's own, unused for a week (another typing's
copy) or an hour (a killed writer's temporary file).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import private, settings
from ..private import Missing, Unsafe
from .checksums import sha256, verified_digest
from .csvtyping import Fields, typed_rows, with_ids

__all__ = ["CACHE_MIN_ROWS", "TypedCopy", "typed_copy", "typing_tag", "copy_path", "is_cache_file",
           "key_path", "key_advice"]

#: files with fewer rows are typed faster than their cached copy is found
CACHE_MIN_ROWS = 20_000
#: the first bytes of a copy (the format's version)
MAGIC = b"WBTYPED1"
_MAC_BYTES = 32
_SUFFIX = ".typed.bson"
_OWN_NAME = re.compile(r"(?P<file>[A-Za-z0-9_.-]+?)\.[0-9a-f]{16}\.[0-9a-f]{16}(?:\.typed\.bson|\.pickle)"
                       r"(?P<tmp>\.[0-9a-f]{8}\.tmp)?")
_SOURCE_DIGEST: list[str] = []


@dataclass(frozen=True)
class TypedCopy:
    """A file's typed documents as BSON (``RawBSONDocument``, inserted as they are), and, when
    asked for, each document's value of one field (``keys``; ``None`` where it has none)."""

    docs: list[Any]
    keys: list[Any] | None = None


def typing_tag(fields: Fields, make_id: Callable[..., Any] | None, where: str | None = None) -> str:
    """A digest of how a file is typed: the loader's typing and catalogue code (the converters, the
    ``_id`` rules), this format, the field table, the ``_id`` rule and the field whose values are
    kept beside the documents. A changed typing never meets a copy typed the old way."""
    if not _SOURCE_DIGEST:
        here = Path(__file__).resolve().parent
        _SOURCE_DIGEST.append(hashlib.sha256("".join(sha256(here / f"{m}.py") for m in (
            "csvtyping", "catalogue", "cache")).encode()).hexdigest())
    rule = None if make_id is None else (getattr(make_id, "__qualname__", repr(make_id)),
                                         getattr(make_id, "key", None))
    table = [(col, getattr(conv, "__name__", repr(conv)), req, key) for col, (conv, req, key) in fields.items()]
    return hashlib.sha256(repr((_SOURCE_DIGEST[0], rule, table, where)).encode()).hexdigest()[:16]


def copy_path(path: Path, digest: str, tag: str) -> Path | None:
    """Where the typed copy of data file ``path`` (sha256 ``digest``, typing ``tag``) is kept; None
    with no cache."""
    folder = settings.cache_folder()
    return None if folder is None else folder / f"{path.name}.{digest[:16]}.{tag}{_SUFFIX}"


def is_cache_file(name: str, data_files: set[str] | frozenset[str]) -> bool:
    """True for a name of the cache's own: a copy (or an older pickle copy, or the temporary file of
    either) of one of ``data_files``. Nothing else in the cache folder is ever deleted."""
    found = _OWN_NAME.fullmatch(name)
    return bool(found) and found["file"] in data_files


def key_path() -> Path:
    """The user's own key signing the typed copies: ``~/.schema_workbook/cache.key``."""
    return Path.home() / ".schema_workbook" / "cache.key"


# ------------------------------------------------------------------------------------------
# Folders and files reached safely: helpers.private (the progress record uses the same)
# ------------------------------------------------------------------------------------------
def _write(folder: Path, name: str, data: bytes, *, data_files: frozenset[str] = frozenset(),
           exclusive: bool = False) -> None:
    """Write ``folder/name`` (0600) atomically (:func:`helpers.private.write`; ``exclusive``:
    created, never replaced). Old files of the cache's own are tidied first."""
    tidy = (lambda dir_fd: _tidy(dir_fd, name, data_files)) if data_files else None
    private.write(folder, name, data, exclusive=exclusive, before=tidy)


def _tidy(dir_fd: int, keep: str, data_files: frozenset[str]) -> None:
    """Delete the cache's own files nobody uses: another typing's copy unused for a week, a killed
    writer's temporary file after an hour. Only names of the cache's pattern, only regular files of
    the user's own; everything else in the folder is left alone."""
    now = time.time()
    for entry in os.scandir(dir_fd):
        if entry.name == keep or not is_cache_file(entry.name, data_files):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            if now - st.st_mtime > (3600 if entry.name.endswith(".tmp") else 7 * 86400):
                os.unlink(entry.name, dir_fd=dir_fd)
        except OSError:
            pass


def _key() -> bytes | None:
    """The user's own key (created on first use), or None where it cannot be kept safely
    (:func:`key_advice` says what to do)."""
    return _key_state()[0]


def key_advice() -> str | None:
    """What to do so that the key signs copies again (one sentence naming the file), or None when
    it does. Like any use of the key, this creates it if missing and replaces one of the wrong length."""
    return _key_state()[1]


def _key_state() -> tuple[bytes | None, str | None]:
    """``(key, None)``, or ``(None, what to do)``.

    The key is read safely (:func:`helpers.private.read`: a regular file of the user's own, one link,
    that nobody else may read, reached through private folders without following a link) and created
    if missing (``O_EXCL``: never over another kernel's). A key of another length than 32 bytes that
    passes those checks is replaced once, atomically (a new file renamed over the entry in its
    checked folder, never followed); copies signed with the old key then fail their check and are
    typed again. Anything else (a link, another user's file, one others may read, an unsafe folder)
    is never written to or replaced: the advice says what to do."""
    path = key_path()
    delete = f"delete it (`rm {path}`): a new key is made on the next load"
    problem: Unsafe | None = None
    replaced = False
    for _ in range(3):
        try:
            data = private.read(path.parent, path.name, secret=True)
        except Missing as exc:
            problem = exc
        except Unsafe as exc:
            problem = exc
            break
        except OSError as exc:
            return None, f"the key {path} cannot be read ({exc.strerror}): {delete}"
        else:
            if len(data) == 32:
                return data, None
            if replaced:  # replaced already, and another length again: not a key of the workbook's making
                return None, f"the key {path} holds {len(data):,} bytes, not 32, again after it was replaced: {delete}"
            try:  # a private regular file of the user's own, only of the wrong length: a new key, atomically
                _write(path.parent, path.name, os.urandom(32))
            except (OSError, Unsafe) as exc:
                return None, (f"the key {path} holds {len(data):,} bytes, not 32, and could not be replaced "
                              f"({exc}): {delete}")
            replaced = True
            continue
        try:
            _write(path.parent, path.name, os.urandom(32), exclusive=True)
        except FileExistsError:
            continue  # another kernel made it meanwhile: read that one
        except Unsafe as exc:
            problem = exc
            break
        except OSError as exc:
            return None, (f"the key {path} cannot be created in {path.parent} ({exc.strerror}): make that folder "
                          f"yours and writable")
    said = str(problem)
    if "may be read by other users" in said:
        return None, (f"the key {path} may be read by other users, so it signs nothing: make it private with "
                      f"`chmod 600 {path}`")
    if said.startswith(str(path)) or f"{path.name} " in said:
        return None, (f"the key {path} is not a plain file of yours ({said}), so it is neither read nor "
                      f"replaced: {delete}")
    return None, (f"the key's folder {path.parent} (or one above it) is not a private folder of yours ({said}), "
                  f"so no key is kept there: make it yours and writable only by you (`chmod 700 {path.parent}`), "
                  f"under folders only you or root may change")


def _mac(key: bytes, identity: bytes, body: memoryview | bytes) -> bytes:
    mac = hashlib.blake2b(key=key, digest_size=_MAC_BYTES)
    mac.update(identity)
    mac.update(body)
    return mac.digest()


# ------------------------------------------------------------------------------------------
# The copy
# ------------------------------------------------------------------------------------------
def _encode(docs: list[dict[str, Any]], where: str | None) -> tuple[bytes, TypedCopy]:
    import bson
    from bson.raw_bson import RawBSONDocument

    encoded = [bson.encode(doc) for doc in docs]
    keys = None if where is None else [doc.get(where) for doc in docs]
    head = bson.encode({"n": len(encoded), "keys": keys})
    return (len(head).to_bytes(4, "little") + head + b"".join(encoded),
            TypedCopy([RawBSONDocument(b) for b in encoded], keys))


def _decode(body: memoryview, as_bson: bool = True) -> TypedCopy:
    import bson
    from bson.codec_options import CodecOptions
    from bson.raw_bson import RawBSONDocument

    size = int.from_bytes(body[:4], "little")
    head = bson.decode(body[4:4 + size])
    docs = bson.decode_all(body[4 + size:], CodecOptions(document_class=RawBSONDocument) if as_bson
                           else bson.DEFAULT_CODEC_OPTIONS)
    if len(docs) != head["n"] or (head["keys"] is not None and len(head["keys"]) != len(docs)):
        raise Unsafe("the count does not match")
    return TypedCopy(docs, head["keys"])


def typed_copy(path: Path, fields: Fields, make_id: Callable[..., Any] | None = None,
               where: str | None = None, as_bson: bool = True, *,
               data_files: frozenset[str] = frozenset()) -> TypedCopy:
    """Every row of data file ``path`` typed (:func:`~helpers.datasets.csvtyping.typed_rows`), as
    documents with ``make_id``'s ``_id`` (:func:`~helpers.datasets.csvtyping.with_ids`), in BSON;
    with ``where``, each document's value of that field too (``as_bson=False``: as dicts, for a
    client that inserts only dicts: the mock). Through the cache (module docstring)
    for a large file; nothing is kept in memory between loads (the ADS-B documents hold about 75 MB).
    The caller verified the file (``verify_file``), whose sha256 names the copy. ``data_files``: the
    names of the shipped data files (``catalogue.data_files()``); a write then also tidies the
    cache of those files' unused copies (:func:`_tidy`)."""
    digest = verified_digest(path)
    tag = typing_tag(fields, make_id, where)
    cached = copy_path(path, digest, tag)
    key = _key() if cached is not None else None
    identity = b"\0".join((path.name.encode(), digest.encode(), tag.encode(), b""))
    if key is not None:
        try:
            data = memoryview(private.read(cached.parent, cached.name))
            if data[:len(MAGIC)] == MAGIC:
                start = len(MAGIC) + _MAC_BYTES
                if hmac.compare_digest(_mac(key, identity, data[start:]), data[len(MAGIC):start]):
                    return _decode(data[start:], as_bson)
        except (Unsafe, OSError):
            pass
        except Exception:  # noqa: BLE001 - signed but unreadable (another version): type it again
            pass
    docs = typed_rows(path, fields)
    if make_id is not None:
        docs = with_ids(path, fields, make_id, docs)
    body, copy = _encode(docs, where)
    if not as_bson:
        copy = TypedCopy(docs, copy.keys)
    if key is not None and len(docs) >= CACHE_MIN_ROWS:
        try:
            _write(cached.parent, cached.name, MAGIC + _mac(key, identity, body) + body,
                   data_files=data_files)
        except (OSError, Unsafe):  # an unwritable or unsafe folder only costs the time
            pass
    return copy
