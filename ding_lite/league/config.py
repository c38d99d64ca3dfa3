"""The ``league`` config section (settings of ``ding_lite -m selfplay``)."""
from __future__ import annotations

from typing import Any

from ding_lite.league.pool import POOL_CONFIG
from ding_lite.registry import CONFIG_SECTION_REGISTRY

LEAGUE_SETTINGS: dict[str, Any] = dict(
    seats=["learner", "pool"],  # who plays each seat: 'learner', 'pool' (a snapshot drawn per game) or a baseline
    swap_seats=False,  # shuffle the seats' roles at every game start (the learner plays first and second)
    snapshot_freq=2000,  # env steps between snapshots of the learner added to the pool (at least 1)
    snapshot_act="greedy",  # how snapshots act: 'greedy' (eval mode) or 'sample' (collect mode; see docs/selfplay.md)
    opening_plies=0,  # training games start with 0..opening_plies random plies (evaluations from the game's start)
    eval_opponents=["random"],  # baselines the evaluator plays (the first one's win rate is the eval return)
    eval_latest=1,  # the evaluator also plays this many of the newest snapshots
)
LEAGUE_CONFIG: dict[str, Any] = {**LEAGUE_SETTINGS, **POOL_CONFIG}  # the whole section: settings and the pool's
CONFIG_SECTION_REGISTRY.register("league")(LEAGUE_CONFIG)
