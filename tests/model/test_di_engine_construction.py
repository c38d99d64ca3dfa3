"""A DI-engine user builds a model with keyword arguments, ``model = DQN(**cfg.policy.model)`` or
``VAC(obs_shape=4, action_shape=2)``, and hands it to the policy (``DQNPolicy(cfg.policy, model=model)``). Before,
every template took only one complete mapping: the keywords were a TypeError and a partial mapping a bare KeyError
('encoder_hidden_size_list')."""
from __future__ import annotations

import pytest
import torch

from ding_lite.errors import ConfigError
from ding_lite.model import DQN, QAC, VAC, ACERNet, EnsembleVAC, QNet

pytestmark = pytest.mark.unittest


def test_dqn_is_qnet_under_di_engine_name() -> None:
    assert DQN is QNet


@pytest.mark.parametrize("cls", [QNet, VAC, ACERNet, EnsembleVAC])
def test_a_discrete_template_builds_from_keywords_or_a_partial_mapping(cls) -> None:
    for model in (cls(obs_shape=4, action_shape=2), cls(dict(obs_shape=4, action_shape=2))):
        out = model(torch.zeros(3, 4)) if cls is QNet else model.compute_actor(torch.zeros(3, 4))
        assert out["logit"].shape[-2:] == (3, 2)  # EnsembleVAC: (K, B, A)


def test_keywords_override_the_defaults_and_qac_builds_from_keywords() -> None:
    torch.manual_seed(0)
    net = QNet(obs_shape=4, action_shape=2, encoder_hidden_size_list=[8], dueling=False, head_layer_num=0)
    assert net.value is None and net.advantage.in_features == 8
    qac = QAC(obs_shape=3, action_shape=1, action_space="reparameterization", twin_critic=True)
    assert qac is not None


def test_a_setting_the_template_lacks_is_one_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"^VAC has no setting 'norm_type' \(its settings: .*action_shape"):
        VAC(obs_shape=4, action_shape=2, norm_type="BN")
    with pytest.raises(ConfigError, match=r"^QNet: give its settings as one mapping or as keyword arguments"):
        QNet(dict(obs_shape=4), action_shape=2)


@pytest.mark.parametrize("config,model_cls,policy_name", [("cartpole_dqn_config.py", DQN, "DQNPolicy"),
                                                          ("cartpole_ppo_config.py", VAC, "PPOPolicy")])
def test_di_engine_hand_written_pipeline_builds_the_model_from_the_compiled_section(config, model_cls,
                                                                                   policy_name) -> None:
    """DI-engine's dizoo *_main.py: ``model = DQN(**cfg.policy.model)``, ``policy = DQNPolicy(cfg.policy,
    model=model)``, on DI-engine's own CartPole configs with the package renamed."""
    from pathlib import Path

    import ding_lite.policy
    from ding_lite.config import compile_config, read_config

    path = Path(__file__).resolve().parents[1] / "di_engine_configs" / config
    cfg = compile_config(*read_config(path), seed=0)
    model = model_cls(**cfg.policy.model)
    policy = getattr(ding_lite.policy, policy_name)(cfg.policy, model=model)
    assert policy.model is model
    assert policy.eval_mode.forward(torch.zeros(2, 4).numpy())["action"].shape == (2,)
