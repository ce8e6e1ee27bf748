"""The embedded SecantusDB server: in this process for the notebooks, or as a process for tests.

:func:`start_embedded` is what ``helpers.backends.connect("embedded")`` starts (a real MongoDB
wire-protocol server on a free loopback port, stopped when the process exits);
:func:`secantus_process` runs ``secantusd-py`` as a separate process, so the test command and
the benchmarks exercise the ``mongodb`` backend's URI path for real.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

__all__ = ["start_embedded", "stop_embedded", "secantus_process", "free_port", "stop_process"]


def start_embedded() -> Any:
    """Start a SecantusDB server in this process (in-memory storage); stopped at exit."""
    from secantus import SecantusDBServer  # import error = no wheel for this platform

    server = SecantusDBServer(host="127.0.0.1", port=0, storage_path=":memory:")
    server.start()
    atexit.register(stop_embedded, server)
    return server


@contextlib.contextmanager
def _knocking(port: int | None) -> Iterator[None]:
    """While the block runs, connect to ``port`` on the loopback every 20 ms and hang up at once.

    A SecantusDB server's accept thread sleeps in ``accept()``, which closing the listening socket
    does not wake on Linux: ``SecantusDBServer.stop()`` then waits 2 s for it. A new connection
    wakes it, it sees it is told to stop, and the stop goes on at once. Only the port of a server
    this module started is ever knocked on (``port=None``: nothing is)."""
    import threading

    if port is None:
        yield
        return
    stopped = threading.Event()

    def knock() -> None:
        while not stopped.wait(0.02):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass

    knocker = threading.Thread(target=knock, name="wake-accept", daemon=True)
    knocker.start()
    try:
        yield
    finally:
        stopped.set()
        knocker.join()


def stop_embedded(server: Any) -> None:
    """Stop an in-process server at once (closing its connection, or the process's exit, calls it):
    ``server.stop()`` alone waits 2 s (:func:`_knocking`)."""
    with _knocking(server.port):
        server.stop()


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def secantus_process(*, storage_path: str = ":memory:", auth: bool = False) -> Iterator[str]:
    """Start ``secantusd-py`` on a free loopback port (in-memory storage); yield its URI.

    ``storage_path``: a folder kept across restarts (users are created without ``auth``, then the
    server is restarted with ``auth=True``, which requires SCRAM authentication).
    """
    exe = Path(sys.executable).with_name("secantusd-py")
    port = free_port()
    if os.name == "nt":
        exe = exe.with_suffix(".exe")
    log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty server can never block on it
    proc = subprocess.Popen([str(exe) if exe.exists() else "secantusd-py", "--host", "127.0.0.1",
                             "--port", str(port), "--storage-path", storage_path, "--log-level", "WARNING",
                             *(["--auth"] if auth else [])],
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                err = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"secantusd-py did not start on port {port}: {err}")
            time.sleep(0.1)
        yield f"mongodb://127.0.0.1:{port}/"
    finally:
        # a stop wedged past 3 s (seen now and then with --auth, knocked on or not) is killed:
        # in memory nothing is lost, and WiredTiger's journal keeps a storage folder consistent
        stop_process(proc, port, grace=3.0)
        log.close()


def stop_process(proc: subprocess.Popen, port: int | None = None, grace: float = 10.0) -> None:
    """Stop a server process this module's callers started: terminate, then kill after ``grace`` s.

    ``port``: the loopback port a ``secantusd-py`` listens on, knocked on while it stops
    (:func:`_knocking`: 2.1 s -> about 0.1 s); it stops cleanly on SIGTERM (its in-memory storage's
    scratch folder removed)."""
    proc.terminate()
    with _knocking(port):
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
