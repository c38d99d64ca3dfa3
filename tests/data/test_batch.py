"""Columnar batch helpers, and the cut of episodes interrupted by an env worker failure (hand-computed cases)."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.batch import cut_interrupted

pytestmark = pytest.mark.unittest

F, T = False, True


def test_cut_interrupted_hand_case() -> None:
    # (T=4, N=3). env 0: interrupted at t=2 -> t=1 becomes the truncated end, t=2 (placeholder) truncated too.
    # env 1: interrupted at t=0 -> nothing earlier in this rollout to cut; the placeholder itself is truncated.
    # env 2: episode terminated at t=1, the next episode interrupted at its first step t=2 -> t=1 stays as it was
    #        (terminated, not truncated).
    truncated = np.array([[F, F, F], [F, F, F], [F, F, F], [F, F, T]])
    terminated = np.array([[F, F, F], [F, F, T], [F, F, F], [F, F, F]])
    interrupted = np.array([[F, T, F], [F, F, F], [T, F, T], [F, F, F]])
    expected = np.array([[F, T, F], [T, F, F], [T, F, T], [F, F, T]])
    np.testing.assert_array_equal(cut_interrupted(truncated, terminated, interrupted), expected)
    assert not truncated[1, 0]  # the input is not modified


def test_cut_interrupted_without_interruptions_is_identity() -> None:
    truncated = np.array([[F, T], [F, F]])
    terminated = np.zeros((2, 2), dtype=bool)
    assert cut_interrupted(truncated, terminated, None) is truncated
    assert cut_interrupted(truncated, terminated, np.zeros((2, 2), dtype=bool)) is truncated
