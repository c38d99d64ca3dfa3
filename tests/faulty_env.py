"""A counting env that misbehaves on purpose, for the env manager fault tests (registered as env type 'faulty').

Observation ``[episode_id, t]``: a random id drawn at each reset (from the env's seeded RNG) and the step count
within the episode, so every stored transition tells which episode it came from and whether its next observation
really follows it (``t + 1``, same id). Reward 1 per step; the episode terminates at ``t == episode_len``.

Misbehaviour (``mode``) at the instance's ``fail_at``-th step (counted over its episodes): 'raise' raises, 'kill'
SIGKILLs its own process, 'hang' sleeps ``hang_s`` seconds, 'old_api' returns gym's old 4-tuple (a fault of the
env's code, not of its run); 'hang_reset' sleeps in a reset instead; 'reset' makes every reset raise. With
``token_dir`` set, only ``n_faults`` misbehaviours happen over all processes (each claims a token file); without it,
every time the condition holds: each new instance (a restarted worker's, a new actor's) misbehaves again at its own
``fail_at``-th step, a fault every ``fail_at`` steps. With ``only_in_actor`` set, only instances inside a Ray actor
whose name contains that text misbehave (e.g. 'collector': the evaluator's envs are sound).
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.registry import ENV_REGISTRY


@ENV_REGISTRY.register("faulty")
class FaultyEnv(gym.Env):
    """See the module docstring; ``cfg`` is the env section."""

    config: dict[str, Any] = dict(
        mode=None,  # None, 'raise', 'kill', 'hang', 'old_api', 'hang_reset' or 'reset'
        fail_at=5,  # the instance's step (over all its episodes) at which step misbehaves
        episode_len=12,  # the episode terminates at this t
        token_dir=None,  # folder of token files bounding the misbehaviours over all processes (None: no bound)
        n_faults=1,  # misbehaviours allowed with token_dir
        hang_s=30.0,  # how long 'hang' sleeps
        only_in_actor=None,  # misbehave only inside a Ray actor whose name contains this text (None: anywhere)
    )

    observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        self.cfg = {**self.config, **(cfg or {})}
        if self.cfg["only_in_actor"] is not None and self.cfg["only_in_actor"] not in _actor_name():
            self.cfg["mode"] = None
        self._id = 0.0
        self._t = 0
        self._life_steps = 0  # steps over all episodes of this instance

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if self.cfg["mode"] == "reset":
            raise RuntimeError("faulty env: reset always fails")
        if self.cfg["mode"] == "hang_reset" and self._claim():
            time.sleep(float(self.cfg["hang_s"]))
        self._id = float(self.np_random.integers(1, 2**24))
        self._t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple:
        self._life_steps += 1
        if self._life_steps == self.cfg["fail_at"] and self.cfg["mode"] == "old_api":
            return self._obs(), 1.0, False, {}
        if self._life_steps == self.cfg["fail_at"] and self.cfg["mode"] in ("raise", "kill", "hang") and self._claim():
            mode = self.cfg["mode"]
            if mode == "raise":
                raise RuntimeError("faulty env: step blew up")
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(float(self.cfg["hang_s"]))
        self._t += 1
        return self._obs(), 1.0, self._t >= self.cfg["episode_len"], False, {"episode_id": self._id}

    def _obs(self) -> np.ndarray:
        return np.array([self._id, self._t], dtype=np.float32)

    def _claim(self) -> bool:
        """True if this process may misbehave now (takes one of the ``n_faults`` token files)."""
        token_dir = self.cfg["token_dir"]
        if token_dir is None:
            return True
        for k in range(int(self.cfg["n_faults"])):
            try:
                os.close(os.open(os.path.join(token_dir, f"fault_{k}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return True
            except FileExistsError:
                continue
        return False


def _actor_name() -> str:
    """Name of the Ray actor this process runs ('' outside one)."""
    try:
        import ray

        return (ray.get_runtime_context().get_actor_name() or "") if ray.is_initialized() else ""
    except ImportError:
        return ""


def faulty_env_cfg(mode: str | None, token_dir: Any = None, *, manager: dict | None = None,
                   **env_settings: Any) -> dict[str, Any]:
    """An ``env`` section for :class:`FaultyEnv` (``env_settings`` among its ``config``) under the subprocess manager
    with small timeouts (``manager`` overrides them)."""
    settings = dict(type="subprocess", step_timeout=1.0, reset_timeout=5.0, max_retry=3)
    return dict(type="faulty", import_names=["faulty_env"], mode=mode,
                token_dir=None if token_dir is None else str(token_dir), **env_settings,
                manager={**settings, **(manager or {})})
