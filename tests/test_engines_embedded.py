"""engines/embedded.py: the SecantusDB server in process and as a process, started and stopped cleanly."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pymongo
import pytest

from engines import embedded


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def _gone(port: int) -> bool:
    """Nothing listens on ``port`` any more (a stopped server's listener closes within moments)."""
    deadline = time.monotonic() + 5
    while not _refused(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _refused(port)


def _port(uri: str) -> int:
    return int(uri.rstrip("/").rsplit(":", 1)[1])


def test_a_free_port_is_a_loopback_port_nothing_listens_on():
    port = embedded.free_port()
    assert 1024 <= port <= 65535 and _refused(port)


def _answers(uri: str) -> bool:
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        return client.admin.command("ping")["ok"] == 1 and "secantusVersion" in client.admin.command("buildInfo")
    finally:
        client.close()


def test_the_in_process_server_answers_on_loopback_and_stops():
    server = embedded.start_embedded()
    uri = server.uri
    try:
        assert uri.startswith("mongodb://127.0.0.1:") and _answers(uri)
    finally:
        embedded.stop_embedded(server)  # what the process does at exit
    assert _gone(_port(uri))


def test_the_server_process_answers_and_is_gone_afterwards():
    with embedded.secantus_process() as uri:
        assert uri.startswith("mongodb://127.0.0.1:") and _answers(uri)
    assert _gone(_port(uri))


def test_stop_process_ends_a_process_it_is_given():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    embedded.stop_process(proc)
    assert proc.returncode is not None


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in server is a shell script")
def test_a_server_that_cannot_start_says_so_with_its_log(monkeypatch, tmp_path):
    """A server process that exits at once is an error naming the port and the server's own words."""
    fake = tmp_path / "secantusd-py"
    fake.write_text("#!/bin/sh\necho 'no storage here' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(embedded.sys, "executable", str(tmp_path / "python"))  # the server beside "python"
    with pytest.raises(RuntimeError, match=r"did not start on port \d+: no storage here"):
        with embedded.secantus_process():
            pass


def test_a_process_with_an_embedded_server_exits_quietly():
    """The exit handler stops the server (knocking on its port where a thread may still start)
    without a word on stderr: no "Exception ignored in atexit callback", no storage error."""
    code = ("import pymongo\nfrom engines.embedded import start_embedded\ns = start_embedded()\n"
            "c = pymongo.MongoClient(s.uri)\nc.db.x.insert_one({})\nc.close()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0 and done.stderr == "", done.stderr
