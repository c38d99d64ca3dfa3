"""Hand-computed checks of ding_lite.rl_utils.ppo."""

import math

import pytest
import torch

from ding_lite.rl_utils import (
    normalize_advantage,
    normalize_advantage_per_minibatch,
    ppo_policy_loss,
    ppo_value_loss,
    ratio_stats,
)

pytestmark = pytest.mark.unittest

EPS = 0.2


def _logp(ratios):
    """log-probs with logp_old = 0 so that exp(logp_new - logp_old) equals the given ratios."""
    return torch.log(torch.tensor(ratios)).requires_grad_(True), torch.zeros(len(ratios))


@pytest.mark.parametrize(
    "ratio, adv, objective",
    [
        (1.1, 1.0, 1.1),  # A > 0, inside the clip range: min(1.1, 1.1)
        (1.5, 1.0, 1.2),  # A > 0, above 1+ε: min(1.5, 1.2) = 1.2 (clipped)
        (0.5, 2.0, 1.0),  # A > 0, below 1-ε: min(1.0, 0.8*2 = 1.6) = 1.0 (unclipped, pessimistic)
        (0.9, -1.0, -0.9),  # A < 0, inside: min(-0.9, -0.9)
        (0.5, -1.0, -0.8),  # A < 0, below 1-ε: min(-0.5, -0.8) = -0.8 (clipped)
        (1.5, -1.0, -1.5),  # A < 0, above 1+ε: min(-1.5, -1.2) = -1.5 (unclipped, pessimistic)
    ],
)
def test_ppo_policy_loss_single_sample(ratio, adv, objective):
    logp_new, logp_old = _logp([ratio])
    loss, _ = ppo_policy_loss(logp_new, logp_old, torch.tensor([adv]), clip_ratio=EPS)
    torch.testing.assert_close(loss, torch.tensor(-objective))


def test_ppo_policy_loss_batch_info_and_gradient():
    ratios = [1.1, 1.5, 0.5, 1.5, 0.5]
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 2.0])
    logp_new, logp_old = _logp(ratios)
    loss, info = ppo_policy_loss(logp_new, logp_old, adv, clip_ratio=EPS)
    # objectives: 1.1, 1.2, -0.8, -1.5, 1.0 -> sum 1.0, mean 0.2, loss -0.2
    torch.testing.assert_close(loss, torch.tensor(-0.2))
    # approx_kl = mean(0 - log r) = -(ln1.1 + 2 ln1.5 + 2 ln0.5)/5
    #           = -(0.0953102 + 0.8109302 - 1.3862944)/5 = 0.0960108
    torch.testing.assert_close(info["approx_kl"], torch.tensor(0.0960108))
    # |r - 1| > 0.2 for 1.5, 0.5, 1.5, 0.5 -> 4/5
    torch.testing.assert_close(info["clipfrac"], torch.tensor(0.8))
    assert not info["approx_kl"].requires_grad and not info["clipfrac"].requires_grad
    loss.backward()
    # d(-r·A/5)/d logp = -r·A/5 on the unclipped samples, 0 on the clipped ones (samples 1 and 2):
    #   [-1.1/5, 0, 0, 1.5/5, -0.5*2/5] = [-0.22, 0, 0, 0.3, -0.2]
    torch.testing.assert_close(logp_new.grad, torch.tensor([-0.22, 0.0, 0.0, 0.3, -0.2]))


def test_ppo_dual_clip():
    ratios = [5.0, 2.0, 5.0]
    adv = torch.tensor([-1.0, -1.0, 1.0])
    logp_new, logp_old = _logp(ratios)
    # c = 3:
    #   sample 0: A<0, min(-5, -1.2) = -5, max(-5, 3*-1 = -3) = -3   (dual clip active)
    #   sample 1: A<0, min(-2, -1.2) = -2, max(-2, -3) = -2          (dual clip inactive)
    #   sample 2: A>0, min(5, 1.2) = 1.2                             (dual clip never applies to A>0)
    #   loss = -(-3 - 2 + 1.2)/3 = 3.8/3 = 1.2666667
    loss, _ = ppo_policy_loss(logp_new, logp_old, adv, clip_ratio=EPS, dual_clip=3.0)
    torch.testing.assert_close(loss, torch.tensor(1.2666667))
    # without dual clip: -(-5 - 2 + 1.2)/3 = 5.8/3 = 1.9333333
    loss_plain, _ = ppo_policy_loss(logp_new, logp_old, adv, clip_ratio=EPS)
    torch.testing.assert_close(loss_plain, torch.tensor(1.9333333))
    loss.backward()
    # only sample 1 carries gradient: d(-(-r)/3)/d logp = r/3 = 2/3
    torch.testing.assert_close(logp_new.grad, torch.tensor([0.0, 0.6666667, 0.0]))


@pytest.mark.parametrize("bad", [1.0, 0.5])
def test_ppo_dual_clip_must_exceed_one(bad):
    logp_new, logp_old = _logp([1.0])
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_policy_loss(logp_new, logp_old, torch.tensor([1.0]), clip_ratio=EPS, dual_clip=bad)


def test_ppo_value_loss_with_and_without_clip():
    value_new = torch.tensor([1.5, 0.9], requires_grad=True)
    value_old = torch.tensor([1.0, 1.0])
    target = torch.tensor([2.0, 0.0])
    # sample 0: unclipped (1.5-2)^2 = 0.25; clipped v = 1 + clip(0.5, ±0.2) = 1.2 -> (1.2-2)^2 = 0.64 -> max 0.64
    # sample 1: unclipped (0.9-0)^2 = 0.81; clipped v = 0.9 (inside) -> 0.81
    # clipped loss = 0.5 * (0.64 + 0.81)/2 = 0.3625
    loss = ppo_value_loss(value_new, value_old, target, clip_ratio=EPS)
    torch.testing.assert_close(loss, torch.tensor(0.3625))
    loss.backward()
    # sample 0 takes the clipped branch (constant in v) -> grad 0; sample 1: 0.5*2*(0.9-0)/2 = 0.45
    torch.testing.assert_close(value_new.grad, torch.tensor([0.0, 0.45]))
    # no clip: 0.5 * (0.25 + 0.81)/2 = 0.265
    loss_plain = ppo_value_loss(value_new, value_old, target, clip_ratio=None)
    torch.testing.assert_close(loss_plain, torch.tensor(0.265))


def test_normalize_advantage_unbiased_std():
    # mean 2.5; unbiased var = (2.25 + 0.25 + 0.25 + 2.25)/3 = 5/3, std = 1.2909944
    # -> [-1.5, -0.5, 0.5, 1.5] / 1.2909944 = [-1.1618950, -0.3872983, 0.3872983, 1.1618950]
    out = normalize_advantage(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    torch.testing.assert_close(out, torch.tensor([-1.1618950, -0.3872983, 0.3872983, 1.1618950]))


def test_normalize_advantage_single_and_constant_batch_are_finite():
    torch.testing.assert_close(normalize_advantage(torch.tensor([5.0])), torch.tensor([0.0]))
    torch.testing.assert_close(normalize_advantage(torch.tensor([2.0, 2.0, 2.0])), torch.zeros(3))
    assert math.isfinite(normalize_advantage(torch.tensor([7.0])).item())


def test_ppo_policy_loss_per_sample_weight():
    # ratios 1.1 and 1.5 with A = 1: objectives 1.1 and 1.2 (clipped); weights (1, 0.5) -> -(1.1 + 0.6)/2 = -0.85
    logp_new, logp_old = _logp([1.1, 1.5])
    loss, _ = ppo_policy_loss(logp_new, logp_old, torch.tensor([1.0, 1.0]), clip_ratio=EPS,
                              weight=torch.tensor([1.0, 0.5]))
    torch.testing.assert_close(loss, torch.tensor(-0.85))
    loss.backward()
    # only sample 0 carries gradient: d(-w·r·A/2)/d logp = -1·1.1/2 = -0.55
    torch.testing.assert_close(logp_new.grad, torch.tensor([-0.55, 0.0]))


@pytest.mark.parametrize("n, batch_size", [(12, 4), (13, 4), (14, 4), (3, 8), (5, 1), (1, 4)])
def test_normalize_advantage_per_minibatch_equals_each_slice_normalised(n, batch_size):
    """The epoch-at-once normalisation gives each minibatch slice what normalize_advantage gives it, including a
    short last slice (one element: only centred) and a batch larger than the epoch."""
    torch.manual_seed(n)
    adv = torch.randn(n) * 3.0 + 1.0
    expected = torch.cat([normalize_advantage(adv[i:i + batch_size]) for i in range(0, n, batch_size)])
    torch.testing.assert_close(normalize_advantage_per_minibatch(adv, batch_size), expected)
    # hand case: slices [1, 3] and [5]: (-1, 1) / std(1, 3) = (-1, 1) / sqrt(2), then 5 - 5 = 0
    out = normalize_advantage_per_minibatch(torch.tensor([1.0, 3.0, 5.0]), 2)
    torch.testing.assert_close(out, torch.tensor([-1 / math.sqrt(2), 1 / math.sqrt(2), 0.0]))
    with pytest.raises(ValueError, match="batch_size"):
        normalize_advantage_per_minibatch(adv, 0)


@pytest.mark.parametrize("sizes", [[5, 5, 5], [4, 4, 2], [3]])
def test_ratio_stats_equal_ppo_policy_loss_info_per_minibatch(sizes):
    torch.manual_seed(len(sizes))
    log_ratios = [torch.randn(k) * 0.3 for k in sizes]
    approx_kl, clipfrac = ratio_stats(log_ratios, EPS)
    assert approx_kl.shape == clipfrac.shape == (len(sizes),)
    for i, log_ratio in enumerate(log_ratios):
        _, info = ppo_policy_loss(log_ratio, torch.zeros_like(log_ratio), torch.ones_like(log_ratio), EPS)
        torch.testing.assert_close(approx_kl[i], info["approx_kl"])
        torch.testing.assert_close(clipfrac[i], info["clipfrac"])
    # hand case: ratios 1.1 and 1.5 (one outside 1 ± 0.2), then 0.5: kl = -(ln 1.1 + ln 1.5) / 2 and -ln 0.5
    kl, frac = ratio_stats([torch.log(torch.tensor([1.1, 1.5])), torch.log(torch.tensor([0.5]))], EPS)
    torch.testing.assert_close(kl, torch.tensor([-(math.log(1.1) + math.log(1.5)) / 2, math.log(2.0)]))
    torch.testing.assert_close(frac, torch.tensor([0.5, 1.0]))
    assert ppo_policy_loss(*_logp([1.1]), torch.tensor([1.0]), EPS, with_info=False)[1] == {}
