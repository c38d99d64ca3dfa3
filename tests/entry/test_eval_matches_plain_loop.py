"""The returns ding_lite reports are those the trained policy gets in a plain gymnasium loop. A short run's best
checkpoint is played by a loop written here from the docs alone (``gymnasium.make(env_id)``, env i of the evaluator's
``evaluator_env_num`` reset with seed ``seed + 1000 + i`` for its first episode and unseeded for its next ones, its
share of the episodes, the eval mode's action computed from ``policy.model``) and its returns must equal those of
``-m eval`` on the same seeds and the training run's best ``[eval]`` return."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import DIZOO_CARTPOLE, DIZOO_PENDULUM

from ding_lite.build import build, load_config
from ding_lite.entry.eval import eval_pipeline
from ding_lite.entry.serial import serial_pipeline

pytestmark = pytest.mark.unittest

SEED = 3  # not 0: the evaluator's seeds are seed + 1000 + i, whatever the run's seed


def _dqn_greedy(model: torch.nn.Module, obs: torch.Tensor, space: gym.Space) -> np.ndarray:
    return model(obs)["logit"].argmax(-1).numpy()


def _ppo_mean(model: torch.nn.Module, obs: torch.Tensor, space: gym.Space) -> np.ndarray:
    # the Gaussian's mean, clipped to the box; the model normalises by its (frozen) observation statistics
    return np.clip(model.compute_actor(obs)["mu"].numpy(), space.low, space.high)


def _sac_mean(model: torch.nn.Module, obs: torch.Tensor, space: gym.Space) -> np.ndarray:
    # tanh of the mean, rescaled to the env's bounds (taken from the env, not from the model)
    squashed = np.tanh(model.compute_actor(obs)["mu"].numpy())
    return squashed * (space.high - space.low) / 2 + (space.high + space.low) / 2


CASES = {
    "dqn_cartpole": (DIZOO_CARTPOLE / "cartpole_dqn_config.py", "CartPole-v1", _dqn_greedy, 400, ()),
    "ppo_obs_norm_pendulum": (DIZOO_PENDULUM / "pendulum_ppo_config.py", "Pendulum-v1", _ppo_mean, 1024,
                              ("policy.model.obs_norm=True", "policy.collect.n_sample=512",
                               "policy.eval.evaluator.eval_freq=40")),
    "sac_pendulum": (DIZOO_PENDULUM / "pendulum_sac_config.py", "Pendulum-v1", _sac_mean, 400,
                     ("policy.learning_starts=200", "policy.eval.evaluator.eval_freq=50")),
}


def _plain_loop(run: Path, env_id: str, act, base_seed: int, n_episode: int) -> list[float]:
    """The run's best checkpoint in ``gymnasium.make(env_id)``, one env after another, as the docs describe the
    evaluator: env i's first episode from ``reset(seed=base_seed + i)``, its next ones from ``reset()``."""
    cfg = load_config(run / "total_config.py")
    policy = build(cfg, "policy", enable_field=("eval",))
    policy.eval_mode.load_state_dict(torch.load(run / "ckpt" / "ckpt_best.pth.tar", weights_only=True)["policy"])
    model = policy.model.eval()
    n_env = int(cfg.env.evaluator_env_num)
    returns = []
    for i in range(n_env):
        env = gym.make(env_id)
        for k in range(n_episode // n_env + (i < n_episode % n_env)):
            obs, _ = env.reset(seed=base_seed + i) if k == 0 else env.reset()
            total, done = 0.0, False
            while not done:
                with torch.no_grad():
                    action = act(model, torch.as_tensor(obs, dtype=torch.float32)[None], env.action_space)[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        env.close()
    return sorted(returns)


@pytest.mark.parametrize("case", CASES)
def test_eval_returns_equal_a_plain_gymnasium_loop_on_the_same_seeds(tmp_path, case):
    config, env_id, act, steps, overrides = CASES[case]
    run = tmp_path / case
    trained = serial_pipeline(str(config), seed=SEED, max_env_step=steps, exp_dir=run, progress=False,
                              overrides=("policy.eval.final_episodes=0", *overrides))
    n_eval = int(load_config(run / "total_config.py").env.n_evaluator_episode)
    # the training run's evaluations: the best one is the best checkpoint's, on seeds SEED + 1000 + i
    assert np.mean(_plain_loop(run, env_id, act, SEED + 1000, n_eval)) == pytest.approx(
        trained["best_eval_return"], rel=1e-5)
    # -m eval with another seed and a count the envs do not divide (some envs play one more episode)
    evaluated = eval_pipeline(str(run / "total_config.py"), seed=SEED + 4, load_ckpt=run / "ckpt" / "ckpt_best.pth.tar",
                              n_episode=7)
    plain = _plain_loop(run, env_id, act, SEED + 4 + 1000, 7)
    np.testing.assert_allclose(sorted(evaluated["returns"]), plain, rtol=1e-5)
    assert len(set(plain)) > 1  # the episodes differ: the seeds are what makes them agree
