"""The seeds of a resumed segment (ding_lite/utils/seed.py's SeedPlan, wired in ding_lite/runtime/run_start.py):
a resumed segment collects on seeds drawn from where it resumes, so it does not replay the first segment's
exploration and first episodes, and resuming the same checkpoint twice gives the same run."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ding_lite.entry.serial import serial_pipeline
from ding_lite.runtime import parts as parts_module
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint

pytestmark = pytest.mark.unittest

COMPARED = ("env_step", "train_iter", "eval_return", "eval_return_std", "best_eval_return", "buffer_size")


def _dqn(exp: Path) -> dict:
    env = dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"],
               collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=2, stop_value=1e9)
    policy = dict(type="dqn", model=dict(encoder_hidden_size_list=[16]), collect=dict(n_sample=8),
                  learn=dict(batch_size=8, update_per_collect=1), eval=dict(evaluator=dict(eval_freq=1000)))
    return dict(exp_name=str(exp), env=env, policy=policy)


def _segment(monkeypatch: pytest.MonkeyPatch, exp: Path, max_env_step: int, resume: bool) -> dict[str, Any]:
    """Run one segment in ``exp``; also the collector envs' seed and the obs of its first collect."""
    seen: dict[str, Any] = {}
    collector_env, collect = parts_module.PlainEnv.collector_env, parts_module.GameCollector.collect

    def recording_env(self: Any, env_num: int, seed: int) -> Any:
        seen["env_seed"] = seed
        return collector_env(self, env_num, seed)

    def recording_collect(self: Any, n_sample: int, train_iter: int = 0) -> Any:
        out = collect(self, n_sample, train_iter)
        seen.setdefault("first_obs", np.asarray(out[0]["obs"]))
        return out

    monkeypatch.setattr(parts_module.PlainEnv, "collector_env", recording_env)
    monkeypatch.setattr(parts_module.GameCollector, "collect", recording_collect)
    result = serial_pipeline(_dqn(exp), seed=0, max_env_step=max_env_step, resume=resume, progress=False)
    return {**seen, "result": result}


def _rows(obs: np.ndarray) -> set[bytes]:
    return {row.tobytes() for row in obs}


def test_a_resumed_segment_collects_on_seeds_of_its_own_the_same_each_time(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # before, a resumed segment reseeded everything from -s: its collector envs started the first segment's
    # episodes again (the same reset observations) and its exploration repeated the first segment's draws
    first = _segment(monkeypatch, tmp_path / "exp", 48, resume=False)
    assert first["env_seed"] == 0
    for copy in ("a", "b"):
        shutil.copytree(tmp_path / "exp", tmp_path / copy)
    a = _segment(monkeypatch, tmp_path / "a", 96, resume=True)
    b = _segment(monkeypatch, tmp_path / "b", 96, resume=True)
    assert a["result"]["segments"] == 2 and a["result"]["env_step"] == 96
    assert a["env_seed"] != first["env_seed"]
    assert not _rows(a["first_obs"]) & _rows(first["first_obs"])  # no state of the first collect comes back
    # the same checkpoint resumed twice: the same seeds, the same samples, the same results and weights
    assert a["env_seed"] == b["env_seed"]
    np.testing.assert_array_equal(a["first_obs"], b["first_obs"])
    results = [json.loads((tmp_path / copy / "result.json").read_text()) for copy in ("a", "b")]
    assert [{k: r[k] for k in COMPARED} for r in results[:1]] == [{k: results[1][k] for k in COMPARED}]
    weights = [load_checkpoint(latest_checkpoint(tmp_path / copy / "ckpt"))["policy"]["model"] for copy in "ab"]
    for name, value in weights[0].items():
        np.testing.assert_array_equal(value.numpy(), weights[1][name].numpy(), err_msg=name)
