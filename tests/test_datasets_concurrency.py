"""Concurrent loads, and failures mid-load (helpers.datasets.load_dataset and staged_load).

Two loads of the same dataset into one database shared one staging collection;
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


# --- a reset in another kernel while a load writes: the load is left alone and ends complete

def _pause_after_first_batch(monkeypatch, coll_type, during):
    real = coll_type.insert_many
    calls = []

    def insert_many(self, docs, *args, **kwargs):
        out = real(self, docs, *args, **kwargs)
        if not calls:
            calls.append(self.name)
            during(self)
        return out

    monkeypatch.setattr(coll_type, "insert_many", insert_many)
    return calls


def test_a_reset_during_a_load_leaves_it_alone_and_the_load_completes(db, monkeypatch):
    """The staged path (the mock, a real MongoDB) and the in-place one (SecantusDB): another kernel's
    reset after the first batch drops neither the target nor the staging copy, nor the lease."""
    from helpers.safety import reset_workbook, workbook_collection

    workbook_collection(db, "leftover").insert_one({"_id": 1})
    monkeypatch.setattr(ds.common, "BATCH_SIZE", 500)
    dropped = []
    calls = _pause_after_first_batch(monkeypatch, type(db["x"]), lambda coll: dropped.extend(reset_workbook(db)))
    result = load_dataset("adsb_reports", db, 3)
    monkeypatch.undo()
    assert calls and dropped == ["leftover"]
    assert db.adsb_reports.count_documents({}) == result.counts["adsb_reports"] > 500
    assert _leftovers(db) == ([], [])
    assert reset_workbook(db) == ["adsb_reports"]  # still the workbook's


def test_a_load_whose_collection_changed_under_it_says_so_and_leaves_nothing_half_loaded(db, monkeypatch):
    """Something outside the workbook's helpers (an older copy's reset, a script) drops the collection
    a load is writing; the next insert re-creates it: the load does not report success, it drops
    what it wrote, and the next load works."""
    from helpers.safety import reset_workbook

    monkeypatch.setattr(ds.common, "BATCH_SIZE", 500)
    _pause_after_first_batch(monkeypatch, type(db["x"]), lambda coll: coll.database.drop_collection(coll.name))
    with pytest.raises(DatasetError, match=r"'adsb_reports' in database .* (was dropped or replaced|holds .* "
                                           r"documents where this load wrote).* run this cell again"):
        load_dataset("adsb_reports", db, 3)
    monkeypatch.undo()
    assert "adsb_reports" not in db.list_collection_names()
    assert _leftovers(db) == ([], [])
    result = load_dataset("adsb_reports", db, 3)
    assert db.adsb_reports.count_documents({}) == result.counts["adsb_reports"]
    assert reset_workbook(db) == ["adsb_reports"]


_LOADER = """
import json, pathlib, sys, time, pymongo
from pymongo.collection import Collection
from helpers import datasets as ds
folder = pathlib.Path(sys.argv[3])
real = Collection.insert_many
def insert_many(self, docs, *a, **k):  # after the first batch: let the other kernel reset, then go on
    out = real(self, docs, *a, **k)
    if not (folder / "loading").exists():
        (folder / "loading").touch()
        deadline = time.monotonic() + 60
        while not (folder / "reset").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return out
Collection.insert_many = insert_many
ds.common.BATCH_SIZE = 500
db = pymongo.MongoClient(sys.argv[1])[sys.argv[2]]
print(json.dumps(ds.load_dataset("adsb_reports", db, 3).counts))
"""
_RESETTER = """
import json, pathlib, sys, time, pymongo
from helpers.safety import reset_workbook
folder = pathlib.Path(sys.argv[3])
deadline = time.monotonic() + 60
while not (folder / "loading").exists() and time.monotonic() < deadline:
    time.sleep(0.01)
db = pymongo.MongoClient(sys.argv[1])[sys.argv[2]]
print(json.dumps(reset_workbook(db)))  # a second notebook's Setup cell, mid-load
(folder / "reset").touch()
"""


def test_a_reset_in_another_process_during_a_load_leaves_the_load_complete(server_db, tmp_path):
    """Two processes: one loads adsb_reports, the other runs reset_workbook once the first batch is
    written (files say when). The load ends complete and verified; the reset dropped only what was
    not being loaded; no staging copy or lease is left; the next load and reset work."""
    import json

    from helpers.safety import reset_workbook, workbook_collection

    workbook_collection(server_db, "leftover").insert_one({"_id": 1})
    args = [_uri(server_db), server_db.name, str(tmp_path)]
    loader = subprocess.Popen([sys.executable, "-c", _LOADER, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    resetter = subprocess.Popen([sys.executable, "-c", _RESETTER, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    (out, err), (rout, rerr) = loader.communicate(timeout=120), resetter.communicate(timeout=120)
    assert (loader.returncode, resetter.returncode) == (0, 0), (err[-2000:], rerr[-2000:])
    assert (tmp_path / "loading").exists() and (tmp_path / "reset").exists()
    counts = json.loads(out.strip().splitlines()[-1])
    assert json.loads(rout.strip().splitlines()[-1]) == ["leftover"]
    expected = len(list(ds.SPECS["adsb_reports"].source(ds.datasets_dir(), 3)))
    assert counts == {"adsb_reports": expected} and server_db.adsb_reports.count_documents({}) == expected > 500
    assert _leftovers(server_db) == ([], [])
    assert load_dataset("adsb_reports", server_db, 3).counts == counts
    assert reset_workbook(server_db) == ["adsb_reports"]


def test_a_load_that_ends_while_a_reset_lists_the_collections_stays_the_workbooks(db, monkeypatch):
    """Another kernel's load runs whole between the reset's listing (the collection did not exist yet)
    and the reset's lease on it: the reset either drops the loaded collection or leaves it recorded,
    never a collection that exists unrecorded (the next load would refuse it as somebody else's)."""
    from helpers import safety

    safety.record(db, "nyc_planes")  # recorded by an earlier load, the collection dropped since
    take, loaded = safety.take_lease, []

    def take_lease(db_, target, owner, seconds):
        if owner.startswith("reset:") and not loaded:
            loaded.append(load_dataset("nyc_planes", db))  # the other kernel, just before the reset's lease
        return take(db_, target, owner, seconds)

    monkeypatch.setattr(safety, "take_lease", take_lease)
    dropped = safety.reset_workbook(db)
    monkeypatch.undo()
    assert loaded
    exists = "nyc_planes" in db.list_collection_names()
    assert exists == (dropped != ["nyc_planes"])
    assert not exists or safety.is_workbook_collection(db, "nyc_planes")
    assert load_dataset("nyc_planes", db).counts == loaded[0].counts  # the next load works
    assert _leftovers(db) == ([], [])


# --- a kernel killed mid-load: whatever it left is marked, and reading it says so

_KILLED = """
import os, signal, sys, pymongo
from pymongo.collection import Collection
from helpers import datasets as ds
target, kill_after = sys.argv[3], int(sys.argv[4])
real, written = Collection.insert_many, []
def insert_many(self, docs, *a, **k):  # SIGKILL this process after N batches, mid-load
    out = real(self, docs, *a, **k)
    written.append(len(docs))
    if len(written) == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)
    return out
Collection.insert_many = insert_many
ds.common.BATCH_SIZE = 500
ds.load_dataset("nyc_flights", pymongo.MongoClient(sys.argv[1])[sys.argv[2]])
"""


def test_a_load_killed_part_way_leaves_a_marked_collection_and_reading_it_says_so(server_db, server_backend,
                                                                                   monkeypatch, tmp_path, capsys):
    """A kernel SIGKILLed after 3 batches of 500: where a load writes its target directly (a rename
    copies: SecantusDB) the target holds those 1,500 documents, marked as a load that did not finish,
    and a check given it says so (and to run the Setup cell again) instead of judging partial data;
    where the load writes a staging copy (a real MongoDB) the target is untouched and nothing is marked.
    The next load (once the dead kernel's lease expired) loads it whole and the mark is gone."""
    import datetime as dt
    from types import SimpleNamespace

    from helpers import backends, safety
    from helpers.exercises import check, evaluate, exercise

    @exercise("98.7", hint="count the flights")
    def _count_flights(answer, *, flights):
        return None if answer == flights.count_documents({}) else "not the count"

    proc = subprocess.run([sys.executable, "-c", _KILLED, _uri(server_db), server_db.name, TARGET, "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]  # killed mid-load, by itself, after 3 batches
    in_place = ds.rename_copies(server_db)
    partial = server_db[TARGET].count_documents({})
    if in_place:  # the half-loaded state is the target itself
        assert partial == 1_500
        assert safety.incomplete(server_db) == {TARGET: "loading"}  # the dead kernel's lease is still live
        (note,) = safety.incomplete_notes(server_db)
        assert TARGET in note and "1,500" in note and "Setup cell again" in note
        status, line = evaluate("98.7", partial, flights=server_db[TARGET])
        assert status == "not checked" and TARGET in line and "Setup cell again" in line, line
        status, line = evaluate("98.7", partial, flights=server_db["elsewhere"], db=server_db)
        assert status == "not checked", line  # the database is given: any of its collections may be read
        monkeypatch.setenv("WORKBOOK_PROGRESS", str(tmp_path / "p.json"))
        check("98.7", partial, flights=server_db[TARGET])  # prints the line, records nothing
        assert "not checked" in capsys.readouterr().out and not (tmp_path / "p.json").exists()
        # the banner the Setup cell's first cell prints (run after a restart: it defines db) says it too
        conn = SimpleNamespace(db=server_db, info=server_backend.info)
        monkeypatch.setattr(backends, "_SHARED", SimpleNamespace(get=lambda: conn))
        assert f"Note: the collection {TARGET!r}" in backends.banner() and "Setup cell again" in backends.banner()
    else:  # the partial documents are in a staging copy only, which nothing reads and a reset drops
        assert partial == 0 and TARGET not in server_db.list_collection_names()
        assert safety.incomplete(server_db) == {}
    # a minute later the dead kernel's lease has expired (made so here, not waited for)
    past = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=1)
    server_db[REGISTRY].update_many({"_id": {"$regex": r"^\$loading:"}}, {"$set": {"expires": past}})
    if in_place:
        assert safety.incomplete(server_db) == {TARGET: "interrupted"}
        assert "did not finish" in safety.incomplete_notes(server_db)[0]
    assert load_dataset(DATASET, server_db).counts == {TARGET: COUNT}
    assert safety.incomplete(server_db) == {} and safety.incomplete_notes(server_db) == []
    assert evaluate("98.7", COUNT, flights=server_db[TARGET])[0] == "correct"
    assert server_db[REGISTRY].find_one({"_id": TARGET, "loading": {"$exists": True}}) is None
