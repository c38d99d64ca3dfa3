"""Batch keys. A batch is a dict of arrays keyed by these names (name equals value).

Rollout columns (time-major (T, N, ...), what a collector hands ``_get_train_sample``; the contract is written out in
:mod:`ding_lite.data.rollout`): OBS, NEXT_OBS, REWARD, TERMINATED, TRUNCATED, DONE, VALID and the policy's own
columns (ACTION, LOGP, VALUE, LOGIT, ...).
"""

OBS = "obs"
NEXT_OBS = "next_obs"
ACTION = "action"
REWARD = "reward"
TERMINATED = "terminated"  # the episode ended in a terminal state: no bootstrap from next_obs
TRUNCATED = "truncated"  # the episode ended without a terminal state (time limit, cut): bootstrap from next_obs
DONE = "done"  # terminated | truncated: the episode ended at this row
VALID = "valid"  # (T, N) bool: the row is a real transition (False: a restart placeholder, an agent that left)
# model outputs
LOGIT = "logit"  # action logits of a categorical policy
MU = "mu"  # mean of a Gaussian policy
SIGMA = "sigma"  # standard deviation of a Gaussian policy
LOG_STD = "log_std"  # log standard deviation of a Gaussian policy (SAC's, before the tanh squash)
Q_VALUE = "q_value"  # Q(s, ·): of a Q-network (DQN) or a critic (ACER)
LOGP = "logp"
VALUE = "value"
ADV = "adv"
RETURN = "return"
MASK = "mask"
WEIGHT = "weight"
INDEX = "index"
PRIORITY = "priority"
# n-step TD pieces stored by DQN's get_train_sample
RETURN_N = "return_n"
DISCOUNT_N = "discount_n"
NEXT_OBS_N = "next_obs_n"
# sequences (ACER): the L steps' observations and the one after the last real step
OBS_PLUS_1 = "obs_plus_1"
# PPO with recompute_adv: flat rows keep the rollout's layout; CUT marks each env's last row of the rollout
CUT = "cut"
N_ENV = "n_env"  # the rollout's number of env slots N, per row
MEMBER_LOGP = "member_logp"  # (B, K) every EPPO member's log-prob of the executed action
EPISODE_ID = "episode_id"  # demo files: the episode each step belongs to
# action masks: an observation dict {OBSERVATION: (N, ...), ACTION_MASK: (N, A) bool}; the collector
# stores the mask of obs and of next_obs as columns of their own, and DQN the mask of its n-step next observation
OBSERVATION = "observation"
ACTION_MASK = "action_mask"
NEXT_ACTION_MASK = "next_action_mask"
