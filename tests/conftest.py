"""Shared test helpers: run the CLI in a subprocess, tiny configs, the repo root on PYTHONPATH."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DIZOO_CARTPOLE = REPO_ROOT / "dizoo" / "classic_control" / "cartpole" / "config"
DIZOO_PENDULUM = REPO_ROOT / "dizoo" / "classic_control" / "pendulum" / "config"

# pytest runs with --import-mode=importlib (test files may share names across folders); shared helpers such as
# fake_envs.py are imported from the tests folder, ding_lite and dizoo from this checkout.
for path in (REPO_ROOT, REPO_ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def cli_env(extra_pythonpath: list[str] | None = None) -> dict[str, str]:
    """Environment for a CLI subprocess: this checkout first on PYTHONPATH (plus ``extra_pythonpath``)."""
    env = dict(os.environ)
    paths = [str(REPO_ROOT)] + list(extra_pythonpath or [])
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_cli(*args: str, cwd: str | Path, extra_pythonpath: list[str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m ding_lite ARGS`` in ``cwd``; returns the completed process (text stdout/stderr)."""
    return subprocess.run([sys.executable, "-m", "ding_lite", *args], cwd=str(cwd), env=cli_env(extra_pythonpath),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tests run small networks: one torch thread, as the pipelines use (two threads on two busy cores crawl)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
