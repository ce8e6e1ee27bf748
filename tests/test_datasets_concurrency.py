"""Concurrent loads, and failures mid-load (helpers.datasets.load_dataset and staged_load).

Issue 14 item 4: two loads of the same dataset into one database shared one staging collection;
one reported a full load while the target held a partial one. Now loads of one collection take
turns (a lock document in the registry), each stages into a collection of its own, and both end
with the complete collection. Run on the server backends (the mock is not thread-safe).
"""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from helpers import datasets as ds
from helpers.datasets import DatasetError, load_dataset
from helpers.safety import REGISTRY

DATASET, TARGET, COUNT = "nyc_flights", "nyc_flights", 8_518  # the small scale: a few batches


def _ids(coll) -> list:
    return sorted(d["_id"] for d in coll.find({}, {"_id": 1}))


def _uri(db) -> str:
    host, port = db.client.address
    return f"mongodb://{host}:{port}/"


def _leftovers(db) -> tuple[list, list]:
    staging = [c for c in db.list_collection_names() if "__staging" in c]
    locks = list(db[REGISTRY].find({"_id": {"$regex": r"^\$loading:"}}))
    return staging, locks


def _check_complete(db, results: list) -> None:
    expected = sorted(d["_id"] for d in ds.SPECS[DATASET].source(ds.datasets_dir(), ds.SPECS[DATASET].small))
    assert len(expected) == COUNT
    assert all(r == {TARGET: COUNT} for r in results), results  # both loads report the full load ...
    assert _ids(db[TARGET]) == expected  # ... and the target holds it, once
    assert _leftovers(db) == ([], [])


def test_two_threads_loading_one_dataset_both_get_the_complete_collection(server_db):
    import pymongo

    uri, name = _uri(server_db), server_db.name
    results: list = [None, None]
    barrier = threading.Barrier(2)

    def load(i: int) -> None:
        client = pymongo.MongoClient(uri)  # one client per "kernel"
        try:
            barrier.wait()
            results[i] = load_dataset(DATASET, client[name]).counts
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            results[i] = e
        finally:
            client.close()

    threads = [threading.Thread(target=load, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    _check_complete(server_db, results)


_CHILD = """
import sys, pymongo
from helpers.datasets import load_dataset
db = pymongo.MongoClient(sys.argv[1])[sys.argv[2]]
print(load_dataset(sys.argv[3], db).counts[sys.argv[3]])
"""


def test_two_processes_loading_one_dataset_both_get_the_complete_collection(server_db):
    args = [sys.executable, "-c", _CHILD, _uri(server_db), server_db.name, DATASET]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    _check_complete(server_db, [{TARGET: int(out.strip())} for out, _ in outs])


def test_a_load_waits_then_refuses_clearly_while_another_holds_the_collection(db, monkeypatch):
    load_dataset("nyc_carriers", db)
    before = _ids(db.nyc_carriers)
    import datetime as dt
    far = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(hours=1)
    db[REGISTRY].insert_one({"_id": "$loading:nyc_carriers", "owner": "another kernel", "expires": far})
    monkeypatch.setattr(ds.lease, "LOCK_WAIT_S", 0.3)
    with pytest.raises(DatasetError, match="another load is writing 'nyc_carriers'.*nothing was changed"):
        load_dataset("nyc_carriers", db)
    assert _ids(db.nyc_carriers) == before
    assert db[REGISTRY].find_one({"_id": "$loading:nyc_carriers"})["owner"] == "another kernel"


def test_the_lock_of_a_crashed_load_expires(db):
    import datetime as dt
    past = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=1)
    db[REGISTRY].insert_one({"_id": "$loading:nyc_carriers", "owner": "a crashed kernel", "expires": past})
    assert load_dataset("nyc_carriers", db).counts == {"nyc_carriers": 16}
    assert _leftovers(db) == ([], [])


def test_a_server_error_mid_load_leaves_no_half_loaded_collection(db, monkeypatch):
    """The input passed every check, and the server refuses a write after the first batch."""
    load_dataset("nyc_carriers", db, collection="tiny")
    db.tiny.delete_many({"_id": {"$in": _ids(db.tiny)[4:]}})  # 12 of 16 to write again (a reload by difference too)
    before = _ids(db.tiny)
    monkeypatch.setattr(ds.common, "BATCH_SIZE", 5)
    calls = {"n": 0}
    real = type(db.tiny).insert_many

    def failing(self, docs, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("the server went away")
        return real(self, docs, *args, **kwargs)

    monkeypatch.setattr(type(db.tiny), "insert_many", failing)
    with pytest.raises(RuntimeError, match="went away"):
        load_dataset("nyc_carriers", db, collection="tiny")
    monkeypatch.undo()
    assert calls["n"] == 3
    # staged (mock, MongoDB): the target as it was; written in place (SecantusDB): dropped, never partial
    assert _ids(db.tiny) == ([] if ds.rename_copies(db) else before)
    assert _leftovers(db) == ([], [])


def test_a_repeated_id_in_a_file_is_refused_before_any_write(db, monkeypatch):
    load_dataset("nyc_carriers", db)
    before = _ids(db.nyc_carriers)
    real = ds.SPECS["nyc_carriers"].source

    def repeated(folder, n):
        docs = list(real(folder, n))
        return [*docs, dict(docs[3])]

    repeated.file = real.file  # type: ignore[attr-defined]
    monkeypatch.setitem(ds.SPECS, "nyc_carriers", ds.catalogue.Spec(("nyc_carriers",), None, None, "carriers", repeated))
    with pytest.raises(DatasetError, match="records 4 and 17 .* same _id"):
        load_dataset("nyc_carriers", db)
    assert _ids(db.nyc_carriers) == before


def test_an_integer_wider_than_64_bits_in_a_file_is_refused_before_any_write(db, tmp_path, monkeypatch):
    import shutil

    from helpers.datasets import DATASETS_DIR, sha256

    folder = tmp_path / "datasets"
    folder.mkdir()
    for name in ("nyc_planes.csv", "checksums.sha256"):
        shutil.copyfile(DATASETS_DIR / name, folder / name)
    path = folder / "nyc_planes.csv"
    lines = path.read_text(encoding="utf-8").split("\n")
    fields = lines[9].split(",")
    fields[7] = str(2 ** 64)  # seats: an integer, wider than BSON's int64
    lines[9] = ",".join(fields)
    path.write_text("\n".join(lines), encoding="utf-8")
    sums = folder / "checksums.sha256"
    sums.write_text("\n".join(f"{sha256(path)}  nyc_planes.csv" if line.endswith("  nyc_planes.csv") else line
                              for line in sums.read_text(encoding="utf-8").splitlines()) + "\n", encoding="utf-8")
    load_dataset("nyc_planes", db, scale=3)
    before = _ids(db.nyc_planes)
    monkeypatch.setenv("WORKBOOK_DATASETS", str(folder))
    with pytest.raises(DatasetError, match=r"nyc_planes.csv: line 10: field 'seats' = 18446744073709551616 is wider"):
        load_dataset("nyc_planes", db)
    assert _ids(db.nyc_planes) == before
    assert _leftovers(db) == ([], [])


def test_staging_only_where_a_rename_is_free(backend):
    """SecantusDB's renameCollection copies the documents: loads there write the target directly."""
    db = backend.client[backend.db.name] if backend.info.engine != "mongomock-ng" else backend.db
    assert ds.rename_copies(db) is (backend.info.engine == "SecantusDB")
    assert ds.rename_copies(db) is ds.rename_copies(db)  # asked once per client
