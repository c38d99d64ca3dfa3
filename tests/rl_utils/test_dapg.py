"""Hand-computed checks of ding_lite.rl_utils.dapg (the PPO-DAPG demo term)."""

import math

import pytest
import torch
from torch.distributions import Categorical

from ding_lite.rl_utils import dapg_decay_coeff, dapg_demo_loss, dapg_demo_weight, max_advantage

pytestmark = pytest.mark.unittest


def test_max_advantage_is_the_detached_raw_max():
    adv = torch.tensor([1.0, 5.0, -2.0], requires_grad=True)
    m = max_advantage(adv)
    assert m.item() == 5.0
    assert not m.requires_grad


@pytest.mark.parametrize("adv, standardize, expected", [
    ([1.0, 2.0, 3.0, 6.0], False, 6.0),
    # mean 3, unbiased variance (4 + 1 + 0 + 9) / 3 = 14/3: (6 − 3) / sqrt(14/3) = 1.3887301
    ([1.0, 2.0, 3.0, 6.0], True, 1.3887301),
    # all negative: the raw max is negative, the standardised one is not; mean −2, std 1: (−1 + 2) / 1 = 1
    ([-3.0, -2.0, -1.0], True, 1.0),
    ([-3.0, -2.0, -1.0], False, -1.0),
    ([0.1, 0.3], True, 0.7071068),  # whatever the spread: (0.3 − 0.2) / 0.1414214
    ([5.0], True, 0.0),  # one advantage: centred to 0, no nan from an unbiased std of one sample
])
def test_max_advantage_raw_and_standardised(adv, standardize, expected):
    m = max_advantage(torch.tensor(adv, dtype=torch.float64, requires_grad=True), standardize)
    assert m.item() == pytest.approx(expected, rel=1e-6) and not m.requires_grad


@pytest.mark.parametrize("max_adv, coeff, weight", [
    (2.0, 0.5, 1.0),  # 0.5 * 2
    (14.0, 0.5, 7.0),  # 0.5 * 14
    (0.0, 0.5, 0.0),  # zero best advantage: zero weight
    (-3.0, 0.5, 0.0),  # negative: clamped, never a negative weight
])
def test_demo_weight(max_adv, coeff, weight):
    assert dapg_demo_weight(torch.tensor(max_adv), coeff).item() == pytest.approx(weight)


def test_non_positive_max_advantage_gives_zero_loss_and_zero_gradient():
    adv = torch.tensor([-3.0, -1.0, -0.5])
    w = dapg_demo_weight(max_advantage(adv), coeff=0.5)
    logits = torch.tensor([[0.3, -0.2], [1.0, 0.0]], requires_grad=True)
    logp = Categorical(logits=logits).log_prob(torch.tensor([0, 1]))
    loss, _ = dapg_demo_loss(logp, w)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(logits.grad, torch.zeros(2, 2))


def test_demo_loss_value_and_gradient_through_logits():
    # sample 1: logits [0, 0], demo action 0: π = 0.5, dπ0/dlogits = π0(e0 - π) = 0.5·[0.5, -0.5] = [0.25, -0.25]
    # sample 2: logits [ln 3, 0] -> π = [0.75, 0.25], demo action 1: π1 = 0.25,
    #           dπ1/dlogits = π1(e1 - π) = 0.25·[-0.75, 0.75] = [-0.1875, 0.1875]
    # w = 0.5·max(4, 0) = 2; loss = -w·mean(π) = -2·(0.5 + 0.25)/2 = -0.75
    # dloss/dlogits = -w/B·dπ = -1·dπ -> [[-0.25, 0.25], [0.1875, -0.1875]]
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]], requires_grad=True)
    logp = Categorical(logits=logits).log_prob(torch.tensor([0, 1]))
    w = dapg_demo_weight(max_advantage(torch.tensor([1.0, 4.0, -2.0])), coeff=0.5)
    loss, likelihood = dapg_demo_loss(logp, w)
    torch.testing.assert_close(loss, torch.tensor(-0.75))
    torch.testing.assert_close(likelihood, torch.tensor(0.375))  # mean π = (0.5 + 0.25) / 2
    loss.backward()
    torch.testing.assert_close(logits.grad, torch.tensor([[-0.25, 0.25], [0.1875, -0.1875]]))


def test_demo_loss_log_likelihood_value_and_gradient():
    # logp = ln[0.5, 0.25, 0.8]; w = 1: loss = -mean(logp) = -(-0.6931472 - 1.3862944 - 0.2231436)/3 = 0.7675284
    # d/dlogp_i = -w/3 = -0.3333333 each; in probability form d/dlogp_i = -w·π_i/3 = [-0.1666667, -0.0833333,
    # -0.2666667]
    logp = torch.log(torch.tensor([0.5, 0.25, 0.8])).requires_grad_(True)
    loss, likelihood = dapg_demo_loss(logp, 1.0, log_likelihood=True)
    torch.testing.assert_close(loss, torch.tensor(0.7675284))
    torch.testing.assert_close(likelihood, torch.tensor(-0.7675284))
    loss.backward()
    torch.testing.assert_close(logp.grad, torch.full((3,), -1.0 / 3.0))

    logp.grad = None
    loss, _ = dapg_demo_loss(logp, 1.0, log_likelihood=False)
    torch.testing.assert_close(loss, torch.tensor(-(0.5 + 0.25 + 0.8) / 3))  # -0.5166667
    loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([-0.1666667, -0.0833333, -0.2666667]))


def test_demo_loss_treats_the_weight_as_a_constant():
    max_adv = torch.tensor(2.0, requires_grad=True)
    logp = torch.log(torch.tensor([0.5])).requires_grad_(True)
    loss, _ = dapg_demo_loss(logp, 0.5 * max_adv)  # even a weight that carries a graph
    loss.backward()
    assert max_adv.grad is None


@pytest.mark.parametrize("k, coeff", [
    (0, 0.1),  # λ0
    (1, 0.095),  # 0.1·0.95
    (2, 0.09025),  # 0.1·0.95²
    (10, 0.0598737),  # 0.1·0.95^10 = 0.1·0.5987369
])
def test_decay_schedule(k, coeff):
    assert dapg_decay_coeff(0.1, 0.95, k) == pytest.approx(coeff, rel=1e-6)


def test_decay_rejects_negative_iteration():
    with pytest.raises(ValueError, match="k=-1"):
        dapg_decay_coeff(0.1, 0.95, -1)
