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

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


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
