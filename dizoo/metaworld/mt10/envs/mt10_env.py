"""Meta-World MT10 as an env family: variation id k is the k-th of the ten MT10 tasks (the benchmark of the official
GSL code). Needs the ``[metaworld]`` extra; run by ``benchmarks/gsl_metaworld_mt10.py``, not by CI.

Each task's env is built on first use (``gymnasium.make('Meta-World/MT1', env_name=...)``, goal positions sampled
per episode as in MT10) and kept; the observation is Meta-World's 39 numbers plus a one-hot of the task id (as
multi-task baselines give it), so one generalist can tell the tasks apart. ``info['success']`` is Meta-World's flag.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import PluginImportError
from ding_lite.registry import ENV_REGISTRY

MT10_TASKS = ("reach-v3", "push-v3", "pick-place-v3", "door-open-v3", "drawer-open-v3", "drawer-close-v3",
              "button-press-topdown-v3", "peg-insert-side-v3", "window-open-v3", "window-close-v3")
OBS_DIM = 39


@ENV_REGISTRY.register("metaworld_mt10")
class MetaWorldMT10Env(gym.Env):
    """The MT10 tasks behind one env; ``reset(options={'variation': k})`` switches to task k.

    Config: ``env=dict(type='metaworld_mt10', import_names=['dizoo.metaworld.mt10.envs.mt10_env'], variations=10)``.
    """

    config: dict[str, Any] = dict(
        tasks=list(MT10_TASKS),  # Meta-World task names; variation id k is tasks[k]
        max_episode_steps=500,  # Meta-World's episode length (truncation)
    )

    @classmethod
    def num_variations(cls, cfg: Mapping[str, Any]) -> int:
        """Number of tasks."""
        return len(cfg.get("tasks") or MT10_TASKS)

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = {**self.config, **(cfg or {})}
        try:
            import metaworld  # noqa: F401  registers the Meta-World/* gymnasium ids
        except ImportError as exc:
            raise PluginImportError(f"env type 'metaworld_mt10' needs Meta-World: pip install -e '.[metaworld]' "
                                    f"({exc})") from exc
        self.tasks = list(cfg["tasks"])
        self.max_steps = int(cfg["max_episode_steps"])
        n = OBS_DIM + len(self.tasks)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (n,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
        self._envs: dict[int, gym.Env] = {}
        self.task = 0
        self._seed: int | None = None

    def _env(self, k: int) -> gym.Env:
        if k not in self._envs:
            self._envs[k] = gym.make("Meta-World/MT1", env_name=self.tasks[k], seed=self._seed,
                                     max_episode_steps=self.max_steps, disable_env_checker=True)
        return self._envs[k]

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        one_hot = np.zeros(len(self.tasks), dtype=np.float32)
        one_hot[self.task] = 1.0
        return np.concatenate([np.asarray(obs, dtype=np.float32), one_hot])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._seed = seed
        self.task = int((options or {}).get("variation", self.task))
        obs, info = self._env(self.task).reset(seed=seed)
        return self._obs(obs), dict(info)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self._env(self.task).step(np.asarray(action, dtype=np.float64))
        info = {**info, "success": bool(info.get("success", 0.0))}
        return self._obs(obs), float(reward), bool(terminated), bool(truncated), info

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
