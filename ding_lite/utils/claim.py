"""One run per experiment folder: a folder is claimed atomically and locked while its run goes on.

A run takes its folder by creating it (or finding it empty) and holding an exclusive ``flock`` on
``<folder>/.ding_lite.lock``; the system drops the lock when the process ends, however it ends, so a killed run
never blocks the next one. Two runs started together with the same name therefore never share a folder: the second
takes the next free ``<name>_<k>``, and a second ``--resume`` of a folder still in use is refused.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from ding_lite.errors import ConfigError, OutputError, output_error

LOCK_NAME = ".ding_lite.lock"


class FolderClaim:
    """A run's hold on its experiment folder ``path``, until :meth:`release`.

    ``created``: the folders this claim made (the experiment folder and any missing parents, outermost first);
    ``skipped``: why the folders tried before ``path`` were not taken (empty for a resume or the first name)."""

    def __init__(self, path: Path, fd: int, created: list[Path], skipped: str = "") -> None:
        self.path = path
        self.created = created
        self.skipped = skipped
        self._fd: int | None = fd

    def check(self) -> None:
        """Raise :class:`OutputError` if the folder was removed or moved since it was claimed (its lock file is not
        the one this claim holds): the run's open files would go on into deleted files (or the moved folder), and
        its next checkpoint would make a new, partial folder under the old name. One ``stat``: cheap enough for
        every evaluation and checkpoint."""
        if self._fd is None:
            return
        held = os.fstat(self._fd)
        try:
            here = os.stat(self.path / LOCK_NAME)
            if (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino):
                return
        except OSError:
            pass
        raise OutputError(errno.ENOENT, f"the experiment folder {self.path} was removed or moved while its run was "
                          f"going (its {LOCK_NAME} is gone): the run stops, as nothing it writes would be kept; a "
                          f"moved folder goes on with --resume --exp-name <its new path>")

    def release(self, *, failed: bool = False) -> None:
        """Drop the lock (idempotent). ``failed``: the run ended by an error; folders this claim created are removed
        again where they hold nothing, so that a run refused before it wrote anything leaves no trace."""
        if self._fd is None:
            return
        # still locked: no other run holds this file (in a folder made read-only since, it stays, claiming nothing)
        with contextlib.suppress(OSError):
            (self.path / LOCK_NAME).unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None
        if failed:
            for folder in reversed(self.created):
                try:
                    folder.rmdir()  # only if empty: whatever a run wrote stays
                except OSError:
                    break


def claim_new(path: Path) -> FolderClaim:
    """Claim ``path`` if it is absent or empty and not in use, else the first such ``<path>_<k>`` (an earlier run is
    never written into, a running one never shared). A ``..`` in ``path`` is resolved by name first (``a/../b`` is
    ``b``, see :func:`normal_path`): no folder is made only to be passed through, and left behind."""
    path = normal_path(path)
    k = 0
    skipped = ""
    while True:
        candidate = path if k == 0 else path.with_name(f"{path.name}_{k}")
        created = _make_folders(candidate)
        if created is not None:
            try:
                fd = _try_lock(candidate)
            except FileNotFoundError:
                continue  # removed by a run that failed right then: make it again
            if fd is not None:
                if not _holds_a_run(candidate):
                    return FolderClaim(candidate, fd, created, skipped)
                FolderClaim(candidate, fd, []).release()
                skipped = skipped or "holds an earlier run"
            else:
                skipped = skipped or "is in use by another run"
        else:
            skipped = skipped or "is not a folder"
        k += 1


def normal_path(path: str | Path) -> Path:
    """``path`` with a leading ``~`` expanded (the home folder: a config's ``exp_name`` or ``--exp-name=~/x`` reaches
    here unexpanded by the shell, and a folder named ``~`` is a trap for ``rm -rf ~``) and its ``..`` parts resolved
    by name (``os.path.normpath``: ``a/../../b`` is ``../b``), as the shell's ``cd`` reads them, so that ``a`` need
    not exist; other paths are unchanged."""
    return Path(os.path.normpath(os.path.expanduser(path)))


def claim_existing(path: Path) -> FolderClaim:
    """Claim the existing folder ``path`` to continue its run (``--resume``); a run still using it is a
    :class:`ConfigError`."""
    fd = _try_lock(path)
    if fd is None:
        raise ConfigError(f"--resume: {path} is in use by a run that is still going (it holds {path / LOCK_NAME}): "
                          f"wait for it to end, or stop it first")
    return FolderClaim(path, fd, [])


def _make_folders(folder: Path) -> list[Path] | None:
    """Create ``folder`` and its missing parents; the ones created here, outermost first (None: a file is there)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    try:
        for p in missing:
            p.mkdir(exist_ok=True)
    except FileExistsError:
        return None  # a file of that name
    except OSError as exc:
        raise output_error(exc, folder) from exc
    return missing if folder.is_dir() else None


def _try_lock(folder: Path) -> int | None:
    """An open descriptor holding the folder's lock, or None if another process holds it."""
    lock = folder / LOCK_NAME
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            raise  # the folder is gone (a failed run removed it): the caller decides
        except OSError as exc:
            raise output_error(exc, lock) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # the last holder unlinks the file before it unlocks: a lock on an unlinked file guards nothing, open again
        try:
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _holds_a_run(folder: Path) -> bool:
    return any(p.name != LOCK_NAME for p in folder.iterdir())
