"""ding_lite/utils/atomic.py: a failed write keeps the previous file and leaves no temp file."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ding_lite.utils.atomic import atomic_write

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


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_uses_the_process_umask(tmp_path: Path, umask: int) -> None:
    # Checkpoints and result.json are files a user reads and shares: made as open() makes them, not 0600.
    old = os.umask(umask)
    try:
        target = atomic_write(tmp_path / f"f{umask}.json", lambda f: f.write(b"{}"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
