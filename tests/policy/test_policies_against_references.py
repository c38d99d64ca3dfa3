"""ACER, PPO, PPO-DAPG and EPPO policies against NumPy references written from the papers' equations
(tests/maths_references.py): the actor's and critic's gradients of one ACER update with the trust region binding, in
both coordinates, on sequences that end by a terminal, by a truncation and in mid-episode; PPO's GAE samples with
terminations and truncations and its logged losses; PPO-DAPG's demo term over decaying updates; EPPO's loss terms."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from maths_references import clip_objective, gae_reference, project_reference, retrace_reference, softmax

from ding_lite.build import build, fill_model_shapes
from ding_lite.config import compile_config
from ding_lite.data.demo import episodes_to_dataset
from ding_lite.data.demo_file import read_demos, write_demo
from ding_lite.data.keys import (
    ACTION,
    ADV,
    LOGIT,
    LOGP,
    MASK,
    NEXT_OBS,
    OBS,
    OBS_PLUS_1,
    RETURN,
    REWARD,
    TERMINATED,
    TRUNCATED,
    VALUE,
)
from ding_lite.policy.ppo import action_distribution

pytestmark = pytest.mark.unittest

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)


def _policy(policy: dict, n_actions: int = 2, fields=("learn", "collect")):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=policy))
    fill_model_shapes(cfg, OBS_SPACE, gym.spaces.Discrete(n_actions))
    return build(cfg, "policy", enable_field=list(fields))


def _acer_batch(seed: int, length: int = 5) -> dict:
    """Three sequences: terminated at step 1, truncated after 3 steps (bootstrap from V of the 4th obs), full."""
    rng = np.random.default_rng(seed)
    n_real = np.array([2, 3, length])
    term = np.zeros((3, length), bool)
    term[0, 1] = True
    batch = {OBS_PLUS_1: rng.normal(size=(3, length + 1, 4)).astype(np.float32),
             ACTION: rng.integers(0, 3, size=(3, length)),
             LOGIT: (2 * rng.normal(size=(3, length, 3))).astype(np.float32),
             REWARD: rng.normal(size=(3, length)).astype(np.float32), TERMINATED: term,
             MASK: np.arange(length)[None] < n_real[:, None]}
    for i, n in enumerate(n_real):
        batch[OBS_PLUS_1][i, n + 1:] = 0
        for key in (ACTION, LOGIT, REWARD, TERMINATED):
            batch[key][i, n:] = 0
    return batch


@pytest.mark.parametrize("statistics", ["logit", "probability"])
@pytest.mark.parametrize("seed", [0, 2])
def test_acer_update_matches_the_paper_with_the_trust_region_binding(statistics, seed):
    c, gamma, delta, entropy_weight = 1.0, 0.9, 0.05, 0.01
    torch.manual_seed(seed)
    policy = _policy(dict(type="acer", learn=dict(batch_size=3, c_clip_ratio=c, trust_region_value=delta,
                                                  entropy_weight=entropy_weight, trust_region_statistics=statistics),
                          discount_factor=gamma, collect=dict(unroll_len=5)), n_actions=3, fields=("learn",))
    with torch.no_grad():  # an average policy away from the current one: the constraint binds on some samples
        for p in policy._avg_actor.parameters():
            p.add_(0.5 * torch.randn_like(p))
    batch = _acer_batch(seed)
    actor, critic, run = policy._model.actor, policy._model.critic, policy._apply
    obs = torch.tensor(batch[OBS_PLUS_1]).transpose(0, 1)
    with torch.no_grad():
        pi, q_all = softmax(run(actor, obs).double().numpy()), run(critic, obs).double().numpy()
        pi_avg = softmax(run(policy._avg_actor, obs).double().numpy())
    v = (pi * q_all).sum(-1)
    action, mask = batch[ACTION].T, batch[MASK].T.astype(float)
    rho = pi[:-1] / softmax(batch[LOGIT].transpose(1, 0, 2).astype(np.float64))
    q_ret = retrace_reference(np.take_along_axis(q_all[:-1], action[..., None], -1)[..., 0], v,
                              np.take_along_axis(rho, action[..., None], -1)[..., 0], batch[REWARD].T,
                              batch[TERMINATED].T, mask, gamma)
    z_logit = np.zeros_like(rho)  # per sample, the projected step as a gradient in the logits
    active = 0
    for t, b in zip(*np.nonzero(mask), strict=True):
        p, a, adv = pi[t, b], action[t, b], q_all[t, b] - v[t, b]
        trunc, corr = min(c, rho[t, b, a]) * (q_ret[t, b] - v[t, b]), np.maximum(0.0, 1 - c / rho[t, b])
        if statistics == "logit":  # ∇_ℓ log π(a) = e_a − π, ∇_ℓ H = −π(log π + H), k = π − π_avg
            u = corr * p * adv
            g = trunc * (np.eye(3)[a] - p) + u - p * u.sum() - entropy_weight * p * (np.log(p) - p @ np.log(p))
            z_logit[t, b] = project_reference(g, p - pi_avg[t, b], delta)
            active += (p - pi_avg[t, b]) @ g > delta
        else:  # ∇_π log π(a) = e_a / π(a), ∇_π H = −(log π + 1), k = −π_avg / π; z back through the softmax
            g = trunc * np.eye(3)[a] / p[a] + corr * adv - entropy_weight * (np.log(p) + 1)
            z = project_reference(g, -pi_avg[t, b] / p, delta)
            z_logit[t, b] = p * z - p * (p @ z)
            active += -pi_avg[t, b] / p @ g > delta
    assert 0 < active < mask.sum()  # some samples projected, some not
    actor.zero_grad()
    (-(torch.tensor(z_logit, dtype=torch.float32) * run(actor, obs[:-1])).sum() / mask.sum()).backward()
    want_actor = [p.grad.clone() for p in actor.parameters()]
    critic.zero_grad()
    q_taken = run(critic, obs[:-1]).gather(-1, torch.tensor(action)[..., None])[..., 0]
    critic_loss = (0.5 * (torch.tensor(q_ret).float() - q_taken) ** 2 * torch.tensor(mask).float()).sum() / mask.sum()
    critic_loss.backward()
    want_critic = [p.grad.clone() for p in critic.parameters()]
    policy._optimizer_actor.step = policy._optimizer_critic.step = lambda: None  # keep the update's gradients
    log = policy.learn_mode.forward(batch)
    for got, want in zip([*actor.parameters(), *critic.parameters()], want_actor + want_critic, strict=True):
        torch.testing.assert_close(got.grad, want, rtol=1e-4, atol=1e-6)
    assert float(log["critic_loss"]) == pytest.approx(critic_loss.item(), rel=1e-5)
    assert float(log["trust_region_active"]) == pytest.approx(active / mask.sum())


def _rollout(policy, rng, steps=10, n_env=3):
    """A (T, N) rollout with terminations and truncations; within an episode the next row's obs is the next obs."""
    obs, next_obs = rng.normal(size=(2, steps, n_env, 4)).astype(np.float32)
    u = rng.random((steps, n_env))
    term, trunc = u < 0.15, (u >= 0.15) & (u < 0.3)
    for t in range(steps - 1):
        going_on = ~(term[t] | trunc[t])
        obs[t + 1][going_on] = next_obs[t][going_on]
    with torch.no_grad():
        out = policy._model.compute_actor_critic(torch.tensor(obs.reshape(-1, 4)))
        action = action_distribution(out).sample()
        logp = action_distribution(out).log_prob(action).numpy() + 0.2 * rng.normal(size=steps * n_env)
        next_value = policy._model.compute_critic(torch.tensor(next_obs.reshape(-1, 4)))[VALUE].numpy()
    return {OBS: obs, NEXT_OBS: next_obs, REWARD: rng.normal(size=(steps, n_env)).astype(np.float32),
            TERMINATED: term, TRUNCATED: trunc, ACTION: action.numpy().reshape(steps, n_env),
            LOGP: logp.astype(np.float32).reshape(steps, n_env), VALUE: out[VALUE].numpy().reshape(steps, n_env)
            }, next_value.reshape(steps, n_env)


@pytest.mark.parametrize("numpy_mlp", [True, False])
@pytest.mark.parametrize("ignore_done, value_clip, dual_clip", [(False, None, None), (True, 0.2, 2.0),
                                                                 (False, 0.2, 2.0)])
def test_ppo_samples_and_losses_match_the_papers(numpy_mlp, ignore_done, value_clip, dual_clip):
    gamma, lam, eps, entropy_weight = 0.9, 0.8, 0.2, 0.01
    torch.manual_seed(0)
    policy = _policy(dict(type="ppo", numpy_mlp=numpy_mlp, collect=dict(discount_factor=gamma, gae_lambda=lam),
                          learn=dict(ignore_done=ignore_done, epoch_per_collect=1, batch_size=1000,
                                     value_clip_ratio=value_clip, dual_clip=dual_clip,
                                     entropy_weight=entropy_weight)))
    rollout, next_value = _rollout(policy, np.random.default_rng(0))
    term, trunc = rollout[TERMINATED], rollout[TRUNCATED]
    if ignore_done:  # a termination bootstraps as a truncation does
        term, trunc = np.zeros_like(term), term | trunc
    adv = gae_reference(rollout[REWARD], rollout[VALUE], next_value, term, trunc, gamma, lam)
    sample = policy.collect_mode.get_train_sample(rollout)
    np.testing.assert_allclose(sample[ADV], adv.reshape(-1), atol=1e-5)
    np.testing.assert_allclose(sample[RETURN], (adv + rollout[VALUE]).reshape(-1), atol=1e-5)
    with torch.no_grad():  # one minibatch of the whole collect: the loss before the step
        out = policy._model.compute_actor_critic(torch.tensor(sample[OBS]))
        dist = action_distribution(out)
        ratio = np.exp(dist.log_prob(torch.tensor(sample[ACTION])).double().numpy() - sample[LOGP])
        entropy, value = dist.entropy().double().mean().item(), out[VALUE].double().numpy()
    a = (sample[ADV] - sample[ADV].mean()) / (sample[ADV].std(ddof=1) + 1e-8)
    policy_loss = -np.mean([clip_objective(r, x, eps, dual_clip) for r, x in zip(ratio, a, strict=True)])
    ret, old = sample[RETURN], sample[VALUE]
    clipped = old + np.clip(value - old, -value_clip, value_clip) if value_clip else value
    value_loss = 0.5 * np.mean(np.maximum((value - ret) ** 2, (clipped - ret) ** 2))
    log = policy.learn_mode.forward(sample)[0]
    assert float(log["policy_loss"]) == pytest.approx(policy_loss, abs=1e-6)
    assert float(log["value_loss"]) == pytest.approx(value_loss, abs=1e-5)
    assert float(log["total_loss"]) == pytest.approx(policy_loss + 0.5 * value_loss - entropy_weight * entropy,
                                                     abs=1e-5)


def _synthetic_batch(policy, adv):
    obs = np.random.default_rng(1).normal(size=(len(adv), 4)).astype(np.float32)
    with torch.no_grad():
        out = policy._model.compute_actor_critic(torch.tensor(obs))
        action = action_distribution(out).sample()
        logp = action_distribution(out).log_prob(action)
    value = out[VALUE].numpy()
    return {OBS: obs, ACTION: action.numpy(), LOGP: logp.numpy(), VALUE: value, ADV: adv.astype(np.float32),
            RETURN: value + adv.astype(np.float32)}


@pytest.mark.parametrize("log_likelihood", [False, True])
@pytest.mark.parametrize("adv_scale", ["gsl", "raw"])
def test_dapg_demo_term_is_lambda0_lambda1_power_k_max_adv(tmp_path, log_likelihood, adv_scale):
    rng = np.random.default_rng(7)
    episode = {"obs": rng.normal(size=(20, 4)).astype(np.float32), "action": rng.integers(0, 2, 20),
               "reward": np.ones(20, dtype=np.float32)}
    path = str(write_demo(tmp_path / "demo.npz", episodes_to_dataset([episode], [20.0], {})))
    demos = read_demos([path])
    lambda0, lambda1 = 0.3, 0.8
    torch.manual_seed(0)
    policy = _policy(dict(type="ppo_dapg", numpy_mlp=False, learn=dict(
        demo_path=path, demo_decay=True, demo_lambda0=lambda0, demo_lambda1=lambda1, demo_adv_scale=adv_scale,
        demo_log_likelihood=log_likelihood, demo_freq=1, demo_batch_size=6, batch_size=32, epoch_per_collect=1)))
    drawn = []
    sampler = policy._dapg.sampler
    draw = type(sampler).__next__
    sampler.__class__ = type("Spy", (type(sampler),), {"__next__": lambda self: drawn.append(draw(self)) or drawn[-1]})
    for k in range(3):
        batch = _synthetic_batch(policy, 2 * rng.normal(size=32) + 0.3)
        with torch.no_grad():  # the demo likelihoods before the step
            logp_demo = action_distribution(policy._model.compute_actor(torch.tensor(demos.obs))).log_prob(
                torch.tensor(demos.action)).double().numpy()
            out = policy._model.compute_actor_critic(torch.tensor(batch[OBS]))
            ratio = np.exp(action_distribution(out).log_prob(torch.tensor(batch[ACTION])).double().numpy()
                           - batch[LOGP])
            value = out[VALUE].double().numpy()
        log = policy.learn_mode.forward(batch)[0]
        adv = batch[ADV].astype(np.float64)
        normalised = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
        weight = lambda0 * lambda1 ** k * max((normalised if adv_scale == "gsl" else adv).max(), 0.0)
        term = logp_demo[drawn[-1].numpy()]
        demo_loss = -weight * (term.mean() if log_likelihood else np.exp(term).mean())
        ppo = -np.mean([clip_objective(r, x, 0.2) for r, x in zip(ratio, normalised, strict=True)])
        ppo += 0.5 * 0.5 * np.mean((value - batch[RETURN]) ** 2)
        assert float(log["demo_weight"]) == pytest.approx(weight, rel=1e-5)
        assert float(log["demo_loss"]) == pytest.approx(demo_loss, rel=1e-5, abs=1e-7)
        assert float(log["total_loss"]) == pytest.approx(ppo + demo_loss, abs=1e-5)


def test_eppo_loss_terms_match_the_mixture_and_member_equations():
    torch.manual_seed(0)
    policy = _policy(dict(type="ensemble_ppo", model=dict(type="ensemble_vac", ensemble_size=3),
                          learn=dict(epoch_per_collect=1, batch_size=1000, value_clip_ratio=0.2)))
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(40, 4)).astype(np.float32)
    with torch.no_grad():
        out = policy._model.compute_actor_critic(torch.tensor(obs))
    prob, value = softmax(out[LOGIT].double().numpy()), out[VALUE].double().numpy()
    action = rng.integers(0, 2, 40)
    p_k = prob[:, np.arange(40), action]  # (K, B)
    logp_old = np.log(p_k.mean(0)) + 0.1 * rng.normal(size=40)
    adv = rng.normal(size=40)
    batch = {OBS: obs, ACTION: action, LOGP: logp_old.astype(np.float32), VALUE: (value + 0.3).astype(np.float32),
             ADV: adv.astype(np.float32), RETURN: (value + adv).astype(np.float32)}
    log = policy.learn_mode.forward(batch)[0]
    a = (batch[ADV] - batch[ADV].mean()) / (batch[ADV].std(ddof=1) + 1e-8)
    old = np.exp(batch[LOGP].astype(np.float64))
    ens = -np.mean([clip_objective(p_k.mean(0)[b] / old[b], a[b], 0.2) for b in range(40)])
    sub = np.mean([-np.mean([clip_objective(p_k[m, b] / old[b], a[b], 0.2) for b in range(40)]) for m in range(3)])
    p_bar = prob.mean(0)
    entropy = -(p_bar * np.log(p_bar)).sum(-1).mean()
    diversity = np.mean([prob[i] * prob[j] for i, j in ((0, 1), (0, 2), (1, 2))], 0).sum(-1).mean()
    ret, v_old = batch[RETURN], batch[VALUE]
    value_loss = 0.5 * np.mean(np.maximum((value - ret) ** 2, (v_old + np.clip(value - v_old, -0.2, 0.2) - ret) ** 2))
    want = dict(ens_policy_loss=ens, sub_policy_loss=sub, entropy=entropy, diversity=diversity, value_loss=value_loss,
                total_loss=ens + 0.5 * sub + 0.5 * value_loss - 0.01 * entropy + 0.01 * diversity)
    for key, expected in want.items():
        assert float(log[key]) == pytest.approx(expected, abs=1e-5), key
