"""``policy.learn.gradient_dtype='bfloat16'`` (ding_lite/model/relu_backward.py, ``gradient_products``): the matrix
products that only serve gradients take bfloat16-rounded inputs, everything that is a value stays float32."""
from __future__ import annotations

import pytest
import torch
from easydict import EasyDict
from qac_helpers import batch, continuous_policy

import ding_lite.model.relu_backward as rb
from ding_lite.errors import ConfigError
from ding_lite.model.qac import QAC

pytestmark = pytest.mark.unittest


def _critics(widths: list[int]) -> QAC:
    torch.manual_seed(0)
    return QAC(EasyDict(QAC.config, obs_shape=11, action_shape=3, action_low=[-1.0] * 3, action_high=[1.0] * 3,
                        hidden_size_list=widths, action_space="regression"))


def _regression_grads(model: QAC, dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    torch.manual_seed(1)
    obs, action, target = torch.randn(256, 11), torch.rand(256, 3) * 2 - 1, 5.0 * torch.randn(256)
    with rb.gradient_products(dtype):
        written = model.critic.regression_backward(obs, action, target)
    assert written is not None
    loss, q = written
    return loss, q, [p.grad.clone() for p in model.critic.parameters()]


def test_a_gradient_product_is_the_product_of_the_bfloat16_rounded_inputs() -> None:
    """Against the exact product (float64) of the inputs rounded to bfloat16, itself rounded to bfloat16: at most
    one bfloat16 step apart (the sums' order differs); and well apart from the float32 product."""
    torch.manual_seed(0)
    a, b = torch.randn(96, 80), torch.randn(80, 72)
    with rb.gradient_products(torch.bfloat16):
        ours = rb._gradient_product(a, b, torch.Size((72, 80)))
    assert ours.dtype == torch.float32
    exact = a.bfloat16().double() @ b.bfloat16().double()
    step = 2.0 ** (torch.floor(torch.log2(exact.abs())) - 7)  # one bfloat16 step at each value (8 bits)
    assert ((ours.double() - exact).abs() <= step * 1.01).all()
    assert not torch.allclose(ours, a @ b, rtol=1e-4, atol=0)
    with rb.gradient_products(torch.bfloat16):  # a layer narrower than 64 on either side stays float32
        torch.testing.assert_close(rb._gradient_product(a, b, torch.Size((72, 32))), a @ b, rtol=0, atol=0)


def test_the_critic_regression_keeps_float32_values_and_rounds_only_the_wide_gradient_products() -> None:
    model = _critics([256, 128])
    loss32, q32, grads32 = _regression_grads(model, None)
    loss16, q16, grads16 = _regression_grads(model, torch.bfloat16)
    assert torch.equal(loss16, loss32) and torch.equal(q16, q32)  # the regressed values are float32's, bit for bit
    # per critic: weights and biases of the layers 14->256, 256->128, 128->1
    for net in range(2):
        g32, g16 = grads32[6 * net:6 * net + 6], grads16[6 * net:6 * net + 6]
        torch.testing.assert_close(g16[4], g32[4], rtol=0, atol=0)  # the output layer's: no product rounded
        torch.testing.assert_close(g16[5], g32[5], rtol=0, atol=0)
        for k in (0, 2):  # the 256x128 layer's weight gradient, and below it: rounded, close (relative 1e-2)
            rel = ((g16[k] - g32[k]).norm() / g32[k].norm()).item()
            assert 0 < rel < 1e-2, (k, rel)


def test_narrow_nets_are_untouched() -> None:
    model = _critics([48, 40])
    _, _, grads32 = _regression_grads(model, None)
    _, _, grads16 = _regression_grads(model, torch.bfloat16)
    for a, b in zip(grads16, grads32, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_an_update_in_bfloat16_reports_float32_values_and_steps_close_to_float32(algo: str) -> None:
    sizes = ["policy.model.hidden_size_list=[128, 96]"] + (["policy.learn.actor_update_freq=1"] if algo == "td3"
                                                             else [])  # TD3's actor stage in the first update too
    ref = continuous_policy(algo, *sizes)
    low = continuous_policy(algo, *sizes, "policy.learn.gradient_dtype=bfloat16")
    data = batch(256)
    torch.manual_seed(3)
    log32 = ref.learn_mode.forward(data)
    torch.manual_seed(3)
    log16 = low.learn_mode.forward(data)
    for key in ("critic_loss", "q_mean", "target_q_mean"):  # computed before any weight moved: float32's
        assert float(log16[key]) == float(log32[key]), key
    moved = 0
    for p32, p16, start in zip(ref._model.parameters(), low._model.parameters(),
                               continuous_policy(algo, *sizes)._model.parameters(), strict=True):
        step32, step16 = p32.detach() - start, p16.detach() - start
        if step32.abs().max() > 0:
            moved += 1
            # Adam's first step is lr * sign(g) where |g| >> eps: the rounding flips almost no sign
            assert (torch.sign(step16) == torch.sign(step32)).float().mean() > 0.97
    assert moved > 0


def test_a_bad_gradient_dtype_names_its_key() -> None:
    with pytest.raises(ConfigError, match=r"policy.learn.gradient_dtype must be one of \['bfloat16', 'float32'\], "
                                          r"got 'float16'"):
        continuous_policy("td3", "policy.learn.gradient_dtype=float16")


@pytest.mark.parametrize("native,expected", [(True, torch.bfloat16), (None, torch.bfloat16), (False, None)])
def test_bfloat16_falls_back_to_float32_where_the_cpu_would_emulate_it(monkeypatch, warnings_log, native,
                                                                         expected) -> None:
    monkeypatch.setattr(rb, "native_bfloat16", lambda: native)
    policy = continuous_policy("sac", "policy.learn.gradient_dtype=bfloat16")
    assert policy._gradient_dtype == expected
    assert ("no native bfloat16 products" in warnings_log.text) == (native is False)
