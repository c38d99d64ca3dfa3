"""The model contract (ding_lite/model/contract.py): a custom model that does not give what its policy reads is one
ConfigError naming the model, the method, the key and the shape, raised when the policy is built; a DI-engine-style
Q-network (``{'logit'}`` only) works with DQN."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import run_cli
from torch import nn

from ding_lite.config import compile_config
from ding_lite.errors import ConfigError
from ding_lite.model.contract import BATCH, ModelProbe
from ding_lite.registry import MODEL_REGISTRY, POLICY_REGISTRY

pytestmark = pytest.mark.unittest

OBS, ACTIONS = 4, 2


class _QNet(nn.Module):
    """A Q-network in DI-engine's style: keyword settings, ``forward(obs) -> {'logit': (B, A + extra)}``."""

    def __init__(self, obs_shape: int, action_shape: int, extra: int = 0, as_dict: bool = True) -> None:
        super().__init__()
        self.net = nn.Linear(obs_shape, action_shape + extra)
        self.as_dict = as_dict

    def forward(self, obs: torch.Tensor):
        q = self.net(obs)
        return {"logit": q} if self.as_dict else q


class _ActorCritic(nn.Module):
    """An actor-critic for PPO whose value may keep its trailing 1 (``(B, 1)``, which broadcasts against returns)."""

    def __init__(self, obs_shape: int, action_shape: int, squeeze: bool = True, action_space: str = "") -> None:
        super().__init__()
        self.pi, self.v, self.squeeze = nn.Linear(obs_shape, action_shape), nn.Linear(obs_shape, 1), squeeze

    def compute_actor(self, obs: torch.Tensor) -> dict:
        return {"logit": self.pi(obs)}

    def compute_critic(self, obs: torch.Tensor) -> dict:
        value = self.v(obs)
        return {"value": value.squeeze(-1) if self.squeeze else value}

    def compute_actor_critic(self, obs: torch.Tensor) -> dict:
        return {**self.compute_actor(obs), **self.compute_critic(obs)}


@pytest.fixture(autouse=True)
def registered():
    """The test models in the registry during each test only."""
    models = {"test_contract_qnet": _QNet, "test_contract_ac": _ActorCritic}
    for name, cls in models.items():
        MODEL_REGISTRY.register(name)(cls)
    yield
    for name in models:
        MODEL_REGISTRY._entries.pop(name)


def _policy(policy_type: str, **model):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type=policy_type, model=dict(obs_shape=OBS, action_shape=ACTIONS, **model))))
    return POLICY_REGISTRY.get(policy_type)(cfg.policy)


def test_dqn_reads_di_engine_logit_only_q_network() -> None:
    policy = _policy("dqn", type="test_contract_qnet")
    out = policy.eval_mode.forward(np.zeros((3, OBS), dtype=np.float32))
    assert out["action"].shape == (3,)
    batch = {"obs": np.zeros((5, OBS), np.float32), "action": np.zeros(5, np.int64),
             "return_n": np.ones(5, np.float32), "discount_n": np.full(5, 0.9, np.float32),
             "next_obs_n": np.zeros((5, OBS), np.float32)}
    assert np.isfinite(float(policy.learn_mode.forward(batch)["loss"]))


@pytest.mark.parametrize("policy_type,model,match", [
    ("dqn", dict(type="test_contract_qnet", extra=1),
     r"model 'test_contract_qnet' \(policy.model\) of policy 'dqn': forward\(obs\)\['logit'\] has shape \[2, 3\] "
     r"for 2 observations; the policy needs \(B, A\) = \[2, 2\]"),
    ("dqn", dict(type="test_contract_qnet", as_dict=False),
     r"forward\(obs\) must return a dict of tensors, got a torch.float32 tensor of shape \[2, 2\]"),
    ("ppo", dict(type="test_contract_ac", squeeze=False),
     r"compute_critic\(obs\)\['value'\] has shape \[2, 1\] for 2 observations; the policy needs \(B,\) = \[2\]"),
    ("ppo", dict(type="test_contract_qnet"),
     r"model 'test_contract_qnet' \(policy.model\) of policy 'ppo' has no method compute_actor\(obs\)"),
    ("acer", dict(type="test_contract_ac"), r"of policy 'acer' has no actor, critic, which the policy uses"),
])
def test_model_that_does_not_fit_its_policy_is_one_config_error(policy_type: str, model: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _policy(policy_type, **model)


def test_sac_with_a_model_that_is_not_qac_names_what_it_lacks() -> None:
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="Pendulum-v1"),
                              policy=dict(type="sac", model=dict(type="test_contract_ac", obs_shape=3,
                                                                 action_shape=1))))
    with pytest.raises(ConfigError, match=r"has no actor, critic, bounds, which the policy uses: .*QAC"):
        POLICY_REGISTRY.get("sac")(cfg.policy)


def test_probe_runs_in_eval_mode_draws_no_randomness_and_restores_train_mode() -> None:
    class Dropped(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(OBS, ACTIONS), nn.Dropout(0.5))

        def forward(self, obs: torch.Tensor) -> dict:
            return {"q_value": self.net(obs)}

    model = Dropped()
    model.net[0].eval()  # a module the user put in eval mode stays there
    state = torch.get_rng_state()
    ModelProbe(model, "dqn", "dropped", (OBS,), ACTIONS, torch.device("cpu")).expect(
        "forward", {"q_value": (BATCH, "A")})
    assert torch.equal(torch.get_rng_state(), state)  # dropout in train mode would have drawn
    assert model.training and model.net[1].training and not model.net[0].training


def test_cli_refuses_a_misfit_model_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "wide_q.py").write_text(textwrap.dedent("""
        from torch import nn
        from ding_lite.registry import MODEL_REGISTRY

        @MODEL_REGISTRY.register("wide_q")
        class WideQ(nn.Module):
            def __init__(self, obs_shape, action_shape):
                super().__init__()
                self.net = nn.Linear(obs_shape, action_shape + 1)

            def forward(self, obs):
                return {"logit": self.net(obs)}
    """))
    (tmp_path / "cfg.py").write_text(textwrap.dedent("""
        main_config = dict(exp_name="wide_q_run", env=dict(type="gymnasium", env_id="CartPole-v1"),
                           policy=dict(type="dqn", model=dict(type="wide_q", import_names=["wide_q"])))
    """))
    run = run_cli("-m", "serial", "-c", "cfg.py", "--max-env-step", "64", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "model 'wide_q' (policy.model) of policy 'dqn'" in lines[0], run.stderr
    assert not (tmp_path / "wide_q_run").exists()
