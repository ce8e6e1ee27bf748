"""A shipped CSV file as a pandas DataFrame, read through the checked reader (notebook 04)."""
from __future__ import annotations

from typing import Any, Sequence

from .catalogue import SPECS
from .checksums import datasets_dir, verify_file
from .common import DatasetError
from .csvtyping import read_rows

__all__ = ["read_table"]


def read_table(file: str, columns: Sequence[str] | None = None, *, missing: Any = None) -> Any:
    """A shipped CSV file as a pandas DataFrame, read through the checked loader.

    The file's checksum is verified and every row typed as :func:`load_dataset` types it, so a
    changed, truncated or malformed file raises one :class:`DatasetError` naming the file, the line
    and the field. ``columns``: the file's columns to keep (all by default); an empty cell becomes
    ``missing``. Introduced in notebook 04, which reads ``nyc_planes.csv`` and
    ``adsb_switzerland.csv.gz`` this way (``read_table("nyc_planes.csv", ["tailnum", "icao24"])``).
    """
    import pandas as pd

    fields = next((src.fields for src in (spec.source for spec in SPECS.values())
                   if getattr(src, "file", None) == file and hasattr(src, "fields")), None)
    if fields is None:
        files = sorted(src.file for src in (spec.source for spec in SPECS.values()) if hasattr(src, "fields"))
        raise DatasetError(f"{file!r} is not a CSV file the workbook ships; choose one of: {', '.join(files)}")
    columns = list(fields) if columns is None else list(columns)
    unknown = [c for c in columns if c not in fields]
    if unknown:
        raise DatasetError(f"{file}: no column {unknown[0]!r}; its columns are {', '.join(fields)}")
    wanted = {col: (conv, req, col) for col, (conv, req, _key) in fields.items() if col in columns}
    path = verify_file(datasets_dir(), file)
    rows = [[doc.get(col, missing) for col in columns] for _, doc in read_rows(path, wanted)]
    return pd.DataFrame(rows, columns=columns)

