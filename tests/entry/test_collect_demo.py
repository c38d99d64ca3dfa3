"""collect_demo: the success filter, per-env episode quotas, stored steps that replay in the env, the CLI mode."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import DIZOO_CARTPOLE, run_cli

from ding_lite.build import build, fill_model_shapes
from ding_lite.config import compile_config
from ding_lite.data.demo import episodes_to_dataset
from ding_lite.data.demo_file import read_demo, write_demo
from ding_lite.entry.collect_demo import collect_demo_pipeline, rollout_episodes, success_rule
from ding_lite.envs.env_manager import BaseEnvManager, EpisodeEnd
from ding_lite.envs.spaces import EncodedObservation
from ding_lite.errors import ConfigError, DingLiteError
from ding_lite.utils.checkpoint import save_checkpoint

pytestmark = pytest.mark.unittest

CONFIG = dict(env=dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=3, stop_value=195),
              policy=dict(type="ppo"))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An untrained PPO policy's checkpoint: its CartPole episodes last from about 10 to 60 steps."""
    cfg = compile_config(CONFIG)
    env = gym.make("CartPole-v1")
    fill_model_shapes(cfg, env.observation_space, env.action_space)
    torch.manual_seed(0)  # the same weights whatever ran before (some inits act alike in every episode)
    policy = build(cfg, "policy")
    path = tmp_path_factory.mktemp("ckpt") / "ckpt.pth.tar"
    save_checkpoint(path, {"policy": policy.learn_mode.state_dict(), "train_iter": 0, "env_step": 0})
    return path


def _end(ret, info=None):
    return EpisodeEnd(0, ret, int(ret), True, info or {})


def test_success_rule_return_threshold_and_info():
    ok, rule = success_rule(100.0, 195, "success")
    assert rule == "info['success'] else return >= 100.0"
    assert ok(_end(150.0)) and ok(_end(100.0)) and not ok(_end(99.9))
    # an env that reports success decides by it, whatever the return
    assert not ok(_end(500.0, {"success": False}))
    assert ok(_end(3.0, {"success": True}))
    default, rule = success_rule(None, 195, "")  # threshold falls back to env.stop_value; info ignored
    assert rule == "return >= 195" and not default(_end(194.0, {"success": True}))
    only_info, _ = success_rule(None, None, "success")
    assert only_info(_end(1.0, {"success": True})) and not only_info(_end(1e6))


def test_success_rule_errors():
    with pytest.raises(ConfigError, match="no success rule"):
        success_rule(None, None, "")
    with pytest.raises(ConfigError, match="demo.return_threshold must be a number, got 'high'"):
        success_rule("high", None, "success")


def test_success_filter_drops_failed_episodes(tmp_path, checkpoint):
    everything = collect_demo_pipeline(CONFIG, 0, checkpoint, 9, tmp_path / "all.npz",
                                       overrides=("demo.return_threshold=0",))
    returns = np.array(everything["all_returns"])
    assert len(returns) == 9 and everything["n_episode_kept"] == 9
    threshold = float(np.median(returns))
    filtered = collect_demo_pipeline(CONFIG, 0, checkpoint, 9, tmp_path / "some.npz",
                                     overrides=(f"demo.return_threshold={threshold}",))
    assert filtered["all_returns"] == everything["all_returns"]  # same seed, same episodes
    kept = returns[returns >= threshold]
    assert 0 < len(kept) < 9
    demo = read_demo(tmp_path / "some.npz")
    assert demo.n_episode == len(kept) and (demo.episode_return >= threshold).all()
    np.testing.assert_array_equal(np.sort(demo.episode_return), np.sort(kept))
    assert len(demo) == int(kept.sum())  # CartPole: one reward per step
    assert demo.metadata["n_episode_rolled_out"] == 9 and demo.metadata["policy"] == "ppo"
    assert demo.metadata["checkpoint"] == str(checkpoint) and demo.metadata["policy_mode"] == "eval"


def test_no_successful_episode_is_an_error_and_writes_nothing(tmp_path, checkpoint):
    with pytest.raises(DingLiteError, match=r"none of the 3 episodes .* succeeded .*demo.return_threshold"):
        collect_demo_pipeline(CONFIG, 0, checkpoint, 3, tmp_path / "none.npz",
                              overrides=("demo.return_threshold=100000",))
    assert not list(tmp_path.iterdir())


def test_collect_mode_and_bad_settings(tmp_path, checkpoint):
    summary = collect_demo_pipeline(CONFIG, 1, checkpoint, 2, tmp_path / "c.npz",
                                    overrides=("demo.policy_mode=collect", "demo.return_threshold=0"))
    assert summary["n_episode_kept"] == 2 and read_demo(tmp_path / "c.npz").metadata["policy_mode"] == "collect"
    with pytest.raises(ConfigError, match="demo.policy_mode must be one of"):
        collect_demo_pipeline(CONFIG, 0, checkpoint, 2, tmp_path / "x.npz", overrides=("demo.policy_mode=greedy",))
    with pytest.raises(ConfigError, match="must be at least 1, got 0"):
        collect_demo_pipeline(CONFIG, 0, checkpoint, 0, tmp_path / "x.npz")


def test_episodes_are_spread_over_envs_and_replay_exactly():
    envs = BaseEnvManager([lambda: gym.make("CartPole-v1") for _ in range(3)])
    envs.seed(10)
    rng = np.random.default_rng(0)
    episodes = rollout_episodes(envs, lambda obs: rng.integers(0, 2, len(obs)), 7)
    envs.close()
    assert [sum(e.end.env_id == i for e in episodes) for i in range(3)] == [3, 2, 2]
    for e in episodes:
        assert len(e.steps["obs"]) == len(e.steps["action"]) == e.end.episode_length
        assert e.steps["reward"].sum() == e.end.episode_return
    # the first episode of env 0 replays step for step in a fresh env with its seed (obs aligned with actions)
    first = next(e for e in episodes if e.end.env_id == 0)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=10)
    for o, a in zip(first.steps["obs"], first.steps["action"], strict=True):
        np.testing.assert_array_equal(o, obs)
        obs, *_ = env.step(int(a))


def test_cli_collect_demo(tmp_path, checkpoint):
    out = tmp_path / "cli_demo.npz"
    cfg = DIZOO_CARTPOLE / "cartpole_ppo_config.py"
    done = run_cli("-m", "collect_demo", "-c", str(cfg), "--load-ckpt", str(checkpoint), "--n-episode", "4",
                   "--demo-path", str(out), "--set", "demo.return_threshold=0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kept 4/4 episodes" in done.stderr and "warning" not in done.stderr.lower()
    assert read_demo(out).n_episode == 4
    missing = run_cli("-m", "collect_demo", "-c", str(cfg), "--n-episode", "4", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "ding_lite: error: no checkpoint given (--load-ckpt or policy.load_path) and none found at "
        "cartpole_ppo_seed0/ckpt/ckpt_best.pth.tar"]


def test_an_existing_demo_file_is_never_overwritten(tmp_path, checkpoint):
    """As a run never writes into an earlier run's folder (it takes <folder>_1), collect_demo never replaces an
    earlier demo file: it writes <stem>_1.npz, and says so (before, the earlier file was replaced without a word)."""
    out = tmp_path / "demo.npz"
    cfg = DIZOO_CARTPOLE / "cartpole_ppo_config.py"
    args = ("-m", "collect_demo", "-c", str(cfg), "--load-ckpt", str(checkpoint), "--n-episode", "2", "--demo-path",
            str(out), "--set", "demo.return_threshold=0")
    out.write_bytes(b"an earlier demo file")
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == b"an earlier demo file"
    assert f"{out} exists (an earlier demo file is never overwritten): writing to {tmp_path / 'demo_1.npz'}" \
        in done.stderr
    assert read_demo(tmp_path / "demo_1.npz").n_episode == 2
    summary = collect_demo_pipeline(CONFIG, 0, checkpoint, 2, out, overrides=("demo.return_threshold=0",))
    assert summary["demo_path"] == str(tmp_path / "demo_2.npz") and read_demo(tmp_path / "demo_2.npz").n_episode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.npz", "demo_1.npz", "demo_2.npz"]


def test_cli_collect_demo_reads_and_writes_the_experiment_of_exp_name(tmp_path, checkpoint):
    """``--exp-name`` names the experiment whose best checkpoint is rolled out and where the demo goes, as for
    ``-m eval`` (it was ignored: the config's exp_name was used)."""
    (tmp_path / "expert" / "ckpt").mkdir(parents=True)
    (tmp_path / "expert" / "ckpt" / "ckpt_best.pth.tar").write_bytes(checkpoint.read_bytes())
    cfg = DIZOO_CARTPOLE / "cartpole_ppo_config.py"
    done = run_cli("-m", "collect_demo", "-c", str(cfg), "--exp-name", "expert", "--n-episode", "2", "--set",
                   "demo.return_threshold=0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_demo(tmp_path / "expert" / "demo.npz").n_episode == 2


def test_box_actions_are_stored_clipped_and_seeds_get_their_own_file(tmp_path):
    config = dict(env=dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, stop_value=-250),
                  policy=dict(type="ppo", model=dict(init_log_std=1.0)))  # σ = e: many samples beyond ±2
    cfg = compile_config(config)
    env = gym.make("Pendulum-v1")
    fill_model_shapes(cfg, env.observation_space, env.action_space)
    ckpt = tmp_path / "pendulum.pth.tar"
    save_checkpoint(ckpt, {"policy": build(cfg, "policy").learn_mode.state_dict(), "train_iter": 0, "env_step": 0})
    summary = collect_demo_pipeline(config, 1, ckpt, 2, tmp_path / "pendulum.npz", n_seeds=3,
                                    overrides=("demo.policy_mode=collect", "demo.return_threshold=-100000"))
    assert summary["demo_path"] == str(tmp_path / "pendulum_seed1.npz")
    demo = read_demo(tmp_path / "pendulum_seed1.npz")
    assert demo.action.dtype == np.float32 and demo.action.shape == (400, 1)
    assert demo.action.min() == -2.0 and demo.action.max() == 2.0  # clipped to the bounds, as executed
    demo.check_fits(env.observation_space, env.action_space)


def test_the_eval_step_cap_cuts_demo_episodes_truncated_and_every_env_plays_its_share(tmp_path, checkpoint):
    """policy.eval.evaluator.max_episode_steps cuts each demo episode at that step (before, -m collect_demo ignored
    it; the evaluator's cap stopped a capped env's share): its steps up to the cap are kept, it ends truncated, and
    its env's next episode starts from a reset (the second episode of env 0 replays from the env's next reset)."""
    envs = BaseEnvManager([lambda: gym.make("CartPole-v1") for _ in range(3)])
    envs.seed(10)
    episodes = rollout_episodes(envs, lambda obs: np.zeros(len(obs), dtype=np.int64), 6, max_episode_steps=4)
    envs.close()
    assert [sum(e.end.env_id == i for e in episodes) for i in range(3)] == [2, 2, 2]
    for e in episodes:  # always pushing left, CartPole lasts about 9 steps: every episode is cut at 4
        assert not e.end.terminated and e.end.episode_length == len(e.steps["obs"]) == 4
        assert e.end.episode_return == e.steps["reward"].sum() == 4.0
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=10)
    for k, e in enumerate(e for e in episodes if e.end.env_id == 0):  # env 0's episodes, each from a reset
        if k:
            obs, _ = env.reset()
        for o, a in zip(e.steps["obs"], e.steps["action"], strict=True):
            np.testing.assert_array_equal(o, obs)
            obs, *_ = env.step(int(a))
        np.testing.assert_array_equal(e.final_obs, obs)  # where the cut episode stood: what it bootstraps from
    summary = collect_demo_pipeline(CONFIG, 0, checkpoint, 6, tmp_path / "capped.npz", overrides=(
        "policy.eval.evaluator.max_episode_steps=5", "demo.return_threshold=0"))
    assert summary["n_episode_kept"] == 6 and summary["n_step"] == 30 and summary["all_returns"] == [5.0] * 6
    # the file says each was cut (before, it stored them as if they had terminated)
    demo = read_demo(tmp_path / "capped.npz")
    assert summary["n_episode_truncated"] == 6 and not demo.terminated.any()
    np.testing.assert_array_equal(np.flatnonzero(demo.truncated), np.arange(4, 30, 5))
    assert demo.final_obs.shape == (6, 4)


def test_demo_files_tell_a_time_limit_from_a_terminal_state(tmp_path):
    """An episode the env's own time limit cuts is stored truncated, with the observation it stopped at; one that
    falls over is terminated (before, both were stored alike)."""
    def pole(max_steps):
        return lambda: gym.make("CartPole-v1", max_episode_steps=max_steps)

    envs = BaseEnvManager([pole(5), pole(500)])  # always pushing left, the pole falls after about 9 steps
    envs.seed(3)
    episodes = rollout_episodes(envs, lambda obs: np.zeros(len(obs), dtype=np.int64), 2)
    envs.close()
    limited, free = sorted(episodes, key=lambda e: e.end.env_id)
    assert limited.end.episode_length == 5 and not limited.end.terminated
    assert limited.steps["truncated"].tolist() == [False] * 4 + [True] and not limited.steps["terminated"].any()
    assert free.end.terminated and free.steps["terminated"][-1] and not free.steps["truncated"].any()
    env = gym.make("CartPole-v1", max_episode_steps=5)
    obs, _ = env.reset(seed=3)
    for a in limited.steps["action"]:
        obs, *_ = env.step(int(a))
    np.testing.assert_array_equal(limited.final_obs, obs)
    dataset = episodes_to_dataset([e.steps for e in (limited, free)], [5.0, free.end.episode_return], {},
                                  final_obs=[limited.final_obs, free.final_obs])
    back = read_demo(write_demo(tmp_path / "ends.npz", dataset))
    assert back.truncated[4] and back.terminated[-1] and back.truncated.sum() == back.terminated.sum() == 1


class _OneLegal(gym.Env):
    """A masked env with one legal action per step, known by hand: at step t, action 0 at t = 0, else 1 + t % 2
    (so no final mask equals a first one); the observation is [t]. It lasts ``length`` steps, terminated."""

    def __init__(self, length: int) -> None:
        self.length, self.t = length, 0
        self.observation_space = gym.spaces.Dict(observation=gym.spaces.Box(0, 9, (1,), np.float32),
                                                 action_mask=gym.spaces.MultiBinary(3))
        self.action_space = gym.spaces.Discrete(3)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": np.array([self.t], dtype=np.float32),
                "action_mask": np.eye(3, dtype=np.int8)[0 if self.t == 0 else 1 + self.t % 2]}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        assert self._obs()["action_mask"][int(action)], f"illegal action {action} at step {self.t}"
        self.t += 1
        return self._obs(), 1.0, self.t == self.length, False, {}


def test_a_masked_envs_demo_keeps_each_episodes_final_action_mask(tmp_path):
    """Before, a masked env's demo kept each episode's final observation but not its final action mask: the next
    mask of an episode's last step (a TD target's legal next actions) was lost, though every step's mask was kept.
    By hand: env 0 terminates after 2 steps (after them, t=2: mask [0, 1, 0]); env 1 would last 5 but the step cap
    cuts it at 3 (truncated; t=3: mask [0, 0, 1])."""
    envs = BaseEnvManager([lambda: EncodedObservation(_OneLegal(2)), lambda: EncodedObservation(_OneLegal(5))])
    envs.seed(0)
    episodes = rollout_episodes(envs, lambda obs: obs["action_mask"].argmax(axis=1), 2, max_episode_steps=3)
    envs.close()
    done, cut = sorted(episodes, key=lambda e: e.end.env_id)
    assert done.end.terminated and not cut.end.terminated
    np.testing.assert_array_equal(done.final_action_mask, [False, True, False])
    np.testing.assert_array_equal(cut.final_action_mask, [False, False, True])
    dataset = episodes_to_dataset([e.steps for e in (done, cut)], [2.0, 3.0], {},
                                  final_obs=[e.final_obs for e in (done, cut)],
                                  final_action_mask=[e.final_action_mask for e in (done, cut)])
    back = read_demo(write_demo(tmp_path / "masked.npz", dataset))
    np.testing.assert_array_equal(back.final_obs, [[2], [3]])
    np.testing.assert_array_equal(back.final_action_mask, [[0, 1, 0], [0, 0, 1]])
    assert back.final_action_mask.dtype == back.action_mask.dtype == bool
    # beside next_obs (t + 1 within each episode), the legal actions there: the next step's, the final at an end
    np.testing.assert_array_equal(back.next_obs()[:, 0], [1, 2, 1, 2, 3])
    np.testing.assert_array_equal(back.action_mask, [[1, 0, 0], [0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(back.next_action_mask(), [[0, 0, 1], [0, 1, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]])


def test_no_success_hint_names_the_info_key_where_the_env_decided():
    # Before: a maze checkpoint whose episodes all reported info['success']=False was refused with "train the policy
    # longer or lower demo.return_threshold", a threshold that decided nothing (found by the CLI fuzzer with
    # --set demo.return_threshold=-1e9 on dizoo/grid/maze/config/maze_ppo_config.py)
    from ding_lite.entry.collect_demo import no_success_hint

    hint = no_success_hint([_end(0.0, {"success": False}), _end(0.1, {"success": False})], "success")
    assert "info['success'] decides" in hint and "demo.success_key=''" in hint and "return_threshold" not in hint
    assert no_success_hint([_end(0.0), _end(1.0, {"success": False})], "success").endswith("demo.return_threshold")
    assert no_success_hint([_end(0.0, {"success": False})], "").endswith("demo.return_threshold")
