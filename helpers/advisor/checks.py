"""Checkers of notebook 06 (the schema advisor). Each one re-runs the advisor on the data."""
from __future__ import annotations

from typing import Any

from .. import advisor
from ..counting import count_commands
from ..exercises import exercise, shown
from . import cases as advisor_cases


@exercise("6.1", hint="helpers.advisor.Thresholds(...) takes any threshold as a keyword argument; "
                      "the one for arrays is max_array_elements")
def page_thresholds(answer: Any, *, collection: Any, path: str, page_size: int) -> str | None:
    """Thresholds under which the advisor flags exactly the arrays longer than the page shows."""
    if not isinstance(answer, advisor.Thresholds):
        return f"give a helpers.advisor.Thresholds object, not {type(answer).__name__}"
    if answer.max_array_elements != page_size:
        return (f"with max_array_elements={answer.max_array_elements:,} it flags arrays longer than that; "
                f"the page shows {page_size:,}")

    def lengths(value: Any, parts: list[str]) -> list[int]:  # the data's own count, not the advisor's
        if isinstance(value, list):
            return [n for item in value for n in lengths(item, parts)] if parts else [len(value)]
        if isinstance(value, dict) and parts:
            return lengths(value.get(parts[0]), parts[1:])
        return []

    counted = [n for doc in collection.find({}) for n in lengths(doc, path.split("."))]
    truth = sum(n > page_size for n in counted)
    report = advisor.review(collection.database, thresholds=answer, collections=[collection.name])
    found = [f for f in report.by_code("AVOID_UNBOUNDED_ARRAY") if f.field == path]
    flagged = found[0].evidence.get("over the threshold", 0) if found else 0
    if flagged != truth:
        return f"the advisor flags {flagged} arrays with these thresholds, the data has {truth} longer than the page"
    return None


@exercise("6.2", hint="a regex with the i option is one code; an unanchored regex without it is the other; an "
                      "anchored, case-sensitive prefix or an equality is neither (None)")
def regex_codes(answer: Any, *, queries: dict[str, dict], collection: Any) -> str | None:
    """Which code the advisor gives each query (or None): run each one and let the advisor say."""
    if not isinstance(answer, dict) or set(answer) != set(queries):
        return f"give a dict with one entry per query: {sorted(queries)}"
    for name in sorted(queries):
        workload = advisor.record_workload(lambda q=queries[name]: list(collection.find(q).limit(1)),
                                           collection.database.name)
        report = advisor.review(collection.database, workload, collections=[collection.name],
                                thresholds=advisor.Thresholds(max_documents=0))  # the regex rules read no documents
        codes = sorted({f.code for f in report.findings if f.code.startswith("OPTIMIZE_")})
        truth = codes[0] if codes else None
        if answer[name] != truth:
            return f"query {name}: the advisor does not give it {shown(answer[name])}"
    return None


def _events(db: Any) -> int:
    """Delivery events: those embedded in the orders, plus the documents of any other ``cap_`` collection."""
    embedded = sum(len(o.get("events") or []) for o in db["cap_orders"].find({}, {"events": 1}))
    others = [n for n in db.list_collection_names() if n.startswith("cap_") and n not in ("cap_orders", "cap_customers")]
    return embedded + sum(db[n].count_documents({}) for n in others)


@exercise("6.3", hint="review the shop with the advisor's workbook set first, then follow each finding's fix: the "
                      "lesson it names shows the pattern; fixed_app must still do the page's three jobs")
def capstone(answer: Any, *, db: Any, shop: advisor_cases.Capstone) -> str | None:
    """Run the learner's fixed page, review the shop again, and check that nothing was lost."""
    if not callable(answer):
        return "fixed_app should be a function of db, like advisor_cases.capstone_app(db)"
    before = _events(db)
    if db["cap_orders"].count_documents({}) != shop.orders:
        return f"the shop has {db['cap_orders'].count_documents({})} orders, it had {shop.orders}: none may be lost"
    if before < shop.events:
        return f"{shop.events - before:,} delivery events are missing: move them, do not drop them"
    with count_commands(keep_commands=True) as sent:
        result = answer(db)
    workload = advisor.ObservedWorkload.from_counter(sent, db.name)
    if _events(db) != before + 1:
        return "the page must record one scan event per visit (it records one in the original app)"
    if not isinstance(result, tuple) or len(result) != 2:
        return "fixed_app should return (customer, recent_orders) like capstone_app"
    customer, recent = result
    want = min(c["_id"] for c in db["cap_customers"].find({}, {"email": 1})
               if c["email"].lower() == advisor_cases.TYPED_EMAIL.lower())
    if not isinstance(customer, dict) or customer.get("_id") != want:
        return "fixed_app did not find the customer who logged in"
    latest = sorted(db["cap_orders"].find({"customer_id": want}, {"placed": 1}),
                    key=lambda o: o["placed"], reverse=True)[:10]
    if [o.get("_id") for o in recent] != [o["_id"] for o in latest]:
        return "fixed_app's recent orders are not the customer's ten latest, newest first"
    names = [n for n in db.list_collection_names() if n.startswith("cap_")]
    report = advisor.review(db, workload, collections=names, thresholds="workbook")
    left = [f for f in report.findings if f.code in advisor.CODES or f.code == "USE_OUTLIER_PATTERN"]
    if left:
        return "the advisor (workbook set) still finds " + "; ".join(
            f"{f.code} on {'.'.join(p for p in (f.collection, f.field) if p)}" for f in left)
    return None
