"""GSL's result.json lists each specialist as soon as it (and those before it) finished: a run stopped in specialist
1 already names specialist 0 among its phases_done, as the docs say result.json is rewritten after every phase."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from easydict import EasyDict

import ding_lite.entry.gsl as gsl_entry
from ding_lite.errors import Terminated
from ding_lite.gsl.specialists import _train_on_actors, run_specialists
from ding_lite.gsl.state import GslState

pytestmark = pytest.mark.unittest


def _train_then_stop(cfg: Any, root: Path, k: int, subset: list[int], seed: int, progress: bool) -> dict[str, Any]:
    if k == 1:
        raise KeyboardInterrupt("Ctrl-C in specialist 1")
    return {"env_step": 64, "eval_return": 0.5}


def test_a_stop_in_specialist_1_leaves_specialist_0_marked_done(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(gsl_entry, "train_specialist", _train_then_stop)
    cfg = EasyDict(gsl=dict(use_ray=False))
    state = GslState([0, 1, 2, 3], seed=0)
    state.mark("phase1_generalist", env_step=128, ended_by="budget")
    with pytest.raises(KeyboardInterrupt):
        gsl_entry._specialists(cfg, tmp_path, state, [[1], [3]], 0, None, False, set())
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["phases_done"] == ["phase1_generalist", "specialist_0"]
    assert written["phases"]["specialist_0"] == {"env_step": 64, "variations": [1]}


def test_run_specialists_reports_each_one_as_it_finishes(tmp_path: Path) -> None:
    seen: list[int] = []
    cfg = EasyDict(gsl=dict(use_ray=False))
    results = run_specialists(lambda *a, **kw: {"env_step": 8, "eval_return": 0.0}, cfg, tmp_path, [[0], [1], [2]],
                              0, None, False, lambda k, result: seen.append(k))
    assert seen == [0, 1, 2] and len(results) == 3


class _FakeRay:
    """Just enough of Ray for the specialists' loop: ``wait`` raises the signal's exception, as Ctrl-C there does."""

    def __init__(self, stop: BaseException) -> None:
        self.stop, self.killed = stop, 0

    def remote(self, **options: Any) -> Any:
        class Actor:
            def __init__(self) -> None:
                self.train = self

            def remote(self, *args: Any) -> object:
                return object()

        class ActorClass:
            @staticmethod
            def remote(*args: Any) -> Actor:
                return Actor()

        return lambda cls: ActorClass

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def wait(self, refs: list[Any], num_returns: int) -> Any:
        raise self.stop

    def kill(self, actor: Any) -> None:
        self.killed += 1


@pytest.mark.parametrize("stop, kind, code", [(KeyboardInterrupt(), "Interrupted", "SIGINT"),
                                              (Terminated(), "Terminated", "SIGTERM")])
def test_a_stop_while_specialists_train_on_ray_names_their_checkpoints(tmp_path: Path, stop: BaseException,
                                                                        kind: str, code: str) -> None:
    ray = _FakeRay(stop)
    with pytest.raises(KeyboardInterrupt) as info:
        _train_on_actors(ray, _train_then_stop, EasyDict(), tmp_path, [[1], [3], [5]], [0, 1, 2], 0,
                         lambda k, result: None)
    assert type(info.value).__name__ == kind and ray.killed == 2
    assert str(info.value) == (f"stopped by {code} while specialists trained on Ray; each continues from its latest "
                               f"resume checkpoint ({tmp_path / 'specialist_0' / 'ckpt'}, "
                               f"{tmp_path / 'specialist_1' / 'ckpt'}): continue with --resume")
