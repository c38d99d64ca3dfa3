"""Atomic file writes: a temp file in the target's folder, fsync, then rename over the target (or, where an earlier
file must never be replaced, link it to the first free name), then fsync the folder so the new name is durable."""
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


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object], *, overwrite: bool = True) -> Path:
    """Call ``write(f)`` on a temp file next to ``path``, then move it into place; returns the path written.

    A process killed mid-write leaves the previous file intact (or none), never a truncated one; the temp file
    (``.<name>.*.tmp``) is removed on any error. A write the system refuses (disk full, read-only folder) raises
    :class:`~ding_lite.errors.OutputError` naming ``path``. ``overwrite=False``: an existing file is never replaced;
    the file goes to the first free name of :func:`free_path` at the moment it is moved into place (a hard link,
    which fails rather than replace: a file that appeared meanwhile is kept too), and that path is returned.

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
        if overwrite:
            os.replace(tmp, path)
        else:
            path = _move_to_free_name(tmp, path)
        _sync_folder(path.parent)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        refused = _refused_write(exc)
        if refused is not None:
            raise output_error(refused, path) from exc
        raise
    return path


def _sync_folder(folder: Path) -> None:
    """fsync ``folder`` so that a rename into it survives a power loss (the file's own fsync does not cover its new
    name); a file system or platform that cannot sync a folder is left as it is: the rename is still atomic."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # EINVAL / EBADF: folders cannot be synced here
        pass
    finally:
        os.close(fd)


def free_path(path: str | os.PathLike) -> Path:
    """``path`` if nothing is there, else the first free ``<stem>_<k><suffix>`` (k = 1, 2, ...): the name a file goes
    to so that an earlier one is never overwritten, as a run goes to ``<folder>_<k>`` (:mod:`ding_lite.utils.claim`).

    Example::

        free_path('demo.npz')  # demo.npz, or demo_1.npz if demo.npz exists, ...
    """
    path = Path(path)
    k = 0
    while True:
        candidate = _numbered(path, k)
        if not os.path.lexists(candidate):
            return candidate
        k += 1


def _numbered(path: Path, k: int) -> Path:
    """``path`` for k = 0, else ``<stem>_<k><suffix>``."""
    return path if k == 0 else path.with_name(f"{path.stem}_{k}{path.suffix}")


# link(2) refusals of a file system without hard links: there the move falls back to a check, then a rename
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK})


def _move_to_free_name(tmp: str, path: Path) -> Path:
    """Move the file ``tmp`` to the first free name of :func:`free_path`, and return it: a hard link is made only
    where no file is, so that two writers at once never replace each other's file."""
    k = 0
    while True:
        candidate = _numbered(path, k)
        try:
            os.link(tmp, candidate)
        except FileExistsError:
            k += 1
            continue
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            candidate = free_path(candidate)  # (no hard links here: a check, then a rename)
            os.replace(tmp, candidate)
            return candidate
        os.unlink(tmp)
        return candidate


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
