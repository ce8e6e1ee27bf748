"""Shared helpers of the MongoDB schema-design workbook (see notebooks/00_start_here.ipynb)."""
from .backends import BackendError, BackendInfo, Capabilities, backend_info, banner, connect, get_client, get_db, redact_uri
from .counting import CommandCounter, counting
from .safety import ForeignCollectionError, reset_workbook, track_collection, workbook_collection

__all__ = [
    "BackendError", "BackendInfo", "Capabilities", "backend_info", "banner", "connect", "get_client",
    "get_db", "redact_uri", "CommandCounter", "counting", "ForeignCollectionError", "reset_workbook",
    "track_collection", "workbook_collection",
]
