"""The two action distributions of the actor-critics, as plain tensor arithmetic.

``torch.distributions`` builds an object per call, checks its arguments and broadcasts through generic code: on the
small networks of RL that is most of a learn step's loss (PPO on Hopper, 32 samples: the Gaussian's log-prob and
entropy with their backward pass take 290 µs that way, 170 µs here). Same formulas, same random streams
(``torch.normal`` and ``torch.multinomial`` as torch's ``Normal`` and ``Categorical`` draw), checked against
``torch.distributions`` in ``tests/rl_utils/test_distributions.py``.
"""
from __future__ import annotations

import math

import torch

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class DiagGaussian:
    """A diagonal Gaussian over the last dimension (actions of shape ``(..., A)``)."""

    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor) -> None:
        self.mean = mu
        self.stddev = sigma
        self._log_sigma = sigma.log()

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """``(...)`` sum over action dims of ``-(a - mu)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2``."""
        z = (action - self.mean) / self.stddev
        return (-0.5 * z.square() - self._log_sigma).sum(-1) - _HALF_LOG_2PI * self.mean.shape[-1]

    def entropy(self) -> torch.Tensor:
        """``(...)`` sum over action dims of ``1/2 + log(2 pi) / 2 + log sigma``."""
        return self._log_sigma.sum(-1) + (0.5 + _HALF_LOG_2PI) * self.mean.shape[-1]

    def sample(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.normal(self.mean, self.stddev)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(sample(), log_prob(sample))`` from one standard-normal draw ``z`` (the action is ``mu + sigma * z``,
        torch.normal's stream and arithmetic; its log-density needs no second pass over the action: ``(a - mu) /
        sigma`` is ``z``)."""
        with torch.no_grad():
            z = torch.randn_like(self.mean)
            action = self.stddev * z + self.mean
            log_p = (-0.5 * z.square() - self._log_sigma).sum(-1) - _HALF_LOG_2PI * self.mean.shape[-1]
            return action, log_p


class CategoricalLogits:
    """A categorical over the last dimension of unnormalised ``logits`` (masked actions at a large negative logit)."""

    def __init__(self, logits: torch.Tensor) -> None:
        # log-probabilities: log_softmax is logits - logsumexp(logits) in one kernel (logsumexp alone is six)
        self.logits = torch.log_softmax(logits, dim=-1)

    @property
    def probs(self) -> torch.Tensor:
        return self.logits.exp()

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """Log-probability of integer ``action`` (broadcast against the batch shape, e.g. one action per ensemble
        member)."""
        index = action.long().unsqueeze(-1)
        log_p = self.logits
        if index.shape[:-1] != log_p.shape[:-1]:
            index, log_p = torch.broadcast_tensors(index, log_p)
            index = index[..., :1]
        return log_p.gather(-1, index).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        # clamped as torch does, so that a -inf logit contributes 0 * finite, not 0 * -inf
        log_p = self.logits.clamp(min=torch.finfo(self.logits.dtype).min)
        return -(log_p * log_p.exp()).sum(-1)

    def sample(self) -> torch.Tensor:
        with torch.no_grad():
            probs = self.probs.reshape(-1, self.logits.shape[-1])
            return torch.multinomial(probs, 1, True).reshape(self.logits.shape[:-1])

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(sample(), log_prob(sample))``."""
        with torch.no_grad():
            action = self.sample()
            return action, self.log_prob(action)
