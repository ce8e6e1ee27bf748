"""A pytest plugin: nbval's kernels start reliably on a busy machine (``-p tools.nbval_kernels``).

Loaded by the test command (``tools/testrun.py``) for the notebook phases. Two causes of
"Kernel died before replying to kernel_info" are removed:

* **Port races.** jupyter_client picks a kernel's five TCP ports by binding port 0 and releasing
  them, then the kernel binds them moments later; its ``LocalPortCache`` only avoids clashes within
  one process. Two xdist workers starting kernels at once (or a test server picking a free port)
  can take the same port in between, and the kernel dies binding it. On POSIX each kernel here
  talks over the ``ipc`` transport instead: Unix sockets in a fresh temporary directory of its own,
  so there is no port to race for. On Windows (no ipc transport in ZeroMQ) TCP stays.
* **One unlucky start.** A start that fails anyway (a kernel killed, a timeout under load) is
  retried :data:`ATTEMPTS` times; the error then says what happened on each attempt and shows
  the end of the kernel's own error output, instead of nbval's bare message.

Nothing changes for a notebook's cells: the kernel, its working directory and environment are
nbval's.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from typing import Any

__all__ = ["ATTEMPTS", "kernel_manager_class", "start_new_kernel", "use_ipc"]

ATTEMPTS = 3


def use_ipc() -> bool:
    """The ``ipc`` transport (Unix sockets) where ZeroMQ has it: every platform but Windows."""
    return os.name == "posix"


def _ipc_prefix() -> str:
    """A short, unique socket path prefix (a Unix socket path must stay under about 100 bytes)."""
    base = "/tmp" if os.path.isdir("/tmp") else None
    folder = tempfile.mkdtemp(prefix="nbk", dir=base)
    atexit.register(shutil.rmtree, folder, True)
    return os.path.join(folder, "k")


def kernel_manager_class() -> type:
    """A jupyter_client ``KernelManager`` whose kernels talk over ipc sockets of their own (POSIX),
    for nbclient's ``NotebookClient(nb, kernel_manager_class=...)``: the student-copy tests,
    ``scripts/nb.py`` and the benchmarks start kernels with it, free of the port race above."""
    from jupyter_client.manager import KernelManager

    class SocketKernelManager(KernelManager):
        def __init__(self, **kwargs: Any) -> None:
            if use_ipc():
                kwargs.setdefault("transport", "ipc")
                kwargs.setdefault("ip", _ipc_prefix())
            super().__init__(**kwargs)

    return SocketKernelManager


def start_new_kernel(startup_timeout: float = 60, kernel_name: str = "python", **kwargs: Any):
    """nbval's ``start_new_kernel``, with a race-free transport and a bounded retry."""
    from jupyter_client.manager import KernelManager
    from nbval.kernel import NbvalKernelspecManager

    kwargs.pop("stderr", None)  # nbval discards it; kept here to explain a failure
    failures: list[str] = []
    for attempt in range(1, ATTEMPTS + 1):
        log = tempfile.TemporaryFile()
        options: dict[str, Any] = {}
        if use_ipc():
            options = {"transport": "ipc", "ip": _ipc_prefix()}
        km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager(), **options)
        kc = None
        try:
            km.start_kernel(stderr=log, **kwargs)
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=startup_timeout)
            return km, kc
        except Exception as e:  # noqa: BLE001 - retried, then reported with every attempt's reason
            log.seek(0)
            tail = log.read().decode(errors="replace").strip().splitlines()[-5:]
            failures.append(f"attempt {attempt}: {type(e).__name__}: {e}"
                            + (f" (kernel stderr: {' | '.join(tail)})" if tail else ""))
            if kc is not None:
                kc.stop_channels()
            try:
                km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - it may never have started
                pass
            time.sleep(0.5 * attempt)
        finally:
            log.close()
    raise RuntimeError(f"the Jupyter kernel {kernel_name!r} did not start after {ATTEMPTS} attempts "
                       f"(transport {'ipc' if use_ipc() else 'tcp'}; the machine may be overloaded):\n  "
                       + "\n  ".join(failures))


def pytest_configure(config: Any) -> None:
    """Route nbval's kernel start through :func:`start_new_kernel`."""
    try:
        import nbval.kernel
    except ImportError:  # pragma: no cover - nbval not installed: nothing to patch
        return
    nbval.kernel.start_new_kernel = start_new_kernel
