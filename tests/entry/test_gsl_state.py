"""GSL's typed state: result.json written from it with today's keys, read back, corrupt or foreign files refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.gsl.state import GslState

pytestmark = pytest.mark.unittest


def test_state_round_trips_through_result_json(tmp_path: Path) -> None:
    state = GslState([0, 1, 2], seed=3)
    state.mark("phase1_generalist", env_step=100, ended_by="plateau")
    state.mark("phase1_generalist", env_step=120)
    state.phase1_per_variation = {"0": {"return_mean": 1.0, "success_rate": None}}
    data = state.to_json()
    assert data == {"variations": [0, 1, 2], "seed": 3, "phases_done": ["phase1_generalist"],
                    "phases": {"phase1_generalist": {"env_step": 120, "ended_by": "plateau"}},
                    "phase1_per_variation": {"0": {"return_mean": 1.0, "success_rate": None}}}
    (tmp_path / "result.json").write_text(json.dumps(data))
    back = GslState.read(tmp_path, [0, 1, 2], 3)
    assert back == state and back.to_json() == data
    assert GslState.read(tmp_path / "none", [4], 0) == GslState([4], 0)


@pytest.mark.parametrize("text,words", [("{not json", "not readable JSON"),
                                        (json.dumps({"stop": True, "env_step": 5}), "not the result of a GSL run"),
                                        (json.dumps([1, 2]), "not the result of a GSL run")])
def test_a_corrupt_or_foreign_result_is_refused(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "result.json").write_text(text)
    with pytest.raises(CheckpointError, match=words):
        GslState.read(tmp_path, [0], 0)


def test_resuming_another_seeds_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text(json.dumps(GslState([0], 1).to_json()))
    with pytest.raises(ConfigError, match="seed 1, not seed 2"):
        GslState.read(tmp_path, [0], 2)
