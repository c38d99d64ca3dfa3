"""Elo ratings of the learner and its snapshots (Elo 1978)."""
from __future__ import annotations

from typing import Any


def expected_score(rating_a: float, rating_b: float) -> float:
    """E_a = 1 / (1 + 10^((R_b - R_a) / 400)): a's expected score against b (for a gap of thousands of points,
    which a large ``league.elo_k`` makes, ``10^x`` would overflow: written with ``10^-x`` where x > 0)."""
    x = (rating_b - rating_a) / 400.0
    if x > 0:
        t = 10.0 ** -x
        return t / (1.0 + t)
    return 1.0 / (1.0 + 10.0 ** x)


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float = 32.0) -> tuple[float, float]:
    """Ratings after one game with a's score ``score_a`` (1 win, 0.5 draw, 0 loss): a gains K (S_a - E_a), b loses
    as much (a zero-sum transfer).

    Example::

        elo_update(1000, 1000, 1.0, k=32)  # (1016.0, 984.0)
    """
    delta = k * (score_a - expected_score(rating_a, rating_b))
    return rating_a + delta, rating_b - delta


class EloTable:
    """Ratings by player name; unknown players start at ``initial``. ``anchor`` names a player whose rating never
    moves (the initial random policy, say), which pins the scale."""

    def __init__(self, k: float = 32.0, initial: float = 1000.0, anchor: str | None = None) -> None:
        self.k, self.initial, self.anchor = float(k), float(initial), anchor
        self.ratings: dict[str, float] = {}

    def rating(self, name: str) -> float:
        return self.ratings.get(name, self.initial)

    def pin(self, name: str | None) -> None:
        """Make ``name`` the anchor: its rating never moves from now on."""
        self.anchor = name

    def update(self, a: str, b: str, score_a: float) -> None:
        """Record one game of ``a`` against ``b``; the anchor keeps its rating."""
        new_a, new_b = elo_update(self.rating(a), self.rating(b), score_a, self.k)
        self.ratings[a] = self.rating(a) if a == self.anchor else new_a
        self.ratings[b] = self.rating(b) if b == self.anchor else new_b

    def add(self, name: str, rating: float) -> None:
        """Enter a player at a given rating (a new snapshot starts at the learner's current rating)."""
        self.ratings[name] = float(rating)

    def forget(self, name: str) -> None:
        self.ratings.pop(name, None)

    def state_dict(self) -> dict[str, Any]:
        return {"ratings": dict(self.ratings)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ratings = {str(k): float(v) for k, v in state["ratings"].items()}
