"""Every config under dizoo/ compiles under --strict and trains through its pipeline (serial, or selfplay for a config
with a ``league`` section) on a tiny budget, through the command line's ``main`` in this process (a fresh Python
start with torch per config would cost more than most of these runs)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

from ding_lite.config import compile_config, read_config
from dizoo.modes import config_mode

pytestmark = pytest.mark.unittest

CONFIGS = sorted((REPO_ROOT / "dizoo").glob("*/*/config/*_config.py"))
DEMO_CONFIGS = {"cartpole_ppo_dapg_config.py"}  # need a demo file made by -m collect_demo first
# The real-workload configs run unchanged but shortened for CI: short episodes (the evaluator plays whole ones) and,
# for the conv nets on Atari and the MuJoCo configs' 2,048-step collects, smaller collects; a few hundred env steps
# each.
_SHORT = ["env.max_episode_steps=30", "env.evaluator_env_num=2", "env.n_evaluator_episode=2"]
SMOKE_OVERRIDES = {
    "pong_dqn_config.py": _SHORT + ["policy.learn.update_per_collect=1", "policy.other.replay_buffer."
                                    "replay_buffer_size=1000"],
    "pong_ppo_config.py": _SHORT + ["policy.collect.n_sample=128", "policy.learn.batch_size=64"],
    "breakout_ppo_config.py": _SHORT + ["policy.collect.n_sample=128", "policy.learn.batch_size=64"],
    "walker2d_ppo_config.py": _SHORT + ["policy.collect.n_sample=256"],
    "hopper_ppo_config.py": _SHORT + ["policy.collect.n_sample=256"],
    "halfcheetah_ppo_config.py": _SHORT + ["policy.collect.n_sample=256"],
    "doorkey_ppo_config.py": _SHORT + ["policy.collect.n_sample=256"],
    # SAC / TD3: learning starts within the budget (the configs' 1,000 / 10,000 random steps exceed it)
    **{f"{env}_{algo}_config.py": _SHORT + ["policy.learning_starts=448", "policy.learn.batch_size=32"]
       for env in ("hopper", "halfcheetah") for algo in ("sac", "td3")},
    **{f"pendulum_{algo}_config.py": ["policy.learning_starts=384"] for algo in ("sac", "td3")},
    "pendulum_td3_rlzoo_config.py": ["policy.learning_starts=384"],  # rl-zoo's 10,000 random steps
    "mountain_car_dqn_config.py": ["policy.learning_starts=384"],  # rl-zoo's 1,000 random steps exceed the budget
}


def test_every_dizoo_config_is_found() -> None:
    assert len(CONFIGS) >= 7, CONFIGS


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_dizoo_config_compiles_strictly(config: Path) -> None:
    main, create = read_config(config)
    cfg = compile_config(main, create, strict=True)
    assert cfg.policy.type and cfg.env.type and cfg.env.stop_value is not None


# What a warning printed to stderr would show of a run started as a command: Python's default filters (deprecations
# only from __main__, so third-party ones stay silent, as in the shell)
PYTHON_DEFAULT_IGNORED = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_dizoo_config_trains(config: Path, tmp_path: Path, monkeypatch, capfd) -> None:
    from ding_lite.cli import main

    if config.name in DEMO_CONFIGS:
        _make_demo_file(config, tmp_path)
    # a GSL config's PPO-DAPG trains serially here (-m gsl runs in tests/entry/test_gsl.py: phases cost minutes)
    mode = "selfplay" if config_mode(config) == "selfplay" else "serial"
    smoke = SMOKE_OVERRIDES.get(config.name, [])
    if mode == "selfplay":  # a couple of games per evaluation opponent, not the config's tables of 48-100
        smoke = smoke + ["env.evaluator_env_num=2", "env.n_evaluator_episode=2"]
    overrides = [arg for kv in smoke for arg in ("--set", kv)]
    monkeypatch.chdir(tmp_path)
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        for category in PYTHON_DEFAULT_IGNORED:
            warnings.simplefilter("ignore", category)
        code = main(["-m", mode, "-c", str(config), "--strict", "--max-env-step", "512", "--exp-name", "exp",
                     "--no-progress", *overrides])
    stderr = capfd.readouterr().err
    assert code == 0, stderr
    # MuJoCo's own compiler prints a deprecation line for gymnasium's HalfCheetah-v4 model: not a ding_lite warning
    # and a GSL config trained serially says that its gsl settings are read only by -m gsl, as it should
    ours = [line for line in stderr.splitlines() if "compiler attribute 'settotalmass'" not in line
            and not (mode == "serial" and line.startswith("warning: gsl."))]
    assert "warning" not in "\n".join(ours).lower(), stderr
    assert not caught, [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught]
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["train_iter"] > 0 or result["stop"], result


def _make_demo_file(config: Path, cwd: Path) -> None:
    """Demos from a briefly trained PPO (the threshold lowered so that its episodes count), where the DAPG config
    expects them."""
    ppo = str(REPO_ROOT / "dizoo/classic_control/cartpole/config/cartpole_ppo_config.py")
    proc = run_cli("-m", "serial", "-c", ppo, "--max-env-step", "256", "--exp-name", "expert", "--no-progress",
                   cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    main, _ = read_config(config)
    demo_path = main["policy"]["learn"]["demo_path"]
    proc = run_cli("-m", "collect_demo", "-c", ppo, "--load-ckpt", "expert/ckpt/ckpt_best.pth.tar", "--n-episode",
                   "4", "--demo-path", str(demo_path), "--set", "demo.return_threshold=0", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert (cwd / demo_path).is_file()
