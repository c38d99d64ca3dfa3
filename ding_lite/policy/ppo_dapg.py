"""PPO-DAPG: PPO plus the demonstration term of DAPG (Rajeswaran et al. 2018) as adapted in generalist-specialist
learning (Jia et al., ICML 2022). See docs/ppo_dapg.md."""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

from ding_lite.data.demo import DemoSampler, model_spaces
from ding_lite.data.demo_file import read_demos
from ding_lite.data.keys import ADV
from ding_lite.errors import ConfigError
from ding_lite.policy.on_policy import Log
from ding_lite.policy.ppo import PPOPolicy, action_distribution
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils.dapg import dapg_decay_coeff, dapg_demo_loss, dapg_demo_weight, max_advantage

DEMO_LOG_KEYS = ("demo_loss", "demo_likelihood", "demo_weight", "max_adv")
ADV_SCALES = ("gsl", "raw")  # the values of policy.learn.demo_adv_scale


@POLICY_REGISTRY.register("ppo_dapg")
class PPODAPGPolicy(PPOPolicy):
    """PPO whose policy loss gets −w·mean(π(a_demo|s_demo)) on the policy minibatches 0, ``demo_freq``,
    2·``demo_freq``, ... of each update (counted over its epochs, from 0 again at every collect, as GSL's code does).

    Per epoch, w = ``demo_coeff``·max(max_adv, 0) with max_adv the largest advantage of the collect (detached) on
    the scale ``demo_adv_scale``: GSL's (as the PPO loss sees them: standardised over the collect with ``adv_norm``)
    or the raw GAE one; or with
    ``demo_decay`` the original DAPG weight λ0·λ1^k·max(max_adv, 0), k the number of updates (``learn_mode.forward``
    calls) so far. Demo minibatches of ``demo_batch_size`` come from an endlessly cycling, shuffled sampler over the
    demo files. Only the actor sees demos: the value loss uses on-policy data alone. With ``demo_path=None`` there
    is no demo term and the policy trains exactly as PPO.
    """

    # the demo term reads no masks (a masked env's demo files hold them, unused here): it would push illegal actions up
    supports_action_mask = False

    config: dict[str, Any] = dict(
        type="ppo_dapg",
        learn=dict(
            demo_path=None,  # demo file or list of files from `ding_lite -m collect_demo` (None: no demo term)
            demo_freq=4,  # add the demo term on policy minibatches 0, demo_freq, 2·demo_freq, ... of each update
            demo_coeff=0.5,  # c in w = c·max(max_adv, 0)
            demo_adv_scale="gsl",  # max_adv of the advantages as PPO's loss sees them (GSL), or 'raw' (GAE's)
            demo_batch_size=64,  # demo samples per demo minibatch
            demo_decay=False,  # original DAPG weight λ0·λ1^k·max(max_adv, 0) (k = update iteration) instead of c
            demo_lambda0=0.1,  # λ0 of the decay
            demo_lambda1=0.95,  # λ1 of the decay
            demo_log_likelihood=False,  # mean log π(a|s) instead of mean π(a|s) (for continuous actions)
        ),
    )

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self.cfg["learn"]
        _check_settings(learn)
        self._dapg = DAPGState()
        self._learn_state["dapg"] = self._dapg
        self._demo_obs: torch.Tensor | None = None
        self._demo_action: torch.Tensor | None = None
        paths = demo_paths(learn["demo_path"])
        if paths:
            dataset = read_demos(paths)
            dataset.check_fits(*model_spaces(self.cfg["model"]))
            self._demo_obs = self.obs_tensor(dataset.obs)
            action = dataset.action  # (M,) indices, or boxes in the env's shape: flat as the policy's actions
            self._demo_action = torch.as_tensor(action if action.ndim == 1 else action.reshape(len(action), -1)
                                                ).to(self.device)
            # seeded from the pipeline's torch seed without drawing from the global RNG, so that the on-policy
            # minibatches are those PPO would use (demo_coeff=0 reproduces PPO exactly)
            self._dapg.sampler = DemoSampler(len(dataset), int(learn["demo_batch_size"]), torch.initial_seed())

    @property
    def has_demos(self) -> bool:
        """True when demo files were loaded (the demo term is active)."""
        return self._demo_obs is not None

    def _prepare(self, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self._dapg.minibatch = 0  # demo_freq counts the minibatches of this update (GSL restarts it every collect)
        return super()._prepare(data)

    def _end_update(self, logs: list[Log]) -> list[Log]:
        self._dapg.update_iter += 1  # k of the DAPG decay counts updates (collects)
        return super()._end_update(logs)

    def _coeff(self) -> float:
        learn = self.cfg["learn"]
        if learn["demo_decay"]:
            return dapg_decay_coeff(learn["demo_lambda0"], learn["demo_lambda1"], self._dapg.update_iter)
        return float(learn["demo_coeff"])

    def _epoch_context(self, data: dict[str, torch.Tensor]) -> Log:
        # GSL's code takes the max of the advantages its PPO loss uses (garage's centred and scaled ones); this
        # loss normalises per minibatch with adv_norm, so the collect's standardised advantages are on its scale
        learn = self.cfg["learn"]
        max_adv = max_advantage(data[ADV], standardize=learn["demo_adv_scale"] == "gsl" and bool(learn["adv_norm"]))
        zero = torch.zeros((), device=self.device)
        weight = dapg_demo_weight(max_adv, self._coeff()) if self.has_demos else zero
        return {"max_adv": max_adv, "demo_weight": weight}

    def _compute_loss(self, mb: dict[str, torch.Tensor], context: Log) -> tuple[torch.Tensor, Log]:
        """PPO's loss plus, on policy minibatches 0, ``demo_freq``, 2·``demo_freq``, ... of the update (GSL's order),
        the demo term; every step logs ``demo_loss`` and ``demo_likelihood`` (zero without a demo term)."""
        loss, stats = super()._compute_loss(mb, context)
        demo = self._demo_loss(context["demo_weight"])
        if demo is None:
            zero = torch.zeros((), device=self.device)
            return loss, {**stats, "demo_loss": zero, "demo_likelihood": zero}
        loss = loss + demo[0]
        return loss, {**stats, **demo[1], "total_loss": loss.detach()}

    def _demo_loss(self, weight: torch.Tensor) -> tuple[torch.Tensor, Log] | None:
        if self._demo_obs is None or self._demo_action is None or self._dapg.sampler is None:
            return None
        index = self._dapg.minibatch
        self._dapg.minibatch += 1
        if index % int(self.cfg["learn"]["demo_freq"]):
            return None
        idx = next(self._dapg.sampler).to(self.device)
        # actor only: the critic never sees demo states, so the value function trains on on-policy data alone
        dist = action_distribution(self._model.compute_actor(self._demo_obs[idx]))
        loss, likelihood = dapg_demo_loss(dist.log_prob(self._demo_action[idx]), weight,
                                          bool(self.cfg["learn"]["demo_log_likelihood"]))
        return loss, {"demo_loss": loss.detach(), "demo_likelihood": likelihood}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        if "dapg" not in state:  # a PPO checkpoint (e.g. GSL phase I): the demo schedule starts from scratch
            state = {**state, "dapg": DAPGState().state_dict()}
        super()._load_state_dict_learn(state)

    def _monitor_vars_learn(self) -> list[str]:
        return super()._monitor_vars_learn() + list(DEMO_LOG_KEYS)


class DAPGState:
    """Counters of the demo schedule kept in checkpoints: updates so far (k of the decay), policy minibatches of the
    current update (for ``demo_freq``) and the demo sampler's position and RNG."""

    def __init__(self) -> None:
        self.update_iter = 0
        self.minibatch = 0
        self.sampler: DemoSampler | None = None

    def state_dict(self) -> dict[str, Any]:
        return {"update_iter": self.update_iter, "minibatch": self.minibatch,
                "sampler": self.sampler.state_dict() if self.sampler is not None else {}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.update_iter = int(state["update_iter"])
        self.minibatch = int(state["minibatch"])
        sampler_state = state.get("sampler") or {}
        # a checkpoint taken with other demo files (or none) keeps this run's fresh sampler
        if self.sampler is not None and sampler_state and int(sampler_state["n"]) == self.sampler.n:
            self.sampler.load_state_dict(sampler_state)


def demo_paths(value: Any) -> list[str]:
    """``policy.learn.demo_path`` as a list of paths (None or [] : no demos); other types are a config error."""
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, os.PathLike)) for v in value):
        return [os.fspath(v) for v in value]
    raise ConfigError(f"policy.learn.demo_path must be a file path or a list of paths, got {value!r}")


def _check_settings(learn: Mapping[str, Any]) -> None:
    for key in ("demo_freq", "demo_batch_size"):
        if int(learn[key]) < 1:
            raise ConfigError(f"policy.learn.{key} must be at least 1, got {learn[key]!r}")
    for key in ("demo_coeff", "demo_lambda0"):
        if float(learn[key]) < 0:
            raise ConfigError(f"policy.learn.{key} must be ≥ 0 (a negative weight pushes the policy away from the "
                              f"demos), got {learn[key]!r}")
    if learn["demo_adv_scale"] not in ADV_SCALES:
        raise ConfigError(f"policy.learn.demo_adv_scale must be one of {', '.join(map(repr, ADV_SCALES))}, got "
                          f"{learn['demo_adv_scale']!r}")
    if not 0.0 <= float(learn["demo_lambda1"]) <= 1.0:
        raise ConfigError(f"policy.learn.demo_lambda1 must be in [0, 1], got {learn['demo_lambda1']!r}")
