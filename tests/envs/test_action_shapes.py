"""Action spaces as the envs take them. A Box of any shape: the policies act flat (prod(shape) numbers), each env
gets an action of its own shape, clipped to its bounds, and recorded demos keep the env's shape (a (2, 2) Box failed
in the clip with a numpy broadcast error before). A Discrete with a ``start``: the policy's indices count from 0,
the env gets them shifted (it got the unshifted index, outside its space, before). Any other action space is a config
error (PPO acted in a MultiDiscrete as if it were a Box before)."""
from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.data.demo_file import read_demos
from ding_lite.entry.collect_demo import collect_demo_pipeline
from ding_lite.entry.eval import eval_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.envs.actions import action_to_env, clip_action, env_actions

pytestmark = pytest.mark.unittest


def test_clip_keeps_the_batch_shape_and_the_env_gets_its_own():
    low, high = np.array([[0.0, -1.0], [0.0, -1.0]], np.float32), np.array([[1.0, 1.0], [2.0, 1.0]], np.float32)
    space = gym.spaces.Box(low, high, dtype=np.float32)
    flat = np.array([[5.0, -5.0, 1.5, 0.5], [-1.0, 0.0, 3.0, -0.5]], np.float32)  # (B, 4): as a policy acts
    clipped = clip_action(flat, space)
    assert clipped.shape == (2, 4)
    np.testing.assert_array_equal(clipped, [[1.0, -1.0, 1.5, 0.5], [0.0, 0.0, 2.0, -0.5]])
    per_env = action_to_env(flat, space)
    assert [a.shape for a in per_env] == [(2, 2), (2, 2)]
    np.testing.assert_array_equal(per_env[0], [[1.0, -1.0], [1.5, 0.5]])


def _config(policy: str) -> dict:
    cfg = dict(env=dict(type="space_env", kind="box_float64", action="box2x2", collector_env_num=2,
                        evaluator_env_num=2, n_evaluator_episode=2, import_names=["fake_spaces"]),
               policy=dict(type=policy, learn=dict(batch_size=8), collect=dict(n_sample=8)))
    if policy in ("sac", "td3"):
        cfg["policy"]["learning_starts"] = 16
    return cfg


@pytest.mark.parametrize("policy", ["ppo", "sac", "td3"])
def test_policies_train_and_evaluate_on_a_2x2_box(tmp_path, policy):
    import fake_spaces  # noqa: F401 (registers env type 'space_env')

    result = serial_pipeline(_config(policy), seed=0, max_env_step=64, exp_dir=tmp_path / "run", progress=False)
    assert result["train_iter"] > 0 and np.isfinite(result["eval_return"])
    ckpt = tmp_path / "run" / "ckpt" / "ckpt_best.pth.tar"
    evaluated = eval_pipeline(_config(policy), seed=1, load_ckpt=ckpt, n_episode=2)
    assert len(evaluated["returns"]) == 2 and np.isfinite(evaluated["returns"]).all()
    if policy == "td3":  # a demo keeps the env's action shape (the format's (M, *action_shape))
        demo = tmp_path / "demo.npz"
        cfg = _config(policy)
        cfg["demo"] = dict(return_threshold=-1e9)
        collect_demo_pipeline(cfg, seed=1, load_ckpt=ckpt, n_episode=2, demo_path=demo)
        assert read_demos([demo]).action.shape[1:] == (2, 2)


@pytest.mark.parametrize("policy", ["dqn", "ppo"])
def test_a_discrete_start_is_added_for_the_env(tmp_path, policy):
    import fake_spaces  # noqa: F401 (registers env type 'space_env')

    cfg = dict(env=dict(type="space_env", kind="box_float64", action="discrete_start", collector_env_num=2,
                        evaluator_env_num=2, n_evaluator_episode=2, import_names=["fake_spaces"]),
               policy=dict(type=policy, learn=dict(batch_size=8), collect=dict(n_sample=8)))
    result = serial_pipeline(cfg, seed=0, max_env_step=64, exp_dir=tmp_path / "run", progress=False)
    assert result["train_iter"] > 0  # the env asserts every action is in Discrete(2, start=5)
    assert action_to_env(np.array([0, 1, 1]), gym.spaces.Discrete(2, start=5)) == [5, 6, 6]



@pytest.mark.parametrize("actions, says", [
    (np.array([[0], [1]]), "shape [2, 1] (int64)"),  # DI-engine-style column: stored so, DQN's loss could not index
    (np.array([0.0, 1.0]), "shape [2] (float64)"),
    (np.array([0, 2]), "action 2 for a Discrete(2)"),
    (np.array([-1, 0]), "action -1 for a Discrete(2)"),
    # the range check's other dtypes: small and byte-swapped signed ints, unsigned ones, the most negative int64
    (np.array([0, -5], np.int8), "action -5 for a Discrete(2)"),
    (np.array([1, -1], ">i8"), "action -1 for a Discrete(2)"),
    (np.array([1, 2], ">i4"), "action 2 for a Discrete(2)"),
    (np.array([3], np.uint8), "action 3 for a Discrete(2)"),
    (np.array([2**64 - 1], np.uint64), "action 18446744073709551615 for a Discrete(2)"),
    (np.array([-(2**63)]), f"action {-(2**63)} for a Discrete(2)"),
])
def test_discrete_actions_must_be_one_index_per_env(actions, says):
    from ding_lite.envs.envpool_env import pool_actions
    from ding_lite.errors import ConfigError

    for convert in (action_to_env, pool_actions):
        with pytest.raises(ConfigError, match=re.escape(says)):
            convert(actions, gym.spaces.Discrete(2, start=3))


def test_discrete_indices_are_checked_without_a_min_and_a_max():
    """The range check runs at every env step: two ufunc reductions (ndarray.min and .max) were 2.5% of a CartPole
    collect step of 8 envs (about 5 of 7 us); one comparison and a count cover a native signed batch."""
    import sys

    from ding_lite.envs.actions import discrete_indices
    from ding_lite.errors import ConfigError

    called: list[str] = []

    def profile(frame, event, arg):
        if event == "c_call":
            called.append(arg.__name__)

    space, actions = gym.spaces.Discrete(2), np.array([0, 1, 1, 0, 1, 0, 0, 1])
    sys.setprofile(profile)
    try:
        indices = discrete_indices(actions, space)
    finally:
        sys.setprofile(None)
    assert indices is actions
    assert not {"min", "max"} & set(called), called
    assert discrete_indices(np.array([], np.int64), space).shape == (0,)
    # an int8 -1 viewed as unsigned is 255, inside Discrete(300): checked by its min and max there
    with pytest.raises(ConfigError, match=re.escape("action -1 for a Discrete(300)")):
        discrete_indices(np.array([0, -1], np.int8), gym.spaces.Discrete(300))
    assert discrete_indices(np.array([127], np.int8), gym.spaces.Discrete(128))[0] == 127


def test_box_actions_are_checked_without_a_numpy_reduction():
    """The Box size check runs at every env step: np.prod of the space's shape (a reduction through numpy's Python
    wrappers) was about 6 us of it, 1.5% of a Pendulum PPO collect step of 8 envs (410 us on a loaded machine)."""
    import sys

    reductions: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_wrapreduction":
            reductions.append(frame.f_back.f_code.co_name)

    space = gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32)
    sys.setprofile(profile)
    try:
        converted = env_actions(np.zeros((4, 6), np.float32), space)
    finally:
        sys.setprofile(None)
    assert converted.shape == (4, 2, 3)
    assert not reductions, reductions


def test_box_actions_must_hold_the_space_s_size_per_env():
    from ding_lite.envs.envpool_env import pool_actions
    from ding_lite.errors import ConfigError

    space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert action_to_env(np.zeros((3, 2)), space)[0].shape == (2,)
    for convert in (action_to_env, pool_actions):
        with pytest.raises(ConfigError, match=re.escape("shape [3, 3] for a Box action space of shape [2]")):
            convert(np.zeros((3, 3)), space)


def test_a_plugin_forward_with_an_action_column_is_one_line(tmp_path):
    """A plugin DQN whose forward returns (N, 1) actions: one line naming the shape, not a traceback from DQN's loss
    (the envs took the flattened column, the learner got it as stored)."""
    from conftest import run_cli

    (tmp_path / "column_dqn.py").write_text(
        "from ding_lite.policy.dqn import DQNPolicy\n"
        "from ding_lite.registry import POLICY_REGISTRY\n\n\n"
        "@POLICY_REGISTRY.register('column_dqn')\n"
        "class ColumnDQN(DQNPolicy):\n"
        "    def _forward_collect(self, obs, env_step=0):\n"
        "        out = super()._forward_collect(obs, env_step)\n"
        "        return {'action': out['action'][:, None]}\n")
    config = tmp_path / "column_config.py"
    config.write_text(
        "main_config = dict(exp_name='column', env=dict(env_id='CartPole-v1', collector_env_num=2, "
        "evaluator_env_num=1, n_evaluator_episode=1), policy=dict(cuda=False, learn=dict(batch_size=8), "
        "collect=dict(n_sample=8)))\n"
        "create_config = dict(env=dict(type='gymnasium'), policy=dict(type='column_dqn', "
        "import_names=['column_dqn']))\n")
    proc = run_cli("-m", "serial", "-c", str(config), "-s", "0", "--max-env-step", "200", "--exp-name",
                   str(tmp_path / "run"), cwd=tmp_path, extra_pythonpath=[str(tmp_path)])
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "shape [2, 1] (int64) for a Discrete(2) action space" in proc.stderr.strip().splitlines()[-1]


def test_other_action_spaces_are_one_line_before_anything_is_written(tmp_path):
    from conftest import REPO_ROOT, run_cli

    config = tmp_path / "md_config.py"
    config.write_text("main_config = dict(env=dict(type='space_env', kind='discrete', action='multi_discrete', "
                      "import_names=['fake_spaces']), policy=dict(type='ppo'))\n")
    proc = run_cli("-c", str(config), "--exp-name", "exp", cwd=tmp_path, extra_pythonpath=[str(REPO_ROOT / "tests")])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "ding_lite: error: env 'space_env' has the action space MultiDiscrete([2 2]): ding_lite's policies act in "
        "Discrete or Box action spaces; wrap the env so that it takes one of those (e.g. one Discrete action per "
        "combination of a MultiDiscrete's)"]
    assert not (tmp_path / "exp").exists()


def test_an_integer_box_gets_the_policy_actions_rounded():
    """A float action cast to an integer Box truncated toward 0: 2.9 became 2, and -0.9 to 0.9 all became 0, so a
    continuous policy's actions reached the bounds only exactly there."""
    space = gym.spaces.Box(-3, 3, (2,), np.int64)
    actions = env_actions(np.array([[2.9, -2.9], [0.6, -0.6], [7.0, -0.4]], dtype=np.float32), space)
    assert actions.dtype == np.int64 and actions.tolist() == [[3, -3], [1, -1], [3, 0]]
