"""The shipped datasets and ``helpers.datasets.load_dataset`` on every backend.

Checks: the checksums of the shipped files; every dataset at small scale (counts, a few exact
documents, a reload gives the same collection); and that bad input (a malformed row, a truncated
gzip, a missing column, a wrong checksum, a missing file) raises one ``DatasetError`` naming the
file, line and field, and leaves a pre-existing target collection exactly as it was.
"""
from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import re
import shutil
from pathlib import Path

import pytest

from helpers.datasets import (
    CARRIER_FIELDS,
    DATASETS_DIR,
    DatasetError,
    LoadResult,
    dataset_names,
    load_dataset,
    read_rows,
)
from helpers.safety import ForeignCollectionError

SHIPPED = {
    # file: rows (CSV data lines, or JSON list items)
    "adsb_switzerland.csv.gz": 139_098,
    "openflights_airlines.csv": 6_162,
    "nyc_carriers.csv": 16,
    "nyc_planes.csv": 3_322,
    "nyc_flights_2013_01.csv.gz": 27_004,
    "nyc_plane_carriers_2013.csv": 4_060,
    "flare.json": 252,
    "airports.csv.gz": 28_298,
}

SMALL_COUNTS = {
    "adsb_reports": {"adsb_reports": 16_915},
    "airlines": {"airlines": 6_162},
    "airports": {"airports": 9_316},
    "authors_books": {"authors": 30, "books": 3_544},
    "categories": {"categories": 2_667},
    "flare": {"flare": 252},
    "nyc_carriers": {"nyc_carriers": 16},
    "nyc_flights": {"nyc_flights": 8_518},
    "nyc_planes": {"nyc_planes": 3_322},
    "nyc_plane_carriers": {"nyc_plane_carriers": 4_060},
    "posts": {"posts": 1_000},
    "products": {"products": 1_000},
}

EXACT = {
    "adsb_reports": {
        "_id": "00b0ed:1533105070", "timestamp": dt.datetime(2018, 8, 1, 6, 31, 10),
        "icao24": "00b0ed", "callsign": "SAA260", "lat": 45.8191680908, "lon": 9.0134113591,
        "altitude": 40000.0, "groundspeed": 477.8803254042, "track": 3.4791088928,
        "vertical_rate": 0.0,
    },
    "airlines": {"_id": 2009, "name": "Delta Air Lines", "iata": "DL", "icao": "DAL",
                 "callsign": "DELTA", "country": "United States", "active": True},
    "nyc_carriers": {"_id": "DL", "name": "Delta Air Lines Inc.", "icao": "DAL"},
    "nyc_planes": {"_id": "N320NB", "icao24": "a36f7e", "year": 2000, "type": "Fixed wing multi engine",
                   "manufacturer": "AIRBUS INDUSTRIE", "model": "A319-114", "engines": 2,
                   "seats": 145, "engine": "Turbo-fan"},  # speed is empty in the source: absent,
    "nyc_flights": {"_id": "2013-01-01 9E3320 JFK", "year": 2013, "month": 1, "day": 1,
                    "dep_time": 2015, "arr_time": 2149, "carrier": "9E", "flight": 3320,
                    "tailnum": "N931XJ", "origin": "JFK", "dest": "BUF", "air_time": 62,
                    "distance": 301},
    "nyc_plane_carriers": {"_id": "N320NB DL", "tailnum": "N320NB", "carrier": "DL", "flights": 272,
                           "first_month": 1, "last_month": 12},
    "flare": {"_id": 4, "name": "AgglomerativeCluster", "parent": 3, "size": 3938},
    "airports": {"_id": "AAXX", "name": "Rothera Point Airport", "city": "Rothera Point",
                 "country": "AQ", "lat": -67.56694, "lon": -68.12699},
    "categories": {"_id": 3, "parent_id": 2, "name": "Smartphones",
                   "path": "/Electronics/Phones/Smartphones"},
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _docs(coll) -> list[dict]:
    return list(coll.find({}).sort("_id", 1))


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("CI", "1")  # no progress bars in test output
    monkeypatch.delenv("WORKBOOK_DATASETS", raising=False)
    monkeypatch.delenv("WORKBOOK_SCALE", raising=False)


# ------------------------------------------------------------------------------------------------
# the shipped files
# ------------------------------------------------------------------------------------------------
def test_checksums_of_shipped_files() -> None:
    listed = {}
    for line in (DATASETS_DIR / "checksums.sha256").read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    assert set(listed) == set(SHIPPED)
    for name, digest in listed.items():
        assert _sha256(DATASETS_DIR / name) == digest, f"{name} changed: restore it or rerun provenance.py"
    data_files = {p.name for p in DATASETS_DIR.iterdir()
                  if p.is_file() and p.suffix not in (".py", ".md", ".sha256")}
    assert data_files == set(SHIPPED), "every shipped data file needs a checksum and a README entry"


def test_shipped_row_counts_and_gzip_is_deterministic() -> None:
    for name, rows in SHIPPED.items():
        path = DATASETS_DIR / name
        raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
        if name.endswith(".json"):
            assert raw.count(b'"id"') == rows
        else:
            assert raw.count(b"\n") - 1 == rows, name
        if name.endswith(".gz"):
            assert path.read_bytes()[4:8] == b"\0\0\0\0", f"{name}: gzip mtime must be 0"
    header = gzip.open(DATASETS_DIR / "adsb_switzerland.csv.gz", "rt").readline().strip()
    assert header == "timestamp,icao24,callsign,lat,lon,altitude,groundspeed,track,vertical_rate"


def test_readme_lists_every_file_and_checksum() -> None:
    readme = (DATASETS_DIR / "README.md").read_text(encoding="utf-8")
    for name in SHIPPED:
        assert name in readme and _sha256(DATASETS_DIR / name) in readme, name
    for required in ("OpenSky", "ODbL", "CC0", "BSD-3", "MIT"):
        assert required in readme


def test_n_number_conversion_of_the_provenance_script() -> None:
    import csv
    import importlib.util

    spec = importlib.util.spec_from_file_location("provenance", DATASETS_DIR / "provenance.py")
    provenance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provenance)
    convert = provenance.n_number_to_icao24
    assert convert("N320NB") == "a36f7e"  # Delta's A319 of the single-collection article
    assert (convert("N1"), convert("N99999"), convert("N1A"), convert("N1AZ")) == (
        "a00001", "adf7c7", "a00002", "a0001a")
    with open(DATASETS_DIR / "nyc_planes.csv", newline="", encoding="utf-8") as fh:
        planes = list(csv.DictReader(fh))
    assert all(convert(p["tailnum"]) == p["icao24"] for p in planes)
    with pytest.raises(ValueError):
        convert("G-EUPT")


# ------------------------------------------------------------------------------------------------
# loading every dataset
# ------------------------------------------------------------------------------------------------
def test_dataset_names() -> None:
    assert dataset_names() == sorted(SMALL_COUNTS)


@pytest.mark.parametrize("name", sorted(SMALL_COUNTS))
def test_load_small(db, name: str) -> None:
    result = load_dataset(name, db)
    assert isinstance(result, LoadResult)
    assert result.counts == SMALL_COUNTS[name]
    for coll, count in SMALL_COUNTS[name].items():
        assert db[coll].count_documents({}) == count
    if name in EXACT:
        coll = next(iter(SMALL_COUNTS[name]))
        assert db[coll].find_one({"_id": EXACT[name]["_id"]}) == EXACT[name]
    assert not [c for c in db.list_collection_names() if "__staging" in c]


def test_the_mock_trusts_only_a_data_files_typed_documents(monkeypatch) -> None:
    """On the mock, a data file's documents (BSON a moment ago) go through insert_trusted, whose
    documents are the same as insert_many's (tests/test_engines_mock.py); generated ones do not."""
    from engines import mock
    from helpers.backends import connect

    trusted: list[int] = []
    insert_trusted = mock.insert_trusted

    def spy(collection, docs):
        trusted.append(len(docs))
        return insert_trusted(collection, docs)

    monkeypatch.setattr(mock, "insert_trusted", spy)
    conn = connect("mock", db_name="wbtest_trusted", probe=False)
    try:
        assert load_dataset("nyc_planes", conn.db).counts == SMALL_COUNTS["nyc_planes"]
        assert sum(trusted) == sum(SMALL_COUNTS["nyc_planes"].values())
        trusted.clear()
        assert load_dataset("posts", conn.db).counts == SMALL_COUNTS["posts"] and not trusted
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["nyc_planes", "authors_books", "posts"])
def test_reload_gives_the_same_collection(db, name: str) -> None:
    load_dataset(name, db)
    before = {coll: _docs(db[coll]) for coll in SMALL_COUNTS[name]}
    again = load_dataset(name, db)
    assert again.counts == SMALL_COUNTS[name]
    assert {coll: _docs(db[coll]) for coll in SMALL_COUNTS[name]} == before


def test_integer_scale_env_scale_and_collection_name(db, monkeypatch) -> None:
    result = load_dataset("adsb_reports", db, scale=2, collection="two_aircraft")
    assert len(db.two_aircraft.distinct("icao24")) == 2 and result.counts["two_aircraft"] > 0
    monkeypatch.setenv("WORKBOOK_SCALE", "3")
    assert load_dataset("posts", db).counts == {"posts": 3}
    assert load_dataset("authors_books", db, collection="m2m").counts["m2m_authors"] == 3
    with pytest.raises(DatasetError, match="scale"):
        load_dataset("posts", db, scale="huge")
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("no_such_thing", db)


def test_foreign_collection_is_refused(db) -> None:
    db.airlines.insert_one({"_id": "theirs"})
    with pytest.raises(ForeignCollectionError):
        load_dataset("airlines", db)
    assert _docs(db.airlines) == [{"_id": "theirs"}]


# ------------------------------------------------------------------------------------------------
# bad input never half-loads
# ------------------------------------------------------------------------------------------------
def _copy(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "datasets"
    folder.mkdir()
    for name in [*SHIPPED, "checksums.sha256"]:
        shutil.copyfile(DATASETS_DIR / name, folder / name)
    monkeypatch.setenv("WORKBOOK_DATASETS", str(folder))
    return folder


def _relist(folder: Path, name: str) -> None:
    """Update checksums.sha256 for a corrupted file, so the parser (not the checksum) meets it."""
    sums = folder / "checksums.sha256"
    lines = [f"{_sha256(folder / name)}  {name}" if line.endswith(f"  {name}") else line
             for line in sums.read_text(encoding="utf-8").splitlines()]
    sums.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _corrupt_row(folder: Path) -> tuple[str, str, list[str]]:
    path = folder / "nyc_planes.csv"
    lines = path.read_text(encoding="utf-8").split("\n")
    fields = lines[2499].split(",")  # line 2500: after the first batch of 2,000 went to staging
    fields[7] = "many"  # seats
    lines[2499] = ",".join(fields)
    path.write_text("\n".join(lines), encoding="utf-8")
    _relist(folder, "nyc_planes.csv")
    return "nyc_planes", "nyc_planes.csv", ["line 2500", "'seats'", "many"]


def _truncate_gzip(folder: Path) -> tuple[str, str, list[str]]:
    path = folder / "nyc_flights_2013_01.csv.gz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _relist(folder, path.name)
    return "nyc_flights", path.name, ["line", "truncated"]


def _missing_column(folder: Path) -> tuple[str, str, list[str]]:
    path = folder / "nyc_carriers.csv"
    rows = [line.rsplit(",", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    _relist(folder, path.name)
    return "nyc_carriers", path.name, ["line 1", "missing column 'icao'"]


def _wrong_checksum(folder: Path) -> tuple[str, str, list[str]]:
    path = folder / "openflights_airlines.csv"
    path.write_bytes(path.read_bytes() + b"99999,Extra,,,,,,Y\n")
    return "airlines", path.name, ["checksum mismatch", "provenance.py"]


def _missing_file(folder: Path) -> tuple[str, str, list[str]]:
    (folder / "flare.json").unlink()
    return "flare", "flare.json", ["missing"]


@pytest.mark.parametrize("corrupt", [_corrupt_row, _truncate_gzip, _missing_column, _wrong_checksum,
                                     _missing_file])
def test_bad_input_raises_and_keeps_the_target(db, tmp_path, monkeypatch, corrupt) -> None:
    folder = _copy(tmp_path, monkeypatch)
    dataset, file, expected = corrupt(folder)
    target = next(iter(SMALL_COUNTS[dataset]))
    # a pre-existing target, loaded by the workbook from good files, at a different scale
    monkeypatch.delenv("WORKBOOK_DATASETS")
    load_dataset(dataset, db, scale=3)
    before = _docs(db[target])
    monkeypatch.setenv("WORKBOOK_DATASETS", str(folder))
    with pytest.raises(DatasetError) as info:
        load_dataset(dataset, db)
    message = str(info.value)
    assert file in message
    for part in expected:
        assert part in message, message
    assert _docs(db[target]) == before
    assert not [c for c in db.list_collection_names() if "__staging" in c]


def test_seventeen_planes_flew_for_two_carriers_in_2013(db) -> None:
    load_dataset("nyc_plane_carriers", db)
    two = list(db["nyc_plane_carriers"].aggregate([
        {"$group": {"_id": "$tailnum", "carriers": {"$addToSet": "$carrier"}}},
        {"$match": {"carriers.1": {"$exists": True}}}, {"$sort": {"_id": 1}}]))
    assert len(two) == 17


def test_read_table_is_the_checked_reader_as_a_dataframe(tmp_path, monkeypatch) -> None:
    from helpers.datasets import read_table

    planes = read_table("nyc_planes.csv", ["tailnum", "icao24", "model"])
    assert list(planes.columns) == ["tailnum", "icao24", "model"]
    assert planes.set_index("tailnum").loc["N320NB"].to_dict() == {"icao24": "a36f7e", "model": "A319-114"}
    reports = read_table("adsb_switzerland.csv.gz", ["icao24", "callsign"], missing="")
    assert len(reports) == SHIPPED["adsb_switzerland.csv.gz"]
    assert not reports["callsign"].isna().any()  # an empty cell would be "" (missing=""), never NaN
    with pytest.raises(DatasetError, match="not a CSV file the workbook ships"):
        read_table("flare.json")
    with pytest.raises(DatasetError, match="no column 'wingspan'"):
        read_table("nyc_planes.csv", ["wingspan"])
    # a bad file: the same clear error as load_dataset's (file, line, field), only for the columns read
    folder = _copy(tmp_path, monkeypatch)
    _corrupt_row(folder)
    assert len(read_table("nyc_planes.csv", ["tailnum", "model"])) == len(planes)  # seats not read
    with pytest.raises(DatasetError, match=r"nyc_planes.csv: line 2500: field 'seats' = 'many'"):
        read_table("nyc_planes.csv", ["tailnum", "seats"])


# ------------------------------------------------------------------------------------------------
# the loader's errors name the right file and line, and odd input is a sentence
# ------------------------------------------------------------------------------------------------

_GOOD = "carrier,name,icao\n" + "".join(f"C{i},Name {i},I{i:02d}\n" for i in range(1, 30))  # C9 on line 10


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("data, says", [
    (_GOOD.encode().replace(b"C9,Name 9", b"C9,Name \xff9"), "line 10: field 'name' is not valid UTF-8"),
    (_GOOD.encode().replace(b"C9,Name 9", b"C9,Name " + b"x" * 200_000), "line 10:"),
    (_GOOD.encode().replace(b"C9,Name 9,I09\n", b"\n"), "line 10: an empty line"),
    (_GOOD.encode().replace(b"C3,Name 3", b'C3,"Name\n3"').replace(b"C9,Name 9,I09", b"C9,Name 9"), "line 11:"),
    (_GOOD.encode().replace(b"C9,Name 9", b"C4,Name 9"), "lines 5 and 10: the same _id 'C4'"),
])
def test_errors_name_the_exact_line(tmp_path, monkeypatch, data, says, gz):
    folder = _copy(tmp_path, monkeypatch)
    path = folder / "nyc_carriers.csv"
    path.write_bytes(data)
    if gz:  # the same check on a compressed file (read through the same reader)
        if "same _id" in says:
            return  # a whole-file property, checked on the plain file below
        with pytest.raises(DatasetError, match=re.escape(says)):
            list(read_rows(_gz(path), CARRIER_FIELDS))
    _relist(folder, "nyc_carriers.csv")
    with pytest.raises(DatasetError, match=re.escape(says)) as info:
        if "same _id" in says:
            from helpers.datasets import SPECS
            list(SPECS["nyc_carriers"].source(folder, None))
        else:
            list(read_rows(path, CARRIER_FIELDS))
    assert "nyc_carriers.csv" in str(info.value)


def _gz(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def test_a_duplicate_id_in_a_data_file_names_both_lines_and_loads_nothing(db, tmp_path, monkeypatch):
    folder = _copy(tmp_path, monkeypatch)
    path = folder / "nyc_carriers.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines.append(lines[3])  # the row of line 4 again, as the last line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _relist(folder, "nyc_carriers.csv")
    with pytest.raises(DatasetError, match=rf"nyc_carriers.csv: lines 4 and {len(lines)}: the same _id"):
        load_dataset("nyc_carriers", db)
    assert "nyc_carriers" not in db.list_collection_names()


@pytest.mark.parametrize("edit, says", [
    (lambda nodes: nodes[3].update(id=True), "line 16: node 4: field 'id' = True is not an integer"),
    (lambda nodes: nodes[3].update(parent=False), "line 16: node 4: field 'parent' = False is not an integer"),
    (lambda nodes: nodes[3].update(id=2), "lines 6 and 16: node 4 has the same id 2 as node 2"),
])
def test_flare_errors_name_the_line_and_refuse_booleans(db, tmp_path, monkeypatch, edit, says):
    import json

    folder = _copy(tmp_path, monkeypatch)
    path = folder / "flare.json"
    nodes = json.loads(path.read_text(encoding="utf-8"))
    edit(nodes)
    path.write_text(json.dumps(nodes, indent=2) + "\n", encoding="utf-8")
    _relist(folder, "flare.json")
    with pytest.raises(DatasetError, match=re.escape(says)):
        load_dataset("flare", db)
    assert "flare" not in db.list_collection_names()


def test_flare_duplicate_key_in_one_node_is_named(db, tmp_path, monkeypatch):
    folder = _copy(tmp_path, monkeypatch)
    path = folder / "flare.json"
    text = path.read_text(encoding="utf-8").replace('"id": 4,', '"id": 4,\n    "id": 40,', 1)
    path.write_text(text, encoding="utf-8")
    _relist(folder, "flare.json")
    with pytest.raises(DatasetError, match=r"flare.json: line \d+: node 4: the key 'id' appears twice"):
        load_dataset("flare", db)


@pytest.mark.parametrize("value", ["²", "١٠", "1e3", "-5", "10" * 10, str(10**9)])
def test_workbook_scale_is_checked_before_anything_is_generated(monkeypatch, value):
    from helpers.datasets import default_scale

    monkeypatch.setenv("WORKBOOK_SCALE", value)
    with pytest.raises(DatasetError, match="WORKBOOK_SCALE"):
        default_scale()


def test_a_scale_beyond_a_generated_dataset_is_refused(db):
    with pytest.raises(DatasetError, match="posts.*at most"):
        load_dataset("posts", db, scale=10**9)
    assert "posts" not in db.list_collection_names()
