"""DI-engine's import path of its Atari env: ``create_config.env=dict(type='atari',
import_names=['dizoo.atari.envs.atari_env'])`` finds ding_lite's ``atari`` env type here, so DI-engine's Atari
configs run unchanged. The env itself is :class:`ding_lite.envs.suites.AtariEnv`."""
from ding_lite.envs.suites import AtariEnv

__all__ = ["AtariEnv"]
