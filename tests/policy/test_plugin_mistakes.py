"""A plugin policy or model that breaks what the workers expect of it (ding_lite/policy/hook_checks.py,
ding_lite/model/common.py's build_model, the learner's log handling) is one ConfigError naming the method, not a
KeyError, AttributeError or NotImplementedError deep in a worker."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from ding_lite.config import compile_config
from ding_lite.errors import ConfigError
from ding_lite.model.common import build_model
from ding_lite.policy import DQNPolicy, Policy
from ding_lite.registry import MODEL_REGISTRY, POLICY_REGISTRY
from ding_lite.utils.log import is_scalar
from ding_lite.worker.learner import as_log_list

pytestmark = pytest.mark.unittest

ENV = dict(type="gymnasium", env_id="CartPole-v1")
OBS = np.zeros((3, 4), dtype=np.float32)


def _cfg(policy_type: str = "dqn") -> dict:
    return compile_config(dict(env=ENV, policy=dict(type=policy_type, model=dict(obs_shape=4, action_shape=2)))).policy


class _NoLearn(Policy):
    """Implements collect and eval, leaves out what learning and samples need."""

    @classmethod
    def default_model(cls) -> str:
        return "dqn"

    def _init_learn(self) -> None:
        pass

    def _init_collect(self) -> None:
        pass

    def _init_eval(self) -> None:
        pass

    def _forward_collect(self, obs, env_step=0):
        return {"action": np.zeros(len(obs), dtype=np.int64)}

    def _forward_eval(self, obs):
        return {"action": np.zeros(len(obs), dtype=np.int64)}


def test_a_method_the_modes_call_left_out_is_named_when_the_policy_is_built() -> None:
    with pytest.raises(ConfigError, match=r"_NoLearn does not implement _forward_learn, _get_train_sample, which its "
                                          r"modes call"):
        _NoLearn(_cfg())  # before: NotImplementedError in the learner, after the run's folder was written
    _NoLearn(_cfg(), enable_field=["eval"])  # eval needs neither


class _Outputs(DQNPolicy):
    """DQN whose collect / eval outputs, samples and logs are replaced by ``self.bad``."""

    bad: dict = {}

    def _forward_collect(self, obs, env_step=0):
        return self.bad.get("collect", super()._forward_collect)(obs, env_step)

    def _forward_eval(self, obs):
        return self.bad.get("eval", super()._forward_eval)(obs)

    def _process_transition(self, policy_output):
        return self.bad.get("transition", super()._process_transition)(policy_output)

    def _get_train_sample(self, rollout):
        samples = super()._get_train_sample(rollout)
        return self.bad.get("samples", lambda s: s)(samples)


@pytest.mark.parametrize("output,described", [
    ({"act": np.zeros(3)}, r"keys \['act'\] \(no 'action'\)"),
    ({"action": np.zeros(1)}, r"'action' of shape \[1\]"),
    (np.zeros(3), "a ndarray"),
])
def test_collect_and_eval_outputs_need_one_action_per_observation(output, described) -> None:
    policy = _Outputs(_cfg())
    policy.bad = {"collect": lambda obs, env_step: output, "eval": lambda obs: output}
    with pytest.raises(ConfigError, match=rf"_Outputs._forward_collect\(obs, env_step\) returned {described} for 3 "
                                          r"observations; it must return a dict with 'action'"):
        policy.collect_mode.forward(OBS, env_step=0)  # before: a KeyError in the collector, or the env blamed
    with pytest.raises(ConfigError, match=rf"_Outputs._forward_eval\(obs\) returned {described} for 3"):
        policy.eval_mode.forward(OBS)
    policy.bad = {}
    assert policy.collect_mode.forward(OBS, env_step=0)["action"].shape == (3,)  # a right one passes as it is
    masked = {"observation": OBS, "action_mask": np.ones((3, 2), dtype=bool)}
    policy.bad = {"eval": lambda obs: {"action": np.zeros(3)}}
    assert len(policy.eval_mode.forward(masked)["action"]) == 3  # N of a dict observation: its arrays' rows


def test_train_samples_must_be_columns_not_di_engines_list() -> None:
    policy = _Outputs(_cfg())
    policy.bad = {"samples": lambda s: [{k: v[i] for k, v in s.items()} for i in range(len(s["obs"]))]}
    rollout = {"obs": np.zeros((2, 1, 4), np.float32), "next_obs": np.zeros((2, 1, 4), np.float32),
               "action": np.zeros((2, 1), np.int64), "reward": np.ones((2, 1), np.float32),
               "terminated": np.zeros((2, 1), bool), "truncated": np.array([[False], [True]]),
               "done": np.array([[False], [True]])}
    with pytest.raises(ConfigError, match=r"_Outputs._get_train_sample\(rollout\) returned a list; it must return a "
                                          r"dict of arrays \(B, ...\), one column per key, not DI-engine's list"):
        policy.collect_mode.get_train_sample(rollout)  # before: AttributeError: 'list' object has no 'values'


def test_a_transition_must_be_a_dict_of_columns() -> None:
    policy = _Outputs(_cfg())
    policy.bad = {"transition": lambda output: (output["action"],)}
    output = policy.collect_mode.forward(OBS, env_step=0)
    with pytest.raises(ConfigError, match=r"_Outputs._process_transition\(policy_output\) returned a tuple; it must "
                                          r"return a dict of the columns it adds"):
        policy.collect_mode.process_transition(output)  # before: an AttributeError in the collector's loop
    policy.bad = {}
    assert set(policy.collect_mode.process_transition(output)) >= {"action"}


def _learn():  # a stand-in for a policy's bound _forward_learn, named in the message
    pass


@pytest.mark.parametrize("out,got", [(None, "None"), (1.0, "a float"), ([], "an empty list"),
                                     ([{"loss": 1.0}, 2.0], "a list holding a float")])
def test_forward_learn_must_return_log_dicts(out, got) -> None:
    with pytest.raises(ConfigError, match=rf"_learn\(batch\) returned {got}: it must return one log dict per "
                                          r"gradient step"):
        as_log_list(out, _learn)  # before: TypeError: 'NoneType' object is not iterable


def test_only_numbers_are_logged_from_a_learn_log() -> None:
    assert all(is_scalar(v) for v in (1, 0.5, True, np.float32(2), np.array(3.0), torch.tensor(1.0)))
    # before: float('hello') stopped the run in the logger; DI-engine's logs carry such entries
    assert not any(is_scalar(v) for v in ("hello", None, [1.0], np.ones(3), torch.ones(2), np.array("a")))


class _RaisingModel(nn.Module):
    def __init__(self, obs_shape: int, action_shape: int) -> None:
        super().__init__()
        raise ValueError("hidden sizes do not add up")


def test_a_model_whose_constructor_raises_is_named() -> None:
    MODEL_REGISTRY.register("test_plugin_mistakes_raising")(_RaisingModel)
    try:
        _build_raising()
    finally:
        MODEL_REGISTRY._entries.pop("test_plugin_mistakes_raising")


def _build_raising() -> None:
    with pytest.raises(ConfigError, match=r"model type 'test_plugin_mistakes_raising' \(.*_RaisingModel\) failed "
                                          r"while being built from policy.model: ValueError: hidden sizes do not "
                                          r"add up"):
        build_model(dict(obs_shape=4, action_shape=2), "test_plugin_mistakes_raising")  # before: the traceback


def test_actions_on_another_device_are_named() -> None:
    policy = _Outputs(_cfg())
    policy.bad = {"collect": lambda obs, env_step: {"action": torch.zeros(3, dtype=torch.long, device="meta")}}
    # "meta" stands in for a GPU; before: numpy's TypeError from inside the env manager's action conversion
    with pytest.raises(ConfigError, match=r"^policy 'dqn': _Outputs._forward_collect\(obs, env_step\) returned "
                                          r"'action' as a tensor on meta; the envs take numpy arrays on the CPU"):
        policy.collect_mode.forward(OBS, env_step=0)
    policy.bad = {"collect": lambda obs, env_step: {"action": torch.zeros(3, dtype=torch.long)}}
    assert len(policy.collect_mode.forward(OBS, env_step=0)["action"]) == 3  # a CPU tensor is converted as before


def test_train_sample_columns_must_share_their_length() -> None:
    policy = _Outputs(_cfg())
    policy.bad = {"samples": lambda s: {**s, "action": s["action"][:-1]}}
    rollout = {"obs": np.zeros((2, 1, 4), np.float32), "next_obs": np.zeros((2, 1, 4), np.float32),
               "action": np.zeros((2, 1), np.int64), "reward": np.ones((2, 1), np.float32),
               "terminated": np.zeros((2, 1), bool), "truncated": np.array([[False], [True]]),
               "done": np.array([[False], [True]]), "valid": np.ones((2, 1), bool)}
    with pytest.raises(ConfigError, match=r"_Outputs._get_train_sample\(rollout\) returned columns of different "
                                          r"lengths \('obs': 2, 'action': 1, .*\); every column must hold one row"):
        policy.collect_mode.get_train_sample(rollout)  # before: a ValueError from inside the replay buffer's push
    policy.bad = {}
    assert len(policy.collect_mode.get_train_sample(rollout)["obs"]) == 2


@pytest.mark.parametrize("log,key,shape", [({"loss": torch.ones(4)}, "loss", r"\[4\]"),
                                           ({"critic_loss": np.ones(1)}, "critic_loss", r"\[1\]"),
                                           ({"q_mean": torch.ones(2, 3)}, "q_mean", r"\[2, 3\]")])
def test_a_loss_or_monitored_value_must_be_one_number(log, key, shape) -> None:
    # before: not logged and not checked for NaN, in silence (only 0-dim values are)
    with pytest.raises(ConfigError, match=rf"^_learn\(batch\) returned '{key}' of shape {shape}: a loss or monitored "
                                          r"value is logged .* only as one number"):
        as_log_list([{"loss": 0.5}, log], _learn, ["q_mean"])
    # other entries may hold anything (a priority vector, DI-engine's lists); 0-dim values pass
    assert as_log_list({"loss": torch.tensor(1.0), "priority": np.ones(4), "q": torch.ones(2)}, _learn, ["loss"])


class _ListConfig(_NoLearn):
    config = ["not", "a", "dict"]  # type: ignore[assignment]


class _ListDefaults(_NoLearn):
    @classmethod
    def default_config(cls):  # type: ignore[override]
        return [("type", "x")]


@pytest.mark.parametrize("cls,culprit", [(_ListConfig, r"_ListConfig.config must be a dict of the section's keys"),
                                         (_ListDefaults, r"_ListDefaults.default_config\(\) must return a dict")])
def test_a_policys_defaults_must_be_a_dict(cls, culprit) -> None:
    POLICY_REGISTRY.register("test_plugin_mistakes_defaults")(cls)
    try:
        with pytest.raises(ConfigError, match=rf"^policy type 'test_plugin_mistakes_defaults': {culprit}"):
            compile_config(dict(env=ENV, policy=dict(type="test_plugin_mistakes_defaults")))  # before: AttributeError
    finally:
        POLICY_REGISTRY._entries.pop("test_plugin_mistakes_defaults")


class _Opaque:
    """A learn-state entry whose state dict holds an object checkpoints cannot load back."""

    def state_dict(self) -> dict:
        return {"schedule": _Opaque}

    def load_state_dict(self, state: dict) -> None:
        pass


class _OpaqueState(DQNPolicy):
    def _init_learn(self) -> None:
        super()._init_learn()
        self._learn_state["schedule"] = _Opaque()


def test_a_learn_state_checkpoints_cannot_read_back_is_named_when_the_policy_is_built() -> None:
    # before: the checkpoints were written, and the run's own final evaluation (or --resume) failed to read them
    with pytest.raises(ConfigError, match=r"^policy 'dqn': _OpaqueState._learn_state\['schedule'\].state_dict\(\) "
                                          r"cannot go into a checkpoint and be read back \(refused by torch.load"):
        _OpaqueState(_cfg())
    _OpaqueState(_cfg(), enable_field=["collect", "eval"])  # only the learn mode's state goes into checkpoints
