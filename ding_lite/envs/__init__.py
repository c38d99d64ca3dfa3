"""Env types (gymnasium adapter) and env managers."""
from ding_lite.envs.env_manager import BaseEnvManager, EnvManager, EpisodeEnd, StepResult
from ding_lite.envs.envpool_env import EnvpoolEnv, EnvpoolEnvManager
from ding_lite.envs.gym_env import GymnasiumEnv, build_env, env_fn
from ding_lite.envs.multi_agent import PASS, PettingZooEnv, SeatBatch, SeatLayout, seat_game
from ding_lite.envs.subprocess_manager import SubprocessEnvManager
from ding_lite.envs.suites import AtariEnv, MinigridEnv, MujocoEnv

__all__ = ["BaseEnvManager", "EnvManager", "EpisodeEnd", "StepResult", "GymnasiumEnv", "build_env",
           "env_fn", "SubprocessEnvManager",
           "PASS", "PettingZooEnv", "SeatBatch", "SeatLayout", "seat_game",
           "EnvpoolEnv", "EnvpoolEnvManager", "AtariEnv", "MinigridEnv", "MujocoEnv"]
