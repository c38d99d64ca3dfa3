"""The machine's memory as a run reads it once at its start: how much there is at all (RAM and swap, or a cgroup's
limit, as a batch scheduler sets it) and how much is available now. Used to refuse a replay buffer that cannot fit,
before numpy's lazy allocation lets it grow until the OOM killer ends the run hours in."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ding_lite.errors import ConfigError

logger = logging.getLogger("ding_lite")

GB = 1e9
MEMINFO = Path("/proc/meminfo")  # (module constants: tests point them at a made-up machine and cgroup)
PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Memory:
    """Bytes: ``total`` (RAM and swap, or the cgroup's limit if lower), ``available`` (what can be used now without
    swapping or taking it from other processes: the kernel's MemAvailable, or the cgroup's room if lower)."""

    total: int
    available: int


def read_memory() -> Memory | None:
    """The memory of this machine (Linux's ``/proc/meminfo`` and the process's cgroup); None where it cannot be
    read (another OS): then nothing is checked."""
    try:
        info = {}
        for line in MEMINFO.read_text().splitlines():
            name, _, value = line.partition(":")
            info[name] = int(value.split()[0]) * 1024  # kB
        total = info["MemTotal"] + info.get("SwapTotal", 0)
        available = info["MemAvailable"]
    except (OSError, KeyError, ValueError, IndexError):
        return None
    limit, used = _cgroup_limit()
    if limit is not None:
        total = min(total, limit)
        available = min(available, max(limit - (used or 0), 0))
    return Memory(total, available)


def _cgroup_limit() -> tuple[int | None, int | None]:
    """The process's cgroup memory limit and usage in bytes (v2 ``memory.max``, v1 ``memory.limit_in_bytes``);
    (None, None) where there is none (an unlimited cgroup reads as a huge number, which ``min`` leaves out). The
    usage leaves out the inactive file cache (``memory.stat``), which the kernel reclaims before it kills anything:
    the cgroup's raw usage counts every file read or written, so a container that had read its data sets read as
    full, and an ordinary buffer was warned of (``docker stats`` leaves it out too)."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2
            names, cache, roots = ("memory.max", "memory.current"), "inactive_file", [
                CGROUP_ROOT / path.lstrip("/"), CGROUP_ROOT]
        elif "memory" in controllers.split(","):  # v1
            names, cache, roots = ("memory.limit_in_bytes", "memory.usage_in_bytes"), "total_inactive_file", [
                CGROUP_ROOT / "memory" / path.lstrip("/"), CGROUP_ROOT / "memory"]
        else:
            continue
        for root in roots:  # inside a container the host's path may not exist: its own root is the cgroup
            try:
                limit_text = (root / names[0]).read_text().strip()
            except OSError:
                continue
            if limit_text == "max":
                return None, None
            try:
                used: int | None = max(int((root / names[1]).read_text().strip()) - _stat(root, cache), 0)
            except (OSError, ValueError):
                used = None
            try:
                return int(limit_text), used
            except ValueError:
                return None, None
    return None, None


def _stat(root: Path, name: str) -> int:
    """The entry ``name`` of the cgroup's ``memory.stat`` (bytes), 0 where it cannot be read."""
    try:
        for line in (root / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def check_fits(need: int, what: str, fix: Callable[[int], str], memory: Memory | None = None, *,
               warn: bool = True) -> None:
    """``need`` bytes of ``what`` (e.g. a replay buffer once full): a :class:`ConfigError` where they exceed the
    machine's memory and swap (or cgroup limit), a ``warning:`` where they exceed what is available now (the run would
    swap, or need memory other processes hold). ``fix(room)`` says what to change: e.g. the config key and its
    largest value whose ``what`` fits in ``room`` bytes. ``warn=False``: only the refusal (for a lower bound of the
    need, checked again once the full need is known)."""
    memory = memory if memory is not None else read_memory()
    if memory is None or need <= memory.available:
        return
    if need > memory.total:
        raise ConfigError(f"{what} needs {need / GB:.1f} GB, more than this machine's {memory.total / GB:.1f} GB of "
                          f"memory and swap: {fix(memory.total)}")
    if not warn:
        return
    logger.warning("warning: %s needs %.1f GB, more than the %.1f GB of memory available now (it would swap, or "
                   "need memory other processes hold, and may be killed for it once full): %s", what, need / GB,
                   memory.available / GB, fix(memory.available))
