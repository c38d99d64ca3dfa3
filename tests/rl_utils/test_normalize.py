"""Reward scaling and learning-rate annealing (Huang et al. 2022), and the model's observation normaliser, on
hand-computed numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.model.normalizer import RunningObsNorm, obs_normalizers
from ding_lite.model.templates import VAC
from ding_lite.rl_utils.normalize import RewardScaler, linear_lr_decay

pytestmark = pytest.mark.unittest


def _vecnormalize_reference(reward: np.ndarray, done: np.ndarray, gamma: float) -> tuple[np.ndarray, tuple]:
    """SB3 VecNormalize's reward scaling written out step by step: G = γG + r, the statistics take in the step's
    batch of G (Chan et al.'s merge, prior mean 0, var 1, count 1e-4), r / sqrt(var + 1e-8), G = 0 after a done."""
    mean, var, count = 0.0, 1.0, 1e-4
    ret = np.zeros(reward.shape[1])
    out = np.empty_like(reward, dtype=np.float64)
    for t in range(len(reward)):
        ret = ret * gamma + reward[t]
        b_mean, b_var, n = ret.mean(), ret.var(), len(ret)
        delta, total = b_mean - mean, count + n
        mean, var = mean + delta * n / total, (var * count + b_var * n + delta ** 2 * count * n / total) / total
        count = total
        out[t] = reward[t] / np.sqrt(var + 1e-8)
        ret = np.where(done[t], 0.0, ret)
    return out, (mean, var, count)


def test_reward_scaler_divides_by_the_std_of_the_discounted_return() -> None:
    scaler = RewardScaler(gamma=0.5, clip=None, eps=0.0)
    reward = np.array([[1.0], [1.0], [1.0]], dtype=np.float32)
    done = np.array([[False], [True], [False]])
    out, disc = scaler(reward, done)
    np.testing.assert_allclose(disc[:, 0], [1.0, 1.5, 1.0])  # G resets after the episode's last step
    # step 0 by hand: the prior (mean 0, var 1, count 1e-4) merged with G = 1
    count = 1e-4 + 1
    var0 = (1e-4 * 1.0 + 0.0 + 1.0 ** 2 * 1e-4 * 1 / count) / count
    assert out[0, 0] == pytest.approx(1.0 / np.sqrt(var0), rel=1e-6)
    returns = np.array([1.0, 1.5, 1.0])
    count = 1e-4 + 3  # after the last step: the prior merged with all three
    mean = returns.mean() * 3 / count
    var = (1e-4 + returns.var() * 3 + returns.mean() ** 2 * 1e-4 * 3 / count) / count
    assert scaler.mean == pytest.approx(mean) and scaler.var == pytest.approx(var)
    assert out[2, 0] == pytest.approx(1.0 / np.sqrt(var), rel=1e-6)
    assert out.dtype == np.float32
    # the open episode's return carries into the next rollout: G = 0.5 * 1 + 2
    scaler(np.array([[2.0]], dtype=np.float32), np.array([[False]]))
    assert scaler.ret[0] == pytest.approx(2.5)


def test_reward_scaler_scales_each_step_as_vecnormalize() -> None:
    rng = np.random.default_rng(0)
    reward = rng.normal(2.0, 3.0, size=(40, 3)).astype(np.float32)
    done = rng.random((40, 3)) < 0.1
    expected, stats = _vecnormalize_reference(reward, done, 0.99)
    scaler = RewardScaler(gamma=0.99, clip=None)
    first, _ = scaler(reward[:25], done[:25])  # two rollouts: the statistics and each env's G carry over
    second, _ = scaler(reward[25:], done[25:])
    np.testing.assert_allclose(np.concatenate([first, second]), expected, rtol=1e-5)
    assert (scaler.mean, scaler.var, scaler.count) == pytest.approx(stats)


def test_reward_scaler_skips_invalid_rows_and_merges_another_scalers_returns() -> None:
    reward = np.array([[1.0, 5.0], [2.0, 7.0]], dtype=np.float32)
    done = np.zeros((2, 2), dtype=bool)
    valid = np.array([[True, True], [True, False]])
    scaler = RewardScaler(gamma=0.0, clip=None)
    _, disc = scaler(reward, done, valid)
    assert scaler.count == pytest.approx(1e-4 + 3)
    learner = RewardScaler(gamma=0.0, clip=None)  # e.g. the Ray driver: the valid rows' G, merged
    learner.merge(disc[valid])
    assert (learner.mean, learner.var, learner.count) == pytest.approx((scaler.mean, scaler.var, scaler.count))
    weights = learner.stats_dict()  # what the weights carry: statistics, not the collector's per-env G
    collector = RewardScaler(gamma=0.5, clip=None)
    collector(np.ones((1, 2), dtype=np.float32), done[:1])
    collector.load_state_dict(weights)
    np.testing.assert_allclose(collector.ret, [1.0, 1.0])
    assert collector.var == pytest.approx(scaler.var)


def test_reward_scaler_clips() -> None:
    scaler = RewardScaler(gamma=0.0, clip=1.0)
    out, _ = scaler(np.array([[100.0, 0.0], [0.0, 0.0]], dtype=np.float32), np.zeros((2, 2), dtype=bool))
    assert out.max() == 1.0


def test_linear_lr_decay_reaches_zero() -> None:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.4)
    schedule = linear_lr_decay(opt, 4)
    assert schedule is not None
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert lrs == pytest.approx([0.4, 0.3, 0.2, 0.1, 0.0])
    assert linear_lr_decay(opt, None) is None


def test_obs_norm_matches_numpy_and_travels_in_the_state_dict() -> None:
    norm = RunningObsNorm(2, clip=100.0, eps=0.0)
    a, b = np.array([[1.0, 10.0], [3.0, 30.0]]), np.array([[5.0, 50.0]])
    norm.update(a)  # numpy batches (a collect step) and tensors (a learner's samples) alike
    # one observation by hand: mean (2*2 + 5) / 3, var the mean of the squared deviations of (1, 3, 5)
    x1 = torch.tensor([[1.0, 10.0]])
    np.testing.assert_allclose(norm(x1).numpy(), [[-1.0, -1.0]], rtol=1e-6)  # (1 - 2) / 1, (10 - 20) / 10
    norm.update(torch.as_tensor(b))
    assert norm.mean.numpy() == pytest.approx([3.0, 30.0]) and norm.var.numpy() == pytest.approx([8 / 3, 800 / 3])
    both = np.concatenate([a, b])
    np.testing.assert_allclose(norm.mean.numpy(), both.mean(0))
    np.testing.assert_allclose(norm.var.numpy(), both.var(0))
    x = torch.tensor([[3.0, 30.0], [7.0, 70.0]])
    np.testing.assert_allclose(norm(x).numpy(), (x.numpy() - both.mean(0)) / both.std(0), rtol=1e-6)
    cfg = dict(VAC.config, obs_shape=2, action_shape=1, action_space="continuous", obs_norm=True)
    model = VAC(cfg)
    for norm_module in obs_normalizers(model):
        norm_module.update(torch.as_tensor(both))
    copy = VAC(cfg)
    copy.load_state_dict(model.state_dict())  # checkpoints and the weights sent to actors carry the statistics
    torch.testing.assert_close(copy.obs_norm.mean, model.obs_norm.mean)
    torch.testing.assert_close(copy.compute_actor(x)["mu"], model.compute_actor(x)["mu"])


def test_running_mean_std_merges_batches_into_the_pooled_mean_and_variance() -> None:
    from ding_lite.rl_utils.running_stats import RunningMeanStd

    # Chan et al.'s merge is exact: batches [0, 0] then [2, 2] pool to mean 1 and (biased) variance 1, though each
    # batch's own variance is 0 (all the spread is between the batch means: the delta² term)
    stats = RunningMeanStd(eps=1e-12)
    stats.update(np.array([0.0, 0.0]))
    stats.update(np.array([2.0, 2.0]))
    assert stats.mean == pytest.approx(1.0) and stats.var == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=n) for n in (5, 1, 17)]
    stats = RunningMeanStd(eps=1e-12)
    for b in batches:
        stats.update(b)
    pooled = np.concatenate(batches)
    assert stats.mean == pytest.approx(pooled.mean()) and stats.var == pytest.approx(pooled.var())
