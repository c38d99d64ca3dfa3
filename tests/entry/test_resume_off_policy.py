"""--resume of a SAC run: the policy's learn state (networks, target critics, optimisers, temperature, update count)
and the replay buffer (its samples are saved next to the resume checkpoints) come back, so the resumed run trains on
as many samples as the killed one had; learning starts are not repeated. A buffer that was not saved (too large for
ckpt_max_mb, or its file is gone or broken) leaves the buffer empty: updates wait until it holds a batch again."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import DIZOO_PENDULUM, REPO_ROOT, run_cli

from ding_lite.runtime.replay_ckpt import BUFFER_SUFFIX
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint

pytestmark = pytest.mark.unittest

SAC = str(DIZOO_PENDULUM / "pendulum_sac_config.py")
SETTINGS = ["--set", "policy.learning_starts=400", "--set", "policy.learn.batch_size=64",
            "--set", "policy.eval.final_episodes=0", "--set", "policy.eval.evaluator.eval_freq=100000",
            "--exp-name", "exp", "--no-progress"]
FIRST_ITERS = 600 - 400 + 8  # 8 updates per collect of 8 from the collect that reaches env step 400


def _first_run(tmp_path: Path, *extra: str) -> dict:
    first = run_cli("-m", "serial", "-c", SAC, "--max-env-step", "600", *SETTINGS, *extra, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    state = load_checkpoint(latest_checkpoint(tmp_path / "exp" / "ckpt"))
    assert state["env_step"] == 600 and state["train_iter"] == FIRST_ITERS
    return state


def _resume(tmp_path: Path, *extra: str) -> tuple[dict, str]:
    resumed = run_cli("-m", "serial", "-c", SAC, "--max-env-step", "1000", "--resume", *SETTINGS, *extra,
                      cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    return json.loads((tmp_path / "exp" / "result.json").read_text()), resumed.stdout + resumed.stderr


def test_a_resumed_sac_run_keeps_its_learn_state_and_its_buffer(tmp_path: Path) -> None:
    state = _first_run(tmp_path)
    assert {"target_critic", "temperature", "optimizer_actor", "optimizer_critic", "train_steps"} <= set(
        state["policy"])
    assert state["policy"]["train_steps"]["count"] == state["train_iter"]
    assert torch.is_tensor(state["policy"]["temperature"]["log_alpha"])
    assert state["replay_buffer"] == {"file": f"iteration_{FIRST_ITERS}{BUFFER_SUFFIX}", "samples": 600}
    saved = torch.load(tmp_path / "exp" / "ckpt" / state["replay_buffer"]["file"], weights_only=True)
    assert saved["size"] == 600 and saved["data"]["obs"].shape == (600, 3)

    result, out = _resume(tmp_path)
    assert "replay buffer: 600 samples from" in out
    # the buffer holds 600 samples: every collect of the resumed run updates 8 times, as the killed run's did
    assert result["env_step"] == 1000 and result["train_iter"] == FIRST_ITERS + (1000 - 600) // 8 * 8
    assert result["buffer_size"] == 1000
    # the newest two buffer files are kept, each next to its checkpoint
    files = sorted(p.name for p in (tmp_path / "exp" / "ckpt").glob(f"*{BUFFER_SUFFIX}"))
    assert files == [f"iteration_{FIRST_ITERS}{BUFFER_SUFFIX}", f"iteration_{result['train_iter']}{BUFFER_SUFFIX}"]


def test_a_run_that_ends_before_its_first_update_is_resumed_with_its_env_steps_and_buffer(tmp_path: Path) -> None:
    """Before, the final checkpoint needed an update: ACER on CartPole with 256 env steps (8 sequences in the buffer,
    a batch is 16) wrote no iteration_N, and --resume was refused: 'no iteration_N.pth.tar or resume_N.pth.tar
    checkpoint ... (the run stopped before its first one)'. Now it writes iteration_0 at its env step, its buffer
    beside it, and the resumed run continues from there."""
    acer = str(REPO_ROOT / "dizoo/classic_control/cartpole/config/cartpole_acer_config.py")
    settings = ["--exp-name", "exp", "--no-progress", "--set", "policy.eval.final_episodes=0"]
    first = run_cli("-m", "serial", "-c", acer, "--max-env-step", "256", *settings, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    state = load_checkpoint(tmp_path / "exp" / "ckpt" / "iteration_0.pth.tar")
    assert (state["train_iter"], state["env_step"]) == (0, 256)
    assert state["replay_buffer"] == {"file": f"iteration_0{BUFFER_SUFFIX}", "samples": 8}
    resumed = run_cli("-m", "serial", "-c", acer, "--max-env-step", "768", "--resume", *settings, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "replay buffer: 8 samples from" in resumed.stdout + resumed.stderr
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["segments"] == 2 and result["resumed_from"][0]["env_step"] == 256
    assert result["env_step"] == 768 and result["train_iter"] > 0


def _refills(result: dict) -> None:
    # 8 env steps per collect: the emptied buffer holds a batch of 64 again after 8 collects (env step 664); from that
    # collect on, 8 updates each up to env step 1000: (1000 - 664) / 8 + 1 = 43 collects
    assert result["env_step"] == 1000 and result["train_iter"] == FIRST_ITERS + 43 * 8


def test_a_buffer_over_its_size_limit_is_not_saved_and_refills(tmp_path: Path) -> None:
    first = run_cli("-m", "serial", "-c", SAC, "--max-env-step", "600", *SETTINGS,
                    "--set", "policy.other.replay_buffer.ckpt_max_mb=0.001", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "is larger than policy.other.replay_buffer.ckpt_max_mb=0.001" in first.stdout + first.stderr
    assert not list((tmp_path / "exp" / "ckpt").glob(f"*{BUFFER_SUFFIX}"))
    result, out = _resume(tmp_path)
    assert "replay buffer: none saved with" in out
    _refills(result)


def test_a_broken_buffer_file_is_named_and_the_run_goes_on_with_an_empty_buffer(tmp_path: Path) -> None:
    state = _first_run(tmp_path)
    (tmp_path / "exp" / "ckpt" / state["replay_buffer"]["file"]).write_bytes(b"not a buffer")
    result, out = _resume(tmp_path)
    assert f"cannot load {Path('exp') / 'ckpt' / state['replay_buffer']['file']}" in out
    _refills(result)


def test_buffer_files_kept_are_the_newest_two_of_this_timeline(tmp_path: Path) -> None:
    """After a write: files of a later step than the new one (a killed run's future, discarded by its resume) and
    files whose checkpoint is gone go; of the rest, the newest two stay."""
    import numpy as np

    from ding_lite.data import UniformBuffer
    from ding_lite.runtime.replay_ckpt import ReplayCheckpoints

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for name in ("iteration_100", "resume_150", "iteration_200"):
        (ckpt / f"{name}.pth.tar").write_bytes(b"ckpt")
        (ckpt / f"{name}{BUFFER_SUFFIX}").write_bytes(b"samples")
    (ckpt / f"resume_120{BUFFER_SUFFIX}").write_bytes(b"its checkpoint was rotated out")
    (ckpt / f"resume_400{BUFFER_SUFFIX}").write_bytes(b"the killed run's future")
    # its checkpoint too, cut short (--resume skipped it): the buffer file goes all the same (mutation audit)
    (ckpt / "resume_400.pth.tar").write_bytes(b"cut short")
    buffer = UniformBuffer(dict(replay_buffer_size=10))
    buffer.push({"obs": np.zeros((4, 2), np.float32)})
    entry = ReplayCheckpoints(buffer, ckpt).state("resume_300")
    assert entry == {"file": f"resume_300{BUFFER_SUFFIX}", "samples": 4}
    assert sorted(p.name for p in ckpt.glob(f"*{BUFFER_SUFFIX}")) == [f"iteration_200{BUFFER_SUFFIX}",
                                                                     f"resume_300{BUFFER_SUFFIX}"]
    assert ReplayCheckpoints(buffer, ckpt).state("ckpt_best") is None  # evaluation checkpoints carry no buffer


def test_a_plugin_buffer_joins_by_samples_state_and_one_without_it_refills(tmp_path: Path) -> None:
    from ding_lite.runtime.replay_ckpt import ReplayCheckpoints

    class Saves:  # samples_state / load_samples_state only: no nbytes, no ckpt_max_mb
        def __init__(self) -> None:
            self.rows = [1, 2, 3]

        def samples_state(self) -> dict:
            return {"size": len(self.rows), "rows": torch.tensor(self.rows)}

        def load_samples_state(self, state: dict) -> None:
            self.rows = state["rows"].tolist()

        def __len__(self) -> int:
            return len(self.rows)

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    entry = ReplayCheckpoints(Saves(), ckpt).state("resume_5")
    assert entry == {"file": f"resume_5{BUFFER_SUFFIX}", "samples": 3}
    restored = Saves()
    restored.rows = []
    assert ReplayCheckpoints(restored, ckpt).restore(entry, ckpt / "resume_5.pth.tar") == \
        f"replay buffer: 3 samples from resume_5{BUFFER_SUFFIX}"
    assert restored.rows == [1, 2, 3]

    class Plain:  # no samples_state: never saved
        pass

    assert ReplayCheckpoints(Plain(), ckpt).state("resume_6") is None
    assert "Plain cannot be saved; it refills from empty" in ReplayCheckpoints(Plain(), ckpt).restore(
        entry, ckpt / "resume_5.pth.tar")


def test_a_resume_with_another_buffer_size_says_so_and_refills(tmp_path: Path) -> None:
    _first_run(tmp_path)
    result, out = _resume(tmp_path, "--set", "policy.other.replay_buffer.replay_buffer_size=5000")
    assert "the saved replay buffer holds up to 100000 samples, this one 5000" in out
    assert "it refills from empty" in out
    _refills(result)


def test_a_truncated_buffer_file_is_named_with_a_whole_reason(tmp_path: Path) -> None:
    """A buffer file cut short (a copy, a full disk) leaves the buffer empty, and the line says why in words that end:
    before, torch's paragraph was cut at 200 characters ('... your checkpoint file is)')."""
    import numpy as np

    from ding_lite.data import UniformBuffer
    from ding_lite.runtime.replay_ckpt import ReplayCheckpoints

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    buffer = UniformBuffer(dict(replay_buffer_size=10))
    buffer.push({"obs": np.zeros((4, 2), np.float32)})
    entry = ReplayCheckpoints(buffer, ckpt).state("iteration_3")
    path = ckpt / entry["file"]
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    line = ReplayCheckpoints(buffer, ckpt).restore(entry, ckpt / "iteration_3.pth.tar")
    assert len(buffer) == 0
    assert "failed finding central directory); it refills from empty" in line, line
    assert "likelihood" not in line, line


def test_a_buffer_file_replaced_by_text_refills_instead_of_a_traceback(tmp_path: Path) -> None:
    """A text file where the buffer file was (an editor, a wrong copy): torch's weights-only unpickler raises
    IndexError or KeyError for such bytes, which the restore let through as a traceback."""
    import numpy as np

    from ding_lite.data import UniformBuffer
    from ding_lite.runtime.replay_ckpt import ReplayCheckpoints

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    buffer = UniformBuffer(dict(replay_buffer_size=10))
    buffer.push({"obs": np.zeros((4, 2), np.float32)})
    entry = ReplayCheckpoints(buffer, ckpt).state("iteration_3")
    for text in (b"a note\n", b"hello\n"):  # IndexError, KeyError
        (ckpt / entry["file"]).write_bytes(text)
        line = ReplayCheckpoints(buffer, ckpt).restore(entry, ckpt / "iteration_3.pth.tar")
        assert len(buffer) == 0 and "it refills from empty" in line, line
