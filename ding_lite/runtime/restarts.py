"""The env worker restarts of a whole run, across ``--resume``: every checkpoint keeps the count per env manager so
far (its entry ``env_restarts``), and a resumed run counts on from it, so that ``env/restarts`` in tensorboard and
``env_restarts`` / ``env_restart_rate`` in ``result.json`` are those of the run, not of its last segment (whose env
managers, in this process or in Ray actors, start counting at 0)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ENTRY = "env_restarts"  # the checkpoint entry: {env manager ('collector', 'evaluator'): restarts before it}


class RunRestarts:
    """Env worker restarts per env manager: those of the segments before this one (a resume's checkpoint) plus
    ``current()``'s (this segment's, e.g. ``parts.env_restarts``)."""

    def __init__(self, current: Callable[[], Mapping[str, int]]) -> None:
        self._current = current
        self._before: dict[str, int] = {}

    def continue_from(self, saved: Mapping[str, Any] | None) -> None:
        """Count on from a checkpoint's entry (None: a checkpoint written before it existed, counted as 0)."""
        self._before = {str(k): int(v) for k, v in (saved or {}).items()}

    def per_manager(self) -> dict[str, int]:
        now = dict(self._current())
        return {k: self._before.get(k, 0) + int(now.get(k, 0)) for k in {**self._before, **now}}

    def total(self) -> int:
        return sum(self.per_manager().values())

    def state(self, name: str = "") -> dict[str, int]:
        """The checkpoint entry (``learner.save_with_checkpoints`` calls it with the checkpoint's name)."""
        return self.per_manager()

    def result(self, env_step: int) -> dict[str, Any]:
        """``env_restarts`` and ``env_restart_rate`` (per 1000 env steps) of ``result.json``."""
        return {"env_restarts": self.total(), "env_restart_rate": per_1k(self.total(), env_step)}


def per_1k(count: int, env_step: int) -> float:
    """``count`` per 1000 collected env steps (the failure rate of env workers that tensorboard and result.json
    report next to the count)."""
    return round(1000 * count / max(env_step, 1), 4)
