"""Checkers of notebook 02 (the outlier pattern)."""
from __future__ import annotations

import uuid
from typing import Any

import bson

from ..counting import count_commands, paused
from ..exercises import exercise, shown
from .pattern import (
    OVERFLOW,
    POSTS,
    WriterCrashed,
    add_comment,
    check_post,
    newest_comments_reference,
    read_comments,
    repair_post,
    simulated_crash,
)


@exercise("2.1", hint="sort the counts; the nearest-rank 99.9th percentile is the value at position ceil(0.999 * n)")
def threshold_999(answer: Any, *, posts_embedded: Any) -> str | None:
    """The smallest threshold under which at least 99.9% of the posts never overflow."""
    if isinstance(answer, bool) or not hasattr(answer, "__index__") or int(answer) < 1:
        return f"{shown(answer)} is not a positive whole number of comments"
    answer = int(answer)
    counts = [d["n"] for d in posts_embedded.aggregate([{"$project": {"n": {"$size": "$comments"}}}])]
    if sum(n <= answer for n in counts) < 0.999 * len(counts):
        return f"with {shown(answer)} embedded, only {sum(n <= answer for n in counts) / len(counts):.2%} of posts never overflow"
    if sum(n <= answer - 1 for n in counts) >= 0.999 * len(counts):
        return f"{answer - 1} would do as well: you want the smallest"
    return None


def _repaired_post(db: Any, post_id: str, comments: int, crash_at: int) -> None:
    """A scratch post (threshold 2) whose writer died at number ``crash_at``, repaired: a lost marker
    among its overflow, as ``repair_post`` leaves one."""
    db[POSTS].insert_one({"_id": post_id, "comments": [], "commentCount": 0, "hasOverflow": False})
    for i in range(1, comments + 1):
        if i == crash_at:
            try:
                with simulated_crash():
                    add_comment(db, post_id, {"i": "never stored"}, 2)
            except WriterCrashed:
                pass
        else:
            add_comment(db, post_id, {"i": i}, 2)
    repair_post(db, post_id)


@exercise("2.2", hint="read the post with a projection of comments and hasOverflow; if flagged, find on "
                      "posts_overflow by post_id and not lost, .sort('seq', -1).limit(n), then top up from the "
                      "embedded tail")
def newest_comments(answer: Any, *, db: Any) -> str | None:
    """Call the learner's ``newest_comments(db, post_id)`` on the first unflagged post, on the flagged
    posts (overflow in ``posts_overflow``) with the most comments and with the fewest overflowed
    (which needs a top-up from the embedded comments), and on a repaired scratch post (a lost marker
    among its newest); compare with the reference read, counting round trips, and on the busiest
    post the documents and bytes returned (a read of every overflowed comment, cut to n on the client,
    sends them all). Documents examined are not judged: SecantusDB's explain
    takes no sort from an index and ends no scan at a limit (docs/ENGINES.md), so it would count a
    right read's as the whole overflow."""
    if not callable(answer):
        return "newest_comments should be a function: def newest_comments(db, post_id, n=20): ..."
    posts, overflow, n = db[POSTS], db[OVERFLOW], 20
    plain = posts.find_one({"hasOverflow": {"$ne": True}}, {"_id": 1}, sort=[("_id", 1)])
    flagged = []   # (commentCount, overflow documents, _id) of the posts whose overflow is in posts_overflow
    for d in posts.find({"hasOverflow": True}, {"commentCount": 1}):
        held = overflow.count_documents({"post_id": d["_id"]})
        if held:
            flagged.append((d.get("commentCount", 0), held, d["_id"]))
    if not flagged or plain is None:
        return "the posts of section 2.3 are not loaded: run the notebook from the top"
    most = max(flagged, key=lambda f: (f[0], str(f[2])))[2]
    fewest = min(flagged, key=lambda f: (f[1], str(f[2])))[2]
    scratch = f"exercise 2.2: a repaired post {uuid.uuid4().hex[:8]}"  # one per call: two kernels, or a leftover
    try:
        _repaired_post(db, scratch, 25, 23)
        for post_id in dict.fromkeys((plain["_id"], most, fewest, scratch)):
            with count_commands() as cost:
                got = answer(db, post_id)
            if got != newest_comments_reference(db, post_id, n):
                return (f"post {shown(post_id)}: got {shown(len(got) if isinstance(got, list) else got)} comments, "
                        f"not the {n} newest newest-first" + (" (a lost marker holds no comment: skip it in the "
                                                               "query, so the limit counts comments)"
                                                               if post_id == scratch else ""))
            if cost.round_trips > 2:
                return f"post {shown(post_id)} took {cost.round_trips} round trips; two are enough"
            if post_id != most:
                continue
            if cost.docs_returned > n + 1:
                return f"the busiest post returned {cost.docs_returned:,} documents; sort by seq descending and limit"
            with paused():   # what a right read sends: the post, and its n newest overflow documents
                enough = len(bson.encode(posts.find_one({"_id": most}) or {})) + sum(
                    len(bson.encode(d)) for d in overflow.find({"post_id": most}).sort("seq", -1).limit(n))
            if cost.bytes_returned > 2 * enough:
                return (f"the busiest post's read returned {cost.bytes_returned:,} bytes for {n} comments (the post "
                        f"and its {n} newest overflow documents are {enough:,}): read only those")
    finally:
        posts.delete_one({"_id": scratch})
        overflow.delete_many({"post_id": scratch})
    return None


@exercise("2.3", hint="for typical_id and viral_id, count the documents each design's page reads (the post, plus "
                      "the documents it joins: count_documents by post_id), then weigh the difference by each view's "
                      "rate in workload")
def saved_reads(answer: Any, *, db: Any, workload: Any, typical_id: Any, viral_id: Any) -> str | None:
    """The documents a day's page views make the server read, reference everything minus the outlier
    pattern: per view, the post plus its comment documents against the post plus its overflow
    documents (lost markers included: the page's query reads them too), times the workload's rates."""
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)
    if isinstance(answer, bool) or not hasattr(answer, "__index__"):
        return f"give a whole number of documents, not {shown(answer)}"
    saved = {}
    for operation, post_id in (("view a typical post", typical_id), ("view the viral post", viral_id)):
        referenced = 1 + db["comments_ref"].count_documents({"post_id": post_id})
        pattern = 1 + db[OVERFLOW].count_documents({"post_id": post_id})
        saved[operation] = workload.operation(operation).per_day * (referenced - pattern)
    if int(answer) == saved["view a typical post"]:
        return "that is what the typical views save; the viral post's views save some documents too"
    if int(answer) == saved["view the viral post"]:
        return "that is what the viral post's views save; the typical views save documents too"
    if int(answer) != sum(saved.values()):
        return f"{shown(answer)} documents a day is not it"
    return None


@exercise("2.4", hint="read the post's commentCount and its embedded comments (one query), then the seq of "
                      "every posts_overflow document of the post, lost markers included (one query); a hole is a "
                      "number after the embedded ones, up to commentCount, that no document holds")
def holes(answer: Any, *, db: Any) -> str | None:
    """Run the learner's ``holes(db, post_id)`` on a post with a crashed writer (made here, removed
    after), on the most commented flagged post, on an unflagged post, and on the crashed post again
    after ``repair_post`` (its hole a lost marker); compare with ``check_post``."""

    if not callable(answer):
        return "holes should be a function: def holes(db, post_id): ..."
    posts = db[POSTS]
    flagged = posts.find_one({"hasOverflow": True}, {"_id": 1}, sort=[("commentCount", -1), ("_id", 1)])
    plain = posts.find_one({"hasOverflow": {"$ne": True}}, {"_id": 1}, sort=[("_id", 1)])
    if flagged is None or plain is None:
        return "the posts of section 2.3 are not loaded: run the notebook from the top"
    scratch = f"exercise 2.4: a post whose writer died {uuid.uuid4().hex[:8]}"  # one per call
    try:
        posts.insert_one({"_id": scratch})
        for i in range(4):
            add_comment(db, scratch, {"i": i}, 2)
        try:
            with simulated_crash():
                add_comment(db, scratch, {"i": "lost"}, 2)
        except WriterCrashed:
            pass
        add_comment(db, scratch, {"i": 5}, 2)
        for post_id, repair in ((scratch, False), (flagged["_id"], False), (plain["_id"], False), (scratch, True)):
            if repair:   # the same post after repair_post: its hole is a lost marker now
                repair_post(db, scratch)
            with count_commands() as cost:
                got = answer(db, post_id)
            want = check_post(db, post_id).holes
            if not isinstance(got, list) or sorted(got) != want:
                return (f"post {shown(post_id)}: got {shown(got)}, which are not its holes"
                        + (" (after repair_post: a lost marker holds its number, so it is no hole)"
                           if repair else ""))
            if cost.round_trips > 2 + (cost.commands.count("getMore")):
                return f"post {shown(post_id)} took {cost.round_trips} round trips; two queries are enough"
    finally:
        posts.delete_one({"_id": scratch})
        db[OVERFLOW].delete_many({"post_id": scratch})
    return None


def _started_post(db: Any, post_id: str) -> None:
    db[POSTS].insert_one({"_id": post_id, "title": "exercise 2.5", "comments": [], "commentCount": 0,
                          "hasOverflow": False})


@exercise("2.5", hint="one find_one_and_update with an update pipeline (a list of stages) can number the comment "
                      "and embed it only while the post is not flagged; the document it returns after the update "
                      "says which happened, and so whether one insert must follow")
def two_round_trip_write(answer: Any, *, db: Any) -> str | None:
    """Run the learner's ``write_comment(db, post_id, comment, threshold)`` on a fresh post (the pattern's
    fields set, threshold 3) for six comments, counting each call's round trips (embedded: one;
    overflowed: two; the first overflow, which sets the flag, may take more), then check what is
    stored: the first three embedded, the flag, ``commentCount``, the overflow numbered 4 to 6, every
    comment once and in order (``read_comments``), every number accounted for (``check_post``)."""
    if not callable(answer):
        return "write_comment should be a function: def write_comment(db, post_id, comment, threshold): ..."
    if db[OVERFLOW].count_documents({}, limit=1) == 0:
        return "the posts of section 2.3 are not loaded (posts_overflow is empty): run the notebook from the top"
    post_id, threshold = "exercise 2.5: a post written in two round trips", 3
    sent = [{"author": f"user{n}", "text": f"comment {n}", "note": "$commentCount"} for n in range(1, 7)]
    _started_post(db, post_id)
    try:
        for n, comment in enumerate(sent, start=1):
            with count_commands() as cost:
                answer(db, post_id, dict(comment), threshold)
            most = 1 if n <= threshold else None if n == threshold + 1 else 2
            if most is not None and cost.round_trips > most:
                where = "embedded" if n <= threshold else "overflowed"
                return (f"comment {n} ({where}) took {cost.round_trips} round trips ({', '.join(cost.commands)}); "
                        f"{most} {'is' if most == 1 else 'are'} enough")
        post = db[POSTS].find_one({"_id": post_id}) or {}
        if any(isinstance(c, dict) and c.get("note") != "$commentCount" for c in post.get("comments") or []):
            return ("a comment's text '$commentCount' was stored as the post's commentCount: inside a pipeline a "
                    "string that starts with $ is a field path; wrap the comment in {'$literal': comment}")
        if post.get("comments") != sent[:threshold]:
            return f"the post embeds {shown(post.get('comments'))}, not its first {threshold} comments"
        if post.get("hasOverflow") is not True or post.get("commentCount") != len(sent):
            return (f"after {len(sent)} comments the post has hasOverflow {shown(post.get('hasOverflow'))} and "
                    f"commentCount {shown(post.get('commentCount'))}")
        seqs = sorted(d.get("seq") for d in db[OVERFLOW].find({"post_id": post_id}, {"seq": 1}))
        if seqs != list(range(threshold + 1, len(sent) + 1)):
            return f"posts_overflow holds the numbers {shown(seqs)} for this post, not 4, 5 and 6"
        if read_comments(db, post_id) != sent:
            return "read_comments does not give the six comments back, once each and in the order they were added"
        state = check_post(db, post_id)
        if not state.consistent:
            return f"check_post finds the numbers not accounted for: {shown(state)}"
    finally:
        db[POSTS].delete_one({"_id": post_id})
        db[OVERFLOW].delete_many({"post_id": post_id})
    return None
