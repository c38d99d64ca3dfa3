"""Who plays the seats that are not the learner's: frozen snapshots of the learner and scripted baselines.

Frozen policies live in the process that steps the env manager (never in env workers, never pickled): a policy
built with only the mode it acts in (eval, or collect for sampling snapshots; never learn, so no optimiser exists),
its parameters frozen (``requires_grad=False``, eval mode), whose weights come from snapshot files as state dicts
(``weights_only=True``). Each player acts for a whole batch of (env, seat) pairs in one call (one forward).

A scripted player is any class registered in :data:`~ding_lite.registry.OPPONENT_REGISTRY` that is built as
``cls(seed=...)`` and has ``act(obs (M, *obs_shape) float32, action_mask (M, A) bool) -> actions (M,) int``: M is
every (game, seat) pair it plays that is to move now, ``obs`` each seat's own observation as the learner would
see it (encoded, see :mod:`ding_lite.envs.spaces`)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from ding_lite.data.keys import ACTION, ACTION_MASK, OBSERVATION
from ding_lite.errors import CheckpointError, ConfigError, first_line
from ding_lite.registry import OPPONENT_REGISTRY
from ding_lite.rl_utils.masks import random_legal_actions


def snapshot_env_step(name: str) -> int:
    """The env step of a snapshot named ``snapshot_<env_step>`` (0 for another name)."""
    tail = name.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0


@OPPONENT_REGISTRY.register("random")
class RandomOpponent:
    """Uniformly random legal actions."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return random_legal_actions(self._rng, action_mask)


SNAPSHOT_ACTS = ("greedy", "sample")


class FrozenPolicy:
    """A snapshot of the learner with frozen weights, acting greedily (its eval mode) or as it collected (its
    collect mode: PPO samples its action distribution, DQN is ε-greedy with ε of the snapshot's env step).

    Args:
        policy: a policy built with ``enable_field=('eval',)`` (greedy) or ``('collect',)`` (sample), so that no
            optimiser exists; its model is frozen here.
        name: the snapshot's name (for errors).
        with_mask: hand the policy PettingZoo's ``{'observation', 'action_mask'}`` dicts.
        sample: act by the collect mode.
        env_step: the snapshot's env step (what the collect mode's schedules read).
    """

    def __init__(self, policy: Any, name: str, with_mask: bool = False, sample: bool = False,
                 env_step: int = 0) -> None:
        self.policy = policy
        self.name = name
        self.with_mask = with_mask
        self.sample, self.env_step = sample, int(env_step)
        self.model: torch.nn.Module = policy.model
        # the mode's forward taken once: each access of a mode builds it (with its checks) anew, and act runs per move
        self._forward = policy.collect_mode.forward if sample else policy.eval_mode.forward
        self.model.eval()
        self.model.requires_grad_(False)

    def load(self, model_state: Mapping[str, Any], path: str) -> None:
        """Load a snapshot's model weights; a snapshot that does not fit the network names its file."""
        try:
            self.model.load_state_dict(model_state)
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            first = first_line(exc)
            raise CheckpointError(f"snapshot {path} does not fit the policy's network: {first} (was it written "
                                  f"by a run of another model config?)") from exc
        self.model.requires_grad_(False)

    @torch.inference_mode()
    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        seen = {OBSERVATION: obs, ACTION_MASK: action_mask} if self.with_mask else obs
        if self.sample:
            return np.asarray(self._forward(seen, env_step=self.env_step)[ACTION])
        return np.asarray(self._forward(seen)[ACTION])


class PlayerSet:
    """Players by name: snapshot names (frozen policies loaded on first use, dropped when no game uses them) and
    scripted baselines (built once from the OPPONENT_REGISTRY registry). Counts forward calls (one per ``act``).

    Args:
        build_frozen: builds a fresh policy with only the given mode (``'eval'`` or ``'collect'``).
        load_weights: snapshot name -> (model state dict, file path).
        seed: seed of the scripted players.
        with_mask: frozen policies see action masks (a game that has them).
        snapshot_act: ``'greedy'`` (eval mode) or ``'sample'`` (collect mode), see :class:`FrozenPolicy`.
    """

    def __init__(self, build_frozen: Callable[[str], Any], load_weights: Callable[[str], tuple[Mapping, str]],
                 seed: int = 0, with_mask: bool = False, snapshot_act: str = "greedy") -> None:
        if snapshot_act not in SNAPSHOT_ACTS:
            raise ConfigError(f"league.snapshot_act must be one of {', '.join(SNAPSHOT_ACTS)}, got {snapshot_act!r}")
        self._build_frozen = build_frozen
        self._load_weights = load_weights
        self._seed = seed
        self._with_mask = with_mask
        self._sample = snapshot_act == "sample"
        self.players: dict[str, Any] = {}
        self.forward_calls = 0

    def get(self, name: str) -> Any:
        player = self.players.get(name)
        if player is None:
            if name in OPPONENT_REGISTRY:
                player = OPPONENT_REGISTRY.build(name, seed=self._seed + len(self.players))
            else:
                policy = self._build_frozen("collect" if self._sample else "eval")
                player = FrozenPolicy(policy, name, self._with_mask, self._sample, snapshot_env_step(name))
                player.load(*self._load_weights(name))
            self.players[name] = player
        return player

    def keep_only(self, names: set[str]) -> None:
        """Drop frozen snapshots no game uses any more (their weights are freed); scripted players stay."""
        for name in [n for n, p in self.players.items() if isinstance(p, FrozenPolicy) and n not in names]:
            del self.players[name]

    def reset(self) -> None:
        """Drop every player: a scripted one is built again at its next use, from the same seed as at the first
        (seeds go by the order of first use), and a snapshot is loaded again from its file."""
        self.players.clear()

    def act(self, name: str, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        self.forward_calls += 1
        return self.get(name).act(obs, action_mask)

    def parameters(self) -> list[torch.nn.Parameter]:
        """Every parameter of every frozen player (for tests: none may be trained)."""
        return [p for player in self.players.values() if isinstance(player, FrozenPolicy)
                for p in player.model.parameters()]
