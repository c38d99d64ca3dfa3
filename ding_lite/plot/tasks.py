"""The tasks of ``ding_lite -m plot --aggregate`` (see :mod:`ding_lite.plot.aggregate`): each run's task from the
``env`` section of its ``total_config.py`` (the built env's gymnasium id where it has one), gymnasium's
``reward_threshold`` for it, and the uniformly random policy's mean return, the normalised 0 (each env built and
run here, once per env section in a process)."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ding_lite.errors import PlotInputError
from ding_lite.utils.run_folder import CONFIG_FILE

if TYPE_CHECKING:
    from ding_lite.plot.runs import Run

RANDOM_EPISODES = 20  # episodes of the random policy that define a task's normalised 0
MAX_RANDOM_STEPS = 1_000_000  # steps of one random episode before the env is called endless


def run_env_section(run: Run) -> dict[str, Any]:
    """The ``env`` section of a run's ``total_config.py``."""
    from ding_lite.config import read_config
    from ding_lite.errors import ConfigError

    path = run.path / CONFIG_FILE
    try:
        env = read_config(path)[0].get("env")
    except ConfigError as exc:
        raise PlotInputError(f"--aggregate reads each run's task from its total_config.py: {exc}") from None
    if not isinstance(env, Mapping):
        raise PlotInputError(f"{path} has no env section: --aggregate cannot tell the run's task")
    return dict(env)


def random_return(env: Any, episodes: int = RANDOM_EPISODES, seed: int = 0) -> float:
    """Mean return of uniformly random actions over ``episodes`` episodes (reset seeds ``seed``, ``seed + 1``, ...)."""
    env.action_space.seed(seed)
    returns = []
    for k in range(episodes):
        env.reset(seed=seed + k)
        total, done, steps = 0.0, False, 0
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            steps += 1
            done = bool(terminated or truncated)
            if steps >= MAX_RANDOM_STEPS:
                raise PlotInputError(f"a random episode of {env.spec.id if env.spec else env} ran {steps:,} steps "
                                     f"without ending: give its scale with --norm TASK=LOW,HIGH")
        returns.append(total)
    return float(np.mean(returns))


_PROBED: dict[str, tuple[str, Any]] = {}  # env section (JSON) -> (task name, reward_threshold)
_RANDOM: dict[str, float] = {}  # env section (JSON) -> random policy's mean return (the same for the same section)


def _section_key(env_cfg: Mapping[str, Any]) -> str:
    return json.dumps(env_cfg, sort_keys=True, default=str)


def _with_env(env_cfg: Mapping[str, Any], use: Callable[[Any], Any]) -> Any:
    from ding_lite.envs.gym_env import build_env
    from ding_lite.errors import DingLiteError

    try:
        env = build_env(env_cfg)
    except DingLiteError as exc:
        raise PlotInputError(f"--aggregate builds each task's env: {exc}") from None
    try:
        return use(env)
    finally:
        env.close()


def task_of(env_cfg: Mapping[str, Any]) -> tuple[str, Any]:
    """``(task name, gymnasium's reward_threshold or None)`` of an env section: the built env's gymnasium id where it
    has a spec (dizoo's ``cartpole`` type is ``CartPole-v1``), else ``env_id`` or ``type``."""
    key = _section_key(env_cfg)
    if key not in _PROBED:
        def probe(env: Any) -> tuple[str, Any]:
            spec = env.spec
            name = str(spec.id if spec is not None else env_cfg.get("env_id") or env_cfg.get("type"))
            return name, spec.reward_threshold if spec is not None else None

        _PROBED[key] = _with_env(env_cfg, probe)
    return _PROBED[key]


def random_score(env_cfg: Mapping[str, Any]) -> float:
    """:func:`random_return` of the section's env (computed once per section in a process)."""
    key = _section_key(env_cfg)
    if key not in _RANDOM:
        _RANDOM[key] = _with_env(env_cfg, random_return)
    return _RANDOM[key]
