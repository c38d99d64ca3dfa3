"""The off-policy update order (ding_lite/policy/off_policy.py) on SAC, TD3 and DQN: each stage's gradient reaches
only its own parameters, targets move by Polyak averaging or copies on schedule, TD3's delays, priorities and
importance weights."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from qac_helpers import batch, continuous_policy

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, OBS, PRIORITY, WEIGHT

pytestmark = pytest.mark.unittest

def snapshot(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def changed(module: torch.nn.Module, before: list[torch.Tensor]) -> bool:
    return any(not torch.equal(p, b) for p, b in zip(module.parameters(), before, strict=True))


def test_each_sac_stage_trains_only_its_own_networks() -> None:
    policy = continuous_policy("sac")
    model, data = policy._model, policy.batch_tensors(batch())
    actor, critic = snapshot(model.actor), snapshot(model.critic)
    context: dict = {}
    loss, _ = policy._stage_loss("critic", data, context)
    policy._step("critic", loss)
    assert changed(model.critic, critic) and not changed(model.actor, actor)
    assert all(p.grad is None for p in model.actor.parameters())
    critic, critic_grads = snapshot(model.critic), [p.grad.clone() for p in model.critic.parameters()]
    log_alpha = policy._temperature.log_alpha.item()
    loss, _ = policy._stage_loss("actor", data, context)  # through the critics, but trains the actor (and alpha)
    policy._step("actor", loss)
    assert changed(model.actor, actor) and not changed(model.critic, critic)
    # no gradient of the actor loss reached a critic weight (those left are the critic stage's)
    assert all(torch.equal(p.grad, g) for p, g in zip(model.critic.parameters(), critic_grads, strict=True))
    assert policy._temperature.log_alpha.item() != log_alpha


def test_sac_targets_follow_by_polyak_averaging_every_update() -> None:
    policy = continuous_policy("sac", "policy.learn.target_theta=0.1")
    target = policy._learn_state["target_critic"]
    assert all(torch.equal(t, o) for t, o in zip(target.parameters(), policy._model.critic.parameters(), strict=True))
    for k in range(2):
        before = snapshot(target)
        policy.learn_mode.forward(batch(seed=k))
        for t, b, o in zip(target.parameters(), before, policy._model.critic.parameters(), strict=True):
            torch.testing.assert_close(t, 0.9 * b + 0.1 * o)
    assert not any(p.requires_grad for p in target.parameters())


def test_td3_delays_the_actor_and_the_targets() -> None:
    policy = continuous_policy("td3", "policy.learn.actor_update_freq=2")
    model = policy._model
    targets = policy._learn_state["target_actor"], policy._learn_state["target_critic"]
    actor_steps, target_steps, logs = [], [], []
    for k in range(4):
        actor, critic, target = snapshot(model.actor), snapshot(model.critic), [snapshot(t) for t in targets]
        logs.append(policy.learn_mode.forward(batch(seed=k)))
        assert changed(model.critic, critic)  # every update
        actor_steps.append(changed(model.actor, actor))
        target_steps.append(all(changed(t, b) for t, b in zip(targets, target, strict=True)))
    assert actor_steps == [False, True, False, True] and target_steps == [False, True, False, True]
    assert ["actor_loss" in log for log in logs] == [False, True, False, True]


def dqn_policy(*overrides: str) -> tuple[object, dict]:
    """A CartPole-shaped DQN learner and one fixed batch for it."""
    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="dqn")),
                         overrides=["policy.model.obs_shape=4", "policy.model.action_shape=2", *overrides])
    rng = np.random.default_rng(0)
    dqn_batch = {OBS: rng.normal(size=(8, 4)).astype(np.float32), ACTION: rng.integers(0, 2, 8),
                 "return_n": rng.normal(size=8).astype(np.float32), "discount_n": np.full(8, 0.9, np.float32),
                 "next_obs_n": rng.normal(size=(8, 4)).astype(np.float32)}
    return build(cfg, "policy"), dqn_batch


def test_dqn_copies_its_target_every_target_update_freq_updates() -> None:
    policy, dqn_batch = dqn_policy("policy.learn.target_update_freq=3")
    target = policy._target_model
    same = []
    for _ in range(6):
        policy.learn_mode.forward(dqn_batch)
        same.append(all(torch.equal(t, o) for t, o in zip(target.parameters(), policy._model.parameters(),
                                                          strict=True)))
    assert same == [False, False, True, False, False, True]


def test_lr_decay_iter_anneals_every_optimiser_to_zero_and_resumes_where_it_was() -> None:
    policy, dqn_batch = dqn_policy("policy.learn.learning_rate=0.004", "policy.learn.lr_decay_iter=4")
    optimizer = policy._learn_state["optimizer"]
    rates = []
    for _ in range(2):
        rates.append(optimizer.param_groups[0]["lr"])
        policy.learn_mode.forward(dqn_batch)
    state = policy.learn_mode.state_dict()  # a checkpoint after 2 of the 4 updates
    resumed, _ = dqn_policy("policy.learn.learning_rate=0.004", "policy.learn.lr_decay_iter=4")
    resumed.learn_mode.load_state_dict(state)
    for _ in range(3):
        rates.append(resumed._learn_state["optimizer"].param_groups[0]["lr"])
        before = snapshot(resumed._model)
        resumed.learn_mode.forward(dqn_batch)
    # 0.004 * (1 - k / 4) before update k; the fifth update steps by 0 and moves no weight
    assert rates == pytest.approx([0.004, 0.003, 0.002, 0.001, 0.0])
    assert not changed(resumed._model, before)
    sac = continuous_policy("sac", "policy.learn.lr_decay_iter=2")
    for _ in range(2):
        sac.learn_mode.forward(batch())
    assert [o.param_groups[0]["lr"] for o in sac._optimizers.values()] == [0.0] * len(sac._optimizers)


def test_td3_lr_decay_anneals_by_train_iter_without_torch_warning_of_the_delayed_actor() -> None:
    # TD3's actor steps at updates d-1, 2d-1, ...: its schedule stepped at update 0, before the actor's optimiser had
    # ever stepped, and torch printed its UserWarning "lr_scheduler.step() before optimizer.step()" in every such run
    td3 = continuous_policy("td3", "policy.learn.lr_decay_iter=4", "policy.learn.actor_update_freq=2")
    actor = td3._optimizers["actor"]
    rates = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            td3.learn_mode.forward(batch())
            rates.append(actor.param_groups[0]["lr"] / actor.param_groups[0]["initial_lr"])
    assert rates == pytest.approx([0.75, 0.5, 0.25])  # by train iteration, as the critic's


def test_td3_lr_decay_leaves_pythons_once_per_place_warnings_shown_once() -> None:
    # the delayed actor's torch warning was silenced with warnings.catch_warnings() at every update the actor did not
    # step, which resets Python's record of the warnings shown: an env's once-per-place warning came back each time
    td3 = continuous_policy("td3", "policy.learn.lr_decay_iter=100", "policy.learn.actor_update_freq=2")
    td3.learn_mode.forward(batch())  # the first update still resets it (the actor's schedule's first step)
    shown = []
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, *args, **kwargs: shown.append(str(message))
        for _ in range(6):
            warnings.warn("an env's warning", UserWarning, stacklevel=1)  # Python's default: once per place
            td3.learn_mode.forward(batch())
    assert shown == ["an env's warning"]


@pytest.mark.parametrize("policy_type", ["sac", "td3"])
def test_priorities_are_the_mean_absolute_td_error_of_the_critics(policy_type: str) -> None:
    policy = continuous_policy(policy_type, "policy.priority=True")
    log = policy.learn_mode.forward(batch())
    assert log[PRIORITY].shape == (8,) and (log[PRIORITY] > 0).all()
    assert PRIORITY not in continuous_policy(policy_type).learn_mode.forward(batch())


def test_importance_weights_scale_the_critic_loss_only_when_asked() -> None:
    weighted = batch()
    weighted[WEIGHT] = np.zeros(8, np.float32)
    policy = continuous_policy("sac", "policy.priority_IS_weight=True")
    critic = snapshot(policy._model.critic)
    log = policy.learn_mode.forward(weighted)
    assert log["critic_loss"].item() == 0.0 and not changed(policy._model.critic, critic)
    assert continuous_policy("sac").learn_mode.forward(weighted)["critic_loss"].item() > 0  # weights ignored


def assert_same_runs(ours: tuple[list, list], ref: tuple[list, list]) -> None:
    """Two runs' (weights, logs) equal to float32 rounding."""
    for a, b in zip(ours[0], ref[0], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours[1], ref[1], strict=True):
        assert a.keys() == b.keys()
        for key in a:
            torch.testing.assert_close(torch.as_tensor(a[key]), torch.as_tensor(b[key]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy_type", ["sac", "td3"])
def test_the_written_out_critic_gradient_makes_autograds_update(policy_type: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The critic stage's hand-written gradient (Critics.regression_backward) against the same update taken through
    autograd: equal weights after two updates (both stages), equal logs and priorities, importance weights on."""
    weighted = batch()
    weighted[WEIGHT] = np.linspace(0.2, 1.0, 8, dtype=np.float32)
    overrides = ("policy.priority=True", "policy.priority_IS_weight=True", "policy.learn.actor_update_freq=1") \
        if policy_type == "td3" else ("policy.priority=True", "policy.priority_IS_weight=True")
    runs = []
    for written in (True, False):
        torch.manual_seed(3)
        policy = continuous_policy(policy_type, *overrides)
        if not written:
            monkeypatch.setattr(type(policy._model.critic), "regression_backward", lambda *args, **kwargs: None)
        torch.manual_seed(4)
        logs = [policy.learn_mode.forward(weighted) for _ in range(2)]
        runs.append((snapshot(policy._model), logs))
        monkeypatch.undo()
    assert_same_runs(*runs)


def _written_or_autograd(actor_type: type, written: bool, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The actor's written-out backward, counted (so a test sees that the path under test ran), or no written-out
    forward (the stage falls back to autograd); the list of counted calls."""
    calls: list[int] = []
    if written:
        def counted(self: object, *args: object, original=actor_type.backward_from) -> None:
            calls.append(1)
            original(self, *args)

        monkeypatch.setattr(actor_type, "backward_from", counted)
    else:
        monkeypatch.setattr(actor_type, "forward_for_backward", lambda *args, **kwargs: None)
    return calls


@pytest.mark.parametrize("auto_alpha", [True, False])
def test_the_written_out_actor_gradient_makes_autograds_update(auto_alpha: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """SAC's actor stage with its gradients written out (GaussianActor.forward_for_backward and backward_from,
    sac_actor_loss_gradients, log alpha's) against the same stage through autograd: equal weights, temperature and
    logs after three whole updates (the same noise draws on both sides)."""
    runs = []
    for written in (True, False):
        torch.manual_seed(3)
        policy = continuous_policy("sac", f"policy.learn.auto_alpha={auto_alpha}")
        calls = _written_or_autograd(type(policy._model.actor), written, monkeypatch)
        start = policy._temperature.log_alpha.detach().clone()
        torch.manual_seed(4)
        logs = [policy.learn_mode.forward(batch()) for _ in range(3)]
        assert len(calls) == (3 if written else 0)
        moved = not torch.equal(policy._temperature.log_alpha.detach(), start)
        assert moved == auto_alpha  # the temperature is learnt, or held
        runs.append((snapshot(policy._model) + [policy._temperature.log_alpha.detach().clone()], logs))
        monkeypatch.undo()
    assert_same_runs(*runs)


def test_td3s_written_out_actor_stage_makes_autograds_update(monkeypatch: pytest.MonkeyPatch) -> None:
    """TD3's actor stage written out (TanhActor.forward_for_backward / backward_from, Q_1's action gradient by
    Critics.min_value_action_grad(first_only=True)) against the same stage through autograd: equal weights (actor,
    critics, targets) and logs after four updates, two of them with the actor's step."""
    runs = []
    for written in (True, False):
        torch.manual_seed(3)
        policy = continuous_policy("td3")
        calls = _written_or_autograd(type(policy._model.actor), written, monkeypatch)
        torch.manual_seed(4)
        logs = [policy.learn_mode.forward(batch()) for _ in range(4)]
        assert len(calls) == (2 if written else 0)
        assert sum("actor_loss" in log for log in logs) == 2
        runs.append((snapshot(policy._model) + [p.detach().clone() for p in policy._target_actor.parameters()],
                     logs))
        monkeypatch.undo()
    assert_same_runs(*runs)
