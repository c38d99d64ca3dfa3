"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods"): twin critics with the
clipped double-Q target, target policy smoothing with clipped noise, actor and target updates delayed to every
``actor_update_freq`` critic updates, Gaussian exploration noise. The maths lives in :mod:`ding_lite.rl_utils.qac`."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ding_lite.data.keys import OBS
from ding_lite.errors import ConfigError, int_at_least
from ding_lite.policy.continuous_q import ContinuousQPolicy, check_positive
from ding_lite.policy.off_policy import Log
from ding_lite.policy.optim import adam
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils.qac import smoothed_target_action


@POLICY_REGISTRY.register("td3")
class TD3Policy(ContinuousQPolicy):
    """Twin delayed DDPG. Each update::

        critic (every update): a' = clip(pi'(s') + clip(N(0, noise_sigma), noise_range) * scale, low, high),
                y = r + gamma (1 - terminated) min_j Q'_j(s', a'), 1/2 sum_j (Q_j(s, a) - y)^2
        actor (every actor_update_freq-th update): -Q_1(s, pi(s)) through the updated critic (gradient into the actor)
        targets (with the actor): pi' and Q'_j <- (1 - tau) . + tau .

    Collection adds N(0, collect.noise_sigma * scale) to pi(s) and clips to the bounds (uniformly at random before
    ``learning_starts``); evaluation takes pi(s). The noise scales are in units of the action's half-range ``scale``
    (Fujimoto et al.'s code multiplies them by ``max_action``).
    """

    config: dict[str, Any] = dict(
        type="td3",
        model=dict(
            action_space="regression",  # the qac model's deterministic tanh actor
        ),
        learn=dict(
            learning_rate_actor=1e-3,  # Adam step size of the actor
            learning_rate_critic=1e-3,  # Adam step size of the critics
            actor_update_freq=2,  # the actor and the targets step every this many critic updates (policy delay d)
            noise=True,  # target policy smoothing
            noise_sigma=0.2,  # its noise's standard deviation (units of the half-range)
            noise_range=dict(min=-0.5, max=0.5),  # its noise's clip (units of the half-range)
        ),
        collect=dict(
            noise_sigma=0.1,  # exploration noise's standard deviation (units of the half-range)
        ),
    )

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self.cfg["learn"]
        check_positive(self.cfg, "learn.learning_rate_actor", "learn.learning_rate_critic", "learn.noise_sigma",
                       "collect.noise_sigma")
        int_at_least("policy.learn.actor_update_freq", learn["actor_update_freq"], 1)
        self._noise_clip = _noise_clip(learn["noise_range"])
        self._target_actor = self._add_target("target_actor", self._model.actor)
        self._add_stage("critic", adam(self._model.critic.parameters(), lr=learn["learning_rate_critic"]))
        self._add_stage("actor", adam(self._model.actor.parameters(), lr=learn["learning_rate_actor"]))
        self._critic_only = self._stage_names[:1]

    def _stages(self, step: int) -> list[str]:
        # the actor steps after the critic at updates d-1, 2d-1, ... (SB3's and Fujimoto et al.'s count)
        return self._stage_names if (step + 1) % int(self.cfg["learn"]["actor_update_freq"]) == 0 \
            else self._critic_only

    def _targets_due(self, steps_done: int) -> bool:
        return steps_done % int(self.cfg["learn"]["actor_update_freq"]) == 0

    def _stage_loss(self, stage: str, data: dict[str, torch.Tensor],
                    context: dict[str, Any]) -> tuple[torch.Tensor | None, Log]:
        if stage == "critic":
            return self._critic_loss(data, context)
        obs = data[OBS]
        forward = self._model.actor.forward_for_backward(obs)
        if forward is not None and self._model.critic.writable_actor_value(obs):
            # written out: dL/da = -dQ_1/da / B, then back through the actor (no autograd graph)
            action, saved = forward
            q, dq_da = self._model.critic.min_value_action_grad(obs, action, first_only=True)
            self._model.actor.backward_from(saved, dq_da * (-1.0 / obs.shape[0]))
            return None, {"actor_loss": -q.mean()}
        # the gradient reaches the actor only: the critics' weight products are not computed
        actor_loss = -self._model.critic.first_actor_value(obs, self._model.actor(obs)).mean()
        return actor_loss, {"actor_loss": actor_loss.detach()}

    def _next_action(self, next_obs: torch.Tensor,
                     context: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        action = self._target_actor(next_obs)
        if not self.cfg["learn"]["noise"]:
            return action, None
        bounds = self._model.bounds
        return smoothed_target_action(action, float(self.cfg["learn"]["noise_sigma"]), self._noise_clip,
                                      bounds.scale, bounds.low, bounds.high), None

    def _monitor_vars_learn(self) -> list[str]:
        return ["critic_loss", "q_mean", "target_q_mean"]  # actor_loss only on the delayed steps

    # ---- collect and eval --------------------------------------------------------------------------------------
    def _explore(self, obs: torch.Tensor) -> torch.Tensor:
        bounds = self._model.bounds
        action = self._model.actor(obs)
        noise = torch.randn_like(action) * (float(self.cfg["collect"]["noise_sigma"]) * bounds.scale)
        return (action + noise).clamp_(bounds.low, bounds.high)  # one pass for both bounds (low < high)

    def _greedy(self, obs: torch.Tensor) -> torch.Tensor:
        return self._model.actor(obs)


def _noise_clip(noise_range: Mapping[str, Any]) -> float:
    """The smoothing noise's clip c from DI-engine's ``noise_range`` (min=-c, max=c: the noise is symmetric)."""
    low, high = noise_range.get("min"), noise_range.get("max")
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float))) or isinstance(low, bool) or \
            isinstance(high, bool) or not high > 0 or low != -high:
        raise ConfigError(f"policy.learn.noise_range must be dict(min=-c, max=c) with c > 0, got "
                          f"{dict(noise_range)!r}")
    return float(high)
