"""Ensemble PPO, EPPO (Yang et al., IJCAI 2022, arXiv 2205.09284): K member actors acting as one mixture policy,
trained end to end with a diversity penalty; PPO's machinery (GAE, epochs, value loss) is inherited."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from ding_lite.data.keys import ACTION, ADV, LOGIT, LOGP, MEMBER_LOGP, MU, OBS, SIGMA, VALID, VALUE
from ding_lite.errors import CheckpointError, ConfigError, first_line
from ding_lite.model.contract import ACTIONS, ANY, BATCH
from ding_lite.model.ensemble_vac import ACTOR_PREFIXES, CRITIC_PREFIXES
from ding_lite.policy.on_policy import Log
from ding_lite.policy.ppo import PPOPolicy, action_distribution
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils.eppo import (
    EPPOCoef,
    categorical_mixture_entropy,
    eppo_loss,
    gaussian_mean_diversity,
    gaussian_mixture_entropy,
    mixture_log_prob,
    mixture_probs,
    probability_diversity,
)
from ding_lite.rl_utils.ppo import normalize_advantage
from ding_lite.utils.checkpoint import load_checkpoint

ENSEMBLE_ACTIONS = ("mixture", "value_weighted")
EVAL_CONTINUOUS_ACTIONS = ("mode", "mean")


@POLICY_REGISTRY.register("ensemble_ppo")
class EnsemblePPOPolicy(PPOPolicy):
    """EPPO on an ``ensemble_vac`` model (K = ``model.ensemble_size`` members, one critic).

    Collects from the mixture p̄ = (1/K) Σ_k p_k (or from value-weighted member weights), stores log p̄_old(a|s), and
    minimises c_center·L_ens + c_sub·L_sub + c_vf·L_V − c_ent·H[p̄] + c_div·D (see ``rl_utils/eppo.py``).
    Eval: argmax p̄ (discrete); continuous: the mixture's mode estimate (``eval.continuous_action``).
    """

    supports_continuous = True
    supports_action_mask = False  # the members' mixture does not mask its logits (PPO's masking is not inherited)
    actor_output_shape = (ANY, BATCH, ACTIONS)  # (K, B, A): one row per member (PPO's model check reads it)

    config: dict[str, Any] = dict(
        type="ensemble_ppo",
        init_member_ckpts=[],  # K PPO checkpoint files to start the members from (critic: the first's); []: random
        learn=dict(
            center_policy_coef=1.0,  # c_center, weight of the ensemble's clip loss L_ens
            sub_policy_coef=0.5,  # c_sub, weight of the members' clip loss L_sub (ratios over p̄_old)
            diverse_coef=0.01,  # c_div, weight of the diversity penalty D
            entropy_weight=0.01,  # c_ent, bonus on the ensemble's entropy H[p̄]
            clip_rho_threshold=1.0,  # value_weighted: truncation ρ̄ of the importance weights p_old/q
        ),
        collect=dict(
            ensemble_action="mixture",  # 'mixture': sample p̄; 'value_weighted': Σ_k w_k p_k, w = softmax(V_k/τ)
            member_value_temperature=0.1,  # value_weighted: τ (member values are in advantage-std units)
            member_value_momentum=0.9,  # value_weighted: moving-average rate of the member values V_k
        ),
        eval=dict(
            continuous_action="mode",  # continuous: 'mode' (member mean of highest mixture density) or 'mean'
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return "ensemble_vac"

    def __init__(self, cfg: Mapping[str, Any], model: nn.Module | None = None, enable_field: Any = None) -> None:
        _check_choice(cfg["collect"]["ensemble_action"], ENSEMBLE_ACTIONS, "policy.collect.ensemble_action")
        _check_choice(cfg["eval"]["continuous_action"], EVAL_CONTINUOUS_ACTIONS, "policy.eval.continuous_action")
        super().__init__(cfg, model, enable_field)
        if not hasattr(self._model, "members"):
            raise ConfigError(f"ensemble_ppo needs an ensemble model (policy.model.type='ensemble_vac'), got "
                              f"{type(self._model).__name__}")
        self._ensemble_size = len(self._model.members)
        # Only a learning policy starts from the PPO checkpoints: eval-only or collect-only copies get the ensemble's
        # own weights (checkpoint, broadcast) and must not need the PPO files to still exist.
        if cfg.get("init_member_ckpts") and "learn" in self._enabled:
            self._load_members(list(cfg["init_member_ckpts"]))

    @property
    def _value_weighted(self) -> bool:
        return self.cfg["collect"]["ensemble_action"] == "value_weighted"

    # ---- learn -------------------------------------------------------------------------------------------------
    def _prepare(self, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        data = super()._prepare(data)
        if self._value_weighted:
            data = {**data, MEMBER_LOGP: self._prepare_off_policy(data)}
        return data

    @torch.no_grad()
    def _prepare_off_policy(self, data: dict[str, torch.Tensor]) -> torch.Tensor:
        """Before a value_weighted update: every member's log-prob of the executed actions under the current
        (pre-update) weights, (B, K), and the member values V_k moved towards this collect's estimates."""
        member_logp = action_distribution(self._model.compute_actor(data[OBS])).log_prob(data[ACTION])  # (K, B)
        # V_k − V_q ≈ E_{a~p_k}[A_q(s, a)] (Kakade & Langford 2002), estimated by importance sampling from q; the
        # weights p_k/q are bounded by 1/w_k since q ≥ w_k·p_k. In advantage-std units so that τ is scale-free.
        valid = data[VALID] if VALID in data else slice(None)  # the estimate runs over transitions only
        adv = normalize_advantage(data[ADV][valid].float())
        score = (torch.exp(member_logp[:, valid] - data[LOGP][valid]) * adv).mean(dim=1)
        momentum = float(self.cfg["collect"]["member_value_momentum"])
        self._model.member_value.mul_(momentum).add_((1.0 - momentum) * score)
        return member_logp.T.contiguous()

    def _compute_loss(self, mb: dict[str, torch.Tensor], context: Log) -> tuple[torch.Tensor, Log]:
        learn = self.cfg["learn"]
        out = self._model.compute_actor_critic(mb[OBS])
        member_logp = action_distribution(out).log_prob(mb[ACTION])  # (K, B)
        if LOGIT in out:
            entropy = categorical_mixture_entropy(out[LOGIT]).mean()
            diversity = probability_diversity(torch.softmax(out[LOGIT], dim=-1))
        else:
            entropy = gaussian_mixture_entropy(out[MU], out[SIGMA]).mean()
            diversity = gaussian_mean_diversity(out[MU], out[SIGMA])
        adv = mb[ADV]  # normalised per minibatch under adv_norm (PPOPolicy._epoch_minibatches)
        coef = EPPOCoef(learn["center_policy_coef"], learn["sub_policy_coef"], learn["value_weight"],
                        learn["entropy_weight"], learn["diverse_coef"])
        member_logp_old = mb[MEMBER_LOGP].T if MEMBER_LOGP in mb else None
        return eppo_loss(member_logp, mb[LOGP], adv, self._value_loss(out[VALUE], mb), entropy, diversity, coef,
                         learn["clip_ratio"], learn["dual_clip"], member_logp_old, learn["clip_rho_threshold"])

    def _monitor_vars_learn(self) -> list[str]:
        return super()._monitor_vars_learn() + ["ens_policy_loss", "sub_policy_loss", "diversity"]

    # ---- collect -----------------------------------------------------------------------------------------------
    def _member_log_weight(self) -> torch.Tensor:
        """(K,) log weights of the members in the acting distribution: uniform, or softmax(V_k / τ)."""
        k = self._ensemble_size
        if not self._value_weighted:
            return torch.full((k,), -math.log(k), device=self.device)
        tau = float(self.cfg["collect"]["member_value_temperature"])
        return torch.log_softmax(self._model.member_value / tau, dim=0)

    @torch.inference_mode()
    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        self._observe(obs)
        out = self._model.compute_actor_critic(self.obs_tensor(obs))
        log_weight = self._member_log_weight()
        if LOGIT in out:
            action = Categorical(probs=mixture_probs(out[LOGIT], log_weight)).sample()
        else:  # a mixture sample: pick a member by its weight, then sample that member's Gaussian
            rows = torch.arange(out[MU].shape[1], device=self.device)
            member = torch.multinomial(log_weight.exp(), len(rows), replacement=True)
            mu, sigma = out[MU][member, rows], out[SIGMA][member, rows]
            action = mu + sigma * torch.randn_like(mu)
        logp = mixture_log_prob(action_distribution(out).log_prob(action), log_weight)
        return {ACTION: action.cpu().numpy(), LOGP: logp.cpu().numpy(),
                VALUE: self._denormalized_value(out[VALUE]).cpu().numpy()}

    # ---- eval --------------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def _forward_eval(self, obs: np.ndarray) -> dict:
        out = self._model.compute_actor(self.obs_tensor(obs))
        log_weight = self._member_log_weight()
        if LOGIT in out:
            return {ACTION: mixture_probs(out[LOGIT], log_weight).argmax(dim=-1).cpu().numpy()}
        weight = log_weight.exp()[:, None, None]
        if self.cfg["eval"]["continuous_action"] == "mean":
            return {ACTION: (weight * out[MU]).sum(dim=0).cpu().numpy()}
        # Mode estimate: of the K member means, the one where the mixture density is highest (exact when members
        # coincide or are well apart; unlike the mean of means it never lands between two separated modes).
        dist = action_distribution({MU: out[MU][:, None], SIGMA: out[SIGMA][:, None]})
        density = mixture_log_prob(dist.log_prob(out[MU][None]), log_weight)  # (K candidates, B)
        best = density.argmax(dim=0)
        return {ACTION: out[MU][best, torch.arange(len(best), device=self.device)].cpu().numpy()}

    # ---- building from PPO checkpoints -------------------------------------------------------------------------
    def _load_members(self, paths: list[str]) -> None:
        """Member k <- the actor of ``paths[k]``; the critic (and value-normalisation statistics) <- ``paths[0]``."""
        if len(paths) != self._ensemble_size:
            raise ConfigError(f"policy.init_member_ckpts lists {len(paths)} checkpoints but model.ensemble_size is "
                              f"{self._ensemble_size}: give one PPO checkpoint per member")
        for k, path in enumerate(paths):
            try:
                state = load_checkpoint(path)
            except CheckpointError as exc:
                raise CheckpointError(f"policy.init_member_ckpts[{k}]: {exc}") from exc
            model_state = state["policy"].get("model") if isinstance(state["policy"], Mapping) else None
            if not model_state or not any(n.startswith(ACTOR_PREFIXES) for n in model_state) \
                    or not any(n.startswith(CRITIC_PREFIXES) for n in model_state):
                raise CheckpointError(f"policy.init_member_ckpts[{k}]={path!r} holds no actor-critic ('vac') "
                                      f"model: give checkpoints written by a PPO run")
            try:
                self._model.load_member_from_vac(k, model_state)
                if k == 0:
                    self._model.load_critic_from_vac(model_state)
            except RuntimeError as exc:
                raise CheckpointError(f"policy.init_member_ckpts[{k}]={path!r} does not fit the ensemble's members: "
                                      f"{first_line(exc)}; set policy.model (encoder_hidden_size_"
                                      f"list, activation, sigma_type) as in the PPO run") from exc
            value_stats = getattr(self, "_value_stats", None)
            if k == 0 and value_stats is not None and "value_stats" in state["policy"]:
                value_stats.load_state_dict(state["policy"]["value_stats"])


def _check_choice(value: Any, choices: tuple[str, ...], key: str) -> None:
    if value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
