"""The optimiser helpers: optimizer_step's direct fused-Adam call against torch.optim.Adam.step, step for step."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from ding_lite.policy.optim import FixedBufferAdamStep, _fused_adam_groups, adam, grad_norm_clip, optimizer_step
from ding_lite.rl_utils.normalize import linear_lr_decay

pytestmark = pytest.mark.unittest


def _net(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3))


def _train(net: nn.Module, opt: torch.optim.Optimizer, steps: int, step: object = optimizer_step) -> None:
    """``steps`` steps on fixed random data with a linear learning-rate decay; from step 20 on the last bias gets no
    gradient (a parameter that Adam skips)."""
    torch.manual_seed(1)
    schedule = linear_lr_decay(opt, steps)
    assert schedule is not None
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        out = net(torch.randn(8, 5))
        loss = out.square().mean() + (0.0 if i >= 20 else net[2].bias.square().sum())
        loss.backward()
        if i >= 20:
            net[2].bias.grad = None
        step(opt)  # type: ignore[operator]
        schedule.step()


def test_direct_fused_adam_step_matches_torch_adam_step_for_step_with_a_schedule() -> None:
    ours_net, ref_net = _net(0), _net(0)
    ours = adam(ours_net.parameters(), lr=1e-2, eps=1e-5, weight_decay=0.01)
    ref = torch.optim.Adam(ref_net.parameters(), lr=1e-2, eps=1e-5, weight_decay=0.01)  # unfused, torch's step
    ours_net(torch.ones(1, 5)).sum().backward()
    assert _fused_adam_groups(ours) is None  # gradients but no state yet: the first step is torch's
    _train(ours_net, ours, 30)
    assert _fused_adam_groups(ours) is not None  # the later ones the direct call
    _train(ref_net, ref, 30, step=lambda opt: opt.step())
    for a, b in zip(ours_net.parameters(), ref_net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    ours_state, ref_state = ours.state_dict(), ref.state_dict()
    assert ours_state["param_groups"][0]["lr"] == pytest.approx(ref_state["param_groups"][0]["lr"])
    for k, st in ref_state["state"].items():  # the same state, so checkpoints load either way
        for name in ("step", "exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(ours_state["state"][k][name], st[name], rtol=1e-5, atol=1e-7)


def test_optimizer_step_takes_torchs_path_where_the_direct_call_does_not_apply() -> None:
    net = _net(0)
    opt = adam(net.parameters(), lr=1e-2)
    calls = []
    opt.register_step_post_hook(lambda *_: calls.append(1))  # hooks: Adam.step runs them, once per step
    _train(net, opt, 3)
    assert calls == [1, 1, 1]
    amsgrad = adam(_net(0).parameters(), lr=1e-2, amsgrad=True)
    for opt in (amsgrad, torch.optim.Adam(_net(0).parameters()), torch.optim.SGD(_net(0).parameters(), lr=0.1)):
        params = [p for group in opt.param_groups for p in group["params"]]
        before = [p.detach().clone() for p in params]
        for _ in range(2):
            for p in params:
                p.grad = torch.ones_like(p)
            optimizer_step(opt)
        assert all(not torch.equal(a, b) for a, b in zip(before, params, strict=True))
    assert _fused_adam_groups(amsgrad) is None


@pytest.mark.parametrize("max_norm", [0.05, 1e6])
def test_clip_in_the_fused_step_equals_clip_then_torch_step(max_norm):
    """optimizer_step(opt, max_norm) on the direct path (the clip as the kernel's grad_scale) against
    grad_norm_clip + torch's Adam.step: same parameters, and the gradients are left clipped as by the clip."""
    ours_net, ref_net = _net(0), _net(0)
    ours, ref = adam(ours_net.parameters(), lr=1e-2), torch.optim.Adam(ref_net.parameters(), lr=1e-2)
    torch.manual_seed(2)
    for i in range(6):
        x = torch.randn(8, 5) * 10.0
        for net in (ours_net, ref_net):
            net.zero_grad(set_to_none=True)
            net(x).square().mean().backward()
        if i > 0:
            assert _fused_adam_groups(ours) is not None
        optimizer_step(ours, max_norm)
        grad_norm_clip(list(ref_net.parameters()), max_norm)
        ref.step()
        for a, b in zip(ours_net.parameters(), ref_net.parameters(), strict=True):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7)
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in ours_net.parameters()]))
    assert float(total) <= max_norm * (1 + 1e-4)
    # the fallback path (torch's unfused Adam) clips the same way
    sgd_net = _net(0)
    sgd = torch.optim.SGD(sgd_net.parameters(), lr=0.1)
    sgd_net(torch.randn(8, 5) * 10.0).square().mean().backward()
    optimizer_step(sgd, 0.05)
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in sgd_net.parameters()]))
    assert float(total) <= 0.05 * (1 + 1e-4)


@pytest.mark.parametrize("max_norm", [None, 0.05])
def test_fixed_buffer_step_equals_optimizer_step_with_the_norm_given(max_norm) -> None:
    """FixedBufferAdamStep (the kernel's lists found once, gradients written into the same tensors every step, their
    norm given by the caller) takes the same steps as optimizer_step computing the norm itself; its first step,
    before Adam has state, is torch's."""
    ours_net, ref_net = _net(0), _net(0)
    ours, ref = adam(ours_net.parameters(), lr=1e-2), adam(ref_net.parameters(), lr=1e-2)
    buffers = [torch.zeros_like(p) for p in ours_net.parameters()]
    for p, buffer in zip(ours_net.parameters(), buffers, strict=True):
        p.grad = buffer
    step = FixedBufferAdamStep(ours)
    torch.manual_seed(3)
    for _ in range(5):
        x = torch.randn(8, 5) * 10.0
        ref_net.zero_grad(set_to_none=True)
        ref_net(x).square().mean().backward()
        grads = torch.autograd.grad(ours_net(x).square().mean(), list(ours_net.parameters()))
        for buffer, grad in zip(buffers, grads, strict=True):
            buffer.copy_(grad)  # into the same tensors, as a written-out backward does
        norm = float(torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads])))
        step(max_norm, norm)
        optimizer_step(ref, max_norm)
        for a, b in zip(ours_net.parameters(), ref_net.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert step._groups is not None and all(p.grad is b for p, b in zip(ours_net.parameters(), buffers, strict=True))
