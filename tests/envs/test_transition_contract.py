"""The transition contract that every env manager, env wrapper and the self-play arena keep, with random actions:

- for every row that does not end its episode, ``next_obs[t]`` is ``obs[t + 1]`` of the same env, and the last row's
  ``next_obs`` is the observation the next rollout starts from (what PPO bootstraps a rollout's end from);
- ``obs``, ``next_obs``, ``reward``, ``terminated`` and ``truncated`` are what the env itself said, step by step (a
  reference copy of each env, stepped alone with the same seed and actions); in the arena, the flags are those of the
  learner's seat (a time limit truncates, even where it ends the game);
- an n-step sample bootstraps from the observation n steps later, or from the final one where its episode ended
  first;
- with action masks (an env observing ``Dict(observation, action_mask)``, the arena's games), the same holds for
  the masks: ``next_action_mask[t]`` is ``action_mask[t + 1]`` where the episode goes on, both are what the env
  said, and an n-step sample's next mask is that of its bootstrap observation.

Every registered env manager (``ENV_MANAGER_REGISTRY``) runs every env section of ``SECTIONS`` that it accepts (one that
refuses a section with a ConfigError, as envpool's refuses gymnasium ids, skips it; each manager must accept one),
so a new manager joins by registering; the self-play arena runs over every manager that builds its envs one by one
(from env callables). A new env wrapper joins with an entry in ``SECTIONS``.
"""
from __future__ import annotations

import importlib.util
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.build import build, build_env_manager, import_plugins, load_config
from ding_lite.data.keys import ACTION_MASK, OBSERVATION
from ding_lite.data.rollout import settle
from ding_lite.envs.gym_env import build_env, env_fn
from ding_lite.envs.variations import variation_env_fns
from ding_lite.errors import ConfigError
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.opponents import PlayerSet
from ding_lite.registry import ENV_MANAGER_REGISTRY
from ding_lite.rl_utils.masks import random_legal_actions
from ding_lite.worker.collector import SampleCollector

pytestmark = pytest.mark.unittest

T, N, SEED, NSTEP = 40, 3, 7, 3

SECTIONS: dict[str, dict[str, Any]] = {
    # CartPole ends by termination (the pole falls) and by its time limit (truncation)
    "gymnasium": dict(type="gymnasium", env_id="CartPole-v1", max_episode_steps=12),
    "envpool": dict(type="envpool", env_id="CartPole-v1", max_episode_steps=12),
    # the variations wrapper: each env plays its share of the levels, reaches the goal or runs out of time
    "variations": dict(type="maze", import_names=["dizoo.grid.maze.envs.maze_env"], num_levels=20, size=4,
                       min_distance=3, wall_prob=0.3, shaping=0.1, max_episode_steps=6, variations=[2, 5, 7]),
    # a Discrete observation, one-hot encoded by the env wrapper of envs/spaces.py
    "encoded observations": dict(type="space_env", kind="discrete", import_names=["fake_spaces"]),
    # a single-agent env with action masks (a new mask every step), episodes cut by its time limit (truncated)
    "action masks": dict(type="masked_env", import_names=["fake_masked"], length=5, truncate=True),
}

GAMES: dict[str, tuple[dict[str, Any], list[str]]] = {
    # a ParallelEnv: snakes die (terminated) or live to the time limit (truncated)
    "parallel game": (dict(type="pettingzoo", import_path="dizoo.board_games.snake.envs.snake_arena:snake_arena",
                           kwargs=dict(n_snakes=3, size=9, max_steps=8)), ["learner", "random", "random"]),
    # AEC games: tic-tac-toe always terminates, rock-paper-scissors always ends by its cycle limit
    "turn-based game": (dict(type="pettingzoo", import_path="pettingzoo.classic.tictactoe_v3:raw_env"),
                        ["learner", "random"]),
    "turn-based game with a time limit": (dict(type="pettingzoo", import_path="pettingzoo.classic.rps_v2:raw_env",
                                               kwargs=dict(max_cycles=5)), ["learner", "random"]),
    # an AEC game whose agent p1 leaves at turn 2 (PettingZoo's dead step) while the others play on to turn 9: the
    # learner (p0) moves at turns 1, 4, 6, 8
    "turn-based game whose agents leave": (dict(type="pettingzoo", import_path="fake_games:turn_game",
                                                kwargs=dict(n_seats=3, episode_len=9, leave_at={1: 2})),
                                           ["learner", "random", "random"]),
    # every other game ends at p0's first move, before the learner (p1) moves (a poker player folding first): not an
    # episode of the learner's; the others give it turns 2 and 4
    "turn-based game that may end before the learner moves": (
        dict(type="pettingzoo", import_path="fake_games:turn_game", kwargs=dict(n_seats=2, episode_len=[4, 1])),
        ["random", "learner"]),
    # ding_lite's own move cap (env.max_episode_steps): 4 moves of tic-tac-toe, no line possible, 2 learner turns
    "turn-based game cut by the move cap": (dict(type="pettingzoo", max_episode_steps=4,
                                                 import_path="pettingzoo.classic.tictactoe_v3:raw_env"),
                                            ["learner", "random"]),
}


class RandomPolicy:
    """A collect mode acting uniformly at random among the legal actions."""

    def __init__(self, n_actions: int, seed: int = 0) -> None:
        self.n_actions, self._rng = n_actions, np.random.default_rng(seed)

    def forward(self, obs: Any, env_step: int = 0) -> dict:
        if isinstance(obs, dict):
            return {"action": random_legal_actions(self._rng, obs[ACTION_MASK])}
        return {"action": self._rng.integers(0, self.n_actions, len(obs))}

    def process_transition(self, output: dict) -> dict:
        return {"action": output["action"]}


def _section(env: dict[str, Any], manager: str) -> dict[str, Any]:
    section = {"import_names": [], "kwargs": {}, **env, "manager": dict(type=manager)}
    import_plugins(section)  # as the pipelines do before they build anything
    return section


def _rollout(env: Any) -> tuple[dict[str, np.ndarray], list, Any]:
    collector = SampleCollector({}, env, RandomPolicy(int(env.action_space.n), SEED))
    rollout, episodes = collector.rollout(T)
    return rollout, episodes, env.obs


def _check_consecutive(rollout: dict[str, np.ndarray], obs_after: Any) -> None:
    """next_obs[t] == obs[t + 1] where the episode goes on; the last row's next_obs is the next rollout's first obs."""
    going_on = ~(rollout["terminated"] | rollout["truncated"])
    if "valid" in rollout:
        going_on &= rollout["valid"]
    later = np.concatenate([rollout["obs"][1:], np.asarray(obs_after[OBSERVATION] if isinstance(obs_after, dict)
                                                          else obs_after)[None]])
    bad = np.argwhere(going_on & ~np.all(rollout["next_obs"] == later, axis=tuple(range(2, later.ndim))))
    assert len(bad) == 0, f"next_obs differs from the next obs at (t, env) {bad[:5].tolist()}"
    if isinstance(obs_after, dict):
        later_mask = np.concatenate([rollout[ACTION_MASK][1:], obs_after[ACTION_MASK][None]])
        bad = np.argwhere(going_on & ~np.all(rollout["next_action_mask"] == later_mask, axis=2))
        assert len(bad) == 0, f"next_action_mask differs from the next mask at (t, env) {bad[:5].tolist()}"
    assert going_on.any() and (~going_on).any()  # the rollout had episodes going on and ending


def _check_nstep(section: dict[str, Any], rollout: dict[str, np.ndarray], obs_shape: Any, n_actions: int) -> None:
    """DQN's n-step samples bootstrap from the observation NSTEP steps later, or the final one of an episode that
    ended first (checked against the rollout's own rows)."""
    cfg = load_config(dict(env=section, policy=dict(type="dqn", nstep=NSTEP, model=dict(
        obs_shape=obs_shape, action_shape=n_actions, encoder_hidden_size_list=[8]))))
    policy = build(cfg, "policy", enable_field=("collect",))
    samples = policy.collect_mode.get_train_sample(settle({k: v.copy() for k, v in rollout.items()}))
    done = rollout["terminated"] | rollout["truncated"]
    expected, expected_mask = [], []
    for t in range(T):  # the rows whose window the rollout holds: n steps, or an episode end first (the rest waits)
        for i in range(N):
            k = next((k for k in range(min(NSTEP, T - t)) if done[t + k, i]), None)
            if k is None and t + NSTEP > T:
                continue
            k = NSTEP - 1 if k is None else k
            expected.append(rollout["next_obs"][t + k, i])
            if "next_action_mask" in rollout:
                expected_mask.append(rollout["next_action_mask"][t + k, i])
    assert np.array_equal(samples["next_obs_n"], np.stack(expected))
    if expected_mask:
        assert np.array_equal(samples["next_action_mask"], np.stack(expected_mask))


@pytest.mark.parametrize("section_name", list(SECTIONS))
@pytest.mark.parametrize("manager", ENV_MANAGER_REGISTRY.names())
def test_env_managers_hand_over_the_true_transitions(manager: str, section_name: str) -> None:
    if SECTIONS[section_name]["type"] == "envpool" or manager == "envpool":
        pytest.importorskip("envpool")
    section = _section(SECTIONS[section_name], manager)
    try:
        env = build_env_manager(section, N, SEED)
    except ConfigError as exc:
        pytest.skip(f"manager '{manager}' does not run section '{section_name}': {exc}")
    with env:
        rollout, _, obs_after = _rollout(env)
    _check_consecutive(rollout, obs_after)
    fns = variation_env_fns(section, N) or [env_fn(section)] * N
    for i, make in enumerate(fns):
        ref = make()
        obs, _ = ref.reset(seed=SEED + i)
        for t in range(T):
            _check_said(rollout, "", t, i, obs)
            obs, reward, terminated, truncated, _ = ref.step(int(rollout["action"][t, i]))
            _check_said(rollout, "next_", t, i, obs)
            said = (rollout["reward"][t, i], rollout["terminated"][t, i], rollout["truncated"][t, i])
            assert said == (np.float32(reward), terminated, truncated), (t, i)
            if terminated or truncated:
                obs, _ = ref.reset()
        ref.close()
    space = env.observation_space
    shape = space[OBSERVATION].shape if isinstance(space, gym.spaces.Dict) else space.shape
    _check_nstep(section, rollout, list(shape), int(env.action_space.n))


def _check_said(rollout: dict[str, np.ndarray], prefix: str, t: int, i: int, obs: Any) -> None:
    """Row (t, i) of the ``obs`` (``prefix='next_'``: ``next_obs``) column, and of its action mask where the env
    gives one, is the env's own observation ``obs``."""
    if isinstance(obs, dict):
        assert np.array_equal(rollout[f"{prefix}action_mask"][t, i], obs[ACTION_MASK]), (prefix, t, i)
        obs = obs[OBSERVATION]
    assert np.array_equal(rollout[f"{prefix}obs"][t, i], obs), (prefix, t, i)


@pytest.mark.parametrize("manager", ENV_MANAGER_REGISTRY.names())
def test_every_registered_manager_runs_one_of_the_sections(manager: str) -> None:
    for env in SECTIONS.values():
        if env["type"] == "envpool" and importlib.util.find_spec("envpool") is None:
            continue
        try:
            build_env_manager(_section(env, manager), 1, SEED).close()
            return
        except ConfigError:
            continue
    pytest.fail(f"env manager '{manager}' runs none of SECTIONS ({', '.join(SECTIONS)}): add an env it accepts")


ONE_BY_ONE = [m for m in ENV_MANAGER_REGISTRY.names()
              if getattr(ENV_MANAGER_REGISTRY.get(m), "from_env_config", None) is None]


@pytest.mark.parametrize("game", list(GAMES))
@pytest.mark.parametrize("manager", ONE_BY_ONE)
def test_the_selfplay_arena_hands_over_the_learner_seats_true_transitions(manager: str, game: str) -> None:
    pytest.importorskip("pettingzoo.classic")
    env_section, seats = GAMES[game]
    section = _section({**env_section, "end_when_out": [0]}, manager)
    probe = build_env(section)
    layout = probe.layout
    probe.close()
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""), seed=SEED)
    with SelfPlayEnvManager(build_env_manager(section, N, SEED), layout, seats, players) as arena:
        rollout, episodes, obs_after = _rollout(arena)
    _check_consecutive(rollout, obs_after)
    done = rollout["terminated"] | rollout["truncated"]
    assert not (rollout["terminated"] & rollout["truncated"]).any()
    for i in range(N):
        ends = [e for e in episodes if e.env_id == i]
        rows = np.flatnonzero(done[:, i])
        assert len(ends) == len(rows)  # one finished episode per ending row, with that row's flag
        assert [e.terminated for e in ends] == rollout["terminated"][rows, i].tolist()
    lengths = {e.episode_length for e in episodes if not e.terminated}
    if game == "parallel game":  # the learner's snake was cut by the time limit only at step max_steps
        assert lengths <= {8} and rollout["terminated"].any()
    elif game == "turn-based game":
        assert not rollout["truncated"].any()
    elif game == "turn-based game whose agents leave":
        assert not rollout["truncated"].any() and {e.episode_length for e in episodes} == {4}
        assert (rollout["reward"] == 1.0).all()  # one move of p0 per row, nobody else's reward
    elif game == "turn-based game that may end before the learner moves":
        assert not rollout["truncated"].any() and {e.episode_length for e in episodes} == {2}
    elif game == "turn-based game cut by the move cap":
        assert not rollout["terminated"].any() and {e.episode_length for e in episodes} == {2}
    else:
        assert not rollout["terminated"].any() and lengths == {5}
    _check_nstep(section, rollout, list(layout.obs_shape), layout.n_actions)
