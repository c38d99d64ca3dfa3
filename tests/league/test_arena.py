"""The self-play wrapper and parts: learner-seat rows only, batched opponents, swaps between episodes only, agents
that leave, frozen opponents that are never trained, crashed workers left out of the payoff table."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import build_env_manager, load_config
from ding_lite.data.keys import ACTION_MASK, NEXT_ACTION_MASK, OBSERVATION
from ding_lite.envs.gym_env import build_env
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.opponents import FrozenPolicy, PlayerSet
from ding_lite.runtime.selfplay import selfplay_parts
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _cfg(seats, manager="base", n_env=2, **game):
    game.setdefault("n_seats", len(seats))
    return load_config(dict(
        env=dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=game, collector_env_num=n_env,
                 evaluator_env_num=1, n_evaluator_episode=2, manager=dict(type=manager)),
        policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), learn=dict(batch_size=4),
                    collect=dict(n_sample=4)),
        league=dict(seats=seats, strategy="latest", p_latest=0.0, snapshot_freq=10**9),
    ))


def _parts(tmp_path, seats, **game):
    parts = selfplay_parts(_cfg(seats, **game), 0, tmp_path)
    learner = BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn")
    parts.attach(learner, None)
    return parts


def test_only_the_learner_seats_reach_the_learner(tmp_path):
    with _parts(tmp_path, ["learner", "pool", "pool"], episode_len=4) as parts:
        rollout, episodes = parts.collector.inner.rollout(9)
        assert rollout["obs"].shape == (9, 2, 3)
        assert (rollout["obs"][..., 0] == 0).all() and (rollout["next_obs"][..., 0] == 0).all()
        assert (rollout["reward"] == 1.0).all()  # seat 0's reward (seats 1 and 2 get 2 and 3)
        assert rollout["terminated"].sum() == 4 and len(episodes) == 4  # steps 4 and 8 of each game
        samples, _ = parts.collector.collect(4)
        assert len(samples["obs"]) == 4


def test_one_forward_per_distinct_snapshot_per_step(tmp_path):
    with _parts(tmp_path, ["learner", "pool", "pool", "pool"], episode_len=3) as parts:
        arena = parts.collector_env
        arena.reset()
        before = parts.game.players.forward_calls
        for _ in range(5):
            arena.step(np.zeros(arena.env_num, dtype=np.int64))
        assert parts.game.players.forward_calls - before == 5  # one snapshot plays 3 seats x 2 games: one call a step
        parts.game.pool.add(parts.policy.learn_mode.state_dict()["model"], 100)
        arena.reset()  # now every game draws the new latest snapshot
        rng = np.random.default_rng(0)
        arena.roles[0, 1] = "snapshot_0"  # two snapshots in use
        before = parts.game.players.forward_calls
        arena.step(rng.integers(0, 2, arena.env_num))
        assert parts.game.players.forward_calls - before == 2


def test_snapshot_swaps_only_at_episode_ends(tmp_path):
    with _parts(tmp_path, ["learner", "pool"], episode_len=4, n_env=2) as parts:
        arena = parts.collector_env
        arena.reset()
        assert (arena.roles[:, 1] == "snapshot_0").all()
        arena.step(np.zeros(2, dtype=np.int64))
        parts.game.pool.add({k: v + 1 for k, v in parts.policy.learn_mode.state_dict()["model"].items()}, 50)
        for t in range(2, 5):
            result = arena.step(np.zeros(2, dtype=np.int64))
            if t < 4:  # the running games keep their opponent until they end
                assert (arena.roles[:, 1] == "snapshot_0").all() and not result.episodes
        assert len(result.episodes) == 2 and (arena.roles[:, 1] == "snapshot_50").all()
        old = parts.game.players.get("snapshot_0").model.state_dict()
        new = parts.game.players.get("snapshot_50").model.state_dict()
        assert all(torch.equal(new[k], old[k] + 1) for k in old)


def test_agents_that_leave_are_masked_not_crashed_on(tmp_path):
    # opponent seat 2 leaves at step 2: the game goes on, nobody acts for it (the game raises on a stray action)
    with _parts(tmp_path, ["learner", "pool", "pool"], episode_len=5, leave_at={2: 2}) as parts:
        arena = parts.collector_env
        arena.reset()
        for t in range(1, 6):
            result = arena.step(np.zeros(2, dtype=np.int64))
            assert not result.terminated.any() if t < 5 else result.terminated.all()
        assert result.next_obs[:, 1].tolist() == [5, 5]


def test_a_learner_seat_that_leaves_a_running_game(tmp_path):
    # learner leaves at step 2 while the game goes on (seat 1 in the learner role was never told to end the game)
    cfg = _cfg(["learner", "pool", "pool"], episode_len=4, leave_at={0: 2})
    env = build_env(cfg.env)
    layout = env.layout
    env.close()
    inner = build_env_manager(cfg.env, 1, 0)
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""))
    players.players["stub"] = type("Stub", (), {"act": lambda self, o, m: np.zeros(len(o), dtype=np.int64)})()
    with SelfPlayEnvManager(inner, layout, ["learner", "stub", "stub"], players) as arena:
        arena.reset()
        flags = []
        for _ in range(4):
            r = arena.step(np.zeros(1, dtype=np.int64))
            flags.append((bool(r.terminated[0]), r.interrupted is not None and bool(r.interrupted[0]),
                          len(r.episodes)))
        # step 2: terminal for the learner; steps 3-4: placeholders (dropped by the policy); the game ends at 4
        assert flags == [(False, False, 0), (True, False, 0), (False, True, 0), (False, True, 1)]
    # with the pipeline's default, the learner's leaving ends the game at once
    with _parts(tmp_path, ["learner", "pool", "pool"], episode_len=4, leave_at={0: 2}) as parts:
        parts.collector_env.reset()
        results = [parts.collector_env.step(np.zeros(2, dtype=np.int64)) for _ in range(2)]
        assert results[1].terminated.all() and len(results[1].episodes) == 2


def test_no_opponent_parameter_is_trained(tmp_path):
    with _parts(tmp_path, ["learner", "pool"], episode_len=3) as parts:
        for _ in range(3):
            samples, _ = parts.collector.collect(8)
            parts.buffer.push(samples)
            parts.policy.learn_mode.forward(parts.buffer.sample(4))
        frozen = parts.game.players.parameters()
        assert frozen and all(not p.requires_grad and p.grad is None for p in frozen)
        optimised = {id(p) for opt in parts.policy._optimizers.values() for group in opt.param_groups
                     for p in group["params"]}
        assert not optimised & {id(p) for p in frozen}
        player = parts.game.players.get("snapshot_0")
        assert isinstance(player, FrozenPolicy) and not player.model.training
        assert not hasattr(player.policy, "_optimizers")  # built with its eval mode only
        saved = parts.game.pool.load_weights("snapshot_0")
        assert all(torch.equal(saved[k], v) for k, v in player.model.state_dict().items())


def test_a_crashed_worker_is_restarted_and_its_game_not_scored(tmp_path):
    seats = ["learner", "pool"]
    cfg = _cfg(seats, manager="subprocess", n_env=1, episode_len=3, crash_at=5, token_dir=str(tmp_path))
    with selfplay_parts(cfg, 0, tmp_path / "exp") as parts:
        parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path / "exp", None, "dqn"), None)
        arena = parts.collector_env
        arena.reset()
        ends, cut = 0, 0
        for _ in range(10):
            result = arena.step(np.zeros(1, dtype=np.int64))
            ends += len(result.episodes)
            cut += 0 if result.interrupted is None else int(result.interrupted.sum())
        assert arena.restart_count == 1 and cut == 1
        # steps 1-3 game 1; steps 4-5 game 2, cut at its 2nd step; steps 6-8 game 3; 9-10 game 4 still running
        assert ends == 2
        assert parts.game.pool.payoff.games("snapshot_0") == 2


def test_turn_based_games_give_the_learner_every_turn(tmp_path):
    pytest.importorskip("pettingzoo.classic")
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path="pettingzoo.classic.connect_four_v3:env", collector_env_num=3),
        policy=dict(type="dqn"), league=dict(seats=["learner", "random"], swap_seats=True)))
    env = build_env(cfg.env)
    layout = env.layout
    env.close()
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""))
    rng = np.random.default_rng(0)
    seats_seen = set()
    with SelfPlayEnvManager(build_env_manager(cfg.env, 3, 0), layout, ["learner", "random"], players,
                            swap_seats=True) as arena:
        obs = arena.reset()
        for _ in range(60):
            seats = arena._seat_obs
            learner = arena._learner_seats[:, 0]
            assert seats.acting[np.arange(3), learner].all()  # the learner is to move in every game
            seats_seen |= set(learner.tolist())
            mask = seats.action_mask[np.arange(3), learner]
            obs = arena.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask])).obs
            # the learner sees PettingZoo's {'observation', 'action_mask'} of the seat it plays now
            assert obs[OBSERVATION].shape == (3, 6, 7, 2)
            now = arena._learner_seats[:, 0]
            assert (obs[ACTION_MASK] == arena._seat_obs.action_mask[np.arange(3), now]).all()
        assert seats_seen == {0, 1}


def test_masked_games_store_masks_and_the_learner_never_plays_an_illegal_move(tmp_path):
    pytest.importorskip("pettingzoo.classic")
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path="pettingzoo.classic.connect_four_v3:env", collector_env_num=2,
                 evaluator_env_num=1, n_evaluator_episode=2),
        policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), other=dict(eps=dict(start=1.0, end=1.0))),
        league=dict(seats=["learner", "pool"], swap_seats=True)))
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        rollout, episodes = parts.collector.inner.rollout(60)
        assert rollout[ACTION_MASK].shape == (60, 2, 7) and rollout[NEXT_ACTION_MASK].shape == (60, 2, 7)
        t, n = np.indices(rollout["action"].shape)
        assert rollout[ACTION_MASK][t, n, rollout["action"]].all()  # ε = 1 and still only legal moves
        assert all(e.episode_return in (-1.0, 0.0, 1.0) for e in episodes)  # no illegal-move game ends


@pytest.mark.parametrize("game", ["tictactoe_v3", "connect_four_v3"])
def test_classic_turn_based_games_come_in_through_the_aec_wrapper(game):
    pytest.importorskip("pettingzoo.classic")
    env = build_env(dict(type="pettingzoo", import_path=f"pettingzoo.classic.{game}:env", kwargs={},
                         end_when_out=[], import_names=[]))
    lay = env.layout
    assert lay.n_seats == 2 and lay.has_mask
    packed, _ = env.reset(seed=0)
    seats = lay.unpack(packed)
    assert seats.acting.tolist() == [True, False] and seats.alive.all()
    rng = np.random.default_rng(0)
    done, plies = False, 0
    while not done:
        seats = lay.unpack(packed)
        mover = int(np.flatnonzero(seats.acting)[0])
        action = np.full(2, -1)
        action[mover] = rng.choice(np.flatnonzero(seats.action_mask[mover]))
        packed, _, terminated, truncated, info = env.step(action)
        done, plies = terminated or truncated, plies + 1
    assert sorted(info["scores"]) in ([-1.0, 1.0], [0.0, 0.0]) and plies >= 5
    env.close()


# ---- the learner's transitions are the game's true transitions ------------------------------------------------------
def _open(rollout):
    """(T, N) rows whose episode goes on after the step."""
    return ~(rollout["terminated"] | rollout["truncated"])


def test_next_obs_is_the_observation_after_the_step(tmp_path):
    # the tag game's observation [seat, t, 1] counts its steps: next_obs of a row that goes on is the next row's obs
    with _parts(tmp_path, ["learner", "pool", "pool"], episode_len=4) as parts:
        rollout, _ = parts.collector.inner.rollout(9)
        going_on = _open(rollout)
        assert going_on.sum() == 14  # 9 rows x 2 games, minus the ends at steps 4 and 8
        assert (rollout["next_obs"][:-1][going_on[:-1]] == rollout["obs"][1:][going_on[:-1]]).all()
        assert (rollout["next_obs"][..., 1][going_on] == rollout["obs"][..., 1][going_on] + 1).all()
        # the rollout's last row ends on the observation that the next collect starts from
        assert (rollout["next_obs"][-1] == parts.collector_env.obs).all()


def test_an_nstep_sample_bootstraps_from_the_observation_n_steps_later(tmp_path):
    cfg = _cfg(["learner", "pool"], episode_len=50)
    cfg.policy.nstep = 3
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        samples, _ = parts.collector.collect(24)  # 12 steps of 2 games: the first 10 rows have their 3 steps
        assert len(samples["obs"]) == 20
        assert (samples["next_obs_n"][:, 1] == samples["obs"][:, 1] + 3).all()
        assert (samples["discount_n"] == pytest.approx(cfg.policy.discount_factor ** 3))


def test_ppo_bootstraps_the_rollout_end_from_the_observation_after_it(tmp_path):
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=dict(n_seats=2, episode_len=50),
                 collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=2),
        policy=dict(type="ppo", model=dict(encoder_hidden_size_list=[8]), collect=dict(n_sample=8)),
        league=dict(seats=["learner", "pool"], strategy="latest", p_latest=0.0, snapshot_freq=10**9)))
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path, None, "ppo"), None)
        samples, _ = parts.collector.collect(8)  # 4 steps of 2 games, time-major rows
        with torch.no_grad():
            value_after = parts.policy._model.compute_critic(torch.as_tensor(parts.collector_env.obs))["value"]
        # the last step's return target: r + γ V(s_T), s_T the observation after it (the next collect's first); the
        # learner's seat 0 gets reward 1 a step
        expected = 1.0 + cfg.policy.discount_factor * value_after.numpy()
        assert samples["return"][-2:] == pytest.approx(expected, abs=1e-5)


def test_a_time_limit_is_a_truncation_even_where_it_ends_the_game(tmp_path):
    # seat 2 dies at step 3, the time limit ends the game for everyone at that same step: the learner was cut, it did
    # not reach an end of its own
    with _parts(tmp_path, ["learner", "pool", "pool"], episode_len=10, truncate_at=3, leave_at={2: 3}) as parts:
        arena = parts.collector_env
        arena.reset()
        results = [arena.step(np.zeros(2, dtype=np.int64)) for _ in range(3)]
        last = results[-1]
        assert not last.terminated.any() and last.truncated.all()
        assert [e.terminated for e in last.episodes] == [False, False]
        assert (last.next_obs[:, 1] == 3).all()  # the final observation, not the next game's first
        assert all(not r.terminated.any() and not r.truncated.any() for r in results[:-1])
    env = build_env(_cfg(["learner", "pool", "pool"], truncate_at=3, leave_at={2: 3}).env)
    env.reset(seed=0)
    outcome = [env.step(np.zeros(3, dtype=np.int64))[2:4] for _ in range(3)]
    assert outcome == [(False, False), (False, False), (False, True)]  # the packed game: truncated, not terminated
    env.close()


def test_a_learner_taken_out_by_the_time_limit_is_truncated_in_the_snake_arena():
    game = dict(type="pettingzoo", import_path="dizoo.board_games.snake.envs.snake_arena:snake_arena",
                kwargs=dict(n_snakes=2, size=9, max_steps=4, shuffle_starts=False), end_when_out=[0],
                import_names=[])
    env = build_env(game)
    layout = env.layout
    env.close()
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""))
    players.players["stub"] = type("Stub", (), {"act": lambda self, o, m: np.zeros(len(o), dtype=np.int64)})()
    inner = build_env_manager(game, 1, 0)
    with SelfPlayEnvManager(inner, layout, ["learner", "stub"], players) as arena:
        arena.reset()
        results = [arena.step(np.zeros(1, dtype=np.int64)) for _ in range(4)]  # both go straight, nobody dies
        assert results[-1].truncated.tolist() == [True] and results[-1].terminated.tolist() == [False]
        assert results[-1].episodes[0].terminated is False


def test_each_opponent_is_booked_its_own_result(tmp_path):
    # 1 learner vs 3 seats: A plays seat 1 and outscores the learner, B plays seats 2 and 3 and is outscored
    with _parts(tmp_path, ["learner", "pool", "pool", "pool"], episode_len=2, scores=[2.0, 3.0, 1.0, 0.0]) as parts:
        parts.game.pool.add(parts.policy.learn_mode.state_dict()["model"], 100)
        arena = parts.collector_env
        arena.reset()
        arena.roles[:, 1] = "snapshot_0"
        arena.roles[:, 2:] = "snapshot_100"
        arena.step(np.zeros(2, dtype=np.int64))
        before = parts.game.pool.payoff.counts.copy()
        result = arena.step(np.zeros(2, dtype=np.int64))
        assert before == {} and len(result.episodes) == 2
        assert result.episodes[0].info["score"] == 0.0  # against everyone: beaten by A
        assert parts.game.pool.payoff.counts == {"snapshot_0": [0, 0, 2], "snapshot_100": [2, 0, 0]}
        assert result.episodes[0].info["results"] == {"snapshot_0": 0.0, "snapshot_100": 1.0}


def test_snapshots_act_greedily_or_by_their_collect_mode(tmp_path):
    cfg = _cfg(["learner", "pool"])
    cfg.policy.other.eps.update(start=1.0, end=1.0)  # the collect mode explores with ε = 1: uniformly random
    obs = np.zeros((200, 3), dtype=np.float32)
    mask = np.ones((200, 2), dtype=bool)
    for act, distinct in (("greedy", 1), ("sample", 2)):
        cfg.league.snapshot_act = act
        with selfplay_parts(cfg, 0, tmp_path / act) as parts:
            parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path / act, None, "dqn"), None)
            player = parts.game.players.get("snapshot_0")
            assert isinstance(player, FrozenPolicy) and player.sample == (act == "sample")
            assert len(set(parts.game.players.act("snapshot_0", obs, mask).tolist())) == distinct
            assert not hasattr(player.policy, "_optimizers")  # no learn mode in either


def test_random_openings_start_training_games_past_their_first_plies(tmp_path):
    # 0..3 random plies of a 2-step game: openings of 2 or 3 plies end it before the learner moves (replayed, never
    # scored); otherwise the learner's episode starts where the opening left the game
    cfg = _cfg(["learner", "pool"], episode_len=2)
    cfg.league.opening_plies = 3
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        rollout, episodes = parts.collector.inner.rollout(40)
        first_steps = rollout["obs"][..., 1][np.roll(rollout["terminated"], 1, axis=0)]  # rows after an end
        assert set(first_steps.tolist()) == {0.0, 1.0}  # a game starts at step 0 or after one random ply
        assert {e.episode_length for e in episodes} == {1, 2}
        assert parts.game.pool.payoff.games("snapshot_0") == len(episodes)
        going_on = ~rollout["terminated"][:-1]
        assert (rollout["next_obs"][:-1][going_on] == rollout["obs"][1:][going_on]).all()
    with pytest.raises(Exception, match="opening_plies"):
        SelfPlayEnvManager(build_env_manager(cfg.env, 1, 0), parts.game.layout, ["learner", "pool"], parts.game.players,
                           lambda: "snapshot_0", opening_plies=-1)
