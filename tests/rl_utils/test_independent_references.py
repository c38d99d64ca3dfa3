"""ACER, GAE, PPO and EPPO maths against small NumPy references written from the papers' equations (not from the
code), on random inputs over several seeds: Retrace per sequence as in ACER's Algorithm 2 (terminal, truncated,
padded and full sequences in one batch), the policy gradient, entropy and KL gradients by finite differences, the
trust-region projection by bisection on its multiplier, GAE as an explicit discounted sum within each episode, the
clipped surrogate sample by sample, and the ensemble's mixture, entropy, diversity and per-member losses."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from maths_references import (
    clip_objective,
    fd,
    gae_reference,
    normal_density,
    project_reference,
    retrace_reference,
    softmax,
)

from ding_lite.rl_utils import acer, eppo
from ding_lite.rl_utils.gae import gae
from ding_lite.rl_utils.ppo import normalize_advantage_per_minibatch, ppo_policy_loss, ppo_value_loss

pytestmark = pytest.mark.unittest

SEEDS = [0, 1, 2, 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_retrace_matches_algorithm_2_per_sequence(seed):
    rng = np.random.default_rng(seed)
    steps, n_seq = 6, 5
    q, r = rng.normal(size=(steps, n_seq)), rng.normal(size=(steps, n_seq))
    v, rho = rng.normal(size=(steps + 1, n_seq)), rng.exponential(1.0, size=(steps, n_seq))
    term, mask = np.zeros((steps, n_seq)), np.ones((steps, n_seq))
    term[2, 1], mask[3:, 1] = 1, 0  # terminated at step 2, then padding
    mask[4:, 2] = 0  # truncated after 4 steps: bootstraps from V(s_4)
    term[steps - 1, 3] = 1  # terminated on the last step
    mask[1:, 4] = 0  # one real step, truncated; column 0 is a full sequence cut in mid-episode
    gamma = [0.9, 0.5, 0.99, 0.0][seed]
    got = acer.retrace_q_target(*(torch.tensor(x) for x in (q, v, rho, r, term, mask)), gamma).numpy()
    np.testing.assert_allclose(got * mask, retrace_reference(q, v, rho, r, term, mask, gamma) * mask, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("c", [10.0, 1.0, 0.7])
def test_policy_gradients_are_the_finite_differences_of_eq_9(seed, c):
    """ĝ = min(c, ρ(a_t))(Q^ret − V)∇log π(a_t) + Σ_a [1 − c/ρ(a)]₊ π(a)(Q(a) − V)∇log π(a), coefficients constant,
    in the logits and in the probabilities."""
    rng = np.random.default_rng(seed)
    n, n_act = 8, 3
    logit = 2 * rng.normal(size=(n, n_act))
    pi = softmax(logit)
    rho = pi / softmax(2 * rng.normal(size=(n, n_act)))
    q = rng.normal(size=(n, n_act))
    v, q_ret, action = (pi * q).sum(-1), rng.normal(size=n), rng.integers(0, n_act, n)
    args = [torch.tensor(x) for x in (pi, q, v, q_ret, rho, action)]
    terms = acer.acer_policy_gradient(*args, c)
    g_prob = acer.acer_policy_gradient_prob(*args, c).numpy()
    for i in range(n):
        a = action[i]
        trunc = min(c, rho[i, a]) * (q_ret[i] - v[i])
        corr = np.maximum(0.0, 1.0 - c / rho[i]) * pi[i] * (q[i] - v[i])
        np.testing.assert_allclose(terms.truncated[i].numpy(), trunc * fd(lambda lg, a=a: np.log(softmax(lg))[a],
                                                                          logit[i]), atol=1e-7)
        np.testing.assert_allclose(terms.bias_correction[i].numpy(),
                                   fd(lambda lg, corr=corr: corr @ np.log(softmax(lg)), logit[i]), atol=1e-7)
        want = fd(lambda p, a=a, trunc=trunc, corr=corr: trunc * np.log(p[a]) + corr @ np.log(p), pi[i], 1e-9)
        np.testing.assert_allclose(g_prob[i], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_entropy_kl_and_chain_rule_gradients_are_finite_differences(seed):
    rng = np.random.default_rng(seed)
    logit, avg = rng.normal(size=(6, 4)), softmax(rng.normal(size=(6, 4)))
    pi = softmax(logit)
    t_pi, t_avg = torch.tensor(pi), torch.tensor(avg)
    for i in range(6):
        def kl_of_prob(p, i=i):
            return avg[i] @ (np.log(avg[i]) - np.log(p))

        def entropy_of_prob(p):
            return -(p * np.log(p)).sum()

        np.testing.assert_allclose(acer.entropy_gradient(t_pi)[i].numpy(),
                                   fd(lambda lg: entropy_of_prob(softmax(lg)), logit[i]), atol=1e-8)
        np.testing.assert_allclose(acer.categorical_kl_gradient(t_avg, t_pi)[i].numpy(),
                                   fd(lambda lg: kl_of_prob(softmax(lg)), logit[i]), atol=1e-8)
        np.testing.assert_allclose(acer.entropy_gradient_prob(t_pi)[i].numpy(), fd(entropy_of_prob, pi[i], 1e-9),
                                   atol=1e-6)
        np.testing.assert_allclose(acer.categorical_kl_gradient_prob(t_avg, t_pi)[i].numpy(),
                                   fd(kl_of_prob, pi[i], 1e-9), rtol=1e-5)
        z = rng.normal(size=4)
        np.testing.assert_allclose(acer.prob_to_logit_gradient(torch.tensor(z), t_pi[i]).numpy(),
                                   fd(lambda lg, z=z: z @ softmax(lg), logit[i]), atol=1e-8)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delta", [0.01, 0.5, 1.0])
def test_trust_region_projection_solves_the_constrained_problem(seed, delta):
    rng = np.random.default_rng(seed)
    g, k = 3 * rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    z, active = acer.trust_region_projection(torch.tensor(g), torch.tensor(k), delta)
    np.testing.assert_allclose(z.numpy(), np.stack([project_reference(g[i], k[i], delta) for i in range(20)]),
                               atol=1e-10)
    np.testing.assert_array_equal(active.numpy(), (k * g).sum(-1) > delta)


@pytest.mark.parametrize("seed", SEEDS)
def test_gae_is_the_discounted_sum_of_td_errors_within_each_episode(seed):
    rng = np.random.default_rng(seed)
    r, v, next_v = (rng.normal(size=(12, 4)) for _ in range(3))
    u = rng.random((12, 4))
    term, trunc = u < 0.15, (u >= 0.15) & (u < 0.3)
    gamma, lam = [(0.99, 0.95), (0.5, 0.5), (0.9, 1.0), (0.8, 0.0)][seed]
    adv, ret = gae(r, v, next_v, term, trunc, gamma, lam)
    want = gae_reference(r, v, next_v, term, trunc, gamma, lam)
    np.testing.assert_allclose(adv, want, atol=1e-5)
    np.testing.assert_allclose(ret, want + v, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("eps, dual_clip, value_clip", [(0.2, None, None), (0.1, 3.0, 0.2), (0.3, 1.5, 0.5)])
def test_ppo_losses_sample_by_sample(seed, eps, dual_clip, value_clip):
    rng = np.random.default_rng(seed)
    logp_old = rng.normal(size=64) - 1
    logp_new, adv = logp_old + 0.3 * rng.normal(size=64), rng.normal(size=64)
    loss, info = ppo_policy_loss(torch.tensor(logp_new), torch.tensor(logp_old), torch.tensor(adv), eps, dual_clip)
    ratio = np.exp(logp_new - logp_old)
    want = [clip_objective(x, a, eps, dual_clip) for x, a in zip(ratio, adv, strict=True)]
    assert float(loss) == pytest.approx(-np.mean(want))
    assert float(info["clipfrac"]) == pytest.approx(np.mean(np.abs(ratio - 1) > eps))
    value, old, target = rng.normal(size=64), rng.normal(size=64), rng.normal(size=64)
    clipped = old + np.clip(value - old, -value_clip, value_clip) if value_clip else value
    want = 0.5 * np.mean(np.maximum((value - target) ** 2, (clipped - target) ** 2))
    got = ppo_value_loss(torch.tensor(value), torch.tensor(old), torch.tensor(target), value_clip)
    assert float(got) == pytest.approx(want)


def test_advantages_are_normalised_per_minibatch_with_the_unbiased_std():
    x = np.random.default_rng(0).normal(size=50) * 3 + 1
    want = np.concatenate([(s - s.mean()) / (s.std(ddof=1) + 1e-8) for s in np.split(x, [16, 32, 48])])
    np.testing.assert_allclose(normalize_advantage_per_minibatch(torch.tensor(x), 16).numpy(), want, atol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_ensemble_mixture_entropy_diversity_and_losses(k):
    rng = np.random.default_rng(k)
    n, n_act = 7, 4
    prob = softmax(2 * rng.normal(size=(k, n, n_act)))
    p_bar = prob.mean(0)
    action, rows = rng.integers(0, n_act, n), np.arange(n)
    member_logp = np.log(prob[:, rows, action])
    np.testing.assert_allclose(eppo.mixture_log_prob(torch.tensor(member_logp)).numpy(), np.log(p_bar[rows, action]))
    np.testing.assert_allclose(eppo.categorical_mixture_entropy(torch.tensor(np.log(prob))).numpy(),
                               -(p_bar * np.log(p_bar)).sum(-1))
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    diversity = np.mean([np.mean([prob[i, b] @ prob[j, b] for i, j in pairs]) for b in rows]) if pairs else 0.0
    assert float(eppo.probability_diversity(torch.tensor(prob))) == pytest.approx(diversity)
    mu, sigma = rng.normal(size=(k, n, 2)), np.exp(0.3 * rng.normal(size=(k, n, 2)))
    overlap = [np.mean([np.exp(-0.5 * ((mu[i, b] - mu[j, b]) ** 2 / (sigma[i, b] ** 2 + sigma[j, b] ** 2)).sum())
                        for i, j in pairs]) for b in rows] if pairs else [0.0]
    assert float(eppo.gaussian_mean_diversity(torch.tensor(mu), torch.tensor(sigma))) == pytest.approx(np.mean(overlap))
    # the policy losses: on-policy (ratios over the mixture's old probability) and off-policy (each over its own)
    logp_new = member_logp + 0.2 * rng.normal(size=(k, n))
    logp_old, adv = np.log(p_bar[rows, action]) + 0.1 * rng.normal(size=n), rng.normal(size=n)
    ens_new = np.log(np.exp(logp_new).mean(0))
    _, info = eppo.eppo_policy_loss(torch.tensor(logp_new), torch.tensor(logp_old), torch.tensor(adv), 0.2, 1.0, 0.5)
    assert float(info["ens_policy_loss"]) == pytest.approx(
        -np.mean([clip_objective(np.exp(ens_new[b] - logp_old[b]), adv[b], 0.2) for b in rows]))
    assert float(info["sub_policy_loss"]) == pytest.approx(np.mean(
        [-np.mean([clip_objective(np.exp(logp_new[m, b] - logp_old[b]), adv[b], 0.2) for b in rows])
         for m in range(k)]))
    logp_q, member_old = logp_old + 0.3 * rng.normal(size=n), logp_new - 0.15 * rng.normal(size=(k, n))
    ens_old = np.log(np.exp(member_old).mean(0))
    _, info = eppo.eppo_policy_loss(torch.tensor(logp_new), torch.tensor(logp_q), torch.tensor(adv), 0.2, 1.0, 0.5,
                                    member_logp_old=torch.tensor(member_old), clip_rho=1.0)
    assert float(info["ens_policy_loss"]) == pytest.approx(-np.mean(
        [min(1.0, np.exp(ens_old[b] - logp_q[b])) * clip_objective(np.exp(ens_new[b] - ens_old[b]), adv[b], 0.2)
         for b in rows]))
    assert float(info["sub_policy_loss"]) == pytest.approx(np.mean([-np.mean(
        [min(1.0, np.exp(member_old[m, b] - logp_q[b])) * clip_objective(np.exp(logp_new[m, b] - member_old[m, b]),
                                                                          adv[b], 0.2) for b in rows])
        for m in range(k)]))


@pytest.mark.parametrize("k", [2, 3])
def test_gaussian_mixture_entropy_estimate_is_minus_mean_log_density_of_one_draw_per_member(k):
    rng = np.random.default_rng(k)
    mu, sigma = rng.normal(size=(k, 5, 2)), np.exp(0.3 * rng.normal(size=(k, 5, 2)))
    torch.manual_seed(0)
    got = eppo.gaussian_mixture_entropy(torch.tensor(mu), torch.tensor(sigma)).numpy()
    torch.manual_seed(0)
    draw = mu + sigma * torch.randn(k, 5, 2, dtype=torch.float64).numpy()
    want = -np.mean([[np.log(np.mean([normal_density(draw[m, b], mu[j, b], sigma[j, b]) for j in range(k)]))
                      for b in range(5)] for m in range(k)], axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_gaussian_mixture_entropy_estimate_is_unbiased():
    """1-D mixture of three Gaussians: the mean of 20,000 estimates against the entropy by quadrature, 1.4873."""
    mu = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)[:, None, None].expand(3, 20000, 1)
    sigma = torch.tensor([0.5, 1.0, 0.3], dtype=torch.float64)[:, None, None].expand(3, 20000, 1)
    torch.manual_seed(0)
    estimate = eppo.gaussian_mixture_entropy(mu, sigma).numpy()
    x = np.linspace(-8.0, 8.0, 200001)
    density = np.mean([normal_density(x[:, None], mu[m, 0].numpy(), sigma[m, 0].numpy()) for m in range(3)], 0)
    exact = -np.trapezoid(density * np.log(density + 1e-300), x)
    assert exact == pytest.approx(1.4873, abs=1e-4)
    assert abs(estimate.mean() - exact) < 4 * estimate.std() / np.sqrt(len(estimate))
