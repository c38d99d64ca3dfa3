"""The Atari routes give the same task frame by frame: envpool's manager, ``type='envpool'`` under the ``base``
manager (one pool per env) and the plain gymnasium route (``type='atari'``: envpool's C++ env written out over
ale-py), with the fire reset, ``episodic_life`` (a lost life ends the episode, the game goes on) and the FIRE after
a lost life; and the gymnasium route against envpool's own pool where ding_lite adds nothing."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("envpool")
pytest.importorskip("ale_py")

from ding_lite.build import build_env_manager
from ding_lite.envs.suites import AtariEnv  # noqa: E402

pytestmark = pytest.mark.unittest

STEPS = 400  # Breakout with random actions: lost lives, game overs and a truncation at MAX_STEPS
MAX_STEPS = 170  # the first game of the random actions outlasts it (a truncation), the second not
NOOP = dict(noop_max=1)  # no random no-ops (envpool's and ours come from different generators): FIRE only


def _routes(game: str, episodic: bool) -> dict[str, dict]:
    pool = dict(type="envpool", env_id=game, max_episode_steps=MAX_STEPS, kwargs=dict(NOOP, episodic_life=episodic))
    return {
        "envpool manager": pool | {"manager": dict(type="envpool", pipeline_groups=1)},
        "envpool under base": pool | {"manager": dict(type="base")},
        "gymnasium (atari)": dict(type="atari", env_id=game, max_episode_steps=MAX_STEPS, episodic_life=episodic,
                                  manager=dict(type="base"), **NOOP),
    }


def _play(env_cfg: dict, actions: np.ndarray) -> list[tuple]:
    with build_env_manager(env_cfg, 1, seed=0) as manager:
        rows = [(manager.reset()[0],)]
        for a in actions:
            r = manager.step(np.array([a]))
            rows.append((r.obs[0], r.next_obs[0], float(r.reward[0]), bool(r.terminated[0]), bool(r.truncated[0]),
                         [(e.episode_return, e.episode_length, e.terminated) for e in r.episodes]))
    return rows


@pytest.mark.parametrize("episodic", [False, True], ids=["whole-games", "episodic-life"])
def test_three_routes_give_the_same_frames_rewards_and_episode_ends(episodic: bool) -> None:
    actions = np.random.default_rng(0).integers(4, size=STEPS)
    played = {name: _play(cfg, actions) for name, cfg in _routes("Breakout-v5", episodic).items()}
    reference = played.pop("envpool manager")
    ends = [row[3] or row[4] for row in reference[1:]]
    assert sum(row[3] for row in reference[1:]) >= (3 if episodic else 1)  # lives lost / a game over
    assert any(row[4] for row in reference[1:])  # a truncation at MAX_STEPS
    for name, rows in played.items():
        for t, (ours, theirs) in enumerate(zip(rows, reference, strict=True)):
            for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                if isinstance(a, np.ndarray):
                    np.testing.assert_array_equal(a, b, err_msg=f"{name}: step {t}, field {k}")
                else:
                    assert a == b, f"{name}: step {t}, field {k}: {a} != {theirs[k]}"
    assert any(ends)


def test_fire_after_a_lost_life_keeps_a_game_that_waits_for_fire_going() -> None:
    """A policy that never presses FIRE: Breakout serves the ball after each lost life, so the game ends long
    before its step limit (without the FIRE step it stood still after the first lost life until the limit)."""
    for fire in (True, False):
        env = AtariEnv(dict(env_id="Breakout-v5", fire_on_life_loss=fire, max_episode_steps=600))
        env.reset(seed=0)
        for t in range(600):
            _, _, terminated, truncated, info = env.step(2 + t % 2)  # RIGHT, LEFT: never FIRE
            if terminated or truncated:
                break
        env.close()
        # with the FIRE step: a game over (no lives left) long before the limit; without: stuck until it
        assert (terminated, truncated, info["lives"] == 0) == ((True, False, True) if fire else (False, True, False))
        assert t < 400 if fire else t == 599


@pytest.mark.parametrize("episodic", [False, True], ids=["whole-games", "episodic-life"])
def test_gymnasium_route_is_envpools_atari_env(episodic: bool) -> None:
    """Against envpool's own C++ env (nothing of ding_lite's in between), the FIRE after a lost life off."""
    import envpool

    pool = envpool.make_gymnasium("Breakout-v5", num_envs=1, batch_size=1, seed=0, episodic_life=episodic,
                                  max_episode_steps=MAX_STEPS, **NOOP)
    ours = AtariEnv(dict(env_id="Breakout-v5", episodic_life=episodic, fire_on_life_loss=False,
                         max_episode_steps=MAX_STEPS, **NOOP))
    expected, _ = pool.reset()
    got, _ = ours.reset(seed=0)
    np.testing.assert_array_equal(got, expected[0])
    for t, a in enumerate(np.random.default_rng(1).integers(4, size=STEPS)):
        expected, reward, terminated, truncated, _ = pool.step(np.array([a], dtype=np.int32))
        got, our_reward, our_terminated, our_truncated, _ = ours.step(int(a))
        np.testing.assert_array_equal(got, expected[0], err_msg=f"step {t}")
        assert (our_reward, our_terminated, our_truncated) == (reward[0], terminated[0], truncated[0]), t
        if terminated[0] or truncated[0]:
            expected, *_ = pool.step(np.zeros(1, dtype=np.int32))  # envpool's next episode comes by a step
            got, _ = ours.reset()
            np.testing.assert_array_equal(got, expected[0], err_msg=f"reset after step {t}")
    ours.close()
