"""Demo datasets and files (ding_lite/data/demo.py, demo_file.py): round trip, checks on corrupt or mismatched
files, atomic writes, the cycling sampler."""
from __future__ import annotations

import json
import re

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.data import demo_file
from ding_lite.data.demo import DemoSampler, episodes_to_dataset, model_spaces
from ding_lite.data.demo_file import read_demo, read_demos, write_demo
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
CARTPOLE_ACT = gym.spaces.Discrete(2)


def _dataset(lengths=(3, 2), obs_dim=4, discrete=True, seed=0):
    rng = np.random.default_rng(seed)
    episodes = []
    for n in lengths:
        action = rng.integers(0, 2, n) if discrete else rng.normal(size=(n, 1)).astype(np.float32)
        episodes.append({"obs": rng.normal(size=(n, obs_dim)).astype(np.float32), "action": action,
                         "reward": np.ones(n, dtype=np.float32)})
    finals = [rng.normal(size=obs_dim).astype(np.float32) for _ in lengths]
    return episodes_to_dataset(episodes, [float(n) for n in lengths], {"policy": "ppo", "checkpoint": "x.pth.tar"},
                               final_obs=finals)


def test_round_trip_keeps_every_array_and_the_metadata(tmp_path):
    ds = _dataset()
    path = write_demo(tmp_path / "d" / "demo.npz", ds)
    back = read_demo(path)
    for key, value in ds.arrays().items():
        got = getattr(back, key)
        np.testing.assert_array_equal(got, value)
        assert got.dtype == value.dtype, key
    assert back.metadata == ds.metadata
    assert back.metadata["n_episode"] == 2 and back.metadata["n_step"] == 5
    np.testing.assert_array_equal(back.episode_id, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(back.episode_length, [3, 2])
    assert back.action.dtype == np.int64 and back.path == path
    assert not list(tmp_path.glob("d/.*")), "a temp file was left behind"


def _ended(lengths=(3, 2), truncated=(False, True)):
    """A dataset whose episodes end terminated or truncated (gymnasium's step flags on each last step), with final
    observations: step t of episode k observes [k, t], its final observation is [k, T_k]."""
    episodes, finals = [], []
    for k, (n, cut) in enumerate(zip(lengths, truncated, strict=True)):
        last = np.arange(n) == n - 1
        episodes.append({"obs": np.stack([np.full(n, k), np.arange(n)], axis=1).astype(np.float32),
                         "action": np.zeros(n, dtype=np.int64), "reward": np.ones(n, dtype=np.float32),
                         "terminated": last & (not cut), "truncated": last & cut})
        finals.append(np.array([k, n], dtype=np.float32))
    return episodes_to_dataset(episodes, [float(n) for n in lengths], {}, final_obs=finals)


def test_episode_ends_and_final_observations_round_trip(tmp_path):
    """Before, a demo file stored an episode cut by a time limit (or the evaluator's step cap) like one that
    terminated: a consumer could neither tell a real end from a cut nor bootstrap the cut one."""
    back = read_demo(write_demo(tmp_path / "demo.npz", _ended()))
    assert back.terminated.tolist() == [False, False, True, False, False]
    assert back.truncated.tolist() == [False, False, False, False, True]
    np.testing.assert_array_equal(back.final_obs, [[0, 3], [1, 2]])
    # a TD target's next observation: the next step's, and the final one at each episode's last step
    np.testing.assert_array_equal(back.next_obs(), [[0, 1], [0, 2], [0, 3], [1, 1], [1, 2]])
    batch = next(back.iter_batches(batch_size=5))
    assert batch["truncated"].sum() == 1 and batch["terminated"].sum() == 1  # the flags travel with their rows
    assert (batch["truncated"] == (batch["obs"][:, 0] == 1) & (batch["obs"][:, 1] == 1)).all()


def test_an_older_file_without_end_flags_reads_as_before(tmp_path):
    """A file written before the flags (no terminated, truncated, final_obs) reads as such files were taken: every
    episode terminated at its last step, no final observations (next_obs says why)."""
    path = write_demo(tmp_path / "old.npz", _ended())
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files if k not in ("terminated", "truncated", "final_obs")}
    np.savez(path, **arrays)
    old = read_demo(path)
    assert old.terminated.tolist() == [False, False, True, False, True] and not old.truncated.any()
    assert old.final_obs is None
    with pytest.raises(ConfigError, match=r"old\.npz has no final observations .*collect the demos again"):
        old.next_obs()
    both = read_demos([path, write_demo(tmp_path / "new.npz", _ended())])
    assert both.truncated.tolist() == [False] * 5 + [False, False, False, False, True] and both.final_obs is None
    np.savez(path, **arrays, terminated=old.terminated)  # one flag without the other: not an older file
    with pytest.raises(ConfigError, match=r"old\.npz has terminated flags but no truncated flags"):
        read_demo(path)


def test_continuous_round_trip(tmp_path):
    ds = _dataset(discrete=False, obs_dim=3)
    back = read_demo(write_demo(tmp_path / "demo.npz", ds))
    assert back.action.dtype == np.float32 and back.action.shape == (5, 1)
    back.check_fits(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (1,)))


def test_batches_cover_every_step_once_per_pass():
    ds = _dataset(lengths=(4, 4))
    batches = ds.iter_batches(batch_size=4, seed=1)
    first_pass = [next(batches) for _ in range(2)]
    obs = np.concatenate([b["obs"] for b in first_pass])
    assert sorted(map(tuple, obs.tolist())) == sorted(map(tuple, ds.obs.tolist()))
    for b in first_pass:  # rows stay aligned across columns
        for o, a in zip(b["obs"], b["action"], strict=True):
            row = np.flatnonzero((ds.obs == o).all(axis=1))[0]
            assert ds.action[row] == a


def test_missing_file_names_it_and_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"demo file not found: .*nope\.npz.*collect_demo"):
        read_demo(tmp_path / "nope.npz")


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x03\x04 truncated"])
def test_corrupt_file_is_a_config_error_naming_it(tmp_path, content):
    path = tmp_path / "bad.npz"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=r"demo file .*bad\.npz"):
        read_demo(path)


def test_a_text_file_is_no_npz_archive_and_no_unsafe_load_is_advised(tmp_path):
    """numpy reads a file that is neither .npz nor .npy as a pickle and advises allow_pickle=True ('if you trust the
    file'): for a text file named .npz that is wrong advice, and ding_lite never loads pickles."""
    path = tmp_path / "notes.npz"
    path.write_text("episode notes\n")
    with pytest.raises(ConfigError, match=r"cannot read demo file .*notes\.npz: not an \.npz archive") as info:
        read_demo(path)
    assert "allow_pickle" not in str(info.value)


def test_single_npy_array_is_refused(tmp_path):
    path = tmp_path / "array.npz"
    with open(path, "wb") as f:
        np.save(f, np.zeros(3))
    with pytest.raises(ConfigError, match=r"cannot read demo file .*array\.npz: a single \.npy array"):
        read_demo(path)


def test_truncated_demo_file_is_a_config_error(tmp_path):
    path = write_demo(tmp_path / "demo.npz", _dataset(lengths=(50, 50)))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigError, match=r"demo file .*demo\.npz"):
        read_demo(path)


def test_pickled_arrays_are_refused(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, obs=np.array([object()], dtype=object))
    with pytest.raises(ConfigError, match=r"cannot read demo file .*evil\.npz"):
        read_demo(path)


def test_file_without_demo_arrays_is_refused(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, x=np.zeros(3))
    with pytest.raises(ConfigError, match=r"demo file .*other\.npz lacks"):
        read_demo(path)


def _rewrite(path, **changes):
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays.update(changes)
    np.savez(path, **arrays)


@pytest.mark.parametrize("change, message", [
    (dict(episode_length=np.array([2, 2])), "episode lengths that do not match"),
    (dict(action=np.zeros(4, dtype=np.int64)), "step arrays of different lengths"),
    (dict(episode_id=np.array([0, 1, 0, 1, 1])), "episode ids not sorted"),
    (dict(metadata=np.array("{not json")), "unreadable metadata"),
    (dict(metadata=np.array(json.dumps({"format": "other"}))), "not a ding_lite demo file"),
    (dict(metadata=np.array(json.dumps({"format": "ding_lite.demo", "version": 99}))), "format version 99"),
    (dict(terminated=np.zeros(5, dtype=bool)), "not exactly one True at each episode's last step"),
    (dict(truncated=np.array([False, False, True, False, True])), "not exactly one True"),  # both at step 2
    (dict(terminated=np.array([False, True, False, False, True])), "not exactly one True"),  # mid-episode
    (dict(truncated=np.zeros(5, dtype=np.int64)), "truncated flags of .*int64"),
    (dict(final_obs=np.zeros((3, 4), dtype=np.float32)), r"final observations of shape \(3, 4\) for 2 episodes"),
])
def test_inconsistent_file_is_refused(tmp_path, change, message):
    path = write_demo(tmp_path / "demo.npz", _dataset())
    _rewrite(path, **change)
    with pytest.raises(ConfigError, match=message):
        read_demo(path)


def test_mismatched_observation_shape_names_the_file(tmp_path):
    path = write_demo(tmp_path / "pendulum.npz", _dataset(obs_dim=3))
    with pytest.raises(ConfigError, match=r"demo file .*pendulum\.npz has observations of shape \(3,\), but the env's "
                                          r"are \(4,\)"):
        read_demo(path).check_fits(CARTPOLE_OBS, CARTPOLE_ACT)


def test_mismatched_actions_name_the_file(tmp_path):
    continuous = read_demo(write_demo(tmp_path / "cont.npz", _dataset(discrete=False)))
    with pytest.raises(ConfigError, match=r"cont\.npz has float32 actions .* discrete \(2 actions\)"):
        continuous.check_fits(CARTPOLE_OBS, CARTPOLE_ACT)
    discrete = read_demo(write_demo(tmp_path / "disc.npz", _dataset()))
    with pytest.raises(ConfigError, match=r"disc\.npz has int64 actions .* box of shape \(1,\)"):
        discrete.check_fits(CARTPOLE_OBS, gym.spaces.Box(-1, 1, (1,)))
    with pytest.raises(ConfigError, match=r"disc\.npz has actions in \[0, 1\], outside the env's 1 discrete"):
        discrete.check_fits(CARTPOLE_OBS, gym.spaces.Discrete(1))


def test_model_spaces_from_a_model_section():
    obs, act = model_spaces({"obs_shape": 4, "action_shape": 2, "action_space": "discrete"})
    assert obs.shape == (4,) and act == gym.spaces.Discrete(2)
    obs, act = model_spaces({"obs_shape": [3], "action_shape": 1, "action_space": "continuous"})
    assert obs.shape == (3,) and isinstance(act, gym.spaces.Box) and act.shape == (1,)


def test_several_files_concatenate_with_renumbered_episodes(tmp_path):
    a = write_demo(tmp_path / "a.npz", _dataset(lengths=(2, 1), seed=1))
    b = write_demo(tmp_path / "b.npz", _dataset(lengths=(3,), seed=2))
    both = read_demos([a, str(b)])
    assert len(both) == 6 and both.n_episode == 3
    np.testing.assert_array_equal(both.episode_id, [0, 0, 1, 2, 2, 2])
    np.testing.assert_array_equal(both.obs[3:], read_demo(b).obs)
    assert [s["n_step"] for s in both.metadata["sources"]] == [3, 3]
    other = write_demo(tmp_path / "c.npz", _dataset(obs_dim=3))
    with pytest.raises(ConfigError, match=r"a\.npz and .*c\.npz do not match"):
        read_demos([a, other])


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    path = write_demo(tmp_path / "demo.npz", _dataset(lengths=(2,)))
    before = path.read_bytes()

    def broken(f, **arrays):
        f.write(b"PK partial")
        raise OSError("disk full")

    monkeypatch.setattr(demo_file.np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        write_demo(path, _dataset(lengths=(5,)))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.npz"]


def test_sampler_cycles_through_shuffled_passes():
    sampler = DemoSampler(5, 2, seed=0)
    seen = torch.cat([next(sampler) for _ in range(5)])  # 10 indices = exactly two passes
    assert sorted(seen[:5].tolist()) == [0, 1, 2, 3, 4]  # a batch crossing the pass end is completed
    assert sorted(seen[5:].tolist()) == [0, 1, 2, 3, 4]


def test_sampler_is_endless_with_fewer_rows_than_a_batch():
    sampler = DemoSampler(3, 8, seed=0)
    for _ in range(4):
        idx = next(sampler)
        assert idx.shape == (8,) and idx.min() >= 0 and idx.max() <= 2


def test_sampler_state_round_trip_continues_the_same_sequence():
    a = DemoSampler(7, 3, seed=4)
    next(a)
    state = a.state_dict()
    expected = [next(a).tolist() for _ in range(6)]
    b = DemoSampler(7, 3, seed=99)
    b.load_state_dict(state)
    assert [next(b).tolist() for _ in range(6)] == expected
    with pytest.raises(ValueError, match="for 7 rows"):
        DemoSampler(8, 3).load_state_dict(state)


def test_sampler_rejects_bad_sizes():
    with pytest.raises(ConfigError, match="at least 1, got 0"):
        DemoSampler(5, 0)
    with pytest.raises(ValueError, match="n=0"):
        DemoSampler(0, 4)


@pytest.mark.parametrize("key, row, value, shown", [
    ("obs", 3, np.nan, "NaN in its obs at step 3 (episode 1)"),
    ("reward", 1, np.inf, "inf in its reward at step 1 (episode 0)"),
    ("episode_return", 1, np.nan, "NaN in its episode_return of episode 1"),
    ("final_obs", 1, np.inf, "inf in its final_obs of episode 1"),
])
def test_a_non_finite_value_is_refused_on_read_and_on_write(tmp_path, key, row, value, shown):
    """Before, a demo file holding NaN loaded, and PPO-DAPG's first demo minibatch made every actor weight NaN: the
    run failed later inside torch.multinomial with a traceback."""
    path = write_demo(tmp_path / "demo.npz", _dataset())
    bad = getattr(read_demo(path), key).copy()
    bad[row] = value
    _rewrite(path, **{key: bad})
    with pytest.raises(ConfigError, match=rf"demo file .*demo\.npz holds {re.escape(shown)}: .*collect the demos"):
        read_demo(path)
    ds = _dataset()
    getattr(ds, key)[row] = value
    with pytest.raises(ConfigError, match=rf"demo dataset holds {re.escape(shown)}"):
        write_demo(tmp_path / "new.npz", ds)
    assert not (tmp_path / "new.npz").exists()


def test_a_non_finite_box_action_is_refused(tmp_path):
    ds = _dataset(discrete=False)
    ds.action[4, 0] = -np.inf
    with pytest.raises(ConfigError, match=r"demo dataset holds inf in its action at step 4 \(episode 1\)"):
        write_demo(tmp_path / "demo.npz", ds)



def _masked_episodes():
    """Two masked episodes of 2 and 1 steps over 3 actions: step t of episode k allows action (k + t) % 3 only, and
    so does the mask after its last step (t = T_k); the observation is [t]."""
    episodes, finals, masks = [], [], []
    for k, n in enumerate((2, 1)):
        legal = (k + np.arange(n)) % 3
        episodes.append({"obs": np.arange(n, dtype=np.float32)[:, None], "action": legal,
                         "reward": np.ones(n, dtype=np.float32), "action_mask": np.eye(3, dtype=bool)[legal]})
        finals.append(np.array([n], dtype=np.float32))
        masks.append(np.eye(3, dtype=bool)[(k + n) % 3])
    return episodes, finals, masks


def test_a_masked_dataset_keeps_the_final_action_masks(tmp_path):
    """Each step's mask was kept, the mask after an episode's last step was not: a masked env's next mask (what a TD
    target's max ranges over) could not be had where its next observation could."""
    episodes, finals, masks = _masked_episodes()
    back = read_demo(write_demo(tmp_path / "masked.npz", episodes_to_dataset(
        episodes, [2.0, 1.0], {}, final_obs=finals, final_action_mask=masks)))
    np.testing.assert_array_equal(back.final_action_mask, [[0, 0, 1], [0, 0, 1]])  # episode 0: t=2; episode 1: t=1
    np.testing.assert_array_equal(back.next_obs()[:, 0], [1, 2, 1])
    np.testing.assert_array_equal(back.next_action_mask(), [[0, 1, 0], [0, 0, 1], [0, 0, 1]])
    both = read_demos([tmp_path / "masked.npz", tmp_path / "masked.npz"])
    np.testing.assert_array_equal(both.next_action_mask(), np.concatenate([back.next_action_mask()] * 2))
    with pytest.raises(ValueError, match="need as many final action masks"):  # a masked episode's final obs: both
        episodes_to_dataset(episodes, [2.0, 1.0], {}, final_obs=finals)
    with pytest.raises(ValueError, match="need episodes with action masks and final observations"):
        episodes_to_dataset(episodes, [2.0, 1.0], {}, final_action_mask=masks)
    with pytest.raises(ConfigError, match=r"demo dataset has no action masks"):
        _ended().next_action_mask()


def test_an_older_masked_file_without_final_masks_still_loads(tmp_path):
    """A masked env's file written with final observations but before the final masks reads as it was written."""
    episodes, finals, masks = _masked_episodes()
    path = write_demo(tmp_path / "old.npz", episodes_to_dataset(episodes, [2.0, 1.0], {}, final_obs=finals,
                                                                final_action_mask=masks))
    new = write_demo(tmp_path / "new.npz", read_demo(path))
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "final_action_mask"}
    np.savez(path, **arrays)
    old = read_demo(path)
    assert old.final_action_mask is None and old.action_mask is not None
    np.testing.assert_array_equal(old.next_obs()[:, 0], [1, 2, 1])  # its final observations are still there
    with pytest.raises(ConfigError, match=r"old\.npz has no final action masks .*collect the demos again"):
        old.next_action_mask()
    assert read_demos([path, new]).final_action_mask is None
    _rewrite(path, final_action_mask=np.ones((2, 4), dtype=bool))
    with pytest.raises(ConfigError, match=r"final action masks of shape \(2, 4\) for 2 episodes of action masks "
                                          r"\(3,\)"):
        read_demo(path)
