"""The outlier pattern of ``helpers.outlier`` (notebook 02): the write path never loses, duplicates
or reorders a comment and never embeds past the threshold; bad input changes nothing; costs are the
ones the notebook claims. Every test runs on each backend (embedded, mock, mongodb); the concurrency
tests run on the server backends only."""
from __future__ import annotations

import re
import threading

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import DocumentTooLarge

from helpers.counting import count_commands
from helpers.outlier import (
    OVERFLOW,
    POSTS,
    Added,
    PostNotFoundError,
    add_comment,
    comment_count_stats,
    load_outlier_posts,
    outlier_layout,
    read_comments,
    read_post,
    read_post_lookup,
)
from helpers.safety import reset_workbook, workbook_collection
from helpers.sizes import MAX_BSON_SIZE


def _snapshot(db) -> dict[str, list[bytes]]:
    """Every document of every collection, as BSON bytes in ``_id`` order: to prove nothing changed."""
    out = {}
    for name in sorted(db.list_collection_names()):
        docs = [bson.encode(d) for d in db[name].find({})]
        out[name] = sorted(docs)
    return out


def _state(db, post_id):
    post = db[POSTS].find_one({"_id": post_id})
    overflow = sorted(db[OVERFLOW].find({"post_id": post_id}), key=lambda d: d["seq"])
    return post, overflow


def _clear(db) -> None:
    db.drop_collection(POSTS)
    db.drop_collection(OVERFLOW)


# --------------------------------------------------------------------------------------------
# property-based: random posts, comments and thresholds

comment_st = st.fixed_dictionaries({"author": st.sampled_from(["ada", "ben", "chloe"]),
                                    "text": st.text(max_size=6)})


@st.composite
def scenarios(draw):
    n_posts = draw(st.integers(1, 3))
    thresholds = [draw(st.integers(1, 5)) for _ in range(n_posts)]
    initial = [draw(st.lists(comment_st, max_size=t)) for t in thresholds]  # comments before first use
    with_array = [bool(initial[i]) or draw(st.booleans()) for i in range(n_posts)]
    ops = draw(st.lists(st.tuples(st.integers(0, n_posts - 1), comment_st), max_size=25))
    return thresholds, initial, with_array, ops


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_read_returns_exactly_what_was_added_in_order(db, scenario):
    thresholds, initial, with_array, ops = scenario
    _clear(db)
    posts = workbook_collection(db, POSTS)
    for i, (init, has_array) in enumerate(zip(initial, with_array)):
        posts.insert_one({"_id": i, "title": f"post {i}", **({"comments": list(init)} if has_array else {})})
    expected = [list(init) for init in initial]
    for number, (i, comment) in enumerate(ops):
        comment = {**comment, "n": number}  # every added comment distinct, so a duplicate would show
        added = add_comment(db, i, comment, thresholds[i])
        expected[i].append(comment)
        assert added == Added(len(expected[i]), len(expected[i]) <= thresholds[i])
    for i, t in enumerate(thresholds):
        assert read_comments(db, i) == expected[i]
        post, overflow = _state(db, i)
        assert len(post.get("comments", [])) <= t
        assert post.get("comments", []) == expected[i][:t]
        in_overflow = db[OVERFLOW].count_documents({"post_id": i}) > 0
        assert bool(post.get("hasOverflow")) == in_overflow
        assert [d["seq"] for d in overflow] == list(range(t + 1, len(expected[i]) + 1))
        if any(op[0] == i for op in ops):  # touched: the bulk layout is exactly what add_comment built
            layout, layout_overflow = outlier_layout({**post, "comments": expected[i]}, t)
            assert post == layout
            assert overflow == layout_overflow
            assert read_post(db, i)["comments"] == expected[i]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(thresholds=st.lists(st.integers(1, 6), min_size=1, max_size=20))
def test_changing_threshold_keeps_order_and_never_embeds_after_overflow(db, thresholds):
    _clear(db)
    workbook_collection(db, POSTS).insert_one({"_id": "p"})
    added = []
    for n, t in enumerate(thresholds):
        added.append({"n": n})
        add_comment(db, "p", added[-1], t)
    post, overflow = _state(db, "p")
    assert read_comments(db, "p") == added
    assert len(post["comments"]) <= max(thresholds)
    assert post["hasOverflow"] == bool(overflow)
    assert post["commentCount"] == len(added)
    # embedded comments are a prefix of the order, overflowed ones the rest, numbered on
    k = len(post["comments"])
    assert post["comments"] == added[:k]
    assert [d["seq"] for d in overflow] == list(range(k + 1, len(added) + 1))


# --------------------------------------------------------------------------------------------
# examples: the boundary, costs, bulk layout

def test_boundary_and_costs(db):
    posts = workbook_collection(db, POSTS)
    posts.insert_many([{"_id": 1, "title": "quiet"}, {"_id": 2, "title": "viral"}])
    for n in range(3):
        assert add_comment(db, 1, {"n": n}, threshold=3) == Added(n + 1, True)
    add_comment(db, 2, {"n": 0}, threshold=3)
    with count_commands() as c:  # a started post that still has room: one atomic update
        add_comment(db, 2, {"n": 1}, threshold=3)
    assert (c.round_trips, c.commands) == (1, ["findAndModify"])
    add_comment(db, 2, {"n": 2}, threshold=3)
    assert add_comment(db, 2, {"n": 3}, threshold=3) == Added(4, False)
    with count_commands() as c:  # an overflowed comment: one update takes its number, then the insert
        assert add_comment(db, 2, {"n": 4}, threshold=3) == Added(5, False)
    assert c.commands == ["findAndModify", "insert"]
    post1, _ = _state(db, 1)
    assert post1["hasOverflow"] is False and len(post1["comments"]) == 3
    with count_commands() as c:
        assert read_comments(db, 1) == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert c.round_trips == 1
    with count_commands() as c:
        assert read_comments(db, 2) == [{"n": n} for n in range(5)]
    assert c.round_trips == 2 and c.docs_returned == 3
    page = read_post(db, 2)
    assert page["title"] == "viral" and page["comments"] == [{"n": n} for n in range(5)]


def test_a_comment_is_stored_as_written_even_with_dollar_strings(db):
    """The update pipeline wraps the comment in $literal: a "$field" string is text, not a field path."""
    workbook_collection(db, POSTS).insert_one({"_id": 1, "comments": [], "commentCount": 0, "hasOverflow": False})
    tricky = [{"text": "$commentCount"}, {"text": "hi", "quote": {"by": "$author"}}, {"text": "$$ROOT", "n": 2}]
    for c in tricky:
        add_comment(db, 1, c, threshold=2)
    assert read_comments(db, 1) == tricky


def test_every_page_form_reads_the_same_comments_in_one_batch(db):
    """read_post (the post, then its overflow) and read_post_lookup (one aggregate) give the same page,
    lost markers skipped, in 2 and 1 round trips, and never leave a reply to the driver's default batch."""
    posts = workbook_collection(db, POSTS)
    posts.insert_many([{"_id": "quiet", "title": "q"}, {"_id": "viral", "title": "v"}])
    for n in range(3):
        add_comment(db, "quiet", {"n": n}, threshold=5)
    for n in range(250):  # 245 overflowed: more than the driver's default first batch of 101
        add_comment(db, "viral", {"n": n}, threshold=5)
    db[OVERFLOW].delete_one({"post_id": "viral", "seq": 100})  # a hole, then repaired: a lost marker
    assert repair_post(db, "viral") == [100]  # (imported with the bucket tests, below)
    want = [{"n": n} for n in range(250) if n != 99]
    for post_id, comments, trips in (("quiet", [{"n": n} for n in range(3)], (1, 1)), ("viral", want, (2, 1))):
        for read, rt in zip((read_post, read_post_lookup), trips):
            with count_commands() as c:
                page = read(db, post_id)
            assert page["comments"] == comments and page["title"] in ("q", "v")
            assert (c.round_trips, c.default_batch_getmores) == (rt, 0), (read.__name__, post_id, c.commands)
    assert read_post_lookup(db, "viral") == read_post(db, "viral")
    with pytest.raises(PostNotFoundError):
        read_post_lookup(db, "missing")


def test_existing_comments_keep_their_place(db):
    workbook_collection(db, POSTS).insert_one({"_id": "old", "comments": [{"n": "a"}, {"n": "b"}]})
    assert add_comment(db, "old", {"n": "c"}, threshold=2) == Added(3, False)
    assert add_comment(db, "old", {"n": "d"}, threshold=10) == Added(4, False)  # flagged: no more embedding
    assert read_comments(db, "old") == [{"n": x} for x in "abcd"]


def test_bulk_load_equals_one_by_one(db):
    source = [{"_id": i, "title": f"t{i}", "comments": [{"seq": j, "text": "x" * j} for j in range(k)]}
              for i, k in enumerate([0, 2, 5, 9])]
    counts = load_outlier_posts(db, source, threshold=4)
    assert counts == {POSTS: 4, OVERFLOW: 1 + 5}
    for post in source:
        assert read_comments(db, post["_id"]) == post["comments"]
    bulk = {p["_id"]: p for p in db[POSTS].find({})}
    bulk_overflow = sorted(db[OVERFLOW].find({}), key=lambda d: (d["post_id"], d["seq"]))
    _clear(db)
    workbook_collection(db, POSTS).insert_many([{"_id": p["_id"], "title": p["title"]} for p in source])
    for post in source:
        for comment in post["comments"]:
            add_comment(db, post["_id"], comment, threshold=4)
    one_by_one = {p["_id"]: p for p in db[POSTS].find({})}
    for i in bulk:  # a post never commented on has no pattern fields yet: compare the others
        if source[i]["comments"]:
            assert one_by_one[i] == bulk[i]
    assert sorted(db[OVERFLOW].find({}), key=lambda d: (d["post_id"], d["seq"])) == bulk_overflow


def test_comment_count_stats(db):
    coll = workbook_collection(db, "posts_stats")
    counts = list(range(1, 101)) + [5000]  # 101 posts: p50 = 51, p99 = 100 (nearest rank), max 5000
    coll.insert_many([{"_id": i, "comments": [0] * k} for i, k in enumerate(counts)] + [{"_id": "none"}])
    stats = comment_count_stats(coll)
    assert stats == {"posts": 102, "p50": 50, "p90": 91, "p99": 100, "max": 5000, "outlier over": 1000}
    with pytest.raises(ValueError, match="empty"):
        comment_count_stats(workbook_collection(db, "posts_empty"))


def test_reset_drops_overflow_but_not_a_foreign_posts_collection(db):
    db[POSTS].insert_one({"_id": 1})  # created outside the workbook: reset must leave it
    add_comment(db, 1, {"n": 0}, threshold=1)
    add_comment(db, 1, {"n": 1}, threshold=1)
    assert reset_workbook(db) == [OVERFLOW]
    assert db[POSTS].count_documents({}) == 1


# --------------------------------------------------------------------------------------------
# bad input: a clear error, and nothing changes

def _post_with_comments(db):
    workbook_collection(db, POSTS).insert_one({"_id": 1})
    for n in range(3):
        add_comment(db, 1, {"n": n}, threshold=2)


@pytest.mark.parametrize("threshold", [0, -3, True, 2.5, "10", None])
def test_bad_threshold(db, threshold):
    _post_with_comments(db)
    before = _snapshot(db)
    with pytest.raises(ValueError, match="threshold must be a positive whole number"):
        add_comment(db, 1, {"n": 9}, threshold)
    assert _snapshot(db) == before


def test_missing_post(db):
    _post_with_comments(db)
    before = _snapshot(db)
    with pytest.raises(PostNotFoundError, match=r"no post with _id=42 in collection 'posts'.*Insert the post"):
        add_comment(db, 42, {"n": 9}, 2)
    assert _snapshot(db) == before
    with pytest.raises(PostNotFoundError, match="no post with _id=42"):
        read_comments(db, 42)


def test_missing_post_in_empty_database(db):
    with pytest.raises(PostNotFoundError):
        add_comment(db, 1, {"n": 0}, 5)
    assert _snapshot(db) == {}


def test_comment_over_16_mb_alone(db):
    _post_with_comments(db)
    before = _snapshot(db)
    huge = {"text": "x" * MAX_BSON_SIZE}
    with pytest.raises(DocumentTooLarge, match="comment is too large.*Nothing was written"):
        add_comment(db, 1, huge, 2)
    assert _snapshot(db) == before


@pytest.mark.parametrize("comment", ["just text", ["a", "list"], {"bad": object()}])
def test_comment_not_a_document(db, comment):
    _post_with_comments(db)
    before = _snapshot(db)
    with pytest.raises(TypeError, match="comment"):
        add_comment(db, 1, comment, 2)
    assert _snapshot(db) == before


def test_comments_field_not_an_array(db):
    workbook_collection(db, POSTS).insert_one({"_id": 1, "comments": "closed"})
    before = _snapshot(db)
    with pytest.raises(TypeError, match="not an array"):
        add_comment(db, 1, {"n": 0}, 2)
    assert _snapshot(db) == before


def test_push_that_would_pass_16_mb_overflows_instead(db, backend):
    """Where the engine enforces 16 MiB itself, a push that would break it goes to the overflow."""
    workbook_collection(db, POSTS).insert_one({"_id": 1})
    nine_mb = "x" * (9 * 1024 * 1024)
    assert add_comment(db, 1, {"text": nine_mb}, threshold=5) == Added(1, True)
    added = add_comment(db, 1, {"text": nine_mb}, threshold=5)
    if backend.info.caps.max_document_size:
        assert added == Added(2, False)
        assert db[POSTS].find_one({"_id": 1}, {"hasOverflow": 1})["hasOverflow"] is True
    else:  # the mock accepts an 18 MB document (docs/ENGINES.md: known wrong)
        assert added == Added(2, True)
    assert [len(c["text"]) for c in read_comments(db, 1)] == [len(nine_mb)] * 2


# --------------------------------------------------------------------------------------------
# concurrency, on the server backends (real connections from several threads)

def _run_threads(n_threads, work):
    barrier = threading.Barrier(n_threads)
    errors = []

    def run(k):
        try:
            barrier.wait()
            work(k)
        except Exception as exc:  # reported below, with the thread
            errors.append((k, exc))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_writers_across_the_threshold(server_db):
    db, threshold, n_threads, per_thread = server_db, 20, 8, 15
    workbook_collection(db, POSTS).insert_one({"_id": "viral"})
    add_comment(db, "viral", {"writer": -1, "i": 0}, threshold)  # started; the rest race from 1 of 20

    def work(k):
        for i in range(per_thread):
            add_comment(db, "viral", {"writer": k, "i": i}, threshold)

    _run_threads(n_threads, work)
    got = read_comments(db, "viral")
    keys = [(c["writer"], c["i"]) for c in got]
    expected = {(-1, 0)} | {(k, i) for k in range(n_threads) for i in range(per_thread)}
    assert len(keys) == len(set(keys)) == len(expected)  # nothing duplicated
    assert set(keys) == expected  # nothing lost
    for k in range(n_threads):  # each writer's comments in the order it added them
        assert [i for w, i in keys if w == k] == list(range(per_thread))
    post, overflow = _state(db, "viral")
    assert len(post["comments"]) == threshold
    assert post["hasOverflow"] is True and post["commentCount"] == len(expected)
    assert [d["seq"] for d in overflow] == list(range(threshold + 1, len(expected) + 1))


def test_concurrent_first_comments_and_boundary(server_db):
    """Writers meet on each post at the same moment: starting the counter, and at the boundary."""
    db, n_threads, n_posts, threshold = server_db, 6, 30, 3
    workbook_collection(db, POSTS).insert_many([{"_id": r, "comments": [{"old": r}]} for r in range(n_posts)])
    line_up = threading.Barrier(n_threads)

    def work(k):
        for r in range(n_posts):
            line_up.wait()  # all writers add to post r together: 2 embed, 4 overflow
            add_comment(db, r, {"writer": k}, threshold)

    _run_threads(n_threads, work)
    for r in range(n_posts):
        got = read_comments(db, r)
        assert got[0] == {"old": r}
        assert sorted(c["writer"] for c in got[1:]) == list(range(n_threads))
        post, overflow = _state(db, r)
        assert len(post["comments"]) == threshold and post["commentCount"] == n_threads + 1
        assert [d["seq"] for d in overflow] == list(range(threshold + 1, n_threads + 2))


def test_comment_count_stats_fractional_percentile_and_bad_input(db):
    coll = workbook_collection(db, "posts_stats")
    coll.insert_many([{"_id": i, "comments": [0] * i} for i in range(1, 1001)])  # 1..1000
    assert comment_count_stats(coll, percentiles=(99.9, 100)) == {"posts": 1000, "p99.9": 999, "p100": 1000,
                                                                  "max": 1000}
    with pytest.raises(ValueError, match="percentiles"):
        comment_count_stats(coll, percentiles=(0,))


def test_load_outlier_posts_is_all_or_nothing(db):
    from helpers.outlier import load_outlier_posts

    good = [{"_id": i, "comments": [{"n": k} for k in range(i % 4)]} for i in range(6)]
    assert load_outlier_posts(db, good, threshold=2)["posts"] == 6
    before = sorted(d["_id"] for d in db["posts"].find({}, {"_id": 1}))
    bad = [{"_id": 100, "comments": []}, {"comments": [{"n": 1}]}]  # the second post has no _id
    with pytest.raises(ValueError):
        load_outlier_posts(db, bad, threshold=2)
    assert sorted(d["_id"] for d in db["posts"].find({}, {"_id": 1})) == before
    assert not [n for n in db.list_collection_names() if "__staging" in n]



# --------------------------------------------------------------------------------------------
# a writer that dies between reserving a sequence number and storing the comment: a real
# process, killed with SIGKILL at that point, then every invariant

_PAUSED_WRITER = r"""
import sys, time
from pymongo import MongoClient
from helpers import outlier

uri, db_name, post_id, threshold, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

def pause(post, seq):  # the point between reserving and storing: say so, then wait to be killed
    print(f"reserved {seq}", flush=True)
    time.sleep(120)

outlier.pattern._AFTER_RESERVE = pause
db = MongoClient(uri)[db_name]
outlier.add_comment(db, post_id, {"writer": "doomed", "i": n}, threshold)
print("stored", flush=True)  # never reached: the test kills this process first
"""


def _server_uri(server_backend, request) -> str:
    if server_backend.info.name == "mongodb":
        return request.getfixturevalue("test_uri")
    host, port = server_backend.client.address
    return f"mongodb://{host}:{port}/"


def _kill_writer_after_reserving(uri: str, db_name: str, post_id: str, threshold: int, n: int) -> int:
    """Start a writer process, wait until it has reserved its number, SIGKILL it; return the number."""
    import os
    import signal
    import subprocess
    import sys

    if not hasattr(signal, "SIGKILL"):
        pytest.skip("SIGKILL is POSIX-only")
    proc = subprocess.Popen([sys.executable, "-c", _PAUSED_WRITER, uri, db_name, post_id, str(threshold), str(n)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("reserved "), f"the writer did not reach the pause: {line!r} {proc.stderr.read()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        return int(line.split()[1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("killed_at", ["the first overflow (the writer that flags the post)", "a later overflow"])
def test_writer_process_killed_between_reserving_and_storing(server_backend, server_db, request, killed_at):
    from helpers.outlier import check_post, repair_post
    from helpers.safety import is_workbook_collection

    db, threshold = server_db, 3
    uri = _server_uri(server_backend, request)
    workbook_collection(db, POSTS).insert_one({"_id": "p", "title": "a post whose writer dies"})
    acknowledged = []
    first = threshold if killed_at.startswith("the first") else threshold + 2
    for i in range(first):
        add_comment(db, "p", {"writer": "alive", "i": i}, threshold)
        acknowledged.append({"writer": "alive", "i": i})
    hole = _kill_writer_after_reserving(uri, db.name, "p", threshold, 99)
    assert hole == first + 1
    # right after the crash: the count is ahead of the comments, by exactly the hole
    state = check_post(db, "p")
    assert state.holes == [hole] and not state.consistent
    assert state.comment_count == len(acknowledged) + 1 and state.comments == len(acknowledged)
    # harmless to readers: every acknowledged comment, in order, nothing else
    assert read_comments(db, "p") == acknowledged
    assert is_workbook_collection(db, OVERFLOW)  # recorded even though the flagging writer died
    # writers carry on past the hole
    for i in range(first, first + 3):
        add_comment(db, "p", {"writer": "alive", "i": i}, threshold)
        acknowledged.append({"writer": "alive", "i": i})
    assert check_post(db, "p").holes == [hole]
    # repair: the hole becomes a lost marker; counts and contents agree; readers skip the marker
    assert repair_post(db, "p") == [hole]
    assert repair_post(db, "p") == []  # idempotent
    state = check_post(db, "p")
    assert state.consistent and state.lost == [hole] and state.holes == []
    assert state.comment_count == state.embedded + state.overflowed + len(state.lost)
    assert state.comments == len(acknowledged) and read_comments(db, "p") == acknowledged
    post, overflow = _state(db, "p")
    assert len(post["comments"]) == threshold and post["hasOverflow"] is True
    assert [d["seq"] for d in overflow] == list(range(threshold + 1, post["commentCount"] + 1))  # no gap left
    assert read_post(db, "p")["comments"] == acknowledged


def test_repair_while_a_writer_is_still_writing_loses_nothing(server_db, monkeypatch):
    """A slow writer (not dead) whose number repair marks lost takes a new number: stored once."""
    from helpers import outlier
    from helpers.outlier import check_post, repair_post

    db, threshold = server_db, 2
    workbook_collection(db, POSTS).insert_one({"_id": "slow"})
    for i in range(3):
        add_comment(db, "slow", {"i": i}, threshold)
    reserved, resume = threading.Event(), threading.Event()

    def pause(post_id, seq):
        if not reserved.is_set():
            reserved.set()
            assert resume.wait(30)

    monkeypatch.setattr(outlier.pattern, "_AFTER_RESERVE", pause)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("added", add_comment(db, "slow", {"i": 3}, threshold)))
    t.start()
    assert reserved.wait(30)
    assert repair_post(db, "slow") == [4]  # the slow writer's number, taken from under it
    resume.set()
    t.join(30)
    assert result["added"] == Added(5, False)  # it took the next number
    state = check_post(db, "slow")
    assert state.consistent and state.lost == [4] and state.comments == 4
    assert read_comments(db, "slow") == [{"i": i} for i in range(4)]


def test_check_post_on_a_clean_post_and_a_missing_one(db):
    from helpers.outlier import check_post, repair_post

    workbook_collection(db, POSTS).insert_one({"_id": 1})
    for i in range(4):
        add_comment(db, 1, {"i": i}, threshold=2)
    state = check_post(db, 1)
    assert state.consistent and (state.comment_count, state.embedded, state.overflowed) == (4, 2, 2)
    assert repair_post(db, 1) == []
    with pytest.raises(PostNotFoundError):
        check_post(db, 2)


def test_overflow_collection_recorded_whoever_creates_it(server_db):
    """Many writers push several fresh posts over the threshold at once; whichever
    creates posts_overflow, it is the workbook's, so reset drops it and a load runs again."""
    from helpers.safety import is_workbook_collection

    db, n_threads, n_posts, threshold = server_db, 6, 8, 1
    for attempt in range(3):
        reset_workbook(db)
        workbook_collection(db, POSTS).insert_many([{"_id": r} for r in range(n_posts)])
        barrier = threading.Barrier(n_threads)

        def work(k, line_up=barrier):
            line_up.wait()
            for r in range(n_posts):
                add_comment(db, r, {"writer": k}, threshold)

        _run_threads(n_threads, work)
        assert is_workbook_collection(db, OVERFLOW), f"run {attempt}: posts_overflow left unrecorded"
        assert OVERFLOW in reset_workbook(db)
        assert OVERFLOW not in db.list_collection_names()
        assert load_outlier_posts(db, [{"_id": 1, "comments": [{"n": 1}, {"n": 2}]}], threshold=1)["posts_overflow"] == 1


# --- a post id is a value, never a query operator

@pytest.mark.parametrize("bad", [{"$gt": 0}, {"$ne": None}, {"$exists": True}, {"$in": [1, 2]},
                                 re.compile("."), bson.regex.Regex(".")])
def test_an_operator_is_not_a_post_id(db, bad):
    posts = workbook_collection(db, "posts")
    posts.insert_many([{"_id": 1, "title": "a", "comments": []}, {"_id": 2, "title": "b", "comments": []}])
    before = _snapshot(db)
    for call in (lambda: add_comment(db, bad, {"text": "x"}, threshold=2), lambda: read_comments(db, bad),
                 lambda: read_post(db, bad)):
        with pytest.raises(TypeError, match="operator|regular expression"):
            call()
    assert _snapshot(db) == before


# --------------------------------------------------------------------------------------------
# the bucketed overflow layout: the same pattern, buckets of B sequence numbers per document

from helpers.outlier import OVERFLOW_BUCKETS, WriterCrashed, check_post, repair_post, simulated_crash  # noqa: E402


def _buckets(db, post_id):
    return sorted(db[OVERFLOW_BUCKETS].find({"post_id": post_id}, {"_id": 0}), key=lambda d: d["bucket"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(threshold=st.integers(1, 5), bucket_size=st.integers(1, 4), n=st.integers(0, 30))
def test_buckets_read_what_was_added_and_equal_the_bulk_layout(db, threshold, bucket_size, n):
    _clear(db)
    db.drop_collection(OVERFLOW_BUCKETS)
    workbook_collection(db, POSTS).insert_one({"_id": "p", "title": "t"})
    added = [{"n": i, "text": "x" * (i % 3)} for i in range(n)]
    for i, c in enumerate(added):
        assert add_comment(db, "p", c, threshold, bucket_size=bucket_size) == Added(i + 1, i < threshold)
    assert read_comments(db, "p", bucket_size=bucket_size) == added
    assert db[OVERFLOW].count_documents({}) == 0  # nothing in the per-comment layout's collection
    buckets = _buckets(db, "p")
    for b in buckets:  # never more than B numbers per document, each in its own block, in order
        seqs = [e["seq"] for e in b["comments"]]
        assert seqs == sorted(seqs) and len(seqs) <= bucket_size
        assert all((s - 1) // bucket_size == b["bucket"] for s in seqs)
    assert [e["seq"] for b in buckets for e in b["comments"]] == list(range(threshold + 1, n + 1))
    if n:
        post = db[POSTS].find_one({"_id": "p"})
        layout, layout_buckets = outlier_layout({**post, "comments": added}, threshold, bucket_size=bucket_size)
        assert post == layout
        assert buckets == layout_buckets


def test_buckets_costs_and_bulk_load(db):
    source = [{"_id": i, "title": f"t{i}", "comments": [{"j": j} for j in range(k)]}
              for i, k in enumerate([2, 5, 260])]
    counts = load_outlier_posts(db, source, threshold=4, bucket_size=100)
    # post 1: numbers 5 (bucket 0); post 2: 5..260 in buckets 0, 1, 2
    assert counts == {POSTS: 3, OVERFLOW_BUCKETS: 1 + 3}
    for post in source:
        assert read_post(db, post["_id"], bucket_size=100)["comments"] == post["comments"]
        assert read_post_lookup(db, post["_id"], bucket_size=100) == read_post(db, post["_id"], bucket_size=100)
    with count_commands() as c:
        read_comments(db, 2, bucket_size=100)
    assert (c.round_trips, c.docs_returned) == (2, 4)  # the post and 3 buckets
    with count_commands() as c:  # an overflowed comment: the number, then the upsert
        assert add_comment(db, 2, {"j": 260}, 4, bucket_size=100) == Added(261, False)
    assert (c.commands, c.docs_written) == (["findAndModify", "update"], 2)
    assert [e["seq"] for e in _buckets(db, 2)[-1]["comments"]] == [201 + i for i in range(61)]


def test_buckets_crash_repair_and_bad_input(db):
    posts = workbook_collection(db, POSTS)
    posts.insert_one({"_id": "c"})
    for i in range(3):
        add_comment(db, "c", {"i": i}, 2, bucket_size=10)
    with pytest.raises(WriterCrashed):
        with simulated_crash():
            add_comment(db, "c", {"i": "never"}, 2, bucket_size=10)
    add_comment(db, "c", {"i": 4}, 2, bucket_size=10)
    state = check_post(db, "c", bucket_size=10)
    assert state.holes == [4] and not state.consistent
    assert repair_post(db, "c", bucket_size=10) == [4]
    assert repair_post(db, "c", bucket_size=10) == []
    state = check_post(db, "c", bucket_size=10)
    assert state.consistent and state.lost == [4] and state.comments == 4
    assert read_comments(db, "c", bucket_size=10) == [{"i": 0}, {"i": 1}, {"i": 2}, {"i": 4}]
    before = _snapshot(db)
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="bucket_size"):
            add_comment(db, "c", {"i": 9}, 2, bucket_size=bad)
    with pytest.raises(DocumentTooLarge, match="buckets of 100"):  # 100 of these would pass 16 MiB
        add_comment(db, "c", {"text": "x" * 200_000}, 2, bucket_size=100)
    assert _snapshot(db) == before


def test_a_lost_marker_sends_a_slow_bucket_writer_to_a_new_number(db, monkeypatch):
    import helpers.outlier.pattern as outlier_module

    workbook_collection(db, POSTS).insert_one({"_id": "s"})
    add_comment(db, "s", {"i": 0}, 1, bucket_size=5)

    def repair_first(post_id, seq):  # the repair runs while this writer holds number seq
        monkeypatch.setattr(outlier_module, "_AFTER_RESERVE", None)
        assert repair_post(db, post_id, bucket_size=5) == [seq]

    monkeypatch.setattr(outlier_module, "_AFTER_RESERVE", repair_first)
    assert add_comment(db, "s", {"i": 1}, 1, bucket_size=5) == Added(3, False)
    state = check_post(db, "s", bucket_size=5)
    assert state.consistent and state.lost == [2]
    assert read_comments(db, "s", bucket_size=5) == [{"i": 0}, {"i": 1}]


def test_concurrent_bucket_writers_lose_and_duplicate_nothing(server_db):
    db, threshold, bucket_size, n_threads, per_thread = server_db, 10, 7, 8, 12
    workbook_collection(db, POSTS).insert_one({"_id": "viral"})
    add_comment(db, "viral", {"writer": -1, "i": 0}, threshold, bucket_size=bucket_size)

    def work(k):
        for i in range(per_thread):
            add_comment(db, "viral", {"writer": k, "i": i}, threshold, bucket_size=bucket_size)

    _run_threads(n_threads, work)
    keys = [(c["writer"], c["i"]) for c in read_comments(db, "viral", bucket_size=bucket_size)]
    expected = {(-1, 0)} | {(k, i) for k in range(n_threads) for i in range(per_thread)}
    assert len(keys) == len(set(keys)) == len(expected) and set(keys) == expected
    for k in range(n_threads):
        assert [i for w, i in keys if w == k] == list(range(per_thread))
    seqs = [e["seq"] for b in _buckets(db, "viral") for e in b["comments"]]
    assert seqs == list(range(threshold + 1, len(expected) + 1))
    assert all(len(b["comments"]) <= bucket_size for b in _buckets(db, "viral"))
    assert check_post(db, "viral", bucket_size=bucket_size).consistent


def test_the_bucket_guard_admits_only_comments_a_full_bucket_can_hold(db):
    """The largest comment the guard admits for buckets of 2, stored twice in one bucket, still
    makes a document within 16 MiB (a server would refuse the second upsert otherwise)."""
    from helpers.outlier.pattern import _check_comment, _store_in_bucket, ensure_overflow_index

    def admitted(k):
        try:
            _check_comment("g", {"text": "x" * k}, 2)
            return True
        except DocumentTooLarge:
            return False

    lo, hi = MAX_BSON_SIZE // 2 - 1_000, MAX_BSON_SIZE // 2   # lo is admitted, hi is not
    assert admitted(lo) and not admitted(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if admitted(mid) else (lo, mid)
    db.drop_collection(OVERFLOW_BUCKETS)
    ensure_overflow_index(db, 2)
    for seq in (1, 2):   # both numbers of bucket 0, the largest admitted comment each
        assert _store_in_bucket(db, "g", {"seq": seq, "comment": {"text": "x" * lo}}, 2) == "stored"
    bucket = db[OVERFLOW_BUCKETS].find_one({"post_id": "g", "bucket": 0})
    assert [e["seq"] for e in bucket["comments"]] == [1, 2]
    assert len(bson.encode(bucket)) <= MAX_BSON_SIZE
    db.drop_collection(OVERFLOW_BUCKETS)


# --------------------------------------------------------------------------------------------
# the overflow ordered by time (helpers.outlier.by_time): no sequence number, one write per
# overflowed comment on a post the writer saw flagged

import datetime as _dt  # noqa: E402

from helpers.outlier import (  # noqa: E402
    OVERFLOW_BUCKETS_BY_TIME,
    OVERFLOW_BY_TIME,
    POSTS_BY_TIME,
    add_comment_by_time,
    ensure_time_overflow_index,
    read_post_by_time,
    read_post_lookup_by_time,
    time_layout,
)


def _timed(i, **more):
    return {"i": i, "ts": _dt.datetime(2025, 1, 1) + _dt.timedelta(seconds=i), **more}


def _clear_by_time(db) -> None:
    for name in (POSTS_BY_TIME, OVERFLOW_BY_TIME, OVERFLOW_BUCKETS_BY_TIME):
        db.drop_collection(name)


def _is_flagged(db, post_id) -> bool:
    return db[POSTS_BY_TIME].find_one({"_id": post_id}, {"hasOverflow": 1}).get("hasOverflow") is True


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(threshold=st.integers(1, 5), bucket_size=st.sampled_from([None, 1, 3]), n=st.integers(0, 20))
def test_by_time_reads_what_was_added_and_equals_the_bulk_layout(db, threshold, bucket_size, n):
    _clear_by_time(db)
    workbook_collection(db, POSTS_BY_TIME).insert_one({"_id": "p", "title": "t"})
    added = [_timed(i, text="x" * (i % 3)) for i in range(n)]
    for i, c in enumerate(added):
        embedded = add_comment_by_time(db, "p", c, threshold, flagged=_is_flagged(db, "p"), bucket_size=bucket_size)
        assert embedded is (i < threshold)
    for read in (read_post_by_time, read_post_lookup_by_time):
        assert read(db, "p", bucket_size=bucket_size).get("comments", []) == added
    post = db[POSTS_BY_TIME].find_one({"_id": "p"})
    assert "commentCount" not in post and len(post.get("comments") or []) == min(n, threshold)
    overflow = db[OVERFLOW_BY_TIME if bucket_size is None else OVERFLOW_BUCKETS_BY_TIME]
    stored = list(overflow.find({}, {"_id": 0}).sort("comment.ts" if bucket_size is None else "first", 1))
    if bucket_size is not None:
        assert all(b["n"] == len(b["comments"]) <= bucket_size for b in stored)
    if n:
        layout, layout_overflow = time_layout({"_id": "p", "title": "t", "comments": added}, threshold, bucket_size=bucket_size)
        assert post == layout and stored == layout_overflow
    assert db[OVERFLOW].count_documents({}) == 0  # nothing in the numbered layouts' collections


@pytest.mark.parametrize("bucket_size", [None, 3])
def test_by_time_a_comment_on_a_flagged_post_is_one_write(db, backend, bucket_size):
    """The form the bill weighs against the numbered write: one round trip once the writer knows
    the post is flagged (numbered: two), an embedded comment one; pages in 2 and 1 round trips,
    never left to the driver's default batch; the open index finds the open bucket alone."""
    from helpers.plans import explain_find

    _clear_by_time(db)
    posts = workbook_collection(db, POSTS_BY_TIME)
    posts.insert_one({"_id": "v", "title": "viral"})
    overflow = db[OVERFLOW_BY_TIME if bucket_size is None else OVERFLOW_BUCKETS_BY_TIME]
    ensure_time_overflow_index(db, bucket_size)  # deployed first: a measured block must not change the indexes
    keys = {}
    for i in range(110):  # threshold 2: 108 overflowed, more than the driver's default first batch
        with count_commands(index_keys={posts: {"_id": "v"}, overflow: {"post_id": "v"}}) as c:
            add_comment_by_time(db, "v", _timed(i), 2, flagged=i > 2, bucket_size=bucket_size)
        if i != 2:  # comment 2 is the post's first overflow: the array found full, then the flag
            assert c.round_trips == 1, (i, c.commands)
        keys[i] = c.index_keys_written
    assert _is_flagged(db, "v")
    if bucket_size is None:
        assert all(keys[i] == 2 for i in range(3, 110))  # _id and (post_id, comment.ts)
    else:  # a bucket opens (_id, (post_id, first), the open index) every 3rd overflowed comment, fills on the next but one
        assert [keys[i] for i in range(5, 11)] == [3, 0, 1, 3, 0, 1]
    for read, trips in ((read_post_by_time, 2), (read_post_lookup_by_time, 1)):
        with count_commands() as c:
            page = read(db, "v", bucket_size=bucket_size)
        assert page["comments"] == [_timed(i) for i in range(110)]
        assert (c.round_trips, c.default_batch_getmores, len(c.open_cursors)) == (trips, 0, 0)
    if bucket_size is not None and backend.info.caps.explain:
        _stages, k, d = explain_find(overflow, {"post_id": "v", "n": {"$lt": bucket_size}})
        assert (k, d) == (0, 0)  # 36 full buckets: none in the open index
        add_comment_by_time(db, "v", _timed(110), 2, flagged=True, bucket_size=bucket_size)
        _stages, k, d = explain_find(overflow, {"post_id": "v", "n": {"$lt": bucket_size}})
        assert (k, d) == (1, 1)  # the open bucket alone, of 37


def test_by_time_bad_input_changes_nothing(db):
    _clear_by_time(db)
    workbook_collection(db, POSTS_BY_TIME).insert_one({"_id": 1})
    before = _snapshot(db)
    with pytest.raises(TypeError, match="ts"):
        add_comment_by_time(db, 1, {"text": "no time"}, 3)
    with pytest.raises(PostNotFoundError, match=f"collection '{POSTS_BY_TIME}'"):  # the collection it read
        add_comment_by_time(db, 2, _timed(0), 3)
    with pytest.raises(ValueError):
        add_comment_by_time(db, 1, _timed(0), 3, bucket_size=0)
    with pytest.raises(PostNotFoundError, match=f"db.{POSTS_BY_TIME}.insert_one"):
        read_post_lookup_by_time(db, 2)
    assert _snapshot(db) == before
    ensure_time_overflow_index(db, 4)
    names = {ix["name"]: ix for ix in db[OVERFLOW_BUCKETS_BY_TIME].list_indexes()}
    assert names["open_buckets"]["partialFilterExpression"] == {"n": {"$lt": 4}}


def test_by_time_concurrent_writers_lose_and_duplicate_nothing(server_db):
    db, threshold, bucket_size, n_threads, per_thread = server_db, 5, 4, 6, 10
    workbook_collection(db, POSTS_BY_TIME).insert_one({"_id": "viral"})

    def work(k):
        for i in range(per_thread):
            add_comment_by_time(db, "viral", _timed(1_000 * k + i, writer=k), threshold,
                                flagged=_is_flagged(db, "viral"), bucket_size=bucket_size)

    _run_threads(n_threads, work)
    got = read_post_by_time(db, "viral", bucket_size=bucket_size)["comments"]
    keys = [(c["writer"], c["i"]) for c in got]
    assert len(keys) == len(set(keys)) == n_threads * per_thread  # nothing lost, nothing duplicated
    post = db[POSTS_BY_TIME].find_one({"_id": "viral"})
    assert post["hasOverflow"] is True and len(post["comments"]) == threshold
    overflowed = got[threshold:]
    assert [c["ts"] for c in overflowed] == sorted(c["ts"] for c in overflowed)
    assert read_post_lookup_by_time(db, "viral", bucket_size=bucket_size)["comments"] == got
    assert all(b["n"] == len(b["comments"]) <= bucket_size for b in db[OVERFLOW_BUCKETS_BY_TIME].find({}))


def test_the_bill_weighs_the_overflow_by_time_on_its_own_layout(db):
    """Notebook 02's bill, small: the outlier design's page and comments measured numbered and by
    time, each form on its layout. The viral comment is billed by time (1 round trip, not 2) with the
    pages of that layout, never a numbered page with a comment by time; 102,100 -> 102,000 a day."""
    from helpers.workload import Forms, Operation, Workload

    _clear(db)
    _clear_by_time(db)
    source = [{"_id": "t", "comments": [_timed(i) for i in range(3)]},
              {"_id": "v", "comments": [_timed(i) for i in range(40)]}]
    load_outlier_posts(db, source, threshold=5)
    laid = [time_layout(p, 5) for p in source]
    workbook_collection(db, POSTS_BY_TIME).insert_many([doc for doc, _ in laid])
    workbook_collection(db, OVERFLOW_BY_TIME).insert_many([d for _, over in laid for d in over])
    ensure_time_overflow_index(db)

    def cost(fn):
        with count_commands() as c:
            fn()
        return c

    page = {label: Forms({"one $lookup": cost(lambda pid=pid: read_post_lookup(db, pid)),
                          "one $lookup, by time": cost(lambda pid=pid: read_post_lookup_by_time(db, pid))},
                         layouts={"one $lookup": "sequence", "one $lookup, by time": "time"})
            for label, pid in (("typical", "t"), ("viral", "v"))}
    comment = {label: Forms({"numbered": cost(lambda pid=pid: add_comment(db, pid, _timed(99), 5)),
                             "by time": cost(lambda pid=pid: add_comment_by_time(db, pid, _timed(99), 5, flagged=pid == "v"))},
                            layouts={"numbered": "sequence", "by time": "time"})
               for label, pid in (("typical", "t"), ("viral", "v"))}
    assert (comment["viral"].forms["numbered"]["round trips"], comment["viral"].forms["by time"]["round trips"]) == (2, 1)
    workload = Workload("a forum's day", tuple(Operation(name, kind, rate, "interactive", "a page", "notebook 02's rates")
                                               for name, kind, rate in (("view a typical post", "read", 95_000),
                                                                        ("view the viral post", "read", 5_000),
                                                                        ("comment on a typical post", "write", 1_900),
                                                                        ("comment on the viral post", "write", 100))))
    both = {"outlier pattern": {"view a typical post": page["typical"], "view the viral post": page["viral"],
                                "comment on a typical post": comment["typical"], "comment on the viral post": comment["viral"]}}
    billed = workload.billed(both)["outlier pattern"]
    assert billed["comment on the viral post"] == "by time"
    assert billed["view the viral post"] == "one $lookup, by time"  # the page of the same layout
    assert workload.weigh(both)["round trips / day"]["outlier pattern"] == 102_000
    numbered_only = {"outlier pattern": {op: Forms({k: v for k, v in f.forms.items() if "time" not in k})
                                         for op, f in both["outlier pattern"].items()}}
    assert workload.weigh(numbered_only)["round trips / day"]["outlier pattern"] == 102_100


# the layout "time, newest bucket": no open index; the upsert takes the post's newest bucket with room
# (update_one(..., sort={"first": -1}), MongoDB 8.0+), the page's (post_id, first) the only secondary index

@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(threshold=st.integers(1, 4), bucket_size=st.integers(1, 4), n=st.integers(0, 20))
def test_newest_bucket_reads_what_was_added_and_equals_the_bulk_layout(db, threshold, bucket_size, n):
    _clear_by_time(db)
    workbook_collection(db, POSTS_BY_TIME).insert_one({"_id": "p", "title": "t"})
    added = [_timed(i) for i in range(n)]
    for c in added:
        add_comment_by_time(db, "p", c, threshold, flagged=_is_flagged(db, "p"), bucket_size=bucket_size, open_index=False)
    for read in (read_post_by_time, read_post_lookup_by_time):
        assert read(db, "p", bucket_size=bucket_size).get("comments", []) == added
    stored = list(db[OVERFLOW_BUCKETS_BY_TIME].find({}, {"_id": 0}).sort("first", 1))
    assert all(b["n"] == len(b["comments"]) <= bucket_size for b in stored)  # the cap held
    if n:
        layout, layout_overflow = time_layout({"_id": "p", "title": "t", "comments": added}, threshold, bucket_size=bucket_size)
        assert db[POSTS_BY_TIME].find_one({"_id": "p"}) == layout and stored == layout_overflow
    if n > threshold:
        names = {ix["name"] for ix in db[OVERFLOW_BUCKETS_BY_TIME].list_indexes()}
        assert names == {"_id_", "post_id_1_first_1"}  # no open index


def test_newest_bucket_a_comment_is_one_round_trip_and_two_keys_per_bucket(db):
    """A comment on a flagged post is one round trip; a bucket writes 2 index keys when it opens
    (_id and (post_id, first)) and none when it fills (with the open index: 3, then 1 removed).
    The pages equal the open-index layout's, comment for comment."""
    pages = {}
    for open_index in (True, False):
        _clear_by_time(db)
        posts = workbook_collection(db, POSTS_BY_TIME)
        posts.insert_one({"_id": "v", "title": "viral"})
        overflow = db[OVERFLOW_BUCKETS_BY_TIME]
        ensure_time_overflow_index(db, 3, open_index=open_index)
        keys = {}
        for i in range(110):
            with count_commands(index_keys={posts: {"_id": "v"}, overflow: {"post_id": "v"}}) as c:
                add_comment_by_time(db, "v", _timed(i), 2, flagged=i > 2, bucket_size=3, open_index=open_index)
            if i != 2:
                assert c.round_trips == 1, (open_index, i, c.commands)
            if i > 2:
                assert c.commands == ["update"], c.commands
            keys[i] = c.index_keys_written
        assert [keys[i] for i in range(5, 11)] == ([3, 0, 1, 3, 0, 1] if open_index else [2, 0, 0, 2, 0, 0])
        assert all(b["n"] == len(b["comments"]) <= 3 for b in overflow.find({}))
        assert overflow.count_documents({}) == 36  # 108 overflowed comments, 3 a bucket: every bucket filled
        pages[open_index] = [read(db, "v", bucket_size=3) for read in (read_post_by_time, read_post_lookup_by_time)]
        assert all(p["comments"] == [_timed(i) for i in range(110)] for p in pages[open_index])
    assert pages[True] == pages[False]
