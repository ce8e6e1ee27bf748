"""Checkers of notebook 01 (embedding vs referencing)."""
from __future__ import annotations

from collections import Counter
from typing import Any

import bson

from ..datasets import load_dataset
from ..exercises import exercise, shown
from ..safety import check_copies, workbook_collection

#: the prefix of exercise 1.1's fresh copy of the products (as section 1.1 stored them): one random name
#: per check, dropped after it
_AS_STORED = "exercise_1_1_products"


@exercise("1.1", hint="section 1.8 moved the reviews out of `products`: measure a fresh copy, "
                      "helpers.load_dataset('products', db, collection=...); len(bson.encode(doc)) is a "
                      "document's exact size; keep the _id with the largest")
def largest_product(answer: Any, *, products: Any) -> str | None:
    """``(product _id, BSON size)`` (a tuple or a list) of the largest product document as section 1.1
    stored it (reviews embedded), measured again here on a fresh copy of the dataset: by the end of the
    notebook section 1.8 has moved the reviews out of ``products``."""
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return "give a pair: (product _id, size in bytes)"
    pid, size = answer
    try:
        hash(pid)
    except TypeError:
        return f"give a product _id as the pair's first item, not {shown(pid)}"
    db = products.database
    n = products.count_documents({})
    if n == 0:
        return "the products collection is empty: run the notebook's Setup cell again, then measure"
    with check_copies(db, _AS_STORED) as (name,):  # the dataset as 1.1 loaded it: as many products, reviews embedded
        load_dataset("products", db, scale=n, collection=name)
        stored = workbook_collection(db, name)
        sizes = {p["_id"]: len(bson.encode(p)) for p in stored.find({}, batch_size=10_000)}
    largest = max(sizes.values())
    if size != largest:
        now = {p["_id"]: len(bson.encode(p)) for p in products.find({}, batch_size=10_000)}
        if now and size == max(now.values()):
            return (f"{shown(size)} bytes is the largest product now, after section 1.8 moved the reviews out: "
                    "measure the products as section 1.1 stored them (a fresh copy of the dataset)")
        return f"{shown(size)} bytes is not the size of the largest product as section 1.1 stored it"
    if pid not in sizes:
        return f"there is no product with _id {shown(pid)}"
    if sizes[pid] != size:
        return f"product {shown(pid)} is not {size:,} bytes"
    return None


@exercise("1.2", hint="$lookup from books (localField _id, foreignField author_ids), then "
                      "$project with {'$size': '$<as field>'}; sort by _id")
def book_count_pipeline(answer: Any, *, authors: Any, books: Any) -> str | None:
    """Run the learner's pipeline on ``authors``, and on a copy of it stored in reverse order (so the
    order must come from the pipeline's ``$sort``), and compare with counts made in Python."""
    if not isinstance(answer, list) or not all(isinstance(s, dict) for s in answer):
        return "give a list of aggregation stages (each a dict)"
    try:
        got = list(authors.aggregate(answer))
    except Exception as error:   # noqa: BLE001 - an engine's refusal, explained below
        if "$count" in str([s.get("$lookup", {}).get("pipeline") for s in answer if "$lookup" in s]):
            return ("a $count stage inside a $lookup sub-pipeline is right on MongoDB, but this engine refuses it "
                    f"({type(error).__name__}; docs/ENGINES.md): count with {{'$size': '$<as field>'}}, or a "
                    "sub-pipeline [{'$group': {'_id': None, 'n': {'$sum': 1}}}]")
        return f"the pipeline fails on this engine: {type(error).__name__}: {error}"
    per_author = Counter(a for b in books.find({}, {"author_ids": 1}) for a in b["author_ids"])
    want = [{"_id": a["_id"], "name": a["name"], "book_count": per_author[a["_id"]]}
            for a in authors.find({}).sort("_id", 1)]
    odd = next((d for d in got if sorted(d) != ["_id", "book_count", "name"]), None) if got else {}
    if odd is not None:
        return ("each document should have exactly _id, name, book_count; "
                + (f"author {shown(odd.get('_id'))}'s has {sorted(odd)}" if got else "the pipeline returns nothing"))
    if sorted(d["_id"] for d in got) != [d["_id"] for d in want]:
        return "one document per author is expected"
    wrong = [(g, w) for g, w in zip(sorted(got, key=lambda d: d["_id"]), want) if g != w]
    if wrong:
        g, w = wrong[0]
        if g.get("name") != w["name"]:
            return f"author {shown(g['_id'])}: name {shown(g.get('name'))} is not their name"
        return f"author {shown(g['_id'])}: book_count {shown(g['book_count'])} is not their number of books"
    db = authors.database
    with check_copies(db, _REORDERED) as (name,):  # one per call: two kernels never share (or drop) it
        reordered = workbook_collection(db, name)
        reordered.insert_many(list(authors.find({}).sort("_id", -1)))
        again = [d["_id"] for d in reordered.aggregate(answer)]
    if again != [d["_id"] for d in want]:
        return ("sorted by _id is expected: run on the authors stored in reverse order, your pipeline returns "
                "them in another order, so its order comes from how they are stored")
    return None


#: exercise 1.2's copy of the authors, stored in reverse _id order (``_<8 random hex>`` added per call), dropped after each check
_REORDERED = "exercise_1_2_authors_reordered"

# workload -> (the better fit, the keys of `measured` whose figures support it)
_FITS = {
    "A": ("embed", ("product page docs examined, embedded", "product page docs examined, referenced",
                    "largest product, bytes")),
    "B": ("reference", ("rename: documents to change, duplicated name", "rename: documents written, duplicated name",
                        "rename: documents to change, reference only")),
    "C": ("reference", ("reviews that fit in 16 MiB", "reviews refused at", "largest array write, document bytes",
                        "review insert, document bytes")),
}
_EXAMINED = ("product page docs examined, embedded", "product page docs examined, referenced")


@exercise("1.3", hint="A is read on every view and bounded: which design makes the server read less? B changes a "
                      "copied value about as often as it is read; C is unbounded growth. Name the measurement that "
                      "shows the cost the other design would pay, or (A) what embedding costs its documents (a "
                      "figure that ties, or a count that is no cost, is no evidence)")
def embed_or_reference(answer: Any, *, measured: dict[str, Any]) -> str | None:
    """A choice per workload, each with a key of this run's ``measured`` whose figure supports it
    (a figure that ties, such as the page's round trips, or that measures something else, does not)."""
    if not isinstance(answer, dict):
        return 'give a dict: {"A": ("embed" or "reference", "<key of measured>"), ...}'
    for w, (fit, supports) in _FITS.items():
        if w not in answer:
            return f"workload {w} has no answer"
        if not isinstance(answer[w], (tuple, list)) or len(answer[w]) != 2:
            return f"workload {w}: give a pair (choice, key of measured)"
        choice, evidence = answer[w]
        if choice not in ("embed", "reference"):
            return f"workload {w}: choose 'embed' or 'reference', not {shown(choice)}"
        if choice != fit:
            return f"workload {w}: {shown(choice)} is not the better fit"
        if not isinstance(evidence, str) or evidence not in measured:
            return f"workload {w}: {shown(evidence)} is not a key of measured"
        if evidence not in supports:
            return (f"workload {w}: {shown(evidence)} ({shown(measured[evidence])}) is no evidence for "
                    f"{shown(fit)} here: it ties, or it measures something else")
        if measured[evidence] is None:  # e.g. documents examined where the engine cannot explain (caps.explain)
            other = next((k for k in supports if measured.get(k) is not None), None)
            return (f"workload {w}: {shown(evidence)} is None in this run (this engine did not measure it)"
                    + (f": name a figure it measured, such as {shown(other)}" if other else ""))
        embedded, referenced = (measured.get(k) for k in _EXAMINED)
        if evidence in _EXAMINED and None not in (embedded, referenced) and not embedded < referenced:
            return f"workload {w}: in this run the page examines {embedded} documents embedded, {referenced} referenced"
    return None


# reader/writer pair -> can the reader see a torn state? (section 1.5 measures each)
_TORN = {"A": (False, "a single-document write is atomic: a reader sees all of it or none"),
         "B": (True, "two writes and two reads: the reads can fall between the writes"),
         "C": (False, "a transaction's writes become visible together, and a reader in a transaction reads one point in time"),
         "D": (True, "the reader's two reads outside a transaction are two snapshots: the commit can fall between them")}


@exercise("1.4", hint="one document is atomic; several documents need the writer in a transaction AND a reader "
                      "of one point in time (a transaction, or one snapshot read); compare the torn-read counts "
                      "of section 1.5")
def torn_possible(answer: Any) -> str | None:
    """True/False per reader/writer pair: can the reader see a state no single write produced?"""
    if not isinstance(answer, dict):
        return 'give a dict: {"A": True or False, "B": ..., "C": ..., "D": ...}'
    for pair in _TORN:
        if pair not in answer:
            return f"pair {pair} has no answer"
        if not isinstance(answer[pair], bool):
            return f"pair {pair}: answer True or False, not {shown(answer[pair])}"
    wrong = [p for p, (truth, _why) in _TORN.items() if answer[p] != truth]
    if wrong:
        return f"pair {wrong[0]} is not right: think about how many snapshots its reader's queries see"
    return None


@exercise("1.5", hint="workload.with_rate('view a product page', v).pick(costs, by=by) for a few values of v: a tie "
                      "(pick.tie) is not a pick; the answer is the smallest v at which the pick is 'embed' itself")
def views_at_flip(answer: Any, *, workload: Any, costs: Any, by: str = "round trips / day",
                  design: str = "embed") -> str | None:
    """Weigh the measured costs with the product page's rate changed, at the answer and one below:
    the pick at the answer is ``design`` outright (a tie within the workload's margin is not), and
    one view fewer it is not."""
    if isinstance(answer, bool) or not hasattr(answer, "__index__"):
        return f"give a whole number of page views a day, not {shown(answer)}"
    if by not in workload.weigh(costs).columns:  # the engine gave no server work (caps.explain): nothing to find
        return None if int(answer) == 0 else (
            f"the costs carry no {shown(by)} on this engine (it gives no keys or documents examined: caps.explain), "
            f"so no rate makes {shown(design)} the pick by it: answer 0")
    if int(answer) < 1:
        return f"give a whole number of page views a day, 1 or more, not {shown(answer)}"
    v = int(answer)

    def pick(views: int) -> Any:
        return workload.with_rate("view a product page", views, "exercise 1.5").pick(costs, by=by)

    at = pick(v)
    if at != design:
        said = f"the designs tie on {by} (within {workload.margin:.0%})" if at.tie else f"the pick by {by} is {shown(str(at))}"
        return f"at {v:,} product page views a day {said}: go higher"
    if v > 1 and pick(v - 1) == design:
        return f"at {v - 1:,} views a day {shown(design)} is still the pick by {by}: go lower"
    return None
