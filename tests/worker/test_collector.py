"""Sample and episode collectors (ding_lite/worker/collector.py): rollout shapes, env-step accounting, episodes."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fake_envs import counting_env_fns
from rollout_probe import RolloutBlockProbe

from ding_lite.data.batch import flatten_time
from ding_lite.envs import BaseEnvManager
from ding_lite.worker import EpisodeCollector, SampleCollector

pytestmark = pytest.mark.unittest


class RecordingPolicy:
    """Collect mode acting ``t % 2`` (t: the step within the episode, obs[:, 1]); records what it is given."""

    def __init__(self) -> None:
        self.env_steps: list[int] = []
        self.rollouts: list[dict] = []

    def forward(self, obs: np.ndarray, env_step: int = 0) -> dict:
        self.env_steps.append(env_step)
        return {"action": (obs[:, 1] % 2).astype(np.int64), "logit": obs[:, 0] * 10, "unused": np.zeros(len(obs))}

    def process_transition(self, output: dict) -> dict:
        return {"action": output["action"], "tag": output["logit"]}

    def get_train_sample(self, rollout: dict) -> dict:
        self.rollouts.append(rollout)
        return flatten_time(rollout)

    def mode(self) -> SimpleNamespace:
        return SimpleNamespace(forward=self.forward, process_transition=self.process_transition,
                               get_train_sample=self.get_train_sample, reset=lambda env_ids=None: None)


def test_sample_collector_shapes_env_steps_and_continuity() -> None:
    policy = RecordingPolicy()
    manager = BaseEnvManager(counting_env_fns([2, 3, 4]))
    manager.seed(0)
    collector = SampleCollector(dict(type="sample"), manager, policy.mode())
    try:
        samples, episodes = collector.collect(n_sample=10)  # ceil(10 / 3) = 4 steps of 3 envs
        (rollout,) = policy.rollouts
        assert collector.env_step == 12 and policy.env_steps == [0, 3, 6, 9]
        assert set(rollout) == {"obs", "next_obs", "reward", "terminated", "truncated", "done", "valid", "action",
                                    "tag"}
        assert rollout["obs"].shape == rollout["next_obs"].shape == (4, 3, 2)
        for key in ("reward", "terminated", "truncated", "action", "tag"):
            assert rollout[key].shape == (4, 3), key
        assert samples["obs"].shape == (12, 2) and samples["reward"].shape == (12,)
        np.testing.assert_array_equal(rollout["obs"][:, 0, 1], [0, 1, 0, 1])  # env 0: 2-step then 3-step episode
        np.testing.assert_array_equal(rollout["action"], rollout["obs"][:, :, 1] % 2)
        np.testing.assert_array_equal(rollout["reward"], 1 + rollout["action"])
        np.testing.assert_array_equal(rollout["tag"], rollout["obs"][:, :, 0] * 10)
        np.testing.assert_array_equal(rollout["terminated"], [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
        # next_obs[t] is obs[t+1] except where the episode ended (there obs[t+1] is the reset observation)
        same = (rollout["next_obs"][:-1] == rollout["obs"][1:]).all(axis=-1)
        np.testing.assert_array_equal(same, ~rollout["terminated"][:-1])
        # ended: env 0 (2 steps: 1 + 2), env 1 (3 steps: 1 + 2 + 1), env 2 (4 steps: 1 + 2 + 1 + 2)
        assert [(e.env_id, e.episode_length, e.episode_return) for e in episodes] == [(0, 2, 3.0), (1, 3, 4.0),
                                                                                     (2, 4, 6.0)]
        assert collector.episode_count == 3

        # the env state after the call: env 2 just ended its episode, so it holds its reset observation
        np.testing.assert_array_equal(manager.obs, [[1, 2], [101, 1], [201, 0]])
        collector.collect(n_sample=7)  # 3 more steps: episodes run on across calls
        second = policy.rollouts[1]
        assert collector.env_step == 21 and policy.env_steps[4:] == [12, 15, 18]
        np.testing.assert_array_equal(second["obs"][0], [[1, 2], [101, 1], [201, 0]])
    finally:
        collector.close()


def test_episode_collector_returns_exactly_k_whole_episodes() -> None:
    policy = RecordingPolicy()
    manager = BaseEnvManager(counting_env_fns([2, 3]))
    manager.seed(0)
    collector = EpisodeCollector(dict(type="episode"), manager, policy.mode())
    try:
        samples, episodes = collector.collect(n_episode=3)
        assert len(episodes) == 3 and len(policy.rollouts) == 3
        lengths = [len(r["reward"]) for r in policy.rollouts]
        assert lengths == [e.episode_length for e in episodes]
        assert len(samples["reward"]) == sum(lengths)
        for rollout, episode in zip(policy.rollouts, episodes, strict=True):
            assert rollout["obs"].shape == (episode.episode_length, 1, 2)  # one episode as a (T, 1) rollout
            np.testing.assert_array_equal(rollout["obs"][:, 0, 1], np.arange(episode.episode_length))
            assert rollout["terminated"][-1, 0] and not rollout["terminated"][:-1].any()  # whole, ends at its end
            assert rollout["reward"].sum() == episode.episode_return
            np.testing.assert_array_equal(rollout["obs"][:, 0, 0], rollout["obs"][0, 0, 0])  # one episode only
        assert collector.env_step == 64 * 2  # one chunk of 64 steps of both envs
        # the first three to end, in the order they ended: env 0 at step 2, env 1 at 3, env 0 at 5
        assert [(e.env_id, e.episode_length) for e in episodes] == [(0, 2), (1, 3), (0, 3)]
        # the chunk's later episodes are not thrown away: the next call returns them (env 1 at 7, env 0 at 9)
        _, episodes = collector.collect(n_episode=2)
        assert [(e.env_id, e.episode_length) for e in episodes] == [(1, 4), (0, 4)]
        assert collector.env_step == 64 * 2
    finally:
        collector.close()


def test_episode_collector_carries_episodes_across_chunks() -> None:
    policy = RecordingPolicy()
    manager = BaseEnvManager(counting_env_fns([70, 100]))
    manager.seed(0)
    collector = EpisodeCollector(dict(type="episode"), manager, policy.mode())
    try:
        samples, episodes = collector.collect(n_episode=1)
        (episode,) = episodes
        (rollout,) = policy.rollouts
        assert (episode.env_id, episode.episode_length) == (0, 70)
        np.testing.assert_array_equal(rollout["obs"][:, 0, 1], np.arange(70))  # pieces of 2 chunks, in order
        assert rollout["reward"].sum() == episode.episode_return == 70 + 35
        assert collector.env_step == 2 * 64 * 2
        samples, episodes = collector.collect(n_episode=1)  # env 1's 100-step episode, started in the first call
        assert [(e.env_id, e.episode_length) for e in episodes] == [(1, 100)]
        np.testing.assert_array_equal(policy.rollouts[1]["obs"][:, 0, 1], np.arange(100))
    finally:
        collector.close()


def test_episode_collector_fills_in_stats_a_manager_did_not_report() -> None:
    class SilentManager(BaseEnvManager):
        """Flags episode ends but reports no EpisodeEnd (as a manager might for an episode cut by a restart)."""

        def step(self, actions):
            return super().step(actions)._replace(episodes=[])

    policy = RecordingPolicy()
    manager = SilentManager(counting_env_fns([3], truncate=True))
    manager.seed(0)
    collector = EpisodeCollector(dict(type="episode"), manager, policy.mode())
    try:
        _, (episode,) = collector.collect(n_episode=1)
    finally:
        collector.close()
    assert (episode.env_id, episode.episode_length, episode.episode_return, episode.terminated) == (0, 3, 4.0, False)


def test_pipelined_rollout_equals_the_synchronous_one() -> None:
    """A manager whose env groups step apart (envpool's ``pipeline_groups``) gives the sample collector the same
    rollout as stepping all envs at once: each group's actions come from its own rows, each env one step per row."""
    pytest.importorskip("envpool")
    from ding_lite.build import build_env_manager

    def rollout(groups: int) -> tuple[dict, list, list]:
        policy = RecordingPolicy()
        cfg = dict(type="envpool", env_id="CartPole-v1", max_episode_steps=7,
                   manager=dict(type="envpool", pipeline_groups=groups))
        with build_env_manager(cfg, 5, seed=2) as manager:
            collector = SampleCollector(dict(type="sample"), manager, policy.mode())
            first = collector.rollout(6)[0]  # the second rollout starts where the first ended
            columns, episodes = collector.rollout(6)
            assert collector.env_step == 60
        return ({k: np.concatenate([first[k], columns[k]]) for k in columns},
                [(e.env_id, e.episode_length) for e in episodes], policy.env_steps)

    sync, piped = rollout(1), rollout(2)
    assert set(sync[0]) == set(piped[0])
    for key in sync[0]:
        np.testing.assert_array_equal(piped[0][key], sync[0][key], err_msg=key)
    assert piped[1] == sync[1] and len(sync[1]) == 5  # every env's 7-step episode ends in the second rollout
    assert sync[2] == list(range(0, 60, 5)) and piped[2] == [s for s in sync[2] for _ in range(2)]


def test_a_rollout_runs_inside_the_policys_rollout_weights_block() -> None:
    """The collector enters ``rollout_weights`` once per rollout (where the model's inference weight copies live)
    and every forward pass runs inside it."""
    policy, probe = RecordingPolicy(), RolloutBlockProbe()
    mode = policy.mode()
    mode.forward, mode.rollout_weights = probe.watch(policy.forward), probe.rollout_weights
    collector = SampleCollector(dict(type="sample"), BaseEnvManager(counting_env_fns([2, 3])), mode)
    try:
        collector.collect(n_sample=6)
        collector.collect(n_sample=6)
        assert (probe.entries, probe.outside_calls, probe.inside) == (2, 0, False) and policy.env_steps
    finally:
        collector.close()


def _columns(t_len: int = 3, n_env: int = 2) -> dict[str, np.ndarray]:
    return {"obs": np.zeros((t_len, n_env, 3), np.float32), "next_obs": np.zeros((t_len, n_env, 3), np.float32),
            "action": np.zeros((t_len, n_env, 1), np.float32), "reward": np.zeros((t_len, n_env), np.float32)}


def test_a_nan_action_on_a_finite_observation_blames_the_policy_not_the_reward_it_caused() -> None:
    """Before, SAC or TD3 at a learning rate of 1e12 ended with "env 0's reward holds NaN": Pendulum's reward is
    -(θ² + 0.1 θ̇² + 0.001 u²), so the NaN action made it NaN, and the env was blamed."""
    from ding_lite.errors import DivergedError, EnvError
    from ding_lite.worker.collector import check_finite

    columns = _columns()
    columns["action"][1, 1] = np.nan
    columns["reward"][1, 1] = np.nan  # what the env made of it
    columns["next_obs"][2, 0] = np.inf  # later: not the first
    with pytest.raises(DivergedError, match=r"the policy's action for env 1 holds NaN at the run's env step 12, on a "
                                            r"finite observation: .*lower the learning rate"):
        check_finite(columns, 10, 2)
    columns["obs"][1, 1] = np.nan  # the env's observation came first: the env is to blame
    with pytest.raises(EnvError, match=r"env 1's observation holds NaN at the run's env step 12"):
        check_finite(columns, 10, 2)
    columns = _columns()
    columns["reward"][0, 1] = np.inf  # an env's own bad reward before any bad action
    columns["action"][2, 0] = np.nan
    with pytest.raises(EnvError, match=r"env 1's reward holds inf \(inf\) at the run's env step 12"):
        check_finite(columns, 10, 2)
