"""Atomic file writes: a temp file in the target's folder, fsync, then rename over the target."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(f)`` on a temp file next to ``path``, then move it into place.

    A process killed mid-write leaves the previous file intact (or none), never a truncated one; the temp file
    (``.<name>.*.tmp``) is removed on any error.

    Example::

        atomic_write('result.json', lambda f: f.write(b'{}'))
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
