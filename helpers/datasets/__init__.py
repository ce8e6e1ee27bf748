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
  mid-load drops what was written: never a half-loaded collection. A kernel killed mid-load leaves
  one, marked in the registry (``helpers.safety.incomplete``): the banner and every exercise check
  given it say so and to run the Setup cell again, and the next load replaces it. There a reload (a Setup cell
  run again: it loads, then resets everything else with ``reset_workbook(db, keep=loaded)``)
  reads the collection back and writes only the documents that differ, byte for byte, or all of
  them past :data:`SYNC_MOST_CHANGED`: it ends with the same documents as a fresh load (their
  natural order may differ, as on any MongoDB: sort when order matters), at about half the cost
  of dropping and writing again.
* **Typed once.** A large file's typed copy is cached per machine (``WORKBOOK_CACHE``;
  ``workbook.py setup`` writes it), named by the file's sha256, so a load costs little more than
  the inserts themselves. The copy is BSON (reading it runs no code), signed with a key of the
  user's own, and read only through folders nobody else controls (:mod:`helpers.datasets.cache`).
* **One load at a time per collection.** Two kernels loading the same dataset into one database
  take turns (a lease in the registry); both end with the complete collection. A reset in another
  kernel leaves a live load alone, and a load checks its count and its registry entry before it
  reports success.
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

One job per module: :mod:`~helpers.datasets.catalogue` (the datasets, their fields and scales),
:mod:`~helpers.datasets.checksums`, :mod:`~helpers.datasets.csvtyping` (reading and typing rows),
:mod:`~helpers.datasets.cache` (the typed copy), :mod:`~helpers.datasets.staging` (staging and
rename, the checks before success), :mod:`~helpers.datasets.lease` (one load at a time),
:mod:`~helpers.datasets.reload` (the reload by difference), :mod:`~helpers.datasets.load`
(``load_dataset``), :mod:`~helpers.datasets.table` (``read_table``) and
:mod:`~helpers.datasets.sampling` (evenly spaced sampling).
"""
from __future__ import annotations

from .cache import CACHE_MIN_ROWS, TypedCopy, typed_copy
from .catalogue import (
    ADSB_FIELDS,
    AIRLINE_FIELDS,
    AIRPORT_FIELDS,
    CARRIER_FIELDS,
    FLIGHT_FIELDS,
    MAX_SCALE,
    PLANE_CARRIER_FIELDS,
    PLANE_FIELDS,
    SPECS,
    dataset_names,
    default_scale,
    lesson_scale,
    spec,
)
from .checksums import DATASETS_DIR, datasets_dir, sha256, verify_file
from .common import BATCH_SIZE, SEED, DatasetError
from .csvtyping import EPOCH, read_rows
from .lease import LOCK_LEASE_S, LOCK_WAIT_S
from .load import LoadResult, load_dataset
from .prepare import prepare_cache, typed_documents
from .reload import SYNC_MOST_CHANGED
from .sampling import evenly_spaced
from .staging import is_staging_name, rename_copies, staged_load, staging_name
from .table import read_table

__all__ = [
    "DatasetError",
    "is_staging_name",
    "staging_name",
    "LoadResult",
    "DATASETS_DIR",
    "BATCH_SIZE",
    "SEED",
    "EPOCH",
    "dataset_names",
    "datasets_dir",
    "default_scale",
    "lesson_scale",
    "load_dataset",
    "staged_load",
    "read_table",
    "read_rows",
    "verify_file",
    "sha256",
    "prepare_cache",
    "typed_copy",
    "typed_documents",
    "TypedCopy",
    "CACHE_MIN_ROWS",
    "evenly_spaced",
    "rename_copies",
    "spec",
    "SPECS",
    "MAX_SCALE",
    "LOCK_LEASE_S",
    "LOCK_WAIT_S",
    "SYNC_MOST_CHANGED",
    "ADSB_FIELDS",
    "AIRLINE_FIELDS",
    "AIRPORT_FIELDS",
    "CARRIER_FIELDS",
    "FLIGHT_FIELDS",
    "PLANE_CARRIER_FIELDS",
    "PLANE_FIELDS",
]
