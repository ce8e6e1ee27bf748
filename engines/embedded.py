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
from typing import Any, Callable, Iterator

__all__ = ["start_embedded", "stop_embedded", "secantus_process", "free_port", "stop_process"]


def start_embedded() -> Any:
    """Start a SecantusDB server in this process (in-memory storage); stopped at exit."""
    from secantus import SecantusDBServer  # import error = no wheel for this platform

    server = SecantusDBServer(host="127.0.0.1", port=0, storage_path=":memory:")
    server.start()
    atexit.register(stop_embedded, server)
    return server


@contextlib.contextmanager
def _knocking(port: int | None, done: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """While the block runs, and until ``done()``, connect to ``port`` on the loopback every 20 ms
    and hang up at once.

    A SecantusDB server's accept thread sleeps in ``accept()``, which closing the listening socket
    does not wake on Linux: ``SecantusDBServer.stop()`` then waits 2 s for it. A new connection
    wakes it, it sees it is told to stop, and the stop goes on at once. Only the port of a server
    this module started is ever knocked on (``port=None``: nothing is). Where no thread can be
    started (an exit handler, from Python 3.12 on), nothing is knocked on: the stop takes its 2 s."""
    import threading

    stopped = threading.Event()

    def knock() -> None:
        while not stopped.wait(0.02) and not done():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            except ConnectionRefusedError:  # the port is let go: never knock on what may bind it next
                return
            except OSError:
                pass

    knocker = None
    if port is not None:
        knocker = threading.Thread(target=knock, name="wake-accept", daemon=True)
        try:
            knocker.start()
        except RuntimeError:  # "can't create new thread at interpreter shutdown"
            knocker = None
    try:
        yield
    finally:
        stopped.set()
        if knocker is not None:
            knocker.join()


def stop_embedded(server: Any) -> None:
    """Stop an in-process server at once (closing its connection, or the process's exit, calls it):
    ``server.stop()`` alone waits 2 s (:func:`_knocking`; the knocks end with its accept thread,
    pinned: secantusdb 0.7.0b3 clears ``_thread`` once it has ended)."""
    with _knocking(server.port, done=lambda: getattr(server, "_thread", None) is None):
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
        # a process killed after 3 s of SIGTERMs: in memory nothing of value is lost (its scratch
        # folder stays behind); a storage folder is recovered to a consistent state, but the writes
        # of the last moment before a kill can be lost, so a storage server is never killed sooner
        stop_process(proc, port, grace=3.0)
        log.close()


def _listening(port: int) -> bool:
    """True if something accepts connections on ``port`` of the loopback."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def stop_process(proc: subprocess.Popen, port: int | None = None, grace: float = 10.0) -> None:
    """Stop a server process this module's callers started: SIGTERM, then SIGKILL after ``grace``
    seconds.

    ``port``: the loopback port a ``secantusd-py`` listens on, knocked on while it stops
    (:func:`_knocking`: 2.1 s -> about 0.1 s). A SIGTERM that reaches ``secantusd-py`` just after
    it started is now and then never handled (6 of 15 stops straight after the start): while the
    port still accepts connections after 0.5 s, the signal was not handled (its handler closes the
    port first), and it is sent again; never during a stop under way, which a second one would cut
    short."""
    proc.terminate()
    deadline = time.monotonic() + grace
    with _knocking(port, done=lambda: proc.poll() is not None):
        while True:
            try:
                proc.wait(timeout=max(0.0, min(0.5, deadline - time.monotonic())))
                return
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    break
                if port is not None and _listening(port):
                    proc.terminate()
    proc.kill()
    proc.wait()
