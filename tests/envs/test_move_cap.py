"""``env.max_episode_steps`` for PettingZoo games (a move cap of ding_lite's own, for games without a time limit),
the warning about games that run on without one, and the self-play evaluation's step cap."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from ding_lite.build import load_config
from ding_lite.envs import multi_agent
from ding_lite.envs.gym_env import build_env
from ding_lite.errors import ConfigError
from ding_lite.league.payoff import DRAW
from ding_lite.runtime.selfplay import selfplay_parts
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


@pytest.fixture
def warnings_log():
    """The ``ding_lite`` logger's warnings, caught on the logger itself (its console handler turns propagation off
    once a run has set it up in this process, so pytest's caplog may not see them)."""
    records: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    log = logging.getLogger("ding_lite")
    log.addHandler(handler)
    yield records
    log.removeHandler(handler)


def _game(cap=None, **kwargs):
    kwargs.setdefault("n_seats", 3)
    return dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=kwargs, end_when_out=[],
                import_names=[], max_episode_steps=cap)


def test_the_cap_truncates_every_seat_still_in_the_game_and_counts_from_each_reset():
    # a 100-step game cut at 3 moves; seat 2 leaves by its own end at move 2 and stays terminated, not truncated
    env = build_env(_game(cap=3, episode_len=100, leave_at={2: 2}))
    lay = env.layout
    for _ in range(2):  # the count starts again with every game
        env.reset(seed=0)
        outcomes = [env.step(np.zeros(3, dtype=np.int64)) for _ in range(3)]
        assert [o[2:4] for o in outcomes] == [(False, False), (False, False), (False, True)]
        seats = lay.unpack(outcomes[-1][0])
        assert not seats.alive.any() and not seats.acting.any()
        assert seats.truncated.tolist() == [True, True, False]
        assert seats.obs[:, 1].tolist() == [3.0, 3.0, 2.0]  # seats 0 and 1 saw move 3; seat 2 its last, move 2
        assert "scores" in outcomes[-1][4]
    env.close()


def test_a_game_that_ends_before_the_cap_is_untouched():
    env = build_env(_game(cap=10, episode_len=4))
    env.reset(seed=0)
    outcomes = [env.step(np.zeros(3, dtype=np.int64))[2:4] for _ in range(4)]
    assert outcomes[-1] == (True, False) and all(o == (False, False) for o in outcomes[:-1])
    env.close()


def test_the_cap_counts_the_moves_of_a_turn_based_game():
    pytest.importorskip("pettingzoo.classic")
    env = build_env(dict(type="pettingzoo", import_path="pettingzoo.classic.tictactoe_v3:env", kwargs={},
                         end_when_out=[], import_names=[], max_episode_steps=4))
    lay = env.layout
    packed, _ = env.reset(seed=0)
    results = []
    for cell in (4, 0, 8, 2):  # no line after four moves: the cap ends the game, a draw on the scores
        seats = lay.unpack(packed)
        action = np.full(2, multi_agent.PASS)
        action[int(np.flatnonzero(seats.acting)[0])] = cell
        packed, _, terminated, truncated, info = env.step(action)
        results.append((terminated, truncated))
    assert results == [(False, False)] * 3 + [(False, True)]
    assert info["scores"] == [0.0, 0.0]
    env.close()


@pytest.mark.parametrize("cap", [0, -5, 2.5, True, "100"])
def test_a_bad_cap_is_one_config_error(cap):
    with pytest.raises(ConfigError, match="env.max_episode_steps must be a positive int"):
        build_env(_game(cap=cap))


def test_a_game_without_a_cap_that_runs_on_is_warned_about_once(monkeypatch, warnings_log):
    monkeypatch.setattr(multi_agent, "LONG_GAME", 5)
    monkeypatch.setattr(multi_agent, "_WARNED_LONG", set())
    envs = [build_env(_game(episode_len=100)) for _ in range(2)]
    for env in envs:
        env.reset(seed=0)
        for _ in range(8):
            env.step(np.zeros(3, dtype=np.int64))
    warnings = [m for m in warnings_log if "without ending" in m]
    assert len(warnings) == 1 and "set env.max_episode_steps" in warnings[0] and "fake_games:tag_game" in warnings[0]
    for env in envs:
        env.close()


def test_self_play_evaluation_counts_games_cut_at_its_cap_as_draws(tmp_path, warnings_log):
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=dict(n_seats=2, episode_len=50),
                 collector_env_num=1, evaluator_env_num=2, n_evaluator_episode=4, manager=dict(type="base")),
        policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), learn=dict(batch_size=4),
                    collect=dict(n_sample=4), eval=dict(evaluator=dict(max_episode_steps=3))),
        league=dict(seats=["learner", "pool"], eval_opponents=["random"], eval_latest=0),
    ))
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        result = parts.evaluator.eval()
    # as in the interaction evaluator, a game cut at the cap ends there and its env plays its next one (before, it
    # played no more: 2 games of 4 were counted)
    assert result.returns.tolist() == [DRAW] * 4 and result.lengths.tolist() == [3] * 4
    assert any("4 of 4 game(s) cut at policy.eval.evaluator.max_episode_steps=3" in m for m in warnings_log)


@pytest.mark.parametrize("scores, warned", [([2.0, 2.0], True), ([0.0, 0.0], False), ([1.0, 0.0], False)])
def test_self_play_evaluation_warns_once_where_every_seat_shares_the_score(tmp_path, warnings_log, scores, warned):
    # equal nonzero scores in every game: a shared (cooperative) reward, where every game is a draw and the league's
    # numbers mean nothing; 0 each is a zero-sum game's tie (a capped chess game), unequal ones a contest
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=dict(n_seats=2, scores=scores),
                 collector_env_num=1, evaluator_env_num=2, n_evaluator_episode=4, manager=dict(type="base")),
        policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), learn=dict(batch_size=4),
                    collect=dict(n_sample=4)),
        league=dict(seats=["learner", "pool"], eval_opponents=["random"], eval_latest=0),
    ))
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        parts.evaluator.eval()
        parts.evaluator.eval()
    shared = [m for m in warnings_log if "every seat scored the same" in m]
    assert len(shared) == int(warned)
    if warned:
        assert "in all 4 games" in shared[0] and "learner 2 on average" in shared[0] and "\n" not in shared[0]
