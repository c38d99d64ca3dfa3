"""An env's error says whose env it is: a collector's env 0 and an evaluator's env 0 are two envs (other seeds,
maybe another env section), so the one-line error names the worker in front of ``env <i>``."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from faulty_env import faulty_env_cfg

from ding_lite.build import build_env_manager
from ding_lite.errors import EnvError, naming_envs
from ding_lite.worker import InteractionEvaluator, SampleCollector
from ding_lite.worker.collector import EpisodeCollector

pytestmark = pytest.mark.unittest


def _old_api_manager(fail_at: int = 3):
    return build_env_manager(faulty_env_cfg("old_api", manager=dict(type="base"), fail_at=fail_at), 2, seed=0)


def _zero_actions(obs, **_):
    return {"action": np.zeros(len(obs), dtype=np.int64)}


def _policy():
    return SimpleNamespace(forward=_zero_actions, process_transition=lambda output: {}, reset=lambda *a: None,
                           get_train_sample=lambda rollout: rollout)


def test_a_collectors_env_error_names_the_collector():
    collector = SampleCollector({}, _old_api_manager(), _policy())
    with pytest.raises(EnvError, match=r"^collector env 0's step returned a tuple of 4 values"):
        collector.collect(16)
    collector.close()


def test_an_episode_collectors_env_error_names_the_collector():
    collector = EpisodeCollector({}, _old_api_manager(), _policy())
    with pytest.raises(EnvError, match=r"^collector env 0's step returned a tuple of 4 values"):
        collector.collect(n_episode=1)
    collector.close()


def test_an_evaluators_env_error_names_the_evaluator():
    evaluator = InteractionEvaluator(dict(eval_freq=10), _old_api_manager(), _policy(), 2, None, seed=0)
    with pytest.raises(EnvError, match=r"^evaluator env 0's step returned a tuple of 4 values"):
        evaluator.eval()
    evaluator.close()


def test_the_innermost_role_wins_and_other_errors_pass_unchanged():
    with pytest.raises(EnvError, match=r"^evaluator env 3's reset"), naming_envs("collector"), \
            naming_envs("evaluator"):
        raise EnvError("env 3's reset raised")
    # not about one env, and not an env error: unchanged
    with pytest.raises(EnvError, match=r"^the envs' step observations"), naming_envs("collector"):
        raise EnvError("the envs' step observations cannot be stacked")
    with pytest.raises(ValueError, match=r"^env 0"), naming_envs("collector"):
        raise ValueError("env 0 is not an EnvError")
