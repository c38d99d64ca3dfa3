"""A replay buffer's samples_state / load_samples_state: after a round trip through torch.save and
torch.load(weights_only=True), the restored buffer draws, evicts and re-prioritises exactly as the original does."""
from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import torch

from ding_lite.data import UniformBuffer
from ding_lite.data.prioritized import PrioritizedBuffer

pytestmark = pytest.mark.unittest


def _batch(rng: np.random.Generator, n: int) -> dict[str, Any]:
    return {"obs": rng.random((n, 3)).astype(np.float32), "done": rng.random(n) < 0.1,
            "nested": {"frame": rng.integers(0, 255, (n, 2, 2), dtype=np.uint8)}}


def _round_trip(state: dict[str, Any]) -> dict[str, Any]:
    f = io.BytesIO()
    torch.save(state, f)
    f.seek(0)
    return torch.load(f, weights_only=True)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(_same(a[k], b[k]) if isinstance(a[k], dict) else np.array_equal(a[k], b[k])
                                        for k in a)


@pytest.mark.parametrize("make", [
    lambda seed: UniformBuffer(dict(replay_buffer_size=40), seed=seed),
    lambda seed: UniformBuffer(dict(replay_buffer_size=40, max_use=2), seed=seed),
    lambda seed: PrioritizedBuffer(dict(replay_buffer_size=40, alpha=0.7, beta=0.4, anneal_step=50), seed=seed),
    lambda seed: PrioritizedBuffer(dict(replay_buffer_size=40, max_use=3), seed=seed),
], ids=["uniform", "uniform-max_use", "prioritized", "prioritized-max_use"])
def test_a_restored_buffer_continues_exactly(make: Any) -> None:
    rng = np.random.default_rng(0)
    original = make(1)
    for _ in range(9):  # 54 pushed into 40 slots: the ring has wrapped
        original.push(_batch(rng, 6))
        drawn = original.sample(5)
        original.update_priority(drawn["index"], rng.random(5) + 0.05)
    restored = make(99)  # another seed: the generator's state must come from the saved one
    restored.load_samples_state(_round_trip(original.samples_state()))
    assert len(restored) == len(original) and restored.state_dict() == original.state_dict()
    for _ in range(6):
        a, b = original.sample(7), restored.sample(7)
        assert _same(a, b)
        priorities = rng.random(7) + 0.05
        original.update_priority(a["index"], priorities)
        restored.update_priority(b["index"], priorities)
        more = _batch(rng, 4)
        original.push(more)
        restored.push(more)
        assert len(restored) == len(original)


def test_an_empty_buffer_round_trips() -> None:
    restored = UniformBuffer(dict(replay_buffer_size=8))
    restored.load_samples_state(_round_trip(UniformBuffer(dict(replay_buffer_size=8)).samples_state()))
    assert len(restored) == 0 and restored.nbytes == 0
    restored.push(_batch(np.random.default_rng(0), 3))
    assert len(restored) == 3


def test_nbytes_counts_the_filled_rows_and_another_capacity_is_refused() -> None:
    buf = UniformBuffer(dict(replay_buffer_size=100))
    buf.push({"obs": np.zeros((10, 4), np.float32), "reward": np.zeros(10, np.float64)})
    assert buf.nbytes == 10 * (4 * 4 + 8)
    with pytest.raises(ValueError, match="holds up to 100 samples, this one 50"):
        UniformBuffer(dict(replay_buffer_size=50)).load_samples_state(buf.samples_state())


@pytest.mark.parametrize("saved_alpha, alpha", [(0.6, 0.0), (0.6, 1.0), (0.5, 0.7), (0.0, 0.6)])
def test_a_resume_with_another_alpha_samples_by_the_new_alpha(saved_alpha: float, alpha: float) -> None:
    """The tree holds p^α: before, the loaded leaves kept the saved α (a resume with alpha=0 did not sample
    uniformly); now they are p^α of the new α, and where the saved α was 0 (the priorities are lost) the largest
    priority so far, as a new sample's."""
    saved = PrioritizedBuffer(dict(replay_buffer_size=8, alpha=saved_alpha))
    p = np.array([0.1, 0.5, 2.0, 4.0, 0.0])
    saved.push({"obs": np.zeros((5, 2), np.float32), "priority": p})
    restored = PrioritizedBuffer(dict(replay_buffer_size=8, alpha=alpha))
    restored.load_samples_state(_round_trip(saved.samples_state()))
    expected = np.where(p > 0, p ** alpha, 0.0) if saved_alpha > 0 else np.where(p > 0, 4.0 ** alpha, 0.0)
    np.testing.assert_allclose(restored._tree.leaves[:5], expected, rtol=1e-5)
    np.testing.assert_allclose(restored._tree.total, expected.sum(), rtol=1e-5)
    restored.push({"obs": np.zeros((1, 2), np.float32)})  # a new sample: the largest priority so far, ^α
    np.testing.assert_allclose(restored._tree.leaves[5], 4.0 ** alpha, rtol=1e-5)
