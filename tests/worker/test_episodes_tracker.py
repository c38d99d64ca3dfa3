"""The shared episode runner and best-return tracker, by hand."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs.env_manager import EpisodeEnd, StepResult
from ding_lite.errors import ConfigError
from ding_lite.worker.episodes import run_episodes
from ding_lite.worker.tracker import BestReturnTracker, PlateauDetector

pytestmark = pytest.mark.unittest


class _Countdown:
    """Env i's episodes last i + 1, i + 2, ... steps with reward 1 per step (a return equals its length)."""

    action_space = None

    def __init__(self, env_num: int) -> None:
        self.env_num = env_num
        self.t = np.zeros(env_num, dtype=np.int64)
        self.episode = np.zeros(env_num, dtype=np.int64)

    def reset(self) -> np.ndarray:
        self.t[:] = 0
        self.episode[:] = 0
        return np.zeros((self.env_num, 1))

    def truncate(self, envs: list[int]) -> tuple[np.ndarray, list[EpisodeEnd]]:
        ends = [EpisodeEnd(i, float(self.t[i]), int(self.t[i]), False, {}) for i in envs]
        self.t[envs], self.episode[envs] = 0, self.episode[envs] + 1
        return self.t.reshape(-1, 1).astype(np.float64), ends

    def step(self, action: np.ndarray) -> StepResult:
        self.t += 1
        next_obs = self.t.reshape(-1, 1).astype(np.float64)  # an ended episode's final observation: its length
        ends = []
        for i in range(self.env_num):
            if self.t[i] == i + 1 + self.episode[i]:
                info = {"score": 1.0} if self.episode[i] else {}  # an env's first episode reports no score
                ends.append(EpisodeEnd(i, float(self.t[i]), int(self.t[i]), True, info))
                self.t[i], self.episode[i] = 0, self.episode[i] + 1
        obs = self.t.reshape(-1, 1).astype(np.float64)
        done = np.isin(np.arange(self.env_num), [e.env_id for e in ends])
        return StepResult(obs, next_obs, np.ones(self.env_num), done, np.zeros(self.env_num, dtype=bool), ends)


def test_runner_counts_each_envs_first_episodes_and_records_steps() -> None:
    run = run_episodes(_Countdown(2), lambda obs: np.zeros(len(obs), dtype=np.int64), 4, record=True)
    # env 0: episodes of 1, 2 steps; env 1: 2, 3 steps (each env's first two, in the order they ended)
    assert run.returns.tolist() == [1.0, 2.0, 2.0, 3.0] and run.lengths.tolist() == [1, 2, 2, 3]
    assert run.env_steps == 2 * 5 and run.capped == 0
    assert [run.steps(k)["reward"].tolist() for k in range(4)] == [[1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0, 1.0]]
    assert run.steps(3)["obs"][:, 0].tolist() == [0.0, 1.0, 2.0]  # the obs each step acted on


def test_runner_step_cap_and_counts_filter() -> None:
    capped = run_episodes(_Countdown(2), lambda obs: np.zeros(len(obs)), 4, max_episode_steps=2)
    # env 0: 1 then 2 steps (the second ends at the cap's step and counts as ended); env 1: 2, then cut at 2
    assert capped.returns.tolist() == [1.0, 2.0, 2.0, 2.0] and capped.cut.tolist() == [False, False, False, True]
    assert capped.capped == 1 and not capped.ends[-1].terminated
    scored = run_episodes(_Countdown(2), lambda obs: np.zeros(len(obs)), 2, counts=lambda e: "score" in e.info)
    assert scored.returns.tolist() == [2.0, 3.0]  # each env's first episode reports no score: its second counts
    with pytest.raises(ValueError, match="record=True"):
        scored.steps(0)


def test_recorded_episodes_carry_how_they_ended_and_their_final_observation() -> None:
    """Before, a recorded episode (a demo) had no end flags and no final observation: one cut at the step cap could
    not be told from one that terminated, nor bootstrapped."""
    run = run_episodes(_Countdown(2), lambda obs: np.zeros(len(obs), dtype=np.int64), 4, record=True,
                       max_episode_steps=2)
    # env 0: 1, then 2 steps (ended by the env on the cap's step: terminated); env 1: 2 steps, then cut at 2
    assert run.lengths.tolist() == [1, 2, 2, 2] and run.cut.tolist() == [False, False, False, True]
    episodes = run.episodes()
    for e in episodes[:3]:
        assert e.steps["terminated"].tolist() == [False] * (len(e.steps["obs"]) - 1) + [True]
        assert not e.steps["truncated"].any() and e.steps["terminated"].dtype == bool
    cut = episodes[3]
    assert cut.steps["truncated"].tolist() == [False, True] and not cut.steps["terminated"].any()
    # the observation after the last step: the env's next_obs where it ended, the running one where it was cut
    assert [float(e.final_obs[0]) for e in episodes] == [1.0, 2.0, 2.0, 2.0]
    assert run_episodes(_Countdown(2), lambda obs: np.zeros(len(obs)), 2).finals is None  # without record


def test_tracker_best_improved_stop_and_frequency() -> None:
    tracker = BestReturnTracker(eval_freq=10, stop_value=5.0, best_return=2.0)
    assert tracker.should_evaluate(0)
    assert tracker.update(1.0, 0) is False and tracker.best_return == 2.0  # a resumed run's bar holds
    assert not tracker.should_evaluate(9) and tracker.should_evaluate(10)
    assert tracker.update(3.0, 10) is True and not tracker.should_stop
    assert tracker.update(3.0, 20) is False  # equal is no improvement
    assert tracker.update(5.0, 30) and tracker.should_stop and tracker.stop_reason == "stop value reached"
    assert tracker.state_dict() == {"best_return": 5.0, "last_eval_iter": 30}
    assert tracker.update(6.0, 0) and not tracker.should_stop  # train iteration 0: the untrained policy
    assert BestReturnTracker(1).best_return == -math.inf


def test_tracker_plateau_rule_stays_reached() -> None:
    tracker = BestReturnTracker(1, None, plateau=PlateauDetector(2, 0.1))
    for value in (1.0, 1.05):
        tracker.update(value, 0)
        assert not tracker.should_stop
    tracker.update(1.08, 0)
    assert tracker.should_stop and tracker.stop_reason.startswith("plateau")
    tracker.update(9.0, 0)  # a later gain does not undo the plateau
    assert tracker.should_stop
    with pytest.raises(ConfigError, match="plateau_patience"):
        PlateauDetector(0, 0.1)


class _Cut(_Countdown):
    """:class:`_Countdown` whose env 1 has its episode cut after the run's step ``at`` (a worker restart: the row is
    flagged ``interrupted``, and the env starts a fresh episode, as the subprocess manager does)."""

    def __init__(self, env_num: int, at: int) -> None:
        super().__init__(env_num)
        self.at, self.steps = at, 0

    def step(self, action: np.ndarray) -> StepResult:
        result = super().step(action)
        self.steps += 1
        if self.steps != self.at:
            return result
        self.t[1] = 0
        interrupted = np.array([False, True])
        obs = self.t.reshape(-1, 1).astype(np.float64)
        return result._replace(obs=obs, episodes=[e for e in result.episodes if e.env_id != 1],
                               interrupted=interrupted)


def test_an_episode_cut_by_a_worker_restart_is_not_spliced_into_the_next() -> None:
    """Before, the runner went on counting the cut episode's steps: a recorded episode (a demo) held the cut one's
    steps too, and a capped episode's return and length included them."""
    run = run_episodes(_Cut(2, at=1), lambda obs: np.zeros(len(obs), dtype=np.int64), 4, record=True)
    # env 1's first episode is cut after 1 of its 2 steps; its next two (2 and 3 steps) are counted
    assert run.returns.tolist() == [1.0, 2.0, 2.0, 3.0] and run.lengths.tolist() == [1, 2, 2, 3]
    for k in range(4):
        steps = run.steps(k)
        assert len(steps["reward"]) == run.lengths[k]
        assert steps["obs"][:, 0].tolist() == list(range(int(run.lengths[k])))  # one episode, from its first step
    capped = run_episodes(_Cut(2, at=1), lambda obs: np.zeros(len(obs), dtype=np.int64), 2, max_episode_steps=2)
    assert capped.lengths.tolist() == [1, 2] and capped.returns.tolist() == [1.0, 2.0] and capped.capped == 0


SHORT, LONG, CAP = 1, 20, 10  # CoinLengthEnv's episode lengths and the step cap: a capped return is 1 or 10
CAPPED_MEAN = (SHORT + CAP) / 2  # by hand: each episode is short or long with probability 1/2


@pytest.mark.parametrize("manager", ["base", "subprocess"])
def test_a_capped_env_plays_its_share_and_the_mean_is_unbiased(manager: str) -> None:
    """Before, an env whose episode hit the cap played no more episodes: the run counted 4.5 of 6 episodes on
    average, and as an env whose first episode was long then counted one episode where another counted two, the
    mean of an evaluation was biased (5.85 where the capped return's mean is 5.5 here; 55.1 for 51 with 2 / 200-step
    episodes and a cap of 100). Now a capped episode is cut as a time limit cuts it and its env goes on."""
    from fake_envs import CoinLengthEnv

    from ding_lite.envs.env_manager import BaseEnvManager
    from ding_lite.envs.subprocess_manager import SubprocessEnvManager

    make = BaseEnvManager if manager == "base" else SubprocessEnvManager
    means = []
    with make([lambda: CoinLengthEnv(SHORT, LONG)] * 3) as env:
        for seed in range(1500):
            env.seed(10 * seed)
            run = run_episodes(env, lambda obs: np.zeros(len(obs), dtype=np.int64), 6, max_episode_steps=CAP)
            assert len(run.returns) == 6 and sorted(e.env_id for e in run.ends) == [0, 0, 1, 1, 2, 2]
            cut = [k for k, c in enumerate(run.cut) if c]  # returns so far: the cap's 10 steps of reward 1
            assert all(run.returns[k] == CAP and not run.ends[k].terminated for k in cut)
            means.append(run.returns.mean())
    # per-evaluation sd 1.84 (4.5 / sqrt(6)): the mean of 1500 is within 0.15 (3 standard errors) of the truth
    assert abs(np.mean(means) - CAPPED_MEAN) < 0.15


def test_an_evaluation_blames_a_nan_action_on_the_policy_not_the_reward_it_makes() -> None:
    """Pendulum's reward is -(θ² + 0.1 θ̇² + 0.001 u²): a NaN action made it NaN and the env was named."""
    from ding_lite.envs import BaseEnvManager
    from ding_lite.errors import DivergedError

    manager = BaseEnvManager([lambda: gym.make("Pendulum-v1")] * 2)
    manager.seed(0)

    def act(obs: np.ndarray) -> np.ndarray:
        action = np.zeros((len(obs), 1), np.float32)
        action[1] = np.nan
        return action

    with pytest.raises(DivergedError, match=r"the policy's action for env 1 holds NaN at step 0 of its episode 0 "
                                            r"\(evaluation or demo collection\), on a finite observation"):
        run_episodes(manager, act, 2)
    manager.close()
