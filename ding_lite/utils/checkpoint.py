"""Checkpoint io: atomic writes, ``weights_only=True`` loads, clear errors."""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.errors import CheckpointError, first_line
from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.run_folder import CKPT_SUFFIX


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> Path:
    """Write ``state`` to ``path`` atomically: a temp file in the same folder, fsync, then rename over the target.

    A run killed mid-write leaves the previous checkpoint intact, never a truncated file.
    """
    import torch

    return atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True``; a missing or unreadable file raises :class:`CheckpointError`."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # any: garbage bytes make torch's weights-only unpickler raise whatever they trigger
        # (a text file: KeyError, IndexError, struct.error...); each is a checkpoint that cannot be read
        reason = load_failure(exc)
        if isinstance(exc, LookupError):  # KeyError / IndexError: the message alone is a bare key ('101')
            reason = f"{type(exc).__name__} {reason}"
        raise CheckpointError(f"cannot read checkpoint {path}: {reason} (is it a complete ding_lite "
                              f"checkpoint?)") from exc
    if not isinstance(state, dict) or "policy" not in state:
        raise CheckpointError(f"checkpoint {path} is not a ding_lite checkpoint (no 'policy' entry)")
    return state


def load_failure(exc: BaseException) -> str:
    """The reason of a failed ``torch.load`` in one short line.

    torch's weights-only refusal is a paragraph that suggests ``weights_only=False``; ding_lite never loads that
    way (a checkpoint could run code), so only the unpickler's own reason is kept.
    """
    text = str(exc).strip()
    marker = "WeightsUnpickler error:"
    if marker in text:
        reason = text.split(marker, 1)[1].strip().splitlines()[0].split(". ")[0].rstrip(".")
        return f"refused by torch.load(weights_only=True): {reason}"
    first = text.splitlines()[0].split(". ")[0].rstrip(".") if text else ""
    return first or type(exc).__name__


ITERATION_PREFIX = "iteration_"  # iteration_N.pth.tar: the periodic and final checkpoints
RESUME_PREFIX = "resume_"  # resume_N.pth.tar: the rotating resume checkpoints
RESUME_PREFIXES = (ITERATION_PREFIX, RESUME_PREFIX)  # what --resume reads


def checkpoint_iteration(path: Path, prefix: str) -> int | None:
    """N of ``<prefix>N.pth.tar`` (None for another name)."""
    name = path.name
    if not (name.startswith(prefix) and name.endswith(CKPT_SUFFIX)):
        return None
    try:
        return int(name[len(prefix):-len(CKPT_SUFFIX)])
    except ValueError:
        return None


def latest_checkpoint(ckpt_dir: str | os.PathLike) -> Path | None:
    """The ``iteration_N.pth.tar`` or ``resume_N.pth.tar`` with the largest N in ``ckpt_dir`` (None if there is
    none; at equal N the ``iteration_`` one)."""
    newest = _newest_first(ckpt_dir)
    return newest[0] if newest else None


def resume_checkpoint(ckpt_dir: str | os.PathLike) -> tuple[Path, dict[str, Any]] | None:
    """The checkpoint ``--resume`` goes on from, and its contents: the newest ``iteration_N`` / ``resume_N`` of
    ``ckpt_dir`` that loads (None if there is none). One that does not (a disk error, a copy cut short) is skipped
    with a warning naming it, so that the run goes on from the one before; none readable is the newest one's error."""
    first_error: CheckpointError | None = None
    for path in _newest_first(ckpt_dir):
        try:
            state = load_checkpoint(path)
        except CheckpointError as exc:
            first_error = first_error or exc
            setup_console_logging().warning("warning: --resume skips %s: %s", path, exc)
            continue
        return path, state
    if first_error is not None:
        raise first_error
    return None


def _newest_first(ckpt_dir: str | os.PathLike) -> list[Path]:
    """Every ``iteration_N.pth.tar`` and ``resume_N.pth.tar`` in ``ckpt_dir``, newest (largest N) first; at equal N
    the ``iteration_`` one first."""
    found: list[tuple[int, int, Path]] = []
    for rank, prefix in enumerate(RESUME_PREFIXES):
        for p in Path(ckpt_dir).glob(f"{prefix}*{CKPT_SUFFIX}"):
            n = checkpoint_iteration(p, prefix)
            if n is not None:
                found.append((n, -rank, p))
    return [p for _, _, p in sorted(found, key=lambda item: (item[0], item[1]), reverse=True)]


def load_policy_weights(mode: Any, path: str | os.PathLike, state: dict[str, Any] | None = None, *,
                        model_only: bool = False) -> dict[str, Any]:
    """Load checkpoint ``path`` (``state``: its contents, if already loaded) into a policy mode (``learn_mode``,
    ``collect_mode`` or ``eval_mode``); returns the checkpoint. ``model_only``: only the network's weights (another
    policy type's checkpoint, e.g. GSL's PPO generalist evaluated as PPO-DAPG).

    A checkpoint that does not fit is a :class:`CheckpointError` naming the file, the policy that wrote it and what
    does not fit (entries missing, or tensors whose shapes differ, with both shapes); one whose weights (or optimiser
    state) hold NaN or inf, one naming the file and the first such tensor."""
    state = load_checkpoint(path) if state is None else state
    given = {"model": state["policy"]["model"]} if model_only else state["policy"]
    # weights of a diverged run (an older ding_lite saved them; it now checks before writing) would play on in
    # silence: DQN's argmax over NaN values is action 0
    bad = first_non_finite(given, "policy")
    if bad is not None:
        raise CheckpointError(f"{path}: its {bad[0]} holds {bad[1]} (the weights of a run that diverged): it cannot "
                              f"be evaluated or trained on; use an earlier checkpoint of that run")
    try:
        mode.load_state_dict(given)
    except (CheckpointError, RuntimeError, KeyError) as exc:
        # CheckpointError: the base Policy's loaders; torch's RuntimeError / a KeyError: a policy's own
        # _load_state_dict_learn (DI-engine's style, load_state_dict on each entry), whose message is torch's
        why = str(exc) if isinstance(exc, CheckpointError) else _entries_mismatch(mode.state_dict(), given) or \
            f"it does not fit this policy: {type(exc).__name__}: {first_line(exc)}"
        writer = state.get("policy_type")
        raise CheckpointError(f"{path}{f' (a {writer!r} checkpoint)' if writer else ''}: {why}") from exc
    return state


def _entries_mismatch(expected: dict[str, Any], given: dict[str, Any]) -> str:
    """What keeps the entries of ``given`` (a checkpoint's ``policy`` part) from loading where ``expected`` (the
    mode's own ``state_dict()``) is, in one line; empty if nothing is found."""
    missing = sorted(name for name in expected if name not in given)
    if missing:
        return f"the checkpoint lacks {missing} needed by this policy"
    for name, entry in expected.items():
        why = state_mismatch(entry, given[name])
        if why:
            return f"checkpoint entry '{name}' does not fit this policy: {why}"
    return ""


def state_mismatch(expected: Any, given: Any, shown: int = 3) -> str:
    """What keeps state dict ``given`` from loading where ``expected`` is (both flat ``name -> tensor`` maps), in
    one line: tensors whose shapes differ (the checkpoint's shape, then this policy's), keys missing, keys
    unexpected; at most ``shown`` of each. Empty if the keys and shapes agree."""
    if not (isinstance(expected, dict) and isinstance(given, dict)):
        return ""
    shapes = [f"{k} {_shape(given[k])} in the checkpoint, {_shape(v)} here" for k, v in expected.items()
              if k in given and _shape(given[k]) != _shape(v)]
    missing = [k for k in expected if k not in given]
    unexpected = [k for k in given if k not in expected]
    parts = [f"{what} {_first(items, shown)}" for what, items in (("shape mismatch:", shapes), ("missing:", missing),
                                                                   ("unexpected:", unexpected)) if items]
    return "; ".join(parts)


def _shape(value: Any) -> list[int] | None:
    shape = getattr(value, "shape", None)
    return list(shape) if shape is not None else None


def _first(items: list[str], shown: int) -> str:
    more = f" (+{len(items) - shown} more)" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def first_non_finite(state: Any, path: str = "") -> tuple[str, str] | None:
    """(dotted path, 'NaN' or 'inf') of the first floating-point tensor in ``state`` (nested dicts, lists) holding
    NaN or inf; None if there is none. One read-back per device, not one per tensor."""
    import torch

    tensors: list[tuple[str, Any]] = []

    def walk(obj: Any, at: str) -> None:
        if isinstance(obj, torch.Tensor):
            if obj.is_floating_point():
                tensors.append((at, obj))
        elif isinstance(obj, Mapping):
            for key, value in obj.items():
                walk(value, f"{at}.{key}" if at else str(key))
        elif isinstance(obj, (list, tuple)):
            for i, value in enumerate(obj):
                walk(value, f"{at}[{i}]")

    walk(state, path)
    finite: dict[int, bool] = {}
    for device in {t.device for _, t in tensors}:
        on_it = [i for i, (_, t) in enumerate(tensors) if t.device == device]
        flags = torch.stack([torch.isfinite(tensors[i][1]).all() for i in on_it]).cpu()
        finite.update(zip(on_it, flags.tolist(), strict=True))
    for i, (at, tensor) in enumerate(tensors):
        if not finite[i]:
            return at, "NaN" if bool(torch.isnan(tensor).any()) else "inf"
    return None
