"""A real browser: JupyterLab started with the README's command, the first notebook run in Chromium.

Needs Debian's ``chromium`` (``.ci/run`` installs it; Playwright drives it, no browser download).
Outside CI, the test is skipped with the reason when Chromium is not installed.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from engines.embedded import free_port

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROME_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]

if not CHROMIUM:
    if os.environ.get("CI"):
        pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package", pytrace=False)
    pytest.skip("Chromium is not installed (Debian: apt install chromium)", allow_module_level=True)


def _settings(folder: Path) -> None:
    """No autosave (the committed notebook stays as it is), no news or update checks (offline),
    every cell rendered."""
    for plugin, values in {
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
        # render every cell (no windowing), so every prompt and output can be read
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                             "checkForUpdates": False},
    }.items():
        path = folder / plugin
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture
def jupyterlab(tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    _settings(tmp_path / "settings")
    env = {k: v for k, v in os.environ.items() if k not in ("MONGODB_URI", "WORKBOOK_BACKEND")}
    env.update({"JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
                "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
                "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
                "WORKBOOK_PROGRESS": str(tmp_path / "progress.json")})
    log = open(tmp_path / "lab.log", "w")
    # the README's command, headless on a free loopback port
    proc = subprocess.Popen([sys.executable, str(ROOT / "workbook.py"), "lab", "--no-browser", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={token}"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"JupyterLab did not start: {(tmp_path / 'lab.log').read_text()[-2000:]}")
            time.sleep(0.5)
    try:
        yield base, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # JupyterLab and its kernels
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_start_here_runs_in_jupyterlab_in_chromium(jupyterlab):
    from playwright.sync_api import sync_playwright

    base, token = jupyterlab
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}", timeout=60_000)
            nb = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
            n_code = sum(c["cell_type"] == "code" for c in nb["cells"])
            # a solution's code is hidden until asked (source_hidden): JupyterLab renders no prompt for it
            n_hidden = sum(c["cell_type"] == "code" and c["metadata"].get("jupyter", {}).get("source_hidden", False)
                           for c in nb["cells"])
            prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt")

            def wait_for(condition, what: str, seconds: float = 120) -> None:
                deadline = time.monotonic() + seconds
                while not condition():
                    assert time.monotonic() < deadline, f"timed out waiting for {what}: {prompts.all_text_contents()}"
                    time.sleep(0.5)

            def shown_prompts() -> list[str]:
                return [t.strip() for t in prompts.all_text_contents() if t.strip()]

            def kernel_idle() -> bool:
                with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
                    sessions = json.load(r)
                return bool(sessions) and all(s["kernel"]["execution_state"] == "idle" for s in sessions)

            wait_for(lambda: prompts.count() == n_code, "the notebook to render")
            wait_for(kernel_idle, "the kernel to start")

            def menu(top: str, item: str) -> None:
                page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
                page.locator(".lm-Menu-itemLabel", has_text=item).first.click()

            # as a learner does: clear the saved outputs, then Run > Run All Cells
            menu("Edit", "Clear Outputs of All Cells")
            wait_for(lambda: shown_prompts() == ["[ ]:"] * (n_code - n_hidden), "outputs to clear", 30)
            menu("Run", "Run All Cells")
            wait_for(lambda: all(re.fullmatch(r"\[\d+\]:", t) for t in shown_prompts()),
                     "every cell to run", 180)
            wait_for(kernel_idle, "the kernel to finish")
            page.locator(".jp-Notebook .jp-CodeCell").first.scroll_into_view_if_needed()  # the banner
            page.screenshot(path=str(SHOTS / "jupyterlab_00_start_here.png"), full_page=False)
            outputs = page.locator(".jp-Notebook .jp-OutputArea-output").all_text_contents()  # collapsed Solutions too
            text = "\n".join(outputs)
            assert "Backend: embedded (SecantusDB" in outputs[0] or "Backend: embedded (SecantusDB" in text
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            assert not [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t.split("\n")[0]]
            assert "Traceback" not in text
            assert "Exercise 0.1: correct." in text  # the solution, run with every cell
        finally:
            browser.close()
