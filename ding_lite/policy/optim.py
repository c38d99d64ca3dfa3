"""Optimiser helpers for the small networks of RL: Adam on torch's fused kernel, stepped with less per-step Python
than ``torch.optim.Adam.step``, and the global gradient-norm clip as foreach kernels."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch.optim import optimizer as torch_optimizer


def optimizer_step(optimizer: torch.optim.Optimizer, max_grad_norm: float | None = None,
                   grad_norm: float | None = None) -> None:
    """Clip the gradients of ``optimizer``'s parameters to a global norm of ``max_grad_norm`` (None: no clip; the
    rule of :func:`grad_norm_clip`), then ``optimizer.step()``. ``grad_norm``: their global norm where the caller
    has it already (a written-out backward: one dot product over its flat gradient buffer); None: computed here.

    For torch's fused Adam (what :func:`adam` builds) the fused kernel is called directly (``torch._fused_adam_``,
    the call ``Adam.step`` ends in), without ``Adam.step``'s per-call set-up: its hooks machinery, the per-step
    re-grouping by device and dtype, and state checks; and the clip's scaling is the kernel's ``grad_scale`` (the
    gradients are divided by ``1 / min(1, max_norm / (norm + 1e-6))`` in the pass that updates the parameters, and
    left clipped, as after :func:`grad_norm_clip`), not a pass of its own. The update, the state (so ``state_dict``
    and checkpoints) and the learning rate read from ``param_groups`` (schedulers work) are torch's.

    Hopper's PPO learn loop (139k parameters in 13 tensors): a gradient step takes 1,184 µs this way and 1,323 µs
    with ``grad_norm_clip`` plus ``Adam.step`` (clip and step: about 350 µs against 490 µs). Anything the direct
    call does not cover goes through :func:`grad_norm_clip` and ``optimizer.step()`` unchanged: other optimisers,
    the first step (which creates the state), step hooks, amsgrad, maximize, capturable or differentiable groups, a
    tensor learning rate, parameters on several devices or dtypes.
    """
    groups = _fused_adam_groups(optimizer) if type(optimizer) is torch.optim.Adam else None
    if groups is None:
        if max_grad_norm:
            grad_norm_clip([p for group in optimizer.param_groups for p in group["params"]], max_grad_norm, grad_norm)
        optimizer.step()
        return
    _fused_adam_step(groups, max_grad_norm, grad_norm)


class FixedBufferAdamStep:
    """:func:`optimizer_step` for the steps of one learn call whose gradients stay in the same tensors (a written-out
    backward writing into fixed buffers): the fused kernel's tensor lists are found once, at the first step that can
    use them, instead of at every step (about 10 µs of a 250 µs PPO step on 64x64 nets). Same update; build a new one
    for each learn call (hooks, parameters and state are looked at when the lists are found).

    Two more per-step costs go the same way: the parameters' ``step`` counts (one 0-dim tensor each in Adam's state)
    become views of one tensor per group, so that counting a step is one in-place add, not ``_foreach_add_`` over
    13 tensors (21 µs on the CPU); and the clip's scale is written into one preallocated tensor, not made anew."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer
        self._groups: list[tuple[dict, tuple[list, ...]]] | None = None
        self._counts: list[torch.Tensor] = []  # per group: the tensor whose elements are its parameters' step counts
        self._scale = torch.ones(())
        self._scale_np = self._scale.numpy()

    def __call__(self, max_grad_norm: float | None = None, grad_norm: float | None = None) -> None:
        if self._groups is None and type(self.optimizer) is torch.optim.Adam:
            self._groups = _fused_adam_groups(self.optimizer)  # None until Adam.step has made the state
            if self._groups is not None:
                self._share_step_counts(self._groups)
        if self._groups is None or (max_grad_norm and grad_norm is None):
            optimizer_step(self.optimizer, max_grad_norm, grad_norm)
            return
        grad_scale = None
        # as _fused_adam_step: 1 / the clip coefficient (in float32, rounded as torch.tensor rounds it)
        if max_grad_norm and grad_norm is not None:
            self._scale_np[()] = max(1.0, (grad_norm + 1e-6) / float(max_grad_norm))
            grad_scale = self._scale
        with torch.no_grad():
            _fused_adam_kernels(self._groups, grad_scale, self._counts)

    def _share_step_counts(self, groups: list[tuple[dict, tuple[list, ...]]]) -> None:
        """Each group's ``step`` states replaced by views of one tensor holding the same counts (Adam's own step,
        ``state_dict`` and checkpoints see the same values; only their memory is shared)."""
        self._counts = []
        for _, (params, _, _, _, steps) in groups:
            counts = torch.stack([s.detach() for s in steps])
            views = list(counts.unbind())
            for p, view in zip(params, views, strict=True):
                self.optimizer.state[p]["step"] = view
            steps[:] = views
            self._counts.append(counts)


def _fused_adam_step(groups: list[tuple[dict, tuple[list, ...]]], max_grad_norm: float | None,
                     grad_norm: float | None) -> None:
    """The clip (as the kernel's ``grad_scale``) and torch's fused Adam kernel on the lists of
    :func:`_fused_adam_groups`."""
    with torch.no_grad():
        grad_scale = None
        if max_grad_norm:
            if grad_norm is None:
                grads = [g for _, lists in groups for g in lists[1]]
                norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
                grad_scale = ((norm + 1e-6) / float(max_grad_norm)).clamp_(min=1.0)  # 1 / the clip coefficient
            else:
                grad_scale = torch.tensor(max(1.0, (grad_norm + 1e-6) / float(max_grad_norm)))
        _fused_adam_kernels(groups, grad_scale)


def _fused_adam_kernels(groups: list[tuple[dict, tuple[list, ...]]], grad_scale: torch.Tensor | None,
                        counts: list[torch.Tensor] | None = None) -> None:
    """Count a step and run torch's fused Adam kernel for each group (under ``no_grad``). ``counts``: per group, the
    tensor whose elements the group's ``step`` states are (one add); None: the states are counted one by one."""
    for k, (group, (params, grads, exp_avgs, exp_avg_sqs, steps)) in enumerate(groups):
        if counts is None:
            torch._foreach_add_(steps, 1)
        else:
            counts[k].add_(1)
        beta1, beta2 = group["betas"]
        torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False, lr=group["lr"],
                           beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"],
                           maximize=False, grad_scale=grad_scale, found_inf=None)


def _fused_adam_groups(optimizer: torch.optim.Adam) -> list[tuple[dict, tuple[list, ...]]] | None:
    """Per param group, the tensor lists of the fused kernel, or None where ``Adam.step`` must run."""
    if optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks or \
            torch_optimizer._global_optimizer_pre_hooks or torch_optimizer._global_optimizer_post_hooks:
        return None
    out = []
    for group in optimizer.param_groups:
        if not group.get("fused") or group["amsgrad"] or group["maximize"] or group["capturable"] or \
                group["differentiable"] or group.get("decoupled_weight_decay") or isinstance(group["lr"], torch.Tensor):
            return None
        lists: tuple[list, ...] = ([], [], [], [], [])
        params, grads, exp_avgs, exp_avg_sqs, steps = lists
        for p in group["params"]:
            if p.grad is None:
                continue
            state = optimizer.state.get(p)
            if not state or p.grad.is_sparse:  # not stepped yet: Adam.step creates the state
                return None
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        if not params:
            continue
        if any(p.device != params[0].device or p.dtype != params[0].dtype for p in params):
            return None
        out.append((group, lists))
    return out


def adam(params: Iterable[torch.nn.Parameter], lr: float, **kwargs: Any) -> torch.optim.Adam:
    """Adam with torch's fused kernel: one kernel for all parameters, about 20% faster learn steps for the small
    networks of RL on the CPU (same update rule; the unfused one where fusing is not supported). Step it (and clip
    its gradients) with :func:`optimizer_step`."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True, **kwargs)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(params, lr=lr, **kwargs)


def grad_norm_clip(params: Iterable[torch.nn.Parameter], max_norm: float | None, norm: float | None = None) -> None:
    """Clip the global gradient norm when ``max_norm`` is set: ``torch.nn.utils.clip_grad_norm_``'s rule (scale
    every gradient by ``min(1, max_norm / (norm + 1e-6))``) as three foreach kernels, without its per-call grouping
    and checks, which cost more than the arithmetic on RL's small networks (Hopper's PPO step: 99 -> 62 µs).
    ``norm``: the gradients' global norm where the caller has it (None: computed here)."""
    if not max_norm:
        return
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    if norm is not None:
        torch._foreach_mul_(grads, min(1.0, float(max_norm) / (norm + 1e-6)))
        return
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (float(max_norm) / (total + 1e-6)).clamp_(max=1.0))


def config_settings(objects: Iterable[Any]) -> list[tuple[torch.optim.Optimizer, list[dict[str, Any]]]]:
    """Each optimiser among ``objects`` (a policy's learn state) with its param groups' settings as built from the
    config (learning rate, betas, weight decay...), for :func:`keep_config_settings` after a checkpoint is loaded."""
    return [(obj, [{k: v for k, v in group.items() if k != "params"} for group in obj.param_groups])
            for obj in objects if isinstance(obj, torch.optim.Optimizer)]


def keep_config_settings(settings: list[tuple[torch.optim.Optimizer, list[dict[str, Any]]]],
                         objects: Iterable[Any]) -> None:
    """Give the optimisers of :func:`config_settings` their config's settings back after their state was loaded:
    ``Optimizer.load_state_dict`` also loads the param groups' learning rates, so ``--resume`` or ``--load-ckpt``
    with ``--set policy.learn.learning_rate=...`` (what a diverged run's error advises) trained on at the
    checkpoint's rate, in silence. The moments and step counts stay the checkpoint's. Where a learning-rate
    schedule (a ``LambdaLR`` among ``objects``) drives an optimiser, the rate is the config's times the schedule's
    factor at the step it reached, as the schedule itself computes it: an unchanged config resumes bit for bit."""
    for optimizer, groups in settings:
        for group, config in zip(optimizer.param_groups, groups, strict=True):
            group.update(config)
    for schedule in objects:
        if isinstance(schedule, torch.optim.lr_scheduler.LambdaLR):
            groups = schedule.optimizer.param_groups
            state = schedule.state_dict()  # (its public state: the schedule's base rates are the checkpoint's)
            state["base_lrs"] = [group["initial_lr"] for group in groups]
            for group, base, factor in zip(groups, state["base_lrs"], schedule.lr_lambdas, strict=True):
                group["lr"] = base * factor(state["last_epoch"])
            state["_last_lr"] = [group["lr"] for group in groups]
            schedule.load_state_dict(state)
