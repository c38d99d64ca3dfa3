"""Whether one policy can play every seat of a game: checks of a PettingZoo game's per-seat spaces, each refusal one
line naming the game and the seat and saying what to do.

Self-play trains one policy that plays every seat (and its snapshots play the others), so every seat must observe
the same kind of space with the same encoded shape (:mod:`ding_lite.envs.spaces`) and act in the same ``Discrete``
space. Heterogeneous teams (MPE's ``simple_adversary``, ``simple_tag``: adversaries and good agents observe and act
differently) and continuous actions (MPE's ``continuous_actions=True``, pistonball's default) are refused here."""
from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym

from ding_lite.envs.spaces import encoded_space, needs_encoding
from ding_lite.errors import ConfigError


def check_observation_spaces(name: str, agents: Sequence[str], spaces: Sequence[gym.Space]) -> list[bool]:
    """Every seat's observation space must be of the first seat's kind with its encoded shape: a seat observing
    ``Discrete(3)`` beside one observing ``Box(3,)`` would give one network a one-hot in one seat and a value in the
    other. Returns per seat whether its observations are encoded (each seat is encoded by its own space)."""
    encoded = [needs_encoding(space, f"env '{name}' (seat '{a}')") for a, space in zip(agents, spaces, strict=True)]
    shape = encoded_space(spaces[0]).shape
    for agent, space in zip(agents[1:], spaces[1:], strict=True):
        if type(space) is not type(spaces[0]) or encoded_space(space).shape != shape:
            raise ConfigError(f"env '{name}': seat '{agent}' observes {space} but seat '{agents[0]}' observes "
                              f"{spaces[0]}; one policy needs one observation space for every seat (give the seats "
                              f"equal observations, e.g. padded)")
    return encoded


def check_action_spaces(name: str, agents: Sequence[str], spaces: Sequence[gym.Space]) -> gym.spaces.Discrete:
    """Every seat must act in one ``Discrete`` space (the same ``n`` and ``start``); returns it."""
    for agent, space in zip(agents, spaces, strict=True):
        if isinstance(space, gym.spaces.Box):
            raise ConfigError(f"env '{name}': seat '{agent}' acts in {space}, continuous actions, and self-play plays "
                              f"games of Discrete actions only: use the game's discrete actions (MPE: "
                              f"env.kwargs.continuous_actions=False; pistonball: continuous=False)")
        if not isinstance(space, gym.spaces.Discrete):
            raise ConfigError(f"env '{name}': seat '{agent}' acts in {space}, and self-play plays games of Discrete "
                              f"actions only: number the game's actions as one Discrete(n)")
    first = spaces[0]
    assert isinstance(first, gym.spaces.Discrete)
    for agent, space in zip(agents[1:], spaces[1:], strict=True):
        assert isinstance(space, gym.spaces.Discrete)
        if (space.n, space.start) != (first.n, first.start):
            raise ConfigError(f"env '{name}': seat '{agent}' acts in {space} but seat '{agents[0]}' in {first}; one "
                              f"policy needs one action space for every seat (give the seats equal actions, the "
                              f"extra ones masked out with an action_mask)")
    return first
