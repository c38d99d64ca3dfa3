"""A plugin run with -m parallel as with -m serial: the modules of import_names found next to the config file in
every actor, and the samples a policy learns on as writable as in the serial pipeline."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ding_lite.entry.parallel import parallel_pipeline

pytestmark = pytest.mark.unittest

# a plugin module next to its config file, and nowhere on the actors' PYTHONPATH
PLUGIN = '''
from ding_lite.policy.ppo import PPOPolicy
from ding_lite.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("folder_ppo")
class FolderPPO(PPOPolicy):
    config = dict(type="folder_ppo")


@POLICY_REGISTRY.register("in_place_ppo")
class InPlacePPO(PPOPolicy):
    """Writes into its batch, as a policy that normalises a column in place does."""

    config = dict(type="in_place_ppo")

    def _forward_learn(self, batch):
        batch["obs"] *= 1.0
        return super()._forward_learn(batch)
'''

CONFIG = '''
main_config = dict(
    exp_name="run",
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"],
             collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1, stop_value=195),
    policy=dict(type="{policy}", import_names=["parallel_folder_plugin"], numba=False,
                learn=dict(epoch_per_collect=1, batch_size=32), collect=dict(n_sample=32),
                eval=dict(final_episodes=1)),
    parallel=dict(n_collectors=1),
)
'''


def _run(tmp_path: Path, policy: str) -> dict:
    (tmp_path / "parallel_folder_plugin.py").write_text(PLUGIN)
    (tmp_path / "config.py").write_text(CONFIG.format(policy=policy))
    return parallel_pipeline(str(tmp_path / "config.py"), seed=0, max_env_step=64, exp_dir=tmp_path / "run",
                             progress=False)


def test_actors_find_the_plugin_next_to_the_config_file(local_ray, tmp_path):
    result = _run(tmp_path, "folder_ppo")  # before: 'the collector0 actor failed to start: ... cannot import'
    assert result["env_step"] == 64
    assert json.loads((tmp_path / "run" / "result.json").read_text())["train_iter"] == result["train_iter"] > 0


def test_a_policy_may_write_into_the_samples_of_one_collector(local_ray, tmp_path):
    result = _run(tmp_path, "in_place_ppo")  # before: ValueError: output array is read-only (Ray's object store)
    assert result["env_step"] == 64 and result["train_iter"] > 0


def test_a_gsl_specialist_actor_searches_the_drivers_config_folders(tmp_path, monkeypatch):
    from ding_lite.gsl.specialists import SpecialistActor
    from ding_lite.registry import import_modules

    (tmp_path / "gsl_folder_plugin.py").write_text("VALUE = 1\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # the actor's process: restored after the test
    monkeypatch.setattr("ding_lite.registry._CONFIG_FOLDERS", [])
    SpecialistActor(lambda *args, **kwargs: {}, folders=(str(tmp_path),))
    import_modules(["gsl_folder_plugin"], "policy")  # before: PluginImportError (only the actor's own sys.path)
