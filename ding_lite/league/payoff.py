"""Payoff table: the learner's wins, draws and losses against each opponent (a snapshot id or a baseline name)."""
from __future__ import annotations

from typing import Any

WIN, DRAW, LOSS = 1.0, 0.5, 0.0  # the learner's score of a game
_COLUMN = {WIN: 0, DRAW: 1, LOSS: 2}


class PayoffTable:
    """Game counts of the learner against each opponent and the win rate derived from them.

    The win rate is ``(wins + draws / 2 + prior_rate * prior_games) / (games + prior_games)``: a snapshot with no
    games yet counts as ``prior_games`` pseudo-games at ``prior_rate`` (the PFSP prior), so a new snapshot is
    neither ignored nor over-sampled by PFSP.

    With ``decay`` < 1 the win rate forgets old games: before a game against an opponent is counted, that
    opponent's wins, draws and losses are multiplied by ``decay`` (AlphaStar's pseudo-code and DI-engine's league
    use 0.99), so the rate follows the learner as it improves and PFSP stops drawing opponents it has since learned
    to beat. ``counts`` always holds the plain game counts (for ``result.json``).

    Example::

        table = PayoffTable()  # prior: 2 pseudo-games at 0.5
        table.record('snapshot_0', 1.0)
        table.record('snapshot_0', 0.5)
        table.win_rate('snapshot_0')  # (1 + 0.5 / 2 + 0.5 * 2) / (2 + 2) = 0.5625
        decayed = PayoffTable(prior_games=0, decay=0.5)
        decayed.record('a', 0.0)
        decayed.record('a', 1.0)
        decayed.win_rate('a')  # (0.5 * 0 + 1) / (0.5 * 1 + 1) = 2 / 3
    """

    def __init__(self, prior_games: float = 2.0, prior_rate: float = 0.5, decay: float = 1.0) -> None:
        if prior_games < 0 or not 0.0 <= prior_rate <= 1.0:
            raise ValueError(f"need prior_games >= 0 and 0 <= prior_rate <= 1, got {prior_games=}, {prior_rate=}")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"the payoff decay must be in (0, 1], got {decay=}")
        self.prior_games = float(prior_games)
        self.prior_rate = float(prior_rate)
        self.decay = float(decay)
        self.counts: dict[str, list[int]] = {}  # opponent -> [wins, draws, losses]
        self.weights: dict[str, list[float]] = {}  # opponent -> decayed [wins, draws, losses] (the win rate's)

    def record(self, opponent: str, score: float) -> None:
        """Count one game of the learner against ``opponent`` with the learner's ``score`` (1, 0.5 or 0)."""
        if score not in _COLUMN:
            raise ValueError(f"a game's score is 1 (win), 0.5 (draw) or 0 (loss), got {score!r}")
        column = _COLUMN[score]
        self.counts.setdefault(opponent, [0, 0, 0])[column] += 1
        weights = [w * self.decay for w in self.weights.get(opponent, [0.0, 0.0, 0.0])]
        weights[column] += 1.0
        self.weights[opponent] = weights

    def games(self, opponent: str) -> int:
        """Games played against ``opponent``."""
        return sum(self.counts.get(opponent, (0, 0, 0)))

    def win_rate(self, opponent: str) -> float:
        """The learner's win rate against ``opponent`` (wins + draws/2 over games, decayed, with the prior)."""
        wins, draws, losses = self.weights.get(opponent, (0.0, 0.0, 0.0))
        denominator = wins + draws + losses + self.prior_games
        if denominator == 0:
            return self.prior_rate
        return (wins + 0.5 * draws + self.prior_rate * self.prior_games) / denominator

    def forget(self, opponent: str) -> None:
        """Drop an evicted opponent's row."""
        self.counts.pop(opponent, None)
        self.weights.pop(opponent, None)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per opponent: wins, draws, losses, games and win rate (for ``result.json``)."""
        return {name: dict(wins=w, draws=d, losses=lo, games=w + d + lo, win_rate=round(self.win_rate(name), 4))
                for name, (w, d, lo) in self.counts.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"counts": {k: list(v) for k, v in self.counts.items()},
                "weights": {k: list(v) for k, v in self.weights.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.counts = {str(k): [int(x) for x in v] for k, v in state["counts"].items()}
        weights = state.get("weights", state["counts"])
        self.weights = {str(k): [float(x) for x in v] for k, v in weights.items()}
