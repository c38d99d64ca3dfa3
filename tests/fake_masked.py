"""A single-agent env with action masks, registered as env type ``masked_env`` (``env.import_names=
['fake_masked']``): ``Discrete(4)`` actions, and a mask that changes every step; an illegal action raises.

Each of its ``length`` steps names a good action g in {1, 2, 3} (the observation: g as ``Discrete(4)``, or with
``kind='box'`` its one-hot as a float64 ``Box``). Legal are g, one other action of {1, 2, 3} drawn at random, and
action 0 on every fourth step only (t = 3, 7, ...). Rewards: action 0 gives 2, g gives 1, the other 0. So action 0
looks best wherever it was ever taken, but it is illegal in 3 states of 4: a learner that ignored the mask would
take it there (and this env would raise). The optimal return is 2 per fourth step plus 1 per other step,
:func:`optimal_return`. The episode ends after ``length`` steps, terminated (``truncate=True``: truncated).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.registry import ENV_REGISTRY

N_ACTIONS = 4
BONUS_EVERY = 4  # action 0 is legal on steps t with t % BONUS_EVERY == BONUS_EVERY - 1


class IllegalAction(RuntimeError):
    """An action that the mask of the observation it was taken on marked illegal."""


def optimal_return(length: int) -> float:
    """The best legal return of an episode of ``length`` steps: 2 on every fourth step, 1 on the others."""
    bonus = length // BONUS_EVERY
    return 2.0 * bonus + 1.0 * (length - bonus)


class MaskedEnv(gym.Env):
    """See the module docstring."""

    def __init__(self, length: int = 8, kind: str = "discrete", truncate: bool = False) -> None:
        self.length, self.kind, self.truncate = length, kind, truncate
        part: gym.Space = gym.spaces.Discrete(N_ACTIONS) if kind == "discrete" else \
            gym.spaces.Box(0.0, 1.0, (N_ACTIONS,), np.float64)
        self.observation_space = gym.spaces.Dict(observation=part, action_mask=gym.spaces.MultiBinary(N_ACTIONS))
        self.action_space = gym.spaces.Discrete(N_ACTIONS)
        self.t, self.good, self.mask = 0, 1, np.ones(N_ACTIONS, dtype=np.int8)
        self.illegal_actions = 0

    def _draw(self) -> dict[str, Any]:
        self.good = int(self.np_random.integers(1, N_ACTIONS))
        other = int(self.np_random.choice([a for a in range(1, N_ACTIONS) if a != self.good]))
        self.mask = np.zeros(N_ACTIONS, dtype=np.int8)
        self.mask[[self.good, other]] = 1
        self.mask[0] = self.t % BONUS_EVERY == BONUS_EVERY - 1
        seen = self.good if self.kind == "discrete" else np.eye(N_ACTIONS)[self.good]
        return {"observation": seen, "action_mask": self.mask.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, Any], dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict]:
        action = int(action)
        if not self.mask[action]:
            raise IllegalAction(f"action {action} is illegal at step {self.t} (mask {self.mask.tolist()})")
        reward = 2.0 if action == 0 else float(action == self.good)
        self.t += 1
        end = self.t >= self.length
        return self._draw(), reward, end and not self.truncate, end and self.truncate, {}


@ENV_REGISTRY.register("masked_env")
class MaskedEnvType:
    """``env=dict(type='masked_env', length=8, kind='discrete', truncate=False)``."""

    config: dict[str, Any] = dict(length=8, kind="discrete", truncate=False)

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        return MaskedEnv(int(cfg.get("length", 8)), str(cfg.get("kind", "discrete")), bool(cfg.get("truncate")))


def masked_config(policy: str, manager: str = "base", length: int = 8, stop: bool = True) -> dict[str, Any]:
    """A small config of ``policy`` ('dqn' or 'ppo') on ``masked_env`` (unified form); with ``stop`` training stops
    at :func:`optimal_return`. The ``subprocess`` manager gets ``max_retry=0``: an illegal action (the env raises)
    stops the run instead of restarting the env's worker."""
    settings_of_manager = dict(type=manager, max_retry=0) if manager == "subprocess" else dict(type=manager)
    env = dict(type="masked_env", import_names=["fake_masked"], length=length, collector_env_num=4,
               evaluator_env_num=2, n_evaluator_episode=4, manager=settings_of_manager,
               stop_value=optimal_return(length) if stop else None)
    if policy == "dqn":
        settings: dict[str, Any] = dict(
            model=dict(encoder_hidden_size_list=[32, 32]), nstep=1, discount_factor=0.9,
            learn=dict(update_per_collect=4, batch_size=32, learning_rate=3e-3, target_update_freq=50),
            collect=dict(n_sample=32), eval=dict(evaluator=dict(eval_freq=20)),
            other=dict(eps=dict(type="exp", start=1.0, end=0.05, decay=1000), replay_buffer=dict(
                replay_buffer_size=5000)))
    else:
        settings = dict(
            numba=False, model=dict(encoder_hidden_size_list=[32, 32]),
            learn=dict(epoch_per_collect=10, batch_size=64, learning_rate=1e-3, entropy_weight=0.01),
            collect=dict(n_sample=128, discount_factor=0.9, gae_lambda=0.95), eval=dict(evaluator=dict(eval_freq=8)))
    return dict(exp_name=f"masked_{policy}", env=env, policy=dict(type=policy, cuda=False, **settings))
