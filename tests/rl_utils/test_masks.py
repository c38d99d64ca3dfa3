"""Hand cases of the action-mask maths."""

import numpy as np
import pytest
import torch

from ding_lite.rl_utils.masks import (
    MASKED_LOGIT,
    apply_action_mask,
    masked_argmax,
    masked_max,
    random_legal_actions,
)

pytestmark = pytest.mark.unittest


def test_masked_logits_are_large_negative_not_inf():
    logits = torch.tensor([[1.0, 5.0, 2.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, False, True], [False, False, True]])
    out = apply_action_mask(logits, mask)
    assert out.tolist() == [[1.0, MASKED_LOGIT, 2.0], [MASKED_LOGIT, MASKED_LOGIT, 0.0]]
    probs = torch.softmax(out, -1)
    assert probs[0, 1] == 0 and probs[1].tolist() == [0.0, 0.0, 1.0]
    entropy = -(probs * torch.log_softmax(out, -1)).sum(-1)  # -inf would give 0 * -inf = NaN here
    assert torch.isfinite(entropy).all() and entropy[1] == 0
    assert apply_action_mask(logits, None) is logits


def test_greedy_and_max_range_over_legal_actions():
    q = torch.tensor([[1.0, 5.0, 2.0], [3.0, -1.0, -2.0], [4.0, 4.0, 4.0]])
    mask = torch.tensor([[True, False, True], [False, True, True], [False, False, False]])
    assert masked_argmax(q, mask)[:2].tolist() == [2, 1]
    assert masked_max(q, mask).tolist() == [2.0, -1.0, 0.0]  # no legal action (terminal): 0
    assert masked_max(q, None).tolist() == [5.0, 3.0, 4.0]


def test_random_legal_actions_are_uniform_over_legal_ones():
    rng = np.random.default_rng(0)
    mask = np.array([[False, True, False, True]] * 4000 + [[False, False, True, False]])
    actions = random_legal_actions(rng, mask)
    assert set(actions[:-1].tolist()) == {1, 3} and actions[-1] == 2
    assert abs((actions[:-1] == 1).mean() - 0.5) < 0.05
