"""ding_lite/utils/atomic.py: a failed write keeps the previous file and leaves no temp file."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from ding_lite.errors import OutputError
from ding_lite.utils.atomic import atomic_write, check_writable, free_path

pytestmark = pytest.mark.unittest


def test_atomic_write_replaces_or_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.bin"
    atomic_write(target, lambda f: f.write(b"first"))
    assert target.read_bytes() == b"first"

    def fail(f) -> None:
        f.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, fail)
    assert target.read_bytes() == b"first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.bin"]  # no temp file left
    atomic_write(target, lambda f: f.write(b"second"))
    assert target.read_bytes() == b"second"


@pytest.mark.parametrize("overwrite", [True, False])
def test_the_folder_is_synced_after_the_file_moves_into_it(tmp_path: Path, monkeypatch, overwrite: bool) -> None:
    """The file's fsync makes its bytes durable, not its new name: the folder is synced after the rename, so a power
    loss after atomic_write returns cannot bring back the previous file."""
    synced: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        mode = os.fstat(fd).st_mode
        synced.append(("folder" if stat.S_ISDIR(mode) else "file", os.path.exists(tmp_path / "file.bin")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    atomic_write(tmp_path / "file.bin", lambda f: f.write(b"x"), overwrite=overwrite)
    assert synced == [("file", False), ("folder", True)]  # the file before its rename, the folder after it


def test_a_folder_that_cannot_be_synced_does_not_fail_the_write(tmp_path: Path, monkeypatch) -> None:
    real_fsync = os.fsync

    def no_folder_sync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", no_folder_sync)
    assert atomic_write(tmp_path / "f.bin", lambda f: f.write(b"y")).read_bytes() == b"y"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_uses_the_process_umask(tmp_path: Path, umask: int) -> None:
    # Checkpoints and result.json are files a user reads and shares: made as open() makes them, not 0600.
    old = os.umask(umask)
    try:
        target = atomic_write(tmp_path / f"f{umask}.json", lambda f: f.write(b"{}"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


class _FullDisk:
    """A file that takes ``room`` bytes, then refuses every write as a full disk does (ENOSPC)."""

    def __init__(self, f, room: int) -> None:
        self.f, self.room = f, room

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()


@pytest.mark.parametrize("writer", ["plain", "torch.save"])
def test_a_full_disk_names_the_file_keeps_the_old_one_and_leaves_no_temp_file(tmp_path: Path, writer: str) -> None:
    import torch

    target = tmp_path / "ckpt.pth.tar"
    target.write_bytes(b"previous")
    write = (lambda f: _FullDisk(f, 4).write(b"more than four bytes")) if writer == "plain" else \
        (lambda f: torch.save({"w": torch.zeros(1000)}, _FullDisk(f, 100)))  # torch's zip writer wraps the OSError
    with pytest.raises(OutputError, match=f"cannot write {target}: No space left on device") as info:
        atomic_write(target, write)
    assert info.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"previous" and sorted(os.listdir(tmp_path)) == ["ckpt.pth.tar"]


def test_check_writable_refuses_a_folder_and_a_path_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="it is a folder"):
        check_writable(tmp_path)
    with pytest.raises(OutputError, match="is not a folder"):
        check_writable(tmp_path / "file" / "demo.npz")
    check_writable(tmp_path / "new" / "deeper" / "demo.npz")  # folders that do not exist yet are made on write


def test_a_write_that_must_not_overwrite_takes_the_next_free_name(tmp_path: Path) -> None:
    """``overwrite=False``: an existing file is never replaced; the write goes to ``<stem>_<k><suffix>``, the first
    name free when the file is moved into place (as a run goes to ``<folder>_<k>``), and returns that path."""
    target = tmp_path / "demo.npz"
    assert free_path(target) == target
    assert atomic_write(target, lambda f: f.write(b"first"), overwrite=False) == target
    assert free_path(target) == tmp_path / "demo_1.npz"
    assert atomic_write(target, lambda f: f.write(b"second"), overwrite=False) == tmp_path / "demo_1.npz"
    (tmp_path / "demo_2.npz").mkdir()  # whatever holds the name: a folder too
    assert free_path(target) == tmp_path / "demo_3.npz"
    assert atomic_write(target, lambda f: f.write(b"third"), overwrite=False) == tmp_path / "demo_3.npz"
    assert target.read_bytes() == b"first" and (tmp_path / "demo_1.npz").read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.npz", "demo_1.npz", "demo_2.npz", "demo_3.npz"]


def test_without_hard_links_the_free_name_is_still_taken(tmp_path: Path, monkeypatch) -> None:
    """A file system that refuses link(2) (some network or FUSE mounts): the move checks, then renames."""
    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    target = tmp_path / "demo.npz"
    target.write_bytes(b"earlier")
    assert atomic_write(target, lambda f: f.write(b"new"), overwrite=False) == tmp_path / "demo_1.npz"
    assert target.read_bytes() == b"earlier" and (tmp_path / "demo_1.npz").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.npz", "demo_1.npz"]  # no temp file left
