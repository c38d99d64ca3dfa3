"""The Policy base class (ding_lite/policy/base_policy.py) as a DI-engine port meets it: ``default_model`` written
DI-engine's way (an instance method returning ``(name, import_names)``), ``self._cfg`` / ``self._cuda`` /
``self._device`` read as DI-engine names them, and a policy's own
``_load_state_dict_learn`` given a checkpoint of another model size."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.errors import CheckpointError, ConfigError, UnknownTypeError
from ding_lite.policy import DQNPolicy, Policy
from ding_lite.policy.base_policy import default_model_name
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.utils.checkpoint import load_policy_weights, save_checkpoint

pytestmark = pytest.mark.unittest

ENV = dict(type="gymnasium", env_id="CartPole-v1")


class _DIEngineDQN(DQNPolicy):
    """DQN whose default_model is DI-engine's: an instance method, a (name, import_names) pair."""

    config = dict(type="test_base_di_dqn")

    def default_model(self):  # type: ignore[override]
        return "dqn", ["ding_lite.model.template.q_learning"]  # DI-engine's module, renamed: ding_lite has none

    def _state_dict_learn(self) -> dict:  # DI-engine's style: every entry by hand
        return {"model": self._model.state_dict(), "optimizer": self._optimizers["q"].state_dict()}

    def _load_state_dict_learn(self, state_dict: dict) -> None:
        self._model.load_state_dict(state_dict["model"])  # torch's RuntimeError on a size mismatch


class _DIEngineNames(DQNPolicy):
    """Reads the config and the device by DI-engine's names."""

    config = dict(type="test_base_di_names")

    def _init_learn(self) -> None:
        super()._init_learn()
        self.read = (self._cfg.learn.learning_rate, self._cuda, self._device)


class _NeedsInstance(Policy):
    config = dict(type="test_base_needs_instance")

    def default_model(self):  # type: ignore[override]
        return self._cfg.model.kind  # reads the config: there is none before the policy exists


class _DIEngineTemplate(Policy):
    """Names a DI-engine model template that ding_lite lacks, its module renamed with the package."""

    config = dict(type="test_base_di_template")

    def default_model(self):  # type: ignore[override]
        return "test_base_pg", ["ding_lite.model.template.pg"]


class _NoModel(Policy):
    config = dict(type="test_base_no_model")


class _DIEngineTransition(DQNPolicy):
    """DI-engine's signature of _process_transition, kept by a port."""

    config = dict(type="test_base_di_transition")

    def _process_transition(self, obs, policy_output, timestep):  # type: ignore[override]
        return {"obs": obs, "action": policy_output["action"], "reward": timestep.reward}


@pytest.fixture(autouse=True)
def registered():
    """The test policies in the registry during each test only (the contract test runs every registered policy)."""
    classes = (_DIEngineDQN, _DIEngineNames, _NeedsInstance, _DIEngineTemplate, _NoModel, _DIEngineTransition)
    for cls in classes:
        POLICY_REGISTRY.register(cls.config["type"])(cls)
    yield
    for cls in classes:
        POLICY_REGISTRY._entries.pop(cls.config["type"])


def test_di_engine_default_model_compiles_and_builds() -> None:
    assert default_model_name(_DIEngineDQN) == "dqn"
    cfg = compile_config(dict(env=ENV, policy=dict(type="test_base_di_dqn", model=dict(obs_shape=4, action_shape=2))))
    assert cfg.policy.model.type == "dqn"
    policy = _DIEngineDQN(cfg.policy)
    assert default_model_name(policy) == "dqn"


def test_di_engine_names_of_the_config_and_device_are_read() -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="test_base_di_names", model=dict(obs_shape=4, action_shape=2),
                                                   learn=dict(learning_rate=0.002))))
    policy = _DIEngineNames(cfg.policy, enable_field=["learn"])  # before: AttributeError: no attribute '_cfg'
    assert policy.read == (0.002, False, torch.device("cpu")) and policy._cfg is policy.cfg


@pytest.mark.parametrize("policy_type,match", [
    ("test_base_needs_instance", r"_NeedsInstance.default_model\(\) cannot name the model before the policy is built "
                                 r".*make it a classmethod .* or set policy.model.type"),
    ("test_base_no_model", r"policy class _NoModel names no model: set policy.model.type"),
    # before: "cannot import module 'ding_lite.model.template.pg' ... check the module path", which cannot help
    ("test_base_di_template", r"unknown model type 'test_base_pg'; known model types: acer, (\w+, )*dqn, .* must be "
                              r"registered with @MODEL_REGISTRY.register\('test_base_pg'\)"),
])
def test_default_model_that_names_nothing_is_one_config_error(policy_type: str, match: str) -> None:
    with pytest.raises((ConfigError, UnknownTypeError), match=match):
        compile_config(dict(env=ENV, policy=dict(type=policy_type)))


def test_own_load_state_dict_learn_with_another_model_size_is_a_checkpoint_error(tmp_path: Path) -> None:
    def policy(hidden: list[int]) -> _DIEngineDQN:
        cfg = compile_config(dict(env=ENV, policy=dict(type="test_base_di_dqn", model=dict(
            obs_shape=4, action_shape=2, encoder_hidden_size_list=hidden))))
        return _DIEngineDQN(cfg.policy, enable_field=["learn"])

    torch.manual_seed(0)
    path = save_checkpoint(tmp_path / "c.pth.tar", {"policy": policy([32]).learn_mode.state_dict(),
                                                    "policy_type": "test_base_di_dqn"})
    with pytest.raises(CheckpointError, match=r"c.pth.tar \(a 'test_base_di_dqn' checkpoint\): checkpoint entry "
                                              r"'model' does not fit this policy: shape mismatch: encoder.1.weight "
                                              r"\[32, 4\] in the checkpoint, \[16, 4\] here"):
        load_policy_weights(policy([16]).learn_mode, path)
    load_policy_weights(policy([32]).learn_mode, path)  # the same size loads


def test_di_engine_process_transition_signature_is_refused_when_built() -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="test_base_di_transition",
                                                   model=dict(obs_shape=4, action_shape=2))))
    with pytest.raises(ConfigError, match=r"policy 'test_base_di_transition': _DIEngineTransition._process_transition"
                                          r"\(obs, policy_output, timestep\) does not fit how ding_lite calls it, "
                                          r"_process_transition\(policy_output\)"):
        _DIEngineTransition(cfg.policy)
