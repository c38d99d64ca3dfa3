"""DQN policy (ding_lite/policy/dqn.py): n-step samples across rollouts and episode ends, ε schedule, target nets."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, DISCOUNT_N, NEXT_OBS, NEXT_OBS_N, OBS, RETURN_N, REWARD, TERMINATED, TRUNCATED

pytestmark = pytest.mark.unittest


def _policy(*overrides: str, fields=("learn", "collect", "eval")):
    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="dqn")),
                         overrides=["policy.model.obs_shape=1", "policy.model.action_shape=2",
                                    "policy.model.encoder_hidden_size_list=[8]", *overrides])
    return build(cfg, "policy", enable_field=fields)


def _rollout(g0: int, rewards: list[list[float]], terminated=(), truncated=()) -> dict:
    """(T, 2) rollout starting at global step ``g0``; obs = g + 100·env, next_obs = obs + 0.5 (a tag per row)."""
    t_len = len(rewards)
    g = np.arange(g0, g0 + t_len, dtype=np.float32)[:, None] + np.array([0.0, 100.0], dtype=np.float32)
    term = np.zeros((t_len, 2), dtype=bool)
    trunc = np.zeros((t_len, 2), dtype=bool)
    for t, n in terminated:
        term[t, n] = True
    for t, n in truncated:
        trunc[t, n] = True
    return {OBS: g[..., None], NEXT_OBS: g[..., None] + 0.5, ACTION: (g % 2).astype(np.int64),
            REWARD: np.asarray(rewards, dtype=np.float32), TERMINATED: term, TRUNCATED: trunc}


def test_nstep_samples_across_two_rollouts_and_episode_ends() -> None:
    # nstep 3, γ 0.5. env 0: r = 1, 2, 4, 8 | 16, 32, 64, 128, terminated at g=1.
    #                 env 1: r = 3, 5, 7, 9 | 11, 13, 15, 17, truncated at g=3 (the last step of the first rollout).
    policy = _policy("policy.nstep=3", "policy.discount_factor=0.5", fields=("collect",))
    get_train_sample = policy.collect_mode.get_train_sample
    first = get_train_sample(_rollout(0, [[1, 3], [2, 5], [4, 7], [8, 9]], terminated=[(1, 0)], truncated=[(3, 1)]))
    # rows g=2, 3 may need future steps: held back; rows come out time-major, env 0 then env 1.
    #   (g0, e0): 1 + .5·2 = 2 (ends on the terminal g1),     discount 0,            next_obs of g1
    #   (g0, e1): 3 + .5·5 + .25·7 = 7.25,                    discount .5³ = .125,   next_obs of g2
    #   (g1, e0): 2 (terminal),                               discount 0,            next_obs of g1
    #   (g1, e1): 5 + .5·7 + .25·9 = 10.75 (ends at g3),      discount .125 (truncation bootstraps), next_obs of g3
    np.testing.assert_allclose(first[RETURN_N], [2, 7.25, 2, 10.75])
    np.testing.assert_allclose(first[DISCOUNT_N], [0, 0.125, 0, 0.125])
    np.testing.assert_array_equal(first[NEXT_OBS_N][:, 0], [1.5, 102.5, 1.5, 103.5])
    np.testing.assert_array_equal(first[OBS][:, 0], [0, 100, 1, 101])
    np.testing.assert_array_equal(first[ACTION], [0, 0, 1, 1])

    second = get_train_sample(_rollout(4, [[16, 11], [32, 13], [64, 15], [128, 17]]))
    # the held rows g=2, 3 now complete with the new rollout's steps, then g=4, 5; g=6, 7 are held again.
    #   (g2, e0): 4 + .5·8 + .25·16 = 12,    .125, next_obs of g4     (g2, e1): 7 + .5·9 = 11.5 (truncated g3), .25, g3
    #   (g3, e0): 8 + .5·16 + .25·32 = 24,   .125, g5                 (g3, e1): 9, .5, g3
    #   (g4, e0): 16 + 16 + 16 = 48,         .125, g6                 (g4, e1): 11 + 6.5 + 3.75 = 21.25, .125, g6
    #   (g5, e0): 32 + 32 + 32 = 96,         .125, g7                 (g5, e1): 13 + 7.5 + 4.25 = 24.75, .125, g7
    np.testing.assert_allclose(second[RETURN_N], [12, 11.5, 24, 9, 48, 21.25, 96, 24.75])
    np.testing.assert_allclose(second[DISCOUNT_N], [0.125, 0.25, 0.125, 0.5, 0.125, 0.125, 0.125, 0.125])
    np.testing.assert_array_equal(second[NEXT_OBS_N][:, 0], [4.5, 103.5, 5.5, 103.5, 6.5, 106.5, 7.5, 107.5])
    np.testing.assert_array_equal(second[OBS][:, 0], [2, 102, 3, 103, 4, 104, 5, 105])
    assert second[RETURN_N].dtype == np.float32


def test_nstep_one_emits_every_row_at_once() -> None:
    policy = _policy("policy.nstep=1", "policy.discount_factor=0.5", fields=("collect",))
    out = policy.collect_mode.get_train_sample(_rollout(0, [[1, 3], [2, 5]], terminated=[(0, 1)]))
    np.testing.assert_allclose(out[RETURN_N], [1, 3, 2, 5])
    np.testing.assert_allclose(out[DISCOUNT_N], [0.5, 0, 0.5, 0.5])
    np.testing.assert_array_equal(out[NEXT_OBS_N][:, 0], [0.5, 100.5, 1.5, 101.5])


def test_reset_drops_held_rows() -> None:
    policy = _policy("policy.nstep=3", fields=("collect",))
    policy.collect_mode.get_train_sample(_rollout(0, [[1, 1]] * 4))
    policy.collect_mode.reset()
    out = policy.collect_mode.get_train_sample(_rollout(10, [[1, 1]] * 4))
    np.testing.assert_array_equal(out[OBS][:, 0], [10, 110, 11, 111])  # nothing of the first rollout


def test_epsilon_schedule_is_read_from_env_step() -> None:
    policy = _policy("policy.other.eps.type='linear'", "policy.other.eps.start=1.0", "policy.other.eps.end=0.0",
                     "policy.other.eps.decay=1000", fields=("collect", "eval"))
    obs = np.linspace(-3, 3, 4000, dtype=np.float32)[:, None]
    greedy = policy.eval_mode.forward(obs)[ACTION]
    assert 0.1 < greedy.mean() < 0.9  # the net prefers different actions on different obs, so flips show

    def differ(env_step: int) -> float:
        return float((policy.collect_mode.forward(obs, env_step=env_step)[ACTION] != greedy).mean())

    # a random action differs from the greedy one half of the time: ε = 1 -> .5, ε = .5 -> .25, ε = 0 -> 0
    assert differ(0) == pytest.approx(0.5, abs=0.04)
    assert differ(500) == pytest.approx(0.25, abs=0.04)
    assert differ(1000) == 0.0 and differ(5000) == 0.0


def _learn_batch(n: int = 16) -> dict:
    rng = np.random.default_rng(0)
    return {OBS: rng.normal(size=(n, 1)).astype(np.float32), ACTION: rng.integers(0, 2, n),
            RETURN_N: rng.normal(size=n).astype(np.float32), DISCOUNT_N: np.full(n, 0.9, np.float32),
            NEXT_OBS_N: rng.normal(size=(n, 1)).astype(np.float32)}


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_target_copied_every_target_update_freq_iterations() -> None:
    policy = _policy("policy.learn.target_update_freq=3", fields=("learn",))
    initial = _params(policy._target_model)
    for it in range(1, 7):
        policy.learn_mode.forward(_learn_batch())
        online, target = _params(policy._model), _params(policy._target_model)
        if it % 3:
            assert all(torch.equal(a, b) for a, b in zip(target, initial, strict=True)), it
            assert not all(torch.equal(a, b) for a, b in zip(target, online, strict=True)), it
        else:
            assert all(torch.equal(a, b) for a, b in zip(target, online, strict=True)), it
            initial = target


def test_target_momentum_update() -> None:
    policy = _policy("policy.learn.target_theta=0.25", fields=("learn",))
    before = _params(policy._target_model)
    policy.learn_mode.forward(_learn_batch())
    online, target = _params(policy._model), _params(policy._target_model)
    for t, t0, o in zip(target, before, online, strict=True):  # θ⁻ ← 0.75 θ⁻ + 0.25 θ after each step
        torch.testing.assert_close(t, 0.75 * t0 + 0.25 * o)


def test_learn_forward_logs_and_priorities() -> None:
    policy = _policy("policy.priority=True", fields=("learn",))
    out = policy.learn_mode.forward(_learn_batch(16))
    assert set(policy.learn_mode.monitor_vars()) <= set(out)
    assert out["priority"].shape == (16,) and (out["priority"] > 0).all()


def test_exploration_is_reproducible_under_the_torch_seed() -> None:
    obs = np.linspace(-3, 3, 256, dtype=np.float32)[:, None]
    runs = [_policy(fields=("collect",)).collect_mode.forward(obs, env_step=0)[ACTION] for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])  # _policy seeds torch with 0 before building
    template = _policy(fields=("collect",))
    torch.manual_seed(1)
    other = type(template)(template.cfg, enable_field=("collect",))
    assert not np.array_equal(other.collect_mode.forward(obs, env_step=0)[ACTION], runs[0])


def test_augment_appends_the_extra_samples() -> None:
    policy = _policy("policy.nstep=1", "policy.discount_factor=0.5",
                     "policy.collect.augment=fake_games:negated_samples", fields=("collect",))
    out = policy.collect_mode.get_train_sample(_rollout(0, [[1, 3], [2, 5]], terminated=[(0, 1)]))
    np.testing.assert_array_equal(out[OBS][:, 0], [0, 100, 1, 101, -0, -100, -1, -101])
    np.testing.assert_array_equal(out[ACTION], [0, 0, 1, 1, 1, 1, 0, 0])
    np.testing.assert_allclose(out[RETURN_N], [1, 3, 2, 5] * 2)
    np.testing.assert_allclose(out[DISCOUNT_N], [0.5, 0, 0.5, 0.5] * 2)
    assert out[OBS].dtype == np.float32


def test_a_bad_augment_path_names_the_key() -> None:
    from ding_lite.errors import ConfigError

    with pytest.raises(ConfigError, match="policy.collect.augment='no_such_module:f'"):
        _policy("policy.collect.augment=no_such_module:f", fields=("collect",))
