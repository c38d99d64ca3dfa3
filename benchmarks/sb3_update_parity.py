"""ding_lite's SAC and TD3 updates against Stable-Baselines3's, from the same weights, on the same batches and noise.

Three sides make ``--updates`` updates on one stream of random batches of 256 (Hopper-v4's shapes): ding_lite's
dizoo Hopper-v4 policy, a copy of it whose written-out gradients are turned off (autograd, the same maths computed
another way), and SB3 with rl-zoo's settings (as ``offpolicy_mujoco.py`` builds it) starting from ding_lite's weights
and targets (the same layer sizes), its replay sample replaced by the batch. The Gaussian draws are the same: TD3's
target smoothing from the same generator state per update; SAC's reparameterised draws are recorded on ding_lite's
side and handed to SB3's ``Normal.rsample`` in SB3's order (the draw for s first, then the one for s').

It prints:

- at updates 1 and 2, the gradients each optimiser stepped on (SB3's captured as its optimiser steps: after
  ``train`` its critics hold the actor loss's gradient instead), as the largest difference relative to the largest
  gradient entry of the group;
- at the updates in ``--at``, the weights of each group (critics, actor, target critics, target actor, SAC's log
  alpha): the largest difference from SB3 relative to the group's largest weight, and in brackets the same between
  ding_lite's two ways of computing the gradient: how far float32 rounding alone moves the weights.

Two differences by design are removed unless ``--as-shipped``: SB3's TD3 critic loss is sum_j of the mean squared
errors where ding_lite's (and SB3's SAC's) is 1/2 sum_j (Adam with eps on twice a loss is Adam with eps / 2: ding_lite's
critic optimiser gets eps / 2 here); SB3's squash correction is log(1 - tanh(u)^2 + 1e-6) where ding_lite's is exact
(2 (log 2 - u - softplus(-2u))): SB3's epsilon is set to 0 here.

    python benchmarks/sb3_update_parity.py [--algos td3 sac] [--updates 200] [--at 1 2 10 50] [--as-shipped]
                                           [--gradient-dtype bfloat16] [--env-id InvertedPendulum-v4]

ding_lite's side runs its gradient-only products in float32 unless ``--gradient-dtype bfloat16`` (the MuJoCo
configs' setting, which rounds them: the gradients of updates 1 and 2 then differ from SB3's by 7e-5 to 6e-3 of
their largest entry, not 1e-7).
"""
from __future__ import annotations

import argparse
import collections
import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's ding_lite, not an installed one
sys.path.insert(0, str(ROOT / "benchmarks"))

ENV_ID = "Hopper-v4"
BATCH = 256


def ding_policy(algo: str, obs_size: int, act_size: int, gradient_dtype: str) -> Any:
    from ding_lite.build import build, load_config

    cfg = load_config(str(ROOT / "dizoo" / "mujoco" / "hopper" / "config" / f"hopper_{algo}_config.py"), seed=0,
                      overrides=[f"policy.model.obs_shape={obs_size}", f"policy.model.action_shape={act_size}",
                                 "policy.model.action_low=-1.0", "policy.model.action_high=1.0",
                                 f"policy.learn.gradient_dtype={gradient_dtype}"])
    return build(cfg, "policy")


def pairs(algo: str, ding: dict[str, Any], sb3: dict[str, Any], act_size: int) -> dict[str, list[tuple[Any, Any]]]:
    """(ding_lite tensor, SB3 tensor) per parameter group; ``ding`` is ding_lite's learn-mode state dict, ``sb3``
    SB3's policy's named parameters (plus ``log_ent_coef``)."""
    layers = ("0", "2", "4")

    model, target_critic = ding["model"], ding["target_critic"]
    groups = {
        "critics": [(model[f"critic.nets.{j}.{k}.{w}"], sb3[f"critic.qf{j}.{k}.{w}"])
                    for j in (0, 1) for k in layers for w in ("weight", "bias")],
        "target critics": [(target_critic[f"nets.{j}.{k}.{w}"], sb3[f"critic_target.qf{j}.{k}.{w}"])
                           for j in (0, 1) for k in layers for w in ("weight", "bias")],
    }
    if algo == "td3":
        groups["actor"] = [(model[f"actor.net.{k}.{w}"], sb3[f"actor.mu.{k}.{w}"]) for k in layers
                           for w in ("weight", "bias")]
        groups["target actor"] = [(ding["target_actor"][f"net.{k}.{w}"], sb3[f"actor_target.mu.{k}.{w}"])
                                  for k in layers for w in ("weight", "bias")]
    else:  # ding_lite's last actor layer gives (mu, log_std) in one; SB3 has a head for each
        actor = [(model[f"actor.net.{k}.{w}"], sb3[f"actor.latent_pi.{k}.{w}"]) for k in layers[:2]
                 for w in ("weight", "bias")]
        for w in ("weight", "bias"):
            last = model[f"actor.net.4.{w}"]
            actor += [(last[:act_size], sb3[f"actor.mu.{w}"]), (last[act_size:], sb3[f"actor.log_std.{w}"])]
        groups["actor"] = actor
        groups["log alpha"] = [(ding["temperature"]["log_alpha"], sb3["log_ent_coef"])]
    return groups


def batches(obs_size: int, act_size: int, seed: int) -> Iterator[dict[str, Any]]:
    """Random batches of Hopper's shapes: observations N(0, 1), actions in [-1, 1], rewards N(1, 1), 5% terminated."""
    import numpy as np

    rng = np.random.default_rng(seed)
    while True:
        yield dict(obs=rng.standard_normal((BATCH, obs_size)).astype(np.float32),
                   action=rng.uniform(-1, 1, (BATCH, act_size)).astype(np.float32),
                   reward=(1.0 + rng.standard_normal(BATCH)).astype(np.float32),
                   next_obs=rng.standard_normal((BATCH, obs_size)).astype(np.float32),
                   terminated=rng.random(BATCH) < 0.05)


def parity(algo: str, updates: int, at: list[int], as_shipped: bool, gradient_dtype: str,
           env_id: str = ENV_ID) -> float:
    """Run the three sides side by side (ding_lite, ding_lite through autograd, SB3); print the relative
    differences at the updates in ``at``; return ding_lite's largest difference from SB3 at the last update.
    ``env_id``: the env whose observation and action sizes the nets take (Hopper-v4's settings on every side)."""
    import gymnasium as gym
    import torch
    from critic_gradient import autograd_only
    from offpolicy_mujoco import RLZOO, sb3_model
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    env = gym.make(env_id)
    obs_size, act_size = env.observation_space.shape[0], env.action_space.shape[0]
    policy, reference = (ding_policy(algo, obs_size, act_size, gradient_dtype) for _ in range(2))
    state = policy.learn_mode.state_dict()
    RLZOO.setdefault((algo, env_id), RLZOO[(algo, ENV_ID)])  # another env's sizes, Hopper-v4's settings
    model = sb3_model(algo, env_id, seed=0)
    model.set_logger(configure(None, []))
    if not as_shipped:  # remove the two differences by design (module docstring)
        if algo == "td3":  # Adam with eps on SB3's loss (twice ding_lite's) is Adam with eps / 2 on ding_lite's
            for side in (state, reference.learn_mode.state_dict()):
                for group in side["optimizer_critic"]["param_groups"]:
                    group["eps"] = group["eps"] / 2.0
            policy.learn_mode.load_state_dict(state)
        else:
            model.actor.action_dist.epsilon = 0.0
    reference.learn_mode.load_state_dict(state)  # the same weights and optimiser settings
    sb3_params = dict(model.policy.named_parameters())
    if algo == "sac":
        sb3_params["log_ent_coef"] = model.log_ent_coef
    with torch.no_grad():  # SB3 starts from ding_lite's weights (and its targets from ding_lite's targets)
        for group in pairs(algo, policy.learn_mode.state_dict(), sb3_params, act_size).values():
            for ours, theirs in group:
                theirs.copy_(ours)
    stepped = _record_gradients_at_step(model)
    stream = batches(obs_size, act_size, seed=0)
    current: dict[str, Any] = {}
    model.replay_buffer.sample = lambda *args, **kwargs: current["samples"]  # type: ignore[method-assign]
    worst = 0.0
    for k in range(1, updates + 1):
        batch = next(stream)
        stepped.clear()
        current["samples"] = ReplayBufferSamples(
            observations=torch.as_tensor(batch["obs"]), actions=torch.as_tensor(batch["action"]),
            next_observations=torch.as_tensor(batch["next_obs"]),
            dones=torch.as_tensor(batch["terminated"], dtype=torch.float32)[:, None],
            rewards=torch.as_tensor(batch["reward"])[:, None], discounts=None)
        torch.manual_seed(k)
        draws = _recorded(functools.partial(policy.learn_mode.forward, batch))  # SAC: [for s', for s]; TD3: [smoothing]
        torch.manual_seed(k)
        with autograd_only():
            reference.learn_mode.forward(batch)
        torch.manual_seed(k)
        with _replayed(draws[::-1] if algo == "sac" else []):  # SB3's SAC draws for s, then for s'
            model.train(gradient_steps=1, batch_size=BATCH)
        if k <= 2:  # from the same weights (up to rounding): the gradients themselves
            print(f"{algo} update {k:>4}: gradients " + _gradient_gaps(algo, policy, stepped, act_size), flush=True)
        if k in at or k == updates:
            ours = pairs(algo, policy.learn_mode.state_dict(), sb3_params, act_size)
            other_path = pairs(algo, reference.learn_mode.state_dict(), sb3_params, act_size)
            parts, diffs = [], []
            for name, group in ours.items():
                scale = max(float(a.abs().max()) for a, _ in group)
                diffs.append(max(float((a - b).detach().abs().max()) for a, b in group) / scale)
                floor = max(float((a - r).abs().max()) for (a, _), (r, _) in zip(group, other_path[name],
                                                                                  strict=True)) / scale
                parts.append(f"{name} {diffs[-1]:.1e} ({floor:.1e})")
            print(f"{algo} update {k:>4}: weights " + ", ".join(parts), flush=True)
            worst = max(diffs)
    return worst


def _record_gradients_at_step(model: Any) -> dict[str, Any]:
    """SB3's gradients as each of its optimisers steps (name -> gradient, replaced at each step): after ``train``
    its critics' ``.grad`` hold the actor loss's gradient instead, which SB3 computes and does not use."""
    stepped: dict[str, Any] = {}
    for part in ("actor", "critic"):
        module = getattr(model, part)
        optimizer = module.optimizer
        original = optimizer.step

        def step(*args: Any, _part: str = part, _module: Any = module, _original: Any = original,
                 **kwargs: Any) -> Any:
            stepped.update({f"{_part}.{n}": p.grad.clone() for n, p in _module.named_parameters()
                            if p.grad is not None})
            return _original(*args, **kwargs)

        optimizer.step = step
    return stepped


def _gradient_gaps(algo: str, policy: Any, stepped: dict[str, Any], act_size: int) -> str:
    """The relative difference between the two sides' gradients of the last update (critics; the actor where it
    stepped), each from that side's own weights; TD3's critic gradient on ding_lite's side doubled (its loss is
    half SB3's)."""
    state = policy.learn_mode.state_dict()
    factor = 2.0 if algo == "td3" else 1.0
    ours = {n: (p.grad * factor if n.startswith("critic.") else p.grad) if p.grad is not None else None
            for n, p in policy.model.named_parameters()}
    groups = pairs(algo, {**state, "model": ours}, collections.defaultdict(type(None), stepped), act_size)
    parts = []
    for name in ("critics", "actor"):
        if any(a is None or b is None for a, b in groups[name]):
            continue  # TD3's actor did not step in this update
        scale = max(float(a.abs().max()) for a, _ in groups[name])
        parts.append(f"{name} {max(float((a - b).abs().max()) for a, b in groups[name]) / scale:.1e}")
    return ", ".join(parts)


def _recorded(update: Any) -> list[Any]:
    """Run ``update`` and return the tensors ``torch.randn_like`` gave it, in order."""
    import torch

    draws: list[Any] = []
    original = torch.randn_like

    def recording(*args: Any, **kwargs: Any) -> Any:
        draws.append(original(*args, **kwargs))
        return draws[-1]

    torch.randn_like = recording  # type: ignore[assignment]
    try:
        update()
    finally:
        torch.randn_like = original  # type: ignore[assignment]
    return draws


class _replayed:
    """``Normal.rsample`` returns ``loc + eps * scale`` with the given ``eps`` tensors in turn (SB3's SAC draws its
    actions through it)."""

    def __init__(self, eps: list[Any]) -> None:
        self._eps = list(eps)

    def __enter__(self) -> None:
        from torch.distributions import Normal

        self._original = Normal.rsample
        queue = self._eps

        def rsample(dist: Any, sample_shape: Any = ()) -> Any:
            eps = queue.pop(0)
            assert eps.shape == dist.loc.shape, (eps.shape, dist.loc.shape)
            return dist.loc + eps * dist.scale

        Normal.rsample = rsample  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        from torch.distributions import Normal

        Normal.rsample = self._original  # type: ignore[method-assign]
        assert not self._eps, f"SB3 used {2 - len(self._eps)} of the 2 recorded draws"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algos", nargs="+", default=["td3", "sac"], choices=["sac", "td3"])
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--as-shipped", action="store_true",
                        help="keep the two differences by design (the critic loss's factor, SB3's 1e-6)")
    parser.add_argument("--at", type=int, nargs="+", default=[1, 2, 10, 50])
    parser.add_argument("--gradient-dtype", default="float32", choices=["float32", "bfloat16"],
                        help="ding_lite's policy.learn.gradient_dtype (the MuJoCo configs ship bfloat16; float32 "
                             "checks the maths to float32 rounding)")
    parser.add_argument("--env-id", default=ENV_ID, help="the gymnasium env whose observation and action sizes the "
                        "nets take (Hopper-v4's settings on every side), e.g. InvertedPendulum-v4")
    args = parser.parse_args()
    import torch

    from ding_lite.utils.torch_setup import configure_torch

    configure_torch()
    torch.set_flush_denormal(False)  # both sides with torch's default arithmetic
    for algo in args.algos:
        worst = parity(algo, args.updates, args.at, args.as_shipped, args.gradient_dtype, args.env_id)
        print(f"{algo}: largest relative difference after {args.updates} updates {worst:.1e}", flush=True)


if __name__ == "__main__":
    main()
