"""A user's policy outside ding_lite/ (used by tests/entry/test_custom_policy.py through a config's import_names).

DQN with a setting of its own: rewards are scaled before the n-step sums. Nothing else is needed: the decorator
registers it, ``config`` declares the new key (merged with DQN's defaults up the class chain), and a config names
this module in ``policy.import_names``.
"""
from __future__ import annotations

from typing import Any

import torch

from ding_lite.data.keys import REWARD
from ding_lite.policy import DQNPolicy
from ding_lite.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("custom_dqn")
class CustomDQNPolicy(DQNPolicy):
    """DQN on scaled rewards."""

    config: dict[str, Any] = dict(
        type="custom_dqn",
        reward_scale=1.0,  # multiply every reward by this before the n-step returns
    )

    def _get_train_sample(self, rollout: dict) -> dict:
        return super()._get_train_sample({**rollout, REWARD: rollout[REWARD] * float(self.cfg["reward_scale"])})

    def _forward_learn(self, batch: dict) -> dict:
        out = super()._forward_learn(batch)
        out["reward_scale"] = torch.tensor(float(self.cfg["reward_scale"]))  # shows in the text log
        return out
