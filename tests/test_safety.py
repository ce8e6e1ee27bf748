"""Safety: reset drops only what the workbook created, in its own database."""
from __future__ import annotations

import pytest

from helpers.safety import (
    ForeignCollectionError,
    drop_workbook_collection,
    is_workbook_collection,
    recorded,
    reset_workbook,
    track_collection,
    workbook_collection,
    workbook_collections,
)


def test_reset_leaves_foreign_collections_and_other_databases_alone(db, backend):
    db["students_notes"].insert_one({"_id": 1, "text": "mine, not the workbook's"})
    other = backend.client[db.name + "_other"]
    try:
        other["keep"].insert_one({"_id": 1})
        workbook_collection(db, "posts").insert_many([{"_id": i} for i in range(3)])
        track_collection(db, "posts_overflow").insert_one({"_id": 1})
        assert workbook_collections(db) == ["posts", "posts_overflow"]
        assert reset_workbook(db) == ["posts", "posts_overflow"]
        names = set(db.list_collection_names())
        assert "students_notes" in names and "posts" not in names and "posts_overflow" not in names
        assert db["students_notes"].count_documents({}) == 1
        assert other["keep"].count_documents({}) == 1
        assert reset_workbook(db) == []  # idempotent
    finally:
        backend.client.drop_database(other.name)


def test_workbook_never_claims_an_existing_foreign_collection(db):
    db["customers"].insert_one({"_id": 1})
    with pytest.raises(ForeignCollectionError, match="WORKBOOK_DB"):
        workbook_collection(db, "customers")
    track_collection(db, "customers").insert_one({"_id": 2})  # lenient: used, but never recorded
    assert not is_workbook_collection(db, "customers")
    reset_workbook(db)
    assert db["customers"].count_documents({}) == 2


def test_registry_name_is_reserved(db):
    with pytest.raises(ValueError):
        workbook_collection(db, "workbook_registry")


# --- a probe never removes or rewrites what it did not create

def test_the_capability_probe_keeps_what_another_kernel_recorded_meanwhile(db, backend, monkeypatch):
    import dataclasses

    from helpers import capabilities

    declared = {c.name: c for c in capabilities.CAPABILITIES}
    real = declared["transactions"].probe

    def another_kernel_loads_meanwhile(p):  # runs inside the probe, after its first look
        workbook_collection(db, "posts").insert_one({"_id": 1})
        return real(p)

    declared["transactions"] = dataclasses.replace(declared["transactions"], probe=another_kernel_loads_meanwhile)
    monkeypatch.setattr(capabilities, "CAPABILITIES", tuple(declared.values()))
    capabilities.probe(db, backend.info.name == "mock")
    assert is_workbook_collection(db, "posts")
    assert workbook_collections(db) == ["posts"]
    assert reset_workbook(db) == ["posts"]  # reset still finds it, so a reload is not refused
    workbook_collection(db, "posts").insert_one({"_id": 2})


def test_reset_keeps_what_another_kernel_records_while_it_runs(db, monkeypatch):
    from helpers import safety

    workbook_collection(db, "a").insert_one({"_id": 1})
    real_drop = db.drop_collection
    calls = []

    def drop_and_let_another_kernel_record(name, *args, **kwargs):
        out = real_drop(name, *args, **kwargs)
        if not calls:
            calls.append(name)
            safety.record(db, "b")  # another kernel: records "b", about to create it
        return out

    monkeypatch.setattr(db, "drop_collection", drop_and_let_another_kernel_record)
    assert reset_workbook(db) == ["a"]
    monkeypatch.undo()
    assert is_workbook_collection(db, "b") and not is_workbook_collection(db, "a")
    db["b"].insert_one({"_id": 1})
    assert workbook_collection(db, "b") is not None  # not refused as foreign


def test_a_registry_entry_that_names_no_collection_is_skipped(db):
    workbook_collection(db, "posts").insert_one({"_id": 1})
    db["workbook_registry"].insert_many([{"_id": 5}, {"_id": None}, {"_id": {"a": 1}}])
    assert workbook_collections(db) == ["posts"]
    assert reset_workbook(db) == ["posts"]
    assert db["workbook_registry"].count_documents({}) == 0


def test_reset_can_keep_the_collections_a_setup_cell_just_loaded(db):
    """A Setup cell loads, then resets everything else: the loaded collections stay, still the
    workbook's (a later reset or load finds them), and every other one is dropped."""
    from helpers.datasets import load_dataset

    workbook_collection(db, "leftover").insert_one({"_id": 1})
    loaded = load_dataset("nyc_carriers", db)
    assert reset_workbook(db, keep=[loaded, "also_kept"]) == ["leftover"]
    assert db["nyc_carriers"].count_documents({}) == 16
    assert workbook_collections(db) == ["nyc_carriers"]
    assert reset_workbook(db) == ["nyc_carriers"]


# --- a reset and another kernel's load take turns: the load's lease covers its target and staging copy

def _lease(db, target, owner, seconds):
    import datetime as dt

    expires = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(seconds=seconds)
    db["workbook_registry"].insert_one({"_id": f"$loading:{target}", "owner": owner, "expires": expires})


def test_a_reset_leaves_another_kernels_live_load_alone(db):
    from helpers.safety import staging_name

    staging = staging_name("adsb_reports")
    for name in ("adsb_reports", staging, "leftover"):
        workbook_collection(db, name).insert_one({"_id": 1})
    _lease(db, "adsb_reports", "another kernel", 60)
    assert reset_workbook(db) == ["leftover"]
    assert {"adsb_reports", staging} <= set(db.list_collection_names())
    assert is_workbook_collection(db, "adsb_reports") and is_workbook_collection(db, staging)
    assert db["workbook_registry"].find_one({"_id": "$loading:adsb_reports"})["owner"] == "another kernel"


def test_a_reset_takes_over_the_lease_of_a_crashed_load(db):
    from helpers.safety import staging_name

    staging = staging_name("adsb_reports")
    for name in ("adsb_reports", staging):
        workbook_collection(db, name).insert_one({"_id": 1})
    _lease(db, "adsb_reports", "a crashed kernel", -1)
    assert reset_workbook(db) == sorted(["adsb_reports", staging])
    assert db["workbook_registry"].count_documents({}) == 0  # no entry, no stale lease


def test_a_connect_creates_no_registry(db, backend):
    from helpers.capabilities import probe

    assert "workbook_registry" not in db.list_collection_names()
    probe(db, backend.info.name == "mock")  # every capability probe a connect runs
    assert "workbook_registry" not in db.list_collection_names()
    assert reset_workbook(db) == [] and "workbook_registry" not in db.list_collection_names()


# --- a name is not enough: a collection dropped outside the helpers and made again is not the workbook's

def _reports_uuids(db) -> bool:
    """Whether the engine reports a collection's UUID (listCollections info.uuid): probed, never named."""
    db["uuid_probe"].insert_one({"_id": 1})
    try:
        return next(iter(db.list_collections(filter={"name": "uuid_probe"})))["info"].get("uuid") is not None
    finally:
        db.drop_collection("uuid_probe")


def _drop_and_make_again_outside(db, name):
    db.drop_collection(name)  # not through the helpers: another program, the shell, the learner's own code
    db[name].insert_one({"_id": "mine", "text": "made again by the learner"})


@pytest.mark.parametrize("made_by", ["workbook_collection", "track_collection", "load_dataset"])
def test_a_collection_dropped_outside_and_made_again_is_left_alone(db, capsys, made_by):
    from helpers.datasets import load_dataset

    name = "nyc_carriers"
    if made_by == "load_dataset":
        load_dataset(name, db)
    else:
        {"workbook_collection": workbook_collection, "track_collection": track_collection}[made_by](
            db, name).insert_one({"_id": 1})
    workbook_collection(db, "leftover").insert_one({"_id": 1})
    _drop_and_make_again_outside(db, name)
    uuids = _reports_uuids(db)
    dropped = reset_workbook(db)
    if not uuids:  # the mock reports none: the name alone decides, as before (docs/ENGINES.md)
        assert dropped == ["leftover", name]
        return
    assert dropped == ["leftover"]
    assert list(db[name].find()) == [{"_id": "mine", "text": "made again by the learner"}]
    said = capsys.readouterr().out
    assert name in said and "left alone" in said
    assert not is_workbook_collection(db, name) and workbook_collections(db) == []
    with pytest.raises(ForeignCollectionError):  # never written (or dropped) by a load
        workbook_collection(db, name)
    with pytest.raises(ForeignCollectionError):
        load_dataset(name, db)
    assert list(db[name].find()) == [{"_id": "mine", "text": "made again by the learner"}]
    assert reset_workbook(db) == [] and db[name].count_documents({}) == 1


def test_a_collection_made_again_outside_before_a_reset_gets_no_validator(db):
    from helpers import schema

    workbook_collection(db, "checked").insert_one({"_id": 1})
    _drop_and_make_again_outside(db, "checked")
    if not _reports_uuids(db):
        pytest.skip("the engine reports no collection UUID: the name alone decides (docs/ENGINES.md)")
    with pytest.raises(ForeignCollectionError):
        schema.set_validator(db, "checked", {"required": ["x"]})


def test_the_workbooks_own_drop_and_create_stays_the_workbooks(db):
    from helpers.safety import fresh_collection

    workbook_collection(db, "checked").insert_one({"_id": 1})
    coll = fresh_collection(db, "checked")
    assert coll.count_documents({}) == 0 and "checked" in db.list_collection_names()
    coll.insert_one({"_id": 2})
    assert is_workbook_collection(db, "checked") and workbook_collections(db) == ["checked"]
    workbook_collection(db, "checked")  # not refused: the workbook made it again, and noted it
    assert reset_workbook(db) == ["checked"]
    db["theirs"].insert_one({"_id": 1})
    with pytest.raises(ForeignCollectionError):  # never somebody else's
        fresh_collection(db, "theirs")
    assert db["theirs"].count_documents({}) == 1


def test_an_entry_recorded_before_uuids_still_works_and_learns_its_uuid(db):
    workbook_collection(db, "old").insert_one({"_id": 1})
    db["workbook_registry"].update_one({"_id": "old"}, {"$unset": {"uuid": ""}})  # as an older workbook wrote it
    assert is_workbook_collection(db, "old") and workbook_collections(db) == ["old"]
    workbook_collection(db, "old")  # seen as the workbook's: its UUID is recorded now
    entry = db["workbook_registry"].find_one({"_id": "old"})
    assert ("uuid" in entry) == _reports_uuids(db)
    assert reset_workbook(db) == ["old"]


def test_the_workbooks_own_drop_removes_its_entry_and_refuses_a_foreign_collection(db):
    workbook_collection(db, "my_products").insert_one({"_id": 1})
    assert "my_products" in recorded(db)
    assert drop_workbook_collection(db, "my_products") is True
    assert "my_products" not in db.list_collection_names() and "my_products" not in recorded(db)
    assert drop_workbook_collection(db, "my_products") is False  # nothing left: nothing to do
    db["students_notes"].insert_one({"_id": 1})
    with pytest.raises(ForeignCollectionError, match="not created by this workbook"):
        drop_workbook_collection(db, "students_notes")
    assert db["students_notes"].count_documents({}) == 1


def test_the_workbooks_own_drop_refuses_its_records_a_lease_and_a_name_that_is_none(db):
    from helpers.safety import PROGRESS, REGISTRY, forget, holds_lease, take_lease
    workbook_collection(db, "products").insert_one({"_id": 1})
    db[PROGRESS].insert_one({"_id": "exercise 1.1"})
    assert take_lease(db, "products", "kernel B", 60)  # another kernel is loading products
    for name in (REGISTRY, PROGRESS, "$loading:products", "", None, "a\0b"):
        with pytest.raises(ValueError):
            drop_workbook_collection(db, name)
    assert holds_lease(db, "products", "kernel B")  # the live lease survives every attempt
    assert db[PROGRESS].count_documents({}) == 1 and "products" in db.list_collection_names()
    forget(db, ["$loading:products"])  # forget never deletes a lease, either
    assert holds_lease(db, "products", "kernel B")


def test_a_checks_copies_are_fresh_names_dropped_on_leaving_and_never_somebody_elses(db):
    from helpers.safety import check_copies

    with check_copies(db, "exercise_x_a", "exercise_x_b") as names:
        assert names[0].startswith("exercise_x_a_") and names[1].startswith("exercise_x_b_")
        assert names[0].rsplit("_", 1)[1] == names[1].rsplit("_", 1)[1]  # one tag for one call
        workbook_collection(db, names[0]).insert_one({"_id": 1})
        workbook_collection(db, names[1]).insert_one({"_id": 1})
    assert not set(names) & set(db.list_collection_names()) and not set(names) & recorded(db)
    with pytest.raises(RuntimeError):
        with check_copies(db, "exercise_x_a") as (name,):
            workbook_collection(db, name).insert_one({"_id": 1})
            raise RuntimeError("the learner's function failed")
    assert name not in db.list_collection_names()  # dropped whatever happened inside
    import uuid as _uuid
    from unittest import mock

    with mock.patch.object(_uuid, "uuid4", return_value=_uuid.UUID(int=0)):
        db["exercise_x_d_00000000"].insert_one({"_id": 1})  # a foreign collection under the next name
        with pytest.raises(ForeignCollectionError):
            with check_copies(db, "exercise_x_d"):
                pass  # pragma: no cover
    assert db["exercise_x_d_00000000"].count_documents({}) == 1


def test_a_copy_a_learners_function_made_again_inside_a_check_is_dropped_on_leaving(db):
    """A learner's function that drops the check's copy and makes it again (unrecorded) leaves
    nothing behind: the random name is only this call's (fails without dropping a copy made under a
    name absent on entering)."""
    from helpers.safety import check_copies

    with check_copies(db, "exercise_x_r") as (name,):
        workbook_collection(db, name).insert_one({"_id": 1})
        db.drop_collection(name)
        db[name].insert_one({"_id": 2})  # made again outside the workbook's helpers: unrecorded
    assert name not in db.list_collection_names() and name not in recorded(db)
