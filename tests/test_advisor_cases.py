"""helpers.advisor.cases: the fixtures are the workbook's own collections, named by their prefix, with a
planted case and a near miss for every code; the capstone shop holds what its docstring says and its
page does its three jobs; bad arguments get clear errors."""
from __future__ import annotations

import pytest

from helpers.advisor import BEYOND_CODES, CODES
from helpers.advisor import cases as advisor_cases


def test_fixtures_are_the_workbooks_own_and_cover_every_code(db, backend):
    from helpers.safety import workbook_collection

    fixtures = advisor_cases.plant_fixtures(db, prefix="cases_", thresholds="workbook")
    assert fixtures.collections == sorted(fixtures.collections)
    assert all(n.startswith("cases_") for n in fixtures.collections)
    assert set(fixtures.collections) <= set(db.list_collection_names())
    for name in fixtures.collections:
        workbook_collection(db, name)  # raises ForeignCollectionError for a collection the workbook did not record
    for cases in (fixtures.planted, fixtures.near_misses):
        assert {k[0] for k in cases} == set(CODES) | set(BEYOND_CODES)
    assert not set(fixtures.planted) & set(fixtures.near_misses)
    assert fixtures.workload.days == advisor_cases.FIXTURE_WORKLOAD_DAYS and len(fixtures.workload) > 0
    # at the edges of the thresholds given
    sizes = {n: len(db[n].find_one({"_id": 1})["tags"]) for n in ("cases_arrays_planted", "cases_arrays_near")}
    assert sizes == {"cases_arrays_planted": 1_001, "cases_arrays_near": 1_000}  # the near miss pushes with $slice
    assert len(db["cases_indexes_planted"].index_information()) == 31
    assert len(db["cases_indexes_near"].index_information()) == 30


def test_capstone_shop_and_its_page(db, backend):
    shop = advisor_cases.plant_capstone(db)
    assert (shop.orders, shop.events, shop.customer_id) == (60, 4_491, 1)
    assert db["cap_orders"].count_documents({}) == 60 and "cap_events" not in db.list_collection_names()
    customer, recent = advisor_cases.capstone_app(db)
    assert customer["_id"] == 1 and customer["email"] == advisor_cases.TYPED_EMAIL.lower()
    assert [o["_id"] for o in recent] == [55, 49, 43, 37, 31, 25, 19, 13, 7, 1]  # customer 1's ten latest
    assert sum(len(o["events"]) for o in db["cap_orders"].find({}, {"events": 1})) == 4_492  # one scan recorded


def test_bad_arguments_say_what_to_do(db, backend):
    with pytest.raises(ValueError, match="'atlas', 'workbook'"):
        advisor_cases.plant_fixtures(db, thresholds="loose")
    with pytest.raises(ValueError, match="lessons must be among"):
        advisor_cases.lesson_designs(db, "before", ["09"])
