"""A real Redis for tests and CI (notebook 07): Debian's ``redis-server`` on a free loopback port.

Used by ``tools/testrun.py`` (the phase that runs notebook 07 against a real Redis) and by the tests'
``redis_server_url`` fixture. Never the learner's Redis: that one comes from ``REDIS_URL``.
"""
from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any, Iterator

from .embedded import free_port, stop_process

__all__ = ["REDIS_MISSING", "redis_server", "redis_process"]

REDIS_MISSING = ("redis-server is not installed: the runs against a real Redis are skipped "
                 "(Debian: apt-get install redis-server; .ci/run installs it)")


def redis_server() -> str | None:
    """The ``redis-server`` program on the PATH, or None when it is not installed."""
    return shutil.which("redis-server")


@contextlib.contextmanager
def redis_process() -> Iterator[str]:
    """Start ``redis-server`` on a free loopback port with its built-in defaults (persistence files in
    a temporary folder); yield its URL; stop it. RuntimeError when it is missing or does not start."""
    exe = redis_server()
    if exe is None:
        raise RuntimeError(REDIS_MISSING)
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as log:
        proc, port = _start(exe, folder, log)
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            stop_process(proc)


def _pong(port: int) -> bool:
    """True when the server on ``port`` answers PING (ours, not another program's)."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False


def _start(exe: str, folder: str, log: Any, attempts: int = 3) -> tuple[subprocess.Popen, int]:
    """Start redis-server on a free port; another port when a program took the chosen one first."""
    reasons = []
    for _ in range(attempts):
        port = free_port()
        proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--dir", folder,
                                 "--daemonize", "no", "--logfile", ""], stdout=log, stderr=log, cwd=folder)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if _pong(port) and proc.poll() is None:
                return proc, port
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.seek(0)
        reasons.append(f"port {port}: {log.read().decode(errors='replace')[-500:].strip() or 'no answer'}")
    raise RuntimeError("redis-server did not start: " + " | ".join(reasons))
