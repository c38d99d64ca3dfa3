"""Env types (gymnasium adapter) and env managers."""
from ding_lite.envs.env_manager import BaseEnvManager, EpisodeEnd, StepResult
from ding_lite.envs.gym_env import GymnasiumEnv, build_env, build_env_manager, env_fn

__all__ = ["BaseEnvManager", "EpisodeEnd", "StepResult", "GymnasiumEnv", "build_env", "build_env_manager", "env_fn"]
