"""The written-out PPO loss gradients (ding_lite/rl_utils/ppo_grad.py): by hand on tiny cases, and against autograd
of the torch losses and distributions they mirror, clip edges and ties included."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.rl_utils.distributions import CategoricalLogits, DiagGaussian
from ding_lite.rl_utils.masks import apply_action_mask
from ding_lite.rl_utils.ppo import ppo_policy_loss, ppo_value_loss
from ding_lite.rl_utils.ppo_grad import (
    categorical_log_prob,
    categorical_log_prob_grad,
    gaussian_log_prob,
    gaussian_log_prob_grad,
    ppo_policy_loss_grad,
    ppo_value_loss_grad,
)

pytestmark = pytest.mark.unittest


def _f32(*xs: list[float]) -> list[np.ndarray]:
    return [np.array(x, dtype=np.float32) for x in xs]


def test_policy_gradient_by_hand() -> None:
    # eps 0.2. Sample 0: r = e^0.1 = 1.105, A = 2: inside the range, objective r A, d/dlogp = r A.
    # Sample 1: r = e^0.5 = 1.649, A = 1: clipped at 1.2 (1.2 < 1.649), no gradient.
    # Sample 2: r = e^-0.5 = 0.607, A = -1: unclipped -0.607 > clipped -0.8, so the clipped term is the minimum and
    # is flat in r: no gradient. Sample 3: r = 0.607, A = +1: unclipped 0.607 < 0.8: gradient r A.
    logp, logp_old, adv = _f32([0.1, 0.5, -0.5, -0.5], [0, 0, 0, 0], [2, 1, -1, 1])
    loss, grad, log_ratio = ppo_policy_loss_grad(logp, logp_old, adv, 0.2)
    r = np.exp([0.1, 0.5, -0.5, -0.5])
    assert loss == pytest.approx(-(r[0] * 2 + 1.2 - 0.8 + r[3]) / 4, rel=1e-6)
    np.testing.assert_allclose(grad, -np.array([r[0] * 2, 0, 0, r[3]]) / 4, rtol=1e-6)
    np.testing.assert_allclose(log_ratio, logp)


def test_dual_clip_by_hand() -> None:
    # A = -1, r = e^2 = 7.39: the PPO objective min(-7.39, -1.2) = -7.39 is below c A = -3, so it becomes -3, flat.
    loss, grad, _ = ppo_policy_loss_grad(*_f32([2.0], [0.0], [-1.0]), 0.2, dual_clip=3.0)
    assert loss == pytest.approx(3.0) and grad[0] == 0.0
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_policy_loss_grad(*_f32([2.0], [0.0], [-1.0]), 0.2, dual_clip=1.0)


def test_value_gradient_by_hand() -> None:
    # eps 0.5, R = 0. Sample 0: v = 1, v_old = 0.8: inside, both errors 1: gradient (v - R) / B = 0.5.
    # Sample 1: v = 2, v_old = 0: the clipped value 0.5 has the smaller error, the unclipped one counts: 2 / B = 1.
    # Sample 1 with R = 3 instead: unclipped error -1, clipped -2.5 (larger), outside the range: no gradient.
    v, v_old, target = _f32([1.0, 2.0], [0.8, 0.0], [0.0, 0.0])
    loss, grad = ppo_value_loss_grad(v, v_old, target, 0.5)
    assert loss == pytest.approx(0.5 * (1 + 4) / 2)
    np.testing.assert_allclose(grad, [0.5, 1.0])
    loss, grad = ppo_value_loss_grad(*_f32([2.0], [0.0], [3.0]), 0.5)
    assert loss == pytest.approx(0.5 * 2.5 ** 2) and grad[0] == 0.0
    loss, grad = ppo_value_loss_grad(*_f32([2.0], [0.0], [3.0]), None)
    assert loss == pytest.approx(0.5) and grad[0] == pytest.approx(-1.0)


def _autograd(fn, *arrays: np.ndarray):
    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    value = fn(*tensors)
    value.backward()
    grads = [t.grad.numpy() if t.grad is not None else np.zeros_like(a) for t, a in zip(tensors, arrays, strict=True)]
    return float(value.detach()), grads


@pytest.mark.parametrize("dual_clip", [None, 2.0])
def test_policy_loss_matches_autograd_at_clip_edges_and_ties(dual_clip: float | None) -> None:
    rng = np.random.default_rng(0)
    n = 400
    logp_old = rng.normal(size=n).astype(np.float32)
    logp = logp_old + rng.normal(scale=0.4, size=n).astype(np.float32)
    logp[:50] = logp_old[:50]  # ratio exactly 1: the two terms tie
    adv = rng.normal(size=n).astype(np.float32)
    adv[50:60] = 0.0
    if dual_clip is not None:  # objective exactly at the dual bound c A: r A = c A with r = c, A < 0
        logp[60:70] = logp_old[60:70] + np.log(np.float32(dual_clip))
        adv[60:70] = -np.abs(adv[60:70])
    loss, grad, _ = ppo_policy_loss_grad(logp, logp_old, adv, 0.2, dual_clip)
    expected, (grad_t, *_) = _autograd(
        lambda lp, lo, a: ppo_policy_loss(lp, lo, a, 0.2, dual_clip, with_info=False)[0], logp, logp_old, adv)
    assert loss == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(grad, grad_t, rtol=1e-5, atol=1e-8)
    assert grad.dtype == np.float32


@pytest.mark.parametrize("clip", [None, 0.2])
def test_value_loss_matches_autograd_with_ties(clip: float | None) -> None:
    rng = np.random.default_rng(1)
    n = 300
    v_old = rng.normal(size=n).astype(np.float32)
    v = v_old + rng.normal(scale=0.3, size=n).astype(np.float32)
    v[:30] = v_old[:30]  # inside the clip: both errors tie
    target = rng.normal(size=n).astype(np.float32)
    target[30:40] = v[30:40]  # zero error
    loss, grad = ppo_value_loss_grad(v, v_old, target, clip)
    expected, (grad_t, *_) = _autograd(lambda a, b, c: ppo_value_loss(a, b, c, clip), v, v_old, target)
    assert loss == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(grad, grad_t, rtol=1e-5, atol=1e-8)


def test_value_loss_tie_outside_the_clip_halves_the_gradient() -> None:
    # eps 0.5, v = 1, v_old = -1 (|v - v_old| = 2: outside the clip), R = 0.25: error 1 - 0.25 = 0.75 and clipped
    # error (-1 + 0.5) - 0.25 = -0.75 tie. torch.max gives each side half: 0.5·(0.75 + 0) = 0.375 (the clipped side
    # passes no gradient outside the clip); loss ½·0.75² = 0.28125.
    v, v_old, target = (np.array([x], np.float32) for x in (1.0, -1.0, 0.25))
    loss, grad = ppo_value_loss_grad(v, v_old, target, 0.5)
    assert loss == pytest.approx(0.28125) and grad[0] == pytest.approx(0.375)
    expected, (grad_t, *_) = _autograd(lambda a, b, c: ppo_value_loss(a, b, c, 0.5), v, v_old, target)
    assert loss == pytest.approx(expected) and grad[0] == pytest.approx(grad_t[0])


def test_gaussian_log_prob_and_gradient_match_autograd() -> None:
    rng = np.random.default_rng(2)
    mu = rng.normal(size=(20, 3)).astype(np.float32)
    log_std = rng.normal(scale=0.5, size=3).astype(np.float32)
    action = rng.normal(size=(20, 3)).astype(np.float32)
    weight = rng.normal(size=20).astype(np.float32)
    logp, z = gaussian_log_prob(mu, log_std, action)
    grad_mu, grad_log_std = gaussian_log_prob_grad(z, log_std, weight)

    def weighted_log_prob(m: torch.Tensor, ls: torch.Tensor) -> torch.Tensor:
        dist = DiagGaussian(m, ls.expand_as(m).exp())
        return (dist.log_prob(torch.from_numpy(action)) * torch.from_numpy(weight)).sum()

    _, (grad_mu_t, grad_log_std_t) = _autograd(weighted_log_prob, mu, log_std)
    torch_logp = DiagGaussian(torch.from_numpy(mu), torch.from_numpy(log_std).exp().expand(20, 3)).log_prob(
        torch.from_numpy(action))
    np.testing.assert_allclose(logp, torch_logp.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad_mu, grad_mu_t, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grad_log_std, grad_log_std_t, rtol=1e-4, atol=1e-5)


def test_gaussian_log_prob_by_hand() -> None:
    # one dimension, mu 0, sigma e^0 = 1, a = 1: log N = -1/2 - log(2 pi)/2; d/dmu = z / sigma = 1; d/dlog sigma = 0
    logp, z = gaussian_log_prob(*_f32([[0.0]], [0.0], [[1.0]]))
    assert logp[0] == pytest.approx(-0.5 - 0.5 * np.log(2 * np.pi))
    grad_mu, grad_log_std = gaussian_log_prob_grad(z, np.zeros(1, np.float32), np.ones(1, np.float32))
    assert grad_mu[0, 0] == pytest.approx(1.0) and grad_log_std[0] == pytest.approx(0.0)


@pytest.mark.parametrize("masked", [False, True])
def test_categorical_log_prob_and_gradient_match_autograd(masked: bool) -> None:
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(30, 5)).astype(np.float32)
    mask = rng.random((30, 5)) < 0.6 if masked else None
    if mask is not None:
        mask[:, 2] = True
    action = np.array([rng.choice(np.flatnonzero(row)) for row in (mask if mask is not None else np.ones((30, 5)))])
    weight = rng.normal(size=30).astype(np.float32)
    logp, log_pi, entropy = categorical_log_prob(logits, action, mask)
    grad = categorical_log_prob_grad(log_pi, entropy, action, weight, 0.3, mask)

    def objective(z: torch.Tensor) -> torch.Tensor:
        dist = CategoricalLogits(apply_action_mask(z, None if mask is None else torch.from_numpy(mask)))
        return (dist.log_prob(torch.from_numpy(action)) * torch.from_numpy(weight)).sum() + 0.3 * dist.entropy().sum()

    _, (grad_t,) = _autograd(objective, logits)
    dist = CategoricalLogits(apply_action_mask(torch.from_numpy(logits),
                                               None if mask is None else torch.from_numpy(mask)))
    np.testing.assert_allclose(logp, dist.log_prob(torch.from_numpy(action)).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(entropy, dist.entropy().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, grad_t, rtol=1e-4, atol=1e-6)
    if mask is not None:
        assert (grad[~mask] == 0).all()


def test_categorical_by_hand() -> None:
    # two equal logits: pi = (1/2, 1/2), log pi(0) = -log 2, H = log 2; d log pi(0)/dz = (1 - 1/2, -1/2);
    # dH/dz_j = -pi_j (log pi_j + H) = 0 at the uniform distribution
    logp, log_pi, entropy = categorical_log_prob(*_f32([[0.0, 0.0]]), np.array([0]))
    assert logp[0] == pytest.approx(-np.log(2)) and entropy[0] == pytest.approx(np.log(2))
    grad = categorical_log_prob_grad(log_pi, entropy, np.array([0]), np.ones(1, np.float32), 1.0)
    np.testing.assert_allclose(grad, [[0.5, -0.5]], atol=1e-7)
