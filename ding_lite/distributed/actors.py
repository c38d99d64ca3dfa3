"""Actor shells of the parallel pipeline: what one Ray actor runs in its own process.

A shell builds its own env manager, policy (only the mode it needs) and plain worker (the registered collector or
evaluator, built exactly as the serial pipeline builds them) from the compiled config it receives: the config travels,
models never do. Shells are plain classes, usable and testable without Ray; the actor factory
(:mod:`ding_lite.distributed.remote`) wraps them with ``ray.remote``. New weights arrive as the state dict Ray resolves
from the one copy the driver put in the object store, and only when their version differs from the one already
loaded.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
from easydict import EasyDict

from ding_lite.build import build, build_env_manager, build_eval_env_manager, build_evaluator, import_plugins
from ding_lite.data.batch import Batch
from ding_lite.envs.env_manager import EpisodeEnd
from ding_lite.utils.seed import SeedPlan, set_seed
from ding_lite.utils.torch_setup import configure_torch
from ding_lite.worker.evaluator import EvalResult


class CollectOutput(NamedTuple):
    """One collect of one collector actor, returned to the driver as a single object (whole or not at all)."""

    samples: Batch  # the policy's train samples
    episodes: list[EpisodeEnd]  # episodes that ended during the collect
    env_steps: int  # env steps taken, all envs of the actor together
    seconds: float  # wall time of the collect inside the actor
    weights_version: int  # learner train_iter of the weights the samples were collected with
    load_seconds: float  # time spent loading new weights before collecting (0.0 when none arrived)
    env_restarts: int  # env worker restarts of the actor's env manager so far (its life, not this collect)


def _actor_config(cfg: Mapping[str, Any]) -> EasyDict:
    """The actor's config. With ``policy.cuda=True`` where this process sees no CUDA (a machine without a GPU, or an
    actor Ray gave no GPU), a copy whose policy acts on the CPU without a warning of its own: the run's learner warned
    once, and each actor repeated it (1 + collectors + 1 lines). (An in-process shell shares the caller's sections.)"""
    if (cfg.get("policy") or {}).get("cuda") and not torch.cuda.is_available():
        out = EasyDict(copy.deepcopy(cfg))  # a frozen config's deep copy is writable
        out["policy"]["cuda"] = False
        return out
    return EasyDict(cfg)


class _Shell:
    """Common part: plugins imported, process seeded, one torch thread, versioned weight loading."""

    def __init__(self, cfg: Mapping[str, Any], seed: int, folders: tuple[str, ...] = ()) -> None:
        # the config's custom types must be registered in this fresh process too, found where the driver found them
        import_plugins(cfg, folders=folders)
        self.cfg = _actor_config(cfg)
        self.seed = seed
        set_seed(seed)
        configure_torch()
        self.version = -1  # train_iter of the loaded weights (-1: the fresh model's own initialisation)
        self._mode: Any = None  # the policy mode whose state dict the weights fill

    def load_weights(self, weights: Mapping[str, Any] | None, version: int) -> float:
        """Load ``weights`` (a collect/eval-mode state dict) as ``version``; returns the seconds it took. ``None``
        means the driver knows this actor already holds ``version``."""
        if weights is None:
            if version != self.version:
                raise RuntimeError(f"actor holds weights version {self.version}, driver assumed {version}")
            return 0.0
        start = time.perf_counter()
        self._mode.load_state_dict(weights)
        self.version = version
        return time.perf_counter() - start

    def ready(self) -> bool:
        """Answers once the actor is built (the driver waits on it to surface start-up errors)."""
        return True


class CollectorShell(_Shell):
    """A collector actor: env manager over ``env.collector_env_num`` envs seeded from ``seed``, the policy's collect
    mode, and the configured collector (``policy.collect.collector.type``). ``games`` (the game's actor side, None
    for a plain env) wraps the env manager (``games.wrap(cfg, seed, inner)``: the self-play arena) and takes the
    driver's message before each collect (``games.update(message)``: the pool as it is now)."""

    def __init__(self, cfg: Mapping[str, Any], seed: int, games: Any = None, folders: tuple[str, ...] = ()) -> None:
        super().__init__(cfg, seed, folders)
        inner = build_env_manager(self.cfg.env, self.cfg.env.collector_env_num, seed)
        try:
            self.games = games
            self.env = inner if games is None else games.wrap(self.cfg, seed, inner)
            policy = build(self.cfg, "policy", enable_field=["collect"])
            self._mode = policy.collect_mode
            self.collector = build(self.cfg, "policy.collect.collector", self.env, policy.collect_mode)
        except BaseException:
            inner.close()
            raise

    def collect(self, weights: Mapping[str, Any] | None, version: int, n_sample: int, train_iter: int,
                env_step: int, message: Any = None) -> CollectOutput:
        """Load ``weights`` if new, take the game's ``message`` (if any), then collect ``n_sample`` steps.
        ``env_step`` is the run's global count: the exploration schedule (e.g. DQN's ε) follows the whole run, not
        this actor's share of it."""
        load_seconds = self.load_weights(weights, version)
        if message is not None:
            self.games.update(message)
        start = time.perf_counter()
        self.collector.continue_from(env_step)
        samples, episodes = self.collector.collect(n_sample, train_iter)
        return CollectOutput(samples, episodes, self.collector.env_step - env_step, time.perf_counter() - start,
                             self.version, load_seconds, self.env.restart_count)

    def env_steps(self) -> int:
        """Global env step reached by this actor's last collect (for monitoring)."""
        return int(self.collector.env_step)

    def close(self) -> None:
        self.collector.close()


class EvaluatorShell(_Shell):
    """The evaluator actor: env manager over ``env.evaluator_env_num`` envs and the configured evaluator with the
    policy's eval mode, seeded as in the serial pipeline so that evaluations of both modes are comparable."""

    def __init__(self, cfg: Mapping[str, Any], seed: int, folders: tuple[str, ...] = ()) -> None:
        super().__init__(cfg, seed, folders)
        self.env = build_eval_env_manager(self.cfg.env, self.cfg.env.evaluator_env_num, SeedPlan(seed).evaluator)
        try:
            self.policy = build(self.cfg, "policy", enable_field=["eval"])
            self._mode = self.policy.eval_mode
            self.evaluator = build_evaluator(self.cfg, self.env, self.policy, SeedPlan(seed).evaluator)
        except BaseException:
            self.env.close()
            raise

    def eval(self, weights: Mapping[str, Any] | None, version: int, train_iter: int,
             env_step: int) -> tuple[EvalResult, int]:
        """Load ``weights`` if new and run one evaluation; also the env worker restarts of this actor so far."""
        self.load_weights(weights, version)
        return self.evaluator.eval(train_iter, env_step), self.env.restart_count

    def final_eval(self, weights: Mapping[str, Any], n_episode: int, seed: int) -> tuple[EvalResult, int]:
        """After the run: ``weights`` (an eval-mode state dict, e.g. the best checkpoint's) over ``n_episode``
        episodes seeded from ``seed``, with no stop rule (as the serial pipeline's final evaluation); also the env
        worker restarts of this actor so far (those of the final evaluation included)."""
        self.load_weights(weights, -2)  # -2: no train_iter version; the next eval gets full weights again
        result = build_evaluator(self.cfg, self.env, self.policy, seed, n_episode, stop=False).eval()
        return result, self.env.restart_count

    def close(self) -> None:
        self.evaluator.close()
