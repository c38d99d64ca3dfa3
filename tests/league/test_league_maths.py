"""Hand-computed checks of the league maths: payoff table, PFSP probabilities, Elo updates."""

import pytest

from ding_lite.errors import ConfigError
from ding_lite.league import EloTable, PayoffTable, elo_update, expected_score, pfsp_weights, sampling_probs

pytestmark = pytest.mark.unittest


def test_payoff_win_rate_with_prior():
    table = PayoffTable(prior_games=2, prior_rate=0.5)
    assert table.win_rate("new") == 0.5  # only the prior
    for score in (1.0, 1.0, 0.5, 0.0):
        table.record("a", score)
    # wins 2, draws 1, losses 1: (2 + 0.5 + 0.5 * 2) / (4 + 2) = 3.5 / 6
    assert table.win_rate("a") == pytest.approx(3.5 / 6)
    assert table.summary()["a"] == dict(wins=2, draws=1, losses=1, games=4, win_rate=round(3.5 / 6, 4))
    no_prior = PayoffTable(prior_games=0)
    no_prior.record("b", 0.5)
    no_prior.record("b", 1.0)
    assert no_prior.win_rate("b") == pytest.approx(0.75)
    with pytest.raises(ValueError, match="score"):
        table.record("a", 0.3)


def test_pfsp_probabilities_from_a_payoff_table():
    table = PayoffTable(prior_games=0)
    for name, scores in (("s0", [1, 1, 1, 1]), ("s1", [1, 0]), ("s2", [0, 0, 0.5, 1])):
        for s in scores:
            table.record(name, float(s))
    rates = [table.win_rate(n) for n in ("s0", "s1", "s2")]
    assert rates == pytest.approx([1.0, 0.5, 0.375])
    # squared: (1-w)^2 = [0, 0.25, 0.390625] -> / 0.640625
    assert sampling_probs("pfsp", rates) == pytest.approx([0.0, 0.25 / 0.640625, 0.390625 / 0.640625])
    # variance: w(1-w) = [0, 0.25, 0.234375] -> / 0.484375
    assert sampling_probs("pfsp", rates, weighting="variance") == pytest.approx([0, 0.25 / 0.484375,
                                                                               0.234375 / 0.484375])
    assert pfsp_weights(rates, "linear") == pytest.approx([0.0, 0.5, 0.625])
    # p_latest mixes in the last snapshot: 0.5 * pfsp + 0.5 * [0, 0, 1]
    mixed = sampling_probs("pfsp", rates, p_latest=0.5)
    assert mixed == pytest.approx([0.0, 0.5 * 0.25 / 0.640625, 0.5 * 0.390625 / 0.640625 + 0.5])
    assert sampling_probs("latest", rates) == pytest.approx([0, 0, 1])
    assert sampling_probs("uniform", rates, p_latest=0.4) == pytest.approx([0.2, 0.2, 0.6])


def test_pfsp_falls_back_to_uniform_when_every_weight_is_zero():
    assert sampling_probs("pfsp", [1.0, 1.0]) == pytest.approx([0.5, 0.5])


def test_bad_strategy_names_are_config_errors():
    with pytest.raises(ConfigError, match="league.strategy"):
        sampling_probs("best", [0.5])
    with pytest.raises(ConfigError, match="pfsp_weighting"):
        pfsp_weights([0.5], "cubed")
    with pytest.raises(ConfigError, match="p_latest"):
        sampling_probs("pfsp", [0.5], p_latest=1.5)


def test_elo_hand_cases():
    assert expected_score(1000, 1000) == 0.5
    assert expected_score(1400, 1000) == pytest.approx(1 / (1 + 10 ** -1))  # 0.90909
    assert elo_update(1000, 1000, 1.0, k=32) == (1016.0, 984.0)
    assert elo_update(1000, 1000, 0.5, k=32) == (1000.0, 1000.0)
    # a 400-point favourite that only draws loses K (0.5 - 10/11) = -13.0909...
    a, b = elo_update(1400, 1000, 0.5, k=32)
    assert a == pytest.approx(1400 - 32 * (10 / 11 - 0.5))
    assert b == pytest.approx(1000 + 32 * (10 / 11 - 0.5))
    # an underdog's win gains K (1 - 1/11)
    a, _ = elo_update(1000, 1400, 1.0, k=16)
    assert a == pytest.approx(1000 + 16 * (10 / 11))


def test_expected_scores_of_huge_rating_gaps_do_not_overflow():
    """Before, a gap of 10^6 points (league.elo_k=1e12 after one game) was an OverflowError traceback (found by the
    config fuzzer)."""
    assert expected_score(0.0, 1e6) == 0.0 and expected_score(1e6, 0.0) == 1.0
    assert expected_score(1000.0, 1400.0) == pytest.approx(1 / 11) and expected_score(1400.0, 1000.0) == \
        pytest.approx(10 / 11)


def test_elo_table_anchor_never_moves():
    table = EloTable(k=32, anchor="snapshot_0")
    table.update("learner", "snapshot_0", 1.0)
    assert table.rating("snapshot_0") == 1000.0
    assert table.rating("learner") == 1016.0
    table.update("learner", "snapshot_5", 0.0)  # learner 1016 vs new 1000: E = 1/(1+10^(-16/400))
    e = 1 / (1 + 10 ** (-16 / 400))
    assert table.rating("learner") == pytest.approx(1016 - 32 * e)
    assert table.rating("snapshot_5") == pytest.approx(1000 + 32 * e)
    assert sum(table.ratings.values()) == pytest.approx(1016 + 1000 + 1000)  # a transfer conserves the total


def test_elo_table_anchor_never_moves_as_the_first_player_either():
    table = EloTable(k=32, anchor="snapshot_0")
    table.update("snapshot_0", "learner", 0.0)  # the anchor loses, as the game's first player
    assert table.rating("snapshot_0") == 1000.0
    assert table.rating("learner") == 1016.0  # equal ratings: E = 0.5, the learner gains 32·0.5


def test_payoff_decay_forgets_old_games_per_opponent():
    table = PayoffTable(prior_games=0, decay=0.5)
    for score in (0.0, 0.0, 1.0):  # two old losses, then a win
        table.record("a", score)
    # weights: losses 0.5 * (0.5 * 1 + 1) = 0.75, wins 1: win rate 1 / 1.75; the plain counts stay 1 / 3
    assert table.win_rate("a") == pytest.approx(1 / 1.75)
    assert table.summary()["a"]["games"] == 3 and table.counts["a"] == [1, 0, 2]
    table.record("b", 0.5)  # another opponent's games leave a's weights alone
    assert table.win_rate("a") == pytest.approx(1 / 1.75)
    with_prior = PayoffTable(prior_games=2, prior_rate=0.5, decay=0.99)
    with_prior.record("c", 1.0)
    with_prior.record("c", 1.0)  # (0.99 + 1 + 0.5 * 2) / (1.99 + 2)
    assert with_prior.win_rate("c") == pytest.approx(2.99 / 3.99)
    restored = PayoffTable(prior_games=0, decay=0.5)
    restored.load_state_dict(table.state_dict())
    assert restored.win_rate("a") == table.win_rate("a") and restored.counts == table.counts
    with pytest.raises(ValueError, match="decay"):
        PayoffTable(decay=1.5)
