"""The typed copy of a large data file (helpers.datasets.cache): found again, checked, never code.

A copy is BSON (reading it runs no code), signed with the user's own key (a copy that does not
verify is refused and the file typed again from the source), reached without following a link
through folders nobody else controls, and writing it deletes nothing but the cache's own files.
"""
from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path

import bson
import pytest

from helpers import datasets as ds
from helpers.datasets import cache, prepare

#: a file small enough to type in a few hundredths of a second, cached as a large one is (``small_files``)
FILE, ROWS, FIELDS = "nyc_planes.csv", 3_322, ds.PLANE_FIELDS
#: loads while another thread swaps the cache folder's symlink (each takes a few hundredths of a second)
SWAP_LOADS = 60
POSIX = os.name == "posix"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of the test's own: the key is created there, never in the developer's. And
    files of FILE's size cached as the large ones are (the rules are the same, the test quicker)."""
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setattr(cache, "CACHE_MIN_ROWS", 1_000)
    return folder


def _path() -> Path:
    return ds.verify_file(ds.datasets_dir(), FILE)


def _typed() -> list[dict]:
    return ds.typed_documents(_path(), FIELDS)


class _RunsCode:
    """Unpickling this creates ``marker``: what a pickle planted in a cache could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_the_typed_copy_of_a_large_file_is_cached_and_checked(tmp_path, home, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    typed = _typed()
    assert len(typed) == ROWS
    (copy,) = (tmp_path / "cache").iterdir()
    assert copy.name.endswith(".typed.bson") and ds.sha256(_path())[:16] in copy.name
    assert copy.read_bytes().startswith(cache.MAGIC)
    if POSIX:
        assert oct(copy.stat().st_mode & 0o777) == oct(0o600)
        assert oct(cache.key_path().stat().st_mode & 0o777) == oct(0o600)
    # a new kernel: nothing kept in memory, the copy is read and the file is not typed again
    monkeypatch.setattr(cache, "typed_rows", lambda *a: pytest.fail("typed again despite the cached copy"))
    assert _typed() == typed
    monkeypatch.setattr(cache, "typed_rows", ds.csvtyping.typed_rows)
    # a damaged copy is typed again and replaced
    copy.write_bytes(b"not a copy")
    assert _typed() == typed
    assert copy.read_bytes().startswith(cache.MAGIC)
    # another typing of the columns never meets this copy
    other = {**FIELDS, "year": (str, False, "year")}
    assert ds.typed_documents(_path(), other)[0]["year"] == str(typed[0]["year"])


def test_the_copy_cannot_run_code_and_a_copy_not_signed_with_the_users_key_is_refused(tmp_path, home, monkeypatch):
    """A pickle, a one-document copy, a copy signed with another key, or one signed for another
    file, under the copy's own name: each is refused, nothing runs, the file is typed again from the
    source (all its documents) and the copy rewritten."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    typed = _typed()
    (copy,) = (tmp_path / "cache").iterdir()
    good = copy.read_bytes()
    marker = tmp_path / "code ran"
    one = typed[:1]
    head = bson.encode({"n": 1, "keys": None})
    one_doc = len(head).to_bytes(4, "little") + head + bson.encode(one[0])
    identity = b"\0".join((FILE.encode(), ds.sha256(_path()).encode(), copy.name.split(".")[-3].encode(), b""))
    planted = {
        "a pickle": pickle.dumps(_RunsCode(marker)),
        "a pickle after the header": cache.MAGIC + bytes(32) + pickle.dumps(_RunsCode(marker)),
        "one document, unsigned": cache.MAGIC + bytes(32) + one_doc,
        "one document, another key": cache.MAGIC + cache._mac(os.urandom(32), identity, one_doc) + one_doc,
        "the right key, another file": cache.MAGIC + cache._mac(cache._key(), identity.replace(b"planes", b"plane5"),
                                                                one_doc) + one_doc,
        "the whole copy, truncated": good[:len(good) // 2],
    }
    for what, data in planted.items():
        copy.write_bytes(data)
        copy.chmod(0o600)
        got = _typed()
        assert len(got) == ROWS and got == typed, what
        assert copy.read_bytes() == good, what  # typed again and rewritten
    assert not marker.exists()
    # the control: the same one-document copy signed as the loader signs is served (the key is what is checked)
    copy.write_bytes(cache.MAGIC + cache._mac(cache._key(), identity, one_doc) + one_doc)
    assert _typed() == one


@pytest.mark.skipif(not POSIX, reason="symlinks, owners and file modes are POSIX")
@pytest.mark.parametrize("owner", ["the user", "another user"])
def test_a_symlink_swapped_during_loads_never_serves_another_copy(tmp_path, home, monkeypatch, owner):
    """WORKBOOK_CACHE in a shared sticky folder (as /tmp), a symlink another thread flips between the
    learner's folder and one holding a pickle that would run code and a one-document copy, as fast
    as it can, during SWAP_LOADS loads: every load returns the file's 3,322 documents, no code runs."""
    if owner == "another user" and os.getuid() != 0:
        pytest.skip("making a folder of another user's needs root")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    mine, theirs = shared / "mine", shared / "theirs"
    mine.mkdir(mode=0o700)
    theirs.mkdir(mode=0o700)
    link = shared / "cache"
    link.symlink_to(mine)
    monkeypatch.setenv("WORKBOOK_CACHE", str(link))
    typed = _typed()
    (copy,) = mine.iterdir()
    if owner == "another user":
        os.chown(theirs, 65534, 65534)
    marker = tmp_path / "code ran"
    head = bson.encode({"n": 1, "keys": None})
    one_doc = len(head).to_bytes(4, "little") + head + bson.encode(typed[0])
    baits = [pickle.dumps(_RunsCode(marker)), cache.MAGIC + bytes(32) + one_doc]
    stop, flips = threading.Event(), [0]

    def flip() -> None:
        while not stop.is_set():
            i = flips[0]
            bait = theirs / f"bait{i % 2}"
            bait.write_bytes(baits[i % 2])
            os.replace(bait, theirs / copy.name)  # the attacker's file under the copy's name
            new = shared / f"link{i % 2}"
            new.symlink_to(theirs if i % 2 == 0 else mine)
            os.replace(new, link)
            flips[0] += 1
            time.sleep(0)

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        for _ in range(SWAP_LOADS):
            got = _typed()
            assert len(got) == ROWS and got == typed
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not marker.exists()
    assert flips[0] > SWAP_LOADS  # the link really moved during the loads


@pytest.mark.skipif(not POSIX, reason="file modes and owners are POSIX")
@pytest.mark.parametrize("above", ["writable by all", "group-writable", "the cache folder itself"])
def test_no_copy_is_read_or_written_below_a_folder_others_may_write(tmp_path, home, monkeypatch, above):
    """A folder above the cache that others may write (not sticky) could have the cache swapped: no
    copy is read from there, and none written; the file is typed each time instead."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o700)
    folder = shared / "cache"
    monkeypatch.setenv("WORKBOOK_CACHE", str(folder))
    typed = _typed()
    (copy,) = folder.iterdir()
    target = folder if above == "the cache folder itself" else shared
    target.chmod(0o777 if above != "group-writable" else 0o770)
    decode = cache._decode
    monkeypatch.setattr(cache, "_decode", lambda *a: pytest.fail("a copy read below a folder others may write"))
    copy.write_bytes(b"anything at all")
    assert _typed() == typed
    assert copy.read_bytes() == b"anything at all"  # and nothing written there either
    target.chmod(0o1777)  # sticky, as /tmp: others may add entries, not rename or delete ours
    if above != "the cache folder itself":
        monkeypatch.setattr(cache, "_decode", decode)
        assert _typed() == typed and copy.read_bytes().startswith(cache.MAGIC)


@pytest.mark.skipif(not POSIX, reason="symlinks are POSIX here")
def test_a_copy_or_a_key_that_is_a_symlink_is_never_followed(tmp_path, home, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("WORKBOOK_CACHE", str(folder))
    typed = _typed()
    (copy,) = folder.iterdir()
    elsewhere = tmp_path / "elsewhere"
    copy.rename(elsewhere)
    copy.symlink_to(elsewhere)
    decode = cache._decode
    monkeypatch.setattr(cache, "_decode", lambda *a: pytest.fail("a copy read through a symlink"))
    assert _typed() == typed
    monkeypatch.setattr(cache, "_decode", decode)
    assert not copy.is_symlink()  # replaced by a copy of its own (the link itself, not its target)
    key = cache.key_path()
    key.rename(tmp_path / "a key elsewhere")
    key.symlink_to(tmp_path / "a key elsewhere")
    monkeypatch.setattr(cache, "_decode", lambda *a: pytest.fail("a copy checked with a key reached by a symlink"))
    assert _typed() == typed


def test_writing_the_cache_deletes_only_its_own_files(tmp_path, home, monkeypatch):
    """WORKBOOK_CACHE pointing at a folder of the user's own files: only old files of the cache's
    own name pattern go (another typing's copy unused for a week, a writer's leftover after an hour)."""
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    old = time.time() - 30 * 86400
    theirs = ["model.pickle", "results.pickle", "draft.tmp", f"{FILE}.pickle", "notes.typed.bson",
              f"other.csv.{'0' * 16}.{'1' * 16}.typed.bson"]
    ours = [f"{FILE}.{'0' * 16}.{'1' * 16}.pickle", f"{FILE}.{'0' * 16}.{'1' * 16}.typed.bson",
            f"{FILE}.{'0' * 16}.{'1' * 16}.typed.bson.0123abcd.tmp"]
    for name in theirs + ours:
        (folder / name).write_bytes(b"x")
        os.utime(folder / name, (old, old))
    monkeypatch.setenv("WORKBOOK_CACHE", str(folder))
    _typed()
    left = sorted(p.name for p in folder.iterdir())
    assert all(name in left for name in theirs), left
    assert not any(name in left for name in ours), left
    assert len(left) == len(theirs) + 1  # and the new copy


def test_no_cache_when_it_is_turned_off_or_for_small_files(tmp_path, home, monkeypatch):
    from helpers import settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBOOK_CACHE", "off")
    assert settings.cache_folder() is None
    _typed()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"] and not any(home.iterdir())
    monkeypatch.setattr(cache, "CACHE_MIN_ROWS", 20_000)  # the real threshold
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    ds.typed_documents(ds.verify_file(ds.datasets_dir(), "nyc_planes.csv"), ds.PLANE_FIELDS)  # 3,322 rows
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_relative_cache_folder_is_the_same_from_any_working_folder(tmp_path, monkeypatch):
    from helpers import settings

    monkeypatch.setenv("WORKBOOK_CACHE", "some/cache")
    monkeypatch.chdir(tmp_path)
    here = settings.cache_folder()
    monkeypatch.chdir(ds.datasets_dir())
    assert settings.cache_folder() == here and here.is_absolute()
    monkeypatch.setenv("WORKBOOK_CACHE", "~/c")
    assert settings.cache_folder() == Path.home() / "c"


@pytest.mark.skipif(not POSIX, reason="symlinks and owners are POSIX")
def test_a_link_of_another_users_on_the_way_never_chooses_the_cache_folder(tmp_path, home, monkeypatch):
    """WORKBOOK_CACHE through a folder another user controls: their link there would pick which of
    the learner's own folders receives (and has tidied) the copies, so no cache is used at all."""
    if os.getuid() != 0:
        pytest.skip("a link of another user's needs root")
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "cache"
    link.symlink_to(mine)
    os.chown(link, 65534, 65534, follow_symlinks=False)  # planted by another user
    monkeypatch.setenv("WORKBOOK_CACHE", str(link))
    assert len(_typed()) == ROWS
    assert list(mine.iterdir()) == []  # nothing written where their link points
    os.chown(link, os.getuid(), os.getgid(), follow_symlinks=False)  # the control: the learner's own link
    assert len(_typed()) == ROWS and len(list(mine.iterdir())) == 1


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX")
def test_a_key_others_may_read_signs_nothing(tmp_path, home, monkeypatch):
    """A key readable by other users lets them sign a copy: it is refused (no copy read with it)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("WORKBOOK_CACHE", str(folder))
    typed = _typed()
    cache.key_path().chmod(0o644)
    monkeypatch.setattr(cache, "_decode", lambda *a: pytest.fail("a copy checked with a key others may read"))
    assert _typed() == typed
    assert cache._key() is None


@pytest.mark.skipif(not POSIX, reason="owners are POSIX")
def test_the_datasets_folder_found_from_the_working_folder_is_never_another_users(tmp_path, monkeypatch):
    """Installed without the repository beside it, the loader looks for ``datasets/`` from the
    working folder upwards: one another user planted above it (``/tmp/datasets``) is passed over."""
    from helpers.datasets import checksums

    if os.getuid() != 0:
        pytest.skip("a folder of another user's needs root")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "datasets"
    planted.mkdir()
    (planted / "checksums.sha256").write_text("")
    for path in (planted, planted / "checksums.sha256"):
        os.chown(path, 65534, 65534)
    work = shared / "mine" / "notebooks"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(checksums, "__file__", str(tmp_path / "site-packages" / "helpers" / "datasets" / "x.py"))
    assert checksums._find_datasets_dir() != planted
    for path in (planted, planted / "checksums.sha256"):  # the control: the learner's own folder is found
        os.chown(path, os.getuid(), os.getgid())
    assert checksums._find_datasets_dir() == planted


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX")
def test_prepare_cache_names_a_key_others_may_read(tmp_path, home, monkeypatch):
    """``workbook.py setup`` says why nothing was kept, naming the key and the fix."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    cache._key()
    cache.key_path().chmod(0o644)
    said = [line for line in prepare.prepare_cache() if "not kept" in line]
    assert said and all("chmod 600" in line and str(cache.key_path()) in line for line in said)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


# --- a key of the wrong length: replaced once, safely, and the cache works again

@pytest.mark.skipif(not POSIX, reason="file modes and owners are POSIX")
def test_a_private_key_of_the_wrong_length_is_replaced_once_and_the_cache_works_again(tmp_path, home, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    typed = _typed()
    (copy,) = (tmp_path / "cache").iterdir()
    key = cache.key_path()
    old = key.read_bytes()
    key.write_bytes(os.urandom(16))  # the user's own, private (0600 kept), only 16 bytes
    assert oct(key.stat().st_mode & 0o777) == oct(0o600)
    assert _typed() == typed  # the old copy does not verify with the new key: typed again and re-signed
    new = key.read_bytes()
    assert len(new) == 32 and new != old and oct(key.stat().st_mode & 0o777) == oct(0o600)
    assert copy.read_bytes().startswith(cache.MAGIC)
    # the cache works again: the next load reads the copy and types nothing
    monkeypatch.setattr(cache, "typed_rows", lambda *a: pytest.fail("typed again: the cache is still off"))
    assert _typed() == typed
    assert key.read_bytes() == new  # replaced once, not at every load


@pytest.mark.skipif(not POSIX, reason="symlinks and file modes are POSIX")
def test_a_key_of_the_wrong_length_that_is_not_a_private_file_of_ones_own_is_never_replaced(tmp_path, home,
                                                                                         monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    cache._key()
    key = cache.key_path()
    elsewhere = tmp_path / "a short file elsewhere"
    elsewhere.write_bytes(b"0123456789")
    key.unlink()
    key.symlink_to(elsewhere)  # a link: neither followed nor replaced
    assert cache._key() is None
    assert key.is_symlink() and elsewhere.read_bytes() == b"0123456789"
    advice = cache.key_advice()
    assert str(key) in advice and "delete" in advice and "chmod" not in advice, advice
    key.unlink()
    key.write_bytes(b"0123456789")
    key.chmod(0o644)  # the user's own but readable by others: not replaced, and the advice is chmod 600
    assert cache._key() is None and key.read_bytes() == b"0123456789"
    assert "chmod 600" in cache.key_advice()
    key.chmod(0o600)  # done as advised: the next load replaces the short key
    assert len(cache._key()) == 32 and len(key.read_bytes()) == 32 and cache.key_advice() is None
