"""PPO with clipped surrogate (Schulman et al. 2017) and GAE (Schulman et al. 2016), discrete or continuous."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.distributions import Categorical, Independent, Normal

from ding_lite.data.batch import episode_ends
from ding_lite.data.keys import (
    ACTION,
    ADV,
    INTERRUPTED,
    LOGP,
    NEXT_OBS,
    OBS,
    RETURN,
    REWARD,
    TERMINATED,
    TRUNCATED,
    VALUE,
)
from ding_lite.policy.base_policy import Policy, adam, grad_norm_clip
from ding_lite.registry import POLICY
from ding_lite.rl_utils.gae import gae
from ding_lite.rl_utils.ppo import normalize_advantage, ppo_policy_loss, ppo_value_loss

# Extra columns kept for ``recompute_adv``: the last step of a rollout, and the number of envs (rows are (t, env)).
CUT = "cut"
N_ENV = "n_env"


def action_distribution(actor_out: dict[str, torch.Tensor]) -> torch.distributions.Distribution:
    """Categorical over ``logit`` or diagonal Gaussian over (``mu``, ``sigma``)."""
    if "logit" in actor_out:
        return Categorical(logits=actor_out["logit"])
    return Independent(Normal(actor_out["mu"], actor_out["sigma"]), 1)


@POLICY.register("ppo")
class PPOPolicy(Policy):
    """On-policy PPO; ``_forward_learn`` runs ``epoch_per_collect`` passes of minibatches over one collect."""

    supports_continuous = True  # the contract test also runs it on a Box action space

    config: dict[str, Any] = dict(
        type="ppo",
        on_policy=True,
        recompute_adv=False,  # recompute GAE with the current critic before each epoch
        learn=dict(
            epoch_per_collect=10,  # passes over each collect
            batch_size=64,  # minibatch size
            learning_rate=3e-4,  # Adam step size
            value_weight=0.5,  # c_vf
            entropy_weight=0.0,  # c_ent
            clip_ratio=0.2,  # ε of the ratio clip
            value_clip_ratio=None,  # clip the value around its old estimate (None: off)
            dual_clip=None,  # dual-clip bound c > 1 for negative advantages (None: off)
            adv_norm=True,  # normalise advantages per minibatch
            value_norm=False,  # learn values of returns normalised by running statistics
            grad_clip_value=0.5,  # global gradient-norm clip (None: off)
            ignore_done=False,  # treat terminations as truncations
        ),
        collect=dict(
            n_sample=256,  # env steps per collect (rounded up to a multiple of collector_env_num)
            unroll_len=1,  # DI-engine key, not read: samples are single steps
            discount_factor=0.99,  # γ
            gae_lambda=0.95,  # λ
        ),
        eval=dict(),
    )

    @classmethod
    def default_model(cls) -> str:
        return "vac"

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._optimizer = adam(self._model.parameters(), lr=self.cfg["learn"]["learning_rate"], eps=1e-5)
        self._learn_state["optimizer"] = self._optimizer
        self._value_stats = RunningMeanStd()
        self._learn_state["value_stats"] = self._value_stats

    def _forward_learn(self, batch: dict) -> list[dict]:
        """``epoch_per_collect`` passes of minibatches; one log dict per gradient step (one train iteration each,
        as in DI-engine)."""
        learn = self.cfg["learn"]
        data = self.batch_tensors(batch)
        n = len(data[OBS])
        logs: list[dict[str, torch.Tensor]] = []
        # rows kept only for recompute_adv's (T, N) layout: placeholders of episodes cut by an env worker failure
        rows = torch.arange(n, device=self.device)
        if INTERRUPTED in data:
            rows = rows[~data[INTERRUPTED]]
        if learn["value_norm"]:  # the learner owns the return statistics; collectors get them with the weights
            self._value_stats.update(batch[RETURN][rows.cpu().numpy()])
        for _ in range(int(learn["epoch_per_collect"])):
            if self.cfg["recompute_adv"]:
                data[ADV], data[RETURN] = self._recompute_adv(data)
            # per-epoch statistics of a subclass (e.g. DAPG's max advantage) see real transitions only
            self._begin_epoch(data if len(rows) == n else {k: v[rows] for k, v in data.items()})
            for idx in rows[torch.randperm(len(rows), device=self.device)].split(int(learn["batch_size"])):
                logs.append(self._minibatch_step({k: v[idx] for k, v in data.items()}))
        return logs

    def _minibatch_step(self, mb: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        loss, stats = self._compute_loss(mb)
        self._optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm_clip(self._model.parameters(), self.cfg["learn"]["grad_clip_value"])
        self._optimizer.step()
        return stats

    def _compute_loss(self, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Loss of one minibatch (carries the gradient) and its detached statistics."""
        learn = self.cfg["learn"]
        out = self._model.compute_actor_critic(mb[OBS])
        dist = action_distribution(out)
        adv = normalize_advantage(mb[ADV]) if learn["adv_norm"] else mb[ADV]
        policy_loss, info = ppo_policy_loss(dist.log_prob(mb[ACTION]), mb[LOGP], adv, learn["clip_ratio"],
                                            learn["dual_clip"])
        value_loss = self._value_loss(out[VALUE], mb)
        entropy = dist.entropy().mean()
        loss = policy_loss + learn["value_weight"] * value_loss - learn["entropy_weight"] * entropy
        return loss, {"total_loss": loss.detach(), "policy_loss": policy_loss.detach(),
                      "value_loss": value_loss.detach(), "entropy": entropy.detach(), **info}

    def _value_loss(self, value: torch.Tensor, mb: dict[str, torch.Tensor]) -> torch.Tensor:
        """Critic loss against the minibatch's returns (both sides normalised under ``value_norm``)."""
        learn = self.cfg["learn"]
        value_target = mb[RETURN]
        old_value = mb[VALUE]
        if learn["value_norm"]:
            value_target = self._value_stats.normalize(value_target)
            old_value = self._value_stats.normalize(old_value)
        return ppo_value_loss(value, old_value, value_target, learn["value_clip_ratio"])

    def _begin_epoch(self, data: dict[str, torch.Tensor]) -> None:
        """Hook before each pass over the collect (after any advantage recompute): per-epoch state of a subclass."""

    @torch.no_grad()
    def _recompute_adv(self, data: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE again with the current critic. Rows are time-major over ``n_env`` envs; a rollout cut acts like a
        truncation (bootstrap from the next observation, no advantage flowing back across it)."""
        n_env = int(data[N_ENV][0])
        shape = (-1, n_env)
        value_t = self._denormalized_value(self._model.compute_critic(data[OBS])[VALUE])
        next_value_t = self._denormalized_value(self._model.compute_critic(data[NEXT_OBS])[VALUE])
        collect = self.cfg["collect"]
        reward, value, next_value, terminated, truncated = (
            x.reshape(shape).cpu().numpy()
            for x in (data[REWARD], value_t, next_value_t, data[TERMINATED], data[TRUNCATED] | data[CUT]))
        adv, ret = gae(reward, value, next_value, terminated, truncated, float(collect["discount_factor"]),
                       float(collect["gae_lambda"]))
        return torch.from_numpy(adv.reshape(-1)).to(self.device), torch.from_numpy(ret.reshape(-1)).to(self.device)

    def _monitor_vars_learn(self) -> list[str]:
        return ["total_loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"]

    # ---- collect -----------------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        if not hasattr(self, "_value_stats"):
            self._value_stats = RunningMeanStd()

    @torch.inference_mode()
    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        out = self._model.compute_actor_critic(self.obs_tensor(obs))
        dist = action_distribution(out)
        action = dist.sample()
        return {ACTION: action.cpu().numpy(), LOGP: dist.log_prob(action).cpu().numpy(),
                VALUE: self._denormalized_value(out[VALUE]).cpu().numpy()}

    @torch.inference_mode()
    def _get_train_sample(self, rollout: dict) -> dict:
        """GAE over the (T, N) rollout; V of each step's next observation (the final one at an episode end). An
        episode cut by an env worker failure ends, truncated, at its last real step (see ``cut_interrupted``)."""
        collect = self.cfg["collect"]
        t_len, n_env = rollout[REWARD].shape
        next_obs = rollout[NEXT_OBS].reshape((t_len * n_env,) + rollout[NEXT_OBS].shape[2:])
        next_value = self._denormalized_value(self._model.compute_critic(self.obs_tensor(next_obs))[VALUE])
        terminated, truncated = episode_ends(rollout[TERMINATED], rollout[TRUNCATED], rollout.get(INTERRUPTED),
                                             bool(self.cfg["learn"]["ignore_done"]))
        adv, ret = gae(rollout[REWARD], rollout[VALUE], next_value.cpu().numpy().reshape(t_len, n_env),
                       terminated, truncated, float(collect["discount_factor"]), float(collect["gae_lambda"]))
        keys: tuple[str, ...] = (OBS, ACTION, LOGP, VALUE)
        if self.cfg["recompute_adv"]:  # keep what GAE needs again, with the rollout's time structure
            keys += (NEXT_OBS, REWARD, TRUNCATED)
            cut = np.zeros((t_len, n_env), dtype=bool)
            cut[-1] = True
            rollout = {**rollout, TERMINATED: terminated, TRUNCATED: truncated, CUT: cut,
                       N_ENV: np.full((t_len, n_env), n_env)}
            keys += (TERMINATED, CUT, N_ENV)
        flat = {k: rollout[k].reshape((t_len * n_env,) + rollout[k].shape[2:]) for k in keys}
        flat[ADV] = adv.reshape(-1)
        flat[RETURN] = ret.reshape(-1)
        if INTERRUPTED in rollout:  # placeholder rows of episodes cut by an env worker failure are no transitions
            interrupted = rollout[INTERRUPTED].reshape(-1)
            if self.cfg["recompute_adv"]:  # keep the (T, N) layout; _forward_learn skips these rows
                flat[INTERRUPTED] = interrupted
            else:
                flat = {k: v[~interrupted] for k, v in flat.items()}
        return flat

    def _state_dict_model(self) -> dict[str, Any]:
        """Weights plus the value-normalisation statistics (collect mode needs both to compute GAE)."""
        return {**super()._state_dict_model(), "value_stats": self._value_stats.state_dict()}

    def _load_state_dict_model(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_model(state)
        if "value_stats" in state:
            self._value_stats.load_state_dict(state["value_stats"])

    def _denormalized_value(self, value: torch.Tensor) -> torch.Tensor:
        return self._value_stats.denormalize(value) if self.cfg["learn"]["value_norm"] else value

    # ---- eval --------------------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        if not hasattr(self, "_value_stats"):  # part of the model state an eval-only policy loads
            self._value_stats = RunningMeanStd()

    @torch.inference_mode()
    def _forward_eval(self, obs: np.ndarray) -> dict:
        out = self._model.compute_actor(self.obs_tensor(obs))
        action = out["logit"].argmax(dim=-1) if "logit" in out else out["mu"]
        return {ACTION: action.cpu().numpy()}


class RunningMeanStd:
    """Running mean and variance of a stream of scalars (Chan et al. parallel update), for value normalisation."""

    def __init__(self, eps: float = 1e-4) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, eps

    def update(self, x: np.ndarray) -> None:
        batch_mean, batch_var, n = float(np.mean(x)), float(np.var(x)), len(x)
        delta, total = batch_mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / (self.var**0.5 + 1e-8)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * (self.var**0.5 + 1e-8) + self.mean

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])
