"""Prioritized experience replay (Schaul et al. 2016, proportional variant) on a vectorised numpy sum-tree."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_lite.data.batch import Batch, batch_len
from ding_lite.data.buffer import CKPT_MAX_MB, UniformBuffer, preallocated
from ding_lite.data.keys import INDEX, PRIORITY, WEIGHT
from ding_lite.errors import ConfigError
from ding_lite.registry import BUFFER_REGISTRY


class SumTree:
    """Sums of ``n`` non-negative leaves in a ``fanout``-ary tree, updated and searched for whole batches at once.

    Level 0 holds the leaves, level ``j + 1`` the sums of consecutive groups of ``fanout`` entries of level ``j``
    (each level padded with zeros to a multiple of ``fanout``), up to a top level of at most ``fanout`` entries. A
    wide node (32 children by default) keeps the tree shallow, 4 levels for 10⁶ leaves, so a batch costs a few
    numpy calls per level rather than one Python round per binary level, and the inner levels add only ~1/31 to the
    leaves' memory.

    Nodes are float32 (about 4 bytes per leaf in all, next to ~48 bytes of a CartPole transition): every node is
    recomputed from its children, never updated by differences, so rounding does not accumulate; it can move about
    depth·2⁻²⁴ ≈ 1e-7 of the probability mass between neighbouring leaves, far below sampling noise. The searches
    add up in float64.

    Example::

        tree = SumTree(4)
        tree.set(np.array([0, 1, 2, 3]), np.array([1.0, 2.0, 3.0, 4.0]))
        tree.total                                # 10.0
        tree.find(np.array([0.5, 2.5, 9.9]))      # leaves [0, 1, 3]
    """

    def __init__(self, n: int, fanout: int = 32, dtype: Any = np.float32) -> None:
        if n < 1 or fanout < 2:
            raise ValueError(f"a sum tree needs n >= 1 leaves and fanout >= 2, got {n=}, {fanout=}")
        self.n, self.fanout = n, fanout
        self.levels = [np.zeros(-(-n // fanout) * fanout, dtype=dtype)]  # leaves first, padded
        while len(self.levels[-1]) > fanout:
            size = len(self.levels[-1]) // fanout
            self.levels.append(np.zeros(-(-size // fanout) * fanout if size > fanout else size, dtype=dtype))
        self._upper = np.triu(np.ones((fanout, fanout)))  # x @ upper = cumulative sums of x's rows

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return float(self.levels[-1].sum(dtype=np.float64))

    @property
    def leaves(self) -> np.ndarray:
        """The ``n`` leaf values (a view)."""
        return self.levels[0][: self.n]

    @property
    def nbytes(self) -> int:
        return sum(level.nbytes for level in self.levels)

    def set(self, leaves: np.ndarray, values: np.ndarray) -> None:
        """Set ``leaves`` to ``values`` (the last write wins for a repeated leaf) and recompute their ancestors."""
        index = np.asarray(leaves, dtype=np.int64)
        self.levels[0][index] = values
        k = self.fanout
        for child, parent in zip(self.levels[:-1], self.levels[1:], strict=True):
            index = index // k  # repeated parents are recomputed alike from the same children
            parent[index] = child.reshape(-1, k)[index].sum(axis=1)

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each ``mass`` in [0, total): the leaf ``i`` with ``sum(leaves[:i]) <= mass < sum(leaves[:i + 1])``,
        so leaves are drawn with probability proportional to their value when ``mass`` is uniform on [0, total)."""
        mass = np.asarray(mass, dtype=np.float64)
        top = self.levels[-1].astype(np.float64)
        index, mass = self._descend(np.broadcast_to(top, (len(mass), len(top))), mass)
        for level in reversed(self.levels[:-1]):
            group = level.reshape(-1, self.fanout)[index].astype(np.float64)  # (B, fanout) children of each node
            child, mass = self._descend(group, mass)
            index = index * self.fanout + child
        return index

    def _descend(self, group: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row-wise: the child of ``group`` (B, width) whose cumulative interval holds ``mass``, and the mass left
        within that child."""
        width = group.shape[1]
        cumulative = group @ self._upper[:width, :width]  # row-wise cumsum; one BLAS call beats np.cumsum(axis=1)
        child = np.minimum(np.count_nonzero(cumulative <= mass[:, None], axis=1), width - 1)  # rounding at the end
        rows = np.arange(len(mass))
        return child, mass - (cumulative[rows, child] - group[rows, child])


@BUFFER_REGISTRY.register("prioritized")
class PrioritizedBuffer(UniformBuffer):
    """Replay with P(i) = p_i^α / Σ_k p_k^α and importance-sampling weights w_i = (N·P(i))^−β / max_k w_k
    (Schaul et al. 2016, Alg. 1), β annealed linearly to 1 over ``anneal_step`` sample calls.

    Storage and FIFO eviction are :class:`UniformBuffer`'s; the tree holds p^α per slot and follows every overwrite.
    New samples get the largest priority seen so far, pushed or updated (so each is drawn at least about once), or
    the ``priority`` column of the pushed batch when it has one. ``sample`` returns the batch with ``index`` and
    ``weight`` (the IS weights). An index is the sample's number (the k-th sample ever pushed has index k, and sits
    in slot k % capacity), so :meth:`update_priority` skips samples overwritten since they were drawn without any
    per-slot bookkeeping. With ``max_use``, a sample is evicted (priority 0, skipped by updates) once it has been
    drawn that many times.

    Example::

        buf = PrioritizedBuffer(dict(replay_buffer_size=1000, alpha=0.6, beta=0.4))
        buf.push({'obs': np.zeros((8, 4), np.float32)})
        batch = buf.sample(4)       # {'obs', 'index', 'weight'}
        buf.update_priority(batch['index'], np.abs(td_error) + 1e-6)
    """

    config = dict(
        type="prioritized",
        replay_buffer_size=10000,  # capacity in samples
        alpha=0.6,  # priority exponent α (0: uniform sampling)
        beta=0.4,  # initial importance-sampling exponent β
        anneal_step=100000,  # sample() calls over which β rises linearly to 1 (0: β stays fixed)
        max_use=None,  # evict a sample once it was drawn this many times (None: never)
        ckpt_max_mb=CKPT_MAX_MB,  # samples saved with resume checkpoints (for --resume) up to this many MB (0: never)
    )

    def __init__(self, cfg: Mapping[str, Any], seed: int | None = None) -> None:
        super().__init__(cfg, seed)
        settings = {**self.config, **cfg}
        self.alpha = _number(settings, "alpha", low=0.0)
        self.beta0 = _number(settings, "beta", low=0.0, high=1.0)
        self.anneal_step = int(_number(settings, "anneal_step", low=0.0))
        self.max_use = None if settings.get("max_use") is None else int(_number(settings, "max_use", low=1.0))
        self._tree = preallocated(self.capacity, lambda: SumTree(self.capacity))
        self._uses = preallocated(self.capacity, lambda: np.zeros(self.capacity, dtype=np.int32)) \
            if self.max_use is not None else None
        self._pushed = 0  # samples pushed so far (the next sample's index)
        self._evicted = 0  # stored samples evicted by max_use (not yet overwritten)
        self._max_priority = 1.0
        self._min_leaf: float | None = None  # smallest positive leaf (None: recompute at the next sample)
        self._sample_calls = 0

    def __len__(self) -> int:
        """Samples that can be drawn: stored, and not evicted by ``max_use``."""
        return self._size - self._evicted

    @property
    def beta(self) -> float:
        """β of the next :meth:`sample` call."""
        if self.anneal_step == 0:
            return self.beta0
        return min(1.0, self.beta0 + (1.0 - self.beta0) * self._sample_calls / self.anneal_step)

    def push(self, samples: Mapping[str, Any]) -> np.ndarray:
        """Store a batch of samples at the highest priority so far (or their ``priority`` column); returns their
        ids."""
        priority = samples.get(PRIORITY)
        data = {k: v for k, v in samples.items() if k != PRIORITY}
        n = batch_len(data)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        old_size = self._size
        slots = super().push(data)  # FIFO: only the newest `capacity` survive when n > capacity
        ids = self._pushed + np.arange(n - len(slots), n, dtype=np.int64)  # index % capacity == slot
        self._pushed += n
        p = np.full(len(slots), self._max_priority) if priority is None else \
            _check_priorities(np.asarray(priority, dtype=np.float64)[n - len(slots):], len(slots))
        if priority is not None and len(p):  # the max is over every priority so far, given ones too (Schaul et al.)
            self._max_priority = max(self._max_priority, float(p.max()))
        if self._uses is not None:
            overwritten = slots[slots < old_size]  # the ring fills slots 0, 1, ... first
            self._evicted -= int(np.count_nonzero(self._uses[overwritten] >= self.max_use))
            self._uses[slots] = 0
        self._set(slots, p)
        return ids

    def sample(self, batch_size: int) -> Batch:
        """Draw ``batch_size`` samples with probability ∝ p^α (stratified over ``batch_size`` equal segments of the
        total, with replacement); the batch carries ``index`` (ids) and ``weight`` (float32 IS weights)."""
        if len(self) == 0:
            raise RuntimeError("cannot sample from an empty replay buffer: push samples first")
        total = self._tree.total
        if total <= 0:
            raise RuntimeError("every priority in the replay buffer is 0: update_priority needs positive values")
        mass = (np.arange(batch_size) + self.rng.random(batch_size)) * (total / batch_size)
        slots = self._tree.find(np.minimum(mass, np.nextafter(total, 0)))
        empty = self._tree.leaves[slots] <= 0
        while empty.any():  # rounding put a draw on an empty leaf (vanishingly rare): draw it again
            slots[empty] = self._tree.find(self.rng.random(int(empty.sum())) * total)
            empty = self._tree.leaves[slots] <= 0
        leaf = self._tree.leaves[slots]
        # w_i / max_k w_k = (P(i) / P_min)^−β: N and the total cancel out
        weight = (leaf / self._smallest_leaf()) ** (-self.beta)
        batch = self._gather(slots)
        batch[INDEX] = slots + (self._pushed - 1 - slots) // self.capacity * self.capacity  # the newest in each
        batch[WEIGHT] = weight.astype(np.float32)
        self._sample_calls += 1
        if self._uses is not None:
            self._count_uses(slots)
        return batch

    def update_priority(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set the priorities (e.g. |TD error| + ε) of the samples with ids ``indices`` (from :meth:`sample`);
        samples overwritten or evicted since they were drawn are skipped."""
        ids = np.asarray(indices, dtype=np.int64).reshape(-1)
        p = _check_priorities(np.asarray(priorities, dtype=np.float64).reshape(-1), len(ids))
        slots = ids % self.capacity
        current = (ids >= self._pushed - self._size) & (ids < self._pushed)  # FIFO: the newest `size` are stored
        if self._uses is not None and self.max_use is not None:
            current &= self._uses[slots] < self.max_use
        if not current.all():
            slots, p = slots[current], p[current]
        if len(p):
            self._max_priority = max(self._max_priority, float(p.max()))
            self._set(slots, p)

    def clear(self) -> None:
        """Drop every sample (the arrays stay allocated)."""
        super().clear()
        for level in self._tree.levels:
            level[:] = 0.0
        self._pushed = -(-self._pushed // self.capacity) * self.capacity  # next index lands in slot 0 again
        self._evicted = 0
        self._min_leaf = None

    def state_dict(self) -> dict[str, Any]:
        """Counters for inspection, like the uniform buffer's, plus the annealing state."""
        return {**super().state_dict(), "sample_calls": self._sample_calls, "max_priority": self._max_priority,
                "pushed": self._pushed}

    @property
    def nbytes(self) -> int:
        return super().nbytes + self._size * self._tree.levels[0].itemsize

    def samples_state(self) -> dict[str, Any]:
        """The uniform buffer's, plus the priorities (p^α per slot), the sample ids, β's annealing and the use
        counts."""
        import torch

        return {**super().samples_state(), "leaves": torch.from_numpy(self._tree.leaves[:self._size]),
                "alpha": self.alpha, "pushed": self._pushed, "evicted": self._evicted,
                "max_priority": self._max_priority, "sample_calls": self._sample_calls,
                "uses": None if self._uses is None else torch.from_numpy(self._uses[:self._size])}

    def load_samples_state(self, state: Mapping[str, Any]) -> None:
        super().load_samples_state(state)
        size = int(state["size"])
        self._pushed, self._evicted = int(state["pushed"]), int(state["evicted"])
        self._max_priority, self._sample_calls = float(state["max_priority"]), int(state["sample_calls"])
        for level in self._tree.levels:
            level[:] = 0.0
        if size:
            self._tree.set(np.arange(size), self._leaves_for_alpha(state["leaves"].numpy(), state.get("alpha")))
        if self._uses is not None:
            self._uses[:] = 0
            if state.get("uses") is not None:
                self._uses[:size] = state["uses"].numpy()
        self._min_leaf = None

    # ---- internals ---------------------------------------------------------------------------------------------
    def _leaves_for_alpha(self, leaves: np.ndarray, saved_alpha: float | None) -> np.ndarray:
        """Saved leaves ``p^α'`` as ``p^α`` of this buffer's α (a resume may change ``alpha``): ``(p^α')^(α/α')``;
        where α' was 0 the priorities are lost, and every stored sample gets the largest priority so far, as a new
        sample does. A 0 leaf (never draw) stays 0. A state without its α (an older file) is taken as of this α."""
        if saved_alpha is None or float(saved_alpha) == self.alpha:
            return leaves
        if float(saved_alpha) > 0:
            new = np.power(leaves.astype(np.float64), self.alpha / float(saved_alpha))
        else:
            new = np.full(len(leaves), self._max_priority ** self.alpha)
        return np.where(leaves > 0, new, 0.0)

    def _set(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Write p^α into the tree (0 for p = 0: never drawn, even with α = 0) and keep the cached smallest positive
        leaf right (or mark it stale)."""
        values = np.where(priorities > 0, priorities ** self.alpha, 0.0)
        old = self._tree.leaves[slots]
        self._tree.set(slots, values)
        if self._min_leaf is None:
            return
        if np.any(old == self._min_leaf):  # the minimum may be gone: recompute lazily, at the next sample
            self._min_leaf = None
            return
        new = self._tree.leaves[slots]  # as written (a repeated slot keeps its last value)
        if np.any(new > 0):
            self._min_leaf = min(self._min_leaf, float(new[new > 0].min()))

    def _smallest_leaf(self) -> float:
        if self._min_leaf is None:
            leaves = self._tree.leaves
            self._min_leaf = float(leaves[leaves > 0].min())
        return self._min_leaf

    def _count_uses(self, slots: np.ndarray) -> None:
        """``max_use``: evict samples drawn that many times (their leaf becomes 0)."""
        assert self._uses is not None and self.max_use is not None
        before = self._uses[slots] < self.max_use
        np.add.at(self._uses, slots, 1)
        spent = np.unique(slots[before & (self._uses[slots] >= self.max_use)])
        if len(spent):
            self._set(spent, np.zeros(len(spent)))
            self._evicted += len(spent)


def _number(settings: Mapping[str, Any], key: str, low: float, high: float | None = None) -> float:
    value = settings.get(key)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"replay_buffer.{key} must be a number, got {value!r}") from None
    if number < low or (high is not None and number > high):
        bounds = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise ConfigError(f"replay_buffer.{key} must be {bounds}, got {value!r}")
    return number


def _check_priorities(p: np.ndarray, n: int) -> np.ndarray:
    if len(p) != n:
        raise ValueError(f"got {len(p)} priorities for {n} samples: one priority per sample is needed")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"priorities must be finite and >= 0, got {p[~(np.isfinite(p) & (p >= 0))][:3]!r}...")
    return p

