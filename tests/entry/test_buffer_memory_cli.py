"""A replay buffer whose observations alone cannot fit in the machine's memory is one line, exit 2, before anything
is written (ding_lite/runtime/parts.py checks it when the buffer is built); it used to start, evaluate, write
ckpt_best and the logs, and fail only at the first push (or, under the machine's size, be killed once full)."""
from __future__ import annotations

import pytest
from conftest import DIZOO_CARTPOLE, run_cli

pytestmark = pytest.mark.unittest


def test_a_buffer_larger_than_any_machine_is_refused_before_anything_is_written(tmp_path) -> None:
    size = 10 ** 13  # CartPole's observations alone (16 bytes each): 160 TB; nothing is allocated
    proc = run_cli("-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "--exp-name", "big", "--max-env-step", "64",
                   "--no-progress", "--set", f"policy.other.replay_buffer.replay_buffer_size={size}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"replay_buffer_size={size} (its observations alone, 16 bytes each)" in lines[0]
    assert "160000.0 GB" in lines[0] and "lower replay_buffer_size to at most" in lines[0]
    assert list(tmp_path.iterdir()) == []
