"""ACER (Wang et al. 2017, "Sample Efficient Actor-Critic with Experience Replay") for discrete actions: Retrace
critic targets, truncated importance-sampling policy gradient with bias correction, and the efficient trust region
against an average policy network. The maths lives in ``ding_lite.rl_utils.acer``."""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ding_lite.data.keys import ACTION, LOGIT, MASK, OBS_PLUS_1, Q_VALUE, REWARD, TERMINATED
from ding_lite.data.sequence import SequenceCutter
from ding_lite.errors import ConfigError
from ding_lite.model.contract import ACTIONS, BATCH, ModelProbe
from ding_lite.policy.base_policy import Policy
from ding_lite.policy.optim import adam, optimizer_step
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils.acer import (
    acer_policy_gradient,
    acer_policy_gradient_prob,
    acer_value_loss,
    categorical_kl_gradient,
    categorical_kl_gradient_prob,
    ema_update_,
    entropy_gradient,
    entropy_gradient_prob,
    importance_ratio,
    masked_mean,
    prob_to_logit_gradient,
    retrace_q_target,
    trust_region_projection,
)

TRUST_REGION_STATISTICS = ("probability", "logit")

# Per-step columns a sequence keeps besides its observations.
_SEQUENCE_KEYS = (ACTION, LOGIT, REWARD, TERMINATED)


@POLICY_REGISTRY.register("acer")
class ACERPolicy(Policy):
    """Off-policy actor-critic on replayed sequences.

    Collect samples actions from π and stores each step's full behaviour logits μ(·|s). ``get_train_sample`` cuts
    ``unroll_len``-step sequences of single episodes (padded and masked, see :class:`SequenceCutter`); the replay
    buffer holds one sequence per sample, and each learn step takes ``batch_size`` sequences.
    """

    supports_continuous = False  # a categorical policy over discrete actions: a Box action space is a config error

    config: dict[str, Any] = dict(
        type="acer",
        on_policy=False,
        learn=dict(
            update_per_collect=4,  # learn steps (batches of sequences) per collect
            batch_size=16,  # sequences per learn step
            learning_rate_actor=0.0005,  # Adam step size of the actor
            learning_rate_critic=0.0005,  # Adam step size of the critic (its own optimiser)
            c_clip_ratio=10.0,  # c: truncation of the importance weight in the policy gradient
            entropy_weight=0.0001,  # weight of the entropy bonus added to the policy gradient
            trust_region=True,  # project the policy gradient onto the trust region of the average policy
            trust_region_value=1.0,  # δ, the bound of kᵀz
            trust_region_statistics="logit",  # φ of the trust region: 'probability' (the paper's) or 'logit'
            target_theta=0.01,  # τ of the average policy θ_avg ← (1 − τ)θ_avg + τθ (the paper's α = 1 − τ)
            grad_clip_value=None,  # clip each network's global gradient norm (None: off)
        ),
        collect=dict(
            n_sample=16,  # env steps per collect (rounded up to a multiple of collector_env_num)
            unroll_len=32,  # steps per replayed sequence
        ),
        eval=dict(),
    )

    @classmethod
    def default_model(cls) -> str:
        return "acer"

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self.cfg["learn"]
        for key in ("c_clip_ratio", "trust_region_value"):
            if not float(learn[key]) > 0:
                raise ConfigError(f"policy.learn.{key} must be > 0, got {learn[key]!r}")
        if learn["trust_region_statistics"] not in TRUST_REGION_STATISTICS:
            raise ConfigError(f"policy.learn.trust_region_statistics must be 'probability' or 'logit', got "
                              f"{learn['trust_region_statistics']!r}")
        if learn["target_theta"] is None or not 0.0 <= float(learn["target_theta"]) <= 1.0:  # no hard copies here
            raise ConfigError(f"policy.learn.target_theta must be in [0, 1], got {learn['target_theta']!r}")
        self._optimizer_actor = adam(self._model.actor.parameters(), lr=learn["learning_rate_actor"])
        self._optimizer_critic = adam(self._model.critic.parameters(), lr=learn["learning_rate_critic"])
        # The average policy network: an exponential moving average of the actor, never trained by gradients.
        self._avg_actor = copy.deepcopy(self._model.actor).requires_grad_(False)
        self._learn_state.update(avg_actor=self._avg_actor, optimizer_actor=self._optimizer_actor,
                                 optimizer_critic=self._optimizer_critic)

    def _forward_learn(self, batch: dict) -> dict:
        learn = self.cfg["learn"]
        data = self.batch_tensors(batch)
        # batch-major (B, L, ...) sequences to time-major (L, B, ...)
        obs = data[OBS_PLUS_1].transpose(0, 1).float()  # (T + 1, B, ...)
        action, behaviour_logit, reward, terminated, mask = (
            data[k].transpose(0, 1) for k in (ACTION, LOGIT, REWARD, TERMINATED, MASK))
        action, mask = action.long(), mask.float()
        logit = self._apply(self._model.actor, obs)  # (T + 1, B, A)
        q_value = self._apply(self._model.critic, obs)  # (T + 1, B, A)
        with torch.no_grad():
            prob = F.softmax(logit, dim=-1)
            value = (prob * q_value).sum(-1)  # V(s) = Σ_a π(a|s) Q(s, a), (T + 1, B)
            rho = importance_ratio(logit[:-1], behaviour_logit)  # ρ_t(a) = π(a|s_t) / μ(a|s_t)
            q_ret = retrace_q_target(q_value[:-1].gather(-1, action.unsqueeze(-1)).squeeze(-1), value,
                                     rho.gather(-1, action.unsqueeze(-1)).squeeze(-1), reward.float(), terminated,
                                     mask, self.discount_factor)
        out = self._actor_step(obs[:-1], logit[:-1], q_value[:-1].detach(), value[:-1], q_ret, rho, action, mask)
        critic_loss = acer_value_loss(q_value[:-1].gather(-1, action.unsqueeze(-1)).squeeze(-1), q_ret, mask)
        self._optimizer_critic.zero_grad(set_to_none=True)
        critic_loss.backward()  # the critic's gradient is not projected (ACER §3.3)
        optimizer_step(self._optimizer_critic, learn["grad_clip_value"])
        ema_update_(self._avg_actor, self._model.actor, float(learn["target_theta"]))
        out.update(critic_loss=critic_loss.detach(), q_retrace_mean=masked_mean(q_ret, mask))
        return out

    def _actor_step(self, obs: torch.Tensor, logit: torch.Tensor, q_value: torch.Tensor, value: torch.Tensor,
                    q_ret: torch.Tensor, rho: torch.Tensor, action: torch.Tensor,
                    mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """One actor update: ĝ per sample with respect to the statistics φ, its trust-region projection z against the
        average policy, then z back through φ and the logits into the actor's weights (ACER §3.3, Algorithm 2)."""
        learn = self.cfg["learn"]
        prob = F.softmax(logit.detach(), dim=-1)
        terms = acer_policy_gradient(prob, q_value, value, q_ret, rho, action, float(learn["c_clip_ratio"]))
        out: dict[str, torch.Tensor] = {}
        if learn["trust_region"]:
            with torch.no_grad():
                avg_prob = F.softmax(self._apply(self._avg_actor, obs), dim=-1)
            g, active = self._trust_region_step(prob, avg_prob, q_value, value, q_ret, rho, action, terms)
            kl = (avg_prob * (avg_prob.clamp_min(1e-8).log() - prob.clamp_min(1e-8).log())).sum(-1)
            out.update(kl_div=masked_mean(kl, mask), trust_region_active=masked_mean(active.float(), mask))
        else:
            g = terms.truncated + terms.bias_correction + float(learn["entropy_weight"]) * entropy_gradient(prob)
        g = torch.where(mask.unsqueeze(-1) > 0, g, torch.zeros_like(g))  # padding carries no loss
        # ascend the objective averaged over real steps: the mean of the per-sample z's
        self._optimizer_actor.zero_grad(set_to_none=True)
        logit.backward(-g / mask.sum().clamp_min(1.0))
        optimizer_step(self._optimizer_actor, learn["grad_clip_value"])
        entropy = -(prob * prob.clamp_min(1e-8).log()).sum(-1)
        # losses are the negated surrogates (0 − x, so that a zero surrogate logs 0 rather than −0)
        out.update(actor_loss=0.0 - masked_mean(terms.truncated_surrogate, mask),
                   bc_loss=0.0 - masked_mean(terms.bias_correction_surrogate, mask), entropy=masked_mean(entropy, mask))
        return out

    def _trust_region_step(self, prob: torch.Tensor, avg_prob: torch.Tensor, q_value: torch.Tensor,
                           value: torch.Tensor, q_ret: torch.Tensor, rho: torch.Tensor, action: torch.Tensor,
                           terms: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """z, projected in the coordinates ``trust_region_statistics`` names, as a gradient with respect to the
        logits; and the samples where the projection acted."""
        learn = self.cfg["learn"]
        delta, entropy_weight = float(learn["trust_region_value"]), float(learn["entropy_weight"])
        if learn["trust_region_statistics"] == "logit":
            g = terms.truncated + terms.bias_correction + entropy_weight * entropy_gradient(prob)
            return trust_region_projection(g, categorical_kl_gradient(avg_prob, prob), delta)
        # the paper's coordinates (Wang et al. 2017, §3.3): φ = π
        g = acer_policy_gradient_prob(prob, q_value, value, q_ret, rho, action, float(learn["c_clip_ratio"]))
        g = g + entropy_weight * entropy_gradient_prob(prob)
        z, active = trust_region_projection(g, categorical_kl_gradient_prob(avg_prob, prob), delta)
        return prob_to_logit_gradient(z, prob), active

    @staticmethod
    def _apply(net: torch.nn.Module, obs: torch.Tensor) -> torch.Tensor:
        """Run an MLP over (T, B, ...) observations (its first layer flattens everything after dim 0)."""
        lead = obs.shape[:2]
        return net(obs.reshape((-1,) + obs.shape[2:])).reshape(lead + (-1,))

    def _check_model(self, probe: ModelProbe) -> None:
        probe.require("actor", "critic", hint="separate actor and critic networks, each obs -> (..., A)")
        probe.expect("compute_actor", {LOGIT: (BATCH, ACTIONS)})
        probe.expect("compute_critic", {Q_VALUE: (BATCH, ACTIONS)})

    def _monitor_vars_learn(self) -> list[str]:
        names = ["actor_loss", "bc_loss", "entropy", "critic_loss", "q_retrace_mean"]
        return names + (["kl_div", "trust_region_active"] if self.cfg["learn"]["trust_region"] else [])

    # ---- collect -----------------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._cutter = SequenceCutter(int(self.cfg["collect"]["unroll_len"]), _SEQUENCE_KEYS)

    @torch.inference_mode()
    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        logit = self._model.compute_actor(self.obs_tensor(obs))[LOGIT]
        action = torch.multinomial(F.softmax(logit, dim=-1), 1).squeeze(1)
        return {ACTION: action.cpu().numpy(), LOGIT: logit.cpu().numpy()}

    def _process_transition(self, policy_output: dict) -> dict:
        return {ACTION: policy_output[ACTION], LOGIT: policy_output[LOGIT]}

    def _reset_collect(self, env_ids: Any = None) -> None:
        self._cutter.reset(env_ids)

    def _get_train_sample(self, rollout: dict) -> dict:
        """Sequences of ``unroll_len`` steps, (K, L, ...) each, closed by this rollout (see SequenceCutter)."""
        return self._cutter(rollout)

    # ---- eval --------------------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        pass

    @torch.inference_mode()
    def _forward_eval(self, obs: np.ndarray) -> dict:
        return {ACTION: self._model.compute_actor(self.obs_tensor(obs))[LOGIT].argmax(dim=-1).cpu().numpy()}
