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
    # env 0's rows g=2, 3 need future steps: held back; env 1's episode ends at g3, so all its rows are settled.
    # Rows come out time-major, env 0 then env 1.
    #   (g0, e0): 1 + .5·2 = 2 (ends on the terminal g1),     discount 0,            next_obs of g1
    #   (g0, e1): 3 + .5·5 + .25·7 = 7.25,                    discount .5³ = .125,   next_obs of g2
    #   (g1, e0): 2 (terminal),                               discount 0,            next_obs of g1
    #   (g1, e1): 5 + .5·7 + .25·9 = 10.75 (ends at g3),      discount .125 (truncation bootstraps), next_obs of g3
    #   (g2, e1): 7 + .5·9 = 11.5 (truncated at g3),          discount .25,          next_obs of g3
    #   (g3, e1): 9,                                          discount .5,           next_obs of g3
    np.testing.assert_allclose(first[RETURN_N], [2, 7.25, 2, 10.75, 11.5, 9])
    np.testing.assert_allclose(first[DISCOUNT_N], [0, 0.125, 0, 0.125, 0.25, 0.5])
    np.testing.assert_array_equal(first[NEXT_OBS_N][:, 0], [1.5, 102.5, 1.5, 103.5, 103.5, 103.5])
    np.testing.assert_array_equal(first[OBS][:, 0], [0, 100, 1, 101, 102, 103])
    np.testing.assert_array_equal(first[ACTION], [0, 0, 1, 1, 0, 1])

    second = get_train_sample(_rollout(4, [[16, 11], [32, 13], [64, 15], [128, 17]]))
    # env 0's held rows g=2, 3 now complete with the new rollout's steps, then g=4, 5 of both envs (env 1's g2, g3
    # came out already); g=6, 7 are held again.
    #   (g2, e0): 4 + .5·8 + .25·16 = 12,    .125, next_obs of g4
    #   (g3, e0): 8 + .5·16 + .25·32 = 24,   .125, g5
    #   (g4, e0): 16 + 16 + 16 = 48,         .125, g6                 (g4, e1): 11 + 6.5 + 3.75 = 21.25, .125, g6
    #   (g5, e0): 32 + 32 + 32 = 96,         .125, g7                 (g5, e1): 13 + 7.5 + 4.25 = 24.75, .125, g7
    np.testing.assert_allclose(second[RETURN_N], [12, 24, 48, 21.25, 96, 24.75])
    np.testing.assert_allclose(second[DISCOUNT_N], [0.125] * 6)
    np.testing.assert_array_equal(second[NEXT_OBS_N][:, 0], [4.5, 5.5, 6.5, 106.5, 7.5, 107.5])
    np.testing.assert_array_equal(second[OBS][:, 0], [2, 3, 4, 104, 5, 105])
    assert second[RETURN_N].dtype == np.float32



def test_nstep_with_ignore_done_bootstraps_through_a_termination_but_stops_there() -> None:
    # learn.ignore_done: a termination counts as a truncation, so the target bootstraps (γ^m, not 0), but the episode
    # still ends there: no reward of the next episode enters the sum. nstep 3, γ 0.5, env 0 terminated at g=1,
    # env 1 truncated at g=3 (as in the test above).
    policy = _policy("policy.nstep=3", "policy.discount_factor=0.5", "policy.learn.ignore_done=True",
                     fields=("collect",))
    first = policy.collect_mode.get_train_sample(
        _rollout(0, [[1, 3], [2, 5], [4, 7], [8, 9]], terminated=[(1, 0)], truncated=[(3, 1)]))
    #   (g0, e0): 1 + .5·2 = 2, discount .5² = .25 (it was 0 without ignore_done), next_obs of g1
    #   (g1, e0): 2,            discount .5,                                        next_obs of g1
    # env 1 as above. Summed across the end, (g0, e0) would be 1 + .5·2 + .25·4 = 3.
    np.testing.assert_allclose(first[RETURN_N], [2, 7.25, 2, 10.75, 11.5, 9])
    np.testing.assert_allclose(first[DISCOUNT_N], [0.25, 0.125, 0.5, 0.125, 0.25, 0.5])
    np.testing.assert_array_equal(first[NEXT_OBS_N][:, 0], [1.5, 102.5, 1.5, 103.5, 103.5, 103.5])

def test_nstep_longer_than_the_rollouts_emits_each_finished_episode_in_the_collect_that_ends_it() -> None:
    # nstep 10⁶, γ 0.5, rollouts of 3 rows. A row comes out once its episode ends within the rows known.
    policy = _policy("policy.nstep=1000000", "policy.discount_factor=0.5", fields=("collect",))
    get_train_sample = policy.collect_mode.get_train_sample
    # env 0: r = 1, 2, 4, terminated at g1; env 1: r = 1, 1, 1, no end yet.
    first = get_train_sample(_rollout(0, [[1, 1], [2, 1], [4, 1]], terminated=[(1, 0)]))
    #   (g0, e0): 1 + .5·2 = 2, discount 0, next_obs of g1;   (g1, e0): 2, discount 0, next_obs of g1
    np.testing.assert_array_equal(first[OBS][:, 0], [0, 1])
    np.testing.assert_allclose(first[RETURN_N], [2, 2])
    np.testing.assert_allclose(first[DISCOUNT_N], [0, 0])
    np.testing.assert_array_equal(first[NEXT_OBS_N][:, 0], [1.5, 1.5])
    assert len(policy._pending[REWARD]) == 3  # env 1's episode is 3 steps long, unfinished

    # env 0: r = 8, 16, 32, truncated at g4; env 1: r = 2, 4, 8, terminated at g5.
    second = get_train_sample(_rollout(3, [[8, 2], [16, 4], [32, 8]], terminated=[(2, 1)], truncated=[(1, 0)]))
    #   (g0, e1): 1 + .5 + .25 + .125·2 + .0625·4 + .03125·8 = 2.5   (g2, e0): 4 + .5·8 + .25·16 = 12, .5³, g4
    #   (g1, e1): 1 + .5·1 + .25·2 + .125·4 + .0625·8 = 3            (g3, e0): 8 + .5·16 = 16, .25, g4
    #   (g2, e1): 1 + .5·2 + .25·4 + .125·8 = 4                      (g4, e0): 16, .5, g4
    #   (g3, e1): 2 + .5·4 + .25·8 = 6;  (g4, e1): 4 + .5·8 = 8;  (g5, e1): 8; env 1 terminal: discount 0, g5
    np.testing.assert_array_equal(second[OBS][:, 0], [100, 101, 2, 102, 3, 103, 4, 104, 105])
    np.testing.assert_allclose(second[RETURN_N], [2.5, 3, 12, 4, 16, 6, 16, 8, 8])
    np.testing.assert_allclose(second[DISCOUNT_N], [0, 0, 0.125, 0, 0.25, 0, 0.5, 0, 0])
    np.testing.assert_array_equal(second[NEXT_OBS_N][:, 0], [105.5, 105.5, 4.5, 105.5, 4.5, 105.5, 4.5, 105.5, 105.5])
    assert len(policy._pending[REWARD]) == 1  # env 0's episode from g5

    # env 0: r = 1, 1, 1, no end; env 1: r = 1, 1, 1, truncated at g8.
    third = get_train_sample(_rollout(6, [[1, 1]] * 3, truncated=[(2, 1)]))
    #   (g6, e1): 1 + .5 + .25 = 1.75, .125, g8;  (g7, e1): 1.5, .25, g8;  (g8, e1): 1, .5, g8
    np.testing.assert_array_equal(third[OBS][:, 0], [106, 107, 108])
    np.testing.assert_allclose(third[RETURN_N], [1.75, 1.5, 1])
    np.testing.assert_allclose(third[DISCOUNT_N], [0.125, 0.25, 0.5])
    np.testing.assert_array_equal(third[NEXT_OBS_N][:, 0], [108.5] * 3)
    assert len(policy._pending[REWARD]) == 4  # env 0's episode g5..g8, still unfinished


def _reference_samples(reward: np.ndarray, done: np.ndarray, terminated: np.ndarray, gamma: float,
                       nstep: int) -> dict[tuple[int, int], tuple[float, float, int]]:
    """(g, env) -> (return_n, discount_n, last g) of every step whose window is settled, by plain loops."""
    out = {}
    for n in range(reward.shape[1]):
        for g in range(reward.shape[0]):
            ret, k = 0.0, 0
            while g + k < reward.shape[0] and k < nstep:
                ret += gamma**k * reward[g + k, n]
                k += 1
                if done[g + k - 1, n]:
                    break
            if k == nstep or done[g + k - 1, n]:
                out[(g, n)] = (ret, gamma**k * (not terminated[g + k - 1, n]), g + k - 1)
    return out


@pytest.mark.parametrize("nstep", [1, 3, 1000000])
def test_nstep_rows_come_out_once_over_many_rollouts_and_pending_stays_bounded(nstep: int) -> None:
    rng = np.random.default_rng(nstep)
    t_len, n_env, n_roll = 4, 3, 12
    total = t_len * n_roll
    reward = rng.integers(1, 5, size=(total, n_env)).astype(np.float32)
    terminated = rng.random((total, n_env)) < 0.08
    truncated = ~terminated & (rng.random((total, n_env)) < 0.05)
    truncated[-1] = ~terminated[-1]  # every episode ends with the last rollout
    done = terminated | truncated
    policy = _policy(f"policy.nstep={nstep}", "policy.discount_factor=0.5", fields=("collect",))
    seen: dict[tuple[int, int], tuple[float, float, int]] = {}
    for r in range(n_roll):
        rows = slice(r * t_len, (r + 1) * t_len)
        obs = (np.arange(r * t_len, (r + 1) * t_len)[:, None] + 100 * np.arange(n_env))[..., None]  # g + 100·env
        out = policy.collect_mode.get_train_sample({
            OBS: obs.astype(np.float32), NEXT_OBS: obs + np.float32(0.5), ACTION: np.zeros((t_len, n_env), np.int64),
            REWARD: reward[rows], TERMINATED: terminated[rows], TRUNCATED: truncated[rows]})
        known_steps = (r + 1) * t_len
        known = _reference_samples(reward[:known_steps], done[:known_steps], terminated, 0.5, nstep)
        for obs, ret, disc, next_obs in zip(out[OBS][:, 0], out[RETURN_N], out[DISCOUNT_N], out[NEXT_OBS_N][:, 0],
                                            strict=True):
            key = (int(obs) % 100, int(obs) // 100)
            assert key not in seen, f"{key} emitted twice"
            seen[key] = (float(ret), float(disc), int(next_obs) % 100)
        assert seen.keys() == known.keys()  # every settled row came out, in the collect that settled it
        # kept back: the rows from the first open one on (of an unfinished episode, fewer than n steps from the end)
        episode_start = [max((g + 1 for g in range(known_steps) if done[g, n]), default=0) for n in range(n_env)]
        first_open = min(max(start, known_steps - nstep + 1) for start in episode_start)
        pending = 0 if policy._pending is None else len(policy._pending[REWARD])
        assert pending == known_steps - first_open
        assert pending <= known_steps - min(episode_start) and pending < nstep
    assert len(seen) == total * n_env
    for key, (ret, disc, last) in seen.items():
        np.testing.assert_allclose((ret, disc, last), known[key], rtol=1e-6, err_msg=str(key))


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


@pytest.mark.parametrize("value", ["0", "[]", "{}", "1.5"])
def test_an_augment_that_is_no_string_is_refused(value: str) -> None:
    # 0, [] and {} were taken as None (no augmentation) without a word (found by the config fuzzer)
    from ding_lite.errors import ConfigError

    with pytest.raises(ConfigError, match=r"policy.collect.augment must be 'package.module:function' \(a string\) "
                                          r"or None, got"):
        _policy(f"policy.collect.augment={value}", fields=("collect",))


def test_actions_are_uniformly_random_before_learning_starts() -> None:
    # SB3's learning_starts and DI-engine's random_collect_size (an alias of it here) both collect with uniform
    # random actions before the first gradient step; ε = 0 afterwards shows the greedy net takes over at 100.
    policy = _policy("policy.learning_starts=100", "policy.other.eps.start=0.0", "policy.other.eps.end=0.0",
                     fields=("collect", "eval"))
    obs = np.linspace(-3, 3, 4000, dtype=np.float32)[:, None]
    greedy = policy.eval_mode.forward(obs)[ACTION]
    early = policy.collect_mode.forward(obs, env_step=99)[ACTION]
    assert float((early != greedy).mean()) == pytest.approx(0.5, abs=0.04)  # random: half differ from greedy
    assert np.bincount(early, minlength=2) / len(early) == pytest.approx([0.5, 0.5], abs=0.04)
    assert (policy.collect_mode.forward(obs, env_step=100)[ACTION] == greedy).all()
