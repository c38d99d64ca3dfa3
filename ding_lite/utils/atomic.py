"""Atomic file writes: a temp file in the target's folder, fsync, then rename over the target."""
from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ding_lite.errors import OutputError, output_error

# an atomic write's temp file is ``.<name>.<random>.tmp`` next to its target (hidden; one pattern for the writer and
# for remove_stale_temps)
_TEMP_SUFFIX = ".tmp"


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(f)`` on a temp file next to ``path``, then move it into place.

    A process killed mid-write leaves the previous file intact (or none), never a truncated one; the temp file
    (``.<name>.*.tmp``) is removed on any error. A write the system refuses (disk full, read-only folder) raises
    :class:`~ding_lite.errors.OutputError` naming ``path``.

    Example::

        atomic_write('result.json', lambda f: f.write(b'{}'))
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise output_error(exc, path) from exc
    try:
        # mkstemp creates the file 0600; the file a user gets is made as open() would: 0666 less the umask
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        refused = _refused_write(exc)
        if refused is not None:
            raise output_error(refused, path) from exc
        raise
    return path


def remove_stale_temps(folder: str | os.PathLike) -> list[Path]:
    """Delete the temp files (``.<name>.*.tmp``) that a process killed in the middle of :func:`atomic_write` left in
    ``folder`` and its subfolders; returns them. Only for a folder this process holds alone (a resumed run's, once
    claimed, before its parts start): there no other write can be under way."""
    stale = [p for p in Path(folder).rglob(f".*{_TEMP_SUFFIX}") if p.is_file()]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def check_writable(path: str | os.PathLike) -> None:
    """Raise :class:`~ding_lite.errors.OutputError` now if ``path`` cannot be written (it is a folder, or its nearest
    existing folder is not one or not writable), so that a long computation does not end in a refused write."""
    path = Path(path)
    folder = next((p for p in path.parents if p.exists()), Path("."))
    if path.is_dir():
        raise OutputError(errno.EISDIR, f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        raise OutputError(errno.ENOTDIR, f"cannot write {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(errno.EACCES, f"cannot write {path}: {folder} is not writable")


def _refused_write(exc: BaseException) -> OSError | None:
    """The system's refusal behind a failed write: the OSError itself, or the one inside the RuntimeError that
    torch.save's zip writer raises in its place."""
    if isinstance(exc, OSError):
        return exc
    inner = exc.__cause__ or exc.__context__
    return inner if isinstance(exc, RuntimeError) and isinstance(inner, OSError) else None


def _umask() -> int:
    """The process umask: from /proc where there is one (no change of process state, which threads share), else by
    setting it and straight back."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
