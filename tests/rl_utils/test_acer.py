"""Hand-computed checks of ding_lite.rl_utils.acer."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from ding_lite.rl_utils.acer import (
    acer_policy_gradient,
    acer_policy_gradient_prob,
    acer_value_loss,
    categorical_kl_gradient,
    categorical_kl_gradient_prob,
    ema_update_,
    entropy_gradient,
    entropy_gradient_prob,
    importance_ratio,
    masked_mean,
    prob_to_logit_gradient,
    retrace_q_target,
    trust_region_projection,
)

pytestmark = pytest.mark.unittest


def _col(values):
    """A (T, 1) float column."""
    return torch.tensor(values, dtype=torch.float32).unsqueeze(1)


# A 4-step sequence, γ = 0.5, terminal at t = 1 (steps 2 and 3 are the next episode's first steps).
REWARD = [1.0, 2.0, 3.0, 4.0]
TERMINATED = [0.0, 1.0, 0.0, 0.0]
Q_TAKEN = [0.5, 1.0, 2.0, 1.5]
VALUE = [1.0, 2.0, 3.0, 2.0, 4.0]  # V(s_0) .. V(s_4); V(s_4) is the state after the last step
RHO_TAKEN = [0.5, 2.0, 0.25, 3.0]


def test_retrace_four_steps_with_terminal_in_the_middle():
    # Backwards, trace c_t = min(1, ρ_t):
    # t=3: Q^ret = 4 + 0.5·V(s_4) = 4 + 2 = 6
    # t=2: Q^ret = 3 + 0.5·[min(1, 3)·(6 − 1.5) + V(s_3)] = 3 + 0.5·(4.5 + 2) = 6.25
    # t=1: terminal: Q^ret = r_1 = 2 (nothing of steps 2, 3 flows back)
    # t=0: Q^ret = 1 + 0.5·[min(1, 2)·(2 − 1) + V(s_1)] = 1 + 0.5·(1 + 2) = 2.5   (trace cut at 1, not at ρ = 2)
    q_ret = retrace_q_target(_col(Q_TAKEN), _col(VALUE), _col(RHO_TAKEN), _col(REWARD), _col(TERMINATED),
                             _col([1, 1, 1, 1]), gamma=0.5)
    torch.testing.assert_close(q_ret, _col([2.5, 2.0, 6.25, 6.0]))
    assert not q_ret.requires_grad


def test_retrace_padding_after_terminal_does_not_leak():
    # Same first two steps, steps 2, 3 are padding (mask 0) holding arbitrary numbers: Q^ret_0, Q^ret_1 unchanged.
    q_ret = retrace_q_target(_col([0.5, 1.0, 9.0, -7.0]), _col([1.0, 2.0, 50.0, 3.0, 8.0]), _col([0.5, 2.0, 4.0, 0.1]),
                             _col([1.0, 2.0, 100.0, -100.0]), _col(TERMINATED), _col([1, 1, 0, 0]), gamma=0.5)
    torch.testing.assert_close(q_ret[:2], _col([2.5, 2.0]))


def test_retrace_bootstraps_where_a_sequence_is_cut_without_terminal():
    # Episode truncated after t = 1 (steps 2, 3 padding): the trace stops, Q^ret_1 bootstraps from V(s_2).
    # t=1: Q^ret = 2 + 0.5·V(s_2) = 2 + 1.5 = 3.5
    # t=0: Q^ret = 1 + 0.5·[min(1, 2)·(3.5 − 1) + 2] = 1 + 0.5·4.5 = 3.25
    q_ret = retrace_q_target(_col(Q_TAKEN), _col(VALUE), _col(RHO_TAKEN), _col(REWARD), _col([0, 0, 0, 0]),
                             _col([1, 1, 0, 0]), gamma=0.5)
    torch.testing.assert_close(q_ret[:2], _col([3.25, 3.5]))


def test_retrace_checks_value_rows():
    with pytest.raises(ValueError, match="T \\+ 1 = 5 rows"):
        retrace_q_target(_col(Q_TAKEN), _col(VALUE[:4]), _col(RHO_TAKEN), _col(REWARD), _col(TERMINATED),
                         _col([1, 1, 1, 1]), gamma=0.5)


# One sample, two actions: π(·|s) = [0.25, 0.75], Q(s, ·) = [1, 3], V = 0.25·1 + 0.75·3 = 2.5, Q^ret = 4,
# μ = [0.5, 0.5] so ρ = [0.5, 1.5]. Gradients are with respect to the logits: ∇ log π(a) = e_a − π.
PROB = torch.tensor([[[0.25, 0.75]]])
Q = torch.tensor([[[1.0, 3.0]]])
V = torch.tensor([[2.5]])
Q_RET = torch.tensor([[4.0]])
RHO = torch.tensor([[[0.5, 1.5]]])


def test_policy_gradient_bias_correction_is_zero_when_all_rho_below_c():
    # c = 10 ≥ every ρ: [1 − c/ρ]₊ = 0 for both actions. Taken action 0:
    # truncated = min(10, 0.5)·(4 − 2.5)·(e_0 − π) = 0.75·[0.75, −0.75] = [0.5625, −0.5625]
    # surrogate = 0.75·log 0.25 = −1.0397208
    terms = acer_policy_gradient(PROB, Q, V, Q_RET, RHO, torch.tensor([[0]]), c_clip_ratio=10.0)
    torch.testing.assert_close(terms.truncated, torch.tensor([[[0.5625, -0.5625]]]))
    torch.testing.assert_close(terms.bias_correction, torch.zeros(1, 1, 2))
    torch.testing.assert_close(terms.truncated_surrogate, torch.tensor([[-1.0397208]]))
    torch.testing.assert_close(terms.bias_correction_surrogate, torch.zeros(1, 1))


def test_policy_gradient_truncation_and_bias_correction():
    # c = 1.2, taken action 1 with ρ = 1.5 > c:
    # truncated = min(1.2, 1.5)·(4 − 2.5)·(e_1 − π) = 1.8·[−0.25, 0.25] = [−0.45, 0.45]
    # bias: [1 − 1.2/0.5]₊ = 0, [1 − 1.2/1.5]₊ = 0.2; u = [0, 0.2·0.75·(3 − 2.5)] = [0, 0.075]
    #   bias = u − π·Σu = [0 − 0.25·0.075, 0.075 − 0.75·0.075] = [−0.01875, 0.01875]
    # surrogates: 1.8·log 0.75 = −0.5178278;  0.075·log 0.75 = −0.0215762
    terms = acer_policy_gradient(PROB, Q, V, Q_RET, RHO, torch.tensor([[1]]), c_clip_ratio=1.2)
    torch.testing.assert_close(terms.truncated, torch.tensor([[[-0.45, 0.45]]]))
    torch.testing.assert_close(terms.bias_correction, torch.tensor([[[-0.01875, 0.01875]]]))
    torch.testing.assert_close(terms.truncated_surrogate, torch.tensor([[-0.5178278]]))
    torch.testing.assert_close(terms.bias_correction_surrogate, torch.tensor([[-0.0215762]]))


def test_policy_gradient_terms_are_the_logit_gradients_of_their_surrogates():
    # independent check by autograd: d/dℓ of (constant weights)·log_softmax(ℓ) equals the closed forms above
    logit = torch.log(PROB).requires_grad_(True)
    terms = acer_policy_gradient(PROB, Q, V, Q_RET, RHO, torch.tensor([[1]]), c_clip_ratio=1.2)
    weights = torch.tensor([[[0.0, 1.8]]]) + torch.tensor([[[0.0, 0.075]]])  # truncated coef + u
    (weights * torch.log_softmax(logit, -1)).sum().backward()
    torch.testing.assert_close(logit.grad, terms.truncated + terms.bias_correction)


def test_entropy_and_kl_gradients():
    # H = −(0.25·log 0.25 + 0.75·log 0.75) = 0.5623351; ∇_ℓ H = −π(log π + H):
    #   −0.25·(−1.3862944 + 0.5623351) = 0.2059898,  −0.75·(−0.2876821 + 0.5623351) = −0.2059898
    torch.testing.assert_close(entropy_gradient(PROB), torch.tensor([[[0.2059898, -0.2059898]]]))
    # k = π − π_avg with π_avg = [0.5, 0.5]: [−0.25, 0.25]; zero when π = π_avg (the KL's minimum)
    k = categorical_kl_gradient(torch.tensor([[[0.5, 0.5]]]), PROB)
    torch.testing.assert_close(k, torch.tensor([[[-0.25, 0.25]]]))
    torch.testing.assert_close(categorical_kl_gradient(PROB, PROB), torch.zeros(1, 1, 2))


def test_projection_returns_g_unchanged_inside_the_trust_region():
    g = torch.tensor([[3.0, 0.0], [0.2, 0.3]])
    k = torch.tensor([[-2.0, -2.0 / 3.0], [1.0, 1.0]])  # kᵀg = −6 and 0.5, both ≤ δ = 1
    z, active = trust_region_projection(g, k, delta=1.0)
    torch.testing.assert_close(z, g)
    assert not active.any()
    z0, active0 = trust_region_projection(g, torch.zeros_like(k), delta=1.0)  # k = 0: no NaN from 0/0
    torch.testing.assert_close(z0, g)
    assert not active0.any()


def test_projection_lands_on_the_constraint_outside():
    # g = [2, 1], k = [1, 1], δ = 1: kᵀg = 3, ‖k‖² = 2, scale (3 − 1)/2 = 1 -> z = [1, 0], kᵀz = 1 = δ
    # g = [1, 2, 0], k = [2, 0, 1], δ = 0.5: kᵀg = 2, ‖k‖² = 5, scale 1.5/5 = 0.3 -> z = [0.4, 2, −0.3], kᵀz = 0.5
    z, active = trust_region_projection(torch.tensor([[2.0, 1.0]]), torch.tensor([[1.0, 1.0]]), delta=1.0)
    torch.testing.assert_close(z, torch.tensor([[1.0, 0.0]]))
    assert active.all()
    k = torch.tensor([2.0, 0.0, 1.0])
    z, active = trust_region_projection(torch.tensor([1.0, 2.0, 0.0]), k, delta=0.5)
    torch.testing.assert_close(z, torch.tensor([0.4, 2.0, -0.3]))
    torch.testing.assert_close((k * z).sum(), torch.tensor(0.5))
    assert bool(active)
    with pytest.raises(ValueError, match="delta=0"):
        trust_region_projection(torch.ones(2), torch.ones(2), delta=0)


def test_value_loss_masks_steps_after_a_terminal():
    # steps 0, 1 real, steps 2, 3 after the terminal (mask 0; one even holds a NaN target):
    # ½·(2 − 1)² = 0.5 and ½·(4 − 2)² = 2 -> mean over the 2 real steps = 1.25
    q_taken = torch.tensor([1.0, 2.0, 5.0, 7.0], requires_grad=True)
    loss = acer_value_loss(q_taken, torch.tensor([2.0, 4.0, math.nan, 0.0]), torch.tensor([1.0, 1.0, 0.0, 0.0]))
    torch.testing.assert_close(loss, torch.tensor(1.25))
    loss.backward()
    # d/dq of ½(q_ret − q)²/2 = (q − q_ret)/2: −0.5, −1; nothing on the masked steps
    torch.testing.assert_close(q_taken.grad, torch.tensor([-0.5, -1.0, 0.0, 0.0]))
    torch.testing.assert_close(masked_mean(torch.ones(3), torch.zeros(3)), torch.tensor(0.0))


def test_ema_update_moves_by_the_rule():
    average, online = nn.Linear(1, 1), nn.Linear(1, 1)
    with torch.no_grad():
        average.weight.fill_(1.0)
        average.bias.fill_(-2.0)
        online.weight.fill_(3.0)
        online.bias.fill_(2.0)
    ema_update_(average, online, target_theta=0.25)
    # (1 − 0.25)·1 + 0.25·3 = 1.5;  0.75·(−2) + 0.25·2 = −1
    torch.testing.assert_close(average.weight, torch.tensor([[1.5]]))
    torch.testing.assert_close(average.bias, torch.tensor([-1.0]))
    torch.testing.assert_close(online.weight, torch.tensor([[3.0]]))  # the online net is untouched
    with pytest.raises(ValueError, match="target_theta=1.5"):
        ema_update_(average, online, target_theta=1.5)


def test_importance_ratio_stays_finite_past_a_logit_gap_of_104():
    logit = torch.tensor([[0.0, -120.0]])
    behaviour = torch.tensor([[0.0, -110.0]])
    # the ratio of softmaxes is 0/0 here (both underflow in float32)
    assert torch.isnan(torch.softmax(logit, -1) / torch.softmax(behaviour, -1)).any()
    rho = importance_ratio(logit, behaviour)
    # π(0) / μ(0) = (1 + e^-110) / (1 + e^-120) = 1; π(1) / μ(1) = e^-120 / e^-110 · (1 + e^-110) / (1 + e^-120)
    torch.testing.assert_close(rho, torch.tensor([[1.0, float(np.exp(-10.0))]]))


def test_importance_ratio_of_ordinary_logits_is_the_probability_ratio():
    logit = torch.tensor([[0.3, -0.2, 1.0]])
    behaviour = torch.tensor([[-1.0, 0.5, 0.0]])
    torch.testing.assert_close(importance_ratio(logit, behaviour),
                               torch.softmax(logit, -1) / torch.softmax(behaviour, -1))


def _random_inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    prob = torch.softmax(torch.randn(3, 2, 4, generator=gen), -1)
    behaviour = torch.softmax(torch.randn(3, 2, 4, generator=gen), -1)
    q_value = torch.randn(3, 2, 4, generator=gen)
    value = (prob * q_value).sum(-1)
    q_retrace = torch.randn(3, 2, generator=gen)
    action = torch.randint(0, 4, (3, 2), generator=gen)
    return prob, q_value, value, q_retrace, prob / behaviour, action


@pytest.mark.parametrize("c", [10.0, 0.5])
def test_probability_gradient_carried_to_the_logits_is_the_logit_gradient(c):
    prob, q_value, value, q_retrace, rho, action = _random_inputs()
    g_prob = acer_policy_gradient_prob(prob, q_value, value, q_retrace, rho, action, c)
    g_prob = g_prob + 0.1 * entropy_gradient_prob(prob)
    terms = acer_policy_gradient(prob, q_value, value, q_retrace, rho, action, c)
    g_logit = terms.truncated + terms.bias_correction + 0.1 * entropy_gradient(prob)
    torch.testing.assert_close(prob_to_logit_gradient(g_prob, prob), g_logit, rtol=1e-5, atol=1e-6)


def test_probability_gradients_are_the_autograd_gradients_of_their_functions():
    prob = torch.tensor([0.2, 0.5, 0.3], requires_grad=True)
    avg = torch.tensor([0.4, 0.4, 0.2])
    (avg * (avg.log() - prob.log())).sum().backward()
    torch.testing.assert_close(categorical_kl_gradient_prob(avg, prob.detach()), prob.grad)
    prob.grad = None
    (-(prob * prob.log()).sum()).backward()
    torch.testing.assert_close(entropy_gradient_prob(prob.detach()), prob.grad)
    # hand values: k = −π_avg/π = [−2, −0.8, −2/3]
    torch.testing.assert_close(categorical_kl_gradient_prob(avg, prob.detach()), torch.tensor([-2.0, -0.8, -2 / 3]))
