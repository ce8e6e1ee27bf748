"""Keys of notebook 04's single collection: the hierarchical ``_id``, the airline table, index bounds (notebook 04)."""
from __future__ import annotations

import bisect
import functools
import re
from typing import Any, NamedTuple, Sequence

from ..datasets import AIRLINE_FIELDS, datasets_dir, read_rows, verify_file

COLLECTION = "aerodata"
NO_AIRLINE = "000"  # aircraft with no known airline: not a possible ICAO designator (those are letters)
SEQ_DIGITS = 13  # epoch milliseconds fit in 13 digits until the year 2286
AIRLINE, AIRCRAFT, REPORT = 1, 2, 3  # recordType values
QUERY_BATCH = 100_000  # first batch of each query: one round trip while the answer fits in 16 MiB

_AIRLINE_RE = re.compile(r"[A-Z0-9]{3}")
_ICAO24_RE = re.compile(r"[0-9a-f]{6}")
_ID_RE = re.compile(r"(?P<airline>[A-Z0-9]{3})(?:_(?P<icao24>[0-9a-f]{6})(?:_(?P<seq>[0-9]{%d}))?)?"
                    % SEQ_DIGITS)
_CALLSIGN_RE = re.compile(r"([A-Z]{3})[0-9]")  # ICAO airline callsign: designator + flight number


# ------------------------------------------------------------------------------------------
# Keys
# ------------------------------------------------------------------------------------------
class IdParts(NamedTuple):
    """The parts of an ``aerodata`` ``_id``: airline, then icao24 and message number (or None)."""

    airline: str
    icao24: str | None = None
    seq: int | None = None


def make_id(airline: str, icao24: str | None = None, seq: int | None = None) -> str:
    """``make_id("DAL")`` -> ``"DAL"``; ``("DAL", "a36f7e")`` -> ``"DAL_a36f7e"``;
    ``("DAL", "a36f7e", 2)`` -> ``"DAL_a36f7e_0000000000002"``. The inverse of :func:`parse_id`.

    ``airline``: 3 upper-case letters or digits; ``icao24``: 6 lower-case hex digits; ``seq``: the
    message number (:func:`message_number`: epoch milliseconds), an integer 0 <= seq < 10**13,
    zero-padded so string order is number order.
    Introduced in notebook 04.
    """
    if not isinstance(airline, str) or not _AIRLINE_RE.fullmatch(airline):
        raise ValueError(f"make_id: airline={airline!r} must be 3 upper-case letters or digits, "
                         f"e.g. 'DAL' (or NO_AIRLINE={NO_AIRLINE!r} for aircraft without an airline)")
    if icao24 is None:
        if seq is not None:
            raise ValueError(f"make_id: seq={seq!r} needs an icao24: a report belongs to an aircraft; "
                             f"call make_id(airline, icao24, seq)")
        return airline
    if not isinstance(icao24, str) or not _ICAO24_RE.fullmatch(icao24):
        raise ValueError(f"make_id: icao24={icao24!r} must be 6 lower-case hex digits, e.g. 'a36f7e' "
                         f"(use icao24.lower() for an upper-case address)")
    if seq is None:
        return f"{airline}_{icao24}"
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 10 ** SEQ_DIGITS:
        raise ValueError(f"make_id: seq={seq!r} must be an integer from 0 to {10 ** SEQ_DIGITS - 1} "
                         f"(the report's epoch millisecond, message_number(timestamp))")
    return f"{airline}_{icao24}_{seq:0{SEQ_DIGITS}d}"


def parse_id(id: str) -> IdParts:  # noqa: A002 - the issue's name
    """``"DAL_a36f7e_0000000002"`` -> ``IdParts("DAL", "a36f7e", 2)``. The inverse of :func:`make_id`.

    Raises ``ValueError`` naming the expected shape if ``id`` is not an ``aerodata`` key.
    Introduced in notebook 04.
    """
    m = _ID_RE.fullmatch(id) if isinstance(id, str) else None
    if m is None:
        raise ValueError(f"parse_id: {id!r} is not an aerodata _id; expected 'AAA', 'AAA_hhhhhh' or "
                         f"'AAA_hhhhhh_{'n' * SEQ_DIGITS}' (airline, icao24, {SEQ_DIGITS}-digit message "
                         f"number), as make_id builds them")
    seq = m["seq"]
    return IdParts(m["airline"], m["icao24"], int(seq) if seq is not None else None)



# ------------------------------------------------------------------------------------------
# Airlines from the shipped OpenFlights table
# ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _airline_table(folder: str) -> dict[str, dict[str, Any]]:
    from pathlib import Path


    path = verify_file(Path(folder), "openflights_airlines.csv")
    best: dict[str, dict[str, Any]] = {}
    for _, row in read_rows(path, AIRLINE_FIELDS):
        code = row.get("icao", "")
        if not re.fullmatch(r"[A-Z]{3}", code):  # OpenFlights also has 'N/A', '---', ...
            continue
        # a code listed twice (a renamed or defunct airline): the active one, then the lowest id
        rank = (not row["active"], row["airline_id"])
        if code not in best or rank < best[code]["_rank"]:
            best[code] = {"_rank": rank, **row}
    return {code: {k: v for k, v in row.items() if k != "_rank"} for code, row in best.items()}


def airline_table() -> dict[str, dict[str, Any]]:
    """ICAO designator -> OpenFlights row (name, iata, callsign, country, active, airline_id).

    Read once from ``datasets/openflights_airlines.csv`` (checksum verified). Introduced in notebook 04.
    """

    return _airline_table(str(datasets_dir()))


def airline_of_callsign(callsign: str | None) -> str:
    """The airline code of a callsign: its ICAO prefix if that is a known airline, else ``NO_AIRLINE``.

    ``"DAL123"`` -> ``"DAL"``; ``"HBZZA"`` (a registration) or ``"NJE520P"`` (not in OpenFlights)
    -> ``"000"``. Introduced in notebook 04.
    """
    m = _CALLSIGN_RE.match(callsign or "")
    if m and m[1] in airline_table():
        return m[1]
    return NO_AIRLINE


def _airline_doc(code: str) -> dict[str, Any]:
    if code == NO_AIRLINE:
        return {"_id": code, "recordType": AIRLINE, "airline": code,
                "name": "no airline (private or unknown operator)"}
    row = airline_table()[code]
    doc = {"_id": code, "recordType": AIRLINE, "airline": code, "name": row["name"]}
    for key in ("iata", "callsign", "country"):
        if row.get(key) and row[key] not in ("-", "\\N"):
            doc[key] = row[key]
    doc["openflights_id"] = row["airline_id"]
    return doc



def prefix_bounds(prefix: str) -> tuple[str, str]:
    """The index bounds ``[prefix, next)`` of an anchored, case-sensitive prefix regex ``^prefix``.

    ``"DAL_"`` -> ``("DAL_", "DAL`")``: the last character incremented, as the query planner does.
    """
    if not prefix:
        raise ValueError("prefix_bounds: the prefix is empty; an empty prefix has no bounds (it scans all keys)")
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def keys_in_bounds(sorted_keys: Sequence[str], bounds: tuple[str, str]) -> int:
    """How many of ``sorted_keys`` (ascending) fall in ``[low, high)``: the keys an index scan visits."""
    lo, hi = bounds
    return bisect.bisect_left(sorted_keys, hi) - bisect.bisect_left(sorted_keys, lo)



