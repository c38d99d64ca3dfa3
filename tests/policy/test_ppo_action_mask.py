"""PPO honours action masks: sampled and greedy actions are legal, the mask travels to the learn step, and the masked
logits (-1e8, not -inf) keep the entropy and the loss finite."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION_MASK, NEXT_OBS, OBS, OBSERVATION, REWARD, TERMINATED, TRUNCATED

pytestmark = pytest.mark.unittest


def _policy():
    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="ppo")),
                         overrides=["policy.model.obs_shape=2", "policy.model.action_shape=4",
                                    "policy.model.action_space='discrete'", "policy.learn.batch_size=8",
                                    "policy.learn.entropy_weight=0.1"])
    return build(cfg, "policy")


def test_ppo_samples_legal_actions_and_learns_with_masked_logits():
    policy = _policy()
    rng = np.random.default_rng(0)
    t_len, n = 8, 4
    obs = rng.normal(size=(t_len, n, 2)).astype(np.float32)
    mask = np.zeros((t_len, n, 4), dtype=bool)
    mask[..., 2] = True  # one legal action in half of the rows, two in the others
    mask[::2, :, 0] = True
    columns: dict[str, list] = {}
    for t in range(t_len):
        out = policy.collect_mode.forward({OBSERVATION: obs[t], ACTION_MASK: mask[t]})
        assert mask[t][np.arange(n), out["action"]].all()
        for k, v in policy.collect_mode.process_transition(out).items():
            columns.setdefault(k, []).append(v)
    assert np.exp(np.stack(columns["logp"]))[1::2].min() == pytest.approx(1.0)  # the only legal action: p = 1
    rollout = {k: np.stack(v) for k, v in columns.items()}
    rollout.update({OBS: obs, NEXT_OBS: obs, ACTION_MASK: mask, REWARD: np.ones((t_len, n), np.float32),
                    TERMINATED: np.zeros((t_len, n), bool), TRUNCATED: np.zeros((t_len, n), bool)})
    samples = policy.collect_mode.get_train_sample(rollout)
    assert (samples[ACTION_MASK] == mask.reshape(-1, 4)).all()
    logs = policy.learn_mode.forward(samples)  # one log dict per gradient step
    logs = logs if isinstance(logs, list) else [logs]
    assert logs and all(torch.isfinite(torch.as_tensor(v)).all() for log in logs for v in log.values())
    greedy = policy.eval_mode.forward({OBSERVATION: obs[0], ACTION_MASK: mask[0]})["action"]
    assert set(greedy.tolist()) <= {0, 2}
