"""The typed copies for callers above the catalogue: every large shipped file typed once, ahead of
its first load (:func:`prepare_cache`), and a file's typed documents as dicts (:func:`typed_documents`).

Here, not in ``cache``, because both need the catalogue (its specs, the shipped files' names), which
itself loads through ``cache``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import bson

from .. import settings
from .cache import CACHE_MIN_ROWS, copy_path, key_advice, typed_copy, typing_tag
from .catalogue import SPECS, data_files
from .checksums import datasets_dir, verified_digest, verify_file
from .common import DatasetError
from .csvtyping import Fields

__all__ = ["prepare_cache", "typed_documents"]


def typed_documents(path: Path, fields: Fields, make_id: Callable[..., Any] | None = None) -> list[dict[str, Any]]:
    """:func:`typed_copy`'s documents as dicts (new ones, the caller's own)."""
    return [bson.decode(doc.raw) for doc in typed_copy(path, fields, make_id, data_files=data_files()).docs]


def prepare_cache() -> list[str]:
    """Type every large shipped file once, into the cache (``workbook.py lab`` and ``setup`` call
    this), so that even a first load reads a typed copy. Returns a line per file typed now, or
    per file that could not be (the notebook loading it will say what is wrong)."""
    said = []
    for spec in SPECS.values():
        source = spec.source
        file, fields = getattr(source, "file", None), getattr(source, "fields", None)
        if fields is None or settings.cache_folder() is None:
            continue
        try:
            path = verify_file(datasets_dir(), file)
            tag = typing_tag(fields, source.make_id, source.where)
            cached = copy_path(path, verified_digest(path), tag)
            if cached is not None and cached.is_file():
                continue
            copy = typed_copy(path, fields, source.make_id, source.where, data_files=data_files())
        except DatasetError as exc:
            said.append(f"{file}: not typed ({str(exc).split(';')[0]})")
            continue
        if len(copy.docs) >= CACHE_MIN_ROWS:
            if cached is not None and cached.is_file():
                said.append(f"{file}: typed once, kept in {cached.parent}")
                continue
            folder = settings.cache_folder()
            said.append(f"{file}: typed, but not kept: " + (
                key_advice() or f"the cache folder {folder} is not writable, or not a folder of yours that only "
                                f"you may write (`chmod 700 {folder}`), under folders only you or root may change"))
    return said
