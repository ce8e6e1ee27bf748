"""Notebook 04's incoming messages: one position report checked and cleaned, its message number, the Stratux feed (notebook 04).

:func:`validate_message` says why a message is refused, or returns it clean (what
:func:`helpers.aerodata.ingest` stores); :func:`to_stratux_json` and :func:`parse_stratux` write and
read a Stratux receiver's traffic messages; :func:`receiver_batch` and :func:`receiver_batches` cut a
receiver's traffic into the batches the bill stores (one refresh of the map each). The lesson imports all of it from :mod:`helpers.aerodata`.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["CALLSIGN_MAX", "Rejected", "IngestResult", "validate_message", "message_number",
           "to_stratux_json", "parse_stratux", "receiver_batch", "receiver_batches", "RECEIVER_BATCH"]

_ICAO24_ANY_CASE = re.compile(r"[0-9a-fA-F]{6}")
_MAX_TS = 4_102_444_800  # 2100-01-01: later timestamps are typos, not reports
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1  # the widest integer BSON stores
CALLSIGN_MAX = 8  # an ADS-B identification message carries 8 characters


# ------------------------------------------------------------------------------------------
# Messages
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rejected:
    """A message :func:`ingest` refused: its position in the batch, why, and the message itself."""

    index: int
    reason: str
    message: Any = field(repr=False, default=None)


@dataclass
class IngestResult:
    """What :func:`ingest` did: reports inserted, duplicates skipped, messages rejected (with reasons)."""

    inserted: int = 0
    duplicates: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    airlines_created: int = 0
    aircraft_created: int = 0

    @property
    def rejected_count(self) -> int:
        return len(self.rejected)

    def counts(self) -> dict[str, int]:
        """The numbers alone (deterministic: the same on every backend)."""
        return {"reports inserted": self.inserted, "duplicates skipped": self.duplicates,
                "messages rejected": self.rejected_count, "airlines created": self.airlines_created,
                "aircraft created": self.aircraft_created}

    def reasons(self) -> dict[str, int]:
        """Rejections per reason (the reason's text before any quoted value), sorted by reason."""
        out: dict[str, int] = {}
        for r in self.rejected:
            key = r.reason.split(":")[0]
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def validate_message(message: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Check one message; return ``(clean message, None)`` or ``(None, reason)``.

    Required: ``icao24`` (6 hex digits, any case: stored lower-case), ``timestamp`` (UTC epoch
    seconds, a number from 0 to 2100-01-01; fractions kept to the nearest millisecond), ``lat`` in
    [-90, 90], ``lon`` in [-180, 180]. Optional: ``callsign`` (text, spaces stripped) and the numbers
    ``altitude``, ``groundspeed``, ``track``, ``vertical_rate``. Introduced in notebook 04.
    """
    if not isinstance(message, Mapping):
        return None, f"not a message: expected a dict, got {type(message).__name__}"
    icao24 = message.get("icao24")
    if icao24 is None or icao24 == "":
        return None, "no icao24: every report needs the aircraft's 24-bit address"
    if not isinstance(icao24, str) or not _ICAO24_ANY_CASE.fullmatch(icao24.strip()):
        return None, f"bad icao24: {icao24!r} is not a 6-digit hex address"
    ts = message.get("timestamp")
    if ts is None:
        return None, "no timestamp: expected UTC epoch seconds"
    t = _number(ts)
    if t is None or not 0 <= t < _MAX_TS:
        return None, f"bad timestamp: {ts!r} is not UTC epoch seconds between 1970 and 2100"
    lat, lon = message.get("lat"), message.get("lon")
    # the common case first: two finite floats in range (v - v is 0.0 for a finite float, nan else)
    if not (type(lat) is float and type(lon) is float and lat - lat == 0.0 and lon - lon == 0.0
            and -90 <= lat <= 90 and -180 <= lon <= 180):
        for key, lo, hi in (("lat", -90, 90), ("lon", -180, 180)):
            if message.get(key) is None:
                return None, f"no {key}: a position report needs lat and lon"
            v = _number(message[key])
            if v is None or not lo <= v <= hi:
                return None, f"{key} out of range: {message[key]!r} is not a number in [{lo}, {hi}]"
    clean: dict[str, Any] = {"icao24": icao24.strip().lower()}
    callsign = message.get("callsign")
    if callsign is not None:
        if not isinstance(callsign, str):
            return None, f"bad callsign: {callsign!r} is not text"
        callsign = callsign.strip()
        if len(callsign) > CALLSIGN_MAX:  # never echo it: it may be megabytes
            return None, (f"bad callsign: {len(callsign):,} characters; an ADS-B callsign has at most "
                          f"{CALLSIGN_MAX}")
        if not callsign.isascii():
            try:
                callsign.encode("utf-8")
            except UnicodeEncodeError as e:  # a lone surrogate: BSON strings are UTF-8
                return None, f"bad callsign: {callsign!r} is not valid Unicode text ({e.reason})"
        if callsign:
            clean["callsign"] = callsign.upper()
    ms = round(t * 1000)  # kept to the millisecond
    clean["timestamp"] = ms // 1000 if ms % 1000 == 0 else ms / 1000
    clean["lat"], clean["lon"] = lat, lon
    for key in ("altitude", "groundspeed", "track", "vertical_rate"):
        v = message.get(key)
        if v is None:
            continue
        if type(v) is float and v - v == 0.0:  # the common case: a finite float
            clean[key] = v
            continue
        v = _number(v)
        if v is None:
            return None, f"bad {key}: {message[key]!r} is not a finite number"
        if isinstance(v, int) and not _INT64_MIN <= v <= _INT64_MAX:
            return None, f"bad {key}: {v!r} is wider than a 64-bit integer, the widest BSON stores"
        clean[key] = v
    return clean, None


def message_number(timestamp: float) -> int:
    """A report's message number in its ``_id``: the timestamp in epoch milliseconds (notebook 04).

    Idempotent (a re-sent message gets the same number) and distinct for two reports of one aircraft
    in the same second; ``1533099600`` -> ``1533099600000``, ``1533099600.5`` -> ``1533099600500``.
    """
    return round(timestamp * 1000)


# ------------------------------------------------------------------------------------------
# A simulated Stratux receiver feed
# ------------------------------------------------------------------------------------------
def to_stratux_json(message: Mapping[str, Any]) -> str:
    """One report as the JSON traffic message a Stratux receiver sends (a subset of its fields).

    Stratux names: ``Icao_addr`` (the 24-bit address as an integer), ``Tail`` (callsign), ``Lat``,
    ``Lng``, ``Alt`` (ft, integer), ``Speed`` (kt, integer), ``Track``, ``Vvel`` (ft/min, integer),
    ``Timestamp`` (RFC 3339, UTC). Used to replay the real sample as a feed in notebook 04.
    """
    ts = _dt.datetime.fromtimestamp(message["timestamp"], _dt.timezone.utc)

    def rounded(key: str) -> int | None:
        v = message.get(key)
        return None if v is None else int(round(v))

    return json.dumps({
        "Icao_addr": int(message["icao24"], 16), "Tail": message.get("callsign") or "",
        "Position_valid": message.get("lat") is not None and message.get("lon") is not None,
        "Lat": message.get("lat"), "Lng": message.get("lon"), "Alt": rounded("altitude"),
        "Speed": rounded("groundspeed"), "Speed_valid": message.get("groundspeed") is not None,
        "Track": message.get("track"), "Vvel": rounded("vertical_rate"),
        "Timestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }, separators=(",", ":"))


def parse_stratux(text: str | bytes) -> dict[str, Any]:
    """A Stratux traffic JSON message -> the message shape :func:`ingest` takes.

    Never raises for bad content: fields it cannot read become None (or are left out), so
    :func:`ingest` rejects the message with a reason; only text that is not a JSON object raises
    ``ValueError``. Introduced in notebook 04.
    """
    try:
        raw = json.loads(text)
    except ValueError as e:
        raise ValueError(f"parse_stratux: not JSON ({e}); expected one Stratux traffic object per message") \
            from None
    if not isinstance(raw, dict):
        raise ValueError(f"parse_stratux: expected a JSON object, got {type(raw).__name__}")
    addr = raw.get("Icao_addr")
    icao24 = f"{addr:06x}" if isinstance(addr, int) and not isinstance(addr, bool) and 0 <= addr < 1 << 24 \
        else None
    ts: float | None = None
    stamp = raw.get("Timestamp")
    if isinstance(stamp, str):
        m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", stamp.strip())
        if m:
            try:
                when = _dt.datetime.fromisoformat(m[1] + ("+00:00" if m[3] == "Z" else m[3]))
                ms = int((m[2] or "0")[:3].ljust(3, "0"))  # kept to the millisecond
                ts = int(when.timestamp()) + ms / 1000 if ms else int(when.timestamp())
            except ValueError:
                ts = None
    valid = raw.get("Position_valid", True) is not False
    message: dict[str, Any] = {"icao24": icao24, "callsign": (raw.get("Tail") or "").strip() or None,
                               "timestamp": ts,
                               "lat": raw.get("Lat") if valid else None,
                               "lon": raw.get("Lng") if valid else None}
    for src, key in (("Alt", "altitude"), ("Speed", "groundspeed"), ("Track", "track"),
                     ("Vvel", "vertical_rate")):
        if raw.get(src) is not None and (key != "groundspeed" or raw.get("Speed_valid", True) is not False):
            message[key] = raw[src]
    return message


# ------------------------------------------------------------------------------------------
# A receiver's traffic, batched as the bill stores it
# ------------------------------------------------------------------------------------------
def receiver_batch(per_second: float, refresh_s: int, reports_per_second: int = 1) -> tuple[int, int]:
    """One refresh of a receiver's traffic, as the bill batches it: ``(aircraft, messages)``, the
    aircraft heard at once (``per_second`` reports a second, ``reports_per_second`` each) and the
    ``refresh_s`` seconds of reports they send (what :func:`receiver_batches` takes of each). Notebook 04 (4.12)."""
    aircraft = round(per_second / reports_per_second)
    return aircraft, aircraft * refresh_s * reports_per_second


#: the default batch stored: the workload's 2.5 M reports a day over the map's 10 s freshness (29 aircraft, 290 messages)
RECEIVER_BATCH = receiver_batch(2_500_000 / 86_400, 10)[1]


def receiver_batches(messages: Sequence[Mapping[str, Any]], *, aircraft: int, reports: int,
                     count: int = 3) -> list[list[dict[str, Any]]]:
    """``count`` batches of a receiver's traffic at the workload's rate: each ``reports`` consecutive
    reports of each of ``aircraft`` aircraft (those of ``messages`` with the most reports, ties by
    address), the next ones in the next batch, each batch in arrival order. ``messages``: validated or
    raw position messages of the whole receiver. Notebook 04 (4.12)."""
    docs = [clean for clean, _ in map(validate_message, messages) if clean is not None]
    tracks: dict[str, list[dict[str, Any]]] = {}
    for d in sorted(docs, key=lambda d: (d["timestamp"], d["icao24"])):
        tracks.setdefault(d["icao24"], []).append(d)
    chosen = sorted((t for t in tracks.values() if len(t) >= reports * count), key=lambda t: (-len(t), t[0]["icao24"]))
    if len(chosen) < aircraft:
        raise ValueError(f"receiver_batches: only {len(chosen)} aircraft have {reports * count} reports; "
                         f"{aircraft} were asked for")
    return [sorted((m for t in chosen[:aircraft] for m in t[b * reports:(b + 1) * reports]),
                   key=lambda d: (d["timestamp"], d["icao24"])) for b in range(count)]
