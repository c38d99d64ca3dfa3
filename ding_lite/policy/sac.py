"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"): twin Q-networks with Polyak-averaged
targets, a tanh-squashed Gaussian actor rescaled to the env's bounds, and a temperature alpha tuned towards a
target entropy of -dim(A). The maths lives in :mod:`ding_lite.rl_utils.qac`."""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from ding_lite.data.keys import OBS
from ding_lite.errors import ConfigError
from ding_lite.model.common import set_gradients
from ding_lite.policy.continuous_q import ContinuousQPolicy, check_positive
from ding_lite.policy.off_policy import Log
from ding_lite.policy.optim import adam
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils.qac import (
    sac_actor_loss,
    sac_actor_loss_gradients,
    sac_temperature_loss,
    squashed_gaussian,
    squashed_sample,
)

ALPHA = "alpha"  # context key: this update's temperature, fixed for all its stages


class Temperature(nn.Module):
    """SAC's temperature, learned as log alpha (a module, so that checkpoints keep it)."""

    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.log_alpha = nn.Parameter(torch.tensor(math.log(alpha), dtype=torch.float32))


@POLICY_REGISTRY.register("sac")
class SACPolicy(ContinuousQPolicy):
    """Soft actor-critic. Each update runs two stages (SB3's and the paper's order)::

        alpha = exp(log_alpha)                                           (this update's, a constant)
        critic: a' ~ pi(.|s'), y = r + gamma (1 - terminated) [min_j Q'_j(s', a') - alpha log pi(a'|s')],
                1/2 sum_j (Q_j(s, a) - y)^2, Adam on the critics
        actor:  a ~ pi(.|s) reparameterised, E[alpha log pi(a|s) - min_j Q_j(s, a)] through the updated critics
                (gradient into the actor only) + the temperature loss -log_alpha (log pi(a|s) + target_entropy),
                Adam on the actor and log_alpha
        targets: Q'_j <- (1 - tau) Q'_j + tau Q_j

    Collection samples from the squashed Gaussian (uniformly at random before ``learning_starts``); evaluation takes
    its mode, ``tanh(mu)`` rescaled.
    """

    config: dict[str, Any] = dict(
        type="sac",
        model=dict(
            action_space="reparameterization",  # the qac model's squashed-Gaussian actor
        ),
        learn=dict(
            learning_rate_q=3e-4,  # Adam step size of the critics
            learning_rate_policy=3e-4,  # Adam step size of the actor
            learning_rate_alpha=3e-4,  # Adam step size of log alpha
            alpha=0.2,  # the temperature: its start value with auto_alpha, else fixed (SB3 starts at 1.0)
            auto_alpha=True,  # tune alpha towards target_entropy
            target_entropy=None,  # the entropy alpha is tuned towards; None: -dim(A)
        ),
    )

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self.cfg["learn"]
        check_positive(self.cfg, "learn.learning_rate_q", "learn.learning_rate_policy", "learn.learning_rate_alpha",
                       "learn.alpha")
        target_entropy = learn["target_entropy"]
        if target_entropy is not None and (isinstance(target_entropy, bool)
                                           or not isinstance(target_entropy, (int, float))
                                           or not math.isfinite(target_entropy)):  # ±inf: alpha's loss is NaN
            raise ConfigError(f"policy.learn.target_entropy must be a finite number or None (-dim(A)), got "
                              f"{target_entropy!r}")
        self._target_entropy = -float(self._model.actor.act_size) if target_entropy is None else float(target_entropy)
        # SAC's log pi is of the action in [-1, 1] (SB3's and DI-engine's units, whatever the bounds): the env-unit
        # action's is lower by sum(log scale), the rescaling's Jacobian, a constant that shifted alpha's equilibrium
        # (on bounds +-1e-3 alpha grew without end) and the critics' targets (by -alpha sum(log scale) per step)
        self._log_scale = self._model.bounds.scale.log().sum()
        self._temperature = Temperature(float(learn["alpha"])).to(self.device)
        self._learn_state["temperature"] = self._temperature
        self._add_stage("critic", adam(self._model.critic.parameters(), lr=learn["learning_rate_q"]))
        actor = adam(self._model.actor.parameters(), lr=learn["learning_rate_policy"])
        if learn["auto_alpha"]:  # a param group of its own: its own step size, stepped with the actor
            actor.add_param_group(dict(params=[self._temperature.log_alpha], lr=learn["learning_rate_alpha"]))
        self._add_stage("actor", actor)

    def _stage_loss(self, stage: str, data: dict[str, torch.Tensor],
                    context: dict[str, Any]) -> tuple[torch.Tensor | None, Log]:
        if ALPHA not in context:
            context[ALPHA] = self._temperature.log_alpha.detach().exp()
        if stage == "critic":
            return self._critic_loss(data, context)
        return self._actor_loss(data, context)

    def _next_action(self, next_obs: torch.Tensor,
                     context: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        action, log_prob = self._sample(next_obs)
        return action, -context[ALPHA] * log_prob

    def _actor_loss(self, data: dict[str, torch.Tensor], context: dict[str, Any]) -> tuple[torch.Tensor | None, Log]:
        alpha = context[ALPHA]
        written = self._written_actor_stage(data[OBS], alpha)
        if written is not None:
            return None, written
        action, log_prob = self._sample(data[OBS])
        q_min = self._model.critic.actor_value(data[OBS], action)  # its gradient reaches the action only
        actor_loss = sac_actor_loss(log_prob, q_min, alpha)
        log = {"actor_loss": actor_loss.detach(), "alpha": alpha, "entropy": -log_prob.detach().mean()}
        if not self.cfg["learn"]["auto_alpha"]:
            return actor_loss, log
        alpha_loss = sac_temperature_loss(self._temperature.log_alpha, log_prob, self._target_entropy)
        log["alpha_loss"] = alpha_loss.detach()
        return actor_loss + alpha_loss, log  # disjoint parameters: each term's gradient reaches only its own

    def _written_actor_stage(self, obs: torch.Tensor, alpha: torch.Tensor) -> Log | None:
        """The actor stage with its gradients written out (CPU, the default ReLU actor and critics): the same draws,
        values and gradients as the autograd path above, without building its graph. Sets the ``.grad`` of the
        actor's parameters (and log alpha's) and returns the logs; ``None`` (nothing drawn, nothing set) where it
        does not apply."""
        log_alpha = self._temperature.log_alpha
        forward = self._model.actor.forward_for_backward(obs)
        if forward is None or not self._model.critic.writable_actor_value(obs) or \
                (self.cfg["learn"]["auto_alpha"] and (not log_alpha.requires_grad or log_alpha._backward_hooks)):
            return None
        mu, log_std, saved = forward
        bounds = self._model.bounds
        with torch.no_grad():
            noise = torch.randn_like(mu)  # the draw _sample makes
            action, log_prob = squashed_gaussian(mu, log_std, bounds.scale, bounds.bias, noise)
            log_prob += self._log_scale  # of the action in [-1, 1], as _sample's
            squashed = torch.tanh(mu + log_std.exp() * noise)  # squashed_gaussian's tanh(u), the same arithmetic
            q_min, dq_da = self._model.critic.min_value_action_grad(obs, action)
            grad_mu, grad_log_std = sac_actor_loss_gradients(noise, log_std, squashed, dq_da, bounds.scale, alpha)
            self._model.actor.backward_from(saved, grad_mu, grad_log_std)
            log = {"actor_loss": sac_actor_loss(log_prob, q_min, alpha), "alpha": alpha, "entropy": -log_prob.mean()}
            if self.cfg["learn"]["auto_alpha"]:
                log["alpha_loss"] = sac_temperature_loss(log_alpha, log_prob, self._target_entropy)
                # d/d log_alpha of -mean(log_alpha (log pi + target_entropy))
                set_gradients([log_alpha], [-(log_prob + self._target_entropy).mean()])
        return log

    def _sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self._model.actor(obs)
        bounds = self._model.bounds
        action, log_prob = squashed_gaussian(mu, log_std, bounds.scale, bounds.bias)
        return action, log_prob + self._log_scale  # log pi of the action in [-1, 1] (see _init_learn)

    def _monitor_vars_learn(self) -> list[str]:
        names = ["critic_loss", "q_mean", "target_q_mean", "actor_loss", "alpha", "entropy"]
        return names + (["alpha_loss"] if self.cfg["learn"]["auto_alpha"] else [])

    # ---- collect and eval --------------------------------------------------------------------------------------
    def _explore(self, obs: torch.Tensor) -> torch.Tensor:
        mu, log_std = self._model.actor(obs)  # the sample of _sample, without its log-probability
        return squashed_sample(mu, log_std, self._model.bounds.scale, self._model.bounds.bias)

    def _greedy(self, obs: torch.Tensor) -> torch.Tensor:
        mu, _ = self._model.actor(obs)
        return torch.tanh(mu) * self._model.bounds.scale + self._model.bounds.bias
