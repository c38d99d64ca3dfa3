"""Network building blocks (ding_lite/model/common.py): the MLP's direct forward and rollout_weights."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from ding_lite.model.common import MLP, mlp, rollout_weights
from ding_lite.policy.optim import adam, optimizer_step

pytestmark = pytest.mark.unittest


def _reference(net: MLP, x: torch.Tensor) -> torch.Tensor:
    """The same layers called as modules (nn.Sequential's forward)."""
    return nn.Sequential.forward(net, x)


@pytest.mark.parametrize("act", ["relu", "tanh", "elu", "gelu", "silu"])
def test_mlp_forward_equals_the_modules_forward(act):
    torch.manual_seed(0)
    net = mlp(6, [16, 8], act, out_size=3)
    x = torch.randn(5, 2, 3)  # flattened to (5, 6) by the MLP
    torch.testing.assert_close(net(x), _reference(net, x))
    assert list(net.state_dict()) == list(nn.Sequential(*net).state_dict())  # an nn.Sequential's keys


def test_rollout_weights_give_the_same_outputs_and_follow_weight_changes_between_rollouts():
    torch.manual_seed(0)
    net = mlp(1100, [32], "relu", out_size=4)  # a layer of 1,100 inputs gets a copy, the 32-wide one does not
    wide, narrow = net[1], net[3]
    x = torch.randn(4, 1100)
    with torch.no_grad():
        expected = _reference(net, x)
    with rollout_weights(net):
        assert "_rollout_weight_t" in wide.__dict__ and "_rollout_weight_t" not in narrow.__dict__
        with torch.inference_mode():
            torch.testing.assert_close(net(x), expected, rtol=1e-5, atol=1e-5)
        with rollout_weights(net):  # nested: the outer block's copies stay until it ends
            pass
        assert "_rollout_weight_t" in wide.__dict__
        # a gradient step inside the block uses the weights themselves
        loss = net(x).square().sum()
        loss.backward()
        assert wide.weight.grad is not None
    assert "_rollout_weight_t" not in wide.__dict__  # dropped at the end of the block
    # the fused optimiser changes weights in place without bumping their version: the next rollout copies again
    opt = adam(net.parameters(), lr=0.1)
    for _ in range(2):
        optimizer_step(opt)
        net.zero_grad()
        net(x).square().sum().backward()
    with torch.no_grad():
        changed = _reference(net, x)
    assert not torch.allclose(changed, expected)
    with rollout_weights(net), torch.no_grad():
        torch.testing.assert_close(net(x), changed, rtol=1e-5, atol=1e-5)
