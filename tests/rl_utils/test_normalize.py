"""Reward scaling and learning-rate annealing (Huang et al. 2022), and the model's observation normaliser, on
hand-computed numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.model.normalizer import RunningObsNorm, update_obs_norm
from ding_lite.model.templates import VAC
from ding_lite.rl_utils.normalize import RewardScaler, linear_lr_decay

pytestmark = pytest.mark.unittest


def test_reward_scaler_divides_by_the_std_of_the_discounted_return() -> None:
    scaler = RewardScaler(gamma=0.5, clip=None, eps=0.0)
    reward = np.array([[1.0], [1.0], [1.0]], dtype=np.float32)
    done = np.array([[False], [True], [False]])
    out = scaler(reward, done)
    returns = np.array([1.0, 1.5, 1.0])  # G resets after the episode's last step
    count = 1e-4 + 3  # the prior (mean 0, var 1, count 1e-4) merged with the batch
    mean = returns.mean() * 3 / count
    var = (1e-4 + returns.var() * 3 + returns.mean() ** 2 * 1e-4 * 3 / count) / count
    assert scaler.mean == pytest.approx(mean) and scaler.var == pytest.approx(var)
    np.testing.assert_allclose(out, reward / np.sqrt(var), rtol=1e-6)
    assert out.dtype == np.float32
    # the open episode's return carries into the next rollout: G = 0.5 * 1 + 2
    scaler(np.array([[2.0]], dtype=np.float32), np.array([[False]]))
    assert scaler.ret[0] == pytest.approx(2.5)


def test_reward_scaler_clips() -> None:
    scaler = RewardScaler(gamma=0.0, clip=1.0)
    out = scaler(np.array([[100.0, 0.0], [0.0, 0.0]], dtype=np.float32), np.zeros((2, 2), dtype=bool))
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
    norm.update(torch.as_tensor(a))
    norm.update(torch.as_tensor(b))
    both = np.concatenate([a, b])
    np.testing.assert_allclose(norm.mean.numpy(), both.mean(0))
    np.testing.assert_allclose(norm.var.numpy(), both.var(0))
    x = torch.tensor([[3.0, 30.0], [7.0, 70.0]])
    np.testing.assert_allclose(norm(x).numpy(), (x.numpy() - both.mean(0)) / both.std(0), rtol=1e-6)
    cfg = dict(VAC.config, obs_shape=2, action_shape=1, action_space="continuous", obs_norm=True)
    model = VAC(cfg)
    update_obs_norm(model, torch.as_tensor(both))
    copy = VAC(cfg)
    copy.load_state_dict(model.state_dict())  # checkpoints and the weights sent to actors carry the statistics
    torch.testing.assert_close(copy.obs_norm.mean, model.obs_norm.mean)
    torch.testing.assert_close(copy.compute_actor(x)["mu"], model.compute_actor(x)["mu"])
