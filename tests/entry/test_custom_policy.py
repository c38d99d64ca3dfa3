"""A custom policy defined outside ding_lite/, registered with @POLICY.register and named in a config's
import_names, trains through ``ding_lite -m serial`` with no other change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from ding_lite.config import read_config

pytestmark = pytest.mark.unittest

PLUGINS = Path(__file__).resolve().parent / "plugins"

CONFIG = """
main_config = dict(
    exp_name="custom",
    env=dict(collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, stop_value=195),
    policy=dict(
        reward_scale=0.5,
        model=dict(encoder_hidden_size_list=[32, 32]),
        learn=dict(update_per_collect=2, batch_size=16, learner=dict(hook=dict(log_show_after_iter=1))),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=20)),
    ),
)
create_config = dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    policy=dict(type="custom_dqn", import_names=["custom_dqn_plugin"]),
)
"""


def test_custom_policy_trains_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "custom_config.py").write_text(CONFIG)
    proc = run_cli("-m", "serial", "-c", "custom_config.py", "--strict", "--max-env-step", "160", cwd=tmp_path,
                   extra_pythonpath=[str(PLUGINS)])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert all(line.startswith(("[start]", "[eval]", "[done]")) for line in lines), proc.stderr  # no warnings
    result = json.loads((tmp_path / "custom" / "result.json").read_text())
    assert result["env_step"] == 160 and result["train_iter"] > 0
    # its own setting was known (--strict passed), reached the policy, and its code ran in the learner
    assert "[learn] iter 1 " in (log := (tmp_path / "custom" / "log" / "train.log").read_text())
    assert "reward_scale=0.5" in log
    # read, not compiled: compiling would import the plugin into this process and register it for other tests
    main, _ = read_config(tmp_path / "custom" / "total_config.py")
    assert main["policy"]["type"] == "custom_dqn" and main["policy"]["reward_scale"] == 0.5
    assert main["policy"]["import_names"] == ["custom_dqn_plugin"]
    assert main["policy"]["nstep"] == 1 and main["policy"]["learn"]["double"] is True  # DQN's defaults, inherited


def test_plugin_is_not_visible_without_its_path(tmp_path: Path) -> None:
    (tmp_path / "custom_config.py").write_text(CONFIG)
    proc = run_cli("-m", "serial", "-c", "custom_config.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot import module 'custom_dqn_plugin' listed in policy.import_names" in proc.stderr


def test_saved_config_finds_the_plugin_next_to_the_original_config(tmp_path: Path) -> None:
    """total_config.py says `Run it again with: ding_lite -m serial -c total_config.py`; with the plugin module next
    to the original config (as the tutorial keeps it), that now works from the experiment folder too."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "custom_config.py").write_text(CONFIG)
    (source / "custom_dqn_plugin.py").write_text((PLUGINS / "custom_dqn_plugin.py").read_text())
    proc = run_cli("-m", "serial", "-c", "src/custom_config.py", "--max-env-step", "16", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # before: "cannot import module 'custom_dqn_plugin' listed in policy.import_names" (only src/ held it)
    proc = run_cli("-m", "eval", "-c", "custom/total_config.py", "--n-episode", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "custom/ckpt/ckpt_best.pth.tar: return" in proc.stderr


def test_a_plugin_policy_missing_a_method_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    plugin = (PLUGINS / "custom_dqn_plugin.py").read_text()
    (tmp_path / "custom_dqn_plugin.py").write_text(plugin + '''
from ding_lite.policy import Policy


@POLICY_REGISTRY.register("custom_no_samples")
class NoSamples(Policy):
    config = dict(type="custom_no_samples")

    @classmethod
    def default_model(cls):
        return "dqn"
''')
    (tmp_path / "custom_config.py").write_text(CONFIG.replace('type="custom_dqn"', 'type="custom_no_samples"'))
    proc = run_cli("-m", "serial", "-c", "custom_config.py", "--max-env-step", "16", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "ding_lite: error: policy 'custom_no_samples': NoSamples does not implement _init_learn, _forward_learn, "
        "_init_collect, _forward_collect, _get_train_sample, _init_eval, _forward_eval, which its modes call (see "
        "docs/tutorial_custom_policy.md)")
    assert not (tmp_path / "custom").exists()  # before: NotImplementedError's traceback, after the folder was made
