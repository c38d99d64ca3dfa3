"""ACER policy: collected sequences, masks, the average policy network, and config errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, LOGIT, MASK, OBS_PLUS_1, REWARD, TERMINATED
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

L = 5  # unroll_len of these tests


def _cfg(**learn):
    cfg = compile_config(dict(
        env=dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1),
        policy=dict(type="acer", model=dict(obs_shape=4, action_shape=2, action_space="discrete",
                                            encoder_hidden_size_list=[16]),
                    learn=dict(batch_size=4, **learn), collect=dict(unroll_len=L))))
    return cfg


def _batch(seed: int = 0) -> dict:
    """Two sequences: the first terminates at step 1 (steps 2.. are padding), the second has L real steps."""
    rng = np.random.default_rng(seed)
    mask = np.ones((2, L), bool)
    mask[0, 2:] = False
    terminated = np.zeros((2, L), bool)
    terminated[0, 1] = True
    batch = {
        OBS_PLUS_1: rng.normal(size=(2, L + 1, 4)).astype(np.float32),
        ACTION: rng.integers(0, 2, size=(2, L)),
        LOGIT: rng.normal(size=(2, L, 2)).astype(np.float32),
        REWARD: np.ones((2, L), np.float32),
        TERMINATED: terminated,
        MASK: mask,
    }
    batch[OBS_PLUS_1][0, 3:] = 0.0  # padding as the cutter writes it: zeros after the bootstrap obs (row 2)
    for k in (ACTION, LOGIT, REWARD, TERMINATED):
        batch[k][0, 2:] = 0
    return batch


def test_collect_stores_behaviour_logits_in_sequences_of_unroll_len():
    torch.manual_seed(0)
    cfg = _cfg()
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    try:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        samples, _ = collector.collect(n_sample=40)  # 20 steps of 2 envs: CartPole episodes end, sequences close
        k = len(samples[MASK])
        assert k >= 2
        assert samples[OBS_PLUS_1].shape == (k, L + 1, 4) and samples[LOGIT].shape == (k, L, 2)
        assert samples[ACTION].shape == samples[REWARD].shape == samples[TERMINATED].shape == (k, L)
        # the stored logits are the actor's full output at each real step's observation
        real = samples[MASK]
        with torch.no_grad():
            logit = policy._model.compute_actor(torch.from_numpy(samples[OBS_PLUS_1][:, :L][real]))[LOGIT]
        np.testing.assert_allclose(samples[LOGIT][real], logit.numpy(), rtol=1e-5, atol=1e-6)
        # a sequence never goes on after its episode's end: nothing real follows a terminal step
        after_terminal = np.cumsum(samples[TERMINATED], axis=1) - samples[TERMINATED] > 0
        assert not (after_terminal & real).any()
        # the buffer keeps one sequence per sample
        buffer = build(cfg, "policy.other.replay_buffer", seed=0)
        buffer.push(samples)
        assert len(buffer) == k
        assert buffer.sample(3)[LOGIT].shape == (3, L, 2)
    finally:
        collector_env.close()
        evaluator_env.close()


def test_steps_after_a_terminal_carry_no_loss():
    torch.manual_seed(0)
    policy = build(_cfg(), "policy", enable_field=["learn"])
    twin = copy.deepcopy(policy)
    clean = _batch()
    noisy = copy.deepcopy(clean)  # same real steps, garbage on every padding entry of sequence 0
    rng = np.random.default_rng(1)
    noisy[OBS_PLUS_1][0, 3:] = rng.normal(size=(L - 2, 4)) * 10
    noisy[LOGIT][0, 2:] = rng.normal(size=(L - 2, 2)) * 10
    noisy[ACTION][0, 2:] = 1
    noisy[REWARD][0, 2:] = 100.0
    noisy[TERMINATED][0, 3] = True
    before = [p.clone() for p in policy._model.parameters()]
    log_clean = policy.learn_mode.forward(clean)
    log_noisy = twin.learn_mode.forward(noisy)
    for name in log_clean:
        torch.testing.assert_close(log_clean[name], log_noisy[name], msg=name)
    for (name, p), q in zip(policy._model.named_parameters(), twin._model.parameters(), strict=True):
        torch.testing.assert_close(p, q, msg=name)
    assert any(not torch.equal(p, b) for p, b in zip(policy._model.parameters(), before, strict=True))


def test_average_network_moves_by_the_ema_rule_and_gets_no_gradient():
    torch.manual_seed(0)
    tau = 0.25
    policy = build(_cfg(target_theta=tau), "policy", enable_field=["learn"])
    avg_before = [p.clone() for p in policy._avg_actor.parameters()]
    actor_before = [p.clone() for p in policy._model.actor.parameters()]
    policy.learn_mode.forward(_batch())
    actor_after = list(policy._model.actor.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(actor_before, actor_after, strict=True))
    for avg, old, new in zip(policy._avg_actor.parameters(), avg_before, actor_after, strict=True):
        torch.testing.assert_close(avg, (1 - tau) * old + tau * new.detach())
        assert not avg.requires_grad and avg.grad is None
    optimised = {id(p) for opt in (policy._optimizer_actor, policy._optimizer_critic)
                 for group in opt.param_groups for p in group["params"]}
    assert not optimised & {id(p) for p in policy._avg_actor.parameters()}
    # actor and critic are optimised separately, each over its own network only
    assert {id(p) for g in policy._optimizer_actor.param_groups for p in g["params"]} == \
        {id(p) for p in policy._model.actor.parameters()}


def test_trust_region_projects_only_the_actor_step():
    torch.manual_seed(0)
    tight = build(_cfg(trust_region_value=1e-6, target_theta=0.5), "policy", enable_field=["learn"])
    free = build(_cfg(trust_region=False, target_theta=0.5), "policy", enable_field=["learn"])
    free._model.load_state_dict(tight._model.state_dict())
    free._avg_actor.load_state_dict(tight._avg_actor.state_dict())
    # first step: π = π_avg, so k = π − π_avg = 0 and nothing is projected
    log = tight.learn_mode.forward(_batch())
    free.learn_mode.forward(_batch())
    assert float(log["trust_region_active"]) == 0.0 and float(log["kl_div"]) == 0.0
    for p, q in zip(tight._model.parameters(), free._model.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    # second step: π has left π_avg, a tiny δ makes the projection act on the actor only
    log = tight.learn_mode.forward(_batch(1))
    free.learn_mode.forward(_batch(1))
    assert float(log["trust_region_active"]) > 0 and float(log["kl_div"]) > 0
    assert "trust_region_active" not in free.learn_mode.monitor_vars()
    for p, q in zip(tight._model.critic.parameters(), free._model.critic.parameters(), strict=True):
        torch.testing.assert_close(p, q)  # the critic's gradient is never projected
    assert any(not torch.equal(p, q) for p, q in zip(tight._model.actor.parameters(), free._model.actor.parameters(),
                                                     strict=True))


def test_config_errors_name_the_setting():
    with pytest.raises(ConfigError, match="trust_region_value must be > 0, got 0"):
        build(_cfg(trust_region_value=0.0), "policy", enable_field=["learn"])
    with pytest.raises(ConfigError, match="target_theta must be in \\[0, 1\\], got 2"):
        build(_cfg(target_theta=2.0), "policy", enable_field=["learn"])
    with pytest.raises(ConfigError, match="target_theta must be in \\[0, 1\\], got None"):  # no hard copies here
        build(_cfg(target_theta=None), "policy", enable_field=["learn"])
    cfg = _cfg()
    cfg.policy.model.action_space = "continuous"
    with pytest.raises(ConfigError, match="discrete action space"):
        build(cfg, "policy")


def test_a_behaviour_logit_gap_past_104_gives_finite_updates():
    """Logits [0, -120] against behaviour [0, -110]: a softmax ratio was NaN there and turned every actor weight
    NaN; the log-softmax difference keeps the step finite."""
    torch.manual_seed(0)
    policy = build(_cfg(), "policy", enable_field=["learn"])
    batch = _batch()
    with torch.no_grad():  # make the actor's logits on the first observation exactly [0, -120]
        last = [m for m in policy._model.actor.modules() if isinstance(m, torch.nn.Linear)][-1]
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.0, -120.0]))
    batch[LOGIT][:] = np.array([0.0, -110.0], dtype=np.float32)
    batch[ACTION][:] = 0
    log = policy.learn_mode.forward(batch)
    log = log[-1] if isinstance(log, list) else log
    assert all(torch.isfinite(torch.as_tensor(v)).all() for v in log.values())
    assert all(torch.isfinite(p).all() for p in policy._model.parameters())


def _naive_actor_objective(policy, batch: dict, c: float, gamma: float, entropy_weight: float) -> torch.Tensor:
    """ACER's actor objective (Wang et al. 2017, Algorithm 2 and eq. 9), one sequence and one step at a time."""
    actor, critic = policy._model.actor, policy._model.critic
    total, steps = torch.zeros(()), 0
    for b in range(len(batch[MASK])):
        real = int(batch[MASK][b].sum())
        obs = torch.as_tensor(batch[OBS_PLUS_1][b, :real + 1])
        log_pi = torch.log_softmax(actor(obs), -1)  # carries the gradient
        pi = log_pi.exp().detach()
        q = critic(obs).detach()
        v = (pi * q).sum(-1)
        mu = torch.softmax(torch.as_tensor(batch[LOGIT][b, :real]), -1)
        actions = batch[ACTION][b]
        q_ret = 0.0 if batch[TERMINATED][b, real - 1] else float(v[real])
        for i in reversed(range(real)):
            q_ret = float(batch[REWARD][b, i]) + gamma * q_ret
            a = int(actions[i])
            rho = pi[i] / mu[i]
            total = total + min(c, float(rho[a])) * (q_ret - float(v[i])) * log_pi[i, a]
            for other in range(pi.shape[-1]):
                weight = max(0.0, 1.0 - c / float(rho[other])) * float(pi[i, other])
                total = total + weight * (float(q[i, other]) - float(v[i])) * log_pi[i, other]
            total = total - entropy_weight * (log_pi[i].exp() * log_pi[i]).sum()
            steps += 1
            q_ret = min(1.0, float(rho[a])) * (q_ret - float(q[i, a])) + float(v[i])
    return total / steps


@pytest.mark.parametrize("c_clip_ratio", [10.0, 0.5])  # 0.5: the bias correction is active
def test_actor_gradient_matches_a_naive_per_sequence_implementation(c_clip_ratio):
    torch.manual_seed(0)
    gamma, entropy_weight = 0.9, 0.01
    policy = build(_cfg(trust_region=False, c_clip_ratio=c_clip_ratio, entropy_weight=entropy_weight,
                        discount_factor=gamma), "policy", enable_field=["learn"])
    batch = _batch()
    policy._model.actor.zero_grad()
    (-_naive_actor_objective(policy, batch, c_clip_ratio, gamma, entropy_weight)).backward()
    expected = [p.grad.clone() for p in policy._model.actor.parameters()]
    policy._optimizer_actor.step = lambda: None  # keep the policy's gradient in .grad
    policy.learn_mode.forward(batch)
    for got, want in zip((p.grad for p in policy._model.actor.parameters()), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("statistics", ["probability", "logit"])
def test_projected_step_keeps_k_dot_z_within_delta(statistics, monkeypatch):
    """Policy level: the z the actor is trained on satisfies kᵀz ≤ δ for every sample, in the chosen coordinates."""
    import ding_lite.policy.acer as acer_module

    delta = 1e-3
    seen = []
    project = acer_module.trust_region_projection

    def spy(g, k, d):
        z, active = project(g, k, d)
        seen.append(((k * z).sum(-1), active))
        return z, active

    monkeypatch.setattr(acer_module, "trust_region_projection", spy)
    torch.manual_seed(0)
    policy = build(_cfg(trust_region_value=delta, target_theta=0.5, trust_region_statistics=statistics), "policy",
                   enable_field=["learn"])
    for seed in range(3):  # the average policy lags behind after the first step: the constraint binds
        policy.learn_mode.forward(_batch(seed))
    assert any(active.any() for _, active in seen)
    for kz, _ in seen:
        assert (kz <= delta + 1e-5).all()


def test_an_unknown_trust_region_statistics_is_a_config_error():
    with pytest.raises(ConfigError, match="policy.learn.trust_region_statistics must be 'probability' or 'logit'"):
        build(_cfg(trust_region_statistics="log"), "policy", enable_field=["learn"])
