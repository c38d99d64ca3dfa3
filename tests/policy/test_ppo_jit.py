"""PPO's passes compiled by numba (ding_lite/policy/ppo_jit.py): tanh within one float32 ulp of the exact tanh,
one minibatch's gradients equal to the NumPy passes' (themselves checked against autograd in test_ppo_numpy.py),
and a policy that holds compiled passes copies and pickles. Whole learn calls and acting against autograd and the
torch modules: test_ppo_numpy.py (its tests run with and without compilation)."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ACTION_MASK, ADV, LOGP, OBS, RETURN, VALUE
from ding_lite.policy import ppo_jit
from ding_lite.policy.ppo_numpy import NumpyVAC
from ding_lite.registry import POLICY_REGISTRY

pytestmark = [pytest.mark.unittest, pytest.mark.skipif(not ppo_jit.AVAILABLE, reason="numba is not installed")]


def test_tanh_is_within_one_ulp_of_tanh() -> None:
    assert ppo_jit.compile_all()
    x = np.concatenate([np.linspace(-12.0, 12.0, 24001), np.geomspace(1e-30, 1e3, 2000), [0.0, 9.5, 3.0e38]])
    x = np.concatenate([x, -x]).astype(np.float32)
    mine = np.array([np.float32(ppo_jit._tanh(np.float64(v))) for v in x])
    exact = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    # NumPy's float32 tanh: up to 1.3 ulp on the same points (the 1e-37: tiny x where another test's torch set
    # flush-to-zero and the ulp reads 0)
    assert np.all(np.abs(mine - exact) <= ulp + 1e-37)
    assert mine[x >= 9.5].min() == 1.0 and mine[x <= -9.5].max() == -1.0  # float32's tanh is +-1 out there
    assert np.float32(ppo_jit._tanh(np.inf)) == 1.0 and np.float32(ppo_jit._tanh(-np.inf)) == -1.0
    assert np.signbit(np.float32(ppo_jit._tanh(-0.0)))


def test_lambert_fraction_by_hand() -> None:
    # two levels: tanh x ~ x / (1 + x^2 / (3 + x^2 / 5)) = x (15 + x^2) / (15 + 6 x^2)
    assert ppo_jit._lambert_tanh(2) == ((1.0, 15.0), (6.0, 15.0))


def test_loss_kernels_match_the_numpy_passes_at_ties() -> None:
    """The compiled policy and value losses on the exact ties where torch splits the gradient: the dual clip's bound
    c·A equal to the objective (r = c, A < 0), and a value error tying its clipped error outside the clip."""
    from ding_lite.rl_utils.ppo_grad import ppo_policy_loss_grad, ppo_value_loss_grad

    assert ppo_jit.compile_all()
    logp_old = np.zeros(3, np.float32)
    logp = np.log(np.array([2.0, 1.1, 0.5], np.float32))  # r = 2 = c (tie), 1.1 (inside), 0.5 (clipped)
    adv = np.array([-1.0, 1.0, -2.0], np.float32)
    log_ratio = np.empty(3, np.float32)
    loss, grad = ppo_jit._policy_loss_grad(logp, logp_old, adv, 0.2, 2.0, log_ratio)
    loss_np, grad_np, _ = ppo_policy_loss_grad(logp, logp_old, adv, 0.2, 2.0)
    assert loss == pytest.approx(loss_np, rel=1e-6)
    np.testing.assert_allclose(grad, grad_np, rtol=1e-6)
    assert grad[0] == pytest.approx(0.5 * 2.0 * -1.0 * -1 / 3)  # half of r·A, times -1/B
    v, v_old, target = (np.array(x, np.float32) for x in ([1.0, 0.3], [-1.0, 0.0], [0.25, 1.0]))
    loss, grad = ppo_jit._value_loss_grad(v[:, None], v_old, target, 0.5, 1.0)
    loss_np, grad_np = ppo_value_loss_grad(v, v_old, target, 0.5)
    assert loss == pytest.approx(loss_np, rel=1e-6)
    np.testing.assert_allclose(grad[:, 0], grad_np, rtol=1e-6)
    assert grad[0, 0] == pytest.approx(0.5 * 0.75 / 2)  # the tie outside the clip: half of the unclipped side


def _policy(env_id: str, *overrides: str):
    spaces = {"Hopper-v4": (11, 3, "continuous"), "CartPole-v1": (4, 3, "discrete")}
    obs_shape, action_shape, action_space = spaces[env_id]
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id=env_id), policy=dict(type="ppo")),
                         overrides=[f"policy.model.obs_shape={obs_shape}", f"policy.model.action_shape={action_shape}",
                                    f"policy.model.action_space='{action_space}'", *overrides])
    torch.manual_seed(0)
    return POLICY_REGISTRY.get("ppo")(cfg.policy, enable_field=("learn", "collect", "eval"))


def _minibatch(policy, rng: np.random.Generator, n: int = 64) -> dict[str, torch.Tensor]:
    model = policy._model
    obs_size = model.actor_encoder[1].in_features
    out = model.actor_head.out_features
    mb = {OBS: rng.normal(size=(n, obs_size)) * 3 + 1,  # float64, as MuJoCo's observations arrive
          ADV: rng.normal(size=n), RETURN: rng.normal(size=n) * 2, VALUE: rng.normal(size=n),
          LOGP: rng.normal(size=n) * 0.5 - 2.0}
    if model.continuous:
        mb[ACTION] = rng.normal(size=(n, out))
    else:
        legal = rng.random((n, out)) < 0.6
        legal[:, 0] = True
        mb[ACTION] = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        mb[ACTION_MASK] = legal
    return {k: torch.from_numpy(v if k in (OBS, ACTION, ACTION_MASK) else v.astype(np.float32)) for k, v in mb.items()}


@pytest.mark.parametrize("env_id, overrides", [
    ("Hopper-v4", ("policy.model.obs_norm=True", "policy.learn.value_clip_ratio=0.2",
                   "policy.learn.entropy_weight=0.01")),
    ("CartPole-v1", ("policy.model.activation=relu", "policy.learn.dual_clip=2.0", "policy.learn.entropy_weight=0.05",
                     "policy.learn.value_norm=True")),
])
def test_one_minibatch_gives_the_numpy_passes_gradients(env_id: str, overrides: tuple[str, ...]) -> None:
    policy = _policy(env_id, *overrides)
    rng = np.random.default_rng(0)
    if policy._model.obs_norm is not None and hasattr(policy._model.obs_norm, "update"):
        policy._model.obs_norm.update(rng.normal(size=(50, 11)) * 2)
    if policy.cfg["learn"]["value_norm"]:
        policy._value_stats.update(np.array([3.0, -1.0, 0.5]))
    mb = _minibatch(policy, rng)
    results = []
    for jit in (True, False):
        passes = NumpyVAC.build(policy._model, jit=jit)
        assert passes is not None and passes.jit is jit
        passes.begin_learning()
        stats = policy._value_stats if policy.cfg["learn"]["value_norm"] else None
        log, log_ratio, norm = passes.step(mb, policy.cfg["learn"], stats)
        results.append((log, log_ratio.clone(), norm, [p.grad.clone() for p in passes.params]))
    (log_a, ratio_a, norm_a, grads_a), (log_b, ratio_b, norm_b, grads_b) = results
    for key in log_a:
        np.testing.assert_allclose(float(log_a[key]), float(log_b[key]), rtol=1e-5, atol=1e-6, err_msg=key)
    torch.testing.assert_close(ratio_a, ratio_b, rtol=1e-5, atol=1e-6)
    assert norm_a == pytest.approx(norm_b, rel=1e-5)
    for a, b in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert any(float(g.abs().max()) > 0 for g in grads_a)


def test_a_policy_with_compiled_passes_copies_and_pickles() -> None:
    policy = _policy("Hopper-v4", "policy.model.obs_norm=True")
    obs = np.random.default_rng(1).normal(size=(4, 11))
    policy.learn_mode.forward({OBS: np.random.default_rng(2).normal(size=(64, 11)).astype(np.float32),
                               ACTION: np.zeros((64, 3), np.float32), LOGP: np.full(64, -3.0, np.float32),
                               ADV: np.ones(64, np.float32), RETURN: np.ones(64, np.float32),
                               VALUE: np.zeros(64, np.float32)})
    for other in (copy.deepcopy(policy), pickle.loads(pickle.dumps(policy))):
        assert other._numpy is not None and other._numpy.jit
        np.testing.assert_array_equal(other.eval_mode.forward(obs)[ACTION], policy.eval_mode.forward(obs)[ACTION])
        with torch.no_grad():  # the copy acts on its own weights, not the original's
            for p in other._model.parameters():
                p.add_(0.5)
        assert not np.array_equal(other.eval_mode.forward(obs)[ACTION], policy.eval_mode.forward(obs)[ACTION])
