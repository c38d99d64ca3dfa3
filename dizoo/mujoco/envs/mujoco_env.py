"""DI-engine's import path of its MuJoCo env: ``create_config.env=dict(type='mujoco',
import_names=['dizoo.mujoco.envs.mujoco_env'])`` finds ding_lite's ``mujoco`` env type here, so DI-engine's MuJoCo
configs run unchanged. The env itself is :class:`ding_lite.envs.suites.MujocoEnv`."""
from ding_lite.envs.suites import MujocoEnv

__all__ = ["MujocoEnv"]
