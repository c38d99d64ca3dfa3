"""DQN against Stable-Baselines3's (an implementation the project did not write), with the settings matched: the
same Q-net weights and replay batch give the same TD targets, Huber loss, gradients and Adam steps (with the
gradient-norm clip active); the n-step returns match SB3's NStepReplayBuffer on a trajectory with terminations and
truncations; the linear ε schedule and the Polyak rule are SB3's. Skipped without stable-baselines3 (the 'bench'
extra). The differences by design are listed in docs/maths.md."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import (
    ACTION,
    DISCOUNT_N,
    NEXT_OBS,
    NEXT_OBS_N,
    OBS,
    RETURN_N,
    REWARD,
    TERMINATED,
    TRUNCATED,
)
from ding_lite.rl_utils.exploration import epsilon_schedule

sb3 = pytest.importorskip("stable_baselines3")
gym = pytest.importorskip("gymnasium")
pytestmark = pytest.mark.unittest


def _policy(*overrides: str, fields=("learn",)):
    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="dqn")),
                         overrides=["policy.model.obs_shape=4", "policy.model.action_shape=2", *overrides])
    return build(cfg, "policy", enable_field=fields)


def _linears(module: torch.nn.Module) -> list[torch.nn.Linear]:
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


def test_one_step_targets_loss_gradients_and_adam_steps_match_sb3() -> None:
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    gamma, lr, clip = 0.99, 0.05, 0.5
    policy = _policy("policy.model.dueling=False", "policy.model.head_layer_num=0",
                     "policy.model.encoder_hidden_size_list=[16]", "policy.learn.loss_type='huber'",
                     "policy.learn.double=False", f"policy.discount_factor={gamma}",
                     f"policy.learn.learning_rate={lr}", f"policy.learn.grad_clip_value={clip}")
    with torch.no_grad():  # a target net that differs from the online one
        for p in policy._target_model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = sb3.DQN("MlpPolicy", gym.make("CartPole-v1"), gamma=gamma, learning_rate=lr, max_grad_norm=clip,
                        policy_kwargs=dict(net_arch=[16]), learning_starts=0, seed=0, device="cpu")
    agent.set_logger(configure(None, []))
    for ours, theirs in ((policy._model, agent.q_net), (policy._target_model, agent.q_net_target)):
        with torch.no_grad():
            for a, b in zip(_linears(ours), _linears(theirs), strict=True):
                b.weight.copy_(a.weight)
                b.bias.copy_(a.bias)
    g = torch.Generator().manual_seed(1)
    obs, next_obs = torch.randn(32, 4, generator=g) * 2, torch.randn(32, 4, generator=g) * 2
    action = torch.randint(0, 2, (32, 1), generator=g)
    reward = torch.randn(32, 1, generator=g) * 3
    done = (torch.rand(32, 1, generator=g) < 0.3).float()
    samples = ReplayBufferSamples(obs, action, next_obs, done, reward, None)
    agent.replay_buffer.sample = lambda *args, **kwargs: samples
    batch = {OBS: obs.numpy(), ACTION: action[:, 0].numpy(), RETURN_N: reward[:, 0].numpy(),
             DISCOUNT_N: (gamma * (1 - done[:, 0])).numpy(), NEXT_OBS_N: next_obs.numpy()}

    # the loss and its gradients, by SB3's formula on SB3's nets
    with torch.no_grad():
        target = reward + (1 - done) * gamma * agent.q_net_target(next_obs).max(dim=1).values[:, None]
    sb3_loss = F.smooth_l1_loss(agent.q_net(obs).gather(1, action), target)
    sb3_grads = torch.autograd.grad(sb3_loss, agent.q_net.parameters())
    ours, _ = policy._stage_loss("q", policy.batch_tensors(batch), {})
    grads = torch.autograd.grad(ours, policy._model.parameters())
    assert ours.item() == pytest.approx(sb3_loss.item(), rel=1e-6)
    for a, b in zip(grads, sb3_grads, strict=True):
        torch.testing.assert_close(a, b)
    assert float(torch.linalg.vector_norm(torch.stack([x.norm() for x in grads]))) > clip  # the clip acts

    for _ in range(3):  # the first Adam step creates its state, later ones go through the fused kernel
        policy.learn_mode.forward(batch)
        agent.train(gradient_steps=1, batch_size=32)
        for a, b in zip(_linears(policy._model), _linears(agent.q_net), strict=True):
            torch.testing.assert_close(a.weight, b.weight, rtol=0, atol=1e-6)
            torch.testing.assert_close(a.bias, b.bias, rtol=0, atol=1e-6)


def test_nstep_samples_match_sb3_nstep_replay_buffer() -> None:
    from stable_baselines3.common.buffers import NStepReplayBuffer

    t_len, nstep, gamma = 40, 3, 0.9
    reward = np.random.default_rng(0).normal(size=t_len).astype(np.float32)
    terminated, truncated = np.zeros(t_len, bool), np.zeros(t_len, bool)
    terminated[[4, 11, 12, 30]] = True  # one inside a window, two in a row
    truncated[[7, 20, 21, 33]] = True
    obs = np.arange(t_len, dtype=np.float32)[:, None]
    buffer = NStepReplayBuffer(100, gym.spaces.Box(-1e9, 1e9, (1,)), gym.spaces.Discrete(2), n_steps=nstep,
                               gamma=gamma, handle_timeout_termination=True)
    for t in range(t_len):
        buffer.add(obs[t:t + 1], obs[t:t + 1] + 0.5, np.array([0]), reward[t:t + 1],
                   np.array([terminated[t] or truncated[t]]), [{"TimeLimit.truncated": bool(truncated[t])}])
    theirs = buffer._get_samples(np.arange(t_len))
    policy = _policy(f"policy.nstep={nstep}", f"policy.discount_factor={gamma}", fields=("collect",))
    ours = policy.collect_mode.get_train_sample({
        OBS: obs[:, None], NEXT_OBS: obs[:, None] + 0.5, ACTION: np.zeros((t_len, 1), np.int64),
        REWARD: reward[:, None], TERMINATED: terminated[:, None], TRUNCATED: truncated[:, None]})
    rows = ours[OBS][:, 0].astype(int)
    # the last two rows wait for the next collect here; SB3 bootstraps them early from the buffer's end
    np.testing.assert_array_equal(rows, np.arange(t_len - 2))
    np.testing.assert_allclose(ours[RETURN_N], theirs.rewards.numpy()[rows, 0], rtol=1e-6, atol=1e-6)
    discount = theirs.discounts.numpy()[:, 0] * (1 - theirs.dones.numpy()[:, 0])
    np.testing.assert_allclose(ours[DISCOUNT_N], discount[rows], rtol=1e-6)
    np.testing.assert_array_equal(ours[NEXT_OBS_N], theirs.next_observations.numpy()[rows])


def test_linear_epsilon_and_polyak_rule_are_sb3s() -> None:
    from stable_baselines3.common.utils import LinearSchedule, polyak_update

    total, fraction = 10_000, 0.1  # SB3's exploration_fraction of its total_timesteps is decay = 1,000 env steps
    theirs = LinearSchedule(1.0, 0.05, fraction)
    ours = epsilon_schedule(dict(type="linear", start=1.0, end=0.05, decay=fraction * total))
    for step in (0, 1, 250, 999, 1000, 1001, 9999):
        assert ours(step) == pytest.approx(theirs(1 - step / total), abs=1e-12)

    policy = _policy("policy.learn.target_theta=0.1", "policy.model.encoder_hidden_size_list=[8]")
    target = [p.detach().clone() for p in policy._target_model.parameters()]
    rng = np.random.default_rng(0)
    policy.learn_mode.forward({OBS: rng.normal(size=(8, 4)).astype(np.float32), ACTION: np.zeros(8, np.int64),
                               RETURN_N: np.ones(8, np.float32), DISCOUNT_N: np.full(8, 0.9, np.float32),
                               NEXT_OBS_N: rng.normal(size=(8, 4)).astype(np.float32)})
    polyak_update(list(policy._model.parameters()), target, 0.1)
    for a, b in zip(policy._target_model.parameters(), target, strict=True):
        torch.testing.assert_close(a, b)
