"""envpool (Weng et al. 2022): N envs stepped in C++ threads behind one batched call.

Two parts, both built from an ``env`` section of ``type='envpool'`` (``env_id`` and ``kwargs`` as envpool names them):

- the env type ``envpool``: one env as a ``gymnasium.Env`` (a pool of one), for probes and for the ``base`` and
  ``subprocess`` managers;
- the env manager ``envpool``: the whole batch in one pool, with the same :class:`StepResult` as the other managers.

envpool resets an ended env on its *next* step, not the same one: the step that ends an episode returns the final
observation, and the env's following step ignores its action and returns the reset observation with reward 0. The
manager hides that: right after a step in which episodes ended, it steps only the ended envs once more (their actions
are ignored) to fetch their reset observations, so ``StepResult.next_obs`` holds the final observation (for
bootstrapping on truncation) and ``StepResult.obs`` the first observation of the next episode, as everywhere else.

Atari, the same task on every route (the gymnasium route, ``env.type='atari'``, plays envpool's C++ env written out
in Python, :class:`~ding_lite.envs.suites.EnvpoolAtari`): with ``episodic_life`` a lost life ends the episode and the
next one continues the game (envpool's reset after an episode end; an explicit ``reset()`` starts a new game, so the
single env fetches its next episode by a step, as the manager does); and ``env.fire_on_life_loss`` presses FIRE
after a lost life (:mod:`ding_lite.envs.envpool_fire`).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.envs.actions import discrete_indices, env_actions
from ding_lite.envs.env_manager import EnvManager, EpisodeEnd, StepResult
from ding_lite.envs.envpool_fire import LifeLossFire, fire_after_life_loss
from ding_lite.envs.spaces import is_masked
from ding_lite.errors import ConfigError
from ding_lite.extras import install_hint
from ding_lite.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, did_you_mean

ENVPOOL_EXTRA = install_hint("envpool")


def import_envpool() -> Any:
    """The ``envpool`` module, or a :class:`ConfigError` that names the extra to install."""
    try:
        import envpool
    except ImportError as exc:
        raise ConfigError(f"env.type='envpool' needs the envpool package, which is not installed: {ENVPOOL_EXTRA} "
                          f"(or use the plain gymnasium route, see docs/envs_real.md)") from exc
    return envpool


def check_envpool_id(env_id: Any) -> None:
    """Raise a :class:`ConfigError` naming ``env.env_id`` if envpool has no env of that id (with a did-you-mean)."""
    envpool = import_envpool()
    if not env_id:
        raise ConfigError("env.env_id is required for env type 'envpool' (e.g. env_id='Pong-v5')")
    known = envpool.list_all_envs()
    if env_id not in known:
        raise ConfigError(f"unknown envpool env id env.env_id='{env_id}'{did_you_mean(env_id, known)}; "
                          f"envpool.list_all_envs() lists the known ids")


def make_pool(env_cfg: Mapping[str, Any], num_envs: int, seed: int, num_threads: int = 0) -> Any:
    """A synchronous envpool gymnasium pool of ``num_envs`` envs (env i is seeded with ``seed + i`` by envpool);
    its ``spaces`` attribute holds ``(observation_space, action_space)``, its ``time_limit`` the time limit that
    :func:`time_limit_cut` applies (None: envpool's own, Atari)."""
    envpool = import_envpool()
    kwargs = dict(env_cfg.get("kwargs") or {})
    if env_cfg.get("max_episode_steps") is not None:
        kwargs["max_episode_steps"] = int(env_cfg["max_episode_steps"])
    try:
        time_limit = None
        config = envpool.make_spec(str(env_cfg["env_id"]), **kwargs).config
        if "use_fire_reset" not in config._fields:  # not Atari, whose gymnasium route keeps envpool's rule too
            # envpool reports terminated = done & ~truncated: a fall (MuJoCo) or a pole down (CartPole) in the
            # step that reaches the limit would read as a truncation and be bootstrapped. envpool's own limit one
            # step later leaves its terminated flag true; time_limit_cut truncates at the limit (gymnasium's rule)
            time_limit = int(config.max_episode_steps)
            kwargs_made = kwargs | {"max_episode_steps": time_limit + 1}
        else:
            kwargs_made = kwargs
        with warnings.catch_warnings():  # envpool builds float32 boxes from float64 bounds; gymnasium warns each time
            warnings.filterwarnings("ignore", message=".*precision lowered.*")
            pool = envpool.make_gymnasium(str(env_cfg["env_id"]), num_envs=num_envs, batch_size=num_envs, seed=seed,
                                          num_threads=num_threads, **kwargs_made)
            pool.time_limit = time_limit
            pool.spaces = (float32_space(pool.observation_space), pool.action_space)  # lazy in envpool: warns here
    except (TypeError, ValueError, RuntimeError) as exc:  # envpool names the bad keyword in its message
        raise ConfigError(f"envpool could not build env.env_id='{env_cfg['env_id']}' with env.kwargs={kwargs}: "
                          f"{exc}") from exc
    if is_masked(pool.spaces[0]):
        pool.close()
        raise ConfigError(f"env.env_id='{env_cfg['env_id']}' observes an action mask, which the envpool manager does "
                          f"not hand over: use env.manager.type='base' or 'subprocess' (docs/tutorial_custom_env.md)")
    if isinstance(pool.spaces[0], (gym.spaces.Dict, gym.spaces.Tuple)):  # envpool's MiniGrid: the pool and the
        pool.close()  # single env index observations as arrays, so a dict would fail later with a traceback
        keys = list(pool.spaces[0].spaces) if isinstance(pool.spaces[0], gym.spaces.Dict) else "a tuple"
        minigrid = " (env.type='minigrid' observes MiniGrid's 7x7x3 view, docs/envs_real.md)" \
            if str(env_cfg["env_id"]).startswith(("MiniGrid", "BabyAI")) else ""
        raise ConfigError(f"env.env_id='{env_cfg['env_id']}': envpool gives {keys} observations, which env.type="
                          f"'envpool' does not hand over{minigrid}")
    return pool


def float32_space(space: gym.Space) -> gym.Space:
    """A float64 box as float32 (MuJoCo's observations; the models compute in float32), other spaces unchanged."""
    if isinstance(space, gym.spaces.Box) and space.dtype == np.float64:
        return gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)
    return space


def time_limit_cut(pool: Any, info: Mapping[str, Any], terminated: np.ndarray, truncated: np.ndarray) -> np.ndarray:
    """The rows of a step that reach the pool's ``time_limit`` without an end of envpool's own: truncated there
    (envpool's env goes on until it is reset)."""
    if pool.time_limit is None:
        return np.zeros_like(truncated)
    return (np.asarray(info["elapsed_step"]) >= pool.time_limit) & ~terminated & ~truncated


def as_space_dtype(obs: np.ndarray, space: gym.Space) -> np.ndarray:
    """``obs`` in the dtype of ``space`` (a no-op unless :func:`float32_space` changed it)."""
    return obs if obs.dtype == space.dtype else obs.astype(space.dtype)


def pool_actions(actions: np.ndarray, space: gym.Space) -> np.ndarray:
    """A policy's batched actions as envpool takes them: int32 indices, or boxes clipped to the space."""
    if isinstance(space, gym.spaces.Discrete):
        return discrete_indices(actions, space).astype(np.int32, copy=False)
    if isinstance(space, gym.spaces.Box):
        # PPO: the env gets the clipped action, the policy keeps the unclipped sample for log-probs.
        return env_actions(actions, space)
    return np.asarray(actions)


def row_info(info: Mapping[str, Any], row: int | np.ndarray) -> dict:
    """Env ``row``'s entries of envpool's batched info dict (``row`` an index array: those rows, in its order)."""
    return {k: (row_info(v, row) if isinstance(v, Mapping) else v[row]) for k, v in info.items()}


def _random_seed() -> int:
    return int(np.random.default_rng().integers(2 ** 31 - 2 ** 16))  # room for seed + i


@ENV_REGISTRY.register("envpool")
class EnvpoolEnv(gym.Env):
    """One envpool env as a ``gymnasium.Env``: ``env=dict(type='envpool', env_id='Pong-v5', kwargs={...})``.

    For the batched manager set ``env.manager.type='envpool'``; this single env serves probes (the shapes of the
    model) and the ``base`` / ``subprocess`` managers.
    """

    config: dict[str, Any] = dict(
        env_id=None,  # envpool id, e.g. 'Pong-v5', 'Hopper-v4', 'CartPole-v1' (envpool.list_all_envs())
        kwargs={},  # envpool keyword arguments, e.g. dict(repeat_action_probability=0.25, episodic_life=True)
        max_episode_steps=None,  # override envpool's time limit (None: keep the id's own)
        fire_on_life_loss=True,  # Atari: press FIRE after a lost life where the game has it (module docstring)
    )

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        check_envpool_id(cfg.get("env_id"))
        self._cfg = dict(cfg)
        self._pool = make_pool(self._cfg, 1, _random_seed(), num_threads=1)
        self.observation_space, self.action_space = self._pool.spaces
        self._fire = LifeLossFire(self._cfg, self._pool)
        self._lives = np.zeros(1, dtype=np.int64)
        self._episode_ended = False  # the last step ended an episode: the next reset continues as envpool does
        self._cut = False  # that end was the time limit's (time_limit_cut): envpool's env goes on, reset() ends it

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early (before anything is written) on a missing package or an unknown env id."""
        check_envpool_id(cfg.get("env_id"))

    @classmethod
    def eval_config(cls, cfg: Mapping[str, Any]) -> Mapping[str, Any]:
        """Evaluations of an Atari game play whole games with unclipped rewards (envpool's ``episodic_life`` and
        ``reward_clip`` off where set): the reported return is the game's score, not a life's or a clipped one."""
        kwargs = dict(cfg.get("kwargs") or {})
        training_only = [key for key in ("episodic_life", "reward_clip") if kwargs.get(key)]
        return {**cfg, "kwargs": {**kwargs, **dict.fromkeys(training_only, False)}} if training_only else cfg

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        """A new seed rebuilds the pool (envpool seeds at construction); after an episode's end the next episode
        comes from envpool's own reset step, as in the envpool manager (with ``episodic_life`` the game goes on);
        otherwise envpool's ``reset()``, a new game."""
        super().reset(seed=seed)  # np_random seeded as gymnasium's env checker expects (envpool draws its own)
        if seed is not None:
            self._pool.close()
            self._pool = make_pool(self._cfg, 1, seed, num_threads=1)
        if self._episode_ended and not self._cut and seed is None:
            # any action in the space's shape (a Box's too): envpool ignores it in its reset step
            shape = self.action_space.shape or ()
            idle = np.zeros((1, *shape), dtype=self.action_space.dtype if shape else np.int64)
            obs, _, _, _, info = self._pool.step(pool_actions(idle, self.action_space))
        else:
            obs, info = self._pool.reset()
        self._episode_ended = False
        if "lives" in info:
            self._lives = np.asarray(info["lives"])
        return as_space_dtype(obs[0], self.observation_space), row_info(info, 0)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self._pool.step(pool_actions(np.asarray([action]),
                                                                                self.action_space))
        terminated, truncated = np.asarray(terminated, dtype=bool), np.asarray(truncated, dtype=bool)
        if self._fire.index is not None:
            obs, reward, terminated, truncated, self._lives = fire_after_life_loss(
                self._pool, self._fire, self._lives, obs, np.asarray(reward, dtype=np.float64), terminated,
                truncated, np.asarray(info["lives"]))
        self._cut = bool(time_limit_cut(self._pool, info, terminated, truncated)[0])
        truncated = truncated | self._cut
        self._episode_ended = bool(terminated[0] or truncated[0])
        return (as_space_dtype(obs[0], self.observation_space), float(reward[0]), bool(terminated[0]),
                bool(truncated[0]), row_info(info, 0))

    def close(self) -> None:
        self._pool.close()


@ENV_MANAGER_REGISTRY.register("envpool")
class EnvpoolEnvManager(EnvManager):
    """The N envs in envpool pools (needs ``env.type='envpool'``); extra ``[envpool]``.

    The envs are split into ``pipeline_groups`` pools of consecutive envs (default 2), and the sample collector
    pipelines them: it sends one group's actions, and while that group steps in envpool's threads it computes the
    next group's actions on that group's fresh observations. Every env still makes one step per rollout row with
    the collect policy of that rollout, so the rollouts are those of one pool (on-policy data stays on-policy; the
    same rows for a deterministic policy, tested); what changes is that one group's env stepping overlaps another
    group's forward pass. Collection with the dizoo PPO configs, 8 envs on 2 cores: Pong 765 -> 543 µs per env step,
    Hopper 150 -> 109 µs. ``pipeline_groups=1``: one synchronous pool. ``step`` (the evaluator's) steps every group
    and returns the whole batch.

    envpool's own asynchronous mode (``batch_size`` below ``num_envs``: each call returns whichever envs are ready) is
    not offered: the collectors write time-major (T, N) rollouts with every env in every row, which a call returning
    an arbitrary subset of envs does not fill (docs/envs_real.md).

    Args:
        env_cfg: the ``env`` section (``env_id``, ``kwargs``, ``max_episode_steps``).
        env_num: number of envs.
        cfg: the ``env.manager`` section.
    """

    config: dict[str, Any] = dict(
        type="envpool",
        num_threads=0,  # envpool's worker threads per pool (0: one per core, at most one per env)
        pipeline_groups=2,  # pools stepped in turn while the collector computes the others' actions (1: one pool)
    )

    def __init__(self, env_cfg: Mapping[str, Any], env_num: int, cfg: Mapping[str, Any] | None = None) -> None:
        if env_cfg.get("type") != "envpool":
            raise ConfigError(f"env.manager.type='envpool' needs env.type='envpool' (got env.type="
                              f"'{env_cfg.get('type')}'): set env.type='envpool' with an envpool env_id, or use "
                              f"env.manager.type='subprocess'")
        if env_num < 1:
            raise ConfigError("an env manager needs at least one env (env_num was 0): set env.collector_env_num and "
                              "env.evaluator_env_num to 1 or more")
        n_groups = (cfg or {}).get("pipeline_groups", self.config["pipeline_groups"])
        if not isinstance(n_groups, int) or isinstance(n_groups, bool) or n_groups < 1:
            raise ConfigError(f"env.manager.pipeline_groups must be an integer of at least 1, got {n_groups!r}")
        check_envpool_id(env_cfg.get("env_id"))
        self._env_cfg = dict(env_cfg)
        self._threads = int((cfg or {}).get("num_threads", 0))
        n_groups = min(n_groups, env_num)  # an evaluator with fewer envs than groups: one env per group
        bounds = np.linspace(0, env_num, n_groups + 1).round().astype(int)
        self._groups = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self._pools = self._make_pools(_random_seed())
        observation_space, action_space = self._pools[0].spaces
        super().__init__(env_num, observation_space, action_space, cfg)
        self._fire = LifeLossFire(self._env_cfg, self._pools[0])  # the same game in every pool
        self._lives = np.zeros(env_num, dtype=np.int64)  # Atari: each env's lives (for the FIRE after a lost one)
        self._reset_obs: dict[int, np.ndarray] = {}
        self._group_obs: list[np.ndarray] = []  # each group's current observation
        self._stale = False  # the groups stepped apart since the full batch self._obs was assembled
        self._sent: list[np.ndarray] = [np.empty(0)] * len(self._groups)  # each group's last actions

    @classmethod
    def from_env_config(cls, env_cfg: Mapping[str, Any], env_num: int,
                        cfg: Mapping[str, Any] | None = None) -> EnvpoolEnvManager:
        """Build from the ``env`` section (this manager makes its envs itself, not from per-env callables)."""
        return cls(env_cfg, env_num, cfg)

    def _make_pools(self, seed: int) -> list[Any]:
        """One pool per group; env i is seeded with ``seed + i`` whatever the grouping."""
        return [make_pool(self._env_cfg, g.stop - g.start, seed + g.start, self._threads) for g in self._groups]

    @property
    def groups(self) -> list[slice]:
        return self._groups

    @property
    def obs(self) -> np.ndarray:
        if self._stale:
            self._obs = self._group_obs[0] if len(self._group_obs) == 1 else np.concatenate(self._group_obs)
            self._stale = False
        return super().obs

    def reset(self) -> np.ndarray:
        """Reset every env (a pending :meth:`seed` rebuilds the pools: envpool seeds at construction)."""
        seed = self._take_seeds()[0]
        if seed is not None:
            self._close()
            self._pools = self._make_pools(seed)
        self._group_obs = []
        for pool, rows in zip(self._pools, self._groups, strict=True):
            obs, info = pool.reset()
            order = np.argsort(info["env_id"])
            self._group_obs.append(as_space_dtype(obs[order], self.observation_space))
            if "lives" in info:
                self._lives[rows] = np.asarray(info["lives"])[order]
        self._reset_obs, self._stale = {}, False
        return self._start_episodes(np.concatenate(self._group_obs))

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env (every group, then the whole batch); ended envs are stepped once more to fetch their reset
        observations (see the module)."""
        for k, rows in enumerate(self._groups):
            self.send(k, actions[rows])
        parts = [self.recv(k) for k in range(len(self._groups))]
        if len(parts) == 1:
            result = parts[0]
        else:
            obs, next_obs, reward, terminated, truncated = (
                np.concatenate([getattr(p, f) for p in parts]) for f in ("obs", "next_obs", "reward", "terminated",
                                                                           "truncated"))
            result = StepResult(obs, next_obs, reward, terminated, truncated, [e for p in parts for e in p.episodes])
        self._obs, self._stale = result.obs, False
        return result

    def send(self, group: int, actions: np.ndarray) -> None:
        if self._obs is None:
            self.reset()
        self._sent[group] = pool_actions(actions, self.action_space)
        self._pools[group].send(self._sent[group])

    def recv(self, group: int) -> StepResult:
        pool, rows = self._pools[group], self._groups[group]
        next_obs, reward, terminated, truncated, info = pool.recv()
        order = np.argsort(info["env_id"])  # a synchronous pool answers in env order; checked, not assumed
        if (order != np.arange(len(order))).any():
            next_obs, reward, terminated, truncated = (x[order] for x in (next_obs, reward, terminated, truncated))
            info = row_info(info, order)
        next_obs = as_space_dtype(next_obs, self.observation_space)
        terminated, truncated = np.asarray(terminated, dtype=bool), np.asarray(truncated, dtype=bool)
        reward = np.asarray(reward, dtype=np.float32)
        if self._fire.index is not None:
            next_obs, reward, terminated, truncated, self._lives[rows] = fire_after_life_loss(
                pool, self._fire, self._lives[rows], next_obs, reward, terminated, truncated,
                np.asarray(info["lives"]))
        cut = time_limit_cut(pool, info, terminated, truncated)
        truncated = truncated | cut
        ended = np.flatnonzero(terminated | truncated)
        finished: list[tuple[int, dict]] = []
        if len(ended):
            finished = [(int(i) + rows.start, row_info(info, int(i))) for i in ended]
            done = np.flatnonzero((terminated | truncated) & ~cut)
            if len(done):  # the ended envs' actions are ignored by envpool in this call: it only resets them
                first_obs, _, _, _, reset_info = pool.step(self._sent[group][done], env_id=done.astype(np.int32))
                self._keep_reset_obs(rows, first_obs, reset_info)
            if cut.any():  # envpool's env goes on past the limit: reset it
                self._keep_reset_obs(rows, *pool.reset(np.flatnonzero(cut).astype(np.int32)))
        result = self._finish_rows(rows, next_obs, reward, terminated, truncated, finished)
        self._group_obs[group] = result.obs
        self._stale = True  # the full batch is assembled when asked for (obs)
        return result

    def _keep_reset_obs(self, rows: slice, first_obs: np.ndarray, reset_info: Mapping[str, Any]) -> None:
        """The first observations (and Atari's lives) of the envs of group ``rows`` that envpool just reset."""
        ids = np.asarray(reset_info["env_id"]) + rows.start
        self._reset_obs.update(zip(ids.tolist(), as_space_dtype(first_obs, self.observation_space), strict=True))
        if "lives" in reset_info:
            self._lives[ids] = reset_info["lives"]

    def _reset_one(self, i: int) -> np.ndarray:
        return self._reset_obs.pop(i)

    def truncate(self, envs: Sequence[int]) -> tuple[np.ndarray, list[EpisodeEnd]]:
        obs, ends = super().truncate(envs)
        self._group_obs = [obs[rows] for rows in self._groups]  # what a group's recv updates and obs concatenates
        return obs, ends

    def _reset_running(self, envs: list[int]) -> list[np.ndarray]:
        """Reset ``envs`` through their pools (envpool resets the envs named by ``env_id``, episode over or not)."""
        first: dict[int, np.ndarray] = {}
        for pool, rows in zip(self._pools, self._groups, strict=True):
            local = np.array([i - rows.start for i in envs if rows.start <= i < rows.stop], dtype=np.int32)
            if len(local):
                obs, info = pool.reset(local)
                ids = np.asarray(info["env_id"]) + rows.start
                first.update(zip(ids.tolist(), as_space_dtype(obs, self.observation_space), strict=True))
                if "lives" in info:
                    self._lives[ids] = info["lives"]
        return [first[i] for i in envs]

    def _close(self) -> None:
        for pool in self._pools:
            pool.close()
