"""Who plays the seats that are not the learner's: frozen snapshots of the learner and scripted baselines.

Frozen policies live in the process that steps the env manager (never in env workers, never pickled): a policy
built with only its eval mode, its parameters frozen (``requires_grad=False``, eval mode, no optimiser), whose
weights come from snapshot files as state dicts (``weights_only=True``). Each player acts for a whole batch of
(env, seat) pairs in one call (one forward)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import torch

from ding_lite.data.keys import ACTION_MASK, OBSERVATION
from ding_lite.errors import CheckpointError
from ding_lite.registry import OPPONENT
from ding_lite.rl_utils.masks import random_legal_actions


class Player(Protocol):
    """Anything that acts for a batch of seats: ``act(obs (M, ...), action_mask (M, A)) -> actions (M,)``."""

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray: ...


@OPPONENT.register("random")
class RandomOpponent:
    """Uniformly random legal actions."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return random_legal_actions(self._rng, action_mask)


class FrozenPolicy:
    """A snapshot of the learner acting greedily (its eval mode) with frozen weights.

    Args:
        policy: a policy built with ``enable_field=('eval',)`` (so no optimiser exists); its model is frozen here.
        name: the snapshot's name (for errors).
    """

    def __init__(self, policy: Any, name: str, with_mask: bool = False) -> None:
        self.policy = policy
        self.name = name
        self.with_mask = with_mask  # hand the policy PettingZoo's {'observation', 'action_mask'} dicts
        self.model: torch.nn.Module = policy._model
        self.model.eval()
        self.model.requires_grad_(False)

    def load(self, model_state: Mapping[str, Any], path: str) -> None:
        """Load a snapshot's model weights; a snapshot that does not fit the network names its file."""
        try:
            self.model.load_state_dict(model_state)
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(f"snapshot {path} does not fit the policy's network: {first} (was it written "
                                  f"by a run of another model config?)") from exc
        self.model.requires_grad_(False)

    @torch.inference_mode()
    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        seen = {OBSERVATION: obs, ACTION_MASK: action_mask} if self.with_mask else obs
        return np.asarray(self.policy.eval_mode.forward(seen)["action"])


class PlayerSet:
    """Players by name: snapshot names (frozen policies loaded on first use, dropped when no game uses them) and
    scripted baselines (built once from the OPPONENT registry). Counts forward calls (one per ``act``)."""

    def __init__(self, build_frozen: Callable[[], Any], load_weights: Callable[[str], tuple[Mapping, str]],
                 seed: int = 0, with_mask: bool = False) -> None:
        self._build_frozen = build_frozen  # a fresh eval-only policy
        self._load_weights = load_weights  # snapshot name -> (model state dict, file path)
        self._seed = seed
        self._with_mask = with_mask  # frozen policies see action masks (a game that has them)
        self.players: dict[str, Any] = {}
        self.forward_calls = 0

    def get(self, name: str) -> Any:
        player = self.players.get(name)
        if player is None:
            if name in OPPONENT:
                player = OPPONENT.build(name, seed=self._seed + len(self.players))
            else:
                player = FrozenPolicy(self._build_frozen(), name, self._with_mask)
                player.load(*self._load_weights(name))
            self.players[name] = player
        return player

    def keep_only(self, names: set[str]) -> None:
        """Drop frozen snapshots no game uses any more (their weights are freed); scripted players stay."""
        for name in [n for n, p in self.players.items() if isinstance(p, FrozenPolicy) and n not in names]:
            del self.players[name]

    def act(self, name: str, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        self.forward_calls += 1
        return self.get(name).act(obs, action_mask)

    def parameters(self) -> list[torch.nn.Parameter]:
        """Every parameter of every frozen player (for tests: none may be trained)."""
        return [p for player in self.players.values() if isinstance(player, FrozenPolicy)
                for p in player.model.parameters()]
