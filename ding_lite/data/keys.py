"""Batch keys. A batch is a dict of arrays keyed by these names (name equals value, see STYLE rule 3)."""

OBS = "obs"
NEXT_OBS = "next_obs"
ACTION = "action"
REWARD = "reward"
TERMINATED = "terminated"
TRUNCATED = "truncated"
DONE = "done"
LOGIT = "logit"
LOGP = "logp"
VALUE = "value"
ADV = "adv"
RETURN = "return"
MASK = "mask"
WEIGHT = "weight"
INDEX = "index"
PRIORITY = "priority"
INTERRUPTED = "interrupted"  # (T, N) bool: placeholder row of an episode cut by an env worker failure
# n-step TD pieces stored by DQN's get_train_sample
RETURN_N = "return_n"
DISCOUNT_N = "discount_n"
NEXT_OBS_N = "next_obs_n"
# sequences (ACER): the L steps' observations and the one after the last real step; Q(s, ·) of a critic
OBS_PLUS_1 = "obs_plus_1"
Q_VALUE = "q_value"
# action masks (ARCHITECTURE §9b): an observation dict {OBSERVATION: (N, ...), ACTION_MASK: (N, A) bool}; the collector
# stores the mask of obs and of next_obs as columns of their own, and DQN the mask of its n-step next observation
OBSERVATION = "observation"
ACTION_MASK = "action_mask"
NEXT_ACTION_MASK = "next_action_mask"
