"""The qac model's actor value (ding_lite/model/qac.py, ``Critics.actor_value``): its written-out backward gives
autograd's value and action gradient, and no critic weight gradient."""
from __future__ import annotations

import pytest
import torch
from easydict import EasyDict

from ding_lite.model.qac import QAC

pytestmark = pytest.mark.unittest


def _model(twin: bool = True, act: str = "relu", widths: tuple[int, ...] = (32, 24)) -> QAC:
    torch.manual_seed(0)
    return QAC(EasyDict(QAC.config, obs_shape=5, action_shape=2, action_low=[-1.0, -2.0], action_high=[1.0, 2.0],
                        twin_critic=twin, hidden_size_list=list(widths), activation=act))


def _autograd(model: QAC, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    return model.critic(obs, action).min(dim=0).values


@pytest.mark.parametrize("twin,widths", [(True, (32, 24)), (False, (16,)), (True, (8, 8, 8))])
def test_actor_value_matches_autograd_and_leaves_the_critics_without_gradients(twin: bool,
                                                                               widths: tuple[int, ...]) -> None:
    model = _model(twin, widths=widths)
    obs = torch.randn(64, 5)
    base = torch.randn(64, 2)
    ours = base.clone().requires_grad_()
    value = model.critic.actor_value(obs, ours)
    (value * torch.linspace(-1, 2, 64)).sum().backward()
    assert all(p.grad is None for p in model.critic.parameters())  # no critic weight gradient is built
    ref = base.clone().requires_grad_()
    expected = _autograd(model, obs, ref)
    (expected * torch.linspace(-1, 2, 64)).sum().backward()
    torch.testing.assert_close(value, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours.grad, ref.grad, rtol=1e-5, atol=1e-6)
    if widths == (32, 24):  # each critic gave some minima: the row split ran
        q = model.critic(obs, base)
        assert 0 < int((q[0] <= q[1]).sum()) < 64


def test_actor_value_falls_back_to_autograd_for_other_activations() -> None:
    model = _model(act="tanh")
    obs, action = torch.randn(8, 5), torch.randn(8, 2, requires_grad=True)
    value = model.critic.actor_value(obs, action)
    torch.testing.assert_close(value, _autograd(model, obs, action))
    assert value.grad_fn is not None and "Min" in type(value.grad_fn).__name__


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_first_actor_value_is_q1_with_autograd_action_gradient_and_no_critic_gradient(act: str) -> None:
    """TD3's actor value: Q_1 (not the min), autograd's action gradient; on the written-out path (ReLU) no critic
    weight gradient either."""
    model = _model(act=act)
    obs, base = torch.randn(64, 5), torch.randn(64, 2)
    ours = base.clone().requires_grad_()
    value = model.critic.first_actor_value(obs, ours)
    (value * torch.linspace(-1, 2, 64)).sum().backward()
    if act == "relu":
        assert all(p.grad is None for p in model.critic.parameters())
    ref = base.clone().requires_grad_()
    expected = model.critic(obs, ref)[0]  # Q_1 through the forward pass (which rescales the action)
    (expected * torch.linspace(-1, 2, 64)).sum().backward()
    torch.testing.assert_close(value, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours.grad, ref.grad, rtol=1e-5, atol=1e-6)
    q = model.critic(obs, base)
    assert bool((q[0] > q[1]).any())  # Q_1 is not the min everywhere: the test tells Q_1 from min_j Q_j


def _autograd_regression(model: QAC, obs: torch.Tensor, action: torch.Tensor, target: torch.Tensor,
                         weight: torch.Tensor | None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The critics' loss 1/2 sum_j mean_b w_b (Q_j - y_b)^2 through autograd, and its parameter gradients."""
    params = list(model.critic.parameters())
    per_sample = (model.critic(obs, action) - target).square()
    loss = 0.5 * (per_sample if weight is None else per_sample * weight).mean(dim=1).sum()
    return loss.detach(), list(torch.autograd.grad(loss, params))


@pytest.mark.parametrize("twin,widths,weighted", [(True, (32, 24), False), (True, (32, 24), True), (False, (16,), True),
                                                  (True, (8, 8, 8), False)])
def test_regression_backward_sets_autograds_gradients(twin: bool, widths: tuple[int, ...], weighted: bool) -> None:
    model = _model(twin, widths=widths)
    obs, action, target = torch.randn(64, 5), torch.randn(64, 2), 3.0 * torch.randn(64)
    weight = torch.rand(64) if weighted else None
    expected_loss, expected = _autograd_regression(model, obs, action, target, weight)
    params = list(model.critic.parameters())
    for p in params:  # stale gradients are replaced, not added to
        p.grad = torch.full_like(p, 7.0)
    written = model.critic.regression_backward(obs, action, target, weight)
    assert written is not None
    loss, q = written
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(q, model.critic(obs, action).detach(), rtol=0, atol=1e-6)
    assert not loss.requires_grad and not q.requires_grad
    for p, g in zip(params, expected, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-5, atol=1e-6)
    if weighted:  # the weights count: without them the gradients differ
        _, unweighted = _autograd_regression(model, obs, action, target, None)
        assert not torch.allclose(unweighted[0], expected[0])


def test_regression_backward_declines_what_it_cannot_write_out() -> None:
    obs, action, target = torch.randn(8, 5), torch.randn(8, 2), torch.randn(8)
    model = _model(act="tanh")
    assert model.critic.regression_backward(obs, action, target) is None
    assert all(p.grad is None for p in model.critic.parameters())
    model = _model()
    next(model.critic.parameters()).requires_grad_(False)
    assert model.critic.regression_backward(obs, action, target) is None


def test_gaussian_actor_written_out_backward_is_autograds_with_the_log_std_clamp() -> None:
    """GaussianActor.forward_for_backward / backward_from against autograd through forward(), on outputs whose
    log-std lies above 2, inside and below -20 (the clamp passes no gradient outside [-20, 2])."""
    model = _model()
    actor = model.actor
    with torch.no_grad():  # log-std columns spread around the clamp's two ends
        actor.net[-1].bias[2:] = torch.tensor([2.0, -20.0])
        actor.net[-1].weight[2:] *= 20.0
    obs = torch.randn(64, 5)
    g_mu, g_log_std = torch.randn(64, 2), torch.randn(64, 2)
    mu, log_std, saved = actor.forward_for_backward(obs)
    actor.backward_from(saved, g_mu, g_log_std)
    ours = [p.grad.clone() for p in actor.parameters()]
    actor.zero_grad(set_to_none=True)
    ref_mu, ref_log_std = actor(obs)
    raw = actor.net(obs)[:, 2:]
    assert (raw > 2).any() and (raw < -20).any() and ((raw > -20) & (raw < 2)).any()
    ((ref_mu * g_mu).sum() + (ref_log_std * g_log_std).sum()).backward()
    torch.testing.assert_close(mu, ref_mu.detach())
    torch.testing.assert_close(log_std, ref_log_std.detach())
    # float32 sums over the batch in another order (the matmul kernels differ by CPU and thread count): a few 1e-6
    # apart; a wrong factor (the scale, 1 - tanh^2) would be off by 1e-2 or more
    for a, p in zip(ours, actor.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-5)




def _td3_model(act: str = "relu") -> QAC:
    torch.manual_seed(0)
    return QAC(EasyDict(QAC.config, obs_shape=5, action_shape=2, action_low=[-1.0, -2.0], action_high=[1.0, 3.0],
                        twin_critic=True, hidden_size_list=[32, 24], activation=act, action_space="regression"))


def test_tanh_actor_written_out_backward_is_autograds() -> None:
    """TanhActor.forward_for_backward / backward_from against autograd through forward(), with asymmetric bounds
    (scale (1, 2.5), bias (0, 0.5)) and pre-activations deep in the squash's flat ends."""
    actor = _td3_model().actor
    with torch.no_grad():  # some |u| > 3, where 1 - tanh(u)^2 is small, some near 0
        actor.net[-1].weight *= 10.0
        actor.net[-1].bias[:] = torch.tensor([3.6, -0.2])
    obs = torch.randn(64, 5)
    grad = torch.randn(64, 2)
    action, saved = actor.forward_for_backward(obs)
    actor.backward_from(saved, grad)
    ours = [p.grad.clone() for p in actor.parameters()]
    actor.zero_grad(set_to_none=True)
    reference = actor(obs)
    assert (actor.net(obs).abs() > 3).any()
    (reference * grad).sum().backward()
    torch.testing.assert_close(action, reference.detach())
    # float32 sums over the batch in another order (the matmul kernels differ by CPU and thread count): a few 1e-6
    # apart; a wrong factor (the scale, 1 - tanh^2) would be off by 1e-2 or more
    for a, p in zip(ours, actor.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-5)


def test_min_value_action_grad_of_q1_alone_is_autograds() -> None:
    critic = _td3_model().critic
    obs, action = torch.randn(32, 5), torch.randn(32, 2)
    q, dq_da = critic.min_value_action_grad(obs, action, first_only=True)
    assert all(p.grad is None for p in critic.parameters())  # no weight gradient: the actor stage steps no critic
    leaf = action.clone().requires_grad_(True)
    reference = critic(obs, leaf)[0]
    reference.sum().backward()
    torch.testing.assert_close(q, reference.detach())
    torch.testing.assert_close(dq_da, leaf.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [_model, _td3_model], ids=["gaussian", "tanh"])
def test_actors_decline_what_they_cannot_write_out(make) -> None:
    assert make(act="tanh").actor.forward_for_backward(torch.randn(4, 5)) is None
    model = make()
    model.actor.net[0].weight.requires_grad_(False)
    assert model.actor.forward_for_backward(torch.randn(4, 5)) is None


def test_the_critics_read_actions_rescaled_to_minus_one_one_as_sb3_stores_them() -> None:
    """Bounds of very different scales (1e-3 and 100): the critics read (a - bias) / scale, so they see the same
    inputs as on [-1, 1] bounds (SB3's critics read the [-1, 1] actions it stores); the bounds stay out of the
    critics' checkpoint entries (the actor's carry them)."""
    def model(low: list[float], high: list[float]) -> QAC:
        torch.manual_seed(0)
        return QAC(EasyDict(QAC.config, obs_shape=5, action_shape=2, action_low=low, action_high=high,
                            hidden_size_list=[16, 16]))

    wide, unit = model([-1e-3, 0.0], [1e-3, 100.0]), model([-1.0, -1.0], [1.0, 1.0])
    obs, unit_action = torch.randn(8, 5), torch.rand(8, 2) * 2 - 1
    env_action = unit_action * wide.bounds.scale + wide.bounds.bias
    torch.testing.assert_close(wide.critic(obs, env_action), unit.critic(obs, unit_action))
    assert sorted(wide.state_dict()) == sorted(unit.state_dict())
    assert not any(key.startswith("critic.") and "action" in key for key in wide.state_dict())
