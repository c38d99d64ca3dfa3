"""Checkpoint io (ding_lite/utils/checkpoint.py): atomic writes, weights-only loads, clear errors."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ding_lite.errors import CheckpointError
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint, resume_checkpoint, save_checkpoint

pytestmark = pytest.mark.unittest


class RunsCode:
    """Unpickling this with a full (not weights-only) load would create a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_save_then_load_round_trip_leaves_no_temp_files(tmp_path: Path) -> None:
    state = {"policy": {"model": {"w": torch.arange(3.0)}}, "train_iter": 5, "env_step": 40}
    path = save_checkpoint(tmp_path / "ckpt" / "iteration_5.pth.tar", state)
    loaded = load_checkpoint(path)
    assert loaded["train_iter"] == 5 and torch.equal(loaded["policy"]["model"]["w"], torch.arange(3.0))
    assert [p.name for p in (tmp_path / "ckpt").iterdir()] == ["iteration_5.pth.tar"]


def test_failed_write_keeps_the_old_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save_checkpoint(tmp_path / "c.pth.tar", {"policy": {}, "train_iter": 1})

    def crash_mid_write(obj, f, *args, **kwargs):
        f.write(b"partial bytes")
        raise KeyboardInterrupt  # e.g. Ctrl-C while torch.save is writing

    monkeypatch.setattr(torch, "save", crash_mid_write)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, {"policy": {}, "train_iter": 2})
    monkeypatch.undo()
    assert load_checkpoint(path)["train_iter"] == 1  # the target was never touched
    assert [p.name for p in tmp_path.iterdir()] == ["c.pth.tar"]  # the temp file was removed


def test_weights_only_load_refuses_pickled_objects(tmp_path: Path) -> None:
    marker = tmp_path / "code_ran"
    torch.save({"policy": {"model": RunsCode(marker)}}, tmp_path / "evil.pth.tar")
    with pytest.raises(CheckpointError, match=r"refused by torch.load\(weights_only=True\): Unsupported global"):
        load_checkpoint(tmp_path / "evil.pth.tar")
    assert not marker.exists()


@pytest.mark.parametrize("content,match", [
    (b"", "cannot read checkpoint"),
    (b"garbage bytes", "cannot read checkpoint"),
    # text files: torch's weights-only unpickler reads 'h' as a memo look-up (KeyError), 'a' as an append to an
    # empty stack (IndexError)
    (b"hello world\n", "cannot read checkpoint"),
    (b"a note, not a checkpoint\n", "cannot read checkpoint"),
    (b"K", "cannot read checkpoint"),  # struct.error: a 1-byte integer cut short
])
def test_unreadable_files(tmp_path: Path, content: bytes, match: str) -> None:
    (tmp_path / "x.pth.tar").write_bytes(content)
    with pytest.raises(CheckpointError, match=match) as info:
        load_checkpoint(tmp_path / "x.pth.tar")
    assert "\n" not in str(info.value) and "weights_only` set to `False`" not in str(info.value)


def test_missing_and_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "nope.pth.tar")
    torch.save([1, 2], tmp_path / "list.pth.tar")
    with pytest.raises(CheckpointError, match="not a ding_lite checkpoint \\(no 'policy' entry\\)"):
        load_checkpoint(tmp_path / "list.pth.tar")


def test_latest_checkpoint_by_iteration_number(tmp_path: Path) -> None:
    assert latest_checkpoint(tmp_path) is None
    for name in ("iteration_20.pth.tar", "iteration_100.pth.tar", "iteration_x.pth.tar", "ckpt_best.pth.tar",
                 ".iteration_200.pth.tar.abc.tmp"):
        (tmp_path / name).write_bytes(b"")
    assert latest_checkpoint(tmp_path) == tmp_path / "iteration_100.pth.tar"  # numeric, temp files ignored


def test_at_equal_iteration_the_iteration_checkpoint_is_newest(tmp_path: Path) -> None:
    # mutation audit: iteration_N (a periodic or final save) and resume_N at the same N: --resume takes iteration_N
    for name in ("resume_30.pth.tar", "iteration_30.pth.tar", "resume_20.pth.tar"):
        save_checkpoint(tmp_path / name, {"policy": {}, "name": name})
    assert latest_checkpoint(tmp_path) == tmp_path / "iteration_30.pth.tar"



def test_resume_goes_on_from_the_newest_checkpoint_that_loads(tmp_path: Path) -> None:
    # mutation audit: a newest checkpoint cut short is skipped (warned), not the end of --resume
    save_checkpoint(tmp_path / "iteration_10.pth.tar", {"policy": {}, "train_iter": 10})
    (tmp_path / "iteration_20.pth.tar").write_bytes(b"cut short")
    path, state = resume_checkpoint(tmp_path)
    assert path == tmp_path / "iteration_10.pth.tar" and state["train_iter"] == 10
