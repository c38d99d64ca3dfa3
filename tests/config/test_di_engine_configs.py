"""DI-engine's own CartPole configs (tests/di_engine_configs/, as DI-engine ships them) compile here without an
unknown-key warning, and their DI-engine keys are honoured (docs/coming_from_di_engine.md)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.build import build, load_config
from ding_lite.config import compile_config
from ding_lite.config.compile import ignored_keys
from ding_lite.data.buffer import UniformBuffer
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

CONFIGS = Path(__file__).resolve().parents[1] / "di_engine_configs"


@pytest.mark.parametrize("algo", ["dqn", "ppo", "acer"])
def test_di_engine_cartpole_config_compiles_without_unknown_keys(algo: str, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="ding_lite"):
        cfg = load_config(CONFIGS / f"cartpole_{algo}_config.py", strict=True)  # an unknown key would raise
    assert ignored_keys(cfg) == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    policy = build(cfg, "policy")  # every honoured key builds
    assert policy.learn_mode.forward is not None


def test_ppo_config_keys_are_honoured() -> None:
    cfg = load_config(CONFIGS / "cartpole_ppo_config.py")
    assert cfg.policy.model.action_space == "discrete"  # policy.action_space is the model's
    model = build(cfg, "policy")._model
    # DI-engine's VAC: encoder [64, 64, 128], then one 128-wide hidden layer in each head, then the output
    widths = [m.out_features for m in model.actor_trunk if isinstance(m, torch.nn.Linear)]
    assert widths == [128] and model.actor_head.in_features == 128 and model.critic_head.in_features == 128
    assert [m.out_features for m in model.actor_encoder if isinstance(m, torch.nn.Linear)] == [64, 64, 128]
    out = model.compute_actor_critic(torch.zeros(3, 4))
    assert out["logit"].shape == (3, 2) and out["value"].shape == (3,)
    assert cfg.policy.learn.learner.hook.save_ckpt_after_iter == 100


def test_acer_config_keys_are_honoured() -> None:
    cfg = load_config(CONFIGS / "cartpole_acer_config.py")
    assert cfg.policy.collect.unroll_len == 32 and cfg.policy.learn.discount_factor == 0.9
    assert cfg.policy.other.replay_buffer.max_use == 100
    assert "lambda_" not in cfg.policy.learn and "gae_lambda" not in cfg.policy.collect  # no effect: noted, dropped


def _cartpole(policy: dict) -> dict:
    return dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=policy)


def test_a_di_engine_alias_and_its_key_must_agree() -> None:
    with pytest.raises(ConfigError, match=r"'policy.learn.unroll_len'=16 \(DI-engine's\) and "
                                          r"'policy.collect.unroll_len'=32 name the same setting"):
        compile_config(_cartpole(dict(type="acer", learn=dict(unroll_len=16), collect=dict(unroll_len=32))))
    cfg = compile_config(_cartpole(dict(type="ppo", action_space="continuous")))
    assert cfg.policy.model.action_space == "continuous" and "action_space" not in cfg.policy


def test_dqn_head_keys_build_di_engine_heads() -> None:
    cfg = compile_config(_cartpole(dict(type="dqn", model=dict(obs_shape=4, action_shape=2, head_hidden_size=32,
                                                               head_layer_num=2))))
    model = build(cfg, "policy")._model
    assert [m.out_features for m in model.advantage_trunk if isinstance(m, torch.nn.Linear)] == [32, 32]
    assert model.value_trunk is not None and model.advantage.in_features == 32
    assert model(torch.zeros(5, 4))["logit"].shape == (5, 2)


def test_dqn_default_head_is_di_engine_s_one_hidden_layer_of_the_encoder_width() -> None:
    # DI-engine's DQN: head_hidden_size None means encoder_hidden_size_list[-1]; head_layer_num=1 hidden layer
    cfg = compile_config(_cartpole(dict(type="dqn", model=dict(obs_shape=4, action_shape=2,
                                                               encoder_hidden_size_list=[128, 128, 64]))))
    model = build(cfg, "policy")._model
    for trunk in (model.advantage_trunk, model.value_trunk):
        assert [(m.in_features, m.out_features) for m in trunk if isinstance(m, torch.nn.Linear)] == [(64, 64)]
    assert model.advantage.in_features == 64 and model.value is not None and model.value.in_features == 64
    bare = build(compile_config(_cartpole(dict(type="dqn", model=dict(obs_shape=4, action_shape=2,
                                                                      head_layer_num=0)))), "policy")._model
    assert isinstance(bare.advantage_trunk, torch.nn.Identity) and bare.advantage.in_features == 64
    with pytest.raises(ConfigError, match="model.head_layer_num must be ≥ 0"):
        build(compile_config(_cartpole(dict(type="dqn", model=dict(obs_shape=4, action_shape=2,
                                                                   head_layer_num=-1)))), "policy")


def test_max_use_retires_a_sample_after_that_many_draws() -> None:
    buf = UniformBuffer(EasyDict(replay_buffer_size=8, max_use=2), seed=0)
    buf.push({"x": np.arange(3)})
    drawn = np.concatenate([buf.sample(1)["x"] for _ in range(6)])  # 3 samples x 2 uses
    assert sorted(drawn.tolist()) == [0, 0, 1, 1, 2, 2] and len(buf) == 0
    with pytest.raises(RuntimeError, match="max_use"):
        buf.sample(1)
    buf.push({"x": np.array([7])})  # a new sample is live again
    assert len(buf) == 1 and buf.sample(1)["x"].tolist() == [7]
    with pytest.raises(ConfigError, match="max_use must be >= 1"):
        UniformBuffer(EasyDict(replay_buffer_size=8, max_use=0))


def test_di_engine_collect_n_episode() -> None:
    """DI-engine's policy.collect.n_episode: episodes per collect of the 'episode' collector; noted as having no
    effect with the 'sample' collector (before: an unknown-key warning asking 'did you mean demo.n_episode?')."""
    episodes = compile_config(_cartpole(dict(type="dqn", collect=dict(n_episode=4, collector=dict(type="episode")))))
    assert episodes.policy.collect.collector.n_episode == 4 and "n_episode" not in episodes.policy.collect
    notes: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: notes.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("ding_lite").addHandler(handler)
    try:
        samples = compile_config(_cartpole(dict(type="dqn", collect=dict(n_episode=4))), strict=True)
    finally:
        logging.getLogger("ding_lite").removeHandler(handler)
    assert "n_episode" not in samples.policy.collect and ignored_keys(samples) == []
    assert any("'policy.collect.n_episode' has no effect here: the 'sample' collector collects policy.collect.n_sample"
               in note for note in notes)


def test_the_shared_memory_note_says_what_the_subprocess_manager_does() -> None:
    # DI-engine's env.manager.shared_memory has no effect because the subprocess manager always uses shared memory
    # (docs/env_managers.md); the note said observations travel through the pipes
    from ding_lite.config.di_engine import NO_EFFECT

    note = NO_EFFECT["env.manager.shared_memory"]
    assert "always passes observations through shared memory" in note and "pipes" not in note


def _messages(make: Any) -> str:
    """The ding_lite log lines (notes and warnings) of ``make()``."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("ding_lite").addHandler(handler)
    try:
        make()
    finally:
        logging.getLogger("ding_lite").removeHandler(handler)
    return "\n".join(lines)


def test_update_per_collect_is_noted_as_unused_only_for_an_on_policy_policy() -> None:
    """The note says that each collect is learned in epoch_per_collect passes: true of PPO, not of an off-policy
    plugin policy whose replay schedule reads the key (before: the note, and the key dropped)."""
    from ding_lite.policy import Policy
    from ding_lite.registry import POLICY_REGISTRY

    class OffPolicyWithoutReplayKeys(Policy):  # a plugin that forgot to declare the replay schedule's keys
        config = dict(type="test_no_replay_keys", on_policy=False)

    POLICY_REGISTRY.register("test_no_replay_keys")(OffPolicyWithoutReplayKeys)
    try:
        off_policy = _messages(lambda: compile_config(_cartpole(dict(
            type="test_no_replay_keys", model=dict(type="dqn"), learn=dict(update_per_collect=4)))))
    finally:
        POLICY_REGISTRY._entries.pop("test_no_replay_keys")
    assert "epoch_per_collect passes" not in off_policy
    assert "unknown config key 'policy.learn.update_per_collect'" in off_policy
    on_policy = _messages(lambda: compile_config(_cartpole(dict(type="ppo", learn=dict(update_per_collect=4))),
                                                 strict=True))
    assert "'policy.learn.update_per_collect' has no effect here: each collect is learned in epoch_per_collect" \
           in on_policy
