"""Every dizoo config's total_config.py round trip without a run: compile, resolve as its pipeline does (the model
shapes, ``image_scale``... filled from one probe env), write, compile the written file strictly: the same config;
and resolving and writing that again writes the same file (a run from total_config.py saves its own again)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT

from ding_lite.build import fill_model_shapes_from_env, load_config
from ding_lite.config import save_config
from ding_lite.entry.gsl import _resolve_and_check
from ding_lite.gsl.phases import phase1_config
from ding_lite.runtime.selfplay import resolve_selfplay_config
from ding_lite.utils.dicts import to_plain
from dizoo.modes import config_mode

pytestmark = pytest.mark.unittest

CONFIGS = sorted((REPO_ROOT / "dizoo").glob("*/*/config/*_config.py"))
# the resolution each pipeline applies before it writes total_config.py (entry/serial.py, selfplay.py, gsl.py)
RESOLVE: dict[str, Callable[[Any], object]] = {"serial": fill_model_shapes_from_env,
                                               "selfplay": resolve_selfplay_config, "gsl": _resolve_and_check}
# the module of each dizoo family's env extra (setup.py's extras_require): without it, its configs are skipped
EXTRA_MODULE = {"atari": "ale_py", "board_games": "pettingzoo", "minigrid": "minigrid", "mujoco": "mujoco"}


def _round_trip(cfg: Any, resolve: Callable[[Any], object], folder: Path) -> None:
    resolve(cfg)
    cfg.exp_name = str(folder)
    total = save_config(cfg, folder / "total_config.py")
    again = load_config(total, strict=True)
    assert to_plain(again) == to_plain(cfg)
    resolve(again)  # already resolved: nothing left to fill, so the next run writes the same file
    assert to_plain(again) == to_plain(cfg)
    assert save_config(again, folder / "again.py").read_text() == \
        total.read_text().replace("total_config.py", "again.py")


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_total_config_compiles_to_the_resolved_config(config: Path, tmp_path: Path) -> None:
    family = config.relative_to(REPO_ROOT / "dizoo").parts[0]
    if family in EXTRA_MODULE:
        pytest.importorskip(EXTRA_MODULE[family])
    mode = config_mode(config)
    _round_trip(load_config(config, seed=1), RESOLVE[mode], tmp_path / "run")
    if mode == "gsl":  # phase I trains the generalist on a config of its own, written to its own folder
        cfg = load_config(config, seed=1)
        _resolve_and_check(cfg)
        _round_trip(load_config(phase1_config(cfg)), fill_model_shapes_from_env, tmp_path / "phase1")
