"""DI-engine's own Pendulum SAC and TD3 configs (tests/di_engine_configs/, as DI-engine ships them) compile here
without an unknown-key warning, their DI-engine keys are honoured, and they train (docs/coming_from_di_engine.md)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import run_cli

from ding_lite.build import build, build_env_managers, load_config
from ding_lite.config.compile import ignored_keys

pytestmark = pytest.mark.unittest

CONFIGS = Path(__file__).resolve().parents[1] / "di_engine_configs"


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_di_engine_pendulum_config_compiles_without_unknown_keys(algo: str, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="ding_lite"):
        cfg = load_config(CONFIGS / f"pendulum_{algo}_config.py", strict=True)  # an unknown key would raise
    assert ignored_keys(cfg) == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def _linear_widths(net: torch.nn.Module) -> list[int]:
    return [m.out_features for m in net.modules() if isinstance(m, torch.nn.Linear)]


def test_sac_config_keys_are_honoured() -> None:
    cfg = load_config(CONFIGS / "pendulum_sac_config.py", seed=0)
    assert cfg.policy.learning_starts == 1000  # DI-engine's random_collect_size
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    with collector_env, evaluator_env:
        # env.act_scale: the env takes actions in [-1, 1] (DI-engine's units) and scales them to the torques [-2, 2]
        assert collector_env.action_space.low.tolist() == [-1.0] and collector_env.action_space.high.tolist() == [1.0]
        policy = build(cfg, "policy")
    model = policy._model
    # DI-engine's ContinuousQAC layout: a first hidden layer, then actor_head_layer_num (1) more, of width 128
    assert _linear_widths(model.actor) == [128, 128, 2] and _linear_widths(model.critic.nets[0]) == [128, 128, 1]
    assert len(model.critic.nets) == 2  # twin_critic
    lrs = {name: [g["lr"] for g in opt.param_groups] for name, opt in policy._optimizers.items()}
    assert lrs == {"critic": [0.001], "actor": [0.001, 0.0003]}  # learning_rate_q, _policy, _alpha
    assert cfg.policy.learn.ignore_done and cfg.policy.learn.target_theta == 0.005
    assert policy.learn_mode.replay.update_per_collect == 1 and cfg.policy.collect.n_sample == 10


def test_td3_config_keys_are_honoured() -> None:
    cfg = load_config(CONFIGS / "pendulum_td3_config.py", seed=0)
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    with collector_env, evaluator_env:
        policy = build(cfg, "policy")
    assert cfg.policy.learning_starts == 800 and policy._noise_clip == 0.5
    assert cfg.policy.learn.noise_sigma == 0.1 and cfg.policy.collect.noise_sigma == 0.1
    assert cfg.policy.learn.actor_update_freq == 2 and policy.learn_mode.replay.update_per_collect == 2
    assert _linear_widths(policy._model.actor) == [64, 64, 1]  # DI-engine's default head width 64
    assert policy._model.bounds.high.tolist() == [1.0]
    actions = policy.collect_mode.forward(np.zeros((4, 3), np.float32), env_step=0)["action"]
    assert actions.shape == (4, 1) and (np.abs(actions) <= 1).all()


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_di_engine_pendulum_config_trains_unchanged(algo: str, tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", "-c", str(CONFIGS / f"pendulum_{algo}_config.py"), "--max-env-step", "1200",
                   "--exp-name", "exp", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["train_iter"] > 0 and result["env_step"] >= 1200
