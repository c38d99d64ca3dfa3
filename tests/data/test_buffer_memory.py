"""A replay buffer that cannot fit in memory once full is refused at its first push, with its size and the key to
change (ding_lite/data/buffer.py, ding_lite/utils/memory.py): numpy allocates lazily, so without the check a buffer of
Atari frames larger than the machine allocated fine and was killed by the OOM killer once it filled up."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from ding_lite.data import UniformBuffer
from ding_lite.data.prioritized import PrioritizedBuffer
from ding_lite.errors import ConfigError
from ding_lite.utils import memory
from ding_lite.utils.memory import Memory

pytestmark = pytest.mark.unittest

GB = 10 ** 9


def _atari(n: int = 2) -> dict:
    """DQN's train samples on Atari: two uint8 4x84x84 frame stacks (obs, n-step bootstrap obs) per transition."""
    return {"obs": np.zeros((n, 4, 84, 84), np.uint8), "next_obs_n": np.zeros((n, 4, 84, 84), np.uint8),
            "action": np.zeros(n, np.int64), "reward": np.zeros(n, np.float32), "done": np.zeros(n, bool)}


ROW = 2 * 4 * 84 * 84 + 8 + 4 + 1  # bytes per transition of _atari()


@pytest.fixture
def machine(monkeypatch):
    """A machine of 24 GB (memory and swap) with 20 GB available; nothing of that size is allocated (numpy's
    arrays are lazy, and every test here is refused or warned before a row is written)."""
    monkeypatch.setattr(memory, "read_memory", lambda: Memory(total=24 * GB, available=20 * GB))


@pytest.mark.parametrize("buffer", [UniformBuffer, PrioritizedBuffer])
def test_a_buffer_larger_than_the_machine_is_refused_at_the_first_push(machine, buffer) -> None:
    buf = buffer(dict(replay_buffer_size=500_000), seed=0)  # 28.2 GB of frames: lazily allocated, it would fit
    with pytest.raises(ConfigError) as err:
        buf.push(_atari())
    message = str(err.value)
    assert "\n" not in message
    assert "policy.other.replay_buffer.replay_buffer_size=500000" in message and "28.2 GB" in message
    assert "24.0 GB" in message and f"at most {24 * GB // ROW:,}" in message  # the largest size that fits


def test_a_buffer_that_fits_only_in_memory_held_by_others_is_warned_of(machine, caplog) -> None:
    buf = UniformBuffer(dict(replay_buffer_size=400_000), seed=0)  # 22.6 GB: more than the 20 GB available
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        buf.push(_atari())
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith("warning: policy.other.replay_buffer.replay_buffer_size=400000")
    assert "22.6 GB" in lines[0] and "20.0 GB" in lines[0] and f"at most {20 * GB // ROW:,}" in lines[0]
    assert len(buf) == 2


def test_a_buffer_that_fits_says_nothing(machine, caplog) -> None:
    buf = UniformBuffer(dict(replay_buffer_size=300_000), seed=0)  # 16.9 GB
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        buf.push(_atari())
    assert caplog.records == []


def test_a_resumed_buffer_is_checked_before_its_arrays_are_made(monkeypatch) -> None:
    small = UniformBuffer(dict(replay_buffer_size=1000), seed=0)
    small.push(_atari(4))
    state = small.samples_state()
    monkeypatch.setattr(memory, "read_memory", lambda: Memory(total=ROW * 999, available=ROW * 999))
    with pytest.raises(ConfigError, match="replay_buffer_size=1000 .* at most 999"):
        UniformBuffer(dict(replay_buffer_size=1000), seed=0).load_samples_state(state)


def test_the_machine_reading_has_the_kernel_numbers() -> None:
    got = memory.read_memory()
    if got is None:
        pytest.skip("no /proc/meminfo")
    assert 0 < got.available <= got.total


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_cgroups_file_cache_is_not_taken_for_memory_in_use(tmp_path, monkeypatch, version) -> None:
    """A container of 8 GB whose usage (7.9 GB) is mostly the file cache of data it read (7 GB, reclaimed before
    anything is killed) has 7.1 GB available, not 0.1 GB: an ordinary buffer was warned of there."""
    (tmp_path / "meminfo").write_text(f"MemTotal: {16 * GB // 1024} kB\nMemAvailable: {12 * GB // 1024} kB\n"
                                      f"SwapTotal: 0 kB\n")
    if version == "v2":
        (tmp_path / "proc").write_text("0::/job\n")
        folder, names, cache = tmp_path / "job", ("memory.max", "memory.current"), "inactive_file"
    else:
        (tmp_path / "proc").write_text("4:memory:/job\n")
        folder = tmp_path / "memory" / "job"
        names, cache = ("memory.limit_in_bytes", "memory.usage_in_bytes"), "total_inactive_file"
    folder.mkdir(parents=True)
    (folder / names[0]).write_text(f"{8 * GB}\n")
    (folder / names[1]).write_text(f"{79 * GB // 10}\n")
    (folder / "memory.stat").write_text(f"anon {GB // 2}\n{cache} {7 * GB}\nactive_file {GB // 10}\n")
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "meminfo")
    monkeypatch.setattr(memory, "PROC_CGROUP", tmp_path / "proc")
    monkeypatch.setattr(memory, "CGROUP_ROOT", tmp_path)
    assert memory.read_memory() == Memory(total=8 * GB, available=8 * GB - 9 * GB // 10)
