"""MuJoCo and MiniGrid on every route, against the standard evaluation protocol: time limits are truncations, falls
terminations, the two MuJoCo routes the same task, MiniGrid's view and reward as published."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.build import build_env_manager

pytestmark = pytest.mark.unittest


def test_envpool_env_type_under_the_base_manager_goes_on_after_a_box_episode_ends() -> None:
    # Before: fetching the next episode stepped envpool with one integer action, which a Box refused (a ConfigError
    # on the first episode end of every MuJoCo run with type='envpool' under the base or subprocess manager).
    pytest.importorskip("envpool")
    cfg = dict(type="envpool", env_id="HalfCheetah-v4", max_episode_steps=3, manager=dict(type="base"))
    with build_env_manager(cfg, 1, 0) as m:
        m.reset()
        ends = [m.step(np.zeros((1, 6))) for _ in range(7)]
    assert [bool(r.truncated[0]) for r in ends] == [False, False, True] * 2 + [False]
    assert [e.episode_length for r in ends for e in r.episodes] == [3, 3]
