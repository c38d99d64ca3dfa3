"""The plain-arithmetic action distributions against torch.distributions and hand-computed values."""
from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Categorical, Independent, Normal

from ding_lite.rl_utils.distributions import CategoricalLogits, DiagGaussian

pytestmark = pytest.mark.unittest


def test_gaussian_log_prob_and_entropy_by_hand() -> None:
    # one action dim: N(a=1 | mu=0, sigma=2) = -1/8 - log 2 - log(2 pi)/2
    dist = DiagGaussian(torch.tensor([[0.0]]), torch.tensor([[2.0]]))
    expected = -0.125 - math.log(2) - 0.5 * math.log(2 * math.pi)
    assert dist.log_prob(torch.tensor([[1.0]])).item() == pytest.approx(expected)
    assert dist.entropy().item() == pytest.approx(0.5 + 0.5 * math.log(2 * math.pi) + math.log(2))


def test_gaussian_matches_torch_with_gradients_and_broadcasting() -> None:
    torch.manual_seed(0)
    mu = torch.randn(5, 3, requires_grad=True)
    log_std = torch.randn(3, requires_grad=True)
    action = torch.randn(5, 3)
    ours = DiagGaussian(mu, log_std.exp().expand_as(mu))
    ref = Independent(Normal(mu, log_std.exp().expand_as(mu)), 1)
    torch.testing.assert_close(ours.log_prob(action), ref.log_prob(action))
    torch.testing.assert_close(ours.entropy(), ref.entropy())
    grads = torch.autograd.grad((ours.log_prob(action).sum() + ours.entropy().sum()), (mu, log_std))
    ref_grads = torch.autograd.grad((ref.log_prob(action).sum() + ref.entropy().sum()), (mu, log_std))
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r)
    # (K, 1, A) members against (1, B, A) candidates, as the ensemble's mixture density uses it
    members = DiagGaussian(mu[:, None], log_std.exp().expand_as(mu)[:, None])
    torch.testing.assert_close(members.log_prob(mu[None]),
                               Independent(Normal(mu[:, None], log_std.exp().expand_as(mu)[:, None]), 1)
                               .log_prob(mu[None]))


def test_gaussian_samples_are_torchs_stream() -> None:
    mu, sigma = torch.randn(4, 2), torch.rand(4, 2) + 0.1
    torch.manual_seed(3)
    ours = DiagGaussian(mu, sigma).sample()
    torch.manual_seed(3)
    ref = Normal(mu, sigma).sample()
    torch.testing.assert_close(ours, ref)
    torch.manual_seed(3)
    action, log_p = DiagGaussian(mu, sigma).sample_and_log_prob()
    assert torch.equal(action, ref)  # the same draw, bit for bit
    torch.testing.assert_close(log_p, Independent(Normal(mu, sigma), 1).log_prob(ref))


def test_categorical_matches_torch_with_masked_logits_and_broadcasting() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 5, requires_grad=True)
    masked = logits.masked_fill(torch.tensor([False, True, False, False, True]), -1e8)
    action = torch.tensor([0, 2, 3, 2])
    ours, ref = CategoricalLogits(masked), Categorical(logits=masked)
    torch.testing.assert_close(ours.log_prob(action), ref.log_prob(action))
    torch.testing.assert_close(ours.entropy(), ref.entropy())
    torch.testing.assert_close(ours.probs, ref.probs)
    grad = torch.autograd.grad(ours.log_prob(action).sum() + ours.entropy().sum(), logits, retain_graph=True)[0]
    ref_grad = torch.autograd.grad(ref.log_prob(action).sum() + ref.entropy().sum(), logits)[0]
    torch.testing.assert_close(grad, ref_grad)
    # (K, B, A) members, one action per row of the batch
    members = torch.randn(3, 4, 5)
    torch.testing.assert_close(CategoricalLogits(members).log_prob(action),
                               Categorical(logits=members).log_prob(action))
    # uniform over 4 actions: log(1/4) each, entropy log 4; masked actions are never drawn
    uniform = CategoricalLogits(torch.zeros(1, 4))
    assert uniform.log_prob(torch.tensor([2])).item() == pytest.approx(-math.log(4))
    assert uniform.entropy().item() == pytest.approx(math.log(4))
    draws = CategoricalLogits(masked.detach().expand(2000, 4, 5)).sample()
    assert draws.shape == (2000, 4) and not bool(((draws == 1) | (draws == 4)).any())


def test_categorical_samples_are_torchs_stream() -> None:
    logits = torch.tensor([[0.1, 0.5, -0.3], [2.0, 0.0, 0.0]])
    torch.manual_seed(7)
    ours = CategoricalLogits(logits).sample()
    torch.manual_seed(7)
    ref = Categorical(logits=logits).sample()
    torch.testing.assert_close(ours, ref)
    torch.manual_seed(7)
    action, log_p = CategoricalLogits(logits).sample_and_log_prob()
    assert torch.equal(action, ref)
    torch.testing.assert_close(log_p, Categorical(logits=logits).log_prob(ref))
