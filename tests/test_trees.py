"""Tests of helpers.trees (notebook 03): the four tree patterns and $graphLookup, on every backend.

The property test drives all four patterns and the $graphLookup walks with random trees and random
moves and renames, and compares every answer with a plain in-memory reference tree kept here.
"""
from __future__ import annotations

import re
import uuid

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.counting import count_commands
from helpers.safety import is_workbook_collection
from helpers.trees import (
    PATTERNS,
    TEACHING,
    AncestorsArray,
    AncestorsWithNames,
    AncestorsWithNamesByParent,
    ChildRefs,
    CycleError,
    GraphLookup,
    MaterializedPaths,
    ParentRefs,
    PathInLink,
    TreeError,
    UnknownNodeError,
    decision_table,
    disagreements,
    interrupt,
    operation_costs,
    server_work,
    tree_shape,
    workload_costs,
)
from helpers.trees.costs import _as_ranges, _prefix
from helpers.workload import Forms, Operation, Workload


# ---------------------------------------------------------------------------------------------
# the reference: a dict of parents, nothing else
class Reference:
    def __init__(self, rows):
        self.parent = {n: p for n, p, _ in rows}
        self.name = {n: name for n, _, name in rows}

    def children(self, n):
        return sorted(k for k, p in self.parent.items() if p == n)

    def ancestors(self, n):
        out = []
        while self.parent[n] is not None:
            n = self.parent[n]
            out.append(n)
        return out[::-1]

    def descendants(self, n):
        return sorted(k for k in self.parent if n in self.ancestors(k))

    def is_ancestor(self, a, b):
        return a in self.ancestors(b)

    def answers(self, n):
        return {"parent": self.parent[n], "children": self.children(n), "ancestors": self.ancestors(n),
                "descendants": self.descendants(n)}

    def named(self, n):
        """What the workload's reads return: breadcrumbs (names, the node's own last), the menu, the subtree."""
        return {"breadcrumbs": [self.name[a] for a in self.ancestors(n) + [n]],
                "menu": [(c, self.name[c]) for c in self.children(n)], "descendants": self.descendants(n)}


def answers(tree, n):
    return {"parent": tree.parent(n), "children": tree.children(n), "ancestors": tree.ancestors(n),
            "descendants": tree.descendants(n)}


def build(db, rows, prefix=None):
    prefix = prefix or f"t{uuid.uuid4().hex[:8]}"
    trees = {cls.__name__: cls(db[f"{prefix}_{cls.__name__}"]) for cls in PATTERNS}
    for tree in trees.values():
        assert tree.load(rows) == len(rows)
    return trees


def snapshot(tree):
    return sorted((sorted(d.items()) for d in tree.collection.find()), key=lambda d: str(d))


# a small fixed tree:      1            9
#                        /   \
#                       2     5
#                      / \     \
#                     3   4     6
#                               |
#                               7 - 8
ROWS = [(1, None, "Electronics"), (2, 1, "Phones"), (3, 2, "Smartphones"), (4, 2, "Cases"),
        (5, 1, "Audio"), (6, 5, "Speakers"), (7, 6, "Smart Speakers"), (8, 7, "Mini"), (9, None, "Books")]


# ---------------------------------------------------------------------------------------------
# property: random trees, random moves and renames, every pattern equals the reference

@st.composite
def forests(draw):
    n = draw(st.integers(1, 9))
    rows = []
    for i in range(n):
        parent = draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None
        rows.append((i, parent, f"n{i}"))
    order = draw(st.permutations(range(n)))  # rows in any order, not parents first
    steps = draw(st.lists(st.tuples(st.sampled_from(["move", "rename", "move_root", "bad_rename"]),
                                    st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
    return [rows[i] for i in order], steps


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=forests())
def test_patterns_agree_with_reference(db, case):
    rows, steps = case
    ref = Reference(rows)
    trees = build(db, rows)
    for k, (op, x, y) in enumerate(steps):
        if op == "move":
            bad = x == y or ref.is_ancestor(x, y)
            for tree in trees.values():
                before = snapshot(tree)
                if bad:
                    with pytest.raises(CycleError):
                        tree.move(x, y)
                    assert snapshot(tree) == before, f"{tree}: a refused move changed the data"
                else:
                    tree.move(x, y)
            if not bad:
                ref.parent[x] = y
        elif op == "move_root":
            for tree in trees.values():
                tree.move(x, None)
            ref.parent[x] = None
        elif op == "rename":
            for tree in trees.values():
                tree.rename(x, f"r{k}")
            ref.name[x] = f"r{k}"
        else:
            for tree in trees.values():
                before = snapshot(tree)
                with pytest.raises(TreeError, match="path separator"):
                    tree.rename(x, "a/b")
                assert snapshot(tree) == before
    graphs = [trees["ParentRefs"], trees["ChildRefs"]]
    for n in ref.parent:
        want = ref.answers(n)
        for tree in trees.values():
            assert answers(tree, n) == want, f"{tree}, node {n}"
            for m in ref.parent:
                assert tree.is_ancestor(m, n) == ref.is_ancestor(m, n), f"{tree}: is_ancestor({m}, {n})"
        for tree in graphs:
            assert tree.graph_ancestors(n) == want["ancestors"], f"{tree}: graph_ancestors({n})"
            assert tree.graph_descendants(n) == want["descendants"], f"{tree}: graph_descendants({n})"
        for method, named in ref.named(n).items():  # every form of every pattern, after the moves and renames
            for tree in trees.values():
                for label, fn in tree.forms_of(method).items():
                    assert fn(n) == named, f"{tree}: {method} ({label}) of {n}"
    # names and paths follow the moves and renames
    for n, doc in ((d["_id"], d) for d in trees["MaterializedPaths"].collection.find()):
        assert doc["path"] == "".join("/" + ref.name[a] for a in ref.ancestors(n) + [n])
    for tree in trees.values():
        tree.collection.drop()


# ---------------------------------------------------------------------------------------------
# each operation on the fixed tree, and what it costs (the same on every backend)

def test_fixed_tree_answers(db):
    trees = build(db, ROWS)
    ref = Reference(ROWS)
    for tree in trees.values():
        for n, *_ in ROWS:
            assert answers(tree, n) == ref.answers(n), tree
        assert tree.is_ancestor(1, 8) and not tree.is_ancestor(8, 1) and not tree.is_ancestor(3, 3)
    assert trees["MaterializedPaths"].collection.find_one({"_id": 3})["path"] == "/Electronics/Phones/Smartphones"
    for tree in trees.values():
        assert is_workbook_collection(db, tree.collection.name), "load must register the collection"


def costs(fn, *args):
    with count_commands() as c:
        fn(*args)
    return c.round_trips, c.docs_returned, c.docs_written


def test_costs_are_what_the_lesson_says(db):
    t = build(db, ROWS)
    # ancestors of node 8 (depth 4): one read per level walking up, one read with the array
    assert costs(t["ParentRefs"].ancestors, 8) == (5, 5, 0)
    assert costs(t["ChildRefs"].ancestors, 8) == (5, 4, 0)
    assert costs(t["AncestorsArray"].ancestors, 8) == (1, 1, 0)
    assert costs(t["MaterializedPaths"].ancestors, 8) == (2, 5, 0)
    assert costs(t["ParentRefs"].graph_ancestors, 8) == (1, 1, 0)
    # descendants of 1 (7 nodes): one query per level, or one query
    assert costs(t["ParentRefs"].descendants, 1) == (5, 7, 0)
    assert costs(t["AncestorsArray"].descendants, 1) == (1, 7, 0)
    assert costs(t["MaterializedPaths"].descendants, 1) == (2, 8, 0)
    assert costs(t["ChildRefs"].graph_descendants, 1) == (1, 1, 0)
    # moving the subtree of 5 (5, 6, 7, 8) under 4: one write with references, four with the array
    assert costs(t["ParentRefs"].move, 5, 4)[2] == 1
    assert costs(t["ChildRefs"].move, 5, 4)[2] == 2
    assert costs(t["AncestorsArray"].move, 5, 4)[2] == 4
    assert costs(t["MaterializedPaths"].move, 5, 4)[2] == 4
    assert costs(t["AncestorsWithNames"].move, 5, 4)[2] == 4
    # renaming 2 (now 2, 3, 4 and the moved 5, 6, 7, 8): one write, except where a descendant holds the name
    for name in ("ParentRefs", "ChildRefs", "AncestorsArray"):
        assert costs(t[name].rename, 2, "Mobile")[2] == 1
    assert costs(t["MaterializedPaths"].rename, 2, "Mobile")[2] == 7
    assert costs(t["AncestorsWithNames"].rename, 2, "Mobile")[2] == 7
    assert [a["name"] for a in t["AncestorsWithNames"].collection.find_one({"_id": 8})["ancestors"]] == \
        ["Electronics", "Mobile", "Cases", "Audio", "Speakers", "Smart Speakers"]
    paths = sorted(d["path"] for d in t["MaterializedPaths"].collection.find())
    assert sum(p.startswith("/Electronics/Mobile") for p in paths) == 7
    assert "/Electronics/Mobile/Cases/Audio/Speakers" in paths and not any("Phones" in p for p in paths)
    # a no-op move writes nothing
    assert costs(t["ChildRefs"].move, 3, 2)[2] == 0
    assert costs(t["AncestorsArray"].move, 3, 2)[2] == 0
    assert costs(t["MaterializedPaths"].move, 3, 2)[2] == 0


# ---------------------------------------------------------------------------------------------
# bad input: a clear error, and nothing changes

@pytest.mark.parametrize("cls", PATTERNS, ids=lambda c: c.__name__)
def test_bad_input_changes_nothing(db, cls):
    tree = cls(db[f"bad_{cls.__name__}"])
    tree.load(ROWS)
    before = snapshot(tree)
    with pytest.raises(CycleError, match="under itself"):
        tree.move(5, 5)
    with pytest.raises(CycleError, match="descendants"):
        tree.move(5, 8)
    with pytest.raises(UnknownNodeError, match="node_id=42"):
        tree.move(42, 1)
    with pytest.raises(UnknownNodeError, match="new_parent_id=42"):
        tree.move(3, 42)
    with pytest.raises(UnknownNodeError, match="node_id=42"):
        tree.rename(42, "x")
    with pytest.raises(TreeError, match="path separator"):
        tree.rename(3, "Phones/Smart")
    with pytest.raises(TreeError, match="non-empty string"):
        tree.rename(3, "")
    for method in ("parent", "children", "ancestors", "descendants"):
        with pytest.raises(UnknownNodeError, match="42"):
            getattr(tree, method)(42)
    with pytest.raises(UnknownNodeError, match="a=42"):
        tree.is_ancestor(42, 3)
    with pytest.raises(UnknownNodeError, match="b=42"):
        tree.is_ancestor(3, 42)
    if hasattr(tree, "graph_ancestors"):
        for method in ("graph_ancestors", "graph_descendants"):
            with pytest.raises(UnknownNodeError, match="42"):
                getattr(tree, method)(42)
    assert snapshot(tree) == before
    # leaves and roots are not unknown
    assert tree.children(8) == [] and tree.descendants(8) == [] and tree.parent(9) is None
    assert tree.ancestors(9) == []


@pytest.mark.parametrize("rows, message", [
    ([(1, None, "a"), (1, None, "b")], "appears twice"),
    ([(1, 7, "a")], "parent_id 7"),
    ([(1, 2, "a"), (2, 1, "b")], "cycle"),
    ([(1, None, "a/b")], "path separator"),
    ([(None, None, "a")], "node_id is None"),
    ([(1, None)], "tuple"),
])
def test_load_refuses_bad_rows(db, rows, message):
    for cls in PATTERNS:
        coll = db[f"rows_{cls.__name__}"]
        with pytest.raises(TreeError, match=message):
            cls(coll).load(rows)
        assert coll.find_one() is None


def test_load_refuses_a_filled_collection(db):
    coll = db["filled"]
    ParentRefs(coll).load(ROWS)
    with pytest.raises(TreeError, match="not empty"):
        AncestorsArray(coll).load(ROWS)
    assert coll.count_documents({}) == len(ROWS)
    with pytest.raises(TypeError, match="collection"):
        ParentRefs("tree")


def test_materialized_paths_need_unique_sibling_names(db):
    with pytest.raises(TreeError, match="unique sibling names"):
        MaterializedPaths(db["dup"]).load([(1, None, "a"), (2, 1, "x"), (3, 1, "x")])
    tree = MaterializedPaths(db["mp"])
    tree.load(ROWS)
    before = snapshot(tree)
    with pytest.raises(TreeError, match="exists already"):
        tree.rename(3, "Cases")  # sibling 4 is called Cases
    assert snapshot(tree) == before
    tree.rename(9, "Audio")  # the root /Audio: no clash with /Electronics/Audio
    before = snapshot(tree)
    with pytest.raises(TreeError, match="exists already"):
        tree.move(5, None)  # /Electronics/Audio would become /Audio
    with pytest.raises(TreeError, match="exists already"):
        tree.rename(5, "Phones")
    assert snapshot(tree) == before


# ---------------------------------------------------------------------------------------------
# $graphLookup: depths, maxDepth, restrictSearchWithMatch, cycles

@pytest.mark.parametrize("cls", [ParentRefs, ChildRefs], ids=lambda c: c.__name__)
def test_graph_walk_depths_and_max_depth(db, cls):
    tree = cls(db[f"g_{cls.__name__}"])
    tree.load(ROWS)
    assert tree.graph_walk(1, up=False) == [(2, 0), (5, 0), (3, 1), (4, 1), (6, 1), (7, 2), (8, 3)]
    assert tree.graph_walk(1, up=False, max_depth=1) == [(2, 0), (5, 0), (3, 1), (4, 1), (6, 1)]
    assert tree.graph_walk(8, up=True) == [(7, 0), (6, 1), (5, 2), (1, 3)]
    assert tree.graph_walk(8, up=True, max_depth=0) == [(7, 0)]
    with pytest.raises(TreeError, match="max_depth"):
        tree.graph_walk(8, up=True, max_depth=-1)
    with count_commands() as c:
        tree.graph_walk(1, up=False)
    assert c.round_trips == 1


@pytest.mark.parametrize("cls", [ParentRefs, ChildRefs], ids=lambda c: c.__name__)
def test_graph_restrict(db, backend, cls):
    tree = cls(db[f"r_{cls.__name__}"])
    tree.load(ROWS)
    got = [n for n, _ in tree.graph_walk(1, up=False, restrict={"name": {"$ne": "Speakers"}})]
    if backend.info.caps.graph_restrict:
        assert sorted(got) == [2, 3, 4, 5]  # the walk stops at Speakers: 6, 7, 8 pruned
    else:  # docs/ENGINES.md: SecantusDB accepts restrictSearchWithMatch and ignores it
        assert backend.info.engine == "SecantusDB"
        assert sorted(got) == [2, 3, 4, 5, 6, 7, 8]


def test_cycle_in_the_data(db):
    coll = db["cycle"]
    coll.insert_many([{"_id": "a", "name": "a", "parent": "b"}, {"_id": "b", "name": "b", "parent": "c"},
                      {"_id": "c", "name": "c", "parent": "a"}, {"_id": "d", "name": "d", "parent": "a"}])
    tree = ParentRefs(coll)
    # $graphLookup remembers what it has visited: it stops, and meets the start again
    assert tree.graph_walk("a", up=True) == [("b", 0), ("c", 1), ("a", 2)]
    assert tree.graph_walk("d", up=True, max_depth=1) == [("a", 0), ("b", 1)]
    with pytest.raises(CycleError, match="cycle"):
        tree.ancestors("d")
    with pytest.raises(CycleError):
        tree.graph_ancestors("d")
    with pytest.raises(CycleError):
        tree.graph_descendants("a")
    with pytest.raises(CycleError):
        tree.descendants("a")


# ---------------------------------------------------------------------------------------------
# the notebook's table and decision rule

def test_operation_costs_and_decision_table(db):
    t = build(db, ROWS)
    patterns = {**t, "ParentRefs + $graphLookup": GraphLookup(t["ParentRefs"])}
    calls = [("parent", (3,)), ("children", (1,)), ("ancestors", (8,)), ("descendants", (1,)),
             ("is_ancestor", (1, 8)), ("move", (5, 4)), ("rename", (2, "Mobile"))]
    before = {k: snapshot(v) for k, v in t.items()}
    table = operation_costs(patterns, calls)
    assert table["same result"].all()
    assert {k: snapshot(v) for k, v in t.items()} == before, "moves and renames must be undone"
    assert len(table) == 5 * 7 + 2
    assert table.loc[("ancestors", "AncestorsArray"), "round trips"] == 1
    assert table.loc[("rename", "MaterializedPaths"), "docs written"] == 3
    assert table.loc[("rename", "MaterializedPaths"), "index keys written"] == 6  # the path index: out, in
    assert table.loc[("rename", "AncestorsWithNames"), "index keys written"] == 0  # no index holds a name
    with pytest.raises(TypeError):
        GraphLookup(t["AncestorsArray"])


BREADCRUMB_FORMS = {("ParentRefs", "one string ($reduce)"): 1, ("ChildRefs", "one string ($reduce)"): 1,
                    ("AncestorsArray", "one string ($lookup, $reduce)"): 1, ("ParentRefs", "one $graphLookup"): 1, ("ParentRefs", "one query per level"): 5,
                    ("ChildRefs", "one $graphLookup"): 1, ("ChildRefs", "one query per level"): 6,
                    ("AncestorsArray", "one $lookup"): 1, ("AncestorsArray", "two queries"): 2,
                    ("AncestorsWithNames", "one string ($reduce)"): 1,
                    ("AncestorsWithNames", "find_one, the names"): 1, ("MaterializedPaths", "as measured"): 1}


def test_breadcrumbs_and_menus_carry_names_in_every_form(db):
    """The workload's reads are what a page shows: names. Each form gives the same names; the
    competent forms take one round trip (the loops one per level)."""
    t = build(db, ROWS)
    want = ["Electronics", "Audio", "Speakers", "Smart Speakers", "Mini"]
    for name, tree in t.items():
        for label, fn in tree.forms_of("breadcrumbs").items():
            assert fn(8) == want and fn(1) == ["Electronics"], (name, label)
            assert costs(fn, 8)[0] == BREADCRUMB_FORMS[(name, label)], (name, label)
        for label, fn in tree.forms_of("menu").items():
            assert fn(1) == [(2, "Phones"), (5, "Audio")] and fn(8) == [], (name, label)
            assert costs(fn, 1)[0] <= (2 if name == "MaterializedPaths" or label == "two queries" else 1), (name, label)
    assert sorted(BREADCRUMB_FORMS) == sorted((n, f) for n, tr in t.items() for f in tr.forms_of("breadcrumbs"))
    assert all(key in TEACHING for key in [("breadcrumbs", "one query per level"), ("breadcrumbs", "two queries")])
    with pytest.raises(UnknownNodeError):
        t["AncestorsArray"].lookup_breadcrumbs(99)
    with pytest.raises(UnknownNodeError):
        t["ChildRefs"].lookup_menu(99)


def test_add_derives_the_way_up_from_the_parent_and_a_merge_write_is_billed(db, backend):
    """Every form of 'add a category' stores what a load would have (the arrays and paths derive the
    child's way up from its parent: one aggregate ending in $merge, or read the parent then insert);
    the bill counts the document a $merge writes (the command counter sees none) and undoes the add."""
    t = {**build(db, ROWS), "PathInLink": PathInLink(db[f"t{uuid.uuid4().hex[:8]}_pil"])}
    t["PathInLink"].load(ROWS)
    want = build(db, [*ROWS, (10, 6, "Tiny")])
    for name, tree in t.items():
        for label, fn in tree.forms_of("add").items():
            with count_commands() as c:
                fn(10, 6, "Tiny")
            two = label.startswith("read") or (name, label) == ("ChildRefs", "one bulk_write")  # an insert, then an update
            assert c.round_trips == (2 if two else 1), (name, label)
            if name in want:
                assert snapshot(tree) == snapshot(want[name]), (name, label)
            assert tree.descendants(5) == [6, 7, 8, 10] and tree.ancestors(10) == [1, 5, 6]
            tree._unadd(10, 6)
    assert t["PathInLink"].menu(6) == [(7, "Smart Speakers")] and t["PathInLink"].menu_by_regex(6) == [(7, "Smart Speakers")]
    before = snapshot(t["AncestorsArray"])
    designs = workload_costs(t, {"add": ("add", (10, 6, "Tiny"))}, examined=backend.info.caps.explain)
    assert snapshot(t["AncestorsArray"]) == before, "a measured add must be undone"
    merge = designs["AncestorsArray"]["add"].forms["one aggregate, $merge"]
    assert (merge["round trips"], merge["docs written"]) == (1, 1)  # the $merge's document, billed
    assert merge["index keys written"] == 5  # _id, parent, and one ancestors key per ancestor (1, 5, 6)


def test_workload_costs_bill_each_design_at_its_competent_form(db, backend):
    t = build(db, ROWS)
    shop = Workload("tree", (Operation("ancestors", "read", 600, "fast", "breadcrumbs", "assumption: test"),
                             Operation("descendants", "read", 250, "fast", "ids", "assumption: test"),
                             Operation("children", "read", 150, "fast", "menu", "assumption: test"),
                             Operation("rename", "write", 2, "slow", "nothing", "assumption: test")))
    calls = {"ancestors": ("breadcrumbs", (8,)), "descendants": ("descendants", (5,)), "children": ("menu", (1,)),
             "rename": ("rename", (5, "Sound"))}
    before = {k: snapshot(v) for k, v in t.items()}
    designs = workload_costs(t, calls, examined=backend.info.caps.explain)
    assert {k: snapshot(v) for k, v in t.items()} == before, "a measured write must be undone"
    assert isinstance(designs["ParentRefs"]["ancestors"], Forms)
    billed = shop.billed(designs)
    # every design's reads billed in the reply shape that sends fewest bytes (one document or string)
    assert {**billed["ParentRefs"], "children": None} == {"ancestors": "one string ($reduce)", "rename": "as measured",
                                                          "descendants": "one $graphLookup, one array", "children": None}
    menu = shop.contest(designs).loc[("ParentRefs", "children")]  # two children: the cheaper reply shape by bytes, whichever it is
    assert menu.loc[billed["ParentRefs"]["children"], "bytes returned"] == menu["bytes returned"].min()
    assert billed["AncestorsArray"]["ancestors"] == "one string ($lookup, $reduce)"
    assert billed["ChildRefs"]["children"] == "one $lookup, one document"
    contest = shop.contest(designs)
    loop = contest.loc[("ParentRefs", "ancestors", "one query per level")]
    assert loop["billed"] == "counter-example" and loop["note"].startswith("the obvious loop")
    daily = shop.weigh(designs)
    assert "index keys written / day" in daily.columns  # every write carries its index keys
    assert ("docs examined / day" in daily.columns) == backend.info.caps.explain
    rename = contest.xs("rename", level="operation")
    assert rename.loc[("AncestorsWithNames", "one bulk_write in a transaction"), "docs written"] == 4  # 5 and 3 below
    assert rename.loc[("AncestorsWithNames", "one bulk_write in a transaction"), "index keys written"] == 0
    # the same bulk alone: one round trip, the same writes (display copies may be a moment stale)
    alone = rename.loc[("AncestorsWithNames", "one bulk_write, no transaction")]
    assert (alone["round trips"], alone["docs written"], alone["index keys written"]) == (1, 4, 0)
    assert rename.loc[("MaterializedPaths", "the unique index checks"), "index keys written"] == 8
    # the best forms of the writes: one bulk_write, then the commit (without transactions: a mark before, an unmark after)
    tx = bool(backend.info.caps.transactions)
    assert rename.loc[("AncestorsWithNames", "one bulk_write in a transaction"), "round trips"] == (2 if tx else 3)
    assert rename.loc[("AncestorsWithNames", "one command a write"), "round trips"] == (3 if tx else 4)
    # the path's read, the one update, the commit (without: the new path checked first, and the mark)
    # (where the engine cannot rewrite paths on the server, the labelled fallback reads the subtree first)
    fallback = int(not backend.info.caps.update_pipeline_strings)
    assert rename.loc[("MaterializedPaths", "the unique index checks"), "round trips"] == (3 if tx else 5) + fallback
    assert rename.loc[("MaterializedPaths", "a query checks first"), "round trips"] == (4 if tx else 5) + fallback
    assert billed["AncestorsWithNames"]["rename"] == "one bulk_write, no transaction"
    assert billed["AncestorsWithNames"]["ancestors"] == "one string ($reduce)"
    crumbs = contest.sort_index().loc[("AncestorsWithNames", "ancestors")]
    assert crumbs.loc["one string ($reduce)", "bytes returned"] < crumbs.loc["find_one, the names", "bytes returned"]
    rule = decision_table(shop, designs)
    assert "AncestorsWithNames" in rule.loc["ancestors", "choose"].split(" or ")  # (every string ties on bytes)
    assert "ParentRefs" in rule.loc["rename", "choose"].split(" or ")
    t["AncestorsArray"].lookup_breadcrumbs = lambda node: ["wrong"]  # a form that answers something else
    with pytest.raises(TreeError, match="differently"):
        workload_costs({"AncestorsArray": t["AncestorsArray"], "MaterializedPaths": t["MaterializedPaths"]},
                       {"ancestors": ("breadcrumbs", (8,))})


def test_no_read_leaves_its_first_batch_to_the_driver(db):
    """Every read sets its batch size: a subtree of 150 nodes comes back in one round trip."""
    rows = [(0, None, "root")] + [(i, 0, f"c{i}") for i in range(1, 151)]
    t = build(db, rows)
    for name, tree in t.items():
        for method in ("descendants", "menu", "children"):
            for label, fn in tree.forms_of(method).items():
                with count_commands() as c:
                    assert len(fn(0)) == 150
                assert c.default_batch_getmores == 0 and "getMore" not in c.commands, (name, method, label)
    assert costs(t["AncestorsArray"].descendants, 0)[0] == 1
    assert costs(t["AncestorsWithNames"].descendants, 0)[0] == 1
    assert costs(t["MaterializedPaths"].descendants, 0)[0] == 2


def test_a_prefix_regex_is_explained_as_its_key_range():
    assert _prefix("^/Electronics/") == "/Electronics/"
    assert _prefix("^/A\\.b\\+/[^/]+$") == "/A.b+/"
    assert _prefix("^/Ab?c") == "/A" and _prefix("abc") is None and _prefix("^(x)") is None
    assert _as_ranges({"path": {"$regex": "^/a/"}}) == {"path": {"$gte": "/a/", "$lt": "/a0"}}
    assert _as_ranges({"$or": [{"path": "/a"}, {"path": {"$regex": "^/a/"}}]}) == \
        {"$or": [{"path": "/a"}, {"path": {"$gte": "/a/", "$lt": "/a0"}}]}
    assert _as_ranges({"parent": 3}) == {"parent": 3}


def test_shape_sizes_and_disagreements(db):
    assert tree_shape(ROWS) == {"nodes": 9, "roots": 2, "leaves": 4, "max depth": 4, "max children": 2}
    with pytest.raises(TreeError):
        tree_shape([(1, 2, "a")])
    t = build(db, ROWS)
    assert t["AncestorsArray"].subtree_sizes() == {1: 7, 2: 2, 5: 3, 6: 2, 7: 1}
    assert disagreements(t, [n for n, *_ in ROWS]) == []
    t["ParentRefs"].collection.update_one({"_id": 8}, {"$set": {"parent": 6}})  # corrupt one copy
    got = disagreements(t, [6, 7, 8])
    assert ("parent", 8, "ChildRefs") in got and ("children", 6, "ChildRefs") in got


def test_names_with_regex_characters_and_string_ids(db):
    rows = [("books", None, "Books (all)"), ("cpp", "books", "C++"), ("cpp2", "cpp", "C++ 2.0"),
            ("c", "books", "C"), ("dot", "c", "a.b*[x]$"), ("other", None, "Books")]
    ref = Reference(rows)
    trees_ = build(db, rows)
    for tree in trees_.values():
        for n, *_ in rows:
            assert answers(tree, n) == ref.answers(n), (tree, n)
    mp = trees_["MaterializedPaths"]
    mp.rename("cpp", "C+")
    assert mp.collection.find_one({"_id": "cpp2"})["path"] == "/Books (all)/C+/C++ 2.0"
    assert mp.descendants("c") == ["dot"] and mp.children("books") == ["c", "cpp"]


def test_costs_name_what_they_count_and_the_server_work(db, backend):
    """``docs returned`` counts documents sent to the client, ``nodes returned`` the nodes they
    carry; where the engine explains, keys and documents examined come from the explain of the
    reads sent (none for $graphLookup, whose explain does not count its own lookups)."""
    t = build(db, ROWS)
    patterns = {"AncestorsArray": t["AncestorsArray"], "MaterializedPaths": t["MaterializedPaths"],
                "ParentRefs + $graphLookup": GraphLookup(t["ParentRefs"])}
    caps = backend.info.caps
    patterns["ParentRefs"] = t["ParentRefs"]
    patterns["AncestorsWithNames"] = t["AncestorsWithNames"]
    table = operation_costs(patterns, [("descendants", (1,)), ("breadcrumbs", (8,))], examined=caps.explain)
    below = len(t["ParentRefs"].descendants(1))
    graph = table.loc[("descendants", "ParentRefs + $graphLookup")]
    assert (graph["round trips"], graph["docs returned"], graph["nodes returned"]) == (1, 1, below + 1)
    anc = table.loc[("descendants", "AncestorsArray")]
    assert anc["docs returned"] == anc["nodes returned"] == below
    if not caps.explain:
        assert "keys examined" not in table.columns
        return
    # the $graphLookup's own lookups are counted: its $match, then the same indexed reads the loop sends
    loop = table.loc[("descendants", "ParentRefs")]
    assert graph["docs examined"] == 1 + loop["docs examined"] == 1 + below
    assert (anc["keys examined"], anc["docs examined"]) == (below, below)  # one index range scan
    paths = table.loc[("descendants", "MaterializedPaths")]
    assert paths["docs examined"] == 1 + below  # the path, then the prefix's key range (as a real MongoDB scans)
    crumbs = table.xs("breadcrumbs", level="operation")["docs examined"]
    assert crumbs["AncestorsWithNames"] == crumbs["MaterializedPaths"] == 1  # the node holds every name
    assert crumbs["AncestorsArray"] == 1 + 4  # the node, then its 4 ancestors by _id (two queries)
    assert crumbs["ParentRefs + $graphLookup"] == 1 + 4  # the node, then one _id lookup per level


def test_server_work_counts_lookups_and_the_indexed_part_of_a_write(db, backend):
    if not backend.info.caps.explain:
        pytest.skip("this engine cannot explain")
    t = build(db, ROWS)
    for name, method, node, docs in (("AncestorsArray", "lookup_breadcrumbs", 8, 1 + 4),
                                     ("ChildRefs", "lookup_menu", 1, 1 + 2),
                                     ("ChildRefs", "graph_breadcrumbs", 8, 1 + 4)):
        with count_commands(keep_commands=True) as c:
            getattr(t[name], method)(node)
        assert server_work(db, c.command_documents)[1] == docs, (name, method)
    # a move's update of the subtree: the descendants the ancestors index finds, never the collection
    with count_commands(keep_commands=True) as c:
        t["AncestorsArray"].move(5, 4)
    t["AncestorsArray"].move(5, 1)
    assert server_work(db, c.command_documents)[1] <= 2 + 1 + 3 + 1


def test_server_work_counts_each_nested_join_once_per_document_the_sub_pipeline_found(db, backend):
    if not backend.info.caps.explain:
        pytest.skip("this engine cannot explain")
    db["nj_outer"].insert_one({"_id": 1, "lo": 2})
    db["nj_inner"].insert_many([{"_id": i, "c": i} for i in range(6)])  # a field the joins also query
    db["nj_items"].insert_many([{"_id": i, "c": i % 6} for i in range(30)])
    db["nj_items"].create_index("c")
    join = {"$lookup": {"from": "nj_items", "localField": "_id", "foreignField": "c", "as": "items"}}

    def work(n_joins):
        pipeline = [{"$match": {"_id": 1}},
                    {"$lookup": {"from": "nj_inner", "let": {"lo": "$lo"}, "as": "found",
                                 "pipeline": [{"$match": {"$expr": {"$gte": ["$_id", "$$lo"]}}}] + [join] * n_joins}}]
        command = {"aggregate": "nj_outer", "pipeline": pipeline}
        return server_work(db, [command])

    none, one, two, three = (work(n) for n in range(4))
    step = (one[0] - none[0], one[1] - none[1])
    assert step[1] > 0  # each join reads the items of the 4 inner documents found
    assert (two[0] - one[0], two[1] - one[1]) == step == (three[0] - two[0], three[1] - two[1])


# ---------------------------------------------------------------------------------------------
# ids are values, never expressions or operators

def test_dollar_ids_are_literals_in_every_pattern(db):
    rows = [("$root", None, "Root"), ("$$ROOT", "$root", "Mid"), ("$a.b", "$$ROOT", "Leaf"),
            ("x", "$root", "X"), ("$literal", "x", "Y")]
    ref = Reference(rows)
    trees_ = build(db, rows)
    for label, tree in trees_.items():
        tree.move("$$ROOT", "x")  # the subtree below gets the new ancestors from a pipeline
        ref.parent["$$ROOT"] = "x"
        for n, *_ in rows:
            assert answers(tree, n) == ref.answers(n), (label, n)
        if hasattr(tree, "graph_ancestors"):
            assert tree.graph_ancestors("$a.b") == ref.ancestors("$a.b")
            assert tree.graph_descendants("$root") == ref.descendants("$root")
        tree.move("$$ROOT", "$root")
        ref.parent["$$ROOT"] = "$root"
    stored = trees_["AncestorsArray"].collection.find_one({"_id": "$a.b"})
    assert stored["ancestors"] == ["$root", "$$ROOT"]  # never None (a field path read as missing)


@pytest.mark.parametrize("bad", [{"$gt": 0}, {"$ne": None}, {"$in": [1, 2]}, {"$regex": "."}, re.compile("."),
                                 bson.regex.Regex(".")])
def test_an_operator_is_not_a_node_id(db, bad):
    for cls in PATTERNS:
        tree = cls(db[f"op_{cls.__name__}"])
        tree.load(ROWS)
        before = snapshot(tree)
        calls = [("parent", (bad,)), ("children", (bad,)), ("ancestors", (bad,)), ("descendants", (bad,)),
                 ("move", (bad, 1)), ("move", (3, bad)), ("rename", (bad, "x")), ("is_ancestor", (bad, 3)),
                 ("is_ancestor", (3, bad))]
        if hasattr(tree, "graph_ancestors"):
            calls += [("graph_ancestors", (bad,)), ("graph_descendants", (bad,)), ("graph_walk", (bad,))]
        for method, args in calls:
            kwargs = {"up": True} if method == "graph_walk" else {}
            with pytest.raises(TreeError, match="operator"):
                getattr(tree, method)(*args, **kwargs)
        assert snapshot(tree) == before
        tree.collection.drop()


# ---------------------------------------------------------------------------------------------
# trees deeper than an engine's $graphLookup depth or regex length

def test_a_deep_chain_gets_the_right_answer_on_every_engine(db, backend):
    depth = 150  # SecantusDB's $graphLookup stops at 100 levels; its regexes at 1,000 characters
    rows = [(0, None, "n0" + "x" * 10)] + [(i, i - 1, f"n{i}" + "x" * 10) for i in range(1, depth + 1)]
    ref = Reference(rows)
    trees_ = build(db, rows)
    leaf, root = depth, 0
    for label, tree in trees_.items():
        assert tree.ancestors(leaf) == list(range(depth)), label
        assert tree.descendants(root) == list(range(1, depth + 1)), label
        if hasattr(tree, "graph_ancestors"):
            assert tree.graph_ancestors(leaf) == list(range(depth)), label  # never a false CycleError
            assert tree.graph_descendants(root) == list(range(1, depth + 1)), label
            walk = tree.graph_walk(root, up=False)
            assert walk == [(i, i - 1) for i in range(1, depth + 1)]
            assert tree.graph_walk(root, up=False, max_depth=120)[-1] == (121, 120)
            if backend.info.caps.graph_restrict:  # (SecantusDB ignores restrictSearchWithMatch: a probe says so)
                assert len(tree.graph_walk(leaf, up=True, restrict={"_id": {"$gte": 20}})) == depth - 20
    mp = trees_["MaterializedPaths"]
    assert len(mp._path(leaf)) > 1_000
    mp.move(75, 3)  # rewrites 76 paths, each over 1,000 characters: beyond SecantusDB's regex cap
    ref.parent[75] = 3
    for n in (3, 74, 75, 76, leaf):
        assert answers(mp, n) == ref.answers(n), n
    assert mp.children(74) == [] and mp.children(3) == [4, 75]


def test_a_true_cycle_deeper_than_the_engine_limit_is_still_a_cycle(db):
    n = 130
    coll = db["deep_cycle"]
    coll.insert_many([{"_id": i, "name": f"n{i}", "parent": (i - 1) % n} for i in range(n)])
    tree = ParentRefs(coll)
    with pytest.raises(CycleError):
        tree.graph_ancestors(5)
    with pytest.raises(CycleError):
        tree.graph_descendants(5)


# ---------------------------------------------------------------------------------------------
# a mover process killed half-way: a transaction leaves nothing; without one, the mark says what
# was left half-done and repair() finishes it

_MOVER = r"""
import json, sys, time
import pymongo
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from helpers import trees

uri, db_name, coll_name, pattern, transaction, stop_at, node, new_parent, method = json.loads(sys.argv[1])
writes = []

def pause(session):
    lsid = None if session is None else session.session_id["id"].hex()
    print(json.dumps({"paused after": len(writes), "lsid": lsid}), flush=True)
    time.sleep(600)  # killed here

def counted(name):
    real = getattr(Collection, name)
    def write(self, *args, **kwargs):
        if len(writes) + 1 == stop_at:
            pause(kwargs.get("session"))
        writes.append(name)
        return real(self, *args, **kwargs)
    return write

for name in ("update_one", "update_many", "bulk_write"):
    setattr(Collection, name, counted(name))
real_commit = ClientSession.commit_transaction
def commit(self):
    pause(self)
ClientSession.commit_transaction = commit

client = pymongo.MongoClient(uri)
tree = getattr(trees, pattern)(client[db_name][coll_name], transaction=transaction)
getattr(tree, method)(node, new_parent)
print(json.dumps({"finished": len(writes)}), flush=True)
"""


def _kill_mover(uri, db_name, tree, transaction, stop_at, node, new_parent):
    """Run ``tree.move(node, new_parent)`` in another process, stop it before its write number
    ``stop_at`` (or before the commit), kill it; return what it printed."""
    import json
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    method = "move_in_steps" if hasattr(tree, "move_in_steps") else "move"  # one command a write: a crash between
    args = json.dumps([uri, db_name, tree.collection.name, type(tree).__name__, transaction, stop_at, node,
                       new_parent, method])
    proc = subprocess.Popen([sys.executable, "-c", _MOVER, args], stdout=subprocess.PIPE, text=True,
                            cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(root)})
    try:
        line = proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert line, "the mover process printed nothing"
    return json.loads(line)


@pytest.fixture
def server_client(test_uri):
    import pymongo

    client = pymongo.MongoClient(test_uri)
    name = f"wbtest_{uuid.uuid4().hex[:10]}"
    yield client, client[name], test_uri
    client.drop_database(name)
    client.close()


# moving 5 (with 6, 7, 8 below it) under 3: the write to stop before, and what the tree looks like then
_HALF_DONE = {ChildRefs: 3,        # mark, pull from 1 | push onto 3, unmark: 5 has no parent
              AncestorsArray: 3,   # mark, set 5's ancestors | 6, 7, 8 keep the old ones, unmark
              MaterializedPaths: 2}  # mark | the one pipeline update, unmark


@pytest.mark.parametrize("cls", list(_HALF_DONE), ids=lambda c: c.__name__)
def test_a_killed_mover_leaves_a_mark_and_repair_finishes_it(server_client, cls):
    client, db, uri = server_client
    tree = cls(db[f"kill_{cls.__name__}"], transaction=False)
    tree.load(ROWS)
    ref, moved = Reference(ROWS), Reference(ROWS)
    moved.parent[5] = 3
    said = _kill_mover(uri, db.name, tree, False, _HALF_DONE[cls], 5, 3)
    assert said["paused after"] == _HALF_DONE[cls] - 1
    assert [d["_id"] for d in tree.interrupted()] == [5]
    if cls is MaterializedPaths:
        # the server may stop a multi-document update part-way too: rewrite two of the four by hand
        tree.collection.update_many({"_id": {"$in": [5, 7]}}, [{"$set": {"path": {"$concat": [
            "/Electronics/Phones/Smartphones", {"$substrCP": ["$path", len("/Electronics"),
                                                              {"$subtract": [{"$strLenCP": "$path"}, 12]}]}]}}}])
    def seen(n):
        try:
            return answers(tree, n)
        except TreeError as e:  # a path whose parent path is gone: the pattern says the data is broken
            return str(e)

    wrong = [n for n, *_ in ROWS if seen(n) != moved.answers(n)]
    assert wrong and any(seen(n) != ref.answers(n) for n, *_ in ROWS), "not half-done"
    assert tree.repair() == 1
    assert tree.interrupted() == []
    for n, *_ in ROWS:
        assert answers(tree, n) == moved.answers(n), f"{tree}, node {n} after repair"
    assert tree.collection.count_documents({"pending": {"$exists": True}}) == 0


@pytest.mark.parametrize("cls", list(_HALF_DONE), ids=lambda c: c.__name__)
def test_a_mover_killed_in_its_transaction_leaves_nothing(server_client, cls):
    client, db, uri = server_client
    from helpers.capabilities import probe
    if not probe(db, False, ("transactions",))["transactions"]:
        pytest.skip("this server has no transactions (a standalone mongod)")
    tree = cls(db[f"killtx_{cls.__name__}"], transaction=True)
    tree.load(ROWS)
    before = snapshot(tree)
    said = _kill_mover(uri, db.name, tree, True, 0, 5, 3)  # stop before the commit
    assert said["lsid"], said
    assert snapshot(tree) == before, "a killed transaction's writes were seen"
    assert tree.interrupted() == []
    # the dead client's transaction holds its documents until the server aborts it: end it now
    client.admin.command("killSessions", [{"id": bson.Binary(bytes.fromhex(said["lsid"]), 4)}])
    tree.move(5, 3)
    ref = Reference(ROWS)
    ref.parent[5] = 3
    for n, *_ in ROWS:
        assert answers(tree, n) == ref.answers(n), f"{tree}, node {n}"


def test_a_path_rewrite_ships_no_subtree_where_the_engine_can(db, backend):
    rows = [(0, None, "root"), (1, 0, "A"), (2, 0, "B")] + [(10 + i, 1, f"c{i}") for i in range(60)]
    tree = MaterializedPaths(db["paths"])
    tree.load(rows)
    for fn, args in ((tree.rename, (1, "A2")), (tree.move, (1, 2))):
        with count_commands() as c:
            fn(*args)
        assert c.docs_written == 61
        if backend.info.caps.update_pipeline_strings:
            assert c.docs_returned <= 2 and c.round_trips <= 4, (fn.__name__, c.docs_returned, c.round_trips)
        else:  # the labelled fallback: the subtree travels to the client
            assert c.docs_returned >= 61
    assert tree.collection.count_documents({"path": {"$regex": "^/root/B/A2/c"}}) == 60


@pytest.mark.parametrize("cls", PATTERNS, ids=lambda c: c.__name__)
def test_moves_without_a_transaction_leave_no_mark(db, cls):
    tree = cls(db[f"nomark_{cls.__name__}"], transaction=False)
    tree.load(ROWS)
    ref = Reference(ROWS)
    for node, new_parent in ((5, 3), (2, 9), (5, None), (2, 1)):
        tree.move(node, new_parent)
        ref.parent[node] = new_parent
    tree.rename(2, "Mobile")
    assert tree.interrupted() == [] and tree.repair() == 0
    for n, *_ in ROWS:
        assert answers(tree, n) == ref.answers(n), f"{tree}, node {n}"



@pytest.mark.parametrize("transaction", [False, True])
def test_interrupt_leaves_what_a_crash_leaves(db, backend, transaction):
    if transaction and not backend.info.caps.transactions:
        pytest.skip("no transactions on this engine")
    moved = Reference(ROWS)
    moved.parent[5] = 3
    for cls, last in ((ChildRefs, 2), (AncestorsArray, 2), (MaterializedPaths, 1)):
        tree = cls(db[f"int_{cls.__name__}_{transaction}"], transaction=transaction)
        tree.load(ROWS)
        before = snapshot(tree)
        method = "move" if cls is MaterializedPaths else "move_in_steps"  # one command a write, to crash between
        assert interrupt(tree, method, 5, 3, after=last - 1 if transaction else last)
        if transaction:
            assert snapshot(tree) == before and tree.interrupted() == []
        else:
            assert [d["_id"] for d in tree.interrupted()] == [5] and snapshot(tree) != before
        tree.repair()
        if transaction:
            tree.move(5, 3)
        for n, *_ in ROWS:
            assert answers(tree, n) == moved.answers(n), f"{tree}, node {n}"
    assert not interrupt(tree, "move", 5, 3, after=5)  # nothing left to do: it finishes


def test_writes_in_their_best_forms_and_a_taken_path_refused(db, backend):
    """A move or rename that writes several documents sends them as one bulk_write (the steps form:
    one command a write, the same documents); in a transaction the unique index refuses a taken
    path and nothing changes."""
    tx = bool(backend.info.caps.transactions)
    for cls in (ChildRefs, AncestorsArray, AncestorsWithNames):
        best, steps = build(db, ROWS)[cls.__name__], build(db, ROWS)[cls.__name__]
        one, each = costs(best.move, 5, 3), costs(steps.move_in_steps, 5, 3)
        assert one[2] == each[2] and one[0] == each[0] - 1, (cls, one, each)  # two updates, one command
        assert snapshot(best) == snapshot(steps)
        assert one[0] == (3 if tx else 4), (cls, one)  # the check's read, the bulk_write, the commit (or mark, unmark)
    paths = build(db, ROWS)["MaterializedPaths"]
    before = snapshot(paths)
    with pytest.raises(TreeError, match="exists already"):
        paths.rename(3, "Cases")  # a sibling's name: the path /Electronics/Phones/Cases is taken
    with pytest.raises(TreeError, match="exists already"):
        paths.rename_checking_first(3, "Cases")
    assert snapshot(paths) == before and paths.interrupted() == []
    with count_commands() as c:
        paths.rename(3, "Phones 2")
    assert c.round_trips == (3 if tx else 5) + int(not backend.info.caps.update_pipeline_strings)


def test_every_form_of_every_read_answers_alike_and_the_compact_ones_send_one_document(db):
    """Each design's forms of breadcrumbs, descendants and menu give the same answer on every node (a
    root, a leaf, a middle one); a form whose reply is one document or string returns one document."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    t = build(db, ROWS, prefix)
    for cls in (AncestorsWithNamesByParent, PathInLink):
        t[cls.__name__] = cls(db[f"{prefix}_{cls.__name__}x"])
        t[cls.__name__].load(ROWS)
    for method in ("breadcrumbs", "descendants", "menu"):
        for node in (1, 5, 8, 9):
            answers = {}
            for name, tree in t.items():
                for label, fn in tree.forms_of(method).items():
                    with count_commands() as c:
                        answers[(name, label)] = fn(node)
                    if ("one document" in label or "one string" in label or "one array" in label) and node in (1, 5):
                        assert c.docs_returned == 1, (name, label, node)
            assert len({repr(a) for a in answers.values()}) == 1, (method, node, answers)
    assert costs(t["MaterializedPaths"].lookup_menu, 1)[0] == 1 and costs(t["MaterializedPaths"].menu, 1)[0] == 2
    with pytest.raises(UnknownNodeError):
        t["MaterializedPaths"].lookup_menu(99)
    with pytest.raises(UnknownNodeError):
        t["AncestorsArray"].compact_menu(99)
    with pytest.raises(UnknownNodeError):
        t["ParentRefs"].string_breadcrumbs(99)


def test_the_array_with_names_indexed_on_parent_alone(db):
    """AncestorsWithNamesByParent: the same documents and answers as AncestorsWithNames without the
    ancestors._id index; its category page is one round trip ($graphLookup from the children)."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    lean, ref = AncestorsWithNamesByParent(db[f"{prefix}_lean"]), build(db, ROWS)["AncestorsWithNames"]
    lean.load(ROWS)
    assert sorted(lean.collection.index_information()) == ["_id_", "parent_1"]
    assert snapshot(lean) == snapshot(ref)
    for node in (1, 2, 5, 8, 9):  # a leaf: a second read, to tell it from an unknown id (as there)
        assert costs(lean.descendants, node)[0] == (1 if node in (1, 2, 5) else 2)
        assert lean.descendants(node) == ref.descendants(node)
    with pytest.raises(UnknownNodeError):
        lean.descendants(99)
    lean.move(5, 3)
    lean.rename(2, "Mobile")
    ref.move(5, 3)
    ref.rename(2, "Mobile")
    assert snapshot(lean) == snapshot(ref) and lean.descendants(2) == [3, 4, 5, 6, 7, 8]


def test_the_path_in_the_link_reads_no_path_first(db, backend):
    """PathInLink answers a category page and a menu in one query each from the link's path, and
    keeps its links right through a move and a rename."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    tree = PathInLink(db[f"{prefix}_links"])
    tree.load(ROWS)
    ref = build(db, ROWS)["MaterializedPaths"]
    assert costs(tree.descendants, 1) == (1, 7, 0) and tree.descendants(1) == ref.descendants(1)
    assert costs(tree.menu, 1)[0] == 1 and tree.menu(1) == ref.menu(1) == [(2, "Phones"), (5, "Audio")]
    assert tree.breadcrumbs(8) == ref.breadcrumbs(8) and costs(tree.breadcrumbs, 8)[0] == 1
    assert tree.menu(1) == [(2, "Phones"), (5, "Audio")] and tree.menu_by_regex(1) == tree.menu(1)
    tree.move(5, 3)
    tree.rename(2, "Mobile")
    assert tree.links[8] == "/Electronics/Mobile/Smartphones/Audio/Speakers/Smart Speakers/Mini"
    assert tree.links == {d["_id"]: d["path"] for d in tree.collection.find({}, {"path": 1})}
    assert tree.descendants(2) == [3, 4, 5, 6, 7, 8]
    # the parent each document holds follows the move (the node's own, no other), as the menu reads it
    assert {d["_id"]: d["parent"] for d in tree.collection.find({}, {"parent": 1})} == \
        {1: None, 2: 1, 3: 2, 4: 2, 5: 3, 6: 5, 7: 6, 8: 7, 9: None}
    assert tree.menu(3) == [(5, "Audio")] and tree.menu(1) == [(2, "Mobile")]
    tree.move(5, None)
    assert tree.collection.find_one({"_id": 5})["parent"] is None and tree.menu(3) == []
    assert sorted(tree.collection.index_information()) == ["_id_", "parent_1", "path_1"]
    with pytest.raises(UnknownNodeError):
        tree.menu(99)
    again = PathInLink(tree.collection)  # built on a loaded collection: its links are read once
    assert again.links == tree.links


def test_a_walk_without_the_index_on_its_connect_to_field_is_a_counter_example_never_billed(db, backend):
    """The bill measures each reference pattern's walk once more with the index on its
    ``connectToField`` dropped (then built again): the same answer and round trip, each level's
    lookup a collection scan where the engine explains, on a layout of its own, so never billed."""
    t = build(db, ROWS)
    calls = {"ancestors": ("breadcrumbs", (8,)), "descendants": ("descendants", (1,)), "children": ("menu", (1,))}
    shop = Workload("tree", (Operation("ancestors", "read", 600, "fast", "breadcrumbs", "assumption: test"),
                             Operation("descendants", "read", 250, "fast", "ids", "assumption: test"),
                             Operation("children", "read", 150, "fast", "menu", "assumption: test")))
    refs = {k: t[k] for k in ("ParentRefs", "ChildRefs")}
    before = {k: sorted(v.collection.index_information()) for k, v in refs.items()}
    designs = workload_costs(refs, calls, examined=backend.info.caps.explain)
    assert {k: sorted(v.collection.index_information()) for k, v in refs.items()} == before  # built again
    contest = shop.contest(designs)
    for design, op, label, indexed in (
            ("ParentRefs", "descendants", "one $graphLookup, one array, no index on parent", "one $graphLookup, one array"),
            ("ChildRefs", "ancestors", "one string ($reduce), no index on children", "one string ($reduce)")):
        bare, best = contest.loc[(design, op, label)], contest.loc[(design, op, indexed)]
        assert bare["billed"] == "counter-example" and bare["note"].startswith("the same walk with the index")
        assert (bare["round trips"], bare["bytes returned"]) == (best["round trips"], best["bytes returned"])
        assert designs[design][op].layouts[label] != designs[design][op].layouts[indexed]
        if backend.info.caps.explain:  # one scan of the 9 documents per level, after the start's _id lookup
            levels = 5
            assert bare["docs examined"] == 1 + levels * len(ROWS) > best["docs examined"]
    # the index stays part of the design: every other form is measured with it, on its layout
    assert shop.billed(designs)["ParentRefs"]["descendants"] == "one $graphLookup, one array"


def test_server_work_counts_an_id_in_update_at_its_index_points_and_says_when_it_cannot_explain(db, backend):
    """An ``update_many({_id: {$in: ids}, <the array's condition>})`` finds its documents by the
    ``_id`` index, one point per id, as a real MongoDB plans it (SecantusDB scans the collection for
    an indexed ``$in`` joined to another condition: docs/ENGINES.md); an engine that cannot explain
    gets a TreeError, never a count of 0."""
    t = build(db, ROWS)
    tree = t["AncestorsWithNames"]
    with count_commands(keep_commands=True) as c:
        tree.collection.update_many({"_id": {"$in": [6, 7, 8]}, "ancestors._id": 5}, {"$set": {"seen": 1}})
    if not backend.info.caps.explain:
        with pytest.raises(TreeError, match="cannot explain"):
            server_work(db, c.command_documents)
        return
    keys, docs = server_work(db, c.command_documents)
    assert docs == 3 < len(ROWS) and keys <= 3 + 2  # three _id points (an engine may count a key past each)


def test_the_array_without_its_index_updates_a_walked_subtree_by_id_in(db, backend):
    """AncestorsWithNamesByParent's ``_id $in`` forms walk the subtree over ``parent`` first and
    update the descendants by ``_id``: the same documents as the scan's forms (and as the indexed
    array's), a crash finished by repair(), and, where the engine explains, no collection scan:
    billed for the move (the same round trips), the scan's form a counter-example."""
    name = f"t{uuid.uuid4().hex[:8]}"
    t, ref = AncestorsWithNamesByParent(db[f"{name}_bp"]), AncestorsWithNames(db[f"{name}_ref"])
    t.load(ROWS)
    ref.load(ROWS)
    for method, args in (("move_by_ids", (5, 2)), ("rename_by_ids", (6, "S")),
                         ("rename_by_ids_without_transaction", (5, "A")), ("move_by_ids", (5, None)),
                         ("move_by_ids", (8, 9)), ("rename_by_ids", (8, "Leaf"))):
        getattr(t, method)(*args)
        getattr(ref, "move" if method.startswith("move") else "rename")(*args)
        assert snapshot(t) == snapshot(ref), (method, args)
    with pytest.raises(CycleError):
        t.move_by_ids(2, 3)
    with pytest.raises(UnknownNodeError):
        t.move_by_ids(2, 99)
    marked = AncestorsWithNamesByParent(db[f"{name}_mark"], transaction=False)
    marked.load(ROWS)
    assert interrupt(marked, "move_by_ids", 5, 2, after=1)  # the mark written, the bulk_write never sent
    # a node added below the subtree while the move is unfinished takes the chain it reads then (its
    # parent's old one): repair() finds it by a scan, not by the ids the interrupted walk saw
    marked.add(10, 8, "Nano")
    assert marked.interrupted() and marked.repair() == 1
    ref2 = AncestorsWithNames(db[f"{name}_ref2"])
    ref2.load(ROWS)
    ref2.add(10, 8, "Nano")
    ref2.move(5, 2)
    assert snapshot(marked) == snapshot(ref2)
    shop = Workload("tree", (Operation("move", "write", 20, "slow", "nothing", "assumption: test"),))
    fresh = AncestorsWithNamesByParent(db[f"{name}_bill"])
    fresh.load(ROWS)
    designs = workload_costs({"BP": fresh}, {"move": ("move", (5, 2))}, examined=backend.info.caps.explain)
    forms = designs["BP"]["move"].forms
    walked, scan = forms["the subtree walked, then _id $in"], forms["one bulk_write"]
    assert walked["round trips"] == scan["round trips"] and walked["docs written"] == scan["docs written"] == 4
    if backend.info.caps.explain:
        assert walked["docs examined"] < scan["docs examined"]
        assert shop.billed(designs)["BP"]["move"] == "the subtree walked, then _id $in"
        assert shop.contest(designs).loc[("BP", "move", "one bulk_write"), "note"].startswith("the descendants' update")


def test_child_references_add_in_one_bulk_write_command_where_the_engine_has_it(db, backend):
    """A collection's bulk_write sends the insert and the parent's $push as two commands; MongoDB
    8.0's bulkWrite (client.bulk_write) sends them in one, measured and billed where the engine has
    it (caps.client_bulk_write), never offered where it has not."""
    t = build(db, ROWS)
    tree, ref = t["ChildRefs"], build(db, [*ROWS, (10, 6, "Tiny")])["ChildRefs"]
    forms = tree.forms_of("add")
    if not backend.info.caps.client_bulk_write:
        assert list(forms) == ["one bulk_write"]
        return
    with count_commands(index_keys=tree.collection) as c:
        forms["one client bulk_write"](10, 6, "Tiny")
    assert (c.round_trips, c.docs_written) == (1, 2) and snapshot(tree) == snapshot(ref)
    tree._unadd(10, 6)
    if backend.info.caps.explain:  # the parent's $push finds it by _id, as in the two-command form
        with count_commands(keep_commands=True) as c:
            forms["one client bulk_write"](10, 6, "Tiny")
        tree._unadd(10, 6)
        with count_commands(keep_commands=True) as two:
            forms["one bulk_write"](10, 6, "Tiny")
        tree._unadd(10, 6)
        assert server_work(db, c.command_documents) == server_work(db, two.command_documents) == (1, 1)
    shop = Workload("tree", (Operation("add", "write", 5, "slow", "nothing", "assumption: test"),))
    designs = workload_costs({"ChildRefs": tree}, {"add": ("add", (10, 6, "Tiny"))}, examined=backend.info.caps.explain)
    assert shop.billed(designs)["ChildRefs"]["add"] == "one client bulk_write"
    two = shop.contest(designs).loc[("ChildRefs", "add", "one bulk_write")]
    assert two["round trips"] == 2 and two["note"].startswith("a collection's bulk_write")
