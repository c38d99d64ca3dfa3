"""A plugin subclass of OffPolicyPolicy (the docs' way to write a replay-based policy, docs/sac_td3.md) that gets
one of the base's hooks wrong is one ConfigError naming the fix, not a run that never learns or a KeyError,
AttributeError or NotImplementedError from inside the base's update."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, PRIORITY, Q_VALUE, REWARD, TERMINATED
from ding_lite.errors import ConfigError
from ding_lite.policy import OffPolicyPolicy

pytestmark = pytest.mark.unittest


def _cfg(*overrides: str) -> Any:
    policy: dict[str, Any] = dict(type="dqn", model=dict(obs_shape=4, action_shape=2))
    for key in overrides:
        policy[key] = True
    return compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=policy)).policy


def _batch(n: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {OBS: rng.normal(size=(n, 4)).astype(np.float32), NEXT_OBS: rng.normal(size=(n, 4)).astype(np.float32),
            ACTION: rng.integers(2, size=n), REWARD: np.ones(n, np.float32), TERMINATED: np.zeros(n, bool)}


class _OneStage(OffPolicyPolicy):
    """A one-stage Q-learner written as the docs say: super()._init_learn(), _add_stage, _add_target, _stage_loss."""

    @classmethod
    def default_model(cls) -> str:
        return "dqn"

    def _init_learn(self) -> None:
        super()._init_learn()
        self._target = self._add_target("target_model", self._model)
        self._add_stage("q", torch.optim.Adam(self._model.parameters(), lr=1e-3))

    def _stage_loss(self, stage: str, data: dict, context: dict) -> tuple[torch.Tensor, dict]:
        q = self._model(data[OBS])[Q_VALUE].gather(1, data[ACTION].long()[:, None]).squeeze(1)
        with torch.no_grad():
            y = data[REWARD] + 0.9 * self._target(data[NEXT_OBS])[Q_VALUE].max(1).values
        context[PRIORITY] = (q - y).abs().detach()
        loss = (q - y).pow(2).mean()
        return loss, {"loss": loss.detach()}

    def _init_collect(self) -> None:
        pass

    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        return {ACTION: np.zeros(len(obs), np.int64)}

    def _get_train_sample(self, rollout: dict) -> dict:
        return rollout

    def _init_eval(self) -> None:
        pass

    def _forward_eval(self, obs: np.ndarray) -> dict:
        return {ACTION: np.zeros(len(obs), np.int64)}


class _NoStage(_OneStage):
    def _init_learn(self) -> None:
        OffPolicyPolicy._init_learn(self)  # registers nothing: before, every update stepped no optimiser


class _NoSuper(_OneStage):
    def _init_learn(self) -> None:
        self._add_stage("q", torch.optim.Adam(self._model.parameters()))  # before: AttributeError _stage_names


class _NoInit(_OneStage):
    def _init_learn(self) -> None:
        pass  # neither super()._init_learn() nor stages: before, AttributeError at the first update


class _NoLoss(_OneStage):
    _stage_loss = OffPolicyPolicy._stage_loss  # before: NotImplementedError at the first update


class _BadStage(_OneStage):
    def _stages(self, step: int) -> list[str]:
        return ["qq"]  # before: KeyError 'qq'


class _NoPriority(_OneStage):
    def _stage_loss(self, stage: str, data: dict, context: dict) -> tuple[torch.Tensor, dict]:
        loss, log = super()._stage_loss(stage, data, context)
        del context[PRIORITY]
        return loss, log


def test_the_documented_plugin_learns_and_reports_priorities() -> None:
    policy = _OneStage(_cfg("priority"))
    before = [p.detach().clone() for p in policy._model.parameters()]
    log = policy.learn_mode.forward(_batch())
    assert log[PRIORITY].shape == (8,)
    assert any(not torch.equal(p, b) for p, b in zip(policy._model.parameters(), before, strict=True))


@pytest.mark.parametrize("cls,message", [
    (_NoStage, r"_NoStage\._init_learn registers no update stage; call self\._add_stage"),
    (_NoSuper, r"_NoSuper\._init_learn calls _add_stage before super\(\)\._init_learn\(\)"),
    (_NoInit, r"_NoInit\._init_learn must call super\(\)\._init_learn\(\)"),
    (_NoLoss, r"_NoLoss does not implement _stage_loss\(stage, data, context\)"),
])
def test_a_learn_mode_that_cannot_update_is_named_when_the_policy_is_built(cls: type, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^policy 'dqn': {message}"):
        cls(_cfg())
    cls(_cfg(), enable_field=["collect", "eval"])  # without the learn mode there is nothing to check


def test_a_stage_that_was_never_registered_is_named() -> None:
    policy = _BadStage(_cfg())
    with pytest.raises(ConfigError, match=r"_BadStage\._stages\(0\) returned 'qq', not a registered stage \(q\)$"):
        policy.learn_mode.forward(_batch())


def test_priority_without_a_td_error_in_the_context_is_named() -> None:
    _NoPriority(_cfg()).learn_mode.forward(_batch())  # priorities not asked for: fine
    with pytest.raises(ConfigError, match=r"^policy\.priority=True, but no stage of _NoPriority left "
                                          r"context\['priority'\]"):
        _NoPriority(_cfg("priority")).learn_mode.forward(_batch())


class _OwnUpdate(_OneStage):
    """Its own optimiser and update, with the base's target network and counters (super()._init_learn(), no stage)."""

    def _init_learn(self) -> None:
        OffPolicyPolicy._init_learn(self)
        self._target = self._add_target("target_model", self._model)
        self._own_optimizer = torch.optim.Adam(self._model.parameters(), lr=1e-3)

    def _forward_learn(self, batch: dict) -> dict:
        loss, log = self._stage_loss("q", self.batch_tensors(batch), {})
        self._own_optimizer.zero_grad()
        loss.backward()
        self._own_optimizer.step()
        self._update_targets()
        return log


class _WrapsNoStage(_OwnUpdate):
    def _forward_learn(self, batch: dict) -> dict:
        return OffPolicyPolicy._forward_learn(self, batch)  # the base's update, with no stage to step


def test_a_plugin_with_its_own_update_and_no_stage_is_built_and_learns() -> None:
    # before, the build-time check refused it ('registers no update stage') though its _forward_learn needs none
    policy = _OwnUpdate(_cfg())
    before = [p.detach().clone() for p in policy._model.parameters()]
    assert "loss" in policy.learn_mode.forward(_batch())
    assert any(not torch.equal(p, b) for p, b in zip(policy._model.parameters(), before, strict=True))
    with pytest.raises(ConfigError, match=r"^policy 'dqn': _WrapsNoStage\._init_learn registers no update stage"):
        _WrapsNoStage(_cfg()).learn_mode.forward(_batch())  # one that calls the base's update is named there
