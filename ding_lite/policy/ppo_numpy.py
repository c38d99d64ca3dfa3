"""PPO's passes written out in NumPy for the value actor-critic (``vac``) of MLPs on the CPU: acting (collect and
eval) and the gradient step, with the same maths as the torch path (the same gradients as autograd's, up to float32
rounding, and the same random draws from torch's generator), several times faster on RL's small networks.

On Hopper's two 64x64 tanh nets a PPO minibatch took 0.95 ms through autograd and takes about 0.3 ms here, the fused
Adam step included; acting on 4 observations took about 100 µs through the torch modules and takes about 25 µs
(:mod:`ding_lite.model.numpy_mlp` says where the time goes). With CleanRL's MuJoCo settings PPO runs 320 minibatches
and 2,048 actions per 2,048 env steps, so these passes were most of a training run's time.

What it covers: a ``vac`` model whose actor and critic are separate chains of Linear layers with tanh or ReLU
(:meth:`NumpyMLP.of`), a categorical actor (action masks too) or a Gaussian one with a state-independent log-std,
observation normalisation inside the model or none, float32 parameters on the CPU. Anything else (a conv encoder, a
shared encoder, a state-dependent log-std, a GPU) runs through the torch modules and autograd, as does a subclass
that changes the loss.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import torch
from torch import nn

import ding_lite.policy.ppo_jit as ppo_jit
from ding_lite.data.keys import ACTION, ACTION_MASK, ADV, LOGP, OBS, RETURN, VALUE
from ding_lite.model.normalizer import RunningObsNorm
from ding_lite.model.numpy_mlp import NumpyMLP
from ding_lite.rl_utils.ppo import check_dual_clip
from ding_lite.rl_utils.ppo_grad import (
    categorical_log_prob,
    categorical_log_prob_grad,
    gaussian_log_prob,
    gaussian_log_prob_grad,
    gaussian_log_prob_of_noise,
    log_softmax,
    ppo_policy_loss_grad,
    ppo_value_loss_grad,
)
from ding_lite.rl_utils.running_stats import RunningMeanStd

_HALF_LOG_2PI = 0.5 * float(np.log(2.0 * np.pi))
_EMPTY = np.zeros(0, dtype=np.float32)
_NO_MASK = np.zeros((0, 0), dtype=bool)


class NumpyVAC:
    """A ``vac`` model's passes in NumPy on its own parameters' memory: :meth:`act` (collect), :meth:`greedy`
    (eval) and :meth:`step` (one PPO minibatch's loss, its gradients written into the parameters' ``.grad``; the
    caller steps the optimiser). Build it with :meth:`build` (None where the model is not covered).

    ``jit``: run the passes compiled by numba (:mod:`ding_lite.policy.ppo_jit`: the same maths, one call per pass;
    where numba is not installed, the NumPy ops); False: the NumPy ops (numba is not imported)."""

    def __init__(self, model: nn.Module, actor: NumpyMLP, critic: NumpyMLP, jit: bool = True) -> None:
        self.model, self.actor, self.critic = model, actor, critic
        self.jit = bool(jit) and ppo_jit.compile_all()
        self._jit_nets: tuple = ()
        self._jit_grads: tuple = ()
        self.continuous = bool(getattr(model, "continuous", False))
        norm = getattr(model, "obs_norm", None)
        self.obs_norm = norm if isinstance(norm, RunningObsNorm) else None
        self.params: list[torch.Tensor] = []
        self.log_std: nn.Parameter | None = None
        self._log_std = np.zeros(0, dtype=np.float32)
        self._memory: list[int] = []
        self._refresh()
        self._flat_grad = np.zeros(0, dtype=np.float32)
        self._actor_grads: list[np.ndarray] = []
        self._critic_grads: list[np.ndarray] = []
        self._log_std_grad = np.zeros(0, dtype=np.float32)

    @classmethod
    def build(cls, model: nn.Module, jit: bool = True) -> NumpyVAC | None:
        """The passes of ``model``, or None where it must run through torch (see the module's docstring)."""
        from ding_lite.model.templates import VAC

        if type(model) is not VAC or model.actor_encoder is model.critic_encoder:
            return None
        if model.continuous and not model.fixed_sigma:
            return None
        if not isinstance(model.obs_norm, (RunningObsNorm, nn.Identity)):
            return None
        actor = NumpyMLP.of([model.actor_encoder, model.actor_trunk, model.actor_head])
        critic = NumpyMLP.of([model.critic_encoder, model.critic_trunk, model.critic_head])
        if actor is None or critic is None:
            return None
        if model.continuous and (model.log_std.device.type != "cpu" or model.log_std.dtype != torch.float32 or
                                 not model.log_std.requires_grad):
            return None
        built = cls(model, actor, critic, jit)
        if {id(p) for p in built.params} != {id(p) for p in model.parameters()}:  # one the passes would miss
            return None
        return built

    # ---- acting ------------------------------------------------------------------------------------------------
    def act(self, obs: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(action, log-prob, value)`` of a batch of observations: a draw from the actor's distribution, as the
        torch path draws it (``torch.randn`` for the Gaussian's noise, ``torch.multinomial`` for a categorical), and
        the critic's value (normalised, as the critic gives it)."""
        self._refresh()
        if self.jit:
            out, value = ppo_jit.forward_pair(self._rows(obs), *self._norm_stats(), *self._jit_nets, True)
        else:
            x = self._features(obs)
            out, value = self.actor.forward(x), self.critic.forward(x)[:, 0]
        if self.log_std is not None:
            z = torch.randn(out.shape).numpy()
            if self.jit:
                action, logp = ppo_jit.gaussian_draw(out, self._log_std, z)
                return action, logp, value
            return np.exp(self._log_std) * z + out, gaussian_log_prob_of_noise(z, self._log_std), value
        log_pi = log_softmax(out, mask)
        action = torch.multinomial(torch.from_numpy(np.exp(log_pi)), 1, True).numpy()[:, 0]
        return action, np.take_along_axis(log_pi, action[:, None], axis=-1)[:, 0], value

    def greedy(self, obs: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """The eval mode's action: the Gaussian's mean, or the most probable legal action."""
        self._refresh()
        if self.jit:
            out = ppo_jit.forward_pair(self._rows(obs), *self._norm_stats(), *self._jit_nets, False)[0]
        else:
            out = self.actor.forward(self._features(obs))
        if self.log_std is not None:
            return out
        return (out if mask is None else np.where(mask, out, -np.inf)).argmax(axis=-1)

    # ---- learning ----------------------------------------------------------------------------------------------
    def begin_learning(self) -> None:
        """Before the steps of one learn call: give every parameter a slice of one flat gradient buffer (their
        global norm is then one dot product)."""
        self._refresh()
        flat = torch.zeros(sum(p.numel() for p in self.params))
        views, offset = [], 0
        for p in self.params:
            p.grad = flat[offset:offset + p.numel()].view_as(p)
            views.append(p.grad.numpy())
            offset += p.numel()
        self._flat_grad = flat.numpy()
        n_actor, n_critic = len(self.actor.params), len(self.critic.params)
        self._actor_grads, self._critic_grads = views[:n_actor], views[n_actor:n_actor + n_critic]
        self._log_std_grad = views[-1] if self.log_std is not None else np.zeros(0, dtype=np.float32)
        if self.jit:  # weight and bias gradients of each net, as the compiled step takes them
            actor, critic = self._actor_grads, self._critic_grads
            self._jit_grads = tuple(tuple(g) for g in (actor[0::2], actor[1::2], critic[0::2], critic[1::2]))

    def step(self, mb: Mapping[str, torch.Tensor | np.ndarray], learn: Mapping[str, Any],
             value_stats: RunningMeanStd | None) -> tuple[dict[str, torch.Tensor], torch.Tensor, float]:
        """One minibatch of CPU tensors or NumPy arrays (``obs``, ``action``, ``logp``, ``adv`` normalised already,
        ``return``, ``value``, optionally ``action_mask``): writes the gradients of ``policy_loss + value_weight *
        value_loss - entropy_weight * entropy`` and returns ``(the losses as 0-dim tensors, log(pi / mu) (B,), the
        global gradient norm)``. ``value_stats``: the return statistics under ``learn.value_norm`` (targets and old
        values are normalised by them)."""
        if self.jit:
            return self._step_compiled(mb, learn, value_stats)
        x = self._features(_array(mb[OBS]))
        out, actor_inputs = self.actor.forward_keep(x)
        value, critic_inputs = self.critic.forward_keep(x)
        action = _array(mb[ACTION])
        mask = _array(mb[ACTION_MASK]) if ACTION_MASK in mb else None
        if self.log_std is not None:
            logp, z = gaussian_log_prob(out, self._log_std, action.reshape(out.shape).astype(np.float32, copy=False))
            entropy = float(self._log_std.sum()) + (0.5 + _HALF_LOG_2PI) * out.shape[-1]
        else:
            logp, log_pi, entropies = categorical_log_prob(out, action, mask)
            entropy = float(entropies.mean())
        policy_loss, grad_logp, log_ratio = ppo_policy_loss_grad(
            logp, _f32(mb[LOGP]), _f32(mb[ADV]), float(learn["clip_ratio"]), learn["dual_clip"])
        target, old_value = _f32(mb[RETURN]), _f32(mb[VALUE])
        if value_stats is not None:
            target, old_value = value_stats.normalize(target), value_stats.normalize(old_value)
        value_loss, grad_value = ppo_value_loss_grad(value[:, 0], old_value, target, learn["value_clip_ratio"])
        value_weight, entropy_weight = float(learn["value_weight"]), float(learn["entropy_weight"])
        if self.log_std is not None:
            grad_out, grad_log_std = gaussian_log_prob_grad(z, self._log_std, grad_logp)
            np.subtract(grad_log_std, entropy_weight, out=self._log_std_grad)  # d(-c H)/d log_std = -c
        else:
            grad_out = categorical_log_prob_grad(log_pi, entropies, action, grad_logp, -entropy_weight / len(x), mask)
        self.actor.backward(actor_inputs, grad_out, self._actor_grads)
        self.critic.backward(critic_inputs, (grad_value * value_weight)[:, None], self._critic_grads)
        return self._step_result(policy_loss, value_loss, entropy, value_weight, entropy_weight, log_ratio)

    def _step_compiled(self, mb: Mapping[str, torch.Tensor | np.ndarray], learn: Mapping[str, Any],
                       value_stats: RunningMeanStd | None) -> tuple[dict[str, torch.Tensor], torch.Tensor, float]:
        """:meth:`step` as one compiled call (:mod:`ding_lite.policy.ppo_jit`)."""
        obs = self._rows(_array(mb[OBS]))
        target, old_value = _f32(mb[RETURN]), _f32(mb[VALUE])
        if value_stats is not None:
            target, old_value = value_stats.normalize(target), value_stats.normalize(old_value)
        dual_clip, value_clip = learn["dual_clip"], learn["value_clip_ratio"]
        check_dual_clip(dual_clip)
        value_weight, entropy_weight = float(learn["value_weight"]), float(learn["entropy_weight"])
        log_ratio = np.empty(len(obs), dtype=np.float32)
        common = (_f32(mb[LOGP]), _f32(mb[ADV]), np.ascontiguousarray(target), np.ascontiguousarray(old_value),
                  *self._jit_nets)
        settings = (float(learn["clip_ratio"]), 0.0 if dual_clip is None else float(dual_clip),
                    -1.0 if value_clip is None else float(value_clip), value_weight, entropy_weight, log_ratio)
        if self.log_std is not None:
            action = np.ascontiguousarray(_array(mb[ACTION]).reshape(len(obs), -1), dtype=np.float32)
            policy_loss, value_loss, entropy = ppo_jit.step_gaussian(
                obs, *self._norm_stats(), action, *common, self._log_std, *self._jit_grads, self._log_std_grad,
                *settings)
        else:
            action = np.ascontiguousarray(_array(mb[ACTION]).reshape(-1), dtype=np.int64)
            mask = np.ascontiguousarray(_array(mb[ACTION_MASK]), dtype=bool) if ACTION_MASK in mb else _NO_MASK
            policy_loss, value_loss, entropy = ppo_jit.step_categorical(
                obs, *self._norm_stats(), action, mask, *common, *self._jit_grads, *settings)
        return self._step_result(policy_loss, value_loss, entropy, value_weight, entropy_weight, log_ratio)

    def _step_result(self, policy_loss: float, value_loss: float, entropy: float, value_weight: float,
                     entropy_weight: float, log_ratio: np.ndarray
                     ) -> tuple[dict[str, torch.Tensor], torch.Tensor, float]:
        total_loss = policy_loss + value_weight * value_loss - entropy_weight * entropy
        # 0-dim tensors, as the autograd path logs (views of one array: one conversion, not four)
        scalars = torch.from_numpy(np.array([total_loss, policy_loss, value_loss, entropy], dtype=np.float32))
        log = dict(zip(("total_loss", "policy_loss", "value_loss", "entropy"), scalars.unbind(), strict=True))
        return log, torch.from_numpy(log_ratio), float(np.sqrt(np.dot(self._flat_grad, self._flat_grad)))

    # ---- helpers -----------------------------------------------------------------------------------------------
    def _features(self, obs: np.ndarray) -> np.ndarray:
        """The MLPs' float32 input rows: the observations normalised (inside the model's ``obs_norm``) and
        flattened."""
        obs = np.asarray(obs)
        if self.obs_norm is not None:
            obs = self.obs_norm.normalize_numpy(obs)
        return obs.reshape(len(obs), -1).astype(np.float32, copy=False)

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles (``copy.deepcopy`` of a policy, Ray) come back with copies of the NumPy views, not
        views of the copy's parameters: forgetting the memory they were read from (and dropping the compiled
        passes' tuples of them) makes the copy read its own weights at its first pass."""
        state = dict(self.__dict__)
        state.update(_jit_nets=(), _jit_grads=(), _memory=[])
        return state

    @staticmethod
    def _rows(obs: np.ndarray) -> np.ndarray:
        """Observations as C-ordered rows ``(B, features)`` (the compiled passes' input)."""
        obs = np.asarray(obs)
        return np.ascontiguousarray(obs.reshape(len(obs), -1))

    def _norm_stats(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The observation normalisation as the compiled passes apply it (empty: none)."""
        return self.obs_norm.numpy_stats() if self.obs_norm is not None else (_EMPTY, _EMPTY, 0.0)

    def _refresh(self) -> None:
        """Read the weights again where a parameter's memory changed (``.data`` replaced, or the model moved): the
        NumPy views would otherwise keep the old arrays. A few µs per call."""
        memory = [p.data_ptr() for p in self.params]
        if memory == self._memory and memory:
            return
        self.actor = NumpyMLP(self.actor.linears, self.actor.activations)
        self.critic = NumpyMLP(self.critic.linears, self.critic.activations)
        self.log_std = cast(nn.Parameter, self.model.log_std) if self.continuous else None
        self.params = self.actor.params + self.critic.params + ([self.log_std] if self.log_std is not None else [])
        self._log_std = self.log_std.detach().numpy() if self.log_std is not None else np.zeros(0, dtype=np.float32)
        self._memory = [p.data_ptr() for p in self.params]
        if self.jit:
            self.jit = all(w.flags.c_contiguous and b.flags.c_contiguous
                           for w, b in self.actor.weights + self.critic.weights)
        if self.jit:  # the nets as the compiled passes take them: weights, biases (tuples), activation codes
            self._jit_nets = tuple(x for net in (self.actor, self.critic) for x in (
                tuple(w for w, _ in net.weights), tuple(b for _, b in net.weights),
                ppo_jit.activation_codes(net.activations)))


def _array(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """A minibatch column as NumPy (PPO's learn loop hands the written-out step NumPy views of its columns)."""
    return x if isinstance(x, np.ndarray) else x.numpy()


def _f32(t: torch.Tensor | np.ndarray) -> np.ndarray:
    return _array(t).astype(np.float32, copy=False)
