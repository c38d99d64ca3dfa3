"""Every common observation space reaches the models as an array: Discrete one-hot, MultiDiscrete one-hots,
MultiBinary flattened, Tuple concatenated, a float64 / integer / bool Box as float32, a scalar Box as a vector of
one, in single-agent envs and in PettingZoo games; a space no array can hold is one line and exit code 2 before
anything is written."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import DIZOO_CARTPOLE, REPO_ROOT, run_cli

from ding_lite.build import build_env_managers, load_config
from ding_lite.entry.serial import serial_pipeline
from ding_lite.envs.gym_env import build_env
from ding_lite.envs.spaces import encode, encoded_space, needs_encoding

pytestmark = pytest.mark.unittest

TESTS = str(REPO_ROOT / "tests")


def test_encodings_by_hand():
    assert encode(gym.spaces.Discrete(4), 2).tolist() == [0, 0, 1, 0]
    assert encode(gym.spaces.Discrete(3, start=-1), -1).tolist() == [1, 0, 0]
    assert encode(gym.spaces.MultiDiscrete([3, 2]), np.array([2, 1])).tolist() == [0, 0, 1, 0, 1]
    assert encode(gym.spaces.MultiBinary([2, 2]), np.array([[1, 0], [0, 1]])).tolist() == [1, 0, 0, 1]
    box = gym.spaces.Box(0, 255, (2, 2), np.uint8)
    assert not needs_encoding(box) and encoded_space(box) is box  # frames stay uint8 frames
    assert encoded_space(gym.spaces.Discrete(5)) == gym.spaces.Box(0.0, 1.0, (5,), np.float32)
    vector = gym.spaces.Box(-1.0, 2.0, (3,), np.float64)
    assert needs_encoding(vector) and encoded_space(vector) == gym.spaces.Box(-1.0, 2.0, (3,), np.float32)
    assert encode(vector, np.array([0.5, 1.0, 2.0])).dtype == np.float32
    assert encode(gym.spaces.Box(0, 1, (2,), np.bool_), np.array([True, False])).tolist() == [1.0, 0.0]
    scalar = gym.spaces.Box(-1.0, 1.0, (), np.float32)  # a scalar: a vector of one
    assert encoded_space(scalar) == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert encode(scalar, np.float32(0.5)).tolist() == [0.5]
    with pytest.raises(Exception, match="no array can hold"):
        needs_encoding(gym.spaces.Graph(gym.spaces.Discrete(2), None), "env 'x'")


@pytest.mark.parametrize("kind, size", [("discrete", 4), ("multi_binary", 4), ("multi_discrete", 6), ("tuple", 5)])
def test_single_agent_spaces_train_end_to_end(tmp_path, kind, size):
    import fake_spaces  # noqa: F401 (registers env type 'space_env')

    cfg = dict(env=dict(type="space_env", kind=kind, collector_env_num=2, evaluator_env_num=2,
                        n_evaluator_episode=2, import_names=["fake_spaces"]),
               policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[16]), learn=dict(batch_size=8),
                           collect=dict(n_sample=8)))
    compiled = load_config(cfg)
    collector_env, evaluator_env = build_env_managers(compiled, 0)
    assert collector_env.observation_space.shape == (size,) and collector_env.obs.dtype == np.float32
    collector_env.close()
    evaluator_env.close()
    result = serial_pipeline(cfg, seed=0, max_env_step=64, exp_dir=tmp_path / kind, progress=False)
    assert result["env_step"] >= 64 and np.isfinite(result["eval_return"])


@pytest.mark.parametrize("kind, policy, action", [
    ("box_float64", "dqn", "discrete"), ("box_int64", "dqn", "discrete"), ("box_bool", "ppo", "discrete"),
    ("box_scalar", "dqn", "discrete"), ("box_scalar", "ppo", "discrete"),
    ("box_float64", "sac", "box"), ("box_int64", "td3", "box")])
def test_box_observations_of_other_dtypes_train_as_float32(tmp_path, kind, policy, action):
    """A float64 (or integer, bool) Box observation reached the replay buffer as it was and the first gradient step
    failed inside torch ('mat1 and mat2 must have the same dtype'); it arrives as float32."""
    import fake_spaces  # noqa: F401 (registers env type 'space_env')

    cfg = dict(env=dict(type="space_env", kind=kind, action=action, collector_env_num=2, evaluator_env_num=2,
                        n_evaluator_episode=2, import_names=["fake_spaces"]),
               policy=dict(type=policy, learn=dict(batch_size=8), collect=dict(n_sample=8)))
    if policy in ("sac", "td3"):
        cfg["policy"]["learning_starts"] = 16
    compiled = load_config(cfg)
    collector_env, evaluator_env = build_env_managers(compiled, 0)
    assert collector_env.obs.dtype == np.float32 and collector_env.observation_space.dtype == np.float32
    collector_env.close()
    evaluator_env.close()
    result = serial_pipeline(cfg, seed=0, max_env_step=64, exp_dir=tmp_path / kind, progress=False)
    assert result["train_iter"] > 0 and np.isfinite(result["eval_return"])


def test_pettingzoo_games_with_discrete_and_small_board_observations():
    pytest.importorskip("pettingzoo.classic")
    rps = build_env(dict(type="pettingzoo", import_path="pettingzoo.classic.rps_v2:parallel_env", kwargs={},
                         end_when_out=[], import_names=[]))
    assert rps.layout.obs_shape == (4,)  # Discrete(4): the opponent's last move (3: none yet), one-hot
    packed, _ = rps.reset(seed=0)
    assert rps.layout.unpack(packed).obs.tolist() == [[0, 0, 0, 1], [0, 0, 0, 1]]
    rps.close()


@pytest.mark.parametrize("kind, shown, says", [
    ("text", "Text(", "no array can hold"),
    # an action mask that does not fit the action space (tests/envs/test_masked_envs.py runs the masks that fit)
    ("masked_3", "an action mask of 3 actions", "its action space is Discrete(2)"),
])
@pytest.mark.parametrize("manager", ["base", "subprocess"])
def test_an_observation_space_no_array_holds_is_one_line_before_anything_is_written(tmp_path, kind, shown, says,
                                                                                    manager):
    proc = run_cli("-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "--set", "env.type=space_env", "--set",
                   "env.import_names=['fake_spaces']", "--set", f"env.kind={kind}", f"env.manager.type={manager}",
                   "--exp-name", "exp", cwd=tmp_path, extra_pythonpath=[TESTS])
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"ding_lite: error: env 'space_env' observes {shown}") and says in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_the_part_no_array_holds_is_named():
    """A Dict with one Text part was refused with the Dict's whole repr (MiniGrid's names a function at an address)
    and no word of which part; the message names the part by its path."""
    nested = gym.spaces.Dict(image=gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
                             extra=gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Text(4))))
    with pytest.raises(Exception, match=r"^env 'x' observes a Dict whose part obs\['extra'\]\[1\] is Text\(") as info:
        needs_encoding(nested, "env 'x'")
    assert "image" not in str(info.value) and "without that part" in str(info.value)


def test_a_minigrid_id_through_the_gymnasium_type_is_pointed_to_the_minigrid_type():
    pytest.importorskip("minigrid")
    with pytest.raises(Exception, match=r"part obs\['mission'\] is MissionSpace.*use env type 'minigrid' "
                                        r"\(env=dict\(type='minigrid', env_id='MiniGrid-Empty-5x5-v0'\)\)"):
        build_env(dict(type="gymnasium", env_id="MiniGrid-Empty-5x5-v0", import_names=["minigrid"]))
