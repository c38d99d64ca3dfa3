"""The replay schedule of off-policy policies (ding_lite/policy/replay.py): when learning starts, the updates due per
collect (update_per_collect, replay_ratio), priorities back to the buffer, and the budget check."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from ding_lite.data.buffer import UniformBuffer
from ding_lite.data.keys import INDEX, OBS, PRIORITY
from ding_lite.entry import serial_pipeline
from ding_lite.errors import ConfigError
from ding_lite.policy.replay import ReplaySchedule
from ding_lite.registry import BUFFER_REGISTRY
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

pytestmark = pytest.mark.unittest


def _schedule(**learn) -> ReplaySchedule:
    starts = learn.pop("learning_starts", 0)
    return ReplaySchedule(dict(type="test", learning_starts=starts,
                               learn=dict(dict(batch_size=4, update_per_collect=3, replay_ratio=None), **learn)))


class RecordingBuffer(UniformBuffer):
    """A uniform buffer that records the priorities it is given."""

    def __init__(self) -> None:
        super().__init__(dict(replay_buffer_size=100), seed=0)
        self.updates: list[tuple[np.ndarray, np.ndarray]] = []

    def update_priority(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        self.updates.append((indices, priorities))


def _samples(n: int, start: int = 0) -> dict:
    return {OBS: np.arange(start, start + n, dtype=np.float32)[:, None]}


def test_update_per_collect_after_the_buffer_holds_a_batch() -> None:
    schedule, buffer, batches = _schedule(), RecordingBuffer(), []

    def train_step(batch: dict, env_step: int) -> list[dict]:
        batches.append((len(batch[OBS]), env_step))
        return [{"loss": 0.0, PRIORITY: np.full(len(batch[OBS]), 2.0)}]

    schedule.train(buffer, _samples(3), 3, train_step)
    assert batches == [] and len(buffer) == 3  # pushed, but fewer samples than one batch
    schedule.train(buffer, _samples(3, 3), 6, train_step)
    assert batches == [(4, 6)] * 3  # update_per_collect = 3 batches of batch_size 4
    assert len(buffer.updates) == 3 and all((p == 2.0).all() and len(i) == 4 for i, p in buffer.updates)


def test_no_priorities_no_buffer_update() -> None:
    schedule, buffer = _schedule(), RecordingBuffer()
    schedule.train(buffer, _samples(8), 8, lambda batch, env_step: [{"loss": 0.0}])
    assert buffer.updates == []


def test_replay_ratio_carries_fractions_across_collects() -> None:
    schedule = _schedule(replay_ratio=0.25)
    # 6 samples per collect x 0.25 = 1.5 updates: 1, 2, 1, 2 (the half carried), none before a batch is there
    assert [schedule.updates_due(6, 6 * (k + 1), 100) for k in range(4)] == [1, 2, 1, 2]
    assert schedule.update_per_collect is None  # the ratio replaces update_per_collect
    assert _schedule(replay_ratio=2).updates_due(5, 5, 100) == 10


def test_learning_starts_holds_back_every_update() -> None:
    schedule = _schedule(learning_starts=100, replay_ratio=1.0)
    assert schedule.updates_due(50, 50, 50) == 0
    assert schedule.updates_due(49, 99, 99) == 0  # nothing owed for the steps before learning starts
    assert schedule.updates_due(1, 100, 100) == 1
    # after a resume the buffer is empty (it is not checkpointed): learning waits for one batch again
    assert schedule.updates_due(1, 5000, 3) == 0


def test_budget_below_learning_starts_is_a_config_error() -> None:
    schedule = _schedule(learning_starts=10_000)
    schedule.check_budget(None)
    schedule.check_budget(10_001)
    with pytest.raises(ConfigError, match=r"policy.learning_starts=10000 is not below the env-step budget 5000 "
                                          r"\(--max-env-step\)"):
        schedule.check_budget(5000)
    _schedule().check_budget(4)  # learning_starts 0: a budget of one batch


def test_budget_below_one_batch_is_a_config_error() -> None:
    schedule = _schedule(batch_size=256)
    schedule.check_budget(256)  # the last env step fills the first batch
    with pytest.raises(ConfigError, match=r"policy.learn.batch_size=256 is above the env-step budget 255 "
                                          r"\(--max-env-step\): the replay buffer would never hold one batch"):
        schedule.check_budget(255)


@pytest.mark.parametrize("learn,message", [
    (dict(replay_ratio=-1.0), r"policy.learn.replay_ratio must be a finite number > 0"),
    (dict(replay_ratio="half"), r"policy.learn.replay_ratio must be a finite number > 0"),
    # before, an OverflowError traceback at the first update, after the run's folder was made (the config fuzzer)
    (dict(replay_ratio=math.inf), r"policy.learn.replay_ratio must be a finite number > 0 .*, got inf"),
    (dict(update_per_collect=0), r"policy.learn.update_per_collect must be an int >= 1, got 0"),
    (dict(batch_size=2.5), r"policy.learn.batch_size must be an int >= 1, got 2.5"),
    (dict(learning_starts=-5), r"policy.learning_starts must be an int >= 0, got -5"),
])
def test_bad_schedule_settings_name_their_key(learn: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _schedule(**learn)


def test_an_off_policy_config_without_its_keys_says_what_to_declare() -> None:
    with pytest.raises(ConfigError, match=r"policy 'mine' is off-policy \(on_policy=False\) but its config has no "
                                          r"learn.update_per_collect"):
        ReplaySchedule(dict(type="mine", learn=dict(batch_size=4)))


def test_each_update_gets_a_fresh_batch_with_its_slots() -> None:
    schedule, buffer, seen = _schedule(update_per_collect=2), RecordingBuffer(), []
    schedule.train(buffer, _samples(10), 10, lambda batch, env_step: seen.append(batch[INDEX]) or [{"loss": 0.0}])
    assert len(seen) == 2 and all(len(s) == 4 for s in seen)



@BUFFER_REGISTRY.register("counting_uniform")
class CountingBuffer(UniformBuffer):
    """A uniform buffer that logs its pushes and draws in order."""

    calls: list[str] = []

    def push(self, samples: dict) -> np.ndarray:
        CountingBuffer.calls.append("push")
        return super().push(samples)

    def sample(self, batch_size: int) -> dict:
        CountingBuffer.calls.append(f"sample {batch_size}")
        return super().sample(batch_size)


@pytest.mark.parametrize("learn,expected", [
    (dict(update_per_collect=3), [0] * 4 + [3] * 8),  # from the collect reaching env step 40: 3 each
    (dict(update_per_collect=1, replay_ratio=0.25), [0] * 4 + [2] * 8),  # 0.25 x 8 samples, none owed before
])
def test_a_tiny_dqn_run_makes_the_updates_the_docs_promise(learn: dict, expected: list, tmp_path) -> None:
    # 12 collects of 8 env steps (2 envs) to the 96-step budget, learning_starts 40, batches of 16
    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.env.update(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1)
    main.policy.update(learning_starts=40, collect=dict(n_sample=8))
    main.policy.learn.update(batch_size=16, **learn)
    create.replay_buffer = dict(type="counting_uniform")
    CountingBuffer.calls.clear()
    result = serial_pipeline((main, create), seed=0, max_env_step=96, exp_dir=tmp_path / "exp", progress=False)
    draws = "|".join(CountingBuffer.calls).split("push")[1:]  # the draws after each push
    assert result["env_step"] == 96 and [d.count("sample 16") for d in draws] == expected
    assert result["train_iter"] == sum(expected)
