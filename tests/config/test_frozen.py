"""A compiled config is frozen once the run resolved it: writes at any depth raise, copies are writable."""
from __future__ import annotations

import copy
import pickle

import pytest

from ding_lite.config import compile_config
from ding_lite.config.compile import CompiledConfig
from ding_lite.config.frozen import FrozenConfigError, freeze, is_frozen, thawed

pytestmark = pytest.mark.unittest


def _cfg() -> CompiledConfig:
    return compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="dqn")))


@pytest.mark.parametrize("write", [
    lambda c: setattr(c, "exp_name", "other"),
    lambda c: c.__setitem__("seed", 3),
    lambda c: setattr(c.policy.model, "obs_shape", 4),
    lambda c: c.env.__setitem__("n_evaluator_episode", 2),
    lambda c: c.env.update(end_when_out=[0]),
    lambda c: c.policy.pop("type"),
    lambda c: delattr(c.policy.learn, "learning_rate"),
])
def test_writing_after_the_freeze_raises_naming_the_key(write) -> None:
    cfg = freeze(_cfg())
    with pytest.raises(FrozenConfigError, match="config is frozen"):
        write(cfg)


def test_freeze_keeps_the_values_and_copies_are_writable() -> None:
    plain = _cfg()
    cfg = freeze(_cfg())
    assert cfg == plain and isinstance(cfg, CompiledConfig) and is_frozen(cfg.policy.model)
    with pytest.raises(FrozenConfigError, match="policy.model.obs_shape = 4"):
        cfg.policy.model.obs_shape = 4
    for copied in (copy.deepcopy(cfg), pickle.loads(pickle.dumps(cfg)), thawed(cfg)):
        copied.policy.model.obs_shape = 4
        assert not is_frozen(copied) and isinstance(copied, CompiledConfig)
    assert cfg.policy.model.obs_shape is None
