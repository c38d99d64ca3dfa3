"""PPO's NumPy passes (:mod:`ding_lite.policy.ppo_numpy`) compiled by numba: the whole minibatch step (observation
normalisation, both MLPs' forward passes, the PPO losses and every gradient) is one call, and so is acting on a
batch of observations.

Written out in NumPy a PPO minibatch on Hopper's 64x64 nets is some 150 array ops of about 1-2 µs each, of which only
the dozen matrix products do real work; compiled, the elementwise work runs in loops over the rows and the matrix
products stay BLAS calls, so one step costs little more than its matrix products. Same maths as the NumPy passes and
autograd (equal up to float32 rounding, ``tests/policy/test_ppo_jit.py``); what the numbers are written into is the
same (the parameters' ``.grad`` buffers, the caller steps the optimiser).

numba is a dependency of the package; where it is not installed :data:`AVAILABLE` is False and the NumPy passes run
instead. Nothing is compiled or imported until :func:`compile_all` (the first policy that uses the passes): numba's
import and set-up (it loads ``scipy.linalg`` for BLAS) take about 0.8 s of a process's start, which a run of a few
seconds (CartPole) may rather skip (``policy.numba=False``). The compiled code is cached on disk (numba's
``cache=True``): the first run on a machine compiles for about 10 s, later processes load it.

The functions below are plain Python until :func:`compile_all` replaces each by its numba-compiled version (they call
each other through this module's globals, which is where numba finds them).
"""
from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np

from ding_lite.rl_utils.masks import MASKED_LOGIT

# numba compiles np.dot into calls of scipy's BLAS: without scipy a pass would fail to compile
AVAILABLE = all(importlib.util.find_spec(name) is not None for name in ("numba", "scipy"))

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
TANH, RELU = 0, 1  # activation codes (NumpyMLP.activations' names, as small ints for the compiled code)
_KERNELS: list[str] = []  # the names compile_all compiles, in definition order
_compiled = False


def _jit(fn: Any) -> Any:
    """Mark a module-level function for :func:`compile_all`."""
    _KERNELS.append(fn.__name__)
    return fn


def compile_all() -> bool:
    """Replace the kernels by their numba versions (once; compiled at each's first call, or loaded from numba's
    cache). False where numba is missing or fails to import: the caller uses the NumPy passes."""
    global _compiled
    if not AVAILABLE:
        return False
    if _compiled:
        return True
    try:
        import numba
        import scipy.linalg.cython_blas  # noqa: F401  (what numba's np.dot calls)
    except ImportError:  # pragma: no cover - installed but broken
        return False
    namespace = globals()
    # error_model="numpy": a division by zero gives inf/nan, as in NumPy, instead of a check that stops the loops
    # from being vectorised
    namespace["_tanh"] = numba.njit(inline="always", error_model="numpy")(namespace["_tanh"])
    for name in _KERNELS:
        namespace[name] = numba.njit(cache=True, nogil=True, error_model="numpy")(namespace[name])
    _compiled = True
    return True


def _lambert_tanh(depth: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The coefficients (highest power first) of P and Q in tanh(x) ~ x P(x^2) / Q(x^2), Lambert's continued fraction
    tanh x = x / (1 + x^2 / (3 + x^2 / (5 + ...))) cut after ``depth`` levels (all coefficients positive integers)."""
    num, den = [2.0 * depth + 1.0], [1.0]  # the innermost level, as a ratio of polynomials in t = x^2
    for k in range(depth - 1, -1, -1):  # level k: (2k + 1) + t / (level k + 1)
        new = [0.0] * max(len(num), len(den) + 1)
        for i, c in enumerate(num):
            new[i] += (2 * k + 1) * c
        for i, c in enumerate(den):
            new[i + 1] += c
        num, den = new, num
    return tuple(den[::-1]), tuple(num[::-1])


# tanh in the compiled loops: libm's tanhf is one call per number (26 µs for a 64x64 layer against NumPy's 2 µs);
# this rational form vectorises (about 4 µs). Cut after 13 levels and evaluated in float64, it is within one float32
# ulp of tanh (0.52 at most; NumPy's float32 tanh: 1.3) for |x| <= 9.5 (tests/policy/test_ppo_jit.py); beyond,
# float32's tanh is +-1 and so is this.
_TANH_P, _TANH_Q = _lambert_tanh(13)
_TANH_LIMIT = 9.5


def _tanh(v: float) -> float:
    x = min(max(v, -_TANH_LIMIT), _TANH_LIMIT)
    t = x * x
    p = 0.0
    for c in _TANH_P:
        p = p * t + c
    q = 0.0
    for c in _TANH_Q:
        q = q * t + c
    return x * p / q


def activation_codes(names: list[str]) -> np.ndarray:
    """``NumpyMLP.activations`` as the compiled passes take them (TANH / RELU per hidden layer)."""
    return np.array([TANH if n == "tanh" else RELU for n in names], dtype=np.int64)


# ---- the pieces (plain Python until compile_all; uncompiled, only the tests call them) ---------------------
@_jit
def _features(obs, shift, scale, clip):  # type: ignore[no-untyped-def]
    """float32 rows of ``obs`` (B, D), normalised as ``RunningObsNorm`` does where ``shift`` is not empty."""
    rows, cols = obs.shape
    x = np.empty((rows, cols), dtype=np.float32)
    if shift.shape[0] == 0:
        for i in range(rows):
            for j in range(cols):
                x[i, j] = np.float32(obs[i, j])
        return x
    hi = np.float32(clip)
    lo = -hi
    for i in range(rows):
        for j in range(cols):
            v = (np.float32(obs[i, j]) - shift[j]) * scale[j]
            x[i, j] = min(max(v, lo), hi)
    return x


@_jit
def _forward(x, weights, biases, acts, inputs):  # type: ignore[no-untyped-def]
    """The MLP's output (B, out); each layer's input appended to ``inputs`` (x, then the hidden activations)."""
    h = x
    last = len(weights) - 1
    zero = np.float32(0.0)
    for k in range(last + 1):
        inputs.append(h)
        out = np.dot(h, weights[k].T)
        b = biases[k]
        cols = out.shape[1]
        for i in range(out.shape[0]):
            row = out[i]  # row by row: the inner loops vectorise
            if k < last and acts[k] == TANH:
                for j in range(cols):
                    row[j] = np.float32(_tanh(np.float64(row[j] + b[j])))
            elif k < last:
                for j in range(cols):
                    row[j] = max(row[j] + b[j], zero)
            else:
                for j in range(cols):
                    row[j] += b[j]
        h = out
    return h


@_jit
def _backward(inputs, g, weights, acts, grad_weights, grad_biases):  # type: ignore[no-untyped-def]
    """From dL/d(output) ``g`` (B, out): every layer's weight and bias gradient written into ``grad_weights`` and
    ``grad_biases`` (replacing what was there); tanh's derivative 1 - h^2, ReLU's h > 0 (of the layer's output)."""
    for k in range(len(weights) - 1, -1, -1):
        grad_weights[k][:, :] = np.dot(g.T, inputs[k])
        gb = grad_biases[k]
        cols = g.shape[1]
        gb[:] = 0.0
        for i in range(g.shape[0]):
            row = g[i]
            for j in range(cols):
                gb[j] += row[j]
        if k > 0:
            g = np.dot(g, weights[k])
            h = inputs[k]
            cols = g.shape[1]
            one, zero = np.float32(1.0), np.float32(0.0)
            for i in range(g.shape[0]):
                row, act = g[i], h[i]
                if acts[k - 1] == TANH:
                    for j in range(cols):
                        row[j] *= one - act[j] * act[j]
                else:
                    for j in range(cols):
                        row[j] = row[j] if act[j] > zero else zero


@_jit
def _policy_loss_grad(logp, logp_old, adv, clip_ratio, dual_clip, log_ratio):  # type: ignore[no-untyped-def]
    """``ppo_grad.ppo_policy_loss_grad``: returns ``(loss, dloss/dlogp)`` and fills ``log_ratio``; ``dual_clip``
    <= 0: off."""
    n = logp.shape[0]
    lo, hi = np.float32(1.0 - clip_ratio), np.float32(1.0 + clip_ratio)
    scale = np.float32(-1.0 / n)
    grad = np.empty(n, dtype=np.float32)
    total = 0.0
    for b in range(n):
        lr = logp[b] - logp_old[b]
        log_ratio[b] = lr
        ratio = np.exp(lr)
        a = adv[b]
        unclipped = ratio * a
        clipped = min(max(ratio, lo), hi) * a
        objective = min(unclipped, clipped)
        g = unclipped if unclipped <= clipped else np.float32(0.0)
        if dual_clip > 0.0 and a < 0.0:
            bound = np.float32(dual_clip) * a
            if bound > objective:  # the floor binds: no gradient
                objective, g = bound, np.float32(0.0)
            elif bound == objective:  # torch.max's tie: half to each side
                g = np.float32(0.5) * g
        total += objective
        grad[b] = g * scale
    return total * scale, grad


@_jit
def _value_loss_grad(value, old_value, target, clip_ratio, weight):  # type: ignore[no-untyped-def]
    """``ppo_grad.ppo_value_loss_grad`` with the gradient times ``weight`` as (B, 1); ``clip_ratio`` < 0: off."""
    n = value.shape[0]
    scale = np.float32(1.0 / n)
    grad = np.empty((n, 1), dtype=np.float32)
    total = 0.0
    eps = np.float32(clip_ratio)
    for b in range(n):
        error = value[b, 0] - target[b]
        if clip_ratio < 0.0:
            total += error * error
            g = error
        else:
            delta = value[b, 0] - old_value[b]
            clipped_error = old_value[b] + min(max(delta, -eps), eps) - target[b]
            sq, clipped_sq = error * error, clipped_error * clipped_error
            grad_clipped = clipped_error if abs(delta) <= eps else np.float32(0.0)
            if sq > clipped_sq:
                g = error
            elif sq < clipped_sq:
                g = grad_clipped
            else:
                g = np.float32(0.5) * (error + grad_clipped)
            total += max(sq, clipped_sq)
        grad[b, 0] = g * scale * np.float32(weight)
    return 0.5 * total * scale, grad


@_jit
def _log_softmax(logits, mask):  # type: ignore[no-untyped-def]
    """``ppo_grad.log_softmax`` (mask of shape (0, 0): none)."""
    rows, cols = logits.shape
    out = np.empty((rows, cols), dtype=np.float32)
    masked = mask.shape[0] > 0
    for i in range(rows):
        for j in range(cols):
            out[i, j] = logits[i, j] if not masked or mask[i, j] else np.float32(MASKED_LOGIT)
        top = out[i, 0]
        for j in range(1, cols):
            top = max(top, out[i, j])
        total = np.float32(0.0)
        for j in range(cols):
            out[i, j] -= top
            total += np.exp(out[i, j])
        log_total = np.log(total)
        for j in range(cols):
            out[i, j] -= log_total
    return out


@_jit
def _noise_log_prob(z, log_std):  # type: ignore[no-untyped-def]
    """``ppo_grad.gaussian_log_prob_of_noise``: log N(mu + sigma z; mu, sigma) (B,) = -|z|^2 / 2 - sum log sigma -
    A log(2 pi) / 2."""
    rows, dims = z.shape
    const = np.float32(0.0)
    for j in range(dims):
        const += log_std[j]
    const += np.float32(_HALF_LOG_2PI * dims)
    logp = np.empty(rows, dtype=np.float32)
    for i in range(rows):
        sq = np.float32(0.0)
        for j in range(dims):
            sq += z[i, j] * z[i, j]
        logp[i] = np.float32(-0.5) * sq - const
    return logp


# ---- the minibatch steps -----------------------------------------------------------------------------------------
@_jit
def _critic_part(x, old_value, target, critic_w, critic_b, critic_acts, critic_gw, critic_gb,
                 value_clip, value_weight):  # type: ignore[no-untyped-def]
    inputs = [x]
    inputs.clear()
    value = _forward(x, critic_w, critic_b, critic_acts, inputs)
    value_loss, grad_value = _value_loss_grad(value, old_value, target, value_clip, value_weight)
    _backward(inputs, grad_value, critic_w, critic_acts, critic_gw, critic_gb)
    return value_loss


@_jit
def step_gaussian(obs, shift, scale, obs_clip, action, logp_old, adv, target, old_value,
                  actor_w, actor_b, actor_acts, critic_w, critic_b, critic_acts, log_std,
                  actor_gw, actor_gb, critic_gw, critic_gb, log_std_grad,
                  clip_ratio, dual_clip, value_clip, value_weight, entropy_weight, log_ratio):  # type: ignore
    """One PPO minibatch of a Gaussian actor with a state-independent log-std: gradients into the ``*_g*`` buffers,
    ``log(pi / mu)`` into ``log_ratio``; returns ``(policy loss, value loss, entropy)``."""
    x = _features(obs, shift, scale, obs_clip)
    inputs = [x]
    inputs.clear()
    mu = _forward(x, actor_w, actor_b, actor_acts, inputs)
    rows, dims = mu.shape
    inv_std = np.exp(-log_std)
    z = np.empty((rows, dims), dtype=np.float32)
    for i in range(rows):
        for j in range(dims):
            z[i, j] = (action[i, j] - mu[i, j]) * inv_std[j]
    logp = _noise_log_prob(z, log_std)
    entropy = np.float32(np.sum(log_std)) + np.float32(0.5 + _HALF_LOG_2PI) * dims
    policy_loss, grad_logp = _policy_loss_grad(logp, logp_old, adv, clip_ratio, dual_clip, log_ratio)
    grad_mu = np.empty((rows, dims), dtype=np.float32)
    for j in range(dims):
        log_std_grad[j] = -entropy_weight  # d(-c H)/d log_std = -c
    for i in range(rows):
        for j in range(dims):
            weighted = grad_logp[i] * z[i, j]
            grad_mu[i, j] = weighted * inv_std[j]
            log_std_grad[j] += weighted * z[i, j] - grad_logp[i]
    _backward(inputs, grad_mu, actor_w, actor_acts, actor_gw, actor_gb)
    value_loss = _critic_part(x, old_value, target, critic_w, critic_b, critic_acts, critic_gw, critic_gb,
                              value_clip, value_weight)
    return policy_loss, value_loss, entropy


@_jit
def step_categorical(obs, shift, scale, obs_clip, action, mask, logp_old, adv, target, old_value,
                     actor_w, actor_b, actor_acts, critic_w, critic_b, critic_acts,
                     actor_gw, actor_gb, critic_gw, critic_gb,
                     clip_ratio, dual_clip, value_clip, value_weight, entropy_weight, log_ratio):  # type: ignore
    """:func:`step_gaussian` for a categorical actor (``mask`` (B, A) of legal actions, or (0, 0): none)."""
    x = _features(obs, shift, scale, obs_clip)
    inputs = [x]
    inputs.clear()
    logits = _forward(x, actor_w, actor_b, actor_acts, inputs)
    log_pi = _log_softmax(logits, mask)
    rows, n_act = log_pi.shape
    logp = np.empty(rows, dtype=np.float32)
    entropies = np.empty(rows, dtype=np.float32)
    entropy = 0.0
    for i in range(rows):
        h = np.float32(0.0)
        for j in range(n_act):
            h -= np.exp(log_pi[i, j]) * log_pi[i, j]
        entropies[i] = h
        entropy += h
        logp[i] = log_pi[i, action[i]]
    entropy /= rows
    policy_loss, grad_logp = _policy_loss_grad(logp, logp_old, adv, clip_ratio, dual_clip, log_ratio)
    grad_entropy = np.float32(-entropy_weight / rows)
    grad = np.empty((rows, n_act), dtype=np.float32)
    masked = mask.shape[0] > 0
    for i in range(rows):
        for j in range(n_act):
            pi = np.exp(log_pi[i, j])
            g = -grad_logp[i] * pi
            if j == action[i]:
                g += grad_logp[i]
            if grad_entropy != 0.0:
                g -= grad_entropy * pi * (log_pi[i, j] + entropies[i])
            grad[i, j] = g if not masked or mask[i, j] else np.float32(0.0)
    _backward(inputs, grad, actor_w, actor_acts, actor_gw, actor_gb)
    value_loss = _critic_part(x, old_value, target, critic_w, critic_b, critic_acts, critic_gw, critic_gb,
                              value_clip, value_weight)
    return policy_loss, value_loss, entropy


# ---- acting ------------------------------------------------------------------------------------------------------
@_jit
def forward_pair(obs, shift, scale, obs_clip, actor_w, actor_b, actor_acts, critic_w, critic_b,
                 critic_acts, with_value):  # type: ignore[no-untyped-def]
    """``(actor output (B, out), value (B,))`` of raw observations (the value empty where ``with_value`` is False)."""
    x = _features(obs, shift, scale, obs_clip)
    inputs = [x]
    inputs.clear()
    out = _forward(x, actor_w, actor_b, actor_acts, inputs)
    value = np.empty(0, dtype=np.float32)
    if with_value:
        inputs.clear()
        value = _forward(x, critic_w, critic_b, critic_acts, inputs)[:, 0].copy()
    return out, value


@_jit
def gaussian_draw(mu, log_std, z):  # type: ignore[no-untyped-def]
    """``(mu + sigma z, log N(that; mu, sigma))`` of standard-normal noise ``z`` (B, A)."""
    rows, dims = mu.shape
    action = np.empty((rows, dims), dtype=np.float32)
    for i in range(rows):
        for j in range(dims):
            action[i, j] = np.exp(log_std[j]) * z[i, j] + mu[i, j]
    return action, _noise_log_prob(z, log_std)
