"""Hand-computed checks of ding_lite.rl_utils.eppo (Ensemble PPO maths)."""
import math

import pytest
import torch

from ding_lite.rl_utils.eppo import (
    EPPOCoef,
    categorical_mixture_entropy,
    eppo_loss,
    eppo_policy_loss,
    gaussian_mean_diversity,
    gaussian_mixture_entropy,
    mixture_log_prob,
    mixture_log_probs,
    mixture_probs,
    probability_diversity,
)
from ding_lite.rl_utils.ppo import ppo_policy_loss

pytestmark = pytest.mark.unittest

LN3 = math.log(3.0)
# member 1: logits (0, 0) -> p = (0.5, 0.5); member 2: logits (ln 3, 0) -> p = (3/4, 1/4)
TWO_MEMBER_LOGITS = torch.tensor([[[0.0, 0.0]], [[LN3, 0.0]]])  # (K=2, B=1, A=2)


def test_mixture_is_the_mean_of_member_probabilities_not_of_logits():
    # p̄ = ((0.5 + 0.75)/2, (0.5 + 0.25)/2) = (0.625, 0.375)
    torch.testing.assert_close(mixture_probs(TWO_MEMBER_LOGITS), torch.tensor([[0.625, 0.375]]))
    # the average of logits, (ln3/2, 0), would give softmax = √3/(√3 + 1) = 0.6339746 for action 0: not the mixture
    logit_mean_p0 = torch.softmax(TWO_MEMBER_LOGITS.mean(0), -1)[0, 0]
    torch.testing.assert_close(logit_mean_p0, torch.tensor(0.6339746))
    assert abs(mixture_probs(TWO_MEMBER_LOGITS)[0, 0] - logit_mean_p0) > 5e-3
    # log p̄ = (ln 0.625, ln 0.375) = (-0.4700036, -0.9808293), from logits and from per-action member log-probs
    torch.testing.assert_close(mixture_log_probs(TWO_MEMBER_LOGITS), torch.tensor([[-0.4700036, -0.9808293]]))
    member_logp_a0 = torch.log(torch.tensor([[0.5], [0.75]]))  # (K, B) log p_k(a=0)
    torch.testing.assert_close(mixture_log_prob(member_logp_a0), torch.tensor([-0.4700036]))


def test_weighted_mixture():
    # weights (1/4, 3/4): p̄(a=0) = 0.25*0.5 + 0.75*0.75 = 0.6875, log = -0.3746934
    log_w = torch.log(torch.tensor([0.25, 0.75]))
    torch.testing.assert_close(mixture_probs(TWO_MEMBER_LOGITS, log_w), torch.tensor([[0.6875, 0.3125]]))
    member_logp_a0 = torch.log(torch.tensor([[0.5], [0.75]]))
    torch.testing.assert_close(mixture_log_prob(member_logp_a0, log_w), torch.tensor([-0.3746934]))


def test_gaussian_mixture_log_prob_via_logsumexp():
    # members N(0, 1) and N(2, 1):
    #   a = 1: both densities 0.2419707 -> p̄ = 0.2419707, log = -1.4189385
    #   a = 0: densities 0.3989423 and 0.0539910 -> p̄ = 0.2264666, log = -1.4851577
    mu = torch.tensor([[[0.0], [0.0]], [[2.0], [2.0]]])  # (K=2, B=2, D=1)
    dist = torch.distributions.Independent(torch.distributions.Normal(mu, torch.ones_like(mu)), 1)
    member_logp = dist.log_prob(torch.tensor([[1.0], [0.0]]))  # (K, B)
    torch.testing.assert_close(mixture_log_prob(member_logp), torch.tensor([-1.4189385, -1.4851577]))
    # stable far in the tails, where the densities underflow: a = 60 under N(0,1), N(2,1) -> logsumexp, not log(0)
    far = dist.log_prob(torch.tensor([[60.0], [60.0]]))
    assert torch.isfinite(mixture_log_prob(far)).all()


def test_categorical_mixture_entropy():
    # H[(0.625, 0.375)] = 0.625*0.4700036 + 0.375*0.9808293 = 0.6615632 (the entropy of p̄, not a mean of entropies)
    torch.testing.assert_close(categorical_mixture_entropy(TWO_MEMBER_LOGITS), torch.tensor([0.6615632]))


def test_gaussian_mixture_entropy_exact_for_one_member_and_estimated_for_more():
    one = torch.zeros(1, 3, 1)
    # K = 1: exact ½ ln(2πe σ²) = 1.4189385 for σ = 1
    torch.testing.assert_close(gaussian_mixture_entropy(one, torch.ones_like(one)), torch.full((3,), 1.4189385))
    torch.manual_seed(0)
    b = 20000
    same = torch.zeros(2, b, 1)  # two identical members: the mixture is N(0, 1), H = 1.4189385
    est = gaussian_mixture_entropy(same, torch.ones_like(same)).mean()
    assert abs(est.item() - 1.4189385) < 0.03
    apart = torch.stack([torch.zeros(b, 1), torch.full((b, 1), 100.0)])  # disjoint members: H = 1.4189385 + ln 2
    est = gaussian_mixture_entropy(apart, torch.ones_like(apart)).mean()
    assert abs(est.item() - 2.1120857) < 0.03


def test_probability_diversity_hand_case():
    # state 0: p1 = (1, 0), p2 = (0.5, 0.5), p3 = (0.2, 0.8)
    #   p1·p2 = 0.5, p1·p3 = 0.2, p2·p3 = 0.1 + 0.4 = 0.5 -> sum 1.2, times 2/(3·2) = 0.4
    # state 1: three members (0.5, 0.5): each pair 0.5 -> sum 1.5 / 3 = 0.5
    # mean over states: 0.45
    probs = torch.tensor([[[1.0, 0.0], [0.5, 0.5]],
                          [[0.5, 0.5], [0.5, 0.5]],
                          [[0.2, 0.8], [0.5, 0.5]]])  # (K=3, B=2, A=2)
    torch.testing.assert_close(probability_diversity(probs), torch.tensor(0.45))
    torch.testing.assert_close(probability_diversity(probs[:1]), torch.tensor(0.0))  # one member: no pairs


def test_gaussian_mean_diversity_hand_case_and_no_sigma_gradient():
    # means 0, 1, 3, σ = 1: κ = exp(-½ Δ²/2) for Δ² = 1, 9, 4 -> 0.7788008, 0.1053992, 0.3678794; mean 0.4173598
    mu = torch.tensor([0.0, 1.0, 3.0]).reshape(3, 1, 1).requires_grad_(True)
    sigma = torch.ones(3, 1, 1, requires_grad=True)
    d = gaussian_mean_diversity(mu, sigma)
    torch.testing.assert_close(d, torch.tensor(0.4173598))
    d.backward()
    assert sigma.grad is None
    # dD/dμ_0 = (1/3)[κ01·(μ1 - μ0)/2 + κ02·(μ2 - μ0)/2] = (0.7788008*0.5 + 0.1053992*1.5)/3 = 0.1824997
    torch.testing.assert_close(mu.grad[0, 0, 0], torch.tensor(0.1824997))


def _hand_batch():
    """Two members, two samples: new member probabilities of the taken actions, advantages (1, -1)."""
    member_logp_new = torch.log(torch.tensor([[0.5, 0.2], [0.7, 0.4]])).requires_grad_(True)  # (K=2, B=2)
    adv = torch.tensor([1.0, -1.0])
    return member_logp_new, adv


def test_eppo_policy_loss_on_policy_hand_case():
    member_logp_new, adv = _hand_batch()
    logp_old = torch.log(torch.tensor([0.5, 0.3]))  # log p̄_old
    # ensemble: p̄_new = (0.6, 0.3), r = (1.2, 1.0): objectives 1.2 (at the clip edge) and -1.0 -> L_ens = -0.1
    # member 1: r = (0.5/0.5, 0.2/0.3) = (1, 0.6667): 1.0 and min(-0.6667, -0.8) = -0.8
    # member 2: r = (1.4, 1.3333): min(1.4, 1.2) = 1.2 and min(-1.3333, -1.2) = -1.3333
    # L_sub = -(1.0 - 0.8 + 1.2 - 1.3333)/4 = -0.0166667;  loss = -0.1 + 0.5 * -0.0166667 = -0.1083333
    loss, info = eppo_policy_loss(member_logp_new, logp_old, adv, clip_ratio=0.2, center_coef=1.0, sub_coef=0.5)
    torch.testing.assert_close(info["ens_policy_loss"], torch.tensor(-0.1))
    torch.testing.assert_close(info["sub_policy_loss"], torch.tensor(-0.0166667))
    torch.testing.assert_close(loss, torch.tensor(-0.1083333))


def test_eppo_policy_loss_off_policy_truncated_hand_case():
    member_logp_new, adv = _hand_batch()
    member_logp_old = torch.log(torch.tensor([[0.5, 0.25], [0.5, 0.25]]))  # recomputed old p_k; p̄_old = (0.5, 0.25)
    logp_behaviour = torch.log(torch.tensor([0.25, 0.5]))  # q, what actually chose the actions
    # ρ = min(1, p̄_old/q) = (1, 0.5); ρ_k = min(1, p_k,old/q) = (1, 0.5) for both members
    # ensemble: r = p̄_new/p̄_old = (1.2, 1.2): 1.2·1 and min(-1.2, -1.2)·0.5 = -0.6 -> L_ens = -(1.2 - 0.6)/2 = -0.3
    # member 1: r = (1, 0.8): 1·1, -0.8·0.5 = -0.4;  member 2: r = (1.4, 1.6): 1.2·1, min(-1.6, -1.2)·0.5 = -0.8
    # L_sub = -(1 - 0.4 + 1.2 - 0.8)/4 = -0.25;  loss = -0.3 + 0.5 * -0.25 = -0.425
    loss, info = eppo_policy_loss(member_logp_new, logp_behaviour, adv, 0.2, 1.0, 0.5,
                                  member_logp_old=member_logp_old, clip_rho=1.0)
    torch.testing.assert_close(info["ens_policy_loss"], torch.tensor(-0.3))
    torch.testing.assert_close(info["sub_policy_loss"], torch.tensor(-0.25))
    torch.testing.assert_close(loss, torch.tensor(-0.425))


def test_eppo_off_policy_weights_the_ensemble_by_the_mixtures_ratio_and_each_member_by_its_own():
    member_logp_new, adv = _hand_batch()  # p̄_new = (0.6, 0.3)
    # members that disagree: old p_1 = (0.6, 0.1), p_2 = (0.2, 0.3), p̄_old = (0.4, 0.2); behaviour q = (0.5, 0.5)
    member_logp_old = torch.log(torch.tensor([[0.6, 0.1], [0.2, 0.3]]))
    logp_behaviour = torch.log(torch.tensor([0.5, 0.5]))
    # ρ = min(1, p̄_old/q) = (0.8, 0.4); ρ_1 = (min(1, 1.2), 0.2) = (1, 0.2); ρ_2 = (0.4, 0.6)
    # ensemble: r = (1.5, 1.5): min(1.5, 1.2)·0.8 = 0.96, -1.5·0.4 = -0.6 -> L_ens = -(0.96 - 0.6)/2 = -0.18
    # member 1: r = (0.8333, 2): 0.8333·1, min(-2, -1.2)·0.2 = -0.4; member 2: r = (3.5, 1.3333): 1.2·0.4 = 0.48,
    # -1.3333·0.6 = -0.8. L_sub = -(0.8333 - 0.4 + 0.48 - 0.8)/4 = -0.0283333; loss = -0.18 + 0.5·L_sub = -0.1941667
    loss, info = eppo_policy_loss(member_logp_new, logp_behaviour, adv, 0.2, 1.0, 0.5,
                                  member_logp_old=member_logp_old, clip_rho=1.0)
    torch.testing.assert_close(info["ens_policy_loss"], torch.tensor(-0.18))
    torch.testing.assert_close(info["sub_policy_loss"], torch.tensor(-0.0283333))
    torch.testing.assert_close(loss, torch.tensor(-0.1941667))


def test_eppo_full_loss_combines_the_terms():
    member_logp_new, adv = _hand_batch()
    logp_old = torch.log(torch.tensor([0.5, 0.3]))
    # -0.1083333 + 0.5·2.0 - 0.01·0.5 + 0.01·0.4 = 0.8906667
    loss, info = eppo_loss(member_logp_new, logp_old, adv, torch.tensor(2.0), torch.tensor(0.5), torch.tensor(0.4),
                           EPPOCoef(center=1.0, sub=0.5, value=0.5, entropy=0.01, diverse=0.01), clip_ratio=0.2)
    torch.testing.assert_close(loss, torch.tensor(0.8906667))
    torch.testing.assert_close(info["policy_loss"], torch.tensor(-0.1083333))
    assert not info["total_loss"].requires_grad


@pytest.mark.parametrize("dual_clip", [None, 3.0])
def test_one_member_without_sub_and_diversity_is_ppo(dual_clip):
    torch.manual_seed(0)
    logits = torch.randn(1, 32, 3, requires_grad=True)  # K = 1
    action = torch.randint(0, 3, (32,))
    logp_old = torch.log_softmax(torch.randn(32, 3), -1).gather(-1, action[:, None]).squeeze(-1)
    adv, value_loss = torch.randn(32), torch.tensor(0.7)
    member_logp = torch.distributions.Categorical(logits=logits).log_prob(action)  # (1, 32)
    entropy = categorical_mixture_entropy(logits).mean()
    diversity = probability_diversity(torch.softmax(logits, -1))
    loss, _ = eppo_loss(member_logp, logp_old, adv, value_loss, entropy, diversity,
                        EPPOCoef(center=1.0, sub=0.0, value=0.5, entropy=0.01, diverse=0.0), 0.2, dual_clip)
    dist = torch.distributions.Categorical(logits=logits[0])
    ppo, _ = ppo_policy_loss(dist.log_prob(action), logp_old, adv, 0.2, dual_clip)
    ppo_total = ppo + 0.5 * value_loss - 0.01 * dist.entropy().mean()
    torch.testing.assert_close(loss, ppo_total, atol=1e-6, rtol=0)


@pytest.mark.parametrize("term", ["center", "sub", "diverse", "entropy"])
def test_each_term_reaches_every_member(term):
    torch.manual_seed(1)
    k = 4
    logits = torch.randn(k, 16, 3, requires_grad=True)
    action = torch.randint(0, 3, (16,))
    member_logp = torch.distributions.Categorical(logits=logits).log_prob(action)
    logp_old = mixture_log_prob(member_logp).detach() + 0.05 * torch.randn(16)
    coef = EPPOCoef(**{name: float(name == term) for name in EPPOCoef._fields})
    loss, _ = eppo_loss(member_logp, logp_old, torch.randn(16), torch.tensor(0.0),
                        categorical_mixture_entropy(logits).mean(), probability_diversity(torch.softmax(logits, -1)),
                        coef, 0.2)
    loss.backward()
    per_member = logits.grad.abs().sum(dim=(1, 2))
    assert (per_member > 0).all(), f"{term}: members without gradient: {per_member}"
