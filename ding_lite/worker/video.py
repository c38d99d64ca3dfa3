"""Evaluation videos: episodes of a policy's eval mode played in one env that renders, written as mp4.

The env is built from the run's ``env`` section with ``kwargs.render_mode='rgb_array'`` (gymnasium's way to ask for
frames: classic control, Atari through ale-py, MuJoCo offscreen, any env type whose section takes ``kwargs`` for
``gymnasium.make``), or, for envpool's Atari games, which do not render, from the observations themselves (the grey
84x84 frames the agent sees, the newest of each stack). It is seeded as the evaluator's first env is (and plays its
variation schedule), so video ``k`` shows that env's ``k``-th evaluation episode: the same actions, return and
length. Each video holds ``length + 1`` frames (the reset frame, then one per step).

MuJoCo renders offscreen with ``MUJOCO_GL=egl`` (set by :func:`prepare_offscreen_rendering` where no display is
found and nothing else was chosen; ``osmesa`` works too where Mesa's software renderer is installed).
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from ding_lite.data.keys import ACTION
from ding_lite.envs.actions import action_to_env
from ding_lite.errors import ConfigError, EnvError
from ding_lite.extras import install_hint
from ding_lite.registry import ENV_REGISTRY, import_modules
from ding_lite.worker.evaluator import eval_step_cap

VIDEO_EXTRA = install_hint("imageio_ffmpeg")
MIN_SIDE = 256  # observation frames smaller than this are scaled up by a whole factor (envpool's 84x84 -> 252+)


class Video(NamedTuple):
    """One recorded episode."""

    path: Path
    episode_return: float
    length: int  # env steps; the file holds length + 1 frames
    seed: int | None  # the env's reset seed of this episode (None: it continued the env's RNG stream)


def prepare_offscreen_rendering() -> None:
    """Where there is no display: MuJoCo renders with EGL (unless ``MUJOCO_GL`` chose otherwise; this must run before
    ``mujoco`` is imported, which picks its GL backend then), and pygame (classic control) gets SDL's dummy video and
    audio drivers instead of complaining on stderr that it found no display."""
    if not sys.platform.startswith("linux") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return
    if "MUJOCO_GL" not in os.environ:
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


def render_section(env_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The ``env`` section asking for frames: ``kwargs.render_mode='rgb_array'`` for env types that take gymnasium
    ``kwargs``; unchanged for envpool (frames come from the observations). Anything else cannot render: a
    :class:`ConfigError` naming the env type and what would work."""
    import_modules(env_cfg.get("import_names"), "env")
    env_type = str(env_cfg.get("type"))
    if env_type == "envpool":
        return dict(env_cfg)
    declared = getattr(ENV_REGISTRY.get(env_type), "config", {})
    if "kwargs" not in declared:
        raise ConfigError(f"env type '{env_type}' cannot render: videos need an env type that passes kwargs to "
                          f"gymnasium.make (so that kwargs.render_mode='rgb_array' reaches the env), such as "
                          f"'gymnasium', 'atari' or 'mujoco'; give '{env_type}' a kwargs entry in its config")
    kwargs = dict(env_cfg.get("kwargs") or {})
    kwargs["render_mode"] = "rgb_array"
    return {**env_cfg, "kwargs": kwargs}


class FrameEnv:
    """One env that gives a frame after every reset and step: ``env.render()``, or the observation for envpool."""

    def __init__(self, env_cfg: Mapping[str, Any], slot_of: int = 1) -> None:
        from ding_lite.envs.gym_env import build_env, eval_env_config
        from ding_lite.envs.variations import variation_env_fns

        prepare_offscreen_rendering()
        self.cfg = eval_env_config(render_section(env_cfg))  # videos are of evaluation episodes
        self.name = str(self.cfg.get("env_id") or self.cfg.get("type"))
        fns = variation_env_fns(self.cfg, slot_of)  # env 0 of the evaluator's slot_of envs: its variation schedule
        self.env: gym.Env = fns[0]() if fns else build_env(self.cfg)
        self._from_obs = self.cfg.get("type") == "envpool"
        try:
            self._check()
        except BaseException:
            self.env.close()
            raise

    def _check(self) -> None:
        if self._from_obs:
            space = self.env.observation_space
            if not (isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3):
                raise ConfigError(f"env '{self.name}' (env.type='envpool') cannot render: envpool gives no frames, "
                                  f"and its observations {space} are no images; record the same task through "
                                  f"gymnasium: --set env.type=mujoco env.manager.type=subprocess (or env.type="
                                  f"gymnasium with this env_id; envpool's manager runs envpool envs only)")
        elif self.env.render_mode != "rgb_array":
            raise ConfigError(f"env '{self.name}' cannot render: it ignored kwargs.render_mode='rgb_array' (its "
                              f"render_mode is {self.env.render_mode!r})")

    def frame(self, obs: Any) -> np.ndarray:
        """The current frame, ``(H, W, 3)`` uint8."""
        if self._from_obs:
            grey = np.asarray(obs)[-1]  # the newest frame of the stack
            scale = max(1, -(-MIN_SIDE // min(grey.shape)))
            return np.repeat(np.repeat(grey, scale, axis=0), scale, axis=1)[..., None].repeat(3, axis=2)
        try:
            frame = self.env.render()
        except gym.error.DependencyNotInstalled as exc:
            raise EnvError(f"env '{self.name}' cannot render: {str(exc).splitlines()[0]}") from None
        except Exception as exc:  # e.g. MuJoCo without an offscreen GL context
            raise EnvError(f"env '{self.name}' cannot render offscreen ({type(exc).__name__}: "
                           f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); for MuJoCo set "
                           f"MUJOCO_GL=egl (or osmesa) before starting") from None
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise EnvError(f"env '{self.name}' cannot render: render() gave {type(frame).__name__}, not an "
                           f"(H, W, 3) image")
        return frame

    @property
    def fps(self) -> int:
        return int(self.env.metadata.get("render_fps") or 30)

    def close(self) -> None:
        self.env.close()


def record_episodes(frame_env: FrameEnv, policy: Any, out_dir: Path, name: str, n_episode: int = 1,
                    seed: int | None = None, max_episode_steps: int | None = None) -> list[Video]:
    """Play ``n_episode`` episodes with ``policy`` (an eval mode) and write ``<out_dir>/<name>_ep<k>.mp4`` each
    (atomically). The first reset is seeded with ``seed`` (env and action space), later ones continue the env's RNG
    stream, as an env manager's do. ``max_episode_steps``: the evaluator's step cap
    (``policy.eval.evaluator.max_episode_steps``), where an episode is cut as the evaluation cuts it (None: none)."""
    writer_lib = import_ffmpeg()
    env = frame_env.env
    if seed is not None:
        env.action_space.seed(seed)
    policy.reset()
    videos = []
    with policy.rollout_weights():  # the weights are fixed during the episodes, as in an evaluation
        for k in range(n_episode):
            videos.append(_record_one(frame_env, policy, Path(out_dir) / f"{name}_ep{k}.mp4", writer_lib,
                                      seed if k == 0 else None, max_episode_steps))
    return videos


def _record_one(frame_env: FrameEnv, policy: Any, path: Path, writer_lib: Any, seed: int | None,
                max_episode_steps: int | None = None) -> Video:
    env = frame_env.env
    obs, _ = env.reset(seed=seed)
    with mp4_writer(writer_lib, path, frame_env.fps) as write:
        write(frame_env.frame(obs))
        total, length, done = 0.0, 0, False
        while not done:
            action = policy.forward(_batch_of_one(obs))[ACTION]
            obs, reward, terminated, truncated, _ = env.step(action_to_env(action, env.action_space)[0])
            total += float(reward)
            length += 1
            # cut at the evaluator's cap as the evaluation cuts its episode (the same episode, and a policy that
            # never ends one in an env without a time limit does not record for ever)
            done = bool(terminated or truncated) or length == max_episode_steps
            write(frame_env.frame(obs))
    policy.reset()
    return Video(path, total, length, seed)


def _batch_of_one(obs: Any) -> Any:
    if isinstance(obs, Mapping):
        return {k: _batch_of_one(v) for k, v in obs.items()}
    return np.asarray(obs)[None]


def import_ffmpeg() -> Any:
    """``imageio_ffmpeg`` (it brings its own ffmpeg binary), or a :class:`ConfigError` naming the extra."""
    try:
        import imageio_ffmpeg
    except ImportError:
        raise ConfigError(f"videos need the imageio-ffmpeg package (not installed): {VIDEO_EXTRA}") from None
    return imageio_ffmpeg


@contextmanager
def mp4_writer(lib: Any, path: Path, fps: int) -> Iterator[Callable[[np.ndarray], None]]:
    """A function that appends a frame to ``path`` (H.264; odd sides padded by one black row/column); the file
    appears only once complete (written beside it, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".mp4", dir=path.parent)
    os.close(fd)
    gen = None

    def write(frame: np.ndarray) -> None:
        nonlocal gen
        frame = _even(np.ascontiguousarray(frame, dtype=np.uint8))
        if gen is None:
            gen = lib.write_frames(tmp, (frame.shape[1], frame.shape[0]), fps=fps, codec="libx264", quality=7,
                                   macro_block_size=1, ffmpeg_log_level="error")
            gen.send(None)
        gen.send(frame)

    try:
        yield write
        if gen is not None:
            gen.close()
            gen = None
            os.replace(tmp, path)
    finally:
        if gen is not None:
            gen.close()
        if os.path.exists(tmp):
            os.unlink(tmp)


def _even(frame: np.ndarray) -> np.ndarray:
    pad_h, pad_w = frame.shape[0] % 2, frame.shape[1] % 2
    if pad_h or pad_w:
        frame = np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)))
    return frame


@contextmanager
def global_rng_kept() -> Iterator[None]:
    """Python's, NumPy's and torch's global random states as they were before the block: a training run that
    records videos draws the same minibatches, exploration and updates as one that does not (building the
    recorder's policy initialises its weights from torch's global generator, which then shifted every later draw)."""
    import random

    import torch

    py_state, np_state = random.getstate(), np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


class PeriodicVideos:
    """Every ``policy.eval.evaluator.video_every``-th evaluation of a training run, one episode of the current policy
    as ``<exp>/videos/eval_iter<N>_ep0.mp4`` (the evaluator's first env, its first episode).

    Args:
        env_cfg: the ``env`` section.
        exp_dir: the run's folder.
        weights: returns the learner policy's eval-mode state dict (the weights to record).
        policy: an eval-only policy of the run's config, which records with those weights.
        every: record at every ``every``-th evaluation.
        seed: the evaluator's seed.
        max_episode_steps: the evaluator's step cap (None: none), where a video's episode is cut too.
    """

    def __init__(self, env_cfg: Mapping[str, Any], exp_dir: Path, weights: Callable[[], dict], policy: Any,
                 every: int, seed: int, max_episode_steps: int | None = None) -> None:
        import_ffmpeg()
        self.every = every
        self.out_dir = Path(exp_dir) / "videos"
        self.seed = seed
        self.max_episode_steps = max_episode_steps
        self._weights = weights
        self._policy = policy
        self._frames = FrameEnv(env_cfg, int(env_cfg["evaluator_env_num"]))
        self._count = 0

    @classmethod
    def from_config(cls, cfg: Any, exp_dir: Path, weights: Callable[[], dict], make_policy: Callable[[], Any],
                    seed: int) -> PeriodicVideos | None:
        """The recorder a config asks for (``video_every`` of the evaluator section > 0), else None; an env that
        cannot render fails here, before the run writes anything. ``make_policy`` builds an eval-only policy."""
        every = int(cfg.policy.eval.evaluator.get("video_every", 0) or 0)
        if every < 0:
            raise ConfigError(f"policy.eval.evaluator.video_every must be >= 0 (0: no videos), got {every}")
        if every <= 0:
            return None
        with global_rng_kept():  # the recorder's policy is built (weights drawn) off the run's random streams
            return cls(cfg.env, exp_dir, weights, make_policy(), every, seed,
                       eval_step_cap(cfg.policy.eval.evaluator))

    def after_eval(self, train_iter: int) -> list[Video]:
        """Count an evaluation; on every ``every``-th (the first included) record one episode."""
        self._count += 1
        if (self._count - 1) % self.every:
            return []
        self._policy.eval_mode.load_state_dict(self._weights())
        with global_rng_kept():
            return record_episodes(self._frames, self._policy.eval_mode, self.out_dir, f"eval_iter{train_iter}", 1,
                                   self.seed, self.max_episode_steps)

    def close(self) -> None:
        self._frames.close()

