"""One reset and one step of the probe env a run builds before it writes anything (to read the spaces): an env that
breaks gymnasium's API, or gives observations, rewards or flags the collectors cannot take, is then refused in one
line before the experiment folder and its ``total_config.py`` exist, not at the first collect after them (where a
second run, the env fixed, would have to take the next free folder).

Only where the run steps its envs in this process anyway (the ``base`` env manager): under ``subprocess`` an env
that hangs, crashes the process or fails now and then is the worker's to time out and restart, and a probe in the
main process would take that away."""
from __future__ import annotations

import re

import gymnasium as gym
import numpy as np

from ding_lite.data.keys import ACTION_MASK
from ding_lite.envs.env_manager import BaseEnvManager
from ding_lite.errors import EnvError
from ding_lite.rl_utils.masks import random_legal_actions

PROBE_SEED = 0  # the probe's reset and action: fixed, so that a probe that fails fails on every run


def try_reset_and_step(env: gym.Env, name: str) -> None:
    """Reset ``env`` and step it once with a random (legal) action, checked as the base env manager checks every
    reset and step; an :class:`EnvError` names the env as ``name`` (e.g. ``"env 'my_env'"``). ``env`` stays open
    (its owner closes it)."""
    manager = BaseEnvManager([lambda: env])  # the collectors' checks, with nothing else to own: not closed here
    manager.seed(PROBE_SEED)
    try:
        obs = manager.reset()
        manager.step(_one_action(env.action_space, obs))
    except EnvError as exc:
        where = f"{name}, reset and stepped once before the run starts:"
        message = re.sub(r"^env 0's ", f"{where} its ", str(exc))
        raise EnvError(re.sub(r"^env 0:? ", f"{where} ", message)) from exc


def _one_action(space: gym.Space, obs: object) -> np.ndarray:
    """A batch of one random action as a policy gives it: a legal one where the observation carries an action mask,
    a ``Discrete`` index counted from 0 (the managers add the space's ``start``)."""
    if isinstance(obs, dict) and ACTION_MASK in obs:
        return random_legal_actions(np.random.default_rng(PROBE_SEED), obs[ACTION_MASK])
    sample = space.sample()
    if isinstance(space, gym.spaces.Discrete):
        return np.array([int(sample) - int(space.start)])
    return np.asarray(sample)[None]
