"""The off-policy base: one update order for replay-based policies (DQN, SAC, TD3), with hooks that return values,
as :class:`~ding_lite.policy.on_policy.OnPolicyPolicy` has for PPO. The replay schedule around it (when learning
starts, updates per collect, priorities back to the buffer) is :class:`~ding_lite.policy.replay.ReplaySchedule`."""
from __future__ import annotations

import copy
import warnings
from typing import Any

import torch
from torch import nn

from ding_lite.data.keys import PRIORITY, WEIGHT
from ding_lite.errors import ConfigError
from ding_lite.policy.base_policy import Policy, StepCounter
from ding_lite.policy.optim import optimizer_step
from ding_lite.rl_utils.normalize import linear_lr_decay

Log = dict[str, Any]


class OffPolicyPolicy(Policy):
    """Base of replay-based policies. ``_forward_learn(batch)`` makes one update on one sampled batch::

        data = self.batch_tensors(batch)                 # (+ data['weight'] when priority_IS_weight)
        context = {}                                     # what one stage leaves for the next (e.g. SAC's log pi)
        for stage in self._stages(step):                 # the optimisers stepped this update, in order
            loss, log = self._stage_loss(stage, data, context)   # with the weights the earlier stages left
            gradients of loss into the stage's parameters only (backward(inputs=...)) (loss None: the hook set
            them itself), then clip to learn.grad_clip_value and step the stage's optimiser
        step += 1
        if self._targets_due(step): every target network <- Polyak (learn.target_theta) or a copy
        return the stages' logs (+ 'priority': context['priority'] + 1e-6 when policy.priority)

    A stage's gradient reaches only its own parameters, so SAC's actor loss, computed through the critics, trains
    no critic weight (and autograd skips those weight gradients). The stage that computes TD errors puts their
    absolute values (B,) under ``context['priority']``.

    A subclass's ``_init_learn`` calls ``super()._init_learn()``, then registers its stages in update order
    (:meth:`_add_stage`) and its target networks (:meth:`_add_target`), and implements :meth:`_stage_loss`.
    """

    config: dict[str, Any] = dict(
        on_policy=False,
        priority=False,  # report priorities (|TD error|) for a prioritized replay buffer
        priority_IS_weight=False,  # weight the TD loss by the buffer's importance-sampling weights
        learning_starts=0,  # env steps collected before the first gradient step (DI-engine: random_collect_size)
        learn=dict(
            batch_size=64,  # samples per gradient step
            update_per_collect=1,  # gradient steps after each collect (DI-engine's meaning)
            replay_ratio=None,  # if set: gradient steps per collected sample instead (fractions carried over)
            target_theta=None,  # Polyak τ of the target networks (θ' ← (1 − τ)θ' + τθ); None: hard copies
            target_update_freq=100,  # hard copies: every this many updates (unused with target_theta)
            grad_clip_value=None,  # clip each optimiser's global gradient norm (None: off)
            lr_decay_iter=None,  # anneal each optimiser's learning rate linearly to 0 over so many updates (None: off)
            ignore_done=False,  # treat terminations as truncations (bootstrap through them)
        ),
    )

    # ---- set-up ------------------------------------------------------------------------------------------------
    def __init__(self, cfg: Any, model: nn.Module | None = None, enable_field: Any = None) -> None:
        super().__init__(cfg, model, enable_field)
        if "learn" in self._enabled:
            self._check_update_hooks()

    def _check_update_hooks(self) -> None:
        """A plugin's learn mode that would fail at its first update, or never learn, is one ConfigError when the
        policy is built (before anything is written). Skipped for a class that replaces ``_forward_learn``: it may make
        its own update with the base's targets and counters and no stage."""
        cls = type(self).__qualname__
        if type(self)._forward_learn is not OffPolicyPolicy._forward_learn:
            # its own update (e.g. its own optimisers, with the base's targets and counters): the stages may be
            # unused; one that still calls the base's update with no stage is named there
            return
        if not hasattr(self, "_stage_names"):
            raise ConfigError(f"policy '{self.cfg.get('type')}': {cls}._init_learn must call "
                              f"super()._init_learn() (OffPolicyPolicy's update needs it)")
        if not self._stage_names:  # _forward_learn would count updates and step nothing: a run that never learns
            raise ConfigError(self._no_stage_message())
        if type(self)._stage_loss is OffPolicyPolicy._stage_loss:
            raise ConfigError(f"policy '{self.cfg.get('type')}': {cls} does not implement _stage_loss(stage, data, "
                              f"context), which OffPolicyPolicy's update calls (docs/sac_td3.md)")

    def _no_stage_message(self) -> str:
        return (f"policy '{self.cfg.get('type')}': {type(self).__qualname__}._init_learn registers no update stage; "
                f"call self._add_stage(name, optimizer) for each optimiser (docs/sac_td3.md)")

    def _check_single_transitions(self, why: str) -> None:
        """A :class:`ConfigError` unless ``policy.collect.unroll_len`` (DI-engine's sequence length) is 1: a policy
        that samples single transitions would silently ignore any other value (``why`` says what it learns from)."""
        unroll_len = self.cfg["collect"].get("unroll_len", 1)
        if unroll_len != 1:
            raise ConfigError(f"policy.collect.unroll_len={unroll_len!r} must be 1: {why}")

    def _init_learn(self) -> None:
        learn = self.cfg["learn"]
        theta = learn["target_theta"]
        if theta is not None and not 0.0 < float(theta) <= 1.0:
            raise ConfigError(f"policy.learn.target_theta must be in (0, 1] or None (hard copies), got {theta!r}")
        self._stage_names: list[str] = []
        self._optimizers: dict[str, torch.optim.Optimizer] = {}
        self._stage_params: dict[str, list[torch.Tensor]] = {}
        self._lr_schedules: dict[str, torch.optim.lr_scheduler.LambdaLR] = {}  # stage -> its learn.lr_decay_iter
        self._lr_stepped: set[str] = set()  # stages whose schedule stepped in this process (torch warns at the 1st)
        self._target_params: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = []  # (target, online) per net
        self._target_buffers: tuple[list[torch.Tensor], list[torch.Tensor]] = ([], [])  # copied, never averaged
        self._train_steps = StepCounter()
        self._learn_state["train_steps"] = self._train_steps

    def _add_stage(self, stage: str, optimizer: torch.optim.Optimizer, state_key: str | None = None) -> None:
        """Register ``optimizer`` as the update stage ``stage`` (stages run in registration order) and as the
        checkpoint entry ``state_key`` (default ``optimizer_<stage>``)."""
        self._check_base_init("_add_stage")
        self._stage_names.append(stage)
        self._optimizers[stage] = optimizer
        self._stage_params[stage] = [p for group in optimizer.param_groups for p in group["params"]]
        self._learn_state[state_key or f"optimizer_{stage}"] = optimizer
        schedule = linear_lr_decay(optimizer, self.cfg["learn"]["lr_decay_iter"])
        if schedule is not None:  # in checkpoints, so a resumed run goes on from the rate it reached
            self._lr_schedules[stage] = schedule
            self._learn_state[f"lr_schedule_{stage}"] = schedule

    def _add_target(self, name: str, online: nn.Module) -> nn.Module:
        """A frozen copy of ``online`` that :meth:`_update_targets` moves towards it; kept in checkpoints as
        ``name``. Floating-point buffers (e.g. observation statistics) are copied, not averaged."""
        self._check_base_init("_add_target")
        target = copy.deepcopy(online).requires_grad_(False)
        self._target_params.append((list(target.parameters()), list(online.parameters())))
        for t, o in zip(target.buffers(), online.buffers(), strict=True):
            self._target_buffers[0].append(t)
            self._target_buffers[1].append(o)
        self._learn_state[name] = target
        return target

    def _check_base_init(self, method: str) -> None:
        if not hasattr(self, "_stage_names"):  # else an AttributeError on a private name inside the subclass
            raise ConfigError(f"policy '{self.cfg.get('type')}': {type(self).__qualname__}._init_learn calls "
                              f"{method} before super()._init_learn(); call super()._init_learn() first")

    # ---- the update --------------------------------------------------------------------------------------------
    def _forward_learn(self, batch: dict) -> Log:
        data = self.batch_tensors(batch)
        if not self.cfg["priority_IS_weight"]:
            data.pop(WEIGHT, None)
        step = self._train_steps.count
        context: dict[str, Any] = {}
        log: Log = {}
        if not self._stage_names:  # a subclass's own _forward_learn that calls this one (not checked at build)
            raise ConfigError(self._no_stage_message())
        stages = self._stages(step)
        for stage in stages:
            if stage not in self._optimizers:  # else a KeyError deep in _step
                raise ConfigError(f"policy '{self.cfg.get('type')}': {type(self).__qualname__}._stages({step}) "
                                  f"returned {stage!r}, not a registered stage ({', '.join(self._stage_names)})")
            loss, stage_log = self._stage_loss(stage, data, context)
            self._step(stage, loss)
            log.update(stage_log)
        self._train_steps.count = step + 1
        for stage, schedule in self._lr_schedules.items():
            if stage in stages or stage in self._lr_stepped:
                schedule.step()
            else:
                # a delayed stage (TD3's actor) decays by train iteration too, so it steps before its optimiser ever
                # has at the first update: torch's warning of that order (given at a schedule's first step only) is
                # about user code that skips a rate, not this. Only then: catch_warnings resets Python's record of
                # the warnings shown, and at every update an env's once-per-place warning came again each time
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step\\(\\)` before", UserWarning)
                    schedule.step()
            self._lr_stepped.add(stage)
        if self._targets_due(step + 1):
            self._update_targets()
        if self.cfg["priority"]:
            if PRIORITY not in context:  # else a KeyError: the buffer's priorities come from the policy's TD stage
                raise ConfigError(f"policy.priority=True, but no stage of {type(self).__qualname__} left "
                                  f"context['priority'] (the |TD error| per sample) in _stage_loss")
            log[PRIORITY] = context[PRIORITY].detach().cpu().numpy() + 1e-6  # explicit return field
        return log

    def _step(self, stage: str, loss: torch.Tensor | None) -> None:
        if loss is not None:  # None: _stage_loss wrote the stage's gradients itself
            params = self._stage_params[stage]
            for p in params:  # zero_grad(set_to_none=True), without its per-call profiler scope
                p.grad = None
            loss.backward(inputs=params)
        optimizer_step(self._optimizers[stage], self.cfg["learn"]["grad_clip_value"])

    def _update_targets(self) -> None:
        theta = self.cfg["learn"]["target_theta"]
        with torch.no_grad():
            for target, online in self._target_params:
                if theta is None:
                    torch._foreach_copy_(target, online)
                else:
                    torch._foreach_lerp_(target, online, float(theta))
            if self._target_buffers[0]:
                torch._foreach_copy_(*self._target_buffers)

    # ---- hooks -------------------------------------------------------------------------------------------------
    def _stages(self, step: int) -> list[str]:
        """The stages that step at update ``step`` (counted from 0), in order: by default all of them."""
        return self._stage_names

    def _stage_loss(self, stage: str, data: dict[str, torch.Tensor],
                    context: dict[str, Any]) -> tuple[torch.Tensor | None, Log]:
        """The loss of ``stage`` on the batch (carries the gradient) and its detached scalars to log; ``context``
        holds what earlier stages of this update left (and takes what later ones need). A hook that computes the
        gradient by hand sets ``.grad`` of every parameter of the stage and returns None for the loss."""
        raise NotImplementedError(f"{type(self).__name__} must implement _stage_loss")

    def _targets_due(self, steps_done: int) -> bool:
        """After ``steps_done`` updates: are the targets moved now? Polyak: every update; copies: every
        ``learn.target_update_freq``."""
        learn = self.cfg["learn"]
        return learn["target_theta"] is not None or steps_done % int(learn["target_update_freq"]) == 0
