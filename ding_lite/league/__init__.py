"""Self-play league: payoff table, PFSP sampling, Elo ratings and the opponent pool of learner snapshots."""
from ding_lite.league.elo import EloTable, elo_update, expected_score
from ding_lite.league.payoff import PayoffTable
from ding_lite.league.pfsp import pfsp_weights, sampling_probs
from ding_lite.league.pool import OpponentPool

__all__ = ["EloTable", "elo_update", "expected_score", "PayoffTable", "pfsp_weights", "sampling_probs",
           "OpponentPool"]
