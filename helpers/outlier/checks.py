"""Checkers of notebook 02 (the outlier pattern)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..counting import count_commands
from ..exercises import exercise, shown
from .pattern import (
    OVERFLOW,
    POSTS,
    WriterCrashed,
    add_comment,
    check_post,
    newest_comments_reference,
    read_post,
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


@exercise("2.2", hint="read the post with a projection of comments and hasOverflow; if flagged, find on "
                      "posts_overflow by post_id, .sort('seq', -1).limit(n), then top up from the embedded tail")
def newest_comments(answer: Any, *, db: Any) -> str | None:
    """Call the learner's ``newest_comments(db, post_id)`` on the first unflagged post, the flagged post
    with the most comments and the flagged post with the fewest (which needs a top-up from the
    embedded comments), and compare with the reference read, counting round trips."""
    if not callable(answer):
        return "newest_comments should be a function: def newest_comments(db, post_id, n=20): ..."
    posts = db[POSTS]
    flagged = sorted((d.get("commentCount", 0), d["_id"]) for d in
                     posts.find({"hasOverflow": True}, {"commentCount": 1}))
    plain = posts.find_one({"hasOverflow": {"$ne": True}}, {"_id": 1}, sort=[("_id", 1)])
    if not flagged or plain is None:
        return "the posts of section 2.3 are not loaded: run the notebook from the top"
    most, fewest = flagged[-1][1], flagged[0][1]
    for post_id in dict.fromkeys((plain["_id"], most, fewest)):
        with count_commands() as cost:
            got = answer(db, post_id)
        if got != newest_comments_reference(db, post_id, 20):
            return f"post {post_id}: got {shown(len(got) if isinstance(got, list) else got)} comments, not the 20 newest newest-first"
        if cost.round_trips > 2:
            return f"post {post_id} took {cost.round_trips} round trips; two are enough"
        if post_id == most and cost.docs_returned > 21:
            return f"the busiest post returned {cost.docs_returned:,} documents; sort by seq descending and limit"
    return None


@exercise("2.3", hint="a view of an unflagged post is one query instead of two; a flagged one is two either way")
def saved_queries(answer: Any, *, db: Any, views: list[Any]) -> str | None:
    """Run each viewed post's page with the pattern's read path and count the queries it sends."""
    if isinstance(answer, bool) or not hasattr(answer, "__index__"):
        return f"give a whole number of queries, not {shown(answer)}"
    pattern_queries = 0
    for post_id, n_views in sorted(Counter(views).items()):  # a page costs the same on every view
        with count_commands() as cost:
            read_post(db, post_id)
        pattern_queries += n_views * cost.commands.count("find")
    if int(answer) != 2 * len(views) - pattern_queries:
        return f"{shown(answer)} is not it: running the views saves a different number"
    return None


@exercise("2.4", hint="read the post's commentCount and its embedded comments (one query), then the seq of "
                      "every posts_overflow document of the post, lost markers included (one query); a hole is a "
                      "number after the embedded ones, up to commentCount, that no document holds")
def holes(answer: Any, *, db: Any) -> str | None:
    """Run the learner's ``holes(db, post_id)`` on a post with a crashed writer (made here, removed
    after), on the most commented flagged post and on an unflagged post; compare with ``check_post``."""

    if not callable(answer):
        return "holes should be a function: def holes(db, post_id): ..."
    posts = db[POSTS]
    flagged = posts.find_one({"hasOverflow": True}, {"_id": 1}, sort=[("commentCount", -1), ("_id", 1)])
    plain = posts.find_one({"hasOverflow": {"$ne": True}}, {"_id": 1}, sort=[("_id", 1)])
    if flagged is None or plain is None:
        return "the posts of section 2.3 are not loaded: run the notebook from the top"
    scratch = "exercise 2.4: a post whose writer died"
    posts.insert_one({"_id": scratch})
    try:
        for i in range(4):
            add_comment(db, scratch, {"i": i}, 2)
        try:
            with simulated_crash():
                add_comment(db, scratch, {"i": "lost"}, 2)
        except WriterCrashed:
            pass
        add_comment(db, scratch, {"i": 5}, 2)
        for post_id in (scratch, flagged["_id"], plain["_id"]):
            with count_commands() as cost:
                got = answer(db, post_id)
            want = check_post(db, post_id).holes
            if not isinstance(got, list) or sorted(got) != want:
                return f"post {shown(post_id)}: got {shown(got)}, which are not its holes"
            if cost.round_trips > 2 + (cost.commands.count("getMore")):
                return f"post {shown(post_id)} took {cost.round_trips} round trips; two queries are enough"
    finally:
        posts.delete_one({"_id": scratch})
        db[OVERFLOW].delete_many({"post_id": scratch})
    return None


#: exercise 2.5's live event: comments a day on the viral post
LIVE_EVENT_COMMENTS = 80_000


@exercise("2.5", hint="workload.with_rate('comment on the viral post', 80_000) is the live event's day; pick from "
                      "its weigh() over the designs other than 'embed everything', by 'round trips / day'")
def live_event_pick(answer: Any, *, workload: Any, costs: Any) -> str | None:
    """Weigh the measured costs by the live event's workload and compare the learner's pick with the
    design of fewest round trips a day among those that bound every document."""
    if not isinstance(answer, str) or answer not in costs:
        return f"give a design's name, one of {sorted(costs)}, not {shown(answer)}"
    if answer == "embed everything":
        return ("embed everything does not bound the viral post: at 80,000 comments a day it passes 16 MiB "
                "within days, and then every comment on it fails")
    live = workload.with_rate("comment on the viral post", LIVE_EVENT_COMMENTS, "exercise 2.5: a live event")
    bounded = {d: c for d, c in costs.items() if d != "embed everything"}
    want = live.pick(bounded)
    if answer != want:
        daily = live.weigh(bounded)["round trips / day"]
        return (f"{shown(answer)} sends {daily[answer]:,.0f} round trips a day during the live event; "
                f"another bounded design sends fewer")
    return None
