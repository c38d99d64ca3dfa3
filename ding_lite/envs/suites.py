"""The plain gymnasium route to the real benchmarks, for users without envpool: Atari (ale-py, gymnasium's Atari
preprocessing and frame stacking), MuJoCo (gymnasium[mujoco]) and MiniGrid. Each is an env type whose defaults give
the same experiment as envpool's env of the same id (docs/envs_real.md)."""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.envs.gym_env import check_env_id
from ding_lite.errors import ConfigError
from ding_lite.registry import ENV


def require(module: str, extra: str, env_type: str) -> Any:
    """Import ``module`` or raise a :class:`ConfigError` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"env.type='{env_type}' needs the {module} package, which is not installed: "
                          f"pip install 'ding_lite[{extra}]'") from exc


def _make(env_id: str, cfg: Mapping[str, Any], **kwargs: Any) -> gym.Env:
    kwargs.update(cfg.get("kwargs") or {})
    with warnings.catch_warnings():  # the v4 MuJoCo ids are kept on purpose: rl-zoo's and envpool's benchmarks use them
        warnings.filterwarnings("ignore", message=".*is out of date.*")
        return gym.make(env_id, disable_env_checker=True, **kwargs)


def ale_id(env_id: Any) -> str:
    """ale-py's id of an Atari game named as envpool names it ('Pong-v5' -> 'ALE/Pong-v5'); ALE ids stay."""
    env_id = str(env_id)
    return env_id if "/" in env_id or "NoFrameskip" in env_id else f"ALE/{env_id}"


class FireReset(gym.Wrapper):
    """Press FIRE after each reset, for games that wait for it (as envpool's ``use_fire_reset`` does)."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset()
        return obs, info


@ENV.register("atari")
class AtariEnv:
    """An Atari game through ale-py with gymnasium's ``AtariPreprocessing`` and ``FrameStackObservation``: 84x84
    grey frames, 4 stacked, uint8 ``(4, 84, 84)``, the settings of envpool's Atari defaults (no sticky actions, no
    life-loss episodes, unclipped rewards, 30 no-op starts, fire reset, 27,000 agent steps per episode).
    ``env=dict(type='atari', env_id='Pong-v5')``; extra ``[atari]``."""

    config: dict[str, Any] = dict(
        env_id=None,  # 'Pong-v5' (envpool's name) or an ale-py id such as 'ALE/Pong-v5'
        kwargs={},  # extra keyword arguments for gymnasium.make of the ALE env
        max_episode_steps=27000,  # agent steps (each frame_skip frames) before truncation
        repeat_action_probability=0.0,  # sticky actions (Machado et al. 2018 use 0.25; envpool's default is 0)
        frame_skip=4,  # frames per agent step (max-pooled over the last two)
        noop_max=30,  # random no-ops after a reset
        stack_num=4,  # frames stacked into one observation
        screen_size=84,  # side of the square grey frame
        episodic_life=False,  # end the episode at a life loss (terminated)
        use_fire_reset=True,  # press FIRE after a reset where the game has it
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        cls.check_config(cfg)
        cfg = {**cls.config, **cfg}  # an env section built outside compile_config lacks the defaults
        from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TimeLimit

        env = _make(ale_id(cfg["env_id"]), cfg, frameskip=1,
                    repeat_action_probability=float(cfg["repeat_action_probability"]))
        env = AtariPreprocessing(env, noop_max=int(cfg["noop_max"]), frame_skip=int(cfg["frame_skip"]),
                                 screen_size=int(cfg["screen_size"]), terminal_on_life_loss=bool(cfg["episodic_life"]))
        if cfg["use_fire_reset"] and "FIRE" in env.unwrapped.get_action_meanings():  # type: ignore[attr-defined]
            env = FireReset(env)
        env = FrameStackObservation(env, int(cfg["stack_num"]))
        return TimeLimit(env, int(cfg["max_episode_steps"]))

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early on a missing ale-py or OpenCV, or an unknown game."""
        ale_py = require("ale_py", "atari", "atari")
        require("cv2", "atari", "atari")  # gymnasium's AtariPreprocessing resizes with OpenCV
        gym.register_envs(ale_py)
        if not cfg.get("env_id"):
            raise ConfigError("env.env_id is required for env type 'atari' (e.g. env_id='Pong-v5')")
        check_env_id(ale_id(cfg["env_id"]))


@ENV.register("mujoco")
class MujocoEnv:
    """A MuJoCo task through gymnasium[mujoco]: ``env=dict(type='mujoco', env_id='Hopper-v4')``; extra ``[mujoco]``.
    Observations are float32 (gymnasium gives float64; envpool float64 too, but the models run in float32)."""

    config: dict[str, Any] = dict(
        env_id=None,  # gymnasium id, e.g. 'Hopper-v4', 'HalfCheetah-v4'
        kwargs={},  # extra keyword arguments for gymnasium.make
        max_episode_steps=None,  # override the id's time limit (None: keep 1000)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        cls.check_config(cfg)
        cfg = {**cls.config, **cfg}  # an env section built outside compile_config lacks the defaults
        extra = {} if cfg.get("max_episode_steps") is None else {"max_episode_steps": int(cfg["max_episode_steps"])}
        env = _make(str(cfg["env_id"]), cfg, **extra)
        return gym.wrappers.TransformObservation(
            env, lambda obs: obs.astype(np.float32),
            gym.spaces.Box(-np.inf, np.inf, env.observation_space.shape, np.float32))

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early on a missing mujoco package or an unknown id."""
        require("mujoco", "mujoco", "mujoco")
        check_env_id(cfg.get("env_id"))


@ENV.register("minigrid")
class MinigridEnv:
    """A MiniGrid task, the agent's 7x7x3 view as the observation (``ImgObsWrapper``):
    ``env=dict(type='minigrid', env_id='MiniGrid-DoorKey-5x5-v0')``; extra ``[minigrid]``."""

    config: dict[str, Any] = dict(
        env_id=None,  # gymnasium id, e.g. 'MiniGrid-DoorKey-5x5-v0'
        kwargs={},  # extra keyword arguments for gymnasium.make
        max_episode_steps=None,  # override the task's time limit (None: keep it)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        cls.check_config(cfg)
        cfg = {**cls.config, **cfg}  # an env section built outside compile_config lacks the defaults
        from minigrid.wrappers import ImgObsWrapper

        extra = {} if cfg.get("max_episode_steps") is None else {"max_episode_steps": int(cfg["max_episode_steps"])}
        return ImgObsWrapper(_make(str(cfg["env_id"]), cfg, **extra))

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early on a missing minigrid package or an unknown id."""
        require("minigrid", "minigrid", "minigrid")
        check_env_id(cfg.get("env_id"))
