"""Checkers of notebook 01 (embedding vs referencing)."""
from __future__ import annotations

from collections import Counter
from typing import Any

import bson

from ..exercises import exercise, shown


@exercise("1.1", hint="len(bson.encode(doc)) is a document's exact size; keep the _id with the largest")
def largest_product(answer: Any, *, products: Any) -> str | None:
    """``(product _id, BSON size)`` of the largest product document, measured again here."""
    if not isinstance(answer, tuple) or len(answer) != 2:
        return "give a pair: (product _id, size in bytes)"
    pid, size = answer
    largest = max(len(bson.encode(p)) for p in products.find({}))
    if size != largest:
        return f"{shown(size)} bytes is not the size of the largest product"
    doc = products.find_one({"_id": pid})
    if doc is None:
        return f"there is no product with _id {shown(pid)}"
    if len(bson.encode(doc)) != size:
        return f"product {shown(pid)} is not {size:,} bytes"
    return None


@exercise("1.2", hint="$lookup from books (localField _id, foreignField author_ids), then "
                      "$project with {'$size': '$<as field>'}; sort by _id")
def book_count_pipeline(answer: Any, *, authors: Any, books: Any) -> str | None:
    """Run the learner's pipeline on ``authors`` and compare with counts made in Python."""
    if not isinstance(answer, list) or not all(isinstance(s, dict) for s in answer):
        return "give a list of aggregation stages (each a dict)"
    got = list(authors.aggregate(answer))
    per_author = Counter(a for b in books.find({}, {"author_ids": 1}) for a in b["author_ids"])
    want = [{"_id": a["_id"], "name": a["name"], "book_count": per_author[a["_id"]]}
            for a in authors.find({}).sort("_id", 1)]
    if [sorted(d) for d in got[:1]] != [["_id", "book_count", "name"]]:
        return (f"each document should have exactly _id, name, book_count; "
                f"the first has {sorted(got[0]) if got else 'nothing'}")
    if [d["_id"] for d in got] != [d["_id"] for d in want]:
        return "one document per author, sorted by _id, is expected"
    wrong = [(g["_id"], g["book_count"]) for g, w in zip(got, want) if g != w]
    return None if not wrong else f"author {wrong[0][0]}: book_count {wrong[0][1]} is not their number of books"


# workload -> (the better fit, words that the key of `measured` justifying it must contain)
_FITS = {"A": ("embed", ("product page",)), "B": ("reference", ("rename",)),
         "C": ("reference", ("16 MB", "16 MiB", "largest array write", "review insert"))}


@exercise("1.3", hint="A is read-heavy and bounded; B changes a duplicated value; C is unbounded growth. "
                      "Pick the measurement that shows the cost each design would pay")
def embed_or_reference(answer: Any, *, measured: dict[str, Any]) -> str | None:
    """A choice per workload, each with the key of this run's ``measured`` that justifies it."""
    if not isinstance(answer, dict):
        return 'give a dict: {"A": ("embed" or "reference", "<key of measured>"), ...}'
    for w, (fit, topics) in _FITS.items():
        if w not in answer:
            return f"workload {w} has no answer"
        if not isinstance(answer[w], tuple) or len(answer[w]) != 2:
            return f"workload {w}: give a pair (choice, key of measured)"
        choice, evidence = answer[w]
        if choice not in ("embed", "reference"):
            return f"workload {w}: choose 'embed' or 'reference', not {shown(choice)}"
        if choice != fit:
            return f"workload {w}: {shown(choice)} is not the better fit"
        if evidence not in measured:
            return f"workload {w}: {shown(evidence)} is not a key of measured"
        if not any(t in evidence for t in topics):
            return f"workload {w}: {shown(evidence)} ({measured[evidence]}) does not measure what decides this workload"
    return None


# reader/writer pair -> can the reader see a torn state? (section 1.5 measures each)
_TORN = {"A": (False, "a single-document write is atomic: a reader sees all of it or none"),
         "B": (True, "two writes and two reads: the reads can fall between the writes"),
         "C": (False, "a transaction's writes become visible together, and a reader in a transaction reads one snapshot"),
         "D": (True, "the reader's two reads outside a transaction are two snapshots: the commit can fall between them")}


@exercise("1.4", hint="one document is atomic; several documents need the writer's AND the reader's operations "
                      "in transactions; compare the torn-read counts of section 1.5")
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
                      "(pick.tie) is not a pick; the answer is the smallest v at which the pick is 'embed or copy' itself")
def views_at_flip(answer: Any, *, workload: Any, costs: Any, by: str = "round trips / day") -> str | None:
    """Weigh the measured costs with the product page's rate changed, at the answer and one below:
    the pick at the answer is "embed or copy" outright (a tie within the workload's margin is not),
    and one view fewer it is not."""
    if isinstance(answer, bool) or not hasattr(answer, "__index__"):
        return f"give a whole number of page views a day, not {shown(answer)}"
    if by not in workload.weigh(costs).columns:  # the engine gave no server work (caps.explain): nothing to find
        return None if int(answer) == 0 else (
            f"the costs carry no {shown(by)} on this engine (it gives no keys or documents examined: caps.explain), "
            f"so no rate makes 'embed or copy' the pick by it: answer 0")
    if int(answer) < 1:
        return f"give a whole number of page views a day, 1 or more, not {shown(answer)}"
    v = int(answer)

    def pick(views: int) -> Any:
        return workload.with_rate("view a product page", views, "exercise 1.5").pick(costs, by=by)

    at = pick(v)
    if at != "embed or copy":
        said = f"the designs tie on {by} (within {workload.margin:.0%})" if at.tie else f"the pick by {by} is {shown(str(at))}"
        return f"at {v:,} product page views a day {said}: go higher"
    if v > 1 and pick(v - 1) == "embed or copy":
        return f"at {v - 1:,} views a day 'embed or copy' is still the pick by {by}: go lower"
    return None
