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
    assert all(line.startswith(("[eval]", "[done]")) for line in proc.stderr.strip().splitlines()), proc.stderr
    result = json.loads((tmp_path / "di_style_pg" / "result.json").read_text())
    assert result["env_step"] >= 300 and result["train_iter"] > 0
    proc = run_cli("-m", "eval", "-c", "di_style_pg/total_config.py", "--load-ckpt",
                   "di_style_pg/ckpt/ckpt_best.pth.tar", cwd=tmp_path, extra_pythonpath=[str(PLUGINS)])
    assert proc.returncode == 0, proc.stderr
    assert "return" in proc.stderr.strip().splitlines()[-1]
