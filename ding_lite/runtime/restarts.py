"""Counts of a whole run across ``--resume``: every checkpoint keeps the counts so far (one entry per counter set),
and a resumed run counts on from them, so that tensorboard and ``result.json`` report the run, not its last segment
(whose env managers, Ray actors and driver-side stand-ins start counting at 0).

Two counter sets use it: the env worker restarts per env manager (:class:`RunRestarts`, entry ``env_restarts``,
wired by the train loop) and the parallel pipeline's actor restarts, batches and broadcasts (entry
``parallel_counts``, :class:`~ding_lite.distributed.collection.RayCollection`). A pipeline's parts name theirs in
``run_counts()``; the train loop saves each with every learner checkpoint and restores it on resume."""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

ENTRY = "env_restarts"  # the checkpoint entry: {env manager ('collector', 'evaluator'): restarts before it}

Number = int | float


class RunCounts:
    """Named counts of a whole run: those of the segments before this one (a resume's checkpoint) plus
    ``current()``'s (this segment's); a key in ``maxima`` is the largest value so far instead of a sum.

    Example::

        counts = RunCounts(lambda: {"batches": collector.batches})
        learner.save_with_checkpoints("my_counts", counts.state)
        ...  # after learner.load_checkpoint(resumed):
        counts.continue_from(learner.loaded_with["my_counts"])
        counts.totals()["batches"]  # the run's
    """

    def __init__(self, current: Callable[[], Mapping[str, Number]], maxima: Collection[str] = ()) -> None:
        self._current = current
        self._maxima = frozenset(maxima)
        self._before: dict[str, Number] = {}

    def continue_from(self, saved: Mapping[str, Any] | None) -> None:
        """Count on from a checkpoint's entry (None: a checkpoint written before it existed, counted as 0)."""
        self._before = {str(k): v if isinstance(v, float) else int(v) for k, v in (saved or {}).items()}

    def before(self, key: str) -> Number:
        """``key``'s count of the segments before this one."""
        return self._before.get(key, 0)

    def totals(self) -> dict[str, Number]:
        """Every count of the run so far."""
        now = dict(self._current())
        combine = {k: max if k in self._maxima else _add for k in {**self._before, **now}}
        return {k: how(self._before.get(k, 0), now.get(k, 0)) for k, how in combine.items()}

    def state(self, name: str = "") -> dict[str, Number]:
        """The checkpoint entry (``learner.save_with_checkpoints`` calls it with the checkpoint's name)."""
        return self.totals()


def _add(a: Number, b: Number) -> Number:
    return a + b


class RunRestarts(RunCounts):
    """Env worker restarts per env manager: those of the segments before this one (a resume's checkpoint) plus
    ``current()``'s (this segment's, e.g. ``parts.env_restarts``)."""

    def per_manager(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.totals().items()}

    def total(self) -> int:
        return sum(self.per_manager().values())

    def result(self, env_step: int) -> dict[str, Any]:
        """``env_restarts`` and ``env_restart_rate`` (per 1000 env steps) of ``result.json``."""
        return {"env_restarts": self.total(), "env_restart_rate": per_1k(self.total(), env_step)}


def per_1k(count: int, env_step: int) -> float:
    """``count`` per 1000 collected env steps (the failure rate of env workers that tensorboard and result.json
    report next to the count)."""
    return round(1000 * count / max(env_step, 1), 4)
