#!/usr/bin/env python3
"""One command to set up and open the workbook, one to set up and test it (standard library only).

    python3 workbook.py lab     # set up .venv, open JupyterLab at notebooks/00_start_here.ipynb
    python3 workbook.py test    # set up .venv, run the unit tests and every notebook on every backend
    python3 workbook.py setup   # only set up .venv (the dev container runs this once)
    python3 workbook.py --help  # every command: for teaching (see the README) student-copies, progress,
                                # class list|drop|logins|progress, html; advise (notebook 06)

The arguments are parsed here, before anything is set up, by the one parser of ``tools/cli.py``
(standard library only), so help and errors are the same for every command.

Set-up is a virtual environment in .venv with requirements.txt installed; it is redone only when
requirements.txt or pyproject.toml change.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("WORKBOOK_VENV") or ROOT / ".venv")  # docker-compose keeps its own
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".workbook-requirements.sha256"


def say(msg: str) -> None:
    print(f"[workbook] {msg}", flush=True)


def run(cmd: list[str], env: dict | None = None) -> int:
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)


def setup() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"[workbook] Python 3.11 or newer is needed; this is {sys.version.split()[0]}. "
                 f"Run this file with a newer python3.")
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    want = digest.hexdigest()
    if PY.exists() and subprocess.call([str(PY), "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL) != 0:
        say(f"{VENV} is incomplete (no pip): making it again")
        shutil.rmtree(VENV)
    if not PY.exists():
        say(f"creating a virtual environment in {VENV.name}/ ...")
        if run([sys.executable, "-m", "venv", VENV]) != 0:
            shutil.rmtree(VENV, ignore_errors=True)  # never leave a half-made one behind
            sys.exit("[workbook] could not create .venv (on Debian/Ubuntu: apt install python3-venv)")
    if STAMP.exists() and STAMP.read_text().strip() == want:
        return
    say("installing requirements.txt into .venv (first time: a minute or two) ...")
    if run([PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
            ROOT / "requirements.txt"]) != 0:
        sys.exit("[workbook] pip install -r requirements.txt failed: see the message above.")
    STAMP.write_text(want)


def prepare_data() -> None:
    """Type the large data files once into the workbook's cache, so a first load reads a typed copy."""
    run([PY, "-c", "from helpers.datasets import prepare_cache\n"
                   "for line in prepare_cache(): print('[workbook]', line)"])


def lab(args: list[str]) -> int:
    setup()
    prepare_data()
    say("opening JupyterLab; stop it with Ctrl+C")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in args:
        args = [*args, "--allow-root"]  # containers and lab images often run as root
    cmd = [str(PY), "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}", "notebooks/00_start_here.ipynb", *args]
    if os.name == "posix":  # become JupyterLab, so Ctrl+C and signals reach it directly
        os.chdir(ROOT)
        os.execv(cmd[0], cmd)
    return run(cmd)


def test(args: list[str]) -> int:
    setup()
    return run([PY, "-m", "tools.testrun", *args])


def tool(args: list[str]) -> int:
    setup()
    return run([PY, "-m", "tools.cli", *args])


def setup_only(args: list[str]) -> int:
    setup()
    prepare_data()
    say(f"ready: {PY}")
    return 0


def _cli():
    """tools/cli.py, loaded from its file (standard library only; no .venv, no sys.path edit needed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("workbook_cli", ROOT / "tools" / "cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    cli = _cli()
    build_parser, parse = cli.build_parser, cli.parse
    argv = sys.argv[1:] if argv is None else argv
    args, extra = parse(argv, build_parser())
    commands = {"lab": lab, "test": test, "setup": setup_only}
    if args.command in commands:
        return commands[args.command](extra)
    return tool(argv)


if __name__ == "__main__":
    sys.exit(main())
