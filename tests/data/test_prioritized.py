"""Prioritized replay: the sum-tree (hand cases and brute force), sampling frequencies, IS weights by hand, β
annealing, FIFO eviction keeping the tree consistent, max_use, stale ids."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.keys import INDEX, PRIORITY, WEIGHT
from ding_lite.data.prioritized import PrioritizedBuffer, SumTree
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest


def assert_tree_consistent(tree: SumTree) -> None:
    """Every inner node is exactly the sum of its children (padding stays 0), so the top sums all leaves."""
    k = tree.fanout
    for child, parent in zip(tree.levels[:-1], tree.levels[1:], strict=True):
        groups = len(child) // k
        np.testing.assert_array_equal(parent[:groups], child.reshape(-1, k).sum(axis=1))
        assert not parent[groups:].any()
    assert not tree.levels[0][tree.n:].any()
    np.testing.assert_allclose(tree.total, tree.leaves.astype(np.float64).sum(), rtol=1e-6)


def buffer(capacity: int = 100, **cfg) -> PrioritizedBuffer:
    return PrioritizedBuffer(dict(replay_buffer_size=capacity, **cfg), seed=0)


def push(buf: PrioritizedBuffer, values, priority=None) -> np.ndarray:
    samples = {"x": np.asarray(values, dtype=np.float32)}
    if priority is not None:
        samples[PRIORITY] = np.asarray(priority, dtype=np.float64)
    return buf.push(samples)


# ---- sum-tree ----------------------------------------------------------------------------------------------------
def test_sum_tree_binary_hand_case() -> None:
    tree = SumTree(4, fanout=2)
    tree.set(np.array([0, 1, 2, 3]), np.array([1.0, 2.0, 3.0, 4.0]))
    assert tree.total == 10.0
    np.testing.assert_array_equal(tree.levels[1], [3.0, 7.0])  # (0 + 1), (2 + 3)
    # cumulative bounds: [0, 1) -> 0, [1, 3) -> 1, [3, 6) -> 2, [6, 10) -> 3
    np.testing.assert_array_equal(tree.find(np.array([0.0, 0.99, 1.0, 2.99, 3.0, 5.99, 6.0, 9.99])),
                                  [0, 0, 1, 1, 2, 2, 3, 3])


def test_sum_tree_padded_hand_case() -> None:
    # 5 leaves, fanout 2: leaves padded to 6, level 1 = 3 pair sums padded to 4, top = 2 sums
    tree = SumTree(5, fanout=2)
    tree.set(np.array([4, 0, 2]), np.array([5.0, 1.0, 3.0]))
    tree.set(np.array([1, 3]), np.array([2.0, 4.0]))
    np.testing.assert_array_equal(tree.levels[0], [1.0, 2.0, 3.0, 4.0, 5.0, 0.0])
    np.testing.assert_array_equal(tree.levels[1], [3.0, 7.0, 5.0, 0.0])
    np.testing.assert_array_equal(tree.levels[2], [10.0, 5.0])
    # [0, 1) -> 0, [1, 3) -> 1, [3, 6) -> 2, [6, 10) -> 3, [10, 15) -> 4
    np.testing.assert_array_equal(tree.find(np.array([0.5, 1.0, 5.99, 6.0, 9.99, 10.0, 14.99])),
                                  [0, 1, 2, 3, 3, 4, 4])


def test_sum_tree_one_leaf() -> None:
    tree = SumTree(1)
    tree.set(np.array([0]), np.array([2.5]))
    assert tree.total == 2.5
    np.testing.assert_array_equal(tree.find(np.array([0.0, 2.4])), [0, 0])


@pytest.mark.parametrize("n,fanout", [(2, 2), (3, 2), (7, 2), (8, 2), (100, 3), (1000, 32), (40000, 32)])
def test_sum_tree_random_updates_match_brute_force(n: int, fanout: int) -> None:
    rng = np.random.default_rng(n)
    tree = SumTree(n, fanout)
    expected = np.zeros(n, dtype=np.float32)
    for _ in range(30):
        leaves = rng.integers(0, n, size=rng.integers(1, min(2 * n, 500) + 1))  # with repeats: last write wins
        values = (rng.random(len(leaves)) * 10).astype(np.float32)
        values[rng.random(len(values)) < 0.2] = 0.0
        tree.set(leaves, values)
        for leaf, value in zip(leaves, values, strict=True):
            expected[leaf] = value
        np.testing.assert_array_equal(tree.leaves, expected)
        assert_tree_consistent(tree)
    # find() agrees with a search of the leaves' cumulative sums (away from the interval edges)
    bounds = np.cumsum(expected.astype(np.float64))
    mass = rng.random(5000) * tree.total
    leaf = np.searchsorted(bounds, mass, side="right")
    lower = np.where(leaf > 0, bounds[np.maximum(leaf - 1, 0)], 0.0)
    away = np.minimum(mass - lower, bounds[np.minimum(leaf, n - 1)] - mass) > 1e-3 * tree.total / n
    found = tree.find(mass)
    np.testing.assert_array_equal(found[away], leaf[away])
    assert away.mean() > 0.9
    assert (expected[found] > 0).all()


# ---- sampling ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.0])
def test_sampling_frequencies_match_priorities(alpha: float) -> None:
    buf = buffer(alpha=alpha)
    ids = push(buf, [0, 1, 2, 3], priority=[1.0, 2.0, 3.0, 4.0])
    counts = np.zeros(4)
    for _ in range(200):
        batch = buf.sample(256)
        counts += np.bincount(batch[INDEX] - ids[0], minlength=4)
        np.testing.assert_array_equal(batch["x"], batch[INDEX] - ids[0])  # data and ids stay paired
    p = np.array([1.0, 2.0, 3.0, 4.0]) ** alpha
    # 51,200 draws: a proportion's standard error is below 0.0022, stratified sampling only lowers it
    np.testing.assert_allclose(counts / counts.sum(), p / p.sum(), atol=0.01)


def test_importance_weights_hand_checked() -> None:
    # α = 1, β = 0.5, priorities 1..4: P = p / 10, N = 4, w_i = (N P_i)^-β / max_k w_k = (p_i / p_min)^-β
    # -> 1^-0.5 = 1, 2^-0.5 = 0.70710678, 3^-0.5 = 0.57735027, 4^-0.5 = 0.5
    buf = buffer(alpha=1.0, beta=0.5, anneal_step=0)
    ids = push(buf, [0, 1, 2, 3], priority=[1.0, 2.0, 3.0, 4.0])
    batch = buf.sample(512)
    expected = np.array([1.0, 0.70710678, 0.57735027, 0.5], dtype=np.float32)
    np.testing.assert_allclose(batch[WEIGHT], expected[batch[INDEX] - ids[0]], rtol=1e-6)
    assert batch[WEIGHT].dtype == np.float32
    # α = 0.5, β = 1: leaves are sqrt(p): w = sqrt(p_min / p) -> the same numbers
    buf = buffer(alpha=0.5, beta=1.0, anneal_step=0)
    ids = push(buf, [0, 1, 2, 3], priority=[1.0, 2.0, 3.0, 4.0])
    batch = buf.sample(512)
    np.testing.assert_allclose(batch[WEIGHT], expected[batch[INDEX] - ids[0]], rtol=1e-6)
    # α = 1, β = 1, priorities 2 and 8: w = (2 / 8)^1 = 0.25 for the second
    buf = buffer(alpha=1.0, beta=1.0, anneal_step=0)
    ids = push(buf, [0, 1], priority=[2.0, 8.0])
    batch = buf.sample(64)
    np.testing.assert_allclose(batch[WEIGHT], np.where(batch[INDEX] == ids[1], 0.25, 1.0))


def test_beta_anneals_linearly_to_one() -> None:
    buf = buffer(beta=0.4, anneal_step=10)
    push(buf, [0, 1], priority=[1.0, 4.0])
    betas = []
    for _ in range(12):
        betas.append(buf.beta)
        buf.sample(2)
    np.testing.assert_allclose(betas, [0.4, 0.46, 0.52, 0.58, 0.64, 0.7, 0.76, 0.82, 0.88, 0.94, 1.0, 1.0])


def test_weights_use_the_beta_of_their_sample_call() -> None:
    # α = 1, β0 = 0.5, anneal_step = 2: β = 0.5, 0.75, 1 at the 1st, 2nd and 3rd sample call (then 1).
    # priorities 1 and 4: w = (p / p_min)^-β = 1 for the first; for the second 4^-0.5 = 0.5, 4^-0.75 = 0.35355339,
    # 4^-1 = 0.25
    buf = buffer(alpha=1.0, beta=0.5, anneal_step=2)
    ids = push(buf, [0, 1], priority=[1.0, 4.0])
    for expected in (0.5, 0.35355339, 0.25, 0.25):
        batch = buf.sample(64)
        np.testing.assert_allclose(batch[WEIGHT], np.where(batch[INDEX] == ids[1], expected, 1.0), rtol=1e-6)


def test_new_samples_get_the_highest_priority_so_far() -> None:
    buf = buffer(alpha=1.0)
    ids = push(buf, [0, 1])
    np.testing.assert_array_equal(buf._tree.leaves[:2], [1.0, 1.0])  # the initial max priority
    buf.update_priority(ids, np.array([5.0, 0.5]))
    push(buf, [2])
    np.testing.assert_array_equal(buf._tree.leaves[:3], [5.0, 0.5, 5.0])


def test_a_pushed_priority_column_raises_the_highest_priority_so_far() -> None:
    buf = buffer(alpha=1.0)
    push(buf, [0, 1], priority=[3.0, 8.0])  # above the initial max of 1
    push(buf, [2])
    np.testing.assert_array_equal(buf._tree.leaves[:3], [3.0, 8.0, 8.0])


# ---- FIFO eviction, stale ids, max_use ---------------------------------------------------------------------------
def test_fifo_eviction_keeps_the_tree_consistent() -> None:
    buf = buffer(capacity=5, alpha=1.0)
    first = push(buf, [0, 1, 2], priority=[1.0, 2.0, 3.0])
    second = push(buf, [3, 4, 5, 6], priority=[4.0, 5.0, 6.0, 7.0])  # overwrites the two oldest
    assert len(buf) == 5
    # slots 0, 1 hold samples 5, 6 now; 2, 3, 4 hold 2, 3, 4
    np.testing.assert_array_equal(buf._tree.leaves, [6.0, 7.0, 3.0, 4.0, 5.0])
    assert_tree_consistent(buf._tree)
    buf.update_priority(first[:2], np.array([100.0, 100.0]))  # stale ids: their samples are gone, nothing changes
    np.testing.assert_array_equal(buf._tree.leaves, [6.0, 7.0, 3.0, 4.0, 5.0])
    buf.update_priority(np.concatenate([first[2:], second]), np.array([1.0, 1.0, 1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(buf._tree.leaves, [1.0, 2.0, 1.0, 1.0, 1.0])
    assert_tree_consistent(buf._tree)
    drawn = buf.sample(1000)
    assert set(drawn["x"].astype(int)) == {2, 3, 4, 5, 6}
    # first draw: β = 0.4; sample 6 has p = 2, the smallest p is 1: w = 2^-0.4 = 0.75785828, the others 1
    np.testing.assert_allclose(drawn[WEIGHT], np.where(drawn["x"] == 6, 0.75785828, 1.0), rtol=1e-6)


def test_push_larger_than_capacity_keeps_the_newest() -> None:
    buf = buffer(capacity=3, alpha=1.0)
    ids = push(buf, [0, 1, 2, 3, 4], priority=[1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(ids, [2, 3, 4])
    assert len(buf) == 3 and buf._tree.total == 12.0
    drawn = buf.sample(300)  # the sample with index k sits in slot k % capacity: 3 -> 0, 4 -> 1, 2 -> 2
    np.testing.assert_array_equal(drawn["x"], drawn[INDEX])
    more = push(buf, [5, 6], priority=[6.0, 7.0])
    np.testing.assert_array_equal(more, [5, 6])
    buf.update_priority(np.array([4, 6, 3]), np.array([1.0, 1.0, 9.0]))  # 3 was overwritten by 6: skipped
    np.testing.assert_array_equal(buf._tree.leaves, [1.0, 1.0, 6.0])


def test_max_use_evicts_samples_after_n_draws() -> None:
    buf = buffer(capacity=10, max_use=2)
    ids = push(buf, [0, 1, 2, 3])
    drawn = []
    while len(buf):
        batch = buf.sample(3)
        drawn.extend(batch[INDEX].tolist())
        buf.update_priority(batch[INDEX], np.ones(3))  # evicted ids must not come back
        assert_tree_consistent(buf._tree)
    counts = np.bincount(np.asarray(drawn) - ids[0], minlength=4)
    assert (counts >= 2).all() and (counts <= 4).all()  # evicted at the batch that reached 2 uses
    assert buf._tree.total == 0.0
    with pytest.raises(RuntimeError, match="empty replay buffer"):
        buf.sample(1)
    new = push(buf, [9])  # an evicted slot is reused
    assert len(buf) == 1 and buf.sample(2)[INDEX].tolist() == [new[0], new[0]]


def test_smallest_leaf_cache_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    buf = buffer(capacity=50, alpha=0.7, max_use=5)
    for _ in range(300):
        op = rng.integers(3)
        if op == 0:
            k = int(rng.integers(1, 8))
            push(buf, rng.random(k), priority=rng.random(k) * 3 + 0.01)
        elif len(buf):
            batch = buf.sample(8)
            if op == 2:
                buf.update_priority(batch[INDEX], rng.random(8) * 3)
        leaves = buf._tree.leaves
        if len(buf) and (leaves > 0).any():
            assert buf._smallest_leaf() == leaves[leaves > 0].min()


def test_bad_settings_and_priorities() -> None:
    with pytest.raises(ConfigError, match=r"replay_buffer.alpha must be >= 0, got -1"):
        buffer(alpha=-1)
    with pytest.raises(ConfigError, match=r"replay_buffer.beta must be in \[0, 1\], got 1.5"):
        buffer(beta=1.5)
    with pytest.raises(ConfigError, match=r"replay_buffer.max_use must be >= 1, got 0"):
        buffer(max_use=0)
    buf = buffer()
    ids = push(buf, [0, 1])
    with pytest.raises(ValueError, match="priorities must be finite and >= 0"):
        buf.update_priority(ids, np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="got 1 priorities for 2 samples"):
        buf.update_priority(ids, np.array([1.0]))


def test_after_wrap_around_frequencies_and_buffer_wide_weights_follow_schaul() -> None:
    # capacity 5, 7 pushed: ids 2..6 stored. An update of the overwritten ids 0, 1 is skipped (and does not raise the
    # max); id 7 then overwrites id 2 (priority 0.5, gone) at the max so far, 4. α = 0.6, β 0.4 -> 1 over 4 calls.
    buf = buffer(5, alpha=0.6, beta=0.4, anneal_step=4)
    push(buf, np.arange(7))
    buf.update_priority(np.array([0, 1]), np.array([100.0, 100.0]))
    buf.update_priority(np.array([2, 3, 4, 5, 6]), np.array([0.5, 1.0, 2.0, 4.0, 0.1]))
    push(buf, [7])
    ids, p = np.array([3, 4, 5, 6, 7]), np.array([1.0, 2.0, 4.0, 0.1, 4.0])
    prob = p**0.6 / (p**0.6).sum()
    counts = np.zeros(5)
    for call in range(400):
        beta = min(1.0, 0.4 + 0.6 * call / 4)
        batch = buf.sample(50)
        k = np.searchsorted(ids, batch[INDEX])
        assert (ids[k] == batch[INDEX]).all() and (batch["x"] == batch[INDEX]).all()
        # w = (N P(i))^-β / max over the stored samples (the smallest P: id 6, whether drawn or not)
        np.testing.assert_allclose(batch[WEIGHT], (prob[k] / prob.min()) ** -beta, rtol=1e-5)
        counts += np.bincount(k, minlength=5)
    # 20,000 draws: chi-square with 4 degrees of freedom, 18.5 is its 0.999 quantile
    expected = prob * counts.sum()
    assert ((counts - expected) ** 2 / expected).sum() < 18.5


def test_ids_from_before_a_clear_are_stale() -> None:
    # mutation audit: after clear() and one push, an update of ids drawn before the clear is skipped: their slots
    # hold no sample, so a priority there would let sampling draw unfilled rows
    buf = buffer(4)
    old = push(buf, [1.0, 2.0, 3.0])
    buf.clear()
    new = push(buf, [9.0])
    buf.update_priority(old, np.full(len(old), 100.0))
    assert set(buf.sample(32)[INDEX].tolist()) == set(new.tolist())
    assert_tree_consistent(buf._tree)
    np.testing.assert_allclose(buf._tree.total, buf._tree.leaves[new[0] % 4])
