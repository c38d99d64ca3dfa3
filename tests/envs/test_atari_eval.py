"""What an Atari evaluation reports is the game's score (Machado et al. 2018): whole games with unclipped rewards,
whatever the training-only settings (``episodic_life``, reward clipping), on both routes (envpool and ``atari``)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("envpool")
pytest.importorskip("ale_py")

from easydict import EasyDict  # noqa: E402

from ding_lite.build import build_env_managers  # noqa: E402
from ding_lite.envs.envpool_env import EnvpoolEnv  # noqa: E402
from ding_lite.envs.suites import AtariEnv  # noqa: E402
from ding_lite.runtime.collection import LocalEvaluation  # noqa: E402
from ding_lite.worker.episodes import run_episodes  # noqa: E402

pytestmark = pytest.mark.unittest

TRAIN_ONLY = dict(episodic_life=True, reward_clip=True)


def _cfg(route: str, **train: Any) -> EasyDict:
    if route == "envpool":
        env = dict(type="envpool", env_id="Breakout-v5", kwargs=dict(train), manager=dict(type="envpool"))
    else:
        env = dict(type="atari", env_id="Breakout-v5", manager=dict(type="base"), **train)
    return EasyDict(env=dict(env, collector_env_num=1, evaluator_env_num=1), policy=dict(model=dict()))


def _random_play(manager: Any, n_episode: int) -> Any:
    rng = np.random.default_rng(0)
    return run_episodes(manager, lambda obs: rng.integers(4, size=len(obs)), n_episode)


@pytest.mark.parametrize("route", ["envpool", "atari"])
def test_evaluation_plays_whole_games_where_training_plays_lives(route: str) -> None:
    """Before, the evaluator played the training env section: with episodic_life each counted 'episode' (and the
    return in [eval], result.json and -m eval) was one life's, a fifth of a Breakout game."""
    collector_env, evaluator_env = build_env_managers(_cfg(route, **TRAIN_ONLY), seed=0)
    with collector_env, evaluator_env:
        train = _random_play(collector_env, 2)
        evaluation = _random_play(evaluator_env, 1)
    assert all(end.terminated and end.info["lives"] > 0 for end in train.ends)  # training: one life an episode
    game = evaluation.ends[0]
    assert game.terminated and game.info["lives"] == 0  # evaluation: the game, to its last life
    assert evaluation.lengths[0] > max(train.lengths)


@pytest.mark.parametrize("route", ["envpool", "atari"])
def test_serial_pipelines_evaluation_env_is_the_whole_game(route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The serial pipeline's evaluator builds its own env manager (LocalEvaluation): whole games there too."""
    monkeypatch.setattr("ding_lite.runtime.collection.build_evaluator", lambda *args, **kwargs: None)
    evaluation = LocalEvaluation(_cfg(route, **TRAIN_ONLY), seed=0, policy=None)
    try:
        run = _random_play(evaluation.env, 1)
    finally:
        evaluation.close()
    assert run.ends[0].info["lives"] == 0


def test_envpool_evaluation_pool_has_no_training_only_settings() -> None:
    _, evaluator_env = build_env_managers(_cfg("envpool", **TRAIN_ONLY), seed=0, collect=False)
    with evaluator_env:
        config = evaluator_env._pools[0].config
    assert (config["episodic_life"], config["reward_clip"]) == (False, False)
    plain = _cfg("envpool").env  # nothing to switch off: the section itself (no keyword envpool might not take)
    assert EnvpoolEnv.eval_config(plain) is plain


class _ScaledRewards:
    """ale-py's interface with every reward multiplied by 7 (Breakout's random play scores 1-point bricks only)."""

    def __init__(self, ale: Any) -> None:
        self._ale = ale

    def act(self, action: Any) -> float:
        return 7 * self._ale.act(action)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ale, name)


@pytest.mark.parametrize("clip", [True, False])
def test_atari_route_clips_training_rewards_to_their_sign(clip: bool) -> None:
    """env.reward_clip on the atari route, as envpool's kwargs.reward_clip: each step's reward becomes its sign."""
    env = AtariEnv(dict(env_id="Breakout-v5", reward_clip=clip))
    env.ale = _ScaledRewards(env.ale)  # type: ignore[attr-defined]
    env.reset(seed=0)
    rng, rewards = np.random.default_rng(0), []
    for _ in range(400):  # a game of random play, which scores a few bricks
        _, reward, terminated, truncated, _ = env.step(int(rng.integers(4)))
        rewards.append(reward)
        if terminated or truncated:
            break
    env.close()
    assert {r for r in rewards if r} == ({1.0} if clip else {7.0})
    assert AtariEnv.eval_config(dict(env_id="Breakout-v5", reward_clip=True, episodic_life=True)) == dict(
        env_id="Breakout-v5", reward_clip=False, episodic_life=False)
