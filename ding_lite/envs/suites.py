"""The plain gymnasium route to the real benchmarks, for users without envpool: Atari (ale-py, envpool's Atari env
written out in Python), MuJoCo (gymnasium[mujoco]) and MiniGrid. Each is an env type whose defaults give
the same experiment as envpool's env of the same id (docs/envs_real.md)."""
from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.envs.gym_env import check_env_id
from ding_lite.errors import ConfigError, first_line, int_at_least
from ding_lite.registry import ENV_REGISTRY
from ding_lite.utils.log import setup_console_logging


def require(module: str, extra: str, env_type: str) -> Any:
    """Import ``module`` or raise a :class:`ConfigError` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"env.type='{env_type}' needs the {module} package, which is not installed: "
                          f"pip install 'ding_lite[{extra}]'") from exc
    except Exception as exc:  # installed, but its import fails (a bad MUJOCO_GL, a missing GL library): one line
        raise _broken(module, env_type, exc) from None


def _broken(module: str, env_type: str, exc: BaseException) -> ConfigError:
    gl = os.environ.get("MUJOCO_GL")
    hint = f"; MUJOCO_GL={gl!r} is set: that rendering back-end does not load here; try another (egl, osmesa, " \
        "glfw) or unset it" if gl is not None else ""
    return ConfigError(f"env.type='{env_type}': importing the {module} package failed: {type(exc).__name__}: "
                       f"{first_line(exc)}{hint}")


def _make(env_id: str, cfg: Mapping[str, Any], **kwargs: Any) -> gym.Env:
    kwargs.update(cfg.get("kwargs") or {})
    with warnings.catch_warnings():  # the v4 MuJoCo ids are kept on purpose: rl-zoo's and envpool's benchmarks use them
        warnings.filterwarnings("ignore", message=".*is out of date.*")
        return gym.make(env_id, disable_env_checker=True, **kwargs)


def ale_id(env_id: Any) -> str:
    """ale-py's id of an Atari game named as envpool names it ('Pong-v5' -> 'ALE/Pong-v5'); ALE ids stay."""
    env_id = str(env_id)
    return env_id if "/" in env_id or "NoFrameskip" in env_id else f"ALE/{env_id}"


class EnvpoolAtari(gym.Env):
    """envpool's Atari env (``atari_env.h``: reset, step, frame stack) written out over ale-py, so that the plain
    gymnasium route gives envpool's frames, rewards and episode ends.

    - reset: a new game unless ``episodic_life`` and the game goes on (then the next life starts where the last one
      ended, frames stacked on), then ``rng.integers(noop_max) + 1 - fire`` single no-op frames and, for games with
      FIRE (``use_fire_reset``), one FIRE frame; the observation is that frame in the whole stack after a new game,
      pushed onto the stack after a lost life;
    - step: ``frame_skip`` frames of the action (fewer where the game ends), the last two max-pooled, grey, resized
      with ``INTER_AREA`` to ``screen_size``, pushed onto a stack of ``stack_num``; truncated after
      ``max_episode_steps`` agent steps; with ``episodic_life`` a lost life (lives left) ends the episode;
    - ``fire_on_life_loss`` (ding_lite's, both routes; off with ``episodic_life``, whose reset presses FIRE): after a
      step that lost a life in a game with FIRE, a FIRE step of ``frame_skip`` frames follows inside the same step
      (its reward added, its frame stacked), so that games that wait for FIRE go on whatever the policy does;
    - ``reward_clip`` (training only, as envpool's): each agent step's reward becomes its sign (a FIRE step after a
      lost life's on its own, as the envpool route adds its clipped reward).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self._cv2 = require("cv2", "atari", "atari")
        self._fire_action = require("ale_py", "atari", "atari").Action.FIRE
        self._game = _make(ale_id(cfg["env_id"]), cfg, frameskip=1,
                           repeat_action_probability=float(cfg["repeat_action_probability"]), full_action_space=False,
                           max_num_frames_per_episode=0)  # no frame limit of ALE's own: max_episode_steps cuts
        self.ale = self._game.unwrapped.ale  # type: ignore[attr-defined]
        self._actions = list(self._game.unwrapped._action_set)  # type: ignore[attr-defined]
        self._size, self._stack_num = int(cfg["screen_size"]), int(cfg["stack_num"])
        self._frame_skip, self._noop_max = int(cfg["frame_skip"]), int(cfg["noop_max"])
        self._max_steps, self._episodic_life = int(cfg["max_episode_steps"]), bool(cfg["episodic_life"])
        self._reward_clip = bool(cfg.get("reward_clip"))
        has_fire = self._fire_action in self._actions
        self._fire_reset = bool(cfg["use_fire_reset"]) and has_fire
        self._fire_on_life_loss = bool(cfg["fire_on_life_loss"]) and has_fire and not self._episodic_life
        self.observation_space = gym.spaces.Box(0, 255, (self._stack_num, self._size, self._size), np.uint8)
        self.action_space = gym.spaces.Discrete(len(self._actions))
        self._pool = [np.zeros((210, 160), np.uint8) for _ in range(2)]  # the last two raw frames of a step
        self._stack = np.zeros(self.observation_space.shape, np.uint8)
        self._elapsed, self._lives = self._max_steps + 1, 0  # the first reset starts a new game

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        new_game = seed is not None or not self._episodic_life or self.ale.game_over(with_truncation=False) or \
            self._elapsed >= self._max_steps
        # the no-op counts come from gymnasium's np_random, seeded here as gymnasium's env checker expects (the same
        # stream as numpy.random.default_rng(seed))
        super().reset(seed=seed)
        if seed is not None:
            self._game.reset(seed=seed)  # seeds and reloads the game
        if new_game:
            self.ale.reset_game()
            self._elapsed = 0
        for _ in range(int(self.np_random.integers(self._noop_max)) + 1 - self._fire_reset):
            self.ale.act(self._actions[0])
            if self.ale.game_over(with_truncation=False):
                self.ale.reset_game()
                new_game = True
        if self._fire_reset:
            self.ale.act(self._fire_action)
        self.ale.getScreenGrayscale(self._pool[0])
        self._push(self._pool[0], everywhere=new_game)
        self._lives = self.ale.lives()
        return self._stack.copy(), {"lives": self._lives}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward, game_over = self._act(self._actions[int(action)])
        self._elapsed += 1
        lives = self.ale.lives()
        life_lost = 0 < lives < self._lives
        if self._fire_on_life_loss and life_lost and not game_over and self._elapsed < self._max_steps:
            fire_reward, game_over = self._act(self._fire_action)
            reward += fire_reward
            self._elapsed += 1
        self._lives = lives
        truncated = self._elapsed >= self._max_steps
        terminated = game_over or (self._episodic_life and life_lost)
        return self._stack.copy(), reward, bool(terminated and not truncated), bool(truncated), {"lives": lives}

    def _act(self, action: Any) -> tuple[float, bool]:
        """One agent step: ``frame_skip`` frames (fewer where the game ends), the last two kept and max-pooled
        into the first buffer (a step cut short pushes that buffer as it stands, as envpool does)."""
        reward, skip, pooled = 0.0, self._frame_skip, min(self._frame_skip, 2)
        game_over = False
        while skip > 0 and not game_over:
            reward += self.ale.act(action)
            game_over = self.ale.game_over(with_truncation=False)
            if skip <= pooled:
                self.ale.getScreenGrayscale(self._pool[pooled - skip])
            skip -= 1
        if self._frame_skip > 1 and skip == 0:  # in place, as envpool: a later step cut short pushes this max
            np.maximum(self._pool[0], self._pool[1], out=self._pool[0])
        self._push(self._pool[0], everywhere=False)
        if self._reward_clip:  # to its sign, as envpool's reward_clip (Mnih et al. 2015), each agent step on its own
            reward = np.sign(reward)
        return float(reward), game_over

    def _push(self, frame: np.ndarray, everywhere: bool) -> None:
        small = self._cv2.resize(frame, (self._size, self._size), interpolation=self._cv2.INTER_AREA)
        if everywhere:
            self._stack[:] = small
        else:
            self._stack[:-1] = self._stack[1:]
            self._stack[-1] = small

    def close(self) -> None:
        self._game.close()


@ENV_REGISTRY.register("atari")
class AtariEnv:
    """An Atari game through ale-py, as envpool plays it (:class:`EnvpoolAtari`): 84x84 grey frames, 4 stacked,
    uint8 ``(4, 84, 84)``, envpool's Atari defaults (no sticky actions, no life-loss episodes, unclipped rewards, up
    to 30 no-op frames and FIRE after a reset, 27,000 agent steps per episode), and FIRE after a lost life.
    ``env=dict(type='atari', env_id='Pong-v5')``; extra ``[atari]``."""

    config: dict[str, Any] = dict(
        env_id=None,  # 'Pong-v5' (envpool's name) or an ale-py id such as 'ALE/Pong-v5'
        kwargs={},  # extra keyword arguments for gymnasium.make of the ALE env
        max_episode_steps=27000,  # agent steps (each frame_skip frames) before truncation
        repeat_action_probability=0.0,  # sticky actions (Machado et al. 2018 use 0.25; envpool's default is 0)
        frame_skip=4,  # frames per agent step (max-pooled over the last two)
        noop_max=30,  # a reset plays 1 to noop_max no-op frames (one of them FIRE in games that have it)
        stack_num=4,  # frames stacked into one observation
        screen_size=84,  # side of the square grey frame
        episodic_life=False,  # a lost life ends the episode (terminated); the game goes on in the next one
        use_fire_reset=True,  # press FIRE at a reset where the game has it
        fire_on_life_loss=True,  # press FIRE after a lost life where the game has it (the same on envpool)
        reward_clip=False,  # training rewards clipped to their sign (evaluations report the game's score)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        cls.check_config(cfg)
        return EnvpoolAtari({**cls.config, **cfg})  # an env section built outside compile_config lacks the defaults

    @classmethod
    def eval_config(cls, cfg: Mapping[str, Any]) -> Mapping[str, Any]:
        """Evaluations play whole games with unclipped rewards: the reported return is the game's score (Machado et
        al. 2018), not a life's or a clipped one, whatever the training settings."""
        return {**cfg, "episodic_life": False, "reward_clip": False}

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early on a missing ale-py or OpenCV, or an unknown game."""
        ale_py = require("ale_py", "atari", "atari")
        require("cv2", "atari", "atari")  # frames are resized with OpenCV
        gym.register_envs(ale_py)
        if not cfg.get("env_id"):
            raise ConfigError("env.env_id is required for env type 'atari' (e.g. env_id='Pong-v5')")
        check_env_id(ale_id(cfg["env_id"]))


@ENV_REGISTRY.register("mujoco")
class MujocoEnv:
    """A MuJoCo task through gymnasium[mujoco]: ``env=dict(type='mujoco', env_id='Hopper-v4')``; extra ``[mujoco]``.
    Observations are float32 (gymnasium gives float64; envpool float64 too, but the models run in float32).

    DI-engine's MuJoCo env keys are read too: its ``-v2`` / ``-v3`` ids (mujoco-py, which gymnasium no longer builds)
    run as ``-v4``, the same model and reward on the maintained ``mujoco`` bindings; ``use_act_scale`` and
    ``delay_reward_step`` do what they do there."""

    config: dict[str, Any] = dict(
        env_id=None,  # gymnasium id, e.g. 'Hopper-v4', 'HalfCheetah-v4' (DI-engine's 'Hopper-v3' runs as 'Hopper-v4')
        kwargs={},  # extra keyword arguments for gymnasium.make
        max_episode_steps=None,  # override the id's time limit (None: keep 1000)
        use_act_scale=False,  # take actions in [-1, 1], scaled to the env's bounds (DI-engine's key)
        delay_reward_step=0,  # give the summed rewards every this many steps and at the end (0: each step; DI-engine's)
        norm_obs=dict(use_norm=False),  # DI-engine's key; only False here (PPO: policy.model.obs_norm=True)
        norm_reward=dict(use_norm=False),  # DI-engine's key; only False here (PPO: policy.collect.reward_scale=True)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        cls._check(cfg)
        quiet_mujoco_asset_warnings()
        cfg = {**cls.config, **cfg}  # an env section built outside compile_config lacks the defaults
        extra = {} if cfg.get("max_episode_steps") is None else {"max_episode_steps": int(cfg["max_episode_steps"])}
        env = _make(mujoco_id(cfg["env_id"]), cfg, **{**retired_id_kwargs(cfg["env_id"]), **extra})
        if cfg["use_act_scale"]:
            env = gym.wrappers.RescaleAction(env, np.float32(-1.0), np.float32(1.0))
        if int(cfg["delay_reward_step"]) > 1:
            env = DelayedReward(env, int(cfg["delay_reward_step"]))
        return gym.wrappers.TransformObservation(
            env, lambda obs: obs.astype(np.float32),
            gym.spaces.Box(-np.inf, np.inf, env.observation_space.shape, np.float32))

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early on a missing mujoco package, an unknown id or a DI-engine setting not offered here; say which
        id runs where DI-engine's names another (once, before the envs are built)."""
        cls._check(cfg)
        env_id = cfg.get("env_id")
        if mujoco_id(env_id) != env_id:
            kwargs = retired_id_kwargs(env_id)
            setup_console_logging().info("note: env.env_id='%s' runs as '%s'%s (the same task on the mujoco bindings; "
                                         "gymnasium builds %s only with the retired mujoco-py)", env_id,
                                         mujoco_id(env_id), f" with {kwargs}" if kwargs else "", env_id)

    @classmethod
    def _check(cls, cfg: Mapping[str, Any]) -> None:
        require("mujoco", "mujoco", "mujoco")
        env_id = cfg.get("env_id")
        check_env_id(mujoco_id(env_id) if env_id else env_id)
        for key, instead in (("norm_obs", "policy.model.obs_norm=True"),
                             ("norm_reward", "policy.collect.reward_scale=True")):
            section = cfg.get(key)
            if isinstance(section, Mapping) and section.get("use_norm"):
                raise ConfigError(f"env.{key}.use_norm=True (DI-engine's normalising wrapper) is not offered by env "
                                  f"type 'mujoco'; PPO normalises in the policy instead: {instead}")
        int_at_least("env.delay_reward_step", cfg.get("delay_reward_step", 0), 0)


# MuJoCo's own notes on gymnasium's bundled model files, which a user cannot act on: MuJoCo >= 3.3 prints "WARNING:
# compiler attribute 'settotalmass' is deprecated ..." and a blank line on stderr each time half_cheetah.xml is loaded
# (every env of a HalfCheetah run, and before a refusal that comes after the probe env)
_ASSET_NOTES = ("compiler attribute 'settotalmass' is deprecated",)


def _mujoco_warning(message: str) -> None:
    if not any(note in message for note in _ASSET_NOTES):
        setup_console_logging().warning("warning: MuJoCo: %s", message.strip())


def quiet_mujoco_asset_warnings() -> None:
    """Route MuJoCo's C-level warnings through the ``ding_lite`` logger (``warning: MuJoCo: ...``, one line), leaving
    out the deprecation notes on gymnasium's bundled model files (:data:`_ASSET_NOTES`). Per process, idempotent."""
    import mujoco

    if hasattr(mujoco, "set_mju_user_warning") and mujoco.get_mju_user_warning() is not _mujoco_warning:
        mujoco.set_mju_user_warning(_mujoco_warning)


# DI-engine's MuJoCo ids run on mujoco-py, which gymnasium 1.x no longer builds; -v4 is the same model and reward
def mujoco_id(env_id: Any) -> str:
    """gymnasium's id for ``env_id``: DI-engine's ``Name-v2`` / ``Name-v3`` become ``Name-v4`` where that exists."""
    name, _, version = str(env_id).rpartition("-v")
    if version in ("2", "3") and f"{name}-v4" in gym.registry:
        return f"{name}-v4"
    return str(env_id)


# What a -v4 id needs to be its -v2 / -v3 task: Ant-v4 leaves out the contact forces (observation 27, not 111) and
# their cost in the reward unless asked
RETIRED_ID_KWARGS: dict[str, dict[str, Any]] = {"Ant": {"use_contact_forces": True}}


def retired_id_kwargs(env_id: Any) -> dict[str, Any]:
    """The gymnasium.make arguments that make ``mujoco_id(env_id)`` the task of a DI-engine ``-v2`` / ``-v3`` id
    ({} for any other id)."""
    name = str(env_id).rpartition("-v")[0]
    return dict(RETIRED_ID_KWARGS.get(name, {})) if mujoco_id(env_id) != str(env_id) else {}


class DelayedReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Rewards held back and given as their sum every ``every`` steps and at the episode's end (terminated or
    truncated); 0 at the steps between (DI-engine's ``delay_reward_step``). Its arguments are recorded so that
    ``env.spec.make()`` rebuilds it (gymnasium's env checker does)."""

    def __init__(self, env: gym.Env, every: int) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, every=every)
        super().__init__(env)
        self._every = every
        self._held = 0.0
        self._steps = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self._held, self._steps = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._held += float(reward)
        self._steps += 1
        if terminated or truncated or self._steps >= self._every:
            reward, self._held, self._steps = self._held, 0.0, 0
        else:
            reward = 0.0
        return obs, reward, terminated, truncated, info


class ImageObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """MiniGrid's ``image`` alone (as minigrid's ``ImgObsWrapper``), its arguments recorded so that
    ``env.spec.make()`` rebuilds it: gymnasium's env checker does, and ``ImgObsWrapper`` records none."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self.observation_space = env.observation_space["image"]  # type: ignore[index]

    def observation(self, observation: Any) -> Any:
        return observation["image"]


@ENV_REGISTRY.register("minigrid")
class MinigridEnv:
    """A MiniGrid task, the agent's 7x7x3 view as the observation (:class:`ImageObservation`, as minigrid's
    ``ImgObsWrapper``): ``env=dict(type='minigrid', env_id='MiniGrid-DoorKey-5x5-v0')``; extra ``[minigrid]``."""

    config: dict[str, Any] = dict(
        env_id=None,  # gymnasium id, e.g. 'MiniGrid-DoorKey-5x5-v0'
        kwargs={},  # extra keyword arguments for gymnasium.make
        max_episode_steps=None,  # override the task's time limit, MiniGrid's max_steps (None: keep it)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        cls.check_config(cfg)
        cfg = {**cls.config, **cfg}  # an env section built outside compile_config lacks the defaults
        # MiniGrid's own max_steps, not gymnasium's TimeLimit: the env truncates at max_steps whatever a TimeLimit
        # says and its success reward is 1 - 0.9 * steps / max_steps, so only this changes both
        extra = {} if cfg.get("max_episode_steps") is None else {"max_steps": int(cfg["max_episode_steps"])}
        return ImageObservation(_make(str(cfg["env_id"]), cfg, **extra))

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early on a missing minigrid package or an unknown id."""
        require("minigrid", "minigrid", "minigrid")
        check_env_id(cfg.get("env_id"))
        if cfg.get("max_episode_steps") is not None and "max_steps" in (cfg.get("kwargs") or {}):
            raise ConfigError("env.max_episode_steps and env.kwargs.max_steps both set MiniGrid's time limit: keep one")
