"""The critic targets of SAC and TD3 through the policies (ding_lite/policy/sac.py, td3.py, continuous_q.py), on
hand-computed cases: networks whose weights are zero give constant values, so the clipped double-Q target, the
entropy term at asymmetric bounds, and the terminated flag can be worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from qac_helpers import continuous_policy
from torch import nn

from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, REWARD, TERMINATED

pytestmark = pytest.mark.unittest

# two action dimensions with asymmetric bounds: dim 0 in [-1, 3] (scale 2, bias 1), dim 1 in [0, 0.5] (scale 0.25,
# bias 0.25), so the squash correction's log(scale) terms do not cancel
BOUNDS = ("policy.model.action_shape=2", "policy.model.action_low=[-1.0, 0.0]", "policy.model.action_high=[3.0, 0.5]",
          "policy.discount_factor=0.9")


def _constant(net: nn.Module, last_bias: list[float]) -> None:
    """Every weight and bias of ``net`` zero except the output layer's bias: the net outputs ``last_bias``."""
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        last = [m for m in net.modules() if isinstance(m, nn.Linear)][-1]
        last.bias.copy_(torch.tensor(last_bias))


def _critics(policy, online: tuple[float, float], target: tuple[float, float]) -> None:
    for net, c in zip(policy._model.critic.nets, online, strict=True):
        _constant(net, [c])
    for net, c in zip(policy._target_critic.nets, target, strict=True):
        _constant(net, [c])


def _batch() -> dict:
    # two transitions: the first bootstraps, the second terminated (no bootstrap)
    return {OBS: np.ones((2, 3), np.float32), ACTION: np.array([[0.0, 0.1], [2.0, 0.4]], np.float32),
            REWARD: np.array([1.0, -1.0], np.float32), NEXT_OBS: np.ones((2, 3), np.float32),
            TERMINATED: np.array([False, True])}


def test_sac_critic_target_has_the_entropy_term_of_the_action_in_minus_one_one(monkeypatch) -> None:
    policy = continuous_policy("sac", *BOUNDS, "policy.learn.alpha=0.2")
    _constant(policy._model.actor.net, [0.0] * 4)  # mu = (0, 0), log_std = (0, 0)
    _critics(policy, online=(1.0, 3.0), target=(2.0, 5.0))
    monkeypatch.setattr(torch, "randn_like", torch.zeros_like)  # the reparameterised noise: 0, so u = mu = 0
    log = policy.learn_mode.forward(_batch())
    # a' = tanh(0)·scale + bias = (1, 0.25). log π is of the action in [-1, 1] (SB3's and DI-engine's), tanh(u):
    # per dim, log N(u; 0, 1) at u = 0 is -log(2π)/2 and log|d tanh/du| = log(1 − tanh²0) = 0, so
    # log π(a'|s') = -log(2π) = -1.8378771 whatever the bounds (the env-unit action's would add -log(2·0.25)).
    # -α log π = 0.2·1.8378771 = 0.3675754; min of the *target* critics = min(2, 5) = 2.
    # y_0 = 1 + 0.9·(2 + 0.3675754) = 1 + 2.1308179 = 3.1308179;  y_1 = -1 (terminated).
    assert log["target_q_mean"].item() == pytest.approx((3.1308179 - 1.0) / 2, abs=1e-6)
    # online critics Q_1 = 1, Q_2 = 3: ½ Σ_j mean_b (Q_j − y_b)²
    #   = ½·[((1 − 3.1308179)² + (1 + 1)²)/2 + ((3 − 3.1308179)² + (3 + 1)²)/2]
    #   = ½·[(4.5403848 + 4)/2 + (0.0171133 + 16)/2] = ½·(4.2701924 + 8.0085567) = 6.1393745
    assert log["critic_loss"].item() == pytest.approx(6.1393745, abs=1e-5)
    # with the env-unit action's log π (the rescaling's log(scale) terms) the bonus was 0.2289460 and y_0 3.0060514


def test_td3_critic_target_is_the_min_of_the_target_critics_and_stops_at_termination() -> None:
    policy = continuous_policy("td3", *BOUNDS)
    _critics(policy, online=(1.0, 3.0), target=(2.0, 5.0))
    log = policy.learn_mode.forward(_batch())  # update 0: the critic stage only (policy delay 2)
    # constant target critics: the smoothed target action does not matter. y_0 = 1 + 0.9·min(2, 5) = 2.8, y_1 = -1.
    assert log["target_q_mean"].item() == pytest.approx((2.8 - 1.0) / 2, abs=1e-6)
    # ½·[((1 − 2.8)² + (1 + 1)²)/2 + ((3 − 2.8)² + (3 + 1)²)/2] = ½·[(3.24 + 4)/2 + (0.04 + 16)/2]
    #   = ½·(3.62 + 8.02) = 5.82
    assert log["critic_loss"].item() == pytest.approx(5.82, abs=1e-5)
    assert "actor_loss" not in log


def test_log_pi_of_the_hand_case_is_minus_log_pi() -> None:
    """The number used above, from the library's own squashed Gaussian at the same point."""
    from ding_lite.rl_utils.qac import squashed_gaussian

    zero = torch.zeros(1, 2)
    action, log_prob = squashed_gaussian(zero, zero, torch.tensor([2.0, 0.25]), torch.tensor([1.0, 0.25]), zero)
    assert action.tolist() == [[1.0, 0.25]]
    assert log_prob.item() == pytest.approx(-math.log(math.pi), abs=1e-6)


def test_td3_target_action_comes_from_the_target_actor() -> None:
    # Fujimoto et al. 2018, Algorithm 1: a' = pi_phi'(s') + noise, the *target* actor's action. Target critics that
    # read the action: Q'(s, a) = unit(a)_0, the first action dimension in [-1, 1] (ReLU(x + 2) then ReLU, minus 2,
    # exact for x in [-1, 1]); online actor tanh(0) = 0, target actor tanh(0.5) = 0.4621172 (unit), no smoothing.
    policy = continuous_policy("td3", *BOUNDS, "policy.learn.noise=False")
    _constant(policy._model.actor.net, [0.0, 0.0])
    _constant(policy._target_actor.net, [0.5, 0.0])
    _critics(policy, online=(1.0, 3.0), target=(0.0, 0.0))
    with torch.no_grad():
        for net in policy._target_critic.nets:
            first, second, last = [m for m in net.modules() if isinstance(m, nn.Linear)]
            first.weight[0, 3] = 1.0  # input: 3 observations, then the 2 action dims in [-1, 1]
            first.bias[0] = 2.0
            second.weight[0, 0] = 1.0
            last.weight[0, 0], last.bias[0] = 1.0, -2.0
    log = policy.learn_mode.forward(_batch())
    # y_0 = 1 + 0.9·tanh(0.5) = 1 + 0.9·0.4621172 = 1.4159055; y_1 = -1 (terminated). With the online actor, y_0 = 1.
    assert log["target_q_mean"].item() == pytest.approx((1.4159055 - 1.0) / 2, abs=1e-6)


@pytest.mark.parametrize("written", [True, False])
def test_td3_actor_step_ascends_the_first_critic(written: bool) -> None:
    # the actor maximises Q_1(s, pi(s)) (Fujimoto et al. 2018, eq. 6 / Algorithm 1): loss -mean Q_1. Critic Q_1 = 0.5 +
    # unit(a)_0 (as above, plus 0.5), so dQ_1/dbias_0 of the actor's last layer > 0 and one Adam step raises the
    # bias by about the learning rate; the written-out backward and autograd (critics it cannot write) alike.
    policy = continuous_policy("td3", *BOUNDS, "policy.learn.actor_update_freq=1", "policy.learn.noise=False",
                               "policy.learn.learning_rate_critic=1e-9")  # the critic's own step: negligible
    _constant(policy._model.actor.net, [0.5, 0.0])
    _critics(policy, online=(0.0, 0.0), target=(0.0, 0.0))
    with torch.no_grad():
        first, second, last = [m for m in policy._model.critic.nets[0].modules() if isinstance(m, nn.Linear)]
        first.weight[0, 3], first.bias[0] = 1.0, 2.0
        second.weight[0, 0] = 1.0
        last.weight[0, 0], last.bias[0] = 1.0, -1.5
    if not written:
        policy._model.critic.writable_actor_value = lambda obs: False
    bias_before = [m for m in policy._model.actor.net.modules() if isinstance(m, nn.Linear)][-1].bias[0].item()
    log = policy.learn_mode.forward(_batch())
    bias_after = [m for m in policy._model.actor.net.modules() if isinstance(m, nn.Linear)][-1].bias[0].item()
    lr = float(policy.cfg["learn"]["learning_rate_actor"])
    assert bias_after - bias_before == pytest.approx(lr, rel=0.05)  # Adam's first step: lr·sign(-gradient)
    # actor_loss = -Q_1(s, pi(s)) = -(0.5 + tanh(0.5)) = -0.9621172
    assert log["actor_loss"].item() == pytest.approx(-0.9621172, abs=1e-5)
