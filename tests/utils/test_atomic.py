"""ding_lite/utils/atomic.py: a failed write keeps the previous file and leaves no temp file."""
from __future__ import annotations

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
