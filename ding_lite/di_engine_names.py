"""What replaces each DI-engine helper a ported policy imports under the renamed package (``ding`` -> ``ding_lite``).

Read by :func:`ding_lite.registry.import_modules`: a plugin whose ``from ding_lite.rl_utils import q_nstep_td_error``
fails is one line that names the replacement, not only a pointer to the docs. The same table, with the names that
map one to one, is 'Names a ported policy touches' in docs/coming_from_di_engine.md. No heavy imports here.
"""
from __future__ import annotations

import re

_NSTEP = "ding_lite.rl_utils.nstep_return(reward, terminated, truncated, gamma, nstep) and td_error_loss(q_taken, " \
         "target, weight, 'mse')"
_GAE = "ding_lite.rl_utils.gae(reward, value, next_value, terminated, truncated, gamma, lam) on the (T, N) rollout"
_PPO = "ding_lite.rl_utils.ppo_policy_loss(logp_new, logp_old, adv, clip_ratio) and ppo_value_loss(value_new, " \
       "value_old, return_target, clip_ratio), plus the entropy term written out"
_TENSORS = "self.obs_tensor(obs) for the (N, ...) observations and self.batch_tensors(batch) for a learn batch's " \
           "columns (no collate step), returning numpy arrays"

# A name DI-engine exports -> what a port uses instead (keyed by the name alone: DI-engine has one meaning for each).
NAMES: dict[str, str] = {
    "Adam": "torch.optim.Adam (clip with torch.nn.utils.clip_grad_norm_ before step() for grad_clip_type)",
    "RMSprop": "torch.optim.RMSprop",
    "to_device": _TENSORS,
    "default_collate": _TENSORS,
    "default_decollate": _TENSORS,
    "default_preprocess_learn": _TENSORS,
    "split_data_generator": "for idx in torch.randperm(n).split(batch_size): {k: v[idx] for k, v in data.items()}",
    "model_wrap": "self._model itself (no wrappers): take the argmax or sample in the policy, keep a target "
                  "network as copy.deepcopy(self._model)",
    "q_nstep_td_data": _NSTEP,
    "q_nstep_td_error": _NSTEP,
    "get_nstep_return_data": _NSTEP,
    "get_train_sample": "ding_lite.data.rollout.valid_transitions(rollout, keys) in _get_train_sample",
    "gae_data": _GAE,
    "get_gae": _GAE,
    "get_gae_with_default_last_value": _GAE,
    "ppo_data": _PPO,
    "ppo_error": _PPO,
    "ppo_policy_data": _PPO,
    "ppo_policy_error": _PPO,
    "ppo_value_data": _PPO,
    "ppo_value_error": _PPO,
    "get_epsilon_greedy_fn": "ding_lite.rl_utils.exploration.epsilon_schedule(self._cfg.other.eps), called with the "
                             "env_step that _forward_collect(obs, env_step) gets",
    "DiscreteHead": "the 'dqn' or 'vac' model's head settings (head_hidden_size, head_layer_num)",
}

# A module DI-engine has and ding_lite lacks (as ModuleNotFoundError names it) -> what a port uses instead.
MODULES: dict[str, str] = {
    "ding_lite.torch_utils": "torch.optim.Adam for Adam, self.obs_tensor(obs) / self.batch_tensors(batch) for "
                             "to_device",
    "ding_lite.utils.data": _TENSORS,
    "ding_lite.policy.common_utils": _TENSORS,
}

_CANNOT_IMPORT = re.compile(r"cannot import name '([^']+)'")


def replacement(exc: ImportError) -> str:
    """``use <what replaces it>; `` for a DI-engine helper that ``exc`` failed to import, else ``''``."""
    if isinstance(exc, ModuleNotFoundError):
        found = MODULES.get(exc.name or "")
    else:
        match = _CANNOT_IMPORT.search(str(exc))
        found = NAMES.get(match.group(1)) if match else None
    return f"use {found}; " if found else ""
