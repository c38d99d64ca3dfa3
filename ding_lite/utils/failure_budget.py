"""How many failures a restartable thing (an env worker, a Ray actor slot) may have before the run stops.

Two guards, so that a rare failure never ends a long run while a broken thing still stops it fast:

- **in a row**: failures since the thing last proved healthy. A restart followed by ``clear_after`` successful units
  (env steps, collected batches) or by a whole unit of work (an episode, an evaluation: ``record_success(clear=True)``)
  clears the count. A thing that fails on every start never proves healthy, so it stops after ``max_in_a_row``
  restarts.
- **per window**: failures within the last ``window`` units of a clock the caller chooses (env steps, seconds). This
  stops a thing that fails often but always recovers in between (an env that crashes every 50 steps).

Both bound *restarts*: ``max_in_a_row=5`` allows 5 restarts in a row and the 6th failure in a row stops the run, as
``max_per_window=10`` allows 10 restarts within a window and the 11th failure within it stops the run.

Example::

    budget = FailureBudget(max_in_a_row=2, max_per_window=3, window=1000, clear_after=100)
    budget.record_failure(now=10)       # None: restart (1 in a row, 1 in the window)
    budget.record_success(100)          # healthy again: 0 in a row
    budget.record_failure(now=400)      # None: restart (1 in a row, 2 in the window)
"""
from __future__ import annotations

from collections import deque
from typing import NamedTuple


class BudgetSpent(NamedTuple):
    """Which guard a failure broke: ``what`` in words (e.g. ``'3 restarts in a row'``) and the setting that bounds it
    (``key``, ``limit``)."""

    what: str
    key: str
    limit: int


class FailureBudget:
    """Failure bookkeeping of one restartable thing; see the module docstring.

    Args:
        max_in_a_row: restarts allowed in a row (without proving healthy in between).
        max_per_window: restarts allowed within any ``window`` (None: no rate guard).
        window: length of the sliding window, in the units of the ``now`` given to :meth:`record_failure`.
        clear_after: successful units after a failure that prove the thing healthy again.
        keys: the config keys of ``max_in_a_row`` and ``max_per_window`` (named in :class:`BudgetSpent`).
        unit: what ``window`` counts, in words (e.g. ``'env steps'``, ``'s'``), for messages.
    """

    def __init__(self, max_in_a_row: int, max_per_window: int | None = None, window: float = 0.0,
                 clear_after: int = 1, *, keys: tuple[str, str] = ("max_in_a_row", "max_per_window"),
                 unit: str = "") -> None:
        if max_in_a_row < 0 or (max_per_window is not None and max_per_window < 0):
            raise ValueError(f"failure limits must be >= 0, got {max_in_a_row=}, {max_per_window=}")
        if max_per_window is not None and window <= 0:
            raise ValueError(f"a rate guard needs a positive window, got {window=}")
        self.max_in_a_row = max_in_a_row
        self.max_per_window = max_per_window
        self.window = window
        self.clear_after = max(1, clear_after)
        self.keys = keys
        self.unit = unit
        self.in_a_row = 0  # failures since the last proof of health
        self.total = 0  # failures over the whole life
        self._healthy_units = 0  # successful units since the last failure
        self._times: deque[float] = deque()  # clock readings of the failures still inside the window

    def record_success(self, units: int = 1, *, clear: bool = False) -> None:
        """``units`` more successful units; ``clear``: a whole unit of work ended well (clears at once)."""
        self._healthy_units += units
        if clear or self._healthy_units >= self.clear_after:
            self.in_a_row = 0

    def record_failure(self, now: float) -> BudgetSpent | None:
        """Count a failure at clock reading ``now``; returns None if a restart is allowed, else the guard it broke
        (the caller stops)."""
        self.in_a_row += 1
        self.total += 1
        self._healthy_units = 0
        if self.max_per_window is not None:
            self._times.append(now)
        if self.in_a_row > self.max_in_a_row:
            return BudgetSpent(f"{self.in_a_row - 1} restart(s) in a row", self.keys[0], self.max_in_a_row)
        if self.max_per_window is not None and self.in_window(now) > self.max_per_window:
            return BudgetSpent(f"{self.in_window(now) - 1} restart(s) within {self.window:g} {self.unit}".rstrip(),
                               self.keys[1], self.max_per_window)
        return None

    def in_window(self, now: float) -> int:
        """Failures within the window that ends at ``now`` (0 when there is no rate guard)."""
        while self._times and self._times[0] <= now - self.window:
            self._times.popleft()
        return len(self._times)
