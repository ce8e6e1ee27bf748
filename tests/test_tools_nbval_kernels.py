"""Tests of tools/nbval_kernels.py: notebook kernels start without racing for ports, and retry."""
from __future__ import annotations

import socket

import pytest

from tools import nbval_kernels


def _run(kc, code: str) -> str:
    out = []
    kc.execute_interactive(code, output_hook=lambda m: out.append(m["content"].get("text", "")), timeout=60)
    return "".join(out)


def test_the_cause_a_port_taken_after_jupyter_chose_it_kills_a_tcp_kernel(monkeypatch):
    """jupyter_client chooses TCP ports by binding port 0 and releasing them (its LocalPortCache is
    per process); whoever binds one of them before the kernel does (another xdist worker starting
    a kernel, a test server's free port) kills the kernel. Simulated: the shell port is taken."""
    from jupyter_client.connect import LocalPortCache
    from jupyter_client.manager import KernelManager

    thief = socket.socket()
    thief.bind(("127.0.0.1", 0))
    thief.listen()
    real = LocalPortCache.find_available_port
    calls = {"n": 0}

    def racy(self, ip):
        calls["n"] += 1
        return thief.getsockname()[1] if calls["n"] == 1 else real(self, ip)

    monkeypatch.setattr(LocalPortCache, "find_available_port", racy)
    km = KernelManager(kernel_name="python3")
    try:
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        with pytest.raises(RuntimeError, match="died"):  # "Kernel died before replying to kernel_info"
            kc.wait_for_ready(timeout=60)
        kc.stop_channels()
    finally:
        thief.close()
        km.shutdown_kernel(now=True)


@pytest.mark.skipif(not nbval_kernels.use_ipc(), reason="no ipc transport on Windows: tcp with retries")
def test_kernels_talk_over_sockets_of_their_own_no_tcp_port():
    started = [nbval_kernels.start_new_kernel(kernel_name="python3") for _ in range(2)]
    try:
        infos = [km.get_connection_info() for km, _ in started]
        assert [i["transport"] for i in infos] == ["ipc", "ipc"]
        assert infos[0]["ip"] != infos[1]["ip"]  # a directory of its own each: nothing shared
        assert all(len(f"{i['ip']}-{i['hb_port']}") < 100 for i in infos)  # the Unix socket path limit
        assert [_run(kc, "print(6 * 7)").strip() for _, kc in started] == ["42", "42"]
    finally:
        for km, kc in started:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def test_a_failed_start_is_retried_then_reported_with_each_reason(monkeypatch):
    from jupyter_client.manager import KernelManager

    real = KernelManager.start_kernel
    calls = {"n": 0}

    def flaky(self, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return real(self, **kwargs)

    monkeypatch.setattr(KernelManager, "start_kernel", flaky)
    monkeypatch.setattr(nbval_kernels.time, "sleep", lambda s: None)
    km, kc = nbval_kernels.start_new_kernel(kernel_name="python3")
    try:
        assert calls["n"] == 2 and _run(kc, "print('up')").strip() == "up"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    def dead(self, **kwargs):
        raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(KernelManager, "start_kernel", dead)
    with pytest.raises(RuntimeError, match=r"did not start after 3 attempts[\s\S]*attempt 3: RuntimeError"):
        nbval_kernels.start_new_kernel(kernel_name="python3")


@pytest.mark.skipif(not nbval_kernels.use_ipc(), reason="no ipc transport in ZeroMQ on Windows: TCP stays")
def test_notebooks_run_by_nbclient_use_sockets_of_their_own_too():
    """The student-copy tests, scripts/nb.py and the benchmarks run notebooks with nbclient: the
    kernels they start talk over ipc as well, each in a directory of its own, and shut down after."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=nbval_kernels.kernel_manager_class())
    seen = []
    client.on_notebook_start = lambda notebook: seen.append(client.km.get_connection_info())
    client.execute()
    assert nb.cells[0].outputs[0]["text"].strip() == "42"
    assert [i["transport"] for i in seen] == ["ipc"]
    assert client.km is None  # nbclient made it, so it shut the kernel down and let it go
    other = nbval_kernels.kernel_manager_class()(kernel_name="python3")
    assert other.ip != seen[0]["ip"]
