"""Load the workbook's datasets into a database: real extracts from ``datasets/`` and seeded ones.

Introduced in notebook 00; every lesson's setup cell calls ``load_dataset``::

    from helpers.datasets import load_dataset
    load_dataset("adsb_reports", db)              # scale from WORKBOOK_SCALE, default "small"
    load_dataset("posts", db, scale=2000)         # 2,000 posts (the parent records)

What a load guarantees:

* **Checked input.** Each file's sha256 is compared with ``datasets/checksums.sha256`` first; a
  changed, truncated or missing file, a missing column or a malformed row raises one
  :class:`DatasetError` naming the file, the line and the field, and what to do about it.
* **All or nothing.** Every row is read, typed and checked before the first write, so a bad file
  changes nothing. Then, where renaming a collection costs nothing (a real MongoDB, the mock), the
  documents go into a staging collection of this load's own, renamed onto the target only when
  complete (``dropTarget=True``): any error leaves the target exactly as it was. Where a rename
  copies the documents (SecantusDB), they go straight into the target, and a server error
  mid-load drops what was written: never a half-loaded collection. There a reload (a Setup cell
  run again: it loads, then resets everything else with ``reset_workbook(db, keep=loaded)``)
  reads the collection back and writes only the documents that differ, byte for byte, or all of
  them past :data:`SYNC_MOST_CHANGED`: it ends with the same documents as a fresh load (their
  natural order may differ, as on any MongoDB: sort when order matters), at about half the cost
  of dropping and writing again.
* **Typed once.** A large file's typed copy is cached per machine (``WORKBOOK_CACHE``;
  ``workbook.py setup`` writes it), named by the file's sha256, so a load costs little more than
  the inserts themselves.
* **One load at a time per collection.** Two kernels loading the same dataset into one database
  take turns (a lock document in the registry); both end with the complete collection.
* **Same result every time.** ``_id`` values are natural keys (or generation order), so loading
  again replaces the collection with identical documents; never duplicates.
* **Only the workbook's collections.** Target and staging go through
  ``helpers.safety.workbook_collection``, which refuses a collection somebody else created.

Missing values: an empty CSV cell becomes an *absent* field (query it with ``$exists``), never
``None``. Datetimes are naive UTC, as pymongo returns them.

Scale: ``"small"`` (the classroom default: at most about 20,000 documents, a few seconds even on
the mock), ``"full"``, or an ``int``: the number of parent records (aircraft for ``adsb_reports``
and ``nyc_flights``, countries for ``airports``, posts for ``posts``, ...), picked evenly spaced
over the sorted parent keys so every scale is a spread-out, repeatable sample.
``WORKBOOK_SCALE`` sets the default; ``WORKBOOK_DATASETS`` points at another folder with the same
layout (and its own ``checksums.sha256``).
"""
from __future__ import annotations

import csv
import datetime as _dt
import gzip
import hashlib
import json
import os
import re
import time
import uuid
import weakref
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from tqdm.auto import tqdm

from . import generators, settings
from .safety import workbook_collection

__all__ = [
    "DatasetError",
    "is_staging_name",
    "staging_name",
    "LoadResult",
    "DATASETS_DIR",
    "BATCH_SIZE",
    "SEED",
    "dataset_names",
    "datasets_dir",
    "default_scale",
    "lesson_scale",
    "load_dataset",
    "staged_load",
    "read_table",
    "read_rows",
    "verify_file",
    "AIRLINE_FIELDS",
]

def _find_datasets_dir() -> Path:
    """The repository's ``datasets/``: beside this package (editable install), else the first
    ``datasets/checksums.sha256`` found from the working directory upwards (a notebook's folder)."""
    beside = Path(__file__).resolve().parent.parent / "datasets"
    if (beside / "checksums.sha256").is_file():
        return beside
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "datasets" / "checksums.sha256").is_file():
            return folder / "datasets"
    return beside


DATASETS_DIR = _find_datasets_dir()
BATCH_SIZE = 2_000
#: the seed of every generated dataset: the same documents on every run and machine
SEED = 7
_EPOCH = _dt.datetime(1970, 1, 1)
_RESTORE = ("restore it with `git checkout -- datasets/{name}` or rebuild it with "
            "`python datasets/provenance.py`")


class DatasetError(Exception):
    """A dataset file is missing, changed, truncated or malformed; the message says what to do."""


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_dataset` loaded: documents per collection, the scale and the time taken."""

    dataset: str
    scale: str | int
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """All documents loaded, over every collection."""
        return sum(self.counts.values())

    def __str__(self) -> str:
        parts = ", ".join(f"{name}: {count:,}" for name, count in self.counts.items())
        return f"{self.dataset} ({self.scale}): {parts} documents in {self.seconds:.1f} s"


# ------------------------------------------------------------------------------------------
# Locations, scale, checksums
# ------------------------------------------------------------------------------------------
def datasets_dir() -> Path:
    """The folder read: ``WORKBOOK_DATASETS`` if set, else the repository's ``datasets/``."""
    return settings.datasets_folder() or DATASETS_DIR


def default_scale() -> str | int:
    """``WORKBOOK_SCALE`` ("small", "full" or a number), else "small"."""
    return _check_scale(settings.scale() or settings.DEFAULT_SCALE, "WORKBOOK_SCALE")


def lesson_scale(default: str | int) -> str | int:
    """The scale a lesson loads at: the lesson's own ``default`` (chosen so the notebook stays quick
    on every backend) unless ``WORKBOOK_SCALE`` asks for another (an instructor's ``full`` demo, a
    number). ``WORKBOOK_SCALE=small``, the documented default, means each lesson's own small: the
    same as leaving it unset. The one scale rule: :func:`load_dataset` without a scale follows it too.
    """
    asked = default_scale()
    return _check_scale(default) if asked == settings.DEFAULT_SCALE else asked


#: the most parent records a generated dataset makes (each is built in memory first)
_MOST = {"products": 100_000, "posts": 50_000, "authors_books": 1_000, "categories": 100}
#: no dataset holds more parent records than this (a larger WORKBOOK_SCALE is a mistake)
MAX_SCALE = max(_MOST.values())


def _check_scale(scale: Any, where: str = "scale") -> str | int:
    if isinstance(scale, str) and re.fullmatch(r"[0-9]+", scale.strip()):  # ASCII digits only: int()
        scale = int(scale.strip())  # would also take '١٠', and str.isdigit() takes '²', which int() refuses
    if isinstance(scale, bool) or not (scale in ("small", "full") or (isinstance(scale, int) and scale >= 0)):
        raise DatasetError(f"{where} must be 'small', 'full' or a number of parent records >= 0 "
                           f"(digits 0-9), not {scale!r}")
    if where == "WORKBOOK_SCALE" and isinstance(scale, int) and scale > MAX_SCALE:
        raise DatasetError(f"WORKBOOK_SCALE={scale} is more parent records than any dataset holds (the "
                           f"most is {MAX_SCALE:,}); use WORKBOOK_SCALE=full for every record, or a smaller "
                           f"number")
    return scale


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(folder: Path, name: str) -> Path:
    """Check ``folder/name`` against ``folder/checksums.sha256``; return its path."""
    path = folder / name
    sums = folder / "checksums.sha256"
    if not path.is_file():
        hint = (f" (WORKBOOK_DATASETS points at {folder}: unset it to use the shipped files)"
                if settings.datasets_folder() else "")
        raise DatasetError(f"{path}: the file is missing{hint}; " + _RESTORE.format(name=name) + ".")
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
    actual = _sha256(path)
    if actual != expected:
        raise DatasetError(f"{path}: checksum mismatch (sha256 {actual[:12]}..., expected "
                           f"{expected[:12]}...): the file was changed or truncated; "
                           + _RESTORE.format(name=name) + ".")
    _VERIFIED[str(path)] = actual
    return path


#: the sha256 of each file as last verified (the key of its typed documents)
_VERIFIED: dict[str, str] = {}


# ------------------------------------------------------------------------------------------
# Reading and typing rows
# ------------------------------------------------------------------------------------------
def _to_int(text: str) -> int:
    return int(text)


def _to_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return value


def _to_epoch(text: str) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(seconds=int(text))


def _to_hex6(text: str) -> str:
    if len(text) != 6 or text.strip("0123456789abcdef"):
        raise ValueError("not a 6-digit lowercase hex icao24 address")
    return text


def _to_yn(text: str) -> bool:
    if text.upper() not in ("Y", "N"):
        raise ValueError("expected Y or N")
    return text.upper() == "Y"


_TYPE_NAMES = {str: "text", _to_int: "an integer", _to_float: "a number",
               _to_epoch: "integer epoch seconds", _to_hex6: "6-digit hex", _to_yn: "Y or N"}

# column -> (converter, required, document field); required fields may not be empty
Fields = dict[str, tuple[Callable[[str], Any], bool, str]]


def _rows(path: Path, fields: Fields) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, typed document without _id)`` for each row of a CSV (or .csv.gz).

    The line is the one the row starts on (a quoted field may span lines), counted from 1 with
    the header; an error names that line, the field and what is wrong.
    """
    name = path.name
    fix = _RESTORE.format(name=name) + "."
    last = 1  # the last line read completely
    try:
        # surrogateescape: a byte that is not UTF-8 is caught on its own row, with its line
        raw = gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="") \
            if name.endswith(".gz") else open(path, encoding="utf-8", errors="surrogateescape", newline="")
        with raw as fh:
            reader = csv.reader(fh)
            try:
                header = next(reader, None)
            except csv.Error as exc:
                raise DatasetError(f"{path}: line {reader.line_num}: not valid CSV ({exc}); {fix}") from None
            if header is None:
                raise DatasetError(f"{path}: line 1: the file is empty (no header); {fix}")
            _check_utf8(path, 1, header, header, fix)
            missing = [col for col in fields if col not in header]
            if missing:
                raise DatasetError(f"{path}: line 1: missing column {missing[0]!r} in the header "
                                   f"(found {', '.join(header)}); {fix}")
            index = [(header.index(col), col, conv, req, key)
                     for col, (conv, req, key) in fields.items()]
            last = reader.line_num
            while True:
                try:
                    row = next(reader, None)
                except csv.Error as exc:
                    raise DatasetError(f"{path}: line {last + 1}: not valid CSV ({exc}); {fix}") from None
                if row is None:
                    break
                line, last = last + 1, reader.line_num
                if not row:
                    raise DatasetError(f"{path}: line {line}: an empty line; every line after the header "
                                       f"is one row of {len(header)} fields; {fix}")
                _check_utf8(path, line, header, row, fix)
                if len(row) != len(header):
                    raise DatasetError(f"{path}: line {line}: {len(row)} fields instead of "
                                       f"{len(header)} (field {header[min(len(row), len(header)) - 1]!r}); {fix}")
                doc: dict[str, Any] = {}
                for i, col, conv, req, key in index:
                    text = row[i]
                    if text == "":
                        if req:
                            raise DatasetError(f"{path}: line {line}: field {col!r} is empty but required; {fix}")
                        continue
                    try:
                        doc[key] = conv(text)
                    except (ValueError, OverflowError) as exc:
                        raise DatasetError(
                            f"{path}: line {line}: field {col!r} = {text!r} is not "
                            f"{_TYPE_NAMES.get(conv, 'valid')} ({exc}); {fix}"
                        ) from None
                yield line, doc
    except DatasetError:
        raise
    except (EOFError, OSError, zlib.error, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: line {last + 1}: cannot read the file, it is truncated or corrupt: "
                           f"the data stop after line {last} ({type(exc).__name__}: {exc}); {fix}") from None


def _check_utf8(path: Path, line: int, header: list[str], row: list[str], fix: str) -> None:
    for i, text in enumerate(row):
        bad = next((ch for ch in text if "\udc80" <= ch <= "\udcff"), None)
        if bad is not None:
            col = header[i] if i < len(header) else f"#{i + 1}"
            raise DatasetError(f"{path}: line {line}: field {col!r} is not valid UTF-8 (byte "
                               f"0x{ord(bad) - 0xDC00:02x}); {fix}")


#: public names of the checked reader, for helpers that read a shipped file directly (notebook 04)
read_rows = _rows
verify_file = _verify


def _pick(keys: Iterable[Any], n: int | None) -> set[Any] | None:
    """``n`` keys evenly spaced over the sorted keys (``None`` = all)."""
    if n is None:
        return None
    ordered = sorted(set(keys))
    if n >= len(ordered):
        return set(ordered)
    return {ordered[i * len(ordered) // n] for i in range(n)}


#: the largest and smallest integers BSON stores (int64); a wider value cannot be written
INT64_MAX, INT64_MIN = 2 ** 63 - 1, -(2 ** 63)


def _row_converter(fields: Fields, header: list[str]) -> Callable[[list[str]], dict[str, Any]]:
    """A function typing one CSV row the way :func:`_rows` does, generated for these columns.

    The fast path of :func:`_typed_documents`: one straight-line function per file layout (no loop
    over the fields, the common converters inlined). It raises on anything :func:`_rows` rejects
    (and on an integer wider than int64, which BSON cannot hold); the caller then re-reads the
    file with :func:`_rows` for the message naming the line and the field.
    """
    inline = {str: "{t}", _to_int: "_int64(int({t}))", _to_float: None,
              _to_epoch: "(_ep.get({t}) or _epoch({t}))"}
    lines = ["def convert(row):", f"    if len(row) != {len(header)}: raise ValueError('row length')",
             "    d = {}"]
    names: dict[str, Any] = {"_int64": _int64, "_ep": {}, "_epoch": None}
    for k, (col, (conv, required, key)) in enumerate(fields.items()):
        t = f"row[{header.index(col)}]"
        lines.append(f"    t = {t}")
        if conv is _to_float:  # inlined: nan and +-inf give nan for v - v, every finite number 0.0
            lines += ["    if t != '':", "        v = float(t)",
                      "        if v - v: raise ValueError('not a finite number')", f"        d[{key!r}] = v"]
        else:
            expr = inline.get(conv)
            if expr is None:
                names[f"_c{k}"] = conv
                expr = f"_c{k}({{t}})"
            lines.append(f"    if t != '': d[{key!r}] = {expr.format(t='t')}")
        if required:
            lines.append("    else: raise ValueError('required')")
    lines.append("    return d")
    cache: dict[str, _dt.datetime] = names["_ep"]

    def epoch(text: str) -> _dt.datetime:  # the same second appears in many rows: type it once
        value = cache[text] = _to_epoch(text)
        return value

    names["_epoch"] = epoch
    exec("\n".join(lines), names)  # noqa: S102 - code built above from the field table only
    return names["convert"]


def _int64(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError("wider than 64 bits")
    return value


def _typed_documents(path: Path, fields: Fields,
                     make_id: Callable[[dict[str, Any]], Any] | None = None) -> list[dict[str, Any]]:
    """Every row of a CSV (or .csv.gz) typed as :func:`_rows` types it, as fast as Python allows;
    with ``make_id``, as documents: ``_id`` first (a column moved into it is not kept twice),
    every ``_id`` checked unique over the whole file (:func:`_with_ids`).

    On any problem the file is read again with the checked reader :func:`_rows`, whose
    :class:`DatasetError` names the file, the line and the field. The caller verified the file
    (:func:`_verify`), whose sha256 keys a large file's typed copy on disk (:func:`_cached_typed`).
    Nothing is kept in memory between loads (the ADS-B file's documents hold about 75 MB).
    """
    key = (str(path), _VERIFIED.get(str(path)) or _sha256(path), _typing_tag(fields, make_id))
    return _cached_typed(path, fields, make_id, key)


def _with_ids(path: Path, fields: Fields, make_id: Callable[[dict[str, Any]], Any],
              typed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The typed rows as documents: ``{"_id": make_id(row), **row}`` (without the column
    ``make_id.key`` names, when the ``_id`` is a column); a repeated ``_id`` names both lines."""
    moved = getattr(make_id, "key", None)
    seen: set[Any] = set()
    docs = []
    for doc in typed:
        _id = make_id(doc)
        if _id in seen:  # rare: read the file again, checked, for the two lines
            first, again = [line for line, row in _rows(path, fields) if make_id(dict(row)) == _id][:2]
            raise DatasetError(f"{path}: lines {first} and {again}: the same _id {_id!r} twice; "
                               f"each row must have its own key; " + _RESTORE.format(name=path.name) + ".")
        seen.add(_id)
        out = {"_id": _id, **doc}
        if moved is not None:
            del out[moved]
        docs.append(out)
    return docs


#: files with fewer rows are typed faster than their cached copy is found
_CACHE_MIN_ROWS = 20_000
_SOURCE_DIGEST: list[str] = []


def _typing_tag(fields: Fields, make_id: Callable[..., Any] | None) -> str:
    """A digest of how a file is typed: this module's own source (its converters, the ``_id``
    rules of ``_SPECS``), the field table and the ``_id`` rule. A changed typing never meets a
    copy typed the old way."""
    if not _SOURCE_DIGEST:
        _SOURCE_DIGEST.append(_sha256(Path(__file__)))
    rule = None if make_id is None else (getattr(make_id, "__qualname__", repr(make_id)),
                                         getattr(make_id, "key", None))
    table = [(col, getattr(conv, "__name__", repr(conv)), req, key) for col, (conv, req, key) in fields.items()]
    return hashlib.sha256(repr((_SOURCE_DIGEST[0], rule, table)).encode()).hexdigest()[:16]


def _private(path: Path) -> bool:
    """True if ``path`` (a folder or a file) is this user's own and nobody else may write it (POSIX;
    elsewhere the user's profile folder is private already). A copy is read only from such a file
    in such a folder."""
    if os.name != "posix":
        return True
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def prepare_cache() -> list[str]:
    """Type every large shipped file once, into the cache (``workbook.py lab`` and ``setup`` call
    this), so that even a first load reads a typed copy. Returns a line per file typed now, or
    per file that could not be (the notebook loading it will say what is wrong)."""
    said = []
    for spec in _SPECS.values():
        file, fields = getattr(spec.source, "file", None), getattr(spec.source, "fields", None)
        if fields is None or settings.cache_folder() is None:
            continue
        make_id = spec.source.make_id  # type: ignore[attr-defined]
        try:
            path = _verify(datasets_dir(), file)
            key = (str(path), _VERIFIED[str(path)], _typing_tag(fields, make_id))
            if _cache_path(key) is not None and _cache_path(key).exists():
                continue
            docs = _cached_typed(path, fields, make_id, key)
        except DatasetError as exc:
            said.append(f"{file}: not typed ({str(exc).split(';')[0]})")
            continue
        if len(docs) >= _CACHE_MIN_ROWS:
            cached = _cache_path(key)
            said.append(f"{file}: typed once, kept in {cached.parent}" if cached is not None and cached.exists()
                        else f"{file}: typed, but the cache folder is not writable or not private")
    return said


def _cache_path(key: tuple[str, str, str]) -> Path | None:
    """Where the typed copy for ``key`` (path, sha256, typing tag) is kept; None with no cache."""
    folder = settings.cache_folder()
    if folder is None:
        return None
    path, digest, tag = key
    return folder / f"{Path(path).name}.{digest[:16]}.{tag}.pickle"


def _cached_typed(path: Path, fields: Fields, make_id: Callable[..., Any] | None,
                  key: tuple[str, str, str]) -> list[dict[str, Any]]:
    """:func:`_read_typed` (and :func:`_with_ids`), through a cache of typed copies
    (``settings.cache_folder()``, default ``~/.schema_workbook/cache``).

    A large file (139,098 ADS-B rows: 0.5 s to read, type and key) is typed once per machine and
    kept as a pickle named by the file's sha256 (verified against ``checksums.sha256`` just
    before) and by the typing (:func:`_typing_tag`); loading it back takes about 0.1 s. A pickle
    can run code when loaded, so a copy is read only from a folder of the user's own that nobody
    else may write in, and only from a file of the user's own (:func:`_private`); the folder
    is created private (0700). An unreadable copy is typed again and rewritten; an unwritable
    folder only costs the time.
    """
    import pickle

    cached = _cache_path(key)
    if cached is not None and _private(cached.parent):
        try:
            if _private(cached):
                with open(cached, "rb") as fh:
                    docs = pickle.load(fh)  # noqa: S301 - this user's own file, in this user's private folder
                if isinstance(docs, list):
                    return docs
        except FileNotFoundError:
            pass
        except Exception:  # noqa: BLE001 - a damaged copy: type the file again and replace it
            pass
    docs = _read_typed(path, fields)
    if make_id is not None:
        docs = _with_ids(path, fields, make_id, docs)
    if cached is not None and len(docs) >= _CACHE_MIN_ROWS:
        _write_copy(cached, docs)
    return docs


def _write_copy(cached: Path, docs: list[dict[str, Any]]) -> None:
    import pickle

    folder = cached.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(folder):
            return
        now = time.time()
        for old in folder.iterdir():  # another typing's copy unused for a week, a killed writer's leftover
            age = now - old.stat().st_mtime
            if (old.suffix == ".pickle" and old.name != cached.name and age > 7 * 86400) or \
                    (old.suffix == ".tmp" and age > 3600):
                old.unlink(missing_ok=True)
        tmp = cached.with_name(f"{cached.name}.{uuid.uuid4().hex[:8]}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(docs, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(cached)  # atomic: a reader sees the whole copy or none
    except OSError:
        pass


def _read_typed(path: Path, fields: Fields) -> list[dict[str, Any]]:
    try:
        raw = gzip.open(path, "rt", encoding="utf-8", newline="") if path.name.endswith(".gz") \
            else open(path, encoding="utf-8", newline="")
        with raw as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None or any(col not in header for col in fields):
                raise ValueError("header")
            convert = _row_converter(fields, header)
            return [convert(row) for row in reader]
    except Exception:  # noqa: BLE001 - the checked reader says what is wrong, and where
        # the checked reader raises its DatasetError at the first bad row; rows before it are
        # checked for a value BSON cannot hold (the checked reader's types allow it)
        for number, doc in _rows(path, fields):
            for key, value in doc.items():
                if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
                    raise DatasetError(f"{path}: line {number}: field {key!r} = {value} is wider than a "
                                       "64-bit integer, which BSON cannot store; "
                                       + _RESTORE.format(name=path.name) + ".") from None
        raise DatasetError(f"{path}: cannot read the file; " + _RESTORE.format(name=path.name) + ".") from None


def _csv_dataset(file: str, fields: Fields, make_id: Callable[[dict[str, Any]], Any],
                 parent: str | None = None) -> Callable[[Path, int | None], Iterator[dict[str, Any]]]:
    """A source reading ``file``; with ``parent``, keep only the rows of ``n`` parent keys."""

    def readonly(folder: Path, n: int | None) -> list[dict[str, Any]]:
        """The typed documents themselves, not copies: for a reader that changes none of them
        (``load_dataset``, which only inserts them); :func:`source` hands out copies."""
        path = _verify(folder, file)
        # read once: every row typed and checked, every _id unique, before any is used
        docs = _typed_documents(path, fields, make_id)
        if parent is None or n is None:
            return docs
        where = "_id" if getattr(make_id, "key", None) == parent else parent  # the column moved into _id
        chosen = _pick((doc[where] for doc in docs if where in doc), n)
        return [doc for doc in docs if doc.get(where) in chosen]

    def source(folder: Path, n: int | None) -> Iterator[dict[str, Any]]:
        yield from (dict(doc) for doc in readonly(folder, n))  # new documents, the caller's own

    source.readonly = readonly  # type: ignore[attr-defined]
    source.file = file  # type: ignore[attr-defined]
    source.fields = fields  # type: ignore[attr-defined]
    source.make_id = make_id  # type: ignore[attr-defined]
    return source


def _pop(key: str) -> Callable[[dict[str, Any]], Any]:
    """The column ``key`` as the ``_id``; the document keeps it only as ``_id``."""
    def make_id(doc: dict[str, Any]) -> Any:
        return doc[key]

    make_id.key = key  # type: ignore[attr-defined]
    return make_id


_ADSB: Fields = {
    "timestamp": (_to_epoch, True, "timestamp"), "icao24": (_to_hex6, True, "icao24"),
    "callsign": (str, False, "callsign"), "lat": (_to_float, False, "lat"),
    "lon": (_to_float, False, "lon"), "altitude": (_to_float, False, "altitude"),
    "groundspeed": (_to_float, False, "groundspeed"), "track": (_to_float, False, "track"),
    "vertical_rate": (_to_float, False, "vertical_rate"),
}
_AIRLINES: Fields = {
    "airline_id": (_to_int, True, "airline_id"), "name": (str, True, "name"),
    "alias": (str, False, "alias"), "iata": (str, False, "iata"), "icao": (str, False, "icao"),
    "callsign": (str, False, "callsign"), "country": (str, False, "country"),
    "active": (_to_yn, True, "active"),
}
#: the typed columns of the shipped OpenFlights table, for readers outside this module (notebook 04)
AIRLINE_FIELDS = _AIRLINES
_CARRIERS: Fields = {"carrier": (str, True, "carrier"), "name": (str, True, "name"),
                     "icao": (str, True, "icao")}
_PLANES: Fields = {
    "tailnum": (str, True, "tailnum"), "icao24": (_to_hex6, True, "icao24"),
    "year": (_to_int, False, "year"), "type": (str, False, "type"),
    "manufacturer": (str, False, "manufacturer"), "model": (str, False, "model"),
    "engines": (_to_int, False, "engines"), "seats": (_to_int, False, "seats"),
    "speed": (_to_int, False, "speed"), "engine": (str, False, "engine"),
}
_FLIGHTS: Fields = {
    "year": (_to_int, True, "year"), "month": (_to_int, True, "month"), "day": (_to_int, True, "day"),
    "dep_time": (_to_int, False, "dep_time"), "arr_time": (_to_int, False, "arr_time"),
    "carrier": (str, True, "carrier"), "flight": (_to_int, True, "flight"),
    "tailnum": (str, False, "tailnum"), "origin": (str, True, "origin"), "dest": (str, True, "dest"),
    "air_time": (_to_int, False, "air_time"), "distance": (_to_int, True, "distance"),
}
_PLANE_CARRIERS: Fields = {
    "tailnum": (str, True, "tailnum"), "carrier": (str, True, "carrier"),
    "flights": (_to_int, True, "flights"), "first_month": (_to_int, True, "first_month"),
    "last_month": (_to_int, True, "last_month"),
}
_AIRPORTS: Fields = {
    "icao": (str, True, "icao"), "iata": (str, False, "iata"), "name": (str, True, "name"),
    "city": (str, False, "city"), "subd": (str, False, "subd"), "country": (str, True, "country"),
    "lat": (_to_float, True, "lat"), "lon": (_to_float, True, "lon"),
}


def _flight_id(doc: dict[str, Any]) -> str:
    return (f"{doc['year']}-{doc['month']:02d}-{doc['day']:02d} "
            f"{doc['carrier']}{doc['flight']} {doc['origin']}")


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _json_list_lines(path: Path, text: str, fix: str) -> list[tuple[int, Any]]:
    """The items of a JSON list, each with the line it starts on; a key twice in one item is an error."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
    ws = re.compile(r"[ \t\n\r]*")
    pos = ws.match(text, 0).end()
    if not text.startswith("[", pos):
        raise DatasetError(f"{path}: line {text.count(chr(10), 0, pos) + 1}: expected a JSON list of nodes; {fix}")
    pos = ws.match(text, pos + 1).end()
    items: list[tuple[int, Any]] = []
    while not text.startswith("]", pos):
        line = text.count("\n", 0, pos) + 1
        try:
            item, pos = decoder.raw_decode(text, pos)
        except _DuplicateKey as exc:
            raise DatasetError(f"{path}: line {line}: node {len(items) + 1}: the key {exc.key!r} appears "
                               f"twice; {fix}") from None
        items.append((line, item))
        pos = ws.match(text, pos).end()
        if text.startswith(",", pos):
            pos = ws.match(text, pos + 1).end()
    return items


def _flare(folder: Path, n: int | None) -> Iterator[dict[str, Any]]:
    path = _verify(folder, "flare.json")
    fix = _RESTORE.format(name="flare.json") + "."
    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)  # the syntax first: its error names the line
    except (ValueError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", "?")
        raise DatasetError(f"{path}: line {line}: not valid JSON ({exc}); {fix}") from None
    seen: dict[int, tuple[int, int]] = {}
    for number, (line, item) in enumerate(_json_list_lines(path, text, fix), start=1):
        for key, kind, required in (("id", int, True), ("name", str, True), ("parent", int, False),
                                    ("size", int, False)):
            value = item.get(key) if isinstance(item, dict) else None
            # bool is an int in Python, never in the data: True as an id would be stored as a boolean
            if (value is None and required) or (value is not None and (
                    isinstance(value, bool) or not isinstance(value, kind))):
                raise DatasetError(f"{path}: line {line}: node {number}: field {key!r} = {value!r} is not "
                                   f"{'an integer' if kind is int else 'text'}; {fix}")
        if item["id"] in seen:
            first_line, first = seen[item["id"]]
            raise DatasetError(f"{path}: lines {first_line} and {line}: node {number} has the same id "
                               f"{item['id']} as node {first}; node ids must be unique; {fix}")
        seen[item["id"]] = (line, number)
        doc = {"_id": item["id"], "name": item["name"]}
        for key in ("parent", "size"):
            if key in item:
                doc[key] = item[key]
        yield doc


_flare.file = "flare.json"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Spec:
    collections: tuple[str, ...]
    small: int | None  # parent records at "small"; None = the whole dataset
    full: int | None  # parent records at "full"; None = the whole file
    parent: str  # what an int scale counts
    source: Callable[[Path, int | None], Any]
    generated: bool = False


def _generated(fn: Callable[..., Any]) -> Callable[[Path, int | None], Any]:
    return lambda folder, n: fn(n, SEED)


_SPECS: dict[str, _Spec] = {
    "adsb_reports": _Spec(("adsb_reports",), 100, None, "aircraft (icao24)",
                          _csv_dataset("adsb_switzerland.csv.gz", _ADSB,
                                       lambda d: f"{d['icao24']}:{int((d['timestamp'] - _EPOCH).total_seconds())}",
                                       parent="icao24")),
    "airlines": _Spec(("airlines",), None, None, "airlines",
                      _csv_dataset("openflights_airlines.csv", _AIRLINES, _pop("airline_id"),
                                   parent="airline_id")),
    "nyc_carriers": _Spec(("nyc_carriers",), None, None, "carriers",
                          _csv_dataset("nyc_carriers.csv", _CARRIERS, _pop("carrier"), parent="carrier")),
    "nyc_planes": _Spec(("nyc_planes",), None, None, "planes",
                        _csv_dataset("nyc_planes.csv", _PLANES, _pop("tailnum"), parent="tailnum")),
    "nyc_flights": _Spec(("nyc_flights",), 1000, None, "planes (tailnum)",
                         _csv_dataset("nyc_flights_2013_01.csv.gz", _FLIGHTS, _flight_id, parent="tailnum")),
    "nyc_plane_carriers": _Spec(("nyc_plane_carriers",), None, None, "planes",
                                _csv_dataset("nyc_plane_carriers_2013.csv", _PLANE_CARRIERS,
                                             lambda d: f"{d['tailnum']} {d['carrier']}", parent="tailnum")),
    "flare": _Spec(("flare",), None, None, "nodes (always the whole tree)", _flare),
    "airports": _Spec(("airports",), 100, None, "countries",
                      _csv_dataset("airports.csv.gz", _AIRPORTS, _pop("icao"), parent="country")),
    "products": _Spec(("products",), 1_000, 20_000, "products",
                      _generated(generators.products_with_reviews), generated=True),
    "posts": _Spec(("posts",), 1_000, 10_000, "posts",
                   _generated(generators.posts_with_comments), generated=True),
    # "full" for generated data: as big as a live demo on the embedded server stays quick with
    # (an unindexed $lookup per author over every book, a query per tree node)
    "authors_books": _Spec(("authors", "books"), 30, 100, "authors",
                           _generated(generators.authors_and_books), generated=True),
    "categories": _Spec(("categories",), 10, 30, "top-level categories",
                        _generated(generators.category_tree), generated=True),
}


def dataset_names() -> list[str]:
    """The names :func:`load_dataset` accepts, sorted."""
    return sorted(_SPECS)


def read_table(file: str, columns: Sequence[str] | None = None, *, missing: Any = None) -> Any:
    """A shipped CSV file as a pandas DataFrame, read through the checked loader.

    The file's checksum is verified and every row typed as :func:`load_dataset` types it, so a
    changed, truncated or malformed file raises one :class:`DatasetError` naming the file, the line
    and the field. ``columns``: the file's columns to keep (all by default); an empty cell becomes
    ``missing``. Introduced in notebook 04, which reads ``nyc_planes.csv`` and
    ``adsb_switzerland.csv.gz`` this way (``read_table("nyc_planes.csv", ["tailnum", "icao24"])``).
    """
    import pandas as pd

    fields = next((src.fields for src in (spec.source for spec in _SPECS.values())
                   if getattr(src, "file", None) == file and hasattr(src, "fields")), None)
    if fields is None:
        files = sorted(src.file for src in (spec.source for spec in _SPECS.values()) if hasattr(src, "fields"))
        raise DatasetError(f"{file!r} is not a CSV file the workbook ships; choose one of: {', '.join(files)}")
    columns = list(fields) if columns is None else list(columns)
    unknown = [c for c in columns if c not in fields]
    if unknown:
        raise DatasetError(f"{file}: no column {unknown[0]!r}; its columns are {', '.join(fields)}")
    wanted = {col: (conv, req, col) for col, (conv, req, _key) in fields.items() if col in columns}
    path = _verify(datasets_dir(), file)
    rows = [[doc.get(col, missing) for col in columns] for _, doc in _rows(path, wanted)]
    return pd.DataFrame(rows, columns=columns)


def _spec(name: str) -> _Spec:
    if name not in _SPECS:
        raise DatasetError(f"unknown dataset {name!r}; choose one of: {', '.join(dataset_names())}")
    return _SPECS[name]


# ------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------
def _targets(spec: _Spec, collection: str | None) -> tuple[str, ...]:
    if collection is None:
        return spec.collections
    if len(spec.collections) == 1:
        return (collection,)
    return tuple(f"{collection}_{c}" for c in spec.collections)  # a prefix for multi-collection


def _batches(docs: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


#: how long a load's lock is held without a sign of life (a crashed kernel's lock expires then)
LOCK_LEASE_S = 60.0
#: how long a load waits for another load of the same collection to finish before refusing
LOCK_WAIT_S = 120.0
_RENAME_COPIES: dict[int, tuple[Any, bool]] = {}


def _rename_copies(db: Any) -> bool:
    """True where ``renameCollection`` copies the documents (SecantusDB: about 5 s per 139k), so a
    staging collection costs a second write; False on a real MongoDB (a metadata change) and on
    the mock (a dictionary move). Asked once per client (``buildInfo``)."""
    client = getattr(db, "client", None)
    known = _RENAME_COPIES.get(id(client))
    if known is not None and known[0]() is client:  # the same client, not a new one at a reused id
        return known[1]
    try:
        copies = "secantusVersion" in client.admin.command("buildInfo")
    except Exception:  # noqa: BLE001 - the mock has no buildInfo: its rename is free
        copies = False
    try:
        _RENAME_COPIES[id(client)] = (weakref.ref(client), copies)
    except TypeError:  # pragma: no cover - a client without weak references: ask each time
        pass
    return copies


class _LoadLock:
    """One writer at a time per target collection: a lease document in the workbook's registry.

    ``{_id: "$loading:<target>", owner, expires}``; the ``_id`` index makes taking it atomic
    (a second insert fails with a duplicate key). The holder renews the lease while it writes; a
    lease that expired (its kernel crashed) is taken over. A load that finds the lock taken waits
    for it (the other load finishes, then this one runs: both end with a complete collection) and
    refuses with a clear :class:`DatasetError` after :data:`LOCK_WAIT_S`.
    """

    def __init__(self, db: Any, targets: Sequence[str]) -> None:
        from .safety import REGISTRY

        self.registry = db[REGISTRY]
        self.db_name = getattr(db, "name", "?")
        self.ids = [f"$loading:{t}" for t in sorted(set(targets))]  # sorted: no two loads deadlock
        self.owner = f"{uuid.uuid4().hex}"
        self.held: list[str] = []
        self.renewed = 0.0

    def _now(self) -> _dt.datetime:
        return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)

    def acquire(self) -> None:
        from pymongo.errors import DuplicateKeyError

        for lock_id in self.ids:
            deadline = time.monotonic() + LOCK_WAIT_S
            pause = 0.02
            while True:
                now = self._now()
                lease = {"owner": self.owner, "expires": now + _dt.timedelta(seconds=LOCK_LEASE_S)}
                try:
                    self.registry.insert_one({"_id": lock_id, **lease})
                    break
                except DuplicateKeyError:
                    pass
                # the holder crashed: its lease ran out, take it over (atomically: one taker wins)
                if self.registry.find_one_and_update({"_id": lock_id, "expires": {"$lt": now}},
                                                     {"$set": lease}) is not None:
                    break
                if time.monotonic() > deadline:
                    holder = self.registry.find_one({"_id": lock_id}) or {}
                    self.release()
                    target = lock_id.split(":", 1)[1]
                    raise DatasetError(
                        f"another load is writing {target!r} in database {self.db_name!r} and has not "
                        f"finished within {LOCK_WAIT_S:.0f} s; nothing was changed. Wait for it (another "
                        f"notebook or kernel loading the same data) and run this cell again. If no other "
                        f"load is running (a kernel that crashed mid-load), its lock expires at "
                        f"{holder.get('expires', now):%H:%M:%S} UTC.")
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
            self.held.append(lock_id)
        self.renewed = time.monotonic()

    def renew(self) -> None:
        """Extend the lease (at most every few seconds: one round trip)."""
        if self.held and time.monotonic() - self.renewed > LOCK_LEASE_S / 6:
            self.registry.update_many({"_id": {"$in": self.held}, "owner": self.owner},
                                      {"$set": {"expires": self._now() + _dt.timedelta(seconds=LOCK_LEASE_S)}})
            self.renewed = time.monotonic()

    def release(self) -> None:
        if self.held:
            self.registry.delete_many({"_id": {"$in": self.held}, "owner": self.owner})
            self.held = []


class _Staging(dict):
    """``{target: collection to write}`` yielded by :func:`staged_load` (a dict, plus ``renew``).

    ``kept``: the targets written in place that still hold their old documents (``keep=True``):
    the caller brings them to the new contents (:func:`_sync`); every other collection is empty.
    """

    lock: _LoadLock
    kept: frozenset[str] = frozenset()

    def renew(self) -> None:
        """Tell other loads this one is still writing (call between batches of a long load)."""
        self.lock.renew()


_STAGING_NAME = re.compile(r".+__staging(?:_[0-9a-f]{8})?")


def staging_name(target: str) -> str:
    """A staging collection's name for ``target``: unique, so two loads never share one."""
    return f"{target}__staging_{uuid.uuid4().hex[:8]}"


def is_staging_name(name: str) -> bool:
    """True for a load's staging collection (``<target>__staging_<8 hex>``): not a collection of the learner's."""
    return bool(_STAGING_NAME.fullmatch(name))


def _plain_collection(db: Any, name: str) -> bool:
    """True if ``name`` exists, holds documents, and was created with no options (no validator,
    collation, capped size, ...). Once its secondary indexes are dropped, only its documents
    can differ from a freshly loaded collection, so a reload may fix just those (:func:`_sync`)."""
    found = list(db.list_collections(filter={"name": name}))
    if len(found) != 1:
        return False
    info = found[0]
    return (info.get("type", "collection") == "collection" and not info.get("options")
            and db[name].find_one({}, projection={"_id": 1}) is not None)


@contextmanager
def staged_load(db: Any, targets: Sequence[str], *, validated: bool = False,
                keep: bool = False) -> Iterator[dict[str, Any]]:
    """All or nothing: fill staging collections, then rename each over its target.

    Yields ``{target: collection}``. By default each is a staging collection of its own
    (``<target>__staging_<8 hex>``, empty): when the block ends without error every staging
    collection is renamed onto its target (``dropTarget=True``); on any error they are dropped and
    every target is left exactly as it was.

    ``validated=True`` says the caller checked its whole input before this block (as
    :func:`load_dataset` does), so the only failure left is the server's own. Then staging is used
    only where renaming costs nothing (a real MongoDB, the mock); where ``renameCollection`` copies
    the documents (SecantusDB) the targets are emptied and written directly, and on an error the
    documents written are dropped: no half-loaded collection remains.

    ``keep=True`` (with ``validated``): where the targets are written directly, a target that
    exists as a plain collection (:func:`_plain_collection`) is not dropped, because dropping costs
    as much as writing there (SecantusDB: about 2.5 s per 139k documents): only its secondary
    indexes are, and it is listed in the yielded ``kept`` for the caller to bring to the new
    contents with :func:`_sync`. On an error it is dropped like any directly written target.

    One load at a time per target (a lock document in the registry; see :class:`_LoadLock`): two
    kernels loading the same data both end with a complete collection. Target and staging names
    are refused first if somebody else created them (``helpers.safety.workbook_collection``).
    Used by :func:`load_dataset` and ``helpers.outlier.load_outlier_posts``.
    """
    for target in targets:  # the safety contract first: refuse foreign collections before touching anything
        workbook_collection(db, target)
    in_place = validated and _rename_copies(db)
    lock = _LoadLock(db, targets)
    lock.acquire()
    staging: dict[str, str] = {}
    kept: set[str] = set()
    try:
        for target in targets:
            if in_place:
                staging[target] = target
                if keep and _plain_collection(db, target):
                    db[target].drop_indexes()  # a replaced collection has only its _id index
                    kept.add(target)
                    continue
            else:
                staging[target] = staging_name(target)
                workbook_collection(db, staging[target])
            db.drop_collection(staging[target])
            db.create_collection(staging[target])
        yielded = _Staging({target: db[staging[target]] for target in targets})
        yielded.lock = lock
        yielded.kept = frozenset(kept)
        yield yielded
        if not in_place:
            for target in targets:
                db[staging[target]].rename(target, dropTarget=True)
                _forget(db, staging[target])
    except BaseException:
        for name in staging.values():
            try:
                db.drop_collection(name)
                if name not in targets:
                    _forget(db, name)
            except Exception:  # pragma: no cover - keep the original error
                pass
        raise
    finally:
        try:
            lock.release()
        except Exception:  # pragma: no cover - the lease expires on its own
            pass


def _forget(db: Any, name: str) -> None:
    """Remove a staging collection's registry entry once it is gone (renamed or dropped)."""
    from .safety import REGISTRY

    db[REGISTRY].delete_one({"_id": name})


#: a reload rewrites the whole collection once more documents than this differ: deleting them one
#: by one (an ``_id`` lookup each) would cost more than dropping and writing everything again
SYNC_MOST_CHANGED = 1_000


def _sync(coll: Any, docs: list[dict[str, Any]], progress: Any, renew: Callable[[], None]) -> int:
    """Make ``coll`` hold exactly ``docs`` (unique ``_id`` values), writing only the difference.

    Each stored document is read back as raw BSON and compared byte for byte with the encoding of
    the document it should be (field order, types and values all count). A document that is not
    one of ``docs`` (changed, or one the learner added) is deleted by ``_id`` (one ``DeleteOne``
    each, in unordered bulk writes), and every document of ``docs`` not found is inserted. If
    more than :data:`SYNC_MOST_CHANGED` stored documents differ, the reading stops and the
    collection is dropped and written again in full instead. Either way it ends holding the same
    documents as a fresh load; only their natural order may differ (re-inserted ones come last),
    as it may on any MongoDB: sort when order matters. Returns ``len(docs)``.
    """
    import bson
    from bson.codec_options import CodecOptions
    from bson.raw_bson import RawBSONDocument
    from pymongo import DeleteOne

    wanted = {bson.encode(doc): doc for doc in docs}
    stale: list[Any] = []
    raw = coll.with_options(codec_options=CodecOptions(document_class=RawBSONDocument))
    for n, stored in enumerate(raw.find({}, batch_size=BATCH_SIZE * 10), start=1):
        if wanted.pop(stored.raw, None) is None:
            stale.append(stored["_id"])
            if len(stale) > SYNC_MOST_CHANGED:
                break
        if n % BATCH_SIZE == 0:
            renew()
    if len(stale) > SYNC_MOST_CHANGED:  # rewrite it all: drop, create, insert in order
        db, name = coll.database, coll.name
        db.drop_collection(name)
        db.create_collection(name)
        renew()
        missing = docs
    else:
        progress.update(len(docs) - len(wanted))
        for i in range(0, len(stale), BATCH_SIZE):
            coll.bulk_write([DeleteOne({"_id": _id}) for _id in stale[i:i + BATCH_SIZE]], ordered=False)
            renew()
        missing = list(wanted.values())
    for i in range(0, len(missing), BATCH_SIZE):
        batch = missing[i:i + BATCH_SIZE]
        coll.insert_many(batch, ordered=True)
        progress.update(len(batch))
        renew()
    return len(docs)


def _check_documents(name: str, source: Any, docs: list[dict[str, Any]]) -> None:
    """What the server would refuse mid-load, refused before the first write: a repeated ``_id``."""
    seen: set[Any] = set()
    for number, doc in enumerate(docs, start=1):
        key = doc.get("_id")
        try:
            if key in seen:
                file = getattr(source, "file", name)
                first = next(i for i, d in enumerate(docs, start=1) if d.get("_id") == key)
                raise DatasetError(f"{datasets_dir() / file}: records {first} and {number} of dataset {name!r} "
                                   f"have the same _id {key!r}; " + _RESTORE.format(name=file) + ".")
            seen.add(key)
        except TypeError:  # an unhashable _id (a dict): the server checks it
            pass


def load_dataset(name: str, db: Any, scale: str | int | None = None, *,
                 collection: str | None = None) -> LoadResult:
    """Load dataset ``name`` into ``db``, replacing the collection(s) as a whole.

    ``scale``: "small" (default, or ``WORKBOOK_SCALE``), "full", or the number of parent records.
    ``collection``: another target name (for ``authors_books``, a prefix: ``<prefix>_authors``,
    ``<prefix>_books``). Returns a :class:`LoadResult` with the documents per collection.
    Raises :class:`DatasetError` (and leaves every target as it was) if the input is bad.
    Introduced in notebook 00; each lesson's setup cell calls it.
    """
    spec = _spec(name)
    scale = default_scale() if scale is None else _check_scale(scale)
    n = spec.small if scale == "small" else spec.full if scale == "full" else int(scale)
    if spec.generated and n is None:
        n = spec.small
    if spec.generated and n > _MOST.get(name, n):
        raise DatasetError(f"{name}: scale {n:,} is more than it generates: at most {_MOST[name]:,} "
                           f"{spec.parent} ('full' is {spec.full:,}); nothing was loaded")
    targets = _targets(spec, collection)
    start = time.perf_counter()
    # 1. read, type and check everything before the first write: a bad file changes nothing
    readonly = getattr(spec.source, "readonly", None)  # a data file's documents: inserted, never changed
    produced = readonly(datasets_dir(), n) if readonly else spec.source(datasets_dir(), n)
    parts = [list(docs) for docs in (produced if len(targets) > 1 else (produced,))]
    if not readonly:  # a data file's _id values were checked unique as it was typed (_with_ids)
        for docs in parts:
            _check_documents(name, spec.source, docs)
    counts = {target: 0 for target in targets}
    # 2. write: staged where renaming is free; where it copies, straight into the target, and a
    #    target loaded before is brought to the new contents by writing only what differs
    with staged_load(db, targets, validated=True, keep=True) as staging:
        progress = tqdm(desc=f"loading {name}", unit=" docs", delay=1.0,
                        disable=not settings.progress_bars(), leave=False)
        with progress:
            for target, docs in zip(targets, parts):
                if target in staging.kept:
                    counts[target] = _sync(staging[target], docs, progress, staging.renew)
                    continue
                for i in range(0, len(docs), BATCH_SIZE):
                    batch = docs[i:i + BATCH_SIZE]
                    staging[target].insert_many(batch, ordered=True)
                    counts[target] += len(batch)
                    progress.update(len(batch))
                    staging.renew()
    return LoadResult(name, scale, counts, round(time.perf_counter() - start, 3))
