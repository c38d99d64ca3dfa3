"""FIRE after a lost life in an envpool Atari pool (``env.fire_on_life_loss``, default on; off under envpool's
``episodic_life``, whose reset presses FIRE): in a game with FIRE, a step that lost a life is followed by a FIRE step
inside it (rewards added, its frame kept), so that the game goes on whatever the policy does (a greedy policy that
never learnt to serve would otherwise wait out the 27,000-step limit)."""
from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.errors import ConfigError


class LifeLossFire:
    """Where and how to press FIRE after a lost life in an envpool Atari pool (see the module): ``index`` is FIRE's
    action index in the game's minimal action set, or None where no FIRE step is due (not Atari, no FIRE in the
    game, ``fire_on_life_loss`` off, or envpool's ``episodic_life`` on)."""

    def __init__(self, env_cfg: Mapping[str, Any], pool: Any) -> None:
        config = dict(pool.config)  # envpool's settings of the pool (Atari ones have these keys)
        atari = "use_fire_reset" in config and "task" in config
        wanted = bool(env_cfg.get("fire_on_life_loss", True)) and atari and not config.get("episodic_life")
        self.index = fire_index(str(config["base_path"]), str(config["task"])) if wanted else None

    def lost(self, lives: np.ndarray, before: np.ndarray, ended: np.ndarray) -> np.ndarray:
        """Rows that lost a life (lives left) in a step that did not end their episode."""
        return (lives > 0) & (lives < before) & ~ended


@functools.cache
def fire_index(base_path: str, task: str) -> int | None:
    """FIRE's index in the minimal action set of envpool's Atari ``task`` (None: the game has no FIRE), read from
    the ROM envpool plays with ale-py (envpool does not expose its action set)."""
    try:
        import ale_py
    except ImportError as exc:
        raise ConfigError(f"env.fire_on_life_loss=True on envpool's Atari '{task}' needs ale-py to read the game's "
                          f"actions: pip install 'ding_lite[atari]', or set env.fire_on_life_loss=False") from exc
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner on stderr (a CLI error stays one line)
    ale = ale_py.ALEInterface()
    ale.loadROM(str(Path(base_path) / "atari" / "roms" / f"{task}.bin"))
    actions = list(ale.getMinimalActionSet())
    return actions.index(ale_py.Action.FIRE) if ale_py.Action.FIRE in actions else None


def fire_after_life_loss(pool: Any, fire: LifeLossFire, before: np.ndarray, obs: np.ndarray, reward: np.ndarray,
                         terminated: np.ndarray, truncated: np.ndarray,
                         lives: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A step's ``(obs, reward, terminated, truncated, lives)`` (pool rows in env order; ``before``: each row's
    lives before it) with the rows that lost a life stepped once more with FIRE and that step folded in (rewards
    added, flags or-ed, its observation kept). The inputs are returned as they are where no row lost a life."""
    if fire.index is None:
        return obs, reward, terminated, truncated, lives
    rows = np.flatnonzero(fire.lost(lives, before, terminated | truncated))
    if not len(rows):
        return obs, reward, terminated, truncated, lives
    obs, reward, terminated, truncated, lives = (x.copy() for x in (obs, reward, terminated, truncated, lives))
    f_obs, f_reward, f_terminated, f_truncated, info = pool.step(np.full(len(rows), fire.index, dtype=np.int32),
                                                                 env_id=np.asarray(rows, dtype=np.int32))
    order = np.argsort(info["env_id"])
    ids = np.asarray(info["env_id"])[order]
    obs[ids] = f_obs[order]
    reward[ids] += np.asarray(f_reward, dtype=reward.dtype)[order]
    terminated[ids] |= np.asarray(f_terminated, dtype=bool)[order]
    truncated[ids] |= np.asarray(f_truncated, dtype=bool)[order]
    lives[ids] = np.asarray(info["lives"])[order]
    return obs, reward, terminated, truncated, lives
