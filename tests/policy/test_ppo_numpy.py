"""PPO's gradient step written out in NumPy (ding_lite/policy/ppo_numpy.py) against autograd's: the same learn call
from the same weights and data gives the same weights, optimiser state and logs (up to float32 rounding), for every
setting the written-out step covers; the settings it does not cover train through autograd. Every test runs twice:
with the passes compiled by numba (the default, ding_lite/policy/ppo_jit.py) and as NumPy ops."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ACTION_MASK, ADV, LOGP, OBS, RETURN, VALUE
from ding_lite.registry import POLICY_REGISTRY

pytestmark = pytest.mark.unittest


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def passes(request, monkeypatch) -> str:
    """The written-out passes compiled by numba, or as NumPy ops (what runs where numba is not installed)."""
    from ding_lite.policy import ppo_jit

    if request.param == "numpy":
        monkeypatch.setattr(ppo_jit, "AVAILABLE", False)
    elif not ppo_jit.AVAILABLE:
        pytest.skip("numba is not installed")
    return request.param


SPACES = {"Hopper-v4": (11, 3, "continuous"), "Pendulum-v1": (3, 1, "continuous"), "CartPole-v1": (4, 2, "discrete")}


def _policy(env_id: str, *overrides: str):
    obs_shape, action_shape, action_space = SPACES[env_id]
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id=env_id), policy=dict(type="ppo")),
                         overrides=[f"policy.model.obs_shape={obs_shape}", f"policy.model.action_shape={action_shape}",
                                    f"policy.model.action_space='{action_space}'", *overrides])
    torch.manual_seed(0)
    return POLICY_REGISTRY.get("ppo")(cfg.policy, enable_field=("learn",))


def _batch(policy, n: int, rng: np.random.Generator, mask: bool = False) -> dict:
    model = policy._model
    obs_size = model.actor_encoder[1].in_features
    batch = {OBS: rng.normal(size=(n, obs_size)).astype(np.float32) * 3 + 1,
             ADV: rng.normal(size=n).astype(np.float32), RETURN: rng.normal(size=n).astype(np.float32) * 2,
             VALUE: rng.normal(size=n).astype(np.float32)}
    if model.continuous:
        act_size = model.actor_head.out_features
        batch[ACTION] = rng.normal(size=(n, act_size)).astype(np.float32)
        # log-probs near the current policy's, so that some ratios fall inside the clip range and some outside
        with torch.no_grad():
            out = model.compute_actor(torch.from_numpy(batch[OBS]))
        from ding_lite.policy.ppo import action_distribution
        batch[LOGP] = (action_distribution(out).log_prob(torch.from_numpy(batch[ACTION])).numpy()
                       + rng.normal(size=n).astype(np.float32) * 0.3)
    else:
        n_action = model.actor_head.out_features
        legal = rng.random((n, n_action)) < 0.7 if mask else np.ones((n, n_action), bool)
        legal[np.arange(n), 0] = True
        action = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        batch[ACTION] = action.astype(np.int64)
        batch[LOGP] = np.log(np.full(n, 1.0 / n_action, np.float32)) + rng.normal(size=n).astype(np.float32) * 0.3
        if mask:
            batch[ACTION_MASK] = legal
    return batch


def _learn_both(policy, batch: dict, calls: int = 2, auto=None):
    """The same learn calls through the written-out step and through autograd (``auto``, a policy built the same
    way; default a copy), from the same weights and seed."""
    auto = copy.deepcopy(policy) if auto is None else auto
    auto._numpy_learn = None
    assert policy._numpy_learn is not None
    logs = []
    for p in (policy, auto):
        torch.manual_seed(1)
        logs.append([p.learn_mode.forward(batch) for _ in range(calls)])
    return auto, logs


SETTINGS = {
    "hopper, CleanRL's settings": ("Hopper-v4", "policy.model.obs_norm=True", "policy.learn.value_clip_ratio=0.2",
                                   "policy.learn.lr_decay_iter=100"),
    "pendulum, entropy bonus, no clips": ("Pendulum-v1", "policy.learn.entropy_weight=0.01",
                                          "policy.learn.grad_clip_value=None", "policy.learn.clip_ratio=0.1"),
    "cartpole, relu, head layers, dual clip": ("CartPole-v1", "policy.model.activation=relu",
                                               "policy.model.actor_head_hidden_size=32",
                                               "policy.model.critic_head_hidden_size=16",
                                               "policy.learn.dual_clip=3.0", "policy.learn.entropy_weight=0.05"),
    "cartpole, value norm, no adv norm": ("CartPole-v1", "policy.learn.value_norm=True",
                                          "policy.learn.adv_norm=False", "policy.learn.value_clip_ratio=0.5"),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_written_out_step_matches_autograd(setting: str) -> None:
    env_id, *overrides = SETTINGS[setting]
    policy = _policy(env_id, *overrides, "policy.learn.batch_size=32", "policy.learn.epoch_per_collect=3")
    auto = _policy(env_id, *overrides, "policy.learn.batch_size=32", "policy.learn.epoch_per_collect=3")
    batch = _batch(policy, 100, np.random.default_rng(0))
    for p in (policy, auto):
        if policy.cfg["learn"]["value_norm"]:
            p._value_stats.update(np.array([3.0, -1.0, 0.5, 7.0]))
        if hasattr(p._model.obs_norm, "update"):
            p._model.obs_norm.update(batch[OBS])
    auto, (numpy_logs, auto_logs) = _learn_both(policy, batch, auto=auto)
    for name, p in policy._model.named_parameters():
        q = dict(auto._model.named_parameters())[name]
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=name)
        assert not torch.equal(p, dict(_policy(env_id, *overrides)._model.named_parameters())[name]), name  # it learnt
    for mine, theirs in zip(numpy_logs, auto_logs, strict=True):
        assert len(mine) == len(theirs) == 3 * 4  # 3 epochs x 4 minibatches (32, 32, 32, 4)
        for a, b in zip(mine, theirs, strict=True):
            assert a.keys() == b.keys()
            for key in a:
                np.testing.assert_allclose(float(a[key]), float(b[key]), rtol=1e-4, atol=1e-5, err_msg=key)
    state = policy._optimizer.state_dict()["state"]
    for k, v in auto._optimizer.state_dict()["state"].items():
        torch.testing.assert_close(state[k]["exp_avg_sq"], v["exp_avg_sq"], rtol=1e-3, atol=1e-9)


def test_action_masks_take_the_same_gradient() -> None:
    policy = _policy("CartPole-v1", "policy.learn.entropy_weight=0.1")
    model = policy._model
    # three actions, so that a mask has something to hide
    from ding_lite.model.common import ortho_init
    model.actor_head = ortho_init(torch.nn.Linear(model.actor_head.in_features, 3), 0.01)
    policy._optimizer = type(policy._optimizer)(model.parameters(), lr=1e-3, fused=True)
    from ding_lite.policy.ppo_numpy import NumpyVAC
    policy._numpy = policy._numpy_learn = NumpyVAC.build(model)
    batch = _batch(policy, 64, np.random.default_rng(1), mask=True)
    auto, (numpy_logs, auto_logs) = _learn_both(policy, batch)
    for (name, p), q in zip(model.named_parameters(), auto._model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=name)
    np.testing.assert_allclose([float(x["entropy"]) for x in numpy_logs[0]],
                               [float(x["entropy"]) for x in auto_logs[0]], rtol=1e-5)


@pytest.mark.parametrize("overrides", [
    ("policy.model.share_encoder=True",),
    ("policy.model.sigma_type=conditioned",),
    ("policy.model.activation=gelu",),
    ("policy.numpy_mlp=False",),
])
def test_what_the_written_out_step_does_not_cover_trains_through_autograd(overrides: tuple[str, ...]) -> None:
    env_id = "Pendulum-v1" if "sigma_type" in overrides[0] else "CartPole-v1"
    policy = _policy(env_id, *overrides)
    assert policy._numpy_learn is None
    batch = _batch(policy, 64, np.random.default_rng(2))
    before = [p.detach().clone() for p in policy._model.parameters()]
    policy.learn_mode.forward(batch)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy._model.parameters(), strict=True))


def test_a_subclass_that_changes_the_loss_keeps_autograd() -> None:
    cfg = _policy("CartPole-v1").cfg

    class WithBonus(POLICY_REGISTRY.get("ppo")):  # type: ignore[misc]
        def _compute_loss(self, mb, context):
            loss, log = super()._compute_loss(mb, context)
            return loss + 0.0 * loss, log

    class OwnValueLoss(POLICY_REGISTRY.get("ppo")):  # type: ignore[misc]
        def _value_loss(self, value, mb):
            return super()._value_loss(value, mb) * 2.0

    assert WithBonus(cfg, enable_field=("learn",))._numpy_learn is None
    assert OwnValueLoss(cfg, enable_field=("learn",))._numpy_learn is None
    assert POLICY_REGISTRY.get("ppo")(cfg, enable_field=("learn",))._numpy_learn is not None


def test_loaded_weights_are_seen_by_the_next_learn_call() -> None:
    """A checkpoint loaded between learn calls (same storage, copied in) and a model whose parameters were replaced
    (``.data`` swapped) both train from the weights they hold now."""
    policy = _policy("Hopper-v4", "policy.model.obs_norm=True")
    batch = _batch(policy, 64, np.random.default_rng(3))
    policy.learn_mode.forward(batch)
    other = _policy("Hopper-v4", "policy.model.obs_norm=True")
    with torch.no_grad():
        for p in other._model.parameters():
            p.add_(0.1)
    for p in policy._model.parameters():
        p.data = p.data.clone()  # new storage: the NumPy views of the first call are stale
    policy._model.load_state_dict(other._model.state_dict())
    auto = copy.deepcopy(policy)
    auto._numpy_learn = None
    for p in (policy, auto):
        torch.manual_seed(5)
        p.learn_mode.forward(batch)
    for p, q in zip(policy._model.parameters(), auto._model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("env_id, overrides", [
    ("Hopper-v4", ("policy.model.obs_norm=True", "policy.learn.value_norm=True")),
    ("CartPole-v1", ("policy.model.activation=relu",)),
])
def test_acting_draws_what_the_torch_modules_draw(env_id: str, overrides: tuple[str, ...]) -> None:
    """Collect and eval through the NumPy passes give the torch path's actions, log-probs and values: the same
    draws from torch's generator, the same arithmetic."""
    rng = np.random.default_rng(4)
    policies = []
    for numpy_mlp in (True, False):
        cfg = _policy(env_id, *overrides).cfg
        cfg.numpy_mlp = numpy_mlp
        torch.manual_seed(0)
        policies.append(POLICY_REGISTRY.get("ppo")(cfg, enable_field=("collect", "eval")))
    fast, slow = policies
    assert fast._numpy is not None and slow._numpy is None
    for p in policies:
        p._value_stats.update(np.array([2.0, 5.0, -3.0]))
    for _ in range(3):  # the observation statistics move between calls
        obs = rng.normal(size=(6, SPACES[env_id][0])).astype(np.float32) * 2
        outs = []
        for p in policies:
            torch.manual_seed(7)
            outs.append((p.collect_mode.forward(obs), p.eval_mode.forward(obs)))
        (collect_a, eval_a), (collect_b, eval_b) = outs
        for key in (ACTION, LOGP, VALUE):
            np.testing.assert_allclose(collect_a[key], collect_b[key], rtol=1e-5, atol=1e-5, err_msg=key)
            assert collect_a[key].dtype == collect_b[key].dtype, key
        np.testing.assert_allclose(eval_a[ACTION], eval_b[ACTION], rtol=1e-5, atol=1e-6)


def test_masked_acting_never_picks_an_illegal_action() -> None:
    policy = _policy("CartPole-v1")
    policy = POLICY_REGISTRY.get("ppo")(policy.cfg, enable_field=("collect", "eval"))
    obs = np.random.default_rng(5).normal(size=(500, 4)).astype(np.float32)
    mask = np.zeros((500, 2), bool)
    mask[np.arange(500), np.arange(500) % 2] = True
    picked = policy.collect_mode.forward({"observation": obs, "action_mask": mask})[ACTION]
    np.testing.assert_array_equal(picked, np.arange(500) % 2)
    np.testing.assert_array_equal(policy.eval_mode.forward({"observation": obs, "action_mask": mask})[ACTION],
                                  np.arange(500) % 2)


def test_a_model_off_the_cpu_is_not_covered() -> None:
    """Parameters on another device (the meta device stands in for a GPU here) or in another dtype run through torch."""
    from ding_lite.policy.ppo_numpy import NumpyVAC

    model = _policy("Hopper-v4")._model
    assert NumpyVAC.build(model) is not None
    assert NumpyVAC.build(model.double()) is None
    assert NumpyVAC.build(model.float().to("meta")) is None
