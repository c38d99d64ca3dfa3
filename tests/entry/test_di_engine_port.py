"""A policy ported from DI-engine with the changes docs/coming_from_di_engine.md lists (its plugin:
tests/entry/plugins/di_style_pg_plugin.py) trains through ``ding_lite -m serial`` and its checkpoint plays through
``-m eval``, with DI-engine's config as DI-engine writes it (``collector=dict(type='episode')``, ``n_episode``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

pytestmark = pytest.mark.unittest

PLUGINS = Path(__file__).resolve().parent / "plugins"

CONFIG = """
from easydict import EasyDict

main_config = EasyDict(dict(
    exp_name="di_style_pg",
    env=dict(collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, stop_value=195),
    policy=dict(
        model=dict(obs_shape=4, action_shape=2),
        learn=dict(batch_size=64, learning_rate=0.01),
        collect=dict(n_episode=4, discount_factor=0.9),
        eval=dict(evaluator=dict(eval_freq=10)),
    ),
))
create_config = EasyDict(dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="di_style_pg", import_names=["di_style_pg_plugin"]),
    collector=dict(type="episode"),
))
"""


def test_a_policy_without_n_sample_trains_on_whole_episodes_and_evaluates(tmp_path: Path) -> None:
    (tmp_path / "pg_config.py").write_text(CONFIG)
    proc = run_cli("-m", "serial", "-c", "pg_config.py", "--strict", "--max-env-step", "300", cwd=tmp_path,
                   extra_pythonpath=[str(PLUGINS)])
    # before: AttributeError ('FrozenSection' object has no attribute 'n_sample'), a traceback from the train loop
    assert proc.returncode == 0, proc.stderr
    assert all(line.startswith(("[start]", "[eval]", "[done]")) for line in proc.stderr.strip().splitlines()), \
        proc.stderr
    result = json.loads((tmp_path / "di_style_pg" / "result.json").read_text())
    assert result["env_step"] >= 300 and result["train_iter"] > 0
    proc = run_cli("-m", "eval", "-c", "di_style_pg/total_config.py", "--load-ckpt",
                   "di_style_pg/ckpt/ckpt_best.pth.tar", cwd=tmp_path, extra_pythonpath=[str(PLUGINS)])
    assert proc.returncode == 0, proc.stderr
    assert "return" in proc.stderr.strip().splitlines()[-1]


# DI-engine's cartpole_dqn_config.py (tests/di_engine_configs/), its policy type swapped for the ported DQN plugin.
DQN_CONFIG = """
from easydict import EasyDict

main_config = EasyDict(dict(
    exp_name='di_style_dqn',
    env=dict(collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195),
    policy=dict(
        cuda=False,
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True),
        nstep=1,
        discount_factor=0.97,
        learn=dict(update_per_collect=5, batch_size=64, learning_rate=0.001),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(eps=dict(type='exp', start=0.95, end=0.1, decay=10000),
                   replay_buffer=dict(replay_buffer_size=20000)),
    ),
))
create_config = EasyDict(dict(
    env=dict(type='cartpole', import_names=['dizoo.classic_control.cartpole.envs.cartpole_env']),
    env_manager=dict(type='base'),
    policy=dict(type='di_style_dqn', import_names=['di_style_dqn_plugin']),
))
"""


@pytest.mark.parametrize("priority", [False, True])
def test_a_ported_di_engine_dqn_learns_cartpole_through_the_cli(tmp_path: Path, priority: bool) -> None:
    """The ported DQN (DI-engine's hooks, self._cfg reads, instance default_model, its own state and monitor hooks,
    'priority' in its log dict) reaches CartPole's stop value: seed 0 at 1,272 env steps (1,144 with priority=True;
    952 on an Intel Xeon, the CPU's float rounding), about 6 s; its checkpoint plays through -m eval."""
    (tmp_path / "dqn_config.py").write_text(DQN_CONFIG)
    proc = run_cli("-m", "serial", "-c", "dqn_config.py", "-s", "0", "--strict", "--max-env-step", "3000",
                   "--set", f"policy.priority={priority}", cwd=tmp_path, extra_pythonpath=[str(PLUGINS)])
    assert proc.returncode == 0, proc.stderr
    allowed = ("[start]", "[eval]", "[done]", "note: policy.other.replay_buffer.type is 'prioritized'")
    assert all(line.startswith(allowed) for line in proc.stderr.strip().splitlines()), proc.stderr
    result = json.loads((tmp_path / "di_style_dqn" / "result.json").read_text())
    assert result["stop_reason"] == "stop value reached", result
    assert result["env_step"] <= 2000 and result["ignored_keys"] == []
    proc = run_cli("-m", "eval", "-c", "di_style_dqn/total_config.py", "--load-ckpt",
                   "di_style_dqn/ckpt/ckpt_best.pth.tar", cwd=tmp_path, extra_pythonpath=[str(PLUGINS)])
    assert proc.returncode == 0, proc.stderr
    assert "return" in proc.stderr.strip().splitlines()[-1]
