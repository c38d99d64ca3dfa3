"""The replay buffer's samples next to the checkpoints that ``--resume`` starts from, so that a resumed off-policy run
trains on the buffer it had, not on a few fresh samples.

With every ``resume_N`` / ``iteration_N`` checkpoint the buffer's :meth:`samples_state` goes to the file
``ckpt/<checkpoint name>.buffer.pt`` (written atomically, before the checkpoint that names it), and the checkpoint
records it under ``replay_buffer``. The newest :data:`KEEP` of these files are kept. Buffers larger than their
``ckpt_max_mb`` (and buffers without ``samples_state``, e.g. a plugin's) are not saved: a run resumed from them
starts with an empty buffer, as it says in its log.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.data.buffer import CKPT_MAX_MB
from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.checkpoint import RESUME_PREFIXES, checkpoint_iteration, load_failure
from ding_lite.utils.run_folder import CKPT_SUFFIX

BUFFER_SUFFIX = ".buffer.pt"
KEEP = 2  # buffer files kept (each may be hundreds of MB); the resume checkpoints keep 2 too
ENTRY = "replay_buffer"  # the checkpoint entry that names the buffer file


class ReplayCheckpoints:
    """Saves ``buffer``'s samples with the resume checkpoints of ``ckpt_dir`` and restores them on a resume."""

    def __init__(self, buffer: Any, ckpt_dir: Path | None) -> None:
        self.buffer = buffer
        self.ckpt_dir = ckpt_dir
        # a plugin buffer joins by its samples_state / load_samples_state (and nbytes, ckpt_max_mb if it has them)
        self.limit_mb = float(getattr(buffer, "ckpt_max_mb", CKPT_MAX_MB)) if hasattr(buffer, "samples_state") else 0.0
        self._log: Callable[[str], None] = lambda message: None
        self._said_too_big = False

    def log_to(self, log: Callable[[str], None]) -> None:
        """Say through ``log`` from now on that the buffer is too large to save (once)."""
        self._log = log

    def state(self, name: str) -> dict[str, Any] | None:
        """The checkpoint entry for checkpoint ``name`` (what ``learner.save_with_checkpoints`` calls): writes the
        buffer file first, for the checkpoints a resume can start from."""
        if self.ckpt_dir is None or self.limit_mb <= 0 or not name.startswith(RESUME_PREFIXES):
            return None
        size_mb = getattr(self.buffer, "nbytes", 0) / 2**20
        if size_mb > self.limit_mb:
            if not self._said_too_big:
                self._said_too_big = True
                self._log(f"the replay buffer ({size_mb:,.0f} MB) is larger than policy.other.replay_buffer."
                         f"ckpt_max_mb={self.limit_mb:g}: it is not saved with the checkpoints, and a resumed run "
                         f"refills it from empty (raise ckpt_max_mb to save it)")
            return None
        import torch

        state = self.buffer.samples_state()
        path = atomic_write(self.ckpt_dir / f"{name}{BUFFER_SUFFIX}", lambda f: torch.save(state, f))
        self._prune(path)
        return {"file": path.name, "samples": int(state["size"])}

    def restore(self, entry: dict[str, Any] | None, ckpt: Path) -> str:
        """Load the buffer that checkpoint ``ckpt`` names in ``entry`` (its :data:`ENTRY`; a resume); returns what to
        log. A buffer file that is missing or unreadable leaves the buffer empty (the policy's state is whole
        without it)."""
        if not hasattr(self.buffer, "load_samples_state"):
            return f"replay buffer: {type(self.buffer).__name__} cannot be saved; it refills from empty"
        if not entry:
            return f"replay buffer: none saved with {ckpt.name}; it refills from empty"
        path = ckpt.parent / str(entry["file"])
        import torch

        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            self.buffer.load_samples_state(state)
        except Exception as exc:  # any: a damaged file makes torch.load raise whatever its bytes trigger
            self.buffer.clear()
            return f"replay buffer: cannot load {path} ({type(exc).__name__}: {load_failure(exc)}); " \
                   f"it refills from empty"
        return f"replay buffer: {len(self.buffer):,} samples from {path.name}"

    def _prune(self, newest: Path) -> None:
        """Keep the newest :data:`KEEP` buffer files whose checkpoint exists (or is ``newest``'s, written next);
        files of a later step than ``newest`` belong to a run's discarded future (it was resumed from earlier)."""
        assert self.ckpt_dir is not None
        mine = _step(newest)
        kept: list[tuple[int, Path]] = []
        for path in self.ckpt_dir.glob(f"*{BUFFER_SUFFIX}"):
            step = _step(path)
            if path == newest or (step is not None and mine is not None and step <= mine and
                                  _checkpoint_of(path).is_file()):
                kept.append((step if step is not None else -1, path))
            else:
                path.unlink(missing_ok=True)
        for _, path in sorted(kept, key=lambda item: item[0])[:-KEEP]:
            path.unlink(missing_ok=True)


def remove_buffer_files(ckpt_dir: Path) -> None:
    """Delete the buffer files of a run that no one will resume (a finished seed of a sweep trial)."""
    for path in ckpt_dir.glob(f"*{BUFFER_SUFFIX}"):
        path.unlink(missing_ok=True)


def _checkpoint_of(path: Path) -> Path:
    """The checkpoint that buffer file ``path`` goes with."""
    return path.with_name(path.name[:-len(BUFFER_SUFFIX)] + CKPT_SUFFIX)


def _step(path: Path) -> int | None:
    """N of the ``iteration_N`` / ``resume_N`` checkpoint that buffer file ``path`` goes with (None: another name)."""
    steps = (checkpoint_iteration(_checkpoint_of(path), prefix) for prefix in RESUME_PREFIXES)
    return next((n for n in steps if n is not None), None)
