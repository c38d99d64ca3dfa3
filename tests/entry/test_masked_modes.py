"""A single-agent masked env (tests/fake_masked.py: ``Dict(observation, action_mask)`` with a Discrete action) through
``-m collect_demo`` and ``-m parallel`` (its serial runs: test_masked_learning.py). The env raises on an illegal
action, so a run that ends well took legal actions only; the tests check what the runs keep besides."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_masked import BONUS_EVERY, N_ACTIONS, masked_config

from ding_lite.build import build, fill_model_shapes_from_env
from ding_lite.config import compile_config
from ding_lite.data.buffer import UniformBuffer
from ding_lite.data.demo_file import read_demo
from ding_lite.data.keys import ACTION, NEXT_ACTION_MASK, NEXT_OBS_N, OBS
from ding_lite.entry.parallel import parallel_pipeline
from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils.checkpoint import save_checkpoint

from conftest import REPO_ROOT, run_cli  # isort: skip (tests/ helpers)

pytestmark = pytest.mark.unittest

LENGTH = 8  # steps of every masked_env episode


def _untrained_dqn(folder: Path) -> tuple[Path, Path]:
    """A config file of masked DQN and an untrained checkpoint of it."""
    config = masked_config("dqn")
    cfg = compile_config(config)
    fill_model_shapes_from_env(cfg)
    ckpt = folder / "dqn.pth.tar"
    save_checkpoint(ckpt, {"policy": build(cfg, "policy").learn_mode.state_dict(), "train_iter": 0, "env_step": 0})
    path = folder / "masked_dqn_config.py"
    path.write_text(f"main_config = {config!r}\n")
    return path, ckpt


@pytest.mark.parametrize("mode", ["eval", "collect"])  # collect: ε = 1 at env step 0, random legal actions
def test_collect_demo_keeps_legal_actions_and_the_masks_of_the_steps(tmp_path: Path, mode: str) -> None:
    config, ckpt = _untrained_dqn(tmp_path)
    done = run_cli("-m", "collect_demo", "-c", str(config), "--load-ckpt", str(ckpt), "--n-episode", "8",
                   "--demo-path", "demo.npz", "--set", "demo.return_threshold=0", "--set", f"demo.policy_mode={mode}",
                   cwd=tmp_path, extra_pythonpath=[str(REPO_ROOT / "tests")])
    assert done.returncode == 0, done.stderr
    demo = read_demo(tmp_path / "demo.npz")
    assert demo.n_episode == 8 and len(demo) == 8 * LENGTH
    mask = demo.action_mask
    assert mask is not None and mask.shape == (len(demo), N_ACTIONS)
    rows = np.arange(len(demo))
    assert mask[rows, demo.action].all()  # every action stored was legal where it was taken
    # the masks are the steps' own: each step's good action (its observation) is legal, and action 0 on every
    # fourth step of an episode only
    good = demo.obs.reshape(len(demo), -1)
    good = good[:, 0] if good.shape[1] == 1 else good.argmax(axis=1)
    assert mask[rows, good.astype(np.int64)].all()
    t = rows - np.repeat(np.cumsum(demo.episode_length) - demo.episode_length, demo.episode_length)
    np.testing.assert_array_equal(mask[:, 0].astype(bool), t % BONUS_EVERY == BONUS_EVERY - 1)
    # and after each episode's last step (t = LENGTH), the final observation's own mask, kept beside it
    final = demo.final_action_mask
    assert final is not None and final.shape == (8, N_ACTIONS) and final.dtype == mask.dtype
    final_good = demo.final_obs.reshape(8, -1)
    final_good = final_good[:, 0] if final_good.shape[1] == 1 else final_good.argmax(axis=1)
    assert final[np.arange(8), final_good.astype(np.int64)].all() and final.sum(axis=1).tolist() == [2] * 8
    assert not final[:, 0].any()  # LENGTH % BONUS_EVERY == 0: action 0 is not legal after the last step


@BUFFER_REGISTRY.register("test_masked_recording")
class MaskedRecordingBuffer(UniformBuffer):
    """Uniform buffer that keeps every sample pushed to it."""

    pushed: list[dict[str, np.ndarray]] = []

    def push(self, samples):
        MaskedRecordingBuffer.pushed.append({k: np.array(v, copy=True) for k, v in samples.items()})
        return super().push(samples)


@pytest.mark.parametrize("policy", ["dqn", "ppo"])
def test_parallel_runs_a_masked_env_and_dqn_learns_from_the_next_steps_masks(local_ray, tmp_path: Path,
                                                                             policy: str) -> None:
    config = masked_config(policy, stop=False)
    if policy == "dqn":
        config["policy"]["other"]["replay_buffer"]["type"] = "test_masked_recording"
        MaskedRecordingBuffer.pushed.clear()
    result = parallel_pipeline(config, seed=0, max_env_step=256, exp_dir=tmp_path / "run", progress=False)
    assert result["env_step"] >= 256
    assert result["actor_restarts"] == 0  # no actor died (an illegal action raises in the actor's env)
    if policy == "dqn":
        samples = {k: np.concatenate([p[k] for p in MaskedRecordingBuffer.pushed])
                   for k in MaskedRecordingBuffer.pushed[0]}
        assert len(samples[ACTION]) >= 256 and samples[OBS].shape[1:] == (N_ACTIONS,)
        # the target's max ranges over the legal actions of the n-step next observation: its own mask, in which
        # its good action (the one-hot observation) is legal and which allows two or three actions
        next_mask = samples[NEXT_ACTION_MASK]
        rows = np.arange(len(next_mask))
        assert next_mask[rows, samples[NEXT_OBS_N].argmax(axis=1)].all()
        assert set(next_mask.sum(axis=1).tolist()) <= {2, 3}
