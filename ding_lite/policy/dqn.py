"""DQN (Mnih et al. 2015) with double-Q targets (van Hasselt et al. 2016), a dueling head (Wang et al. 2016),
n-step returns, target copy or momentum updates, and ε-greedy collection scheduled on env steps (uniform random
before ``learning_starts``)."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ding_lite.data.keys import (
    ACTION,
    DISCOUNT_N,
    LOGIT,
    NEXT_ACTION_MASK,
    NEXT_OBS,
    NEXT_OBS_N,
    OBS,
    PRIORITY,
    Q_VALUE,
    RETURN_N,
    REWARD,
    TERMINATED,
    TRUNCATED,
    VALID,
    WEIGHT,
)
from ding_lite.data.rollout import cut_before_invalid, episode_ends
from ding_lite.errors import ConfigError
from ding_lite.model.contract import ACTIONS, BATCH, ModelProbe
from ding_lite.policy.off_policy import OffPolicyPolicy
from ding_lite.policy.optim import adam
from ding_lite.registry import POLICY_REGISTRY, import_object
from ding_lite.rl_utils.exploration import epsilon_schedule
from ding_lite.rl_utils.masks import apply_action_mask, masked_argmax, random_legal_actions, split_action_mask
from ding_lite.rl_utils.td import TD_LOSS_TYPES, double_q_target, nstep_return, td_error_loss

# Columns a step keeps until its n-step window is settled.
_STEP_KEYS = (OBS, ACTION, REWARD, TERMINATED, TRUNCATED, NEXT_OBS, VALID, NEXT_ACTION_MASK)
_EMITTED = "emitted"  # (T, N) bool of the kept-back rows: the step already came out as a sample


@POLICY_REGISTRY.register("dqn")
class DQNPolicy(OffPolicyPolicy):
    """Deep Q-learning; samples carry n-step returns computed at collect time (``return_n``, ``discount_n``,
    ``next_obs_n``), so the learner needs no episode structure. One update stage (``q``): the TD loss of the online
    net against the target net, which is copied every ``target_update_freq`` updates (or moved by Polyak averaging
    with ``target_theta``)."""

    supports_continuous = False  # one Q-value per discrete action: a Box action space is a config error
    supports_action_mask = True  # masked argmax, ε among legal actions, the target's max over legal next actions

    config: dict[str, Any] = dict(
        type="dqn",
        discount_factor=0.97,  # γ
        learning_starts=0,  # env steps of uniform random (legal) actions before the first update (random_collect_size)
        nstep=1,  # n of the n-step TD target
        learn=dict(
            update_per_collect=3,  # gradient steps per collect
            batch_size=64,  # samples per gradient step
            learning_rate=0.001,  # Adam step size
            target_update_freq=100,  # copy the online net to the target net every this many iterations
            loss_type="mse",  # 'mse' (squared TD error, DI-engine's DQN loss) or 'huber' (Mnih et al. 2015)
            double=True,  # double-DQN action selection by the online net
        ),
        collect=dict(
            n_sample=8,  # env steps per collect (rounded up to a multiple of collector_env_num)
            unroll_len=1,  # DI-engine key; must be 1: samples are single (n-step) transitions
            augment=None,  # 'package.module:function' giving extra samples from samples (a game's symmetry)
        ),
        eval=dict(),
        other=dict(
            eps=dict(
                type="exp",  # 'exp' or 'linear'
                start=0.95,  # ε at env step 0
                end=0.1,  # final ε
                decay=10000,  # env steps
            ),
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return "dqn"

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        loss_type = self.cfg["learn"]["loss_type"]
        if loss_type not in TD_LOSS_TYPES:  # else a ValueError at the first update, after the run's folder is made
            raise ConfigError(f"policy.learn.loss_type must be one of {', '.join(map(repr, TD_LOSS_TYPES))}, got "
                              f"{loss_type!r}")
        super()._init_learn()
        self._add_stage("q", adam(self._model.parameters(), lr=self.cfg["learn"]["learning_rate"]),
                        state_key="optimizer")
        self._target_model = self._add_target("target_model", self._model)

    def _stage_loss(self, stage: str, data: dict[str, torch.Tensor], context: dict[str, Any]) -> tuple[torch.Tensor,
                                                                                                       dict]:
        learn = self.cfg["learn"]
        n = len(data[OBS])
        if learn["double"]:  # one online forward for s and s' (the s' half is only read, never differentiated)
            q_both = q_values(self._model(torch.cat([data[OBS], data[NEXT_OBS_N]])))
            q, q_next_online = q_both[:n], q_both[n:].detach()
        else:
            q = q_values(self._model(data[OBS]))
        q_taken = q.gather(1, data[ACTION].long().unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            q_next_target = q_values(self._target_model(data[NEXT_OBS_N]))
            if not learn["double"]:
                q_next_online = q_next_target
            # the target's max (or the online argmax) ranges over the legal next actions only
            q_next_online = apply_action_mask(q_next_online, data.get(NEXT_ACTION_MASK))
            target = double_q_target(data[RETURN_N], data[DISCOUNT_N], q_next_online, q_next_target)
        loss, context[PRIORITY] = td_error_loss(q_taken, target, data.get(WEIGHT), learn["loss_type"])
        return loss, {"loss": loss.detach(), "q_mean": q_taken.detach().mean()}

    def _monitor_vars_learn(self) -> list[str]:
        return ["loss", "q_mean"]

    def _check_model(self, probe: ModelProbe) -> None:
        probe.expect("forward", {Q_VALUE: (BATCH, ACTIONS)}, {LOGIT: (BATCH, ACTIONS)})

    # ---- collect -----------------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._check_single_transitions("DQN learns from single n-step transitions (for longer returns set "
                                       "policy.nstep)")
        self._eps = epsilon_schedule(self.cfg["other"]["eps"])
        path = self.cfg["collect"].get("augment")
        if path is not None and not isinstance(path, str):  # 0, [] or {} would be taken as None without a word
            raise ConfigError(f"policy.collect.augment must be 'package.module:function' (a string) or None, got "
                              f"{type(path).__name__} {path!r}")
        self._augment = None if not path else import_object(str(path), "policy.collect.augment",
                                                               "mapping a dict of sample arrays to extra samples")
        self._rng = np.random.default_rng(torch.initial_seed())  # seeded by set_seed: runs repeat exactly
        self._pending: dict[str, np.ndarray] | None = None  # rows from the first step whose window is still open

    @torch.inference_mode()
    def _forward_collect(self, obs: Any, env_step: int = 0) -> dict:
        obs, mask = split_action_mask(obs)
        q = q_values(self._model(self.obs_tensor(obs)))
        action = masked_argmax(q, None if mask is None else torch.from_numpy(mask)).cpu().numpy()
        # uniform random (legal) actions before learning starts, as SB3's learning_starts and DI-engine's
        # random_collect_size collect; ε-greedy after
        eps = 1.0 if env_step < int(self.cfg["learning_starts"]) else self._eps(env_step)
        explore = self._rng.random(len(action)) < eps
        if explore.any():  # ε-greedy explores among the legal actions only
            action[explore] = self._rng.integers(0, q.shape[-1], size=int(explore.sum())) if mask is None else \
                random_legal_actions(self._rng, mask[explore])
        return {ACTION: action}

    def _process_transition(self, policy_output: dict) -> dict:
        return {ACTION: policy_output[ACTION]}

    def _reset_collect(self, env_ids: Any = None) -> None:
        self._pending = None

    def _get_train_sample(self, rollout: dict) -> dict:
        """n-step samples of a (T, N) rollout, after the rows kept back from the last ones. A step is emitted once its
        window is settled: its n steps are known, or its episode ends (terminated or truncated) within the known
        rows; so every sample gets its full n steps or ends on its episode's last step, and comes out once, in the
        collect that settles it. The rows from the earliest step not yet emitted on are kept back, each step flagged
        whether it was emitted: fewer than n rows, and no more than the longest unfinished episode's steps."""
        nstep = int(self.cfg["nstep"])
        steps = {k: rollout[k] for k in _STEP_KEYS if k in rollout}
        if VALID not in steps:  # a hand-built rollout: every row real
            steps[VALID] = np.ones(rollout[REWARD].shape, dtype=bool)
        steps[_EMITTED] = np.zeros(rollout[REWARD].shape, dtype=bool)
        if self._pending is not None:
            steps = {k: np.concatenate([self._pending[k], steps[k]]) for k in steps}
        # settled already within the rollout; an invalid first row also ends the steps held back from the last one
        steps[TERMINATED], steps[TRUNCATED] = cut_before_invalid(steps[TERMINATED], steps[TRUNCATED], steps[VALID])
        terminated, truncated = episode_ends(steps[TERMINATED], steps[TRUNCATED],
                                             bool(self.cfg["learn"]["ignore_done"]))
        ret, discount, last = nstep_return(steps[REWARD], terminated, truncated, self.discount_factor, nstep)
        num_summed = last - np.arange(len(last))[:, None] + 1  # m of each window
        ends_episode = np.take_along_axis(terminated | truncated, last, axis=0)
        ready = (num_summed == nstep) | ends_episode  # no later rollout can change this window
        ready &= steps[VALID] & ~steps[_EMITTED]
        steps[_EMITTED] |= ready
        open_rows = np.flatnonzero((steps[VALID] & ~steps[_EMITTED]).any(axis=1))
        self._pending = {k: v[open_rows[0]:] for k, v in steps.items()} if len(open_rows) else None
        t_idx, n_idx = np.nonzero(ready)
        samples = {
            OBS: steps[OBS][t_idx, n_idx],
            ACTION: steps[ACTION][t_idx, n_idx],
            RETURN_N: ret[t_idx, n_idx],
            DISCOUNT_N: discount[t_idx, n_idx],
            NEXT_OBS_N: steps[NEXT_OBS][last[t_idx, n_idx], n_idx],
        }
        if NEXT_ACTION_MASK in steps:  # legal actions of the n-step next observation, for the target's max
            samples[NEXT_ACTION_MASK] = steps[NEXT_ACTION_MASK][last[t_idx, n_idx], n_idx]
        return self._augmented(samples)

    def _augmented(self, samples: dict) -> dict:
        """``samples`` followed by the extra samples of ``collect.augment`` (e.g. the mirror images of a board game's
        transitions: Q-learning is off-policy, so a transition that did not happen but is as valid as one that did
        is a sample like any other)."""
        if self._augment is None or not len(samples[ACTION]):
            return samples
        extra = self._augment(samples)
        if set(extra) != set(samples):
            raise ValueError(f"policy.collect.augment returned the keys {sorted(extra)}, not the samples' keys "
                             f"{sorted(samples)}")
        return {k: np.concatenate([samples[k], np.asarray(extra[k], dtype=samples[k].dtype)]) for k in samples}

    # ---- eval --------------------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        pass

    @torch.inference_mode()
    def _forward_eval(self, obs: Any) -> dict:
        obs, mask = split_action_mask(obs)
        q = q_values(self._model(self.obs_tensor(obs)))
        return {ACTION: masked_argmax(q, None if mask is None else torch.from_numpy(mask)).cpu().numpy()}


def q_values(out: dict) -> torch.Tensor:
    """The Q-values ``(B, A)`` of a Q-network's output: ``'q_value'``, or ``'logit'`` where a model (DI-engine's
    style) gives only that."""
    return out[Q_VALUE] if Q_VALUE in out else out[LOGIT]
