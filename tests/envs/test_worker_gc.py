"""A 'fork' env worker keeps Python's cyclic GC off the objects it inherits from the main process
(ding_lite/envs/subprocess_manager.py: gc.freeze around the fork). A worker died of SIGSEGV in a collection, in
multiprocessing's start-up, that walked what earlier work had left in the main process; frozen objects are never
walked, nor written to."""
from __future__ import annotations

import gc

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs import SubprocessEnvManager

pytestmark = pytest.mark.unittest


class FrozenCountEnv(gym.Env):
    """Observes how many objects of its process the GC leaves alone (the permanent generation)."""

    observation_space = gym.spaces.Box(0.0, 1e9, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def _obs(self) -> np.ndarray:
        return np.array([gc.get_freeze_count()], np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        gc.collect()  # a full collection in the worker: the inherited objects stay out of it
        return self._obs(), 0.0, False, False, {}


def test_a_fork_worker_keeps_the_gc_off_what_it_inherits() -> None:
    inherited = len(gc.get_objects())  # what the main process holds, and a fork worker inherits
    with SubprocessEnvManager([FrozenCountEnv], dict(context="fork")) as env:
        env.seed(0)
        assert env.reset()[0, 0] >= 0.9 * inherited
        assert env.step(np.zeros(1, np.int64)).obs[0, 0] >= 0.9 * inherited
    assert gc.get_freeze_count() == 0  # the main process's own GC is untouched


def test_a_freeze_made_by_someone_else_is_left_as_it_is() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with SubprocessEnvManager([FrozenCountEnv], dict(context="fork")) as env:
            env.seed(0)
            env.reset()
        assert gc.get_freeze_count() >= 0.9 * frozen  # not unfrozen (frozen objects may still be freed)
    finally:
        gc.unfreeze()
