"""NumPy references of RL maths written from the papers' equations, independently of ding_lite's code: ACER's
Retrace (Algorithm 2) and trust-region projection, GAE, PPO's clipped objective; used by the tests that compare
ding_lite's functions and policies with them."""
from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def fd(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central finite-difference gradient of a scalar function of a vector (float64)."""
    out = np.zeros_like(x)
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h
        out[j] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def retrace_reference(q, v, rho, r, term, mask, gamma):
    """ACER Algorithm 2, one sequence at a time: Q^ret starts at V(s_n) (0 after a terminal) and runs backwards,
    Q^ret <- r_i + γQ^ret, then Q^ret <- min(1, ρ_i)(Q^ret − Q(s_i, a_i)) + V(s_i)."""
    out = np.zeros_like(q)
    for b in range(q.shape[1]):
        n = int(mask[:, b].sum())
        q_ret = v[n, b]
        for i in reversed(range(n)):
            q_ret = r[i, b] + gamma * (0.0 if term[i, b] else q_ret)
            out[i, b] = q_ret
            q_ret = min(1.0, rho[i, b]) * (q_ret - q[i, b]) + v[i, b]
    return out


def project_reference(g, k, delta):
    """argmin ‖z − g‖² subject to kᵀz ≤ δ, as z = g − λk with the multiplier λ ≥ 0 found by bisection."""
    if k @ g <= delta:
        return g
    lo, hi = 0.0, 1.0
    while k @ (g - hi * k) > delta:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if k @ (g - mid * k) > delta else (lo, mid)
    return g - hi * k


def gae_reference(r, v, next_v, term, trunc, gamma, lam):
    """A_t = Σ_l (γλ)^l δ_{t+l} over the rest of the episode inside the rollout, δ_t = r_t + γ(1 − term_t)V' − V."""
    delta = r + gamma * (1 - term) * next_v - v
    adv = np.zeros_like(r)
    for n in range(r.shape[1]):
        for t in range(r.shape[0]):
            weight = 1.0
            for u in range(t, r.shape[0]):
                adv[t, n] += weight * delta[u, n]
                weight *= gamma * lam
                if term[u, n] or trunc[u, n]:
                    break
    return adv


def clip_objective(ratio, adv, eps, dual_clip=None):
    """min(ρA, clip(ρ, 1 − ε, 1 + ε)A), and at least cA for A < 0 with the dual clip."""
    objective = min(ratio * adv, float(np.clip(ratio, 1 - eps, 1 + eps)) * adv)
    return max(objective, dual_clip * adv) if dual_clip is not None and adv < 0 else objective


def normal_density(a, mu, sigma):
    return np.prod(np.exp(-0.5 * ((a - mu) / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi)), -1)
