"""Reading and typing a CSV file's rows: the checked reader (every error names the file, the line
and the field) and the fast one (a generated function per file layout, falling back on the checked
reader for the message)."""
from __future__ import annotations

import csv
import datetime as _dt
import gzip
import re
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

from .common import RESTORE, DatasetError

__all__ = ["EPOCH", "Fields", "INT64_MAX", "INT64_MIN", "read_rows", "typed_rows", "with_ids",
           "to_int", "to_float", "to_epoch", "to_hex6", "to_yn"]

#: the zero of the files' epoch-second timestamps (naive UTC, as pymongo returns datetimes)
EPOCH = _dt.datetime(1970, 1, 1)


def to_int(text: str) -> int:
    return int(text)


def to_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return value


def to_epoch(text: str) -> _dt.datetime:
    return EPOCH + _dt.timedelta(seconds=int(text))


def to_hex6(text: str) -> str:
    if len(text) != 6 or text.strip("0123456789abcdef"):
        raise ValueError("not a 6-digit lowercase hex icao24 address")
    return text


def to_yn(text: str) -> bool:
    if text.upper() not in ("Y", "N"):
        raise ValueError("expected Y or N")
    return text.upper() == "Y"


_TYPE_NAMES = {str: "text", to_int: "an integer", to_float: "a number",
               to_epoch: "integer epoch seconds", to_hex6: "6-digit hex", to_yn: "Y or N"}

# column -> (converter, required, document field); required fields may not be empty
Fields = dict[str, tuple[Callable[[str], Any], bool, str]]


def read_rows(path: Path, fields: Fields) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, typed document without _id)`` for each row of a CSV (or .csv.gz).

    The line is the one the row starts on (a quoted field may span lines), counted from 1 with
    the header; an error names that line, the field and what is wrong.
    """
    name = path.name
    fix = RESTORE.format(name=name) + "."
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


#: a byte that is not UTF-8, as the ``surrogateescape`` error handler reads it
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _check_utf8(path: Path, line: int, header: list[str], row: list[str], fix: str) -> None:
    if "".join(row).isascii():  # nearly every row: nothing to look for
        return
    for i, text in enumerate(row):
        found = _NOT_UTF8.search(text)
        if found is not None:
            bad = found.group()
            col = header[i] if i < len(header) else f"#{i + 1}"
            raise DatasetError(f"{path}: line {line}: field {col!r} is not valid UTF-8 (byte "
                               f"0x{ord(bad) - 0xDC00:02x}); {fix}")


#: the largest and smallest integers BSON stores (int64); a wider value cannot be written
INT64_MAX, INT64_MIN = 2 ** 63 - 1, -(2 ** 63)


def _row_converter(fields: Fields, header: list[str]) -> Callable[[list[str]], dict[str, Any]]:
    """A function typing one CSV row the way :func:`read_rows` does, generated for these columns.

    The fast path of :func:`typed_rows`: one straight-line function per file layout (no loop
    over the fields, the common converters inlined). It raises on anything :func:`read_rows` rejects
    (and on an integer wider than int64, which BSON cannot hold); the caller then re-reads the
    file with :func:`read_rows` for the message naming the line and the field.
    """
    inline = {str: "{t}", to_int: "_int64(int({t}))", to_float: None,
              to_epoch: "(_ep.get({t}) or _epoch({t}))"}
    lines = ["def convert(row):", f"    if len(row) != {len(header)}: raise ValueError('row length')",
             "    d = {}"]
    names: dict[str, Any] = {"_int64": _int64, "_ep": {}, "_epoch": None}
    for k, (col, (conv, required, key)) in enumerate(fields.items()):
        t = f"row[{header.index(col)}]"
        lines.append(f"    t = {t}")
        if conv is to_float:  # inlined: nan and +-inf give nan for v - v, every finite number 0.0
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
        value = cache[text] = to_epoch(text)
        return value

    names["_epoch"] = epoch
    exec("\n".join(lines), names)  # noqa: S102 - code built above from the field table only
    return names["convert"]


def _int64(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError("wider than 64 bits")
    return value


def with_ids(path: Path, fields: Fields, make_id: Callable[[dict[str, Any]], Any],
             typed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The typed rows as documents: ``{"_id": make_id(row), **row}`` (without the column
    ``make_id.key`` names, when the ``_id`` is a column); a repeated ``_id`` names both lines."""
    moved = getattr(make_id, "key", None)
    seen: set[Any] = set()
    docs = []
    for doc in typed:
        _id = make_id(doc)
        if _id in seen:  # rare: read the file again, checked, for the two lines
            first, again = [line for line, row in read_rows(path, fields) if make_id(dict(row)) == _id][:2]
            raise DatasetError(f"{path}: lines {first} and {again}: the same _id {_id!r} twice; "
                               f"each row must have its own key; " + RESTORE.format(name=path.name) + ".")
        seen.add(_id)
        out = {"_id": _id, **doc}
        if moved is not None:
            del out[moved]
        docs.append(out)
    return docs


def typed_rows(path: Path, fields: Fields) -> list[dict[str, Any]]:
    """Every row of a CSV (or .csv.gz) typed as :func:`read_rows` types it, as fast as Python
    allows (:func:`_row_converter`). On any problem the file is read again with the checked reader,
    whose :class:`DatasetError` names the file, the line and the field."""
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
        for number, doc in read_rows(path, fields):
            for key, value in doc.items():
                if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
                    raise DatasetError(f"{path}: line {number}: field {key!r} = {value} is wider than a "
                                       "64-bit integer, which BSON cannot store; "
                                       + RESTORE.format(name=path.name) + ".") from None
        raise DatasetError(f"{path}: cannot read the file; " + RESTORE.format(name=path.name) + ".") from None
