"""PPO against Stable-Baselines3's (an implementation the project did not write), from the same weights and data:
GAE on a rollout that SB3 collects itself (terminations, truncations bootstrapped from the final observation, a
rollout that ends mid-episode), the minibatch losses, the clipped gradients and the weights after Adam steps in the
same minibatch order, the Gaussian's log-probabilities and the unclipped actions kept for them, and the observation
and reward normalisation against ``VecNormalize``. Skipped without stable-baselines3 (the 'bench' extra). The
differences by design are listed in docs/maths.md."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from ding_lite.build import build, fill_model_shapes
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ADV, LOGP, NEXT_OBS, OBS, RETURN, REWARD, TERMINATED, TRUNCATED, VALUE
from ding_lite.envs.actions import env_actions
from ding_lite.model.normalizer import RunningObsNorm
from ding_lite.policy.ppo import action_distribution
from ding_lite.rl_utils.normalize import RewardScaler

sb3 = pytest.importorskip("stable_baselines3")
gym = pytest.importorskip("gymnasium")
pytestmark = pytest.mark.unittest

T, N, GAMMA, LAM = 8, 3, 0.9, 0.8
# per env, the global steps that terminate ("x") or truncate ("t"): ends at consecutive steps, an end at the
# rollout's last step, and an env whose episode runs past the rollout's end
SCRIPTS = ({2: "x", 5: "t"}, {3: "t", 4: "t", 7: "x"}, {1: "x", 7: "t"}, {6: "t"})[:N]


class _Scripted(gym.Env):
    """Observations, rewards and episode ends fixed in advance (whatever the actions), logged as they happen."""

    def __init__(self, index: int, box: bool) -> None:
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32) if box else gym.spaces.Discrete(2)
        rng = np.random.default_rng(index)
        self.obs = (rng.normal(size=(64, 3)) * [1.0, 3.0, 0.3] + [0.0, 2.0, -1.0]).astype(np.float32)
        self.rewards = rng.normal(size=64) * 2
        self.script, self.step_k, self.obs_j, self.log = SCRIPTS[index], 0, 0, []

    def _next_obs(self) -> np.ndarray:
        self.obs_j += 1
        return self.obs[self.obs_j - 1].copy()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._next_obs(), {}

    def step(self, action):
        end = self.script.get(self.step_k)
        reward, obs = float(self.rewards[self.step_k]), self._next_obs()
        self.log.append(dict(action=np.array(action), reward=reward, terminated=end == "x", truncated=end == "t",
                             next_obs=obs))
        self.step_k += 1
        return obs, reward, end == "x", end == "t", {}


def _pair(box: bool, sb3_kwargs: dict | None = None, *overrides: str):
    """A ding_lite PPO policy (4-unit tanh MLPs) and SB3's PPO on scripted envs, SB3's nets given our weights."""
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="ppo")), overrides=[
        "policy.model.encoder_hidden_size_list=[5,4]", f"policy.discount_factor={GAMMA}",
        f"policy.collect.gae_lambda={LAM}", *overrides])
    envs = [_Scripted(i, box) for i in range(N)]
    fill_model_shapes(cfg, envs[0].observation_space, envs[0].action_space)
    policy = build(cfg, "policy", enable_field=["learn", "collect"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = sb3.PPO("MlpPolicy", DummyVecEnv([lambda e=e: e for e in envs]), n_steps=T, gamma=GAMMA,
                        gae_lambda=LAM, policy_kwargs=dict(net_arch=[5, 4]), seed=0, device="cpu",
                        **(sb3_kwargs or {}))
    agent.set_logger(configure(None, []))
    model = policy._model
    with torch.no_grad():
        if box:
            model.log_std.copy_(torch.tensor([0.3, -0.5]))
        for ours, theirs in _mapped(model, agent.policy):
            theirs.copy_(ours)
    return policy, agent, envs


def _mapped(model: torch.nn.Module, sb3_policy) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(ours, SB3's) parameter pairs: actor and critic MLPs, their heads, and the Gaussian's log std."""
    def linears(module):
        return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    pairs = []
    for ours, theirs in ((model.actor_encoder, sb3_policy.mlp_extractor.policy_net),
                         (model.critic_encoder, sb3_policy.mlp_extractor.value_net),
                         (model.actor_head, sb3_policy.action_net), (model.critic_head, sb3_policy.value_net)):
        for a, b in zip(linears(ours), linears(theirs), strict=True):
            pairs += [(a.weight, b.weight), (a.bias, b.bias)]
    if hasattr(model, "log_std"):
        pairs.append((model.log_std, sb3_policy.log_std))
    assert len(pairs) == len(list(model.parameters())) == len(list(sb3_policy.parameters()))
    return pairs


def _collect(policy, agent, envs) -> dict:
    """SB3 collects one rollout of T steps; the same steps as ding_lite's (T, N) rollout."""
    _, callback = agent._setup_learn(T * N)
    agent.collect_rollouts(agent.env, callback, agent.rollout_buffer, n_rollout_steps=T)
    buf = agent.rollout_buffer
    logs = {k: np.stack([[step[k] for step in env.log] for env in envs], axis=1) for k in envs[0].log[0]}
    action = buf.actions if policy._model.continuous else buf.actions[..., 0].astype(np.int64)
    return {OBS: buf.observations.copy(), NEXT_OBS: logs["next_obs"], ACTION: action, LOGP: buf.log_probs.copy(),
            VALUE: buf.values.copy(), REWARD: logs["reward"].astype(np.float32),
            TERMINATED: logs["terminated"], TRUNCATED: logs["truncated"], "env_action": logs["action"]}


@pytest.mark.parametrize("box", [False, True])
def test_gae_matches_sb3_with_terminations_truncations_and_a_cut(box: bool) -> None:
    policy, agent, envs = _pair(box)
    rollout = _collect(policy, agent, envs)
    assert rollout[TRUNCATED].any() and rollout[TERMINATED].any() and not rollout[TRUNCATED][-1].all()
    sample = policy.collect_mode.get_train_sample(rollout)
    buf = agent.rollout_buffer
    np.testing.assert_allclose(sample[ADV], buf.advantages.reshape(-1), rtol=0, atol=2e-6)
    np.testing.assert_allclose(sample[RETURN], buf.returns.reshape(-1), rtol=0, atol=2e-6)
    # SB3 folds γ V(final obs) into a truncated step's reward; ding_lite's rewards stay as the env gave them
    with torch.no_grad():
        boot = agent.policy.predict_values(torch.as_tensor(rollout[NEXT_OBS][rollout[TRUNCATED]]))[:, 0].numpy()
    np.testing.assert_allclose(buf.rewards[rollout[TRUNCATED]] - rollout[REWARD][rollout[TRUNCATED]],
                               GAMMA * boot, rtol=0, atol=2e-6)


def _env_major(sample: dict) -> dict:
    """SB3's minibatches index its buffer flattened env by env; ding_lite's samples are flattened step by step."""
    order = np.arange(T * N).reshape(T, N).T.reshape(-1)
    return {k: v[order] for k, v in sample.items()}


@pytest.mark.parametrize("box, numpy_mlp", [(False, True), (True, True), (False, False), (True, False)])
def test_minibatch_losses_clipped_gradients_and_adam_steps_match_sb3(box: bool, numpy_mlp: bool,
                                                                     monkeypatch) -> None:
    lr, ent, batch, epochs = 0.1, 0.01, 8, 4  # a large step, so that later minibatches clip their ratios
    policy, agent, envs = _pair(box, dict(learning_rate=lr, ent_coef=ent, batch_size=batch, n_epochs=epochs),
                                f"policy.numpy_mlp={numpy_mlp}", f"policy.learn.learning_rate={lr}",
                                f"policy.learn.entropy_weight={ent}", f"policy.learn.batch_size={batch}",
                                f"policy.learn.epoch_per_collect={epochs}",
                                "policy.learn.value_weight=1.0")  # SB3's vf_coef=0.5 times its mse (no ½)
    rollout = _collect(policy, agent, envs)
    sample = _env_major(policy.collect_mode.get_train_sample(rollout))
    perms = [np.random.default_rng(e).permutation(T * N) for e in range(epochs)]
    theirs, ours = iter(perms), iter(perms)
    monkeypatch.setattr(np.random, "permutation", lambda n: next(theirs).copy())
    agent.train()
    monkeypatch.setattr(torch, "randperm", lambda n, **kw: torch.from_numpy(next(ours).copy()))
    logs = policy.learn_mode.forward(sample)
    assert len(logs) == epochs * T * N // batch
    got = {k: np.array([float(log[k]) for log in logs]) for k in logs[0]}
    sb3_log = agent.logger.name_to_value
    assert sb3_log["train/clip_fraction"] > 0  # the clip acts
    assert got["clipfrac"].mean() == pytest.approx(sb3_log["train/clip_fraction"], abs=1e-9)
    assert got["policy_loss"].mean() == pytest.approx(sb3_log["train/policy_gradient_loss"], abs=1e-5)
    assert 2 * got["value_loss"].mean() == pytest.approx(sb3_log["train/value_loss"], rel=1e-5)
    assert -got["entropy"].mean() == pytest.approx(sb3_log["train/entropy_loss"], abs=1e-5)
    assert got["total_loss"][-1] == pytest.approx(sb3_log["train/loss"], abs=1e-5)
    for a, b in _mapped(policy._model, agent.policy):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-5)


@pytest.mark.parametrize("box", [False, True])
def test_one_clipped_gradient_matches_sb3(box: bool) -> None:
    """One minibatch of the whole rollout, one step: the gradients after the ``max_grad_norm`` clip (which acts)."""
    policy, agent, envs = _pair(box, dict(learning_rate=1e-3, ent_coef=0.01, batch_size=T * N, n_epochs=1),
                                "policy.numpy_mlp=False", "policy.learn.learning_rate=1e-3",
                                "policy.learn.entropy_weight=0.01", f"policy.learn.batch_size={T * N}",
                                "policy.learn.epoch_per_collect=1", "policy.learn.value_weight=1.0")
    rollout = _collect(policy, agent, envs)
    sample = policy.collect_mode.get_train_sample(rollout)
    policy.learn_mode.forward(sample)  # the minibatch's order does not change its loss
    agent.train()
    norm = torch.linalg.vector_norm(torch.stack([b.grad.norm() for _, b in _mapped(policy._model, agent.policy)]))
    assert float(norm) == pytest.approx(0.5, rel=1e-4)  # clipped to max_grad_norm
    for a, b in _mapped(policy._model, agent.policy):
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=1e-6)
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_gaussian_log_prob_entropy_and_the_unclipped_actions_kept() -> None:
    policy, agent, envs = _pair(True)
    with torch.no_grad():
        policy._model.log_std.copy_(torch.tensor([1.0, -0.5]))  # wide enough to leave the bounds [-1, 1]
        agent.policy.log_std.copy_(policy._model.log_std)
    rollout = _collect(policy, agent, envs)
    action = rollout[ACTION]
    assert (np.abs(action) > 1).any()  # SB3 keeps the sample, unclipped...
    np.testing.assert_array_equal(rollout["env_action"], np.clip(action, -1, 1))  # ...and sends the env the clip
    space = envs[0].action_space
    np.testing.assert_array_equal(env_actions(action.reshape(-1, 2), space), np.clip(action, -1, 1).reshape(-1, 2))
    obs, act = torch.as_tensor(rollout[OBS].reshape(-1, 3)), torch.as_tensor(action.reshape(-1, 2))
    with torch.no_grad():
        _, logp, entropy = agent.policy.evaluate_actions(obs, act)
        dist = action_distribution(policy._model.compute_actor(obs))
        np.testing.assert_allclose(dist.log_prob(act).numpy(), logp.numpy(), rtol=0, atol=1e-5)
        np.testing.assert_allclose(dist.entropy().numpy(), entropy.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(rollout[LOGP].reshape(-1), logp.numpy(), rtol=0, atol=1e-5)
    # ding_lite's collect keeps its sample unclipped too, with the log-probability of that sample
    out = policy.collect_mode.forward(rollout[OBS][0])
    with torch.no_grad():
        first = action_distribution(policy._model.compute_actor(torch.as_tensor(rollout[OBS][0])))
        want = first.log_prob(torch.as_tensor(out[ACTION])).numpy()
    assert (np.abs(out[ACTION]) > 1).any()
    np.testing.assert_allclose(out[LOGP], want, rtol=0, atol=1e-5)

def _normalised_stream(prior_count: float):
    """VecNormalize over the scripted envs (its observation statistics' prior count set), and ours alongside."""
    from stable_baselines3.common.running_mean_std import RunningMeanStd
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    envs = [_Scripted(i, False) for i in range(N)]
    venv = VecNormalize(DummyVecEnv([lambda e=e: e for e in envs]), gamma=GAMMA)
    venv.obs_rms = RunningMeanStd(epsilon=prior_count, shape=(3,))
    norm, obs_diff, rewards, dones = RunningObsNorm(3), [], [], []
    obs = venv.reset()
    for t in range(T + 1):
        if t:
            obs, reward, done, _ = venv.step(np.zeros(N, dtype=np.int64))
            rewards.append(reward)
            dones.append(done)
        norm.update(venv.get_original_obs())  # the reset observation where an episode ended, as SB3's
        obs_diff.append(np.abs(norm.normalize_numpy(venv.get_original_obs()) - obs).max())
    far = venv.get_original_obs() * 100.0  # (a stream's own z-scores stay below sqrt(count): clip_obs acts later)
    assert (np.abs(venv.normalize_obs(far)) == 10.0).any()
    obs_diff.append(np.abs(norm.normalize_numpy(far) - venv.normalize_obs(far)).max())
    raw = np.stack([[step["reward"] for step in env.log] for env in envs], axis=1)
    return venv, norm, np.array(obs_diff), raw, np.stack(rewards), np.stack(dones)


def test_obs_and_reward_normalisation_match_vec_normalize() -> None:
    venv, norm, obs_diff, raw, rewards, dones = _normalised_stream(1e-4)  # SB3's default prior
    scaler = RewardScaler(GAMMA, 10.0)
    scaled, _ = scaler(raw, dones)
    np.testing.assert_allclose(scaled, rewards, rtol=1e-6, atol=1e-6)
    assert (scaler.mean, scaler.var, scaler.count) == pytest.approx(
        (float(venv.ret_rms.mean), float(venv.ret_rms.var), venv.ret_rms.count), rel=1e-6)  # SB3: float32 rewards
    # the observation statistics start from a count of 0 here, from a prior (mean 0, var 1) of count 1e-4 in SB3:
    # a difference that fades as 1e-4 / count
    assert obs_diff.max() < 5e-3 and obs_diff[-1] < obs_diff[0] / 5
    _, norm, obs_diff, *_ = _normalised_stream(1e-30)  # without the prior: the same statistics
    assert obs_diff.max() < 1e-5


def test_value_clip_differs_from_sb3_by_design() -> None:
    """Both clip the value to ``v_old ± ε``; SB3 learns from the clipped prediction's error alone, ding_lite (OpenAI
    baselines, CleanRL) from the larger of the clipped and unclipped errors (docs/maths.md's table)."""
    policy, agent, envs = _pair(False, dict(clip_range_vf=0.2), "policy.learn.value_clip_ratio=0.2",
                                "policy.numpy_mlp=False")
    sample = policy.collect_mode.get_train_sample(_collect(policy, agent, envs))
    mb = policy.batch_tensors(sample)
    with torch.no_grad():
        for a, b in _mapped(policy._model, agent.policy):  # a critic that moved since the collect
            a.add_(0.3 * torch.randn_like(a))
            b.copy_(a)
        value = policy._model.compute_critic(mb[OBS])[VALUE]
        sb3_value = agent.policy.predict_values(mb[OBS])[:, 0]
        ours = policy._value_loss(value, mb)
    torch.testing.assert_close(value, sb3_value)
    old, ret = mb[VALUE], mb[RETURN]
    clipped = old + torch.clamp(sb3_value - old, -0.2, 0.2)  # SB3's values_pred with clip_range_vf
    sb3_loss = torch.nn.functional.mse_loss(ret, clipped)
    want = 0.5 * torch.max((value - ret) ** 2, (clipped - ret) ** 2).mean()
    assert float(ours) == pytest.approx(float(want), rel=1e-6)
    assert float(ours) > 0.5 * float(sb3_loss) * 1.01  # where the unclipped error is larger, only ding_lite sees it
