"""Bad input around the real-workload envs: one line on stderr, exit code 2, nothing written. Missing packages are
simulated by stand-in packages that fail to import (tests/envs/missing_packages/), put first on PYTHONPATH."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

pytestmark = pytest.mark.unittest

MISSING = str(Path(__file__).parent / "missing_packages")
PONG_PPO = str(REPO_ROOT / "dizoo/atari/pong/config/pong_ppo_config.py")
HOPPER_PPO = str(REPO_ROOT / "dizoo/mujoco/hopper/config/hopper_ppo_config.py")
DOORKEY_PPO = str(REPO_ROOT / "dizoo/minigrid/doorkey/config/doorkey_ppo_config.py")

CASES = {
    "unknown envpool id": (["-c", PONG_PPO, "--set", "env.env_id=Pong-v4"], None,
                           "unknown envpool env id env.env_id='Pong-v4' (did you mean 'Pong-v5'?)"),
    "envpool not installed": (["-c", PONG_PPO], MISSING,
                              "env.type='envpool' needs the envpool package, which is not installed: "
                              "pip install 'ding_lite[envpool]'"),
    "mujoco not installed": (["-c", HOPPER_PPO, "--set", "env.type=mujoco", "--set", "env.manager.type=base"],
                             MISSING, "env.type='mujoco' needs the mujoco package, which is not installed: "
                                      "pip install 'ding_lite[mujoco]'"),
    "ale-py not installed": (["-c", PONG_PPO, "--set", "env.type=atari", "--set", "env.manager.type=base"],
                             MISSING, "env.type='atari' needs the ale_py package, which is not installed: "
                                      "pip install 'ding_lite[atari]'"),
    "conv encoder on vectors": (["-c", HOPPER_PPO, "--set", "policy.model.encoder=conv"], None,
                                "policy.model.encoder='conv' needs frames (C, H, W) or (H, W, C) of at least 4x4, "
                                "got obs_shape=11: set policy.model.encoder='auto' or 'mlp'"),
    # before: a TypeError traceback from the envpool manager (a KeyError from the single env under 'base')
    "envpool's MiniGrid": (["-c", DOORKEY_PPO, "--set", "env.type=envpool", "--set", "env.manager.type=envpool"],
                           None, "env.env_id='MiniGrid-DoorKey-5x5-v0': envpool gives ['direction', 'image', "
                                 "'mission'] observations, which env.type='envpool' does not hand over "
                                 "(env.type='minigrid' observes MiniGrid's 7x7x3 view"),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folders = {case: tmp_path_factory.mktemp("real_env_error") for case in CASES}

    def run(case: str):
        args, extra_path, _ = CASES[case]
        extra = [extra_path] if extra_path else None
        proc = run_cli("-m", "serial", *args, "--exp-name", "exp", cwd=folders[case], extra_pythonpath=extra)
        return folders[case], proc

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(CASES, pool.map(run, CASES), strict=True))


@pytest.mark.parametrize("case", list(CASES))
def test_one_line_exit_2_nothing_written(case: str, outcomes) -> None:
    folder, proc = outcomes[case]
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert CASES[case][2] in lines[0], lines[0]
    assert list(folder.iterdir()) == []


def test_a_package_that_fails_to_import_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mujoco is installed, but a MUJOCO_GL it cannot load makes its import raise (not an ImportError)."""
    monkeypatch.setenv("MUJOCO_GL", "no_such_backend")
    proc = run_cli("-m", "serial", "-c", HOPPER_PPO, "--set", "env.type=mujoco", "--set", "env.manager.type=base",
                   "--exp-name", "exp", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "env.type='mujoco': importing the mujoco package failed: RuntimeError: invalid value for environment " \
           "variable MUJOCO_GL: no_such_backend; MUJOCO_GL='no_such_backend' is set" in lines[0]
    assert list(tmp_path.iterdir()) == []
