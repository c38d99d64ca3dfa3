"""The on-policy base: one learn call trains on one collect, in a fixed order with hooks that return values (the
order of SB3's ``OnPolicyAlgorithm.train`` and Tianshou's ``PGPolicy.learn``)."""
from __future__ import annotations

from typing import Any

import torch

from ding_lite.data.keys import OBS, VALID
from ding_lite.model.encoders import conv_layout
from ding_lite.policy.base_policy import Policy
from ding_lite.policy.optim import optimizer_step

Log = dict[str, torch.Tensor]


class OnPolicyPolicy(Policy):
    """Base of on-policy actor-critics (PPO, PPO-DAPG, EPPO). ``_forward_learn(batch)`` runs::

        data = self._prepare(data)                       # once per collect
        for epoch in range(learn.epoch_per_collect):
            data = self._epoch_data(data)                # e.g. advantages recomputed by the current critic
            rows = the valid rows of data, shuffled (minibatch k: rows[k * batch_size:(k + 1) * batch_size])
            context = self._epoch_context(rows)          # per-epoch constants (e.g. DAPG's demo weight)
            rows = self._epoch_minibatches(rows, learn.batch_size)  # e.g. advantages normalised per minibatch
            for each minibatch of learn.batch_size rows:
                log = self._gradient_step(minibatch, context)  # by default:
                    # loss, log = self._compute_loss(minibatch, context)
                    # zero_grad, backward, clip to learn.grad_clip_value and step (optimizer_step)
                logs.append(log | context-scalars)
        return self._end_update(logs)                    # one log dict per gradient step

    A batch may keep a rollout's (T*N) layout for ``_epoch_data`` (PPO's ``recompute_adv``): then its ``valid``
    column marks the rows that are transitions, and only those reach the minibatches. ``_optimizer`` is the one
    optimiser, set by the subclass's ``_init_learn``.
    """

    config: dict[str, Any] = dict(
        on_policy=True,
        learn=dict(
            epoch_per_collect=10,  # passes over each collect
            batch_size=64,  # minibatch size
            grad_clip_value=0.5,  # global gradient-norm clip (None: off)
        ),
    )

    _optimizer: torch.optim.Optimizer
    _params: list[torch.Tensor]  # the optimiser's parameters, listed at the start of each learn call

    def _forward_learn(self, batch: dict) -> list[Log]:
        learn = self.cfg["learn"]
        data = self.batch_tensors(batch)
        if OBS in data:
            data[OBS] = conv_layout(self._model, data[OBS])  # frames reordered once, not per minibatch
        data = self._prepare(data)
        # the optimiser's parameters, listed once per collect, not per gradient step
        self._params = [p for group in self._optimizer.param_groups for p in group["params"]]
        batch_size = int(learn["batch_size"])
        logs: list[Log] = []
        for _ in range(int(learn["epoch_per_collect"])):
            data = self._epoch_data(data)
            view = _valid_rows(data)
            context = self._epoch_context(view)
            n_rows = len(next(iter(view.values())))
            order = torch.randperm(n_rows, device=self.device)
            # shuffled once per epoch; the minibatches are slices (views) of it, not gathers each
            shuffled = self._epoch_minibatches({k: gather_rows(v, order) for k, v in view.items()}, batch_size)
            for start in range(0, n_rows, batch_size):
                log = self._gradient_step({k: v[start:start + batch_size] for k, v in shuffled.items()}, context)
                logs.append({**context, **log})
        return self._end_update(logs)

    def _gradient_step(self, mb: dict[str, torch.Tensor], context: Log) -> Log:
        """One gradient step on one minibatch, returning its log: :meth:`_compute_loss`, its gradients by autograd,
        the clip to ``learn.grad_clip_value`` and the optimiser's step. A policy with a faster way to the same
        gradients overrides it (PPO's written-out backward)."""
        loss, log = self._compute_loss(mb, context)
        for p in self._params:  # zero_grad(set_to_none=True), without its per-call profiler scope (~20 µs)
            p.grad = None
        loss.backward()
        optimizer_step(self._optimizer, self.cfg["learn"]["grad_clip_value"])
        return log

    # ---- hooks -------------------------------------------------------------------------------------------------
    def _prepare(self, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Once per collect, before the first epoch: the data to train on (e.g. with extra columns)."""
        return data

    def _epoch_data(self, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Before each epoch, on the whole batch (its layout kept): the data of this epoch."""
        return data

    def _epoch_minibatches(self, shuffled: dict[str, torch.Tensor], batch_size: int) -> dict[str, torch.Tensor]:
        """The epoch's shuffled rows, whose consecutive slices of ``batch_size`` are its minibatches: per-minibatch
        columns computed here for all minibatches at once cost one op where a per-step computation costs one per
        minibatch (PPO's advantage normalisation)."""
        return shuffled

    def _epoch_context(self, data: dict[str, torch.Tensor]) -> Log:
        """Per-epoch constants from the epoch's valid rows, passed to every ``_compute_loss`` of the epoch and logged
        with each of its steps (detached scalars)."""
        return {}

    def _compute_loss(self, mb: dict[str, torch.Tensor], context: Log) -> tuple[torch.Tensor, Log]:
        """The loss of one minibatch (carries the gradient) and its detached scalars."""
        raise NotImplementedError(f"{type(self).__name__} must implement _compute_loss")

    def _end_update(self, logs: list[Log]) -> list[Log]:
        """After the last step of a collect: the per-step logs to return."""
        return logs


def _valid_rows(data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The rows of ``data`` that are transitions (all of them when it has no ``valid`` column)."""
    valid = data.get(VALID)
    if valid is None or bool(valid.all()):
        return data
    return {k: v[valid] for k, v in data.items()}


def gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[index]`` for a 1-D integer ``index``. Where each row of ``x`` is one dense block of memory (frames in NCHW or
    NHWC memory, vectors), the rows are copied as 8-, 4- or 2-byte words, not element by element: torch gathers
    uint8 frames a byte at a time (Pong PPO, 1,024 frames of 4x84x84: 20 ms per epoch that way, 3.7 ms as int64
    words). The result has ``x``'s memory layout."""
    if x.dim() < 2 or x.shape[0] == 0:
        return x[index]
    # the row's dims from outermost to innermost in memory; dense rows are contiguous after this permutation
    strides = x.stride()
    inner = sorted(range(1, x.dim()), key=lambda d: -strides[d])
    rows = x.permute(0, *inner)
    row_bytes = rows[0].numel() * x.element_size()
    word = next((w for w in (torch.int64, torch.int32, torch.int16) if row_bytes % w.itemsize == 0), None)
    if word is None or word.itemsize <= x.element_size() or not rows.is_contiguous() or \
            (x.storage_offset() * x.element_size()) % word.itemsize:
        return x[index]
    flat = rows.reshape(x.shape[0], -1).view(torch.uint8).view(word)
    picked = flat[index].view(torch.uint8).view(x.dtype).view((len(index),) + rows.shape[1:])
    return picked.permute(0, *[1 + inner.index(d) for d in range(1, x.dim())])  # back to x's dim order
