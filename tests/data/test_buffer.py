"""The uniform replay buffer (ding_lite/data/buffer.py): preallocated columns, FIFO ring, uniform sampling."""
from __future__ import annotations

import numpy as np
import pytest
from easydict import EasyDict

from ding_lite.data import UniformBuffer
from ding_lite.data.keys import INDEX
from ding_lite.errors import ConfigError
from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils import memory

pytestmark = pytest.mark.unittest


def _samples(values) -> dict:
    values = np.asarray(values)
    return {"obs": np.stack([values, -values], axis=1).astype(np.float32), "reward": values.astype(np.float32),
            "nested": {"mask": values % 2 == 0}}


def test_push_returns_slots_and_fifo_wraps() -> None:
    buf = UniformBuffer(dict(replay_buffer_size=5), seed=0)
    assert len(buf) == 0
    np.testing.assert_array_equal(buf.push(_samples([0, 1, 2])), [0, 1, 2])
    assert len(buf) == 3
    # the ring wraps: 5 and 6 overwrite the oldest samples 0 and 1
    np.testing.assert_array_equal(buf.push(_samples([3, 4, 5, 6])), [3, 4, 0, 1])
    assert len(buf) == 5
    np.testing.assert_array_equal(buf._data["reward"], [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(buf._data["obs"][:, 1], [-5, -6, -2, -3, -4])
    np.testing.assert_array_equal(buf._data["nested"]["mask"], [False, True, True, False, True])
    assert buf.state_dict() == {"size": 5, "next": 2}


def test_push_more_than_capacity_keeps_the_newest() -> None:
    buf = UniformBuffer(dict(replay_buffer_size=5), seed=0)
    buf.push(_samples([0]))
    slots = buf.push(_samples(np.arange(10, 22)))  # 12 samples into a ring of 5
    # sample k ever pushed goes to slot k % 5: the surviving samples 17..21 are samples 8..12
    np.testing.assert_array_equal(slots, [3, 4, 0, 1, 2])
    assert len(buf) == 5
    assert sorted(buf._data["reward"].tolist()) == [17, 18, 19, 20, 21]


def test_sample_keys_shapes_and_index() -> None:
    buf = UniformBuffer(dict(replay_buffer_size=100), seed=1)
    buf.push(_samples(np.arange(10)))
    batch = buf.sample(32)
    assert set(batch) == {"obs", "reward", "nested", INDEX}
    assert batch["obs"].shape == (32, 2) and batch["obs"].dtype == np.float32
    assert batch["reward"].shape == (32,) and batch["nested"]["mask"].shape == (32,)
    assert batch[INDEX].shape == (32,) and batch[INDEX].max() < 10  # only filled slots are drawn
    np.testing.assert_array_equal(batch["reward"], batch[INDEX])  # rows come from the slots named in index
    np.testing.assert_array_equal(batch["obs"][:, 1], -batch[INDEX])


def test_sampling_is_uniform_over_the_stored_samples() -> None:
    buf = UniformBuffer(dict(replay_buffer_size=8), seed=2)
    buf.push(_samples(np.arange(12)))  # holds 4..11
    counts = np.bincount(buf.sample(16000)["reward"].astype(int), minlength=12)
    assert counts[:4].sum() == 0
    np.testing.assert_allclose(counts[4:] / 16000, 1 / 8, atol=0.015)


def test_seeded_sampling_is_reproducible() -> None:
    a, b = UniformBuffer(dict(replay_buffer_size=50), seed=3), UniformBuffer(dict(replay_buffer_size=50), seed=3)
    for buf in (a, b):
        buf.push(_samples(np.arange(30)))
    np.testing.assert_array_equal(a.sample(20)[INDEX], b.sample(20)[INDEX])


def test_errors() -> None:
    with pytest.raises(ConfigError, match="replay_buffer_size must be positive, got 0"):
        UniformBuffer(dict(replay_buffer_size=0))
    buf = UniformBuffer(dict(replay_buffer_size=4))
    with pytest.raises(RuntimeError, match="empty replay buffer"):
        buf.sample(1)
    buf.push(_samples([1]))
    with pytest.raises(KeyError, match="'extra' was not in the first pushed batch"):
        buf.push({**_samples([2]), "extra": np.zeros(1)})


def test_clear_and_empty_push() -> None:
    buf = UniformBuffer(dict(replay_buffer_size=4))
    assert buf.push({"obs": np.zeros((0, 2))}).shape == (0,) and len(buf) == 0
    buf.push(_samples([1, 2]))
    buf.clear()
    assert len(buf) == 0
    np.testing.assert_array_equal(buf.push(_samples([7])), [0])


@pytest.mark.parametrize("buffer_type", ["uniform", "prioritized"])
def test_a_capacity_beyond_memory_is_a_config_error_naming_the_key(buffer_type: str, monkeypatch) -> None:
    """numpy refuses a petabyte at once: one line naming replay_buffer_size, not a MemoryError's traceback (where
    the machine's memory cannot be read; where it can, the buffer's full size is checked first:
    tests/data/test_buffer_memory.py)."""
    monkeypatch.setattr(memory, "read_memory", lambda: None)
    cfg = EasyDict(BUFFER_REGISTRY.get(buffer_type).config, replay_buffer_size=10**15)
    with pytest.raises(ConfigError, match=r"replay_buffer_size=1000000000000000 does not fit in memory \(Unable to "):
        buf = BUFFER_REGISTRY.build(buffer_type, cfg)  # the prioritized buffer's sum tree: allocated here
        buf.push({"obs": np.zeros((2, 4), np.float32)})  # the uniform buffer's arrays: at the first push


def test_max_use_spends_a_sample_after_exactly_that_many_draws() -> None:
    # mutation audit: a sample drawn max_use times is spent (not drawn a max_use + 1-th time)
    buf = UniformBuffer(EasyDict(replay_buffer_size=4, max_use=2), seed=0)
    buf.push(_samples([7]))
    assert buf.sample(1)["reward"].tolist() == [7.0] and buf.sample(1)["reward"].tolist() == [7.0]
    assert len(buf) == 0
    with pytest.raises(RuntimeError, match="max_use"):
        buf.sample(1)
