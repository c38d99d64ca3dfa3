"""The driver side of the Ray collectors keeps per-run statistics in bounded state: a 10M-step run makes over a
million collects, and nothing it holds may grow with them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from easydict import EasyDict

from ding_lite.distributed.actors import CollectOutput
from ding_lite.distributed.remote import RemoteCollectors

pytestmark = pytest.mark.unittest


def _collectors(n: int) -> RemoteCollectors:
    cfg = EasyDict(policy=dict(on_policy=False), parallel=dict(broadcast_interval=1, n_collectors=n))
    factory = SimpleNamespace(collector=lambda slot: f"actor{slot}")  # no Ray: _account only counts
    return RemoteCollectors(ray=None, cfg=cfg, factory=factory, weights=None)  # type: ignore[arg-type]


def test_collect_statistics_do_not_grow_with_the_number_of_collects() -> None:
    """Before, every collect that loaded new weights (each one, with broadcast_interval=1) appended its load time to
    a list kept for the run's mean: 1.25M floats (about 40 MB) over 10M CartPole DQN env steps."""
    collectors = _collectors(2)
    for k in range(2000):
        out = CollectOutput(samples={}, episodes=[], env_steps=8, seconds=0.01, weights_version=k,
                            load_seconds=0.002 if k % 2 else 0.004, env_restarts=0)
        collectors._account(k % 2, out, train_iter=k)
    grown = {name: len(value) for name, value in vars(collectors).items()
             if isinstance(value, (list, dict, tuple)) and len(value) > 2}
    assert grown == {}
    assert collectors.env_step == 16000
    assert collectors.stats()["weights_load_ms_mean"] == pytest.approx(3.0)
