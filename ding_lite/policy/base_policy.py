"""Policy base class: one object, three modes (learn, collect, eval), as in DI-engine."""
from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from ding_lite.errors import CheckpointError, ConfigError, first_line
from ding_lite.model.common import build_model, rollout_weights, wide_layers
from ding_lite.model.contract import ModelProbe, probe_n_actions, probe_obs_shape
from ding_lite.policy.hook_checks import (
    check_learn_state,
    check_signatures,
    checked_forward,
    checked_samples,
    checked_transition,
)
from ding_lite.policy.optim import config_settings, keep_config_settings
from ding_lite.policy.replay import ReplaySchedule
from ding_lite.utils.checkpoint import state_mismatch
from ding_lite.utils.dicts import deep_merge

logger = logging.getLogger("ding_lite")

FIELDS = ("learn", "collect", "eval")

class LearnMode(NamedTuple):
    """What a learner may call. ``forward(batch)`` returns one log dict per gradient step it took (a list; a single
    dict counts as one step, DI-engine's convention): the learner advances ``train_iter`` by that count."""

    forward: Callable[[dict], dict | list[dict]]  # one log dict per gradient step (a dict alone counts as one)
    state_dict: Callable[[], dict]
    load_state_dict: Callable[[dict], None]
    monitor_vars: Callable[[], list]
    replay: ReplaySchedule | None = None  # off-policy: when and how often to learn from the replay buffer


class CollectMode(NamedTuple):
    """What a collector may call. ``rollout_weights()`` is a context manager around a rollout, during which the
    weights do not change (the model's inference copies live in it: :func:`ding_lite.model.common.rollout_weights`)."""

    forward: Callable[..., dict]
    process_transition: Callable[[dict], dict]
    get_train_sample: Callable[[dict], dict]
    reset: Callable[..., None]
    state_dict: Callable[[], dict]
    load_state_dict: Callable[[dict], None]
    rollout_weights: Callable[[], AbstractContextManager[None]] = nullcontext


class EvalMode(NamedTuple):
    """What an evaluator may call (``rollout_weights`` as in :class:`CollectMode`, around an evaluation)."""

    forward: Callable[[np.ndarray], dict]
    reset: Callable[..., None]
    state_dict: Callable[[], dict]
    load_state_dict: Callable[[dict], None]
    rollout_weights: Callable[[], AbstractContextManager[None]] = nullcontext


class Policy:
    """Base of every policy.

    A subclass declares its defaults in the class attribute ``config`` (merged up the class chain by
    :meth:`default_config`), names its model template in :meth:`default_model`, and implements ``_init_learn``,
    ``_forward_learn``, ``_init_collect``, ``_forward_collect``, ``_get_train_sample``, ``_init_eval`` and
    ``_forward_eval``. ``_learn_state`` maps names to everything with a ``state_dict`` that a checkpoint must hold.

    Args:
        cfg: the compiled ``policy`` config section.
        model: a ready model; by default one is built from ``cfg.model`` (its ``type`` or :meth:`default_model`).
        enable_field: which modes to initialise.
    """

    # acts and learns among the legal actions of an observation with an action mask ({'observation', 'action_mask'},
    # envs/spaces.py); a policy that does not is refused such an env with a ConfigError before anything is written
    supports_action_mask = False

    config: dict[str, Any] = dict(
        type=None,  # registered policy type
        import_names=[],  # modules imported before the policy is built
        cuda=False,  # put models and batches on the GPU (falls back to CPU with a warning if there is none)
        load_path=None,  # -m eval, -m collect_demo: the checkpoint when --load-ckpt is not given (DI-engine's key)
        on_policy=False,  # True: train on each fresh collect; False: through a replay buffer
        discount_factor=0.99,  # γ of every return target (the one home; see DISCOUNT_POSITIONS)
        model=dict(),  # model section: type (default: the policy's default_model) and the model's settings
        learn=dict(
            discount_factor=None,  # DI-engine's position of γ for some policies (ACER): overrides the home if set
        ),  # learn-mode settings; the learner's own under learn.learner
        collect=dict(
            n_sample=None,  # env steps per collect over all collector envs (read by the pipeline; None: one per env)
            discount_factor=None,  # DI-engine's position of γ for some policies (PPO): overrides the home if set
        ),  # collect-mode settings; the collector's own under collect.collector
        eval=dict(),  # eval-mode settings; the evaluator's own under eval.evaluator
        other=dict(),  # other settings; the replay buffer's under other.replay_buffer (off-policy)
    )

    @property
    def model(self) -> nn.Module:
        """The policy's network, the one every mode acts with: for analysis (e.g. the action probabilities of a
        trained learner: ``policy.model.compute_actor(obs)``). Load weights through ``*_mode.load_state_dict``."""
        return self._model

    # DI-engine's names of the config and the device, read by every DI-engine policy: a port keeps them unchanged
    @property
    def _cfg(self) -> Mapping[str, Any]:
        return self.cfg

    @property
    def _device(self) -> torch.device:
        return self.device

    @property
    def _cuda(self) -> bool:
        return self.device.type == "cuda"

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """The defaults of this policy: every ``config`` up the class chain merged, subclass last."""
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            if "config" in vars(klass):
                merged = deep_merge(merged, vars(klass)["config"])
        return merged

    @classmethod
    def default_model(cls) -> str:
        """Registered name of the model template this policy builds when ``cfg.model.type`` is not set (DI-engine's
        form, an instance method returning ``(name, import_names)``, is read too: :func:`default_model_name`)."""
        raise ConfigError(f"policy class {cls.__name__} names no model: set policy.model.type, or return the "
                          f"registered model's name from {cls.__name__}.default_model()")

    def __init__(self, cfg: Mapping[str, Any], model: nn.Module | None = None,
                 enable_field: Iterable[str] | None = None) -> None:
        self.cfg = cfg
        self.device = torch.device("cpu")
        if cfg.get("cuda"):
            if torch.cuda.is_available():
                self.device = torch.device("cuda")
            else:
                logger.warning("warning: policy.cuda=True but CUDA is not available: running on the CPU")
        model_cfg = cfg.get("model") or {}
        if model is None:
            model = build_model(model_cfg, model_cfg.get("type") or default_model_name(self))
        self.discount_factor = resolve_discount_factor(cfg)
        self._model: Any = model.to(self.device)  # templates add compute_* methods beyond nn.Module
        obs_shape = probe_obs_shape(model_cfg)
        if obs_shape is not None:  # what the modes will read from the model, checked once before they run
            self._check_model(ModelProbe(self._model, str(cfg.get("type")), str(model_cfg.get("type") or
                                         type(self._model).__name__), obs_shape, probe_n_actions(model_cfg),
                                         self.device))
        self._wide_layers = wide_layers(self._model)  # found once, not at every rollout (a walk over the modules)
        self._learn_state: dict[str, Any] = {"model": self._model}
        self._enabled = tuple(enable_field or FIELDS)
        # whether this object's collect mode collects (serial), or only hands its weights to collectors elsewhere
        # (a learn-only policy, or the Ray driver's: collect_elsewhere)
        self._collects = "collect" in self._enabled
        check_signatures(self, Policy)  # before _init_*: a method left out is one line, not a traceback
        for field in self._enabled:
            if field not in FIELDS:
                raise ValueError(f"unknown policy field '{field}', expected some of {FIELDS}")
            getattr(self, f"_init_{field}")()
        self._replay = self._replay_schedule() if "learn" in self._enabled and not cfg.get("on_policy") else None
        if "learn" in self._enabled:
            check_learn_state(self)  # before anything is written: checkpoints that cannot be read are found late

    def collect_elsewhere(self) -> None:
        """Other processes collect with this policy's weights (the parallel pipeline's collector actors): what its
        collect mode would take in while stepping (PPO's observation and reward statistics) its learn mode takes from
        the samples instead, and the next broadcast of the collect mode's weights brings it back to the actors."""
        self._collects = False

    # ---- modes -------------------------------------------------------------------------------------------------
    @property
    def learn_mode(self) -> LearnMode:
        return LearnMode(self._forward_learn, self._state_dict_learn, self._load_state_dict_learn,
                         self._monitor_vars_learn, self._replay)

    @property
    def collect_mode(self) -> CollectMode:
        return CollectMode(checked_forward(self._forward_collect, self, "_forward_collect(obs, env_step)"),
                           checked_transition(self._process_transition, self),
                           checked_samples(self._get_train_sample, self),
                           self._reset_collect, self._state_dict_model, self._load_state_dict_model,
                           self._rollout_weights)

    @property
    def eval_mode(self) -> EvalMode:
        return EvalMode(checked_forward(self._forward_eval, self, "_forward_eval(obs)"), self._reset_eval,
                        self._state_dict_model, self._load_state_dict_model,
                        self._rollout_weights)

    # ---- to implement ------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        """Build what learning needs (optimisers, target networks) and register it in ``_learn_state``."""
        raise NotImplementedError(f"{type(self).__name__} must implement _init_learn")

    def _init_collect(self) -> None:
        """Build what collection needs (exploration schedules, RNGs, per-env state)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _init_collect")

    def _init_eval(self) -> None:
        """Build what evaluation needs (often nothing)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _init_eval")

    def _forward_learn(self, batch: dict) -> dict | list[dict]:
        """Learn on a batch (dict of arrays). Returns one log dict of scalars (and explicit fields) per gradient
        step, as DI-engine does: a list of them, or a single dict for one step. The learner counts one train
        iteration per entry."""
        raise NotImplementedError(f"{type(self).__name__} must implement _forward_learn")

    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        """Actions for a batch of observations (N, ...), plus columns to store (e.g. logp, value)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _forward_collect")

    def _forward_eval(self, obs: np.ndarray) -> dict:
        """Greedy actions for a batch of observations: ``{'action': (N, ...)}``."""
        raise NotImplementedError(f"{type(self).__name__} must implement _forward_eval")

    def _get_train_sample(self, rollout: dict) -> dict:
        """Turn a time-major (T, N) rollout into train samples (dict of arrays)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _get_train_sample")

    # ---- defaults a subclass may override ----------------------------------------------------------------------
    def _process_transition(self, policy_output: dict) -> dict:
        """Columns a step stores besides obs/next_obs/reward/terminated/truncated: by default all forward outputs."""
        return policy_output

    def _reset_collect(self, env_ids: Any = None) -> None:
        """Forget per-env collect state (recurrent state, pending n-step windows) of ``env_ids`` (None: all)."""

    def _reset_eval(self, env_ids: Any = None) -> None:
        """Forget per-env eval state of ``env_ids`` (None: all)."""

    def _rollout_weights(self) -> AbstractContextManager[None]:
        """The block of a rollout (no weight changes inside): the model's inference copies of its weights."""
        return rollout_weights(self._model, self._wide_layers) if self._wide_layers else nullcontext()

    def _monitor_vars_learn(self) -> list[str]:
        return []

    def _check_model(self, probe: ModelProbe) -> None:
        """Check, once, that the model gives what the modes read (``probe.expect('forward', {'q_value': ('B',
        'A')})``); a mismatch is a :class:`ConfigError` naming the model, the method, the key and the shape. Runs
        where ``policy.model.obs_shape`` is known; by default nothing is checked."""

    def _replay_schedule(self) -> ReplaySchedule:
        """An off-policy policy's replay schedule (built once, with the learn mode): by default from the config's
        ``learning_starts``, ``learn.batch_size``, ``learn.update_per_collect`` and ``learn.replay_ratio``."""
        return ReplaySchedule(self.cfg)

    def _state_dict_learn(self) -> dict[str, Any]:
        return {name: obj.state_dict() for name, obj in self._learn_state.items()}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        missing = sorted(name for name in self._learn_state if name not in state)
        if missing:
            raise CheckpointError(f"checkpoint lacks {missing} needed by policy '{self.cfg.get('type')}'")
        settings = config_settings(self._learn_state.values())
        for name, obj in self._learn_state.items():
            _load_into(obj, state[name], name)
        keep_config_settings(settings, self._learn_state.values())  # the config's learning rate, not the checkpoint's

    def _state_dict_model(self) -> dict[str, Any]:
        return {"model": self._model.state_dict()}

    def _load_state_dict_model(self, state: dict[str, Any]) -> None:
        if "model" not in state:
            raise CheckpointError("checkpoint has no 'model' weights")
        _load_into(self._model, state["model"], "model")

    # ---- helpers -----------------------------------------------------------------------------------------------
    def obs_tensor(self, obs: Any) -> torch.Tensor:
        """A float32 tensor of an observation batch on the policy's device (uint8 frames cross to a GPU as uint8,
        a quarter of the bytes, and become float there)."""
        t = torch.as_tensor(obs)
        if self.device.type != "cpu":
            t = t.to(self.device)
        return t if t.dtype == torch.float32 else t.float()

    def batch_tensors(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Every numpy leaf of ``batch`` as a tensor on the policy's device."""
        out: dict[str, Any] = {}
        for k, v in batch.items():
            if isinstance(v, Mapping):
                out[k] = self.batch_tensors(v)
            elif isinstance(v, np.ndarray):
                t = torch.from_numpy(v)
                if self.device.type != "cpu":
                    if t.ndim >= 4:  # image batches: from pinned memory the copy runs without staging, async
                        t = t.pin_memory()
                    t = t.to(self.device, non_blocking=True)
                out[k] = t
            else:
                out[k] = v
        return out


def default_model_name(policy: Any) -> str:
    """The registered model a policy (class or instance) builds when ``policy.model.type`` is not set: what its
    ``default_model()`` returns. DI-engine's form is read as well: an instance method (called here on the class,
    before any policy exists) returning ``(name, import_names)``, whose modules are imported when ``name`` is not
    registered yet (a built-in name such as ``'dqn'`` needs none of DI-engine's modules; a ``ding_lite.*`` module
    that does not exist is skipped)."""
    from ding_lite.registry import MODEL_REGISTRY, import_modules, missing_own_module

    cls = policy if isinstance(policy, type) else type(policy)
    method = inspect.getattr_static(cls, "default_model", None)
    try:
        if isinstance(policy, type) and inspect.isfunction(method):
            result = method(policy)  # DI-engine's instance method; it names a constant
        else:
            result = policy.default_model()
    except (AttributeError, TypeError) as exc:
        raise ConfigError(f"{cls.__name__}.default_model() cannot name the model before the policy is built "
                          f"({first_line(exc)}): make it a classmethod that returns the registered model's name, or "
                          f"set policy.model.type") from exc
    if isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], str):
        name, import_names = result
        if name not in MODEL_REGISTRY:
            # a DI-engine template ding_lite lacks, its module renamed (ding_lite.model.template.pg): nothing to
            # import; the unknown model type is then the error, naming the registered models and how to add one
            import_modules([m for m in import_names if not missing_own_module(m)], "policy.default_model()")
        return name
    if not isinstance(result, str):
        raise ConfigError(f"{cls.__name__}.default_model() must return a registered model's name (or DI-engine's "
                          f"(name, import_names)), got {result!r}")
    return result


# Where a config may give γ: the home, then DI-engine's positions (policy.learn for ACER, policy.collect for PPO).
DISCOUNT_POSITIONS = ("discount_factor", "learn.discount_factor", "collect.discount_factor")


def resolve_discount_factor(cfg: Mapping[str, Any]) -> float:
    """γ of a policy config: ``policy.discount_factor``, unless one of DI-engine's positions
    (``policy.learn.discount_factor``, ``policy.collect.discount_factor``) is set, which then wins. Two DI-engine
    positions with different values, or a γ outside [0, 1], are config errors."""
    given = {}
    for path in DISCOUNT_POSITIONS[1:]:
        section, key = path.split(".")
        value = (cfg.get(section) or {}).get(key)
        if value is not None:
            given[path] = value
    if len(set(given.values())) > 1:
        listed = " and ".join(f"policy.{p}={v!r}" for p, v in given.items())
        raise ConfigError(f"{listed} disagree: give the discount factor once, as policy.discount_factor")
    path, value = next(iter(given.items())) if given else ("discount_factor", cfg.get("discount_factor", 0.99))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"policy.{path} must be a number in [0, 1], got {value!r}")
    return float(value)


class StepCounter:
    """A count of learn steps that checkpoints keep (e.g. for target-network update timing after a resume)."""

    def __init__(self) -> None:
        self.count = 0

    def state_dict(self) -> dict[str, int]:
        return {"count": self.count}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.count = int(state["count"])


def _load_into(obj: Any, state: Any, name: str) -> None:
    try:
        obj.load_state_dict(state)
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        # torch's first line names only the class; the keys and shapes say what does not fit
        why = state_mismatch(obj.state_dict(), state) if isinstance(obj, torch.nn.Module) else ""
        raise CheckpointError(f"checkpoint entry '{name}' does not fit this policy: {why or first_line(exc)}") \
            from exc
