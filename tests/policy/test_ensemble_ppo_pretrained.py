"""Building an EPPO ensemble from separately trained PPO checkpoints (``policy.init_member_ckpts``) and training on."""
from __future__ import annotations

import json
import math

import pytest
import torch

from ding_lite.build import build, build_env_managers, load_config
from ding_lite.config import read_config
from ding_lite.entry import serial_pipeline
from ding_lite.errors import CheckpointError
from ding_lite.model.ensemble_vac import ACTOR_PREFIXES, CRITIC_PREFIXES
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint
from tests.conftest import DIZOO_CARTPOLE

pytestmark = pytest.mark.unittest

SMALL = ["policy.collect.n_sample=256", "policy.learn.epoch_per_collect=2", "env.n_evaluator_episode=2",
         "env.evaluator_env_num=2", "policy.learn.learner.hook.save_ckpt_after_iter=0"]


def _train_ppo(tmp_path, seed: int) -> str:
    exp = tmp_path / f"ppo{seed}"
    serial_pipeline(str(DIZOO_CARTPOLE / "cartpole_ppo_config.py"), seed=seed, max_env_step=512, exp_dir=exp,
                    overrides=(*SMALL, "env.stop_value=None"), progress=False)
    return str(latest_checkpoint(exp / "ckpt"))


def _eppo_config(ckpts: list[str]):
    main, create = read_config(DIZOO_CARTPOLE / "cartpole_eppo_config.py")
    main["policy"]["init_member_ckpts"] = ckpts
    main["policy"]["model"]["ensemble_size"] = len(ckpts)
    main["env"]["stop_value"] = None  # train the whole (tiny) budget
    return main, create


def _part(state: dict, prefixes: tuple[str, ...]) -> dict:
    return {k: v for k, v in state.items() if k.startswith(prefixes)}


def test_ensemble_from_three_pretrained_ppo_checkpoints_trains_every_member(tmp_path):
    torch.manual_seed(0)
    ckpts = [_train_ppo(tmp_path, seed) for seed in range(3)]
    ppo_models = [load_checkpoint(p)["policy"]["model"] for p in ckpts]

    # built from the checkpoints: member k is PPO run k's actor, the critic is run 0's
    cfg = load_config(_eppo_config(ckpts), overrides=SMALL, strict=True)
    _, evaluator_env = build_env_managers(cfg, seed=0, collect=False)
    evaluator_env.close()
    policy = build(cfg, "policy")
    for k, member in enumerate(policy._model.members):
        for name, value in member.state_dict().items():
            torch.testing.assert_close(value, ppo_models[k][name], rtol=0, atol=0)
    for name, value in policy._model.critic.state_dict().items():
        torch.testing.assert_close(value, ppo_models[0][name], rtol=0, atol=0)

    exp = tmp_path / "eppo"
    result = serial_pipeline(_eppo_config(ckpts), seed=0, max_env_step=1024, exp_dir=exp, overrides=SMALL,
                             strict=True, progress=False)
    # 4 collects of 2 epochs of 256 / 64 minibatches: one train iteration per gradient step
    assert result["train_iter"] == 4 * 2 * 4 and math.isfinite(result["eval_return"])
    assert json.loads((exp / "result.json").read_text())["eval_return"] == result["eval_return"]
    trained = load_checkpoint(latest_checkpoint(exp / "ckpt"))["policy"]["model"]
    for k in range(3):
        member = {name[len(f"members.{k}."):]: v for name, v in trained.items() if name.startswith(f"members.{k}.")}
        assert member.keys() == _part(ppo_models[k], ACTOR_PREFIXES).keys()
        changed = [name for name in member if not torch.equal(member[name], ppo_models[k][name])]
        assert len(changed) == len(member), f"member {k}: unchanged weights {set(member) - set(changed)}"
    critic = {name[len("critic."):]: v for name, v in trained.items() if name.startswith("critic.")}
    assert critic.keys() == _part(ppo_models[0], CRITIC_PREFIXES).keys()
    assert any(not torch.equal(v, ppo_models[0][name]) for name, v in critic.items())


def test_member_checkpoint_of_another_shape_is_a_clear_error(tmp_path):
    ckpt = _train_ppo(tmp_path, 0)
    main, create = _eppo_config([ckpt])
    main["policy"]["model"]["encoder_hidden_size_list"] = [32]
    cfg = load_config((main, create), overrides=SMALL)
    _, evaluator_env = build_env_managers(cfg, seed=0, collect=False)
    evaluator_env.close()
    with pytest.raises(CheckpointError, match=r"init_member_ckpts\[0\].*encoder_hidden_size_list"):
        build(cfg, "policy")
