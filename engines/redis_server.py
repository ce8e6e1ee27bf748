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
from typing import Iterator

from .embedded import free_port

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
    port = free_port()
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--dir", folder,
                                 "--daemonize", "no", "--logfile", ""], stdout=log, stderr=log, cwd=folder)
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"redis-server did not start on port {port}: "
                                       f"{log.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
