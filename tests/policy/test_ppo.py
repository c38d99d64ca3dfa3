"""PPO policy (ding_lite/policy/ppo.py): GAE samples that bootstrap truncations from the final observation,
unclipped continuous actions in the samples while the env gets clipped ones, and a learn step."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from fake_envs import RecordActions
from torch import nn

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ADV, LOGP, NEXT_OBS, OBS, RETURN, REWARD, TERMINATED, TRUNCATED, VALUE
from ding_lite.envs import BaseEnvManager
from ding_lite.policy.ppo import action_distribution
from ding_lite.registry import POLICY_REGISTRY

pytestmark = pytest.mark.unittest


class ObsIsValue(nn.Module):
    """A critic whose value is the observation itself: V(s) = s[0]."""

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"value": obs[:, 0].clone()}


def _ppo_cfg(*overrides: str, env_id: str = "CartPole-v1"):
    return compile_config(dict(env=dict(type="gymnasium", env_id=env_id), policy=dict(type="ppo")),
                          overrides=list(overrides))


def _rollout() -> dict:
    # env 0: truncated at t=1 with final obs 10; t=2 starts a new episode from the reset obs 0.5.
    # env 1: terminated at t=2.
    obs = np.array([[1, 4], [2, 5], [0.5, 6]], dtype=np.float32)
    next_obs = np.array([[2, 5], [10, 6], [3, 7]], dtype=np.float32)
    terminated = np.array([[0, 0], [0, 0], [0, 1]], dtype=bool)
    truncated = np.array([[0, 0], [1, 0], [0, 0]], dtype=bool)
    return {OBS: obs[..., None], NEXT_OBS: next_obs[..., None], REWARD: np.ones((3, 2), np.float32),
            TERMINATED: terminated, TRUNCATED: truncated, ACTION: np.zeros((3, 2), np.int64),
            LOGP: np.full((3, 2), -0.7, np.float32), VALUE: obs}


@pytest.mark.parametrize("recompute_adv", [False, True])
def test_train_sample_bootstraps_truncation_from_the_final_obs(recompute_adv: bool) -> None:
    cfg = _ppo_cfg("policy.collect.discount_factor=0.5", "policy.collect.gae_lambda=0.5",
                   f"policy.recompute_adv={recompute_adv}")
    policy = POLICY_REGISTRY.get("ppo")(cfg.policy, model=ObsIsValue(), enable_field=("collect",))
    sample = policy.collect_mode.get_train_sample(_rollout())
    # γ = λ = 0.5, V(s) = s. env 0: δ2 = 1 + .5·3 − .5 = 2;  δ1 = 1 + .5·V(final obs 10) − 2 = 4 (truncation:
    # bootstrap from the final obs, not the reset obs 0.5), no advantage flows back across the episode end: A1 = 4;
    # δ0 = 1 + .5·2 − 1 = 1, A0 = 1 + .25·4 = 2.
    # env 1: δ2 = 1 − 6 = −5 (terminal: no bootstrap); δ1 = 1 + 3 − 5 = −1, A1 = −1 + .25·(−5) = −2.25;
    # δ0 = 1 + 2.5 − 4 = −.5, A0 = −.5 + .25·(−2.25) = −1.0625.  Rows are time-major: (t0 e0, t0 e1, t1 e0, ...).
    np.testing.assert_allclose(sample[ADV], [2, -1.0625, 4, -2.25, 2, -5])
    np.testing.assert_allclose(sample[RETURN], [3, 2.9375, 6, 2.75, 2.5, 1])
    np.testing.assert_array_equal(sample[OBS][:, 0], [1, 4, 2, 5, 0.5, 6])
    np.testing.assert_array_equal(sample[LOGP], np.full(6, -0.7, np.float32))
    if recompute_adv:  # the learner's recomputation with the same critic agrees, rollout cut included
        adv, ret = policy._recompute_adv(policy.batch_tensors(sample))
        np.testing.assert_allclose(adv.numpy(), sample[ADV])
        np.testing.assert_allclose(ret.numpy(), sample[RETURN])


def test_recompute_adv_stops_at_each_rollouts_cut_in_a_batch_of_two_rollouts() -> None:
    # recompute_adv on the samples of two collects in one batch (what the learner gets with several collects):
    # env 0's last row (t=2) is not an episode end, only the rollout's cut, so the advantage of the second rollout's
    # first row must not flow back into it (GAE bootstraps from the next obs 3 there). Each rollout's advantages
    # are thus exactly those of the test above, twice.
    cfg = _ppo_cfg("policy.collect.discount_factor=0.5", "policy.collect.gae_lambda=0.5", "policy.recompute_adv=True")
    policy = POLICY_REGISTRY.get("ppo")(cfg.policy, model=ObsIsValue(), enable_field=("collect",))
    sample = policy.collect_mode.get_train_sample(_rollout())
    both = {k: np.concatenate([v, v]) for k, v in sample.items()}
    adv, ret = policy._recompute_adv(policy.batch_tensors(both))
    np.testing.assert_allclose(adv.numpy(), [2, -1.0625, 4, -2.25, 2, -5] * 2)
    np.testing.assert_allclose(ret.numpy(), [3, 2.9375, 6, 2.75, 2.5, 1] * 2)


def test_value_clipping_under_value_norm_clips_around_the_normalised_old_value() -> None:
    # value_norm: the critic predicts normalised values, so the old value (stored raw at collection) must be
    # normalised like the target before the clip. Stats mean 10, std 2: target 14 -> 2, old value 10 -> 0; the new
    # prediction 1 is clipped to 0 + 0.2: loss ½·max((1 − 2)², (0.2 − 2)²) = ½·3.24 = 1.62 (the raw old value
    # would give 10 − 0.2 = 9.8 and ½·(9.8 − 2)² = 30.42).
    cfg = _ppo_cfg("policy.model.obs_shape=4", "policy.model.action_shape=2", "policy.model.action_space='discrete'",
                   "policy.learn.value_norm=True", "policy.learn.value_clip_ratio=0.2")
    policy = build(cfg, "policy", enable_field=("learn",))
    policy._value_stats.load_state_dict({"mean": 10.0, "var": 4.0, "count": 100.0})
    loss = policy._value_loss(torch.tensor([1.0]), {RETURN: torch.tensor([14.0]), VALUE: torch.tensor([10.0])})
    assert loss.item() == pytest.approx(1.62, rel=1e-6)


def test_rollout_cut_bootstraps_from_the_next_obs() -> None:
    cfg = _ppo_cfg("policy.collect.discount_factor=0.5", "policy.collect.gae_lambda=1.0")
    policy = POLICY_REGISTRY.get("ppo")(cfg.policy, model=ObsIsValue(), enable_field=("collect",))
    rollout = _rollout()
    last = {k: v[2:] for k, v in rollout.items()}  # a one-step rollout: its end is a cut, not an episode end
    last[TERMINATED] = np.zeros((1, 2), dtype=bool)
    sample = policy.collect_mode.get_train_sample(last)
    np.testing.assert_allclose(sample[ADV], [1 + 0.5 * 3 - 0.5, 1 + 0.5 * 7 - 6])


class CountingCritic(ObsIsValue):
    """V(s) = s[0], recording every observation the critic is asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[float] = []

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        self.seen += obs[:, 0].tolist()
        return super().compute_critic(obs)


def test_critic_runs_only_where_no_stored_value_follows() -> None:
    """Within an episode V(next_obs) is the next row's stored value; the critic sees only the final observation of
    the truncated episode (10) and the last row's next observation of the env still running (3), not the terminated
    env's (7). Stored values that differ from the critic's show which one GAE used."""
    cfg = _ppo_cfg("policy.collect.discount_factor=0.5", "policy.collect.gae_lambda=0.5")
    critic = CountingCritic()
    policy = POLICY_REGISTRY.get("ppo")(cfg.policy, model=critic, enable_field=("collect",))
    rollout = _rollout()
    rollout[VALUE] = rollout[OBS][..., 0] + 100.0  # V stored at collection: s + 100
    sample = policy.collect_mode.get_train_sample(rollout)
    assert sorted(critic.seen) == [3.0, 10.0]
    # env 0: δ2 = 1 + .5·3 − 100.5 = −98 (critic on the cut); δ1 = 1 + .5·10 − 102 = −96 (critic on the final obs);
    # δ0 = 1 + .5·102 − 101 = −49 (row 1's stored value), A0 = −49 + .25·(−96) = −73.
    # env 1: δ2 = 1 − 106 = −105; δ1 = 1 + .5·106 − 105 = −51, A1 = −51 − 26.25 = −77.25;
    # δ0 = 1 + .5·105 − 104 = −50.5, A0 = −50.5 + .25·(−77.25) = −69.8125.
    np.testing.assert_allclose(sample[ADV], [-73, -69.8125, -96, -77.25, -98, -105])


def test_continuous_actions_stored_unclipped_env_gets_clipped() -> None:
    cfg = _ppo_cfg("policy.model.obs_shape=3", "policy.model.action_shape=1", "policy.model.action_space='continuous'",
                   "policy.model.init_log_std=1.5", "env.collector_env_num=2", env_id="Pendulum-v1")
    torch.manual_seed(0)
    policy = build(cfg, "policy")
    recorders = [RecordActions(gym.make("Pendulum-v1")) for _ in range(2)]
    manager = BaseEnvManager([lambda r=r: r for r in recorders])
    manager.seed(0)
    collector = build(cfg, "policy.collect.collector", manager, policy.collect_mode)
    try:
        samples, _ = collector.collect(n_sample=64)
    finally:
        collector.close()
    actions = samples[ACTION]  # (64, 1), time-major rows: env = row % 2
    assert actions.shape == (64, 1)
    assert (np.abs(actions) > 2).any(), "σ = e^1.5 should sample beyond Pendulum's bounds [-2, 2]"
    sent = np.stack([np.stack(r.actions) for r in recorders], axis=1).reshape(64, 1)
    np.testing.assert_allclose(sent, np.clip(actions, -2, 2))
    assert np.abs(sent).max() <= 2
    # the stored log-probabilities are those of the unclipped samples
    dist = action_distribution(policy._model.compute_actor(torch.as_tensor(samples[OBS])))
    np.testing.assert_allclose(dist.log_prob(torch.as_tensor(actions)).detach().numpy(), samples[LOGP], rtol=1e-5,
                               atol=1e-5)


def test_learn_runs_epochs_of_minibatches_and_changes_the_policy() -> None:
    cfg = _ppo_cfg("policy.model.obs_shape=4", "policy.model.action_shape=2", "policy.model.action_space='discrete'",
                   "policy.learn.epoch_per_collect=3", "policy.learn.batch_size=16")
    torch.manual_seed(0)
    policy = build(cfg, "policy")
    calls = []
    step_on = policy._gradient_step
    policy._gradient_step = lambda mb, context: calls.append(len(mb[OBS])) or step_on(mb, context)
    rng = np.random.default_rng(0)
    batch = {OBS: rng.normal(size=(40, 4)).astype(np.float32), ACTION: rng.integers(0, 2, 40),
             LOGP: np.full(40, np.log(0.5), np.float32), VALUE: np.zeros(40, np.float32),
             ADV: rng.normal(size=40).astype(np.float32), RETURN: rng.normal(size=40).astype(np.float32)}
    before = [p.detach().clone() for p in policy._model.parameters()]
    logs = policy.learn_mode.forward(batch)
    assert calls == [16, 16, 8] * 3  # epoch_per_collect passes of shuffled minibatches
    assert isinstance(logs, list) and len(logs) == 9  # one log dict per gradient step (DI-engine's convention)
    for out in logs:
        assert set(policy.learn_mode.monitor_vars()) <= set(out)
        assert all(v.ndim == 0 and torch.isfinite(v) for v in out.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, policy._model.parameters(), strict=True))


def test_value_norm_statistics_belong_to_the_learner_and_travel_with_the_weights() -> None:
    """Under value_norm the learn step updates the return statistics; the collect-mode state dict (what the parallel
    pipeline broadcasts) carries them, so a separate collector denormalises values exactly like the learner."""
    cfg = _ppo_cfg("policy.learn.value_norm=True", "policy.learn.epoch_per_collect=1")
    cfg.policy.model.update(obs_shape=4, action_shape=2, action_space="discrete")
    learner = build(cfg, "policy")
    collector = build(cfg, "policy", enable_field=("collect",))
    n = 32
    batch = {OBS: np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32), ACTION: np.zeros(n, np.int64),
             LOGP: np.full(n, -0.7, np.float32), VALUE: np.zeros(n, np.float32), ADV: np.ones(n, np.float32),
             RETURN: np.full(n, 50.0, np.float32)}
    learner.learn_mode.forward(batch)
    assert learner._value_stats.mean == pytest.approx(50.0, rel=1e-3)  # updated by the learn step
    assert collector._value_stats.mean == 0.0  # a collector's statistics only change by loading
    collector.collect_mode.load_state_dict(learner.collect_mode.state_dict())
    obs = batch[OBS][:5]
    np.testing.assert_allclose(collector.collect_mode.forward(obs)[VALUE], learner.collect_mode.forward(obs)[VALUE],
                               rtol=1e-6)
