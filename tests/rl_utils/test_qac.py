"""SAC and TD3 maths (ding_lite/rl_utils/qac.py) on small cases computed by hand."""
from __future__ import annotations

import math

import pytest
import torch

from ding_lite.rl_utils.qac import (
    clipped_double_q_target,
    log_one_minus_tanh_sq,
    sac_actor_loss,
    sac_actor_loss_gradients,
    sac_temperature_loss,
    smoothed_target_action,
    squashed_gaussian,
    squashed_sample,
)

pytestmark = pytest.mark.unittest


def test_squash_correction_by_hand() -> None:
    # one sample, two dims: mu = (0.5, -1), log_std = (0, log 0.5), noise = (1, 2): u = (1.5, 0)
    # bounds: dim 0 in [-2, 2] (scale 2, bias 0), dim 1 in [0, 1] (scale 0.5, bias 0.5)
    mu = torch.tensor([[0.5, -1.0]])
    log_std = torch.tensor([[0.0, math.log(0.5)]])
    noise = torch.tensor([[1.0, 2.0]])
    scale, bias = torch.tensor([2.0, 0.5]), torch.tensor([0.0, 0.5])
    action, log_prob = squashed_gaussian(mu, log_std, scale, bias, noise)
    u = (1.5, 0.0)
    assert action[0, 0].item() == pytest.approx(2 * math.tanh(1.5))
    assert action[0, 1].item() == pytest.approx(0.5)  # tanh(0) * 0.5 + 0.5
    # log N(u; mu, std) per dim: -noise^2 / 2 - log std - log(2 pi) / 2
    gauss = (-0.5 - 0.0 - 0.5 * math.log(2 * math.pi)) + (-2.0 - math.log(0.5) - 0.5 * math.log(2 * math.pi))
    # minus log |d a / d u| = log(scale (1 - tanh(u)^2)) per dim
    jacobian = math.log(2 * (1 - math.tanh(u[0]) ** 2)) + math.log(0.5 * (1 - math.tanh(u[1]) ** 2))
    assert log_prob.item() == pytest.approx(gauss - jacobian, rel=1e-6)
    # collection's sample without the log-probability: the same action, for given and for drawn noise
    assert torch.equal(squashed_sample(mu, log_std, scale, bias, noise), action)
    torch.manual_seed(3)
    drawn = squashed_gaussian(mu, log_std, scale, bias)[0]
    torch.manual_seed(3)
    assert torch.equal(squashed_sample(mu, log_std, scale, bias), drawn)


def test_squash_correction_is_the_density_of_the_squashed_action() -> None:
    # the density of a = 2 tanh(u), u ~ N(0.3, 0.8^2), integrates to 1 over (-2, 2): a midpoint sum over a fine grid
    a = torch.linspace(-2, 2, 200_001, dtype=torch.float64)[1:-1]
    u = torch.atanh(a / 2)
    mu, std = 0.3, 0.8
    noise = ((u - mu) / std).unsqueeze(-1)
    _, log_prob = squashed_gaussian(torch.full_like(noise, mu), torch.full_like(noise, math.log(std)),
                                    torch.tensor([2.0], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64),
                                    noise)
    mass = (log_prob.exp() * (a[1] - a[0])).sum().item()
    assert mass == pytest.approx(1.0, abs=1e-3)


def test_log_one_minus_tanh_sq_is_stable_where_the_direct_form_is_not() -> None:
    u = torch.tensor([0.0, 1.0, -3.0, 12.0, -40.0])
    direct = torch.log(1 - torch.tanh(u.double()) ** 2).float()
    stable = log_one_minus_tanh_sq(u)
    assert torch.allclose(stable[:3], direct[:3], atol=1e-6)
    # 1 - tanh(12)^2 underflows in float32 (log = -inf); the exact value is log(4) - 24 - 2 log(1 + e^-24) ~ -22.61
    assert torch.isinf(torch.log(1 - torch.tanh(u[3:]) ** 2)).all()
    assert stable[3].item() == pytest.approx(math.log(4) - 24, abs=1e-5)
    assert stable[4].item() == pytest.approx(math.log(4) - 80, abs=1e-4)


def test_clipped_double_q_target_by_hand() -> None:
    reward = torch.tensor([1.0, 2.0, -1.0])
    terminated = torch.tensor([False, True, False])  # the third row is a truncation: it bootstraps
    q_next = torch.tensor([[10.0, 5.0, 3.0], [8.0, 7.0, 4.0]])  # (K=2, B=3): mins 8, 5, 3
    y = clipped_double_q_target(reward, terminated, 0.5, q_next)
    assert y.tolist() == [1 + 0.5 * 8, 2.0, -1 + 0.5 * 3]
    # SAC's entropy term: -alpha log pi(a'|s') added to the min inside the bootstrap
    bonus = torch.tensor([-0.2, 1.0, 0.4])
    y = clipped_double_q_target(reward, terminated, 0.5, q_next, bonus)
    assert y.tolist() == pytest.approx([1 + 0.5 * 7.8, 2.0, -1 + 0.5 * 3.4])
    assert not y.requires_grad


def test_sac_actor_and_temperature_losses_by_hand() -> None:
    log_prob = torch.tensor([-1.0, 0.5], requires_grad=True)
    q_min = torch.tensor([3.0, 1.0], requires_grad=True)
    loss = sac_actor_loss(log_prob, q_min, 0.2)
    assert loss.item() == pytest.approx(((0.2 * -1 - 3) + (0.2 * 0.5 - 1)) / 2)
    loss.backward()
    assert log_prob.grad.tolist() == pytest.approx([0.1, 0.1]) and q_min.grad.tolist() == [-0.5, -0.5]

    # target entropy -1 (one action dim): log pi + target = (-2, -0.5, 1.5); loss = -log_alpha * mean = -log_alpha / 3
    log_alpha = torch.tensor(math.log(0.5), requires_grad=True)
    log_prob = torch.tensor([-1.0, 0.5, 2.5], requires_grad=True)
    loss = sac_temperature_loss(log_alpha, log_prob, -1.0)
    assert loss.item() == pytest.approx(-math.log(0.5) * (-2 - 0.5 + 1.5) / 3)
    loss.backward()
    # the entropy -mean(log pi) = -2/3 is above the target -1: the gradient (> 0) lowers alpha
    assert log_alpha.grad.item() == pytest.approx(1 / 3)
    assert log_prob.grad is None  # the log-probabilities are constants of the temperature loss


def test_sac_actor_loss_gradients_by_hand() -> None:
    # one sample, one dim: mu = 0, log_std = 0, noise = 0: u = 0, tanh(u) = 0, so the Jacobian term's slope 2 tanh(u)
    # is 0 and da/du = scale = 2; with dQ/da = 1 and alpha = 0.5: dL/dmu = -dQ/da * scale = -2, and
    # dL/dlog_std = dL/dmu * std * noise - alpha = -0.5
    zero = torch.zeros(1, 1)
    grad_mu, grad_log_std = sac_actor_loss_gradients(zero, zero, torch.tanh(zero), torch.ones(1, 1),
                                                     torch.tensor([2.0]), 0.5)
    assert grad_mu.item() == pytest.approx(-2.0) and grad_log_std.item() == pytest.approx(-0.5)
    # u = 1 (mu = 0.5, std = 0.5, noise = 1), scale 1, dQ/da = 0, alpha = 1, B = 1: dL/dmu = 2 tanh(1),
    # dL/dlog_std = 2 tanh(1) * 0.5 - 1
    grad_mu, grad_log_std = sac_actor_loss_gradients(torch.ones(1, 1), torch.full((1, 1), math.log(0.5)),
                                                     torch.tanh(torch.ones(1, 1)), torch.zeros(1, 1),
                                                     torch.tensor([1.0]), 1.0)
    assert grad_mu.item() == pytest.approx(2 * math.tanh(1.0))
    assert grad_log_std.item() == pytest.approx(math.tanh(1.0) - 1.0)


@pytest.mark.parametrize("alpha", [0.0, 0.2, 1.5])
def test_sac_actor_loss_gradients_are_autograds(alpha: float) -> None:
    """Against autograd of sac_actor_loss(squashed_gaussian(...)) with a critic whose action gradient is known
    (Q(a) = -sum (a - a0)^2, dQ/da = -2 (a - a0)), |u| up to ~9 where 1 - tanh^2 is tiny."""
    torch.manual_seed(0)
    mu = (torch.randn(64, 3) * 3).requires_grad_()
    log_std = (torch.rand(64, 3) * 3 - 2).requires_grad_()
    noise = torch.randn(64, 3)
    scale, bias = torch.tensor([1.0, 2.0, 0.5]), torch.tensor([0.0, 1.0, -0.5])
    a0 = torch.randn(3)
    action, log_prob = squashed_gaussian(mu, log_std, scale, bias, noise)
    q = -(action - a0).square().sum(-1)
    sac_actor_loss(log_prob, q, alpha).backward()
    with torch.no_grad():
        squashed = torch.tanh(mu + log_std.exp() * noise)
        grad_mu, grad_log_std = sac_actor_loss_gradients(noise, log_std, squashed, -2 * (action - a0), scale, alpha)
    torch.testing.assert_close(grad_mu, mu.grad, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(grad_log_std, log_std.grad, rtol=1e-5, atol=1e-7)


def test_temperature_rises_when_the_entropy_is_below_its_target() -> None:
    log_alpha = torch.tensor(0.0, requires_grad=True)
    log_prob = torch.full((4,), 3.0)  # entropy -3, below the target -1
    sac_temperature_loss(log_alpha, log_prob, -1.0).backward()
    assert log_alpha.grad.item() == pytest.approx(-2.0)  # a gradient step raises log alpha


def test_smoothing_noise_is_clipped_scaled_and_the_action_kept_in_bounds() -> None:
    action = torch.tensor([[0.0, 1.5], [1.0, -1.9], [-0.9, 0.0]])
    noise = torch.tensor([[1.0, -10.0], [10.0, 0.5], [-0.5, 3.0]])  # eps; sigma 0.2 -> 0.2, -2, 2, 0.1, -0.1, 0.6
    scale = torch.tensor([1.0, 2.0])  # dim 0 in [-1, 1], dim 1 in [-2, 2]
    low, high = -scale, scale
    out = smoothed_target_action(action, 0.2, 0.5, scale, low, high, noise)
    # clipped noise 0.2, -0.5 | 0.5, 0.1 | -0.1, 0.5; times scale (1, 2): 0.2, -1 | 0.5, 0.2 | -0.1, 1
    expected = torch.tensor([[0.2, 0.5], [1.0, -1.7], [-1.0, 1.0]])  # row 1's 1.5 clipped to the bound 1
    assert torch.allclose(out, expected)
    assert (out <= high).all() and (out >= low).all()


def test_smoothing_at_asymmetric_bounds_clips_to_low_and_high_not_to_the_half_range() -> None:
    # dim 0 in [-1, 3] (scale 2), dim 1 in [0, 0.5] (scale 0.25); σ = 0.2, c = 0.5
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([3.0, 0.5])
    scale = (high - low) / 2
    action = torch.tensor([[2.9, 0.1], [-0.9, 0.4]])
    noise = torch.tensor([[1.0, -10.0], [-10.0, 1.0]])
    out = smoothed_target_action(action, 0.2, 0.5, scale, low, high, noise)
    # σε = (0.2, -2 | -2, 0.2), clipped to ±0.5: (0.2, -0.5 | -0.5, 0.2),
    # times scale (2, 0.25): (0.4, -0.125 | -1, 0.05)
    # a + noise = (3.3, -0.025 | -1.9, 0.45), clipped to [low, high]: (3, 0 | -1, 0.45)
    # (clipping to ±scale instead would give (2, -0.025 | -1.9, 0.25))
    torch.testing.assert_close(out, torch.tensor([[3.0, 0.0], [-1.0, 0.45]]))
