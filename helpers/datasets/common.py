"""What every part of the loader shares: its error, the batch size and the seed of generated data."""
from __future__ import annotations

__all__ = ["DatasetError", "BATCH_SIZE", "SEED", "RESTORE"]

#: documents per ``insert_many`` (and per bulk write of a reload)
BATCH_SIZE = 2_000
#: the seed of every generated dataset: the same documents on every run and machine
SEED = 7
#: what to do about a damaged shipped file (``.format(name=file)``)
RESTORE = ("restore it with `git checkout -- datasets/{name}` or rebuild it with "
           "`python datasets/provenance.py`")


class DatasetError(Exception):
    """A dataset file is missing, changed, truncated or malformed; the message says what to do."""
