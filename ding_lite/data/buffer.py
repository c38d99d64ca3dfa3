"""Replay buffers: columnar, preallocated on the first push, FIFO eviction."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from ding_lite.data.batch import Batch, batch_len, map_batch
from ding_lite.data.keys import INDEX
from ding_lite.errors import ConfigError, first_line
from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils.memory import check_fits

CKPT_MAX_MB = 1024.0  # default bound (MB) on the samples saved for --resume (ding_lite/runtime/replay_ckpt.py)


T = TypeVar("T")


def preallocated(capacity: int, allocate: Callable[[], T]) -> T:
    """``allocate()``, the arrays of a buffer of ``capacity`` samples; a capacity that does not fit in memory is a
    :class:`ConfigError` naming ``replay_buffer_size`` (numpy's message says how much it asked for)."""
    try:
        return allocate()
    except MemoryError as exc:
        raise ConfigError(f"policy.other.replay_buffer.replay_buffer_size={capacity} does not fit in memory "
                          f"({first_line(exc)}): lower it") from exc


def check_capacity_fits(capacity: int, columns: Mapping[str, Any]) -> None:
    """Refuse (or warn of) a buffer whose ``capacity`` rows of ``columns`` (arrays or tensors shaped like the pushed
    samples) would not fit in memory once full. numpy's arrays are allocated lazily: an oversized buffer allocates
    fine and is killed by the OOM killer only once it has filled up, maybe hours in; so the full size is checked
    against the machine's memory here, when the first push shows the samples' real sizes."""
    row = 0

    def add(a: Any) -> None:
        nonlocal row
        itemsize = a.element_size() if hasattr(a, "element_size") else np.asarray(a).itemsize  # a tensor's, an array's
        row += int(np.prod(np.shape(a)[1:], dtype=np.int64)) * itemsize

    map_batch(add, columns)
    if row == 0:
        return
    check_fits(capacity * row, f"policy.other.replay_buffer.replay_buffer_size={capacity} (samples of {row:,} "
                               f"bytes, full)",
               lambda room: f"lower replay_buffer_size to at most {room // row:,}")


@BUFFER_REGISTRY.register("uniform")
class UniformBuffer:
    """Fixed-size ring of columnar samples; uniform sampling with replacement.

    Every key of the first pushed batch gets one preallocated array of shape ``(replay_buffer_size, ...)``; later
    pushes must carry the same keys. The oldest samples are overwritten first (FIFO).

    Example::

        buf = UniformBuffer(EasyDict(replay_buffer_size=1000))
        buf.push({'obs': np.zeros((8, 4), np.float32), 'reward': np.ones(8, np.float32)})
        batch = buf.sample(4)   # {'obs': (4, 4), 'reward': (4,), 'index': (4,)}
    """

    config = dict(
        type="uniform",
        replay_buffer_size=10000,  # capacity in samples
        max_use=None,  # DI-engine's: a sample leaves the buffer after being drawn this many times (None: never)
        ckpt_max_mb=CKPT_MAX_MB,  # samples saved with resume checkpoints (for --resume) up to this many MB (0: never)
    )

    def __init__(self, cfg: Mapping[str, Any], seed: int | None = None) -> None:
        self.capacity = int(cfg.get("replay_buffer_size", self.config["replay_buffer_size"]))
        if self.capacity <= 0:
            raise ConfigError(f"replay_buffer_size must be positive, got {self.capacity}")
        self._data: Batch | None = None
        self._next = 0  # slot the next sample goes to
        self._size = 0
        self.rng = np.random.default_rng(seed)
        self.ckpt_max_mb = float(cfg.get("ckpt_max_mb", CKPT_MAX_MB))
        draw_limit = cfg.get("max_use")
        if draw_limit is not None and (not isinstance(draw_limit, (int, float)) or isinstance(draw_limit, bool)
                                       or draw_limit < 1):
            raise ConfigError(f"replay_buffer.max_use must be >= 1, got {draw_limit!r} (None: no limit)")
        self._draw_limit = None if draw_limit is None else int(draw_limit)
        # draws per slot; a slot drawn max_use times is spent until a push overwrites it (only with max_use). Own
        # names: a subclass (the prioritized buffer) keeps its own max_use bookkeeping.
        self._draws = preallocated(self.capacity, lambda: np.zeros(self.capacity, np.int64)) \
            if self._draw_limit is not None else None

    def check_observations_fit(self, space: Any) -> None:
        """Refuse, before the run writes anything, a buffer whose observations alone (every sample holds at least
        one, of the env's ``space``) cannot fit in the machine's memory; the first push checks the samples' full size
        (:func:`check_capacity_fits`)."""
        try:
            row = _nbytes(space.sample())
        except Exception:  # a space that cannot sample (a custom one): the first push checks
            return
        if row:
            check_fits(self.capacity * row, f"policy.other.replay_buffer.replay_buffer_size={self.capacity} "
                                            f"(its observations alone, {row:,} bytes each)",
                       lambda room: f"lower replay_buffer_size to at most {room // row:,}", warn=False)

    def __len__(self) -> int:
        if self._draws is not None and self._draw_limit is not None:
            return int((self._draws[:self._size] < self._draw_limit).sum())
        return self._size

    def push(self, samples: Mapping[str, Any]) -> np.ndarray:
        """Store a batch of samples; returns the slots they went to."""
        n = batch_len(samples)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        if self._data is None:
            check_capacity_fits(self.capacity, samples)
            self._data = preallocated(self.capacity, lambda: map_batch(
                lambda a: np.empty((self.capacity,) + np.shape(a)[1:], np.asarray(a).dtype), samples))
        first = 0
        if n > self.capacity:  # only the newest capacity samples can survive
            first = n - self.capacity
            samples = map_batch(lambda a: a[first:], samples)
        # the k-th sample ever pushed goes to slot k % capacity, also when a push is larger than the buffer
        slots = (self._next + np.arange(first, n)) % self.capacity
        _write(self._data, slots, samples)
        if self._draws is not None:
            self._draws[slots] = 0
        self._next = int((self._next + n) % self.capacity)
        self._size = min(self._size + n, self.capacity)
        return slots

    def sample(self, batch_size: int) -> Batch:
        """Draw ``batch_size`` samples uniformly (with replacement); the batch carries their slots under ``index``."""
        if self._size == 0:
            raise RuntimeError("cannot sample from an empty replay buffer: push samples first")
        if self._draws is None or self._draw_limit is None:
            slots = self.rng.integers(0, self._size, size=batch_size)
        else:
            live = np.flatnonzero(self._draws[:self._size] < self._draw_limit)
            if len(live) == 0:
                raise RuntimeError("every sample in the replay buffer was drawn max_use times: push samples first")
            slots = live[self.rng.integers(0, len(live), size=batch_size)]
            np.add.at(self._draws, slots, 1)
        batch = self._gather(slots)
        batch[INDEX] = slots
        return batch

    def _gather(self, slots: np.ndarray) -> Batch:
        assert self._data is not None
        return map_batch(lambda a: a[slots], self._data)

    def update_priority(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Uniform sampling ignores priorities (kept so that policies can call it on any buffer)."""

    def clear(self) -> None:
        """Drop every sample (the arrays stay allocated)."""
        self._next = self._size = 0

    def state_dict(self) -> dict[str, Any]:
        """Counters only, for inspection (:meth:`samples_state` holds the samples too)."""
        return {"size": self._size, "next": self._next}

    @property
    def nbytes(self) -> int:
        """Bytes of the stored samples as :meth:`samples_state` gives them (the filled rows of every column)."""
        if self._data is None:
            return 0
        total = 0

        def add(a: np.ndarray) -> None:
            nonlocal total
            total += a[:self._size].nbytes

        map_batch(add, self._data)
        return total

    def samples_state(self) -> dict[str, Any]:
        """Everything a resumed run needs to sample as this buffer would: the filled rows of every column (as
        tensors sharing this buffer's memory, so that ``torch.save`` writes them without a copy), the ring's
        counters, the draw counts and the random generator's state. :meth:`load_samples_state` takes it back."""
        import torch

        data = None if self._data is None else map_batch(lambda a: torch.from_numpy(a[:self._size]), self._data)
        return {"capacity": self.capacity, "size": self._size, "next": self._next, "data": data,
                "draws": None if self._draws is None else torch.from_numpy(self._draws[:self._size]),
                "rng": self.rng.bit_generator.state}

    def load_samples_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`samples_state` gave (from a buffer of the same capacity)."""
        if int(state["capacity"]) != self.capacity:
            raise ValueError(f"the saved replay buffer holds up to {state['capacity']} samples, this one "
                             f"{self.capacity} (policy.other.replay_buffer.replay_buffer_size)")
        size = int(state["size"])
        self._data = None
        if state["data"] is not None:
            check_capacity_fits(self.capacity, state["data"])
            self._data = map_batch(lambda t: _ring_array(t.numpy(), self.capacity), state["data"])
        self._size, self._next = size, int(state["next"])
        if self._draws is not None:
            self._draws[:] = 0
            if state.get("draws") is not None:
                self._draws[:size] = state["draws"].numpy()
        self.rng.bit_generator.state = state["rng"]


def _nbytes(value: Any) -> int:
    """Bytes of an observation (an array, or a dict or tuple of them, as a gymnasium space samples it)."""
    if isinstance(value, Mapping):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return int(np.asarray(value).nbytes)


def _ring_array(filled: np.ndarray, capacity: int) -> np.ndarray:
    """A column of ``capacity`` rows whose first rows are ``filled`` (the rest allocated, as a push would)."""
    out = np.empty((capacity,) + filled.shape[1:], filled.dtype)
    out[:len(filled)] = filled
    return out


def _write(store: Batch, slots: np.ndarray, samples: Mapping[str, Any]) -> None:
    for k, v in samples.items():
        if k not in store:
            raise KeyError(f"sample key '{k}' was not in the first pushed batch (keys: {sorted(store)})")
        if isinstance(v, Mapping):
            _write(store[k], slots, v)
        else:
            store[k][slots] = v
