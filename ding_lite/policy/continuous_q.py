"""What SAC and TD3 share: Q actor-critics for ``Box`` actions on the off-policy base. Uniform random actions for the
first ``learning_starts`` env steps, one-step transitions as samples, and the critic stage: every critic regresses to
the clipped double-Q target of the next action that the algorithm chooses (:meth:`_next_action`)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

import ding_lite.model.relu_backward as rb
from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, PRIORITY, REWARD, TERMINATED, WEIGHT
from ding_lite.data.rollout import valid_transitions
from ding_lite.errors import ConfigError
from ding_lite.model.contract import ModelProbe
from ding_lite.policy.off_policy import Log, OffPolicyPolicy
from ding_lite.rl_utils.qac import clipped_double_q_target
from ding_lite.utils.log import setup_console_logging

_SAMPLE_KEYS = (OBS, ACTION, REWARD, NEXT_OBS, TERMINATED)
GRADIENT_DTYPES = {"float32": None, "bfloat16": torch.bfloat16}  # learn.gradient_dtype -> the products' dtype


class ContinuousQPolicy(OffPolicyPolicy):
    """Base of SAC and TD3 (model ``qac``). The critic stage::

        a', bonus = self._next_action(s')          # SAC: a' ~ pi(s'), bonus -alpha log pi(a'|s'); TD3: pi'(s')
        y = r + gamma (1 - terminated) [min_j Q'_j(s', a') + bonus]        (no gradient)
        loss = 1/2 sum_j mean_b w_b (Q_j(s, a) - y)^2                      (w: importance weights, else 1)
        context['priority'] = mean_j |y - Q_j(s, a)|

    On the CPU with the default ReLU critics the loss's gradient is written out, without autograd
    (:meth:`~ding_lite.model.qac.Critics.regression_backward`: same gradients, less overhead); elsewhere autograd.

    Collection acts uniformly at random over the env's bounds while ``env_step < learning_starts``, then calls
    :meth:`_explore`; evaluation calls :meth:`_greedy`. Actions are in the env's units (stored, stepped, handed to the
    critics, whose nets read them rescaled to [-1, 1]: :class:`~ding_lite.model.qac.Critics`).
    """

    supports_continuous = True  # the contract test runs it on a Box action space
    supports_discrete = False  # ... and not on a discrete one

    config: dict[str, Any] = dict(
        action_space="continuous",  # DI-engine's policy-level key: only 'continuous' here (no hybrid actions)
        discount_factor=0.99,  # γ
        learning_starts=10000,  # env steps of uniform random actions before the first gradient step
        learn=dict(
            batch_size=256,  # samples per gradient step
            update_per_collect=1,  # gradient steps after each collect
            target_theta=0.005,  # Polyak τ of the target networks (None: hard copies every target_update_freq)
            # values, targets, weights and Adam stay float32 whatever this is (docs/sac_td3.md)
            gradient_dtype="float32",  # 'bfloat16': gradient-only products between layers >= 64 wide in bfloat16
        ),
        collect=dict(
            n_sample=1,  # env steps per collect (rounded up to a multiple of collector_env_num)
            unroll_len=1,  # DI-engine key; must be 1: samples are single transitions
        ),
        eval=dict(),
        other=dict(
            replay_buffer=dict(
                replay_buffer_size=1000000,  # transitions kept (SB3's and DI-engine's default)
            ),
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return "qac"

    def _check_model(self, probe: ModelProbe) -> None:
        probe.require("actor", "critic", "bounds", hint="the policy calls the parts of the 'qac' model directly; "
                      "build a custom model on it (a subclass of ding_lite.model.qac.QAC), see docs/sac_td3.md")

    # ---- observations: read flattened (the qac networks take vectors, as SB3's MLP policies do) ---------------
    def obs_tensor(self, obs: Any) -> torch.Tensor:
        return _flat(super().obs_tensor(obs))

    def batch_tensors(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        data = super().batch_tensors(batch)
        for key in (OBS, NEXT_OBS):
            if key in data:
                data[key] = _flat(data[key])
        return data

    # ---- learn: the critic stage -------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._check_action_space()
        super()._init_learn()
        self._target_critic = self._add_target("target_critic", self._model.critic)
        self._gradient_dtype = self._check_gradient_dtype(self.cfg["learn"]["gradient_dtype"])

    def _check_gradient_dtype(self, name: Any) -> torch.dtype | None:
        if name not in GRADIENT_DTYPES:
            raise ConfigError(f"policy.learn.gradient_dtype must be one of {sorted(GRADIENT_DTYPES)}, got {name!r}")
        if name == "float32":
            return None
        # notes, not warnings: the run is right either way, only the rounding that buys speed is left out
        if self.device.type != "cpu":
            setup_console_logging().info(f"note: policy.learn.gradient_dtype={name!r} applies to the CPU's "
                                         f"written-out backward passes only: on {self.device.type} every product "
                                         f"stays float32")
            return None
        if rb.native_bfloat16() is False:  # emulated products are slower than float32 ones: no reason to round
            setup_console_logging().info(f"note: policy.learn.gradient_dtype={name!r}: this CPU has no native "
                                         f"bfloat16 products (AVX512-BF16 or AMX), where they are slower than float32 "
                                         f"ones: running them in float32")
            return None
        return GRADIENT_DTYPES[name]

    def _forward_learn(self, batch: dict) -> Log:
        with rb.gradient_products(self._gradient_dtype):
            return super()._forward_learn(batch)

    def _critic_loss(self, data: dict[str, torch.Tensor], context: dict[str, Any]) -> tuple[torch.Tensor | None,
                                                                                             Log]:
        with torch.no_grad():
            next_action, bonus = self._next_action(data[NEXT_OBS], context)
            q_next = self._target_critic(data[NEXT_OBS], next_action)
            target = clipped_double_q_target(data[REWARD], data[TERMINATED], self.discount_factor, q_next, bonus)
        weight = data.get(WEIGHT)
        written = self._model.critic.regression_backward(data[OBS], data[ACTION], target, weight)
        if written is None:
            q = self._model.compute_critic(data[OBS], data[ACTION])  # (K, B)
            per_sample = (q - target).square() if weight is None else (q - target).square() * weight
            autograd_loss = 0.5 * per_sample.mean(dim=1).sum()
            loss, loss_value, q = autograd_loss, autograd_loss.detach(), q.detach()
        else:  # the critics' gradients are set: no loss to take through autograd
            loss, (loss_value, q) = None, written
        context[PRIORITY] = (q - target).abs_().mean(dim=0)
        return loss, {"critic_loss": loss_value, "q_mean": q.mean(), "target_q_mean": target.mean()}

    def _next_action(self, next_obs: torch.Tensor,
                     context: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The next action of the target and the bonus added to its min Q (no gradient)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _next_action")

    # ---- collect -----------------------------------------------------------------------------------------------
    def _check_action_space(self) -> None:
        """``policy.action_space`` must be 'continuous', and ``policy.model.action_space`` the actor this policy
        drives (SAC: DI-engine's 'reparameterization', the squashed Gaussian; TD3: 'regression', the deterministic
        tanh actor): the other one fails deep inside the first forward pass."""
        if self.cfg["action_space"] != "continuous":
            raise ConfigError(f"policy.action_space={self.cfg['action_space']!r}: policy '{self.cfg['type']}' acts in "
                              f"continuous (Box) action spaces only; set it to 'continuous' or leave it out")
        actor = (self.cfg.get("model") or {}).get("action_space")
        wanted = self.default_config()["model"]["action_space"]
        if actor is not None and actor != wanted:
            raise ConfigError(f"policy.model.action_space={actor!r}: policy '{self.cfg['type']}' drives the qac "
                              f"model's {wanted!r} actor; set it to {wanted!r} or leave it out")

    def _init_collect(self) -> None:
        self._check_action_space()
        self._check_single_transitions(f"{type(self).__name__.removesuffix('Policy')} learns from single transitions")
        self._rng = np.random.default_rng(torch.initial_seed())  # seeded by set_seed: runs repeat exactly
        self._low = self._model.bounds.low.cpu().numpy()
        self._high = self._model.bounds.high.cpu().numpy()

    @torch.inference_mode()
    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        if env_step < int(self.cfg["learning_starts"]):  # uniform over the bounds, as SB3 and DI-engine start
            action = self._rng.uniform(self._low, self._high, size=(len(obs),) + self._low.shape)
            return {ACTION: action.astype(np.float32)}
        return {ACTION: self._explore(self.obs_tensor(obs)).cpu().numpy()}

    def _explore(self, obs: torch.Tensor) -> torch.Tensor:
        """Exploration actions (B, A) in the env's bounds."""
        raise NotImplementedError(f"{type(self).__name__} must implement _explore")

    def _process_transition(self, policy_output: dict) -> dict:
        return {ACTION: policy_output[ACTION]}

    def _get_train_sample(self, rollout: dict) -> dict:
        """One-step transitions of the valid rows (``ignore_done``: terminations bootstrap like truncations)."""
        samples = valid_transitions(rollout, _SAMPLE_KEYS)
        if self.cfg["learn"]["ignore_done"]:
            samples[TERMINATED] = np.zeros_like(samples[TERMINATED])
        return samples

    # ---- eval --------------------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        self._check_action_space()

    @torch.inference_mode()
    def _forward_eval(self, obs: np.ndarray) -> dict:
        return {ACTION: self._greedy(self.obs_tensor(obs)).cpu().numpy()}

    def _greedy(self, obs: torch.Tensor) -> torch.Tensor:
        """Evaluation actions (B, A): the policy without exploration noise."""
        raise NotImplementedError(f"{type(self).__name__} must implement _greedy")


def check_positive(cfg: Any, *keys: str) -> None:
    """A :class:`ConfigError` naming the first ``policy.learn`` / ``policy.collect`` key (dotted under ``policy``)
    whose value is not a finite number > 0 (an infinite temperature or noise makes every loss inf or NaN)."""
    for key in keys:
        node: Any = cfg
        for part in key.split("."):
            node = node[part]
        if isinstance(node, bool) or not isinstance(node, (int, float)) or not 0 < node < math.inf:
            raise ConfigError(f"policy.{key} must be a finite number > 0, got {node!r}")


def _flat(obs: torch.Tensor) -> torch.Tensor:
    """A batch of observations as float32 (B, features), as the networks take them (a replayed batch keeps the env's
    dtype, e.g. uint8 frames): a view where they are float32 vectors, or contiguous ones, already."""
    obs = obs if obs.ndim <= 2 else obs.reshape(obs.shape[0], -1)
    return obs if obs.dtype == torch.float32 else obs.float()
