"""Pure maths of the shipped algorithms: advantage estimation, TD targets and losses."""

from ding_lite.rl_utils.dapg import dapg_decay_coeff, dapg_demo_loss, dapg_demo_weight, max_advantage
from ding_lite.rl_utils.gae import gae
from ding_lite.rl_utils.ppo import (
    normalize_advantage,
    normalize_advantage_per_minibatch,
    ppo_policy_loss,
    ppo_value_loss,
    ratio_stats,
)
from ding_lite.rl_utils.td import double_q_target, nstep_return, td_error_loss

__all__ = [
    "dapg_decay_coeff",
    "dapg_demo_loss",
    "dapg_demo_weight",
    "double_q_target",
    "gae",
    "max_advantage",
    "normalize_advantage",
    "normalize_advantage_per_minibatch",
    "nstep_return",
    "ppo_policy_loss",
    "ppo_value_loss",
    "ratio_stats",
    "td_error_loss",
]
