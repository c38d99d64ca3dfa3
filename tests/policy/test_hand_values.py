"""Hand-computed values of paths that shape results: the dueling head, DQN with double=False, importance weights in
the DQN loss, the conditioned log-std head, and one PPO learn step's losses."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import (
    ACTION,
    ADV,
    DISCOUNT_N,
    LOGIT,
    LOGP,
    MU,
    NEXT_ACTION_MASK,
    NEXT_OBS_N,
    OBS,
    Q_VALUE,
    RETURN,
    RETURN_N,
    SIGMA,
    VALUE,
    WEIGHT,
)
from ding_lite.model.templates import VAC, QNet
from ding_lite.registry import POLICY_REGISTRY

pytestmark = pytest.mark.unittest

ENV = dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=1, evaluator_env_num=1)


def test_dueling_head_is_value_plus_advantage_minus_its_mean() -> None:
    net = QNet(dict(QNet.config, obs_shape=2, action_shape=3, encoder_hidden_size_list=[], dueling=True,
                    head_layer_num=0))
    with torch.no_grad():  # no hidden layer: the heads read the observation itself
        net.advantage.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        net.advantage.bias.zero_()
        net.value.weight.copy_(torch.tensor([[0.5, 0.5]]))
        net.value.bias.fill_(1.0)
        out = net(torch.tensor([[1.0, 2.0]]))
    # A = [1, 2, 3], mean 2; V = 0.5 + 1 + 1 = 2.5; Q = 2.5 + A - 2
    torch.testing.assert_close(out[Q_VALUE], torch.tensor([[1.5, 2.5, 3.5]]))
    assert out[LOGIT] is out[Q_VALUE]  # DI-engine's name for the same tensor


class _LinearQ(nn.Module):
    """Q(s) = W s: values a test can compute by hand."""

    def __init__(self, weight: list[list[float]]) -> None:
        super().__init__()
        w = torch.tensor(weight)
        self.layer = nn.Linear(w.shape[1], w.shape[0], bias=False)
        with torch.no_grad():
            self.layer.weight.copy_(w)

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {Q_VALUE: self.layer(obs)}


def _dqn(double: bool, loss_type: str = "huber", **policy):
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn", learn=dict(double=double, loss_type=loss_type),
                                                    **policy)))
    dqn = POLICY_REGISTRY.get("dqn")(cfg.policy, model=_LinearQ([[1.0], [2.0]]), enable_field=["learn"])
    with torch.no_grad():  # a target network that disagrees with the online one
        dqn._target_model.layer.weight.copy_(torch.tensor([[3.0], [1.0]]))
    return dqn


def _dqn_batch(n: int, weight=None) -> dict:
    batch = {OBS: np.ones((n, 1), np.float32), ACTION: np.arange(n) % 2, RETURN_N: np.ones(n, np.float32),
             DISCOUNT_N: np.full(n, 0.5, np.float32), NEXT_OBS_N: np.full((n, 1), 2.0, np.float32)}
    if weight is not None:
        batch[WEIGHT] = np.asarray(weight, np.float32)
    return batch


@pytest.mark.parametrize("double,loss_type,expected",
                         [(True, "huber", 0.5), (False, "huber", 2.5), (True, "mse", 1.0), (False, "mse", 9.0)])
def test_dqn_target_with_and_without_double_q(double: bool, loss_type: str, expected: float) -> None:
    # Q(s) = [1, 2], online Q(s') = [2, 4], target Q(s') = [6, 2]; action 0, return_n 1, discount_n 0.5.
    # double: a* = argmax online = 1 -> target 1 + 0.5 * 2 = 2, TD 1, huber 0.5, mse 1.
    # double=False: max target = 6 -> target 1 + 0.5 * 6 = 4, TD 3, huber 3 - 0.5 = 2.5, mse 9.
    log = _dqn(double, loss_type).learn_mode.forward(_dqn_batch(1))
    assert float(log["loss"]) == pytest.approx(expected)
    assert float(log["q_mean"]) == pytest.approx(1.0)



@pytest.mark.parametrize("double", [True, False])
@pytest.mark.parametrize("legal,expected", [([False, True], 0.5), ([True, False], 2.5)])
def test_dqn_bootstrap_action_is_legal(double: bool, legal: list, expected: float) -> None:
    # as above; only action 1 legal at s': target 1 + 0.5 * 2 = 2 either way (the target net's max, 6, is illegal),
    # huber 0.5; only action 0 legal: 1 + 0.5 * 6 = 4 either way (the online argmax, 1, is illegal), huber 2.5
    batch = _dqn_batch(1)
    batch[NEXT_ACTION_MASK] = np.array([legal])
    assert float(_dqn(double).learn_mode.forward(batch)["loss"]) == pytest.approx(expected)

def test_dqn_default_loss_is_di_engine_squared_td_error() -> None:
    # DI-engine's q_nstep_td_error: mean of nn.MSELoss(reduction='none'), no ½ and no Huber. double=False, two
    # samples: Q taken [1, 2], targets [4, 4], TD [3, 2] -> (9 + 4) / 2 = 6.5
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn", learn=dict(double=False))))
    assert cfg.policy.learn.loss_type == "mse"
    dqn = POLICY_REGISTRY.get("dqn")(cfg.policy, model=_LinearQ([[1.0], [2.0]]), enable_field=["learn"])
    with torch.no_grad():
        dqn._target_model.layer.weight.copy_(torch.tensor([[3.0], [1.0]]))
    assert float(dqn.learn_mode.forward(_dqn_batch(2))["loss"]) == pytest.approx(6.5)


def test_importance_weights_scale_the_dqn_loss_proportionally() -> None:
    # double=False, two samples: Q taken [1, 2], targets [4, 4], TD [3, 2], huber [2.5, 1.5]
    def loss(weight) -> float:
        dqn = _dqn(False, priority=True, priority_IS_weight=True)
        return float(dqn.learn_mode.forward(_dqn_batch(2, weight))["loss"])

    assert loss([1.0, 1.0]) == pytest.approx(2.0)
    assert loss([3.0, 3.0]) == pytest.approx(3 * 2.0)  # proportional to a common scale
    assert loss([2.0, 0.5]) == pytest.approx((2.0 * 2.5 + 0.5 * 1.5) / 2)  # each sample by its own weight
    # without priority_IS_weight the weights are ignored
    plain = _dqn(False, priority=True)
    assert float(plain.learn_mode.forward(_dqn_batch(2, [3.0, 3.0]))["loss"]) == pytest.approx(2.0)


def test_conditioned_sigma_is_the_exp_of_the_clamped_log_std_head() -> None:
    cfg = dict(VAC.config, obs_shape=2, action_shape=3, action_space="continuous", encoder_hidden_size_list=[],
               sigma_type="conditioned")
    vac = VAC(cfg)
    with torch.no_grad():
        vac.actor_head.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]]))
        vac.actor_head.bias.zero_()
        vac.log_std_head.weight.copy_(torch.tensor([[0.5, 0.0], [0.0, 0.0], [0.0, 0.0]]))
        vac.log_std_head.bias.copy_(torch.tensor([0.0, 3.0, -25.0]))
        out = vac.compute_actor(torch.tensor([[1.0, 2.0], [-1.0, 0.0]]))
    torch.testing.assert_close(out[MU], torch.tensor([[1.0, 2.0, -1.0], [-1.0, 0.0, -1.0]]))
    # log σ = [0.5·s0, 3, −25] clamped to [−20, 2]: state-dependent in its first component
    expected = torch.tensor([[math.exp(0.5), math.exp(2.0), math.exp(-20.0)],
                             [math.exp(-0.5), math.exp(2.0), math.exp(-20.0)]])
    torch.testing.assert_close(out[SIGMA], expected)


def test_ppo_learn_step_losses_on_a_hand_batch() -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(
        type="ppo", model=dict(obs_shape=2, action_shape=2, action_space="discrete", encoder_hidden_size_list=[]),
        learn=dict(epoch_per_collect=1, batch_size=2, adv_norm=False, entropy_weight=0.1, value_weight=0.5,
                   clip_ratio=0.2, grad_clip_value=None))))
    policy = build(cfg, "policy")
    with torch.no_grad():  # π = [1/4, 3/4] and V = 1 whatever the state
        policy._model.actor_head.weight.zero_()
        policy._model.actor_head.bias.copy_(torch.tensor([0.0, math.log(3.0)]))
        policy._model.critic_head.weight.zero_()
        policy._model.critic_head.bias.fill_(1.0)
    batch = {OBS: np.zeros((2, 2), np.float32), ACTION: np.array([0, 1]), LOGP: np.full(2, math.log(0.5), np.float32),
             VALUE: np.ones(2, np.float32), ADV: np.array([1.0, -1.0], np.float32),
             RETURN: np.array([2.0, 0.0], np.float32)}
    (log,) = policy.learn_mode.forward(batch)  # one epoch of one minibatch: one gradient step
    # ratios 0.25/0.5 = 0.5 (A = 1: min(0.5, 0.8) = 0.5) and 0.75/0.5 = 1.5 (A = −1: min(−1.5, −1.2) = −1.5)
    assert float(log["policy_loss"]) == pytest.approx(0.5)
    assert float(log["value_loss"]) == pytest.approx(0.5 * ((1 - 2) ** 2 + (1 - 0) ** 2) / 2)
    entropy = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert float(log["entropy"]) == pytest.approx(entropy, rel=1e-6)
    assert float(log["total_loss"]) == pytest.approx(0.5 + 0.5 * 0.5 - 0.1 * entropy, rel=1e-6)
    assert float(log["approx_kl"]) == pytest.approx((math.log(0.5 / 0.25) + math.log(0.5 / 0.75)) / 2, rel=1e-5)
    assert float(log["clipfrac"]) == 1.0


@pytest.mark.parametrize("max_norm", [0.5, 100.0, None])
def test_grad_norm_clip_is_torchs_rule(max_norm) -> None:
    """Gradients (3, 4) and (0, 0): global norm 5; clipped to 0.5 they are scaled by 0.5 / (5 + 1e-6), as
    ``torch.nn.utils.clip_grad_norm_`` does; a bound above the norm (or None) leaves them alone; a parameter without a
    gradient is skipped."""
    from ding_lite.policy.optim import grad_norm_clip

    params = [torch.nn.Parameter(torch.zeros(2)) for _ in range(3)]
    params[0].grad, params[1].grad = torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.0])
    reference = [torch.nn.Parameter(torch.zeros(2)) for _ in range(2)]
    reference[0].grad, reference[1].grad = torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.0])
    grad_norm_clip(params, max_norm)
    if max_norm:
        torch.nn.utils.clip_grad_norm_(reference, max_norm)
    for p, r in zip(params, reference, strict=False):  # the third parameter has no reference
        torch.testing.assert_close(p.grad, r.grad)
    expected = [3.0, 4.0] if not max_norm or max_norm > 5 else [0.3 / (1 + 2e-7), 0.4 / (1 + 2e-7)]
    torch.testing.assert_close(params[0].grad, torch.tensor(expected))
    assert params[2].grad is None
