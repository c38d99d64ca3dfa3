"""Parallel pipeline on Ray: the serial train loop, with collection and evaluation in Ray actors.

The driver (this process) holds the learner and the replay buffer. ``parallel.n_collectors`` collector actors and one
evaluator actor run the plain collector / evaluator classes inside the shells of :mod:`ding_lite.entry.parallel_actors`;
each builds its own envs and policy from the config. The learner's weights go into Ray's object store once per
broadcast and every actor loads that one copy. The loop itself is the serial pipeline's: the driver-side stand-ins
below answer ``collect`` / ``eval`` as the local workers do.

- Off-policy: asynchronous. ``collect`` returns the batch of whichever collector finished first (``ray.wait``); the
  loop pushes it, trains ``update_per_collect`` times, and the next ``collect`` sends that collector off again with
  the newest weights. The policy lag (learner iteration minus the weights' iteration) is logged per batch.
- On-policy: synchronous rounds. Every collector collects with the same weights version; the loop trains on the
  union of their samples.

Ray is optional (``pip install -e .[ray]``) and imported only when a parallel run starts.
"""
from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ding_lite.data.batch import Batch, concat_batches
from ding_lite.entry.common import (
    ConfigLike,
    build_buffer,
    build_policy,
    fill_model_shapes_from_env,
)
from ding_lite.entry.parallel_actors import CollectorShell, CollectOutput, EvaluatorShell
from ding_lite.entry.serial import run_training, start_run
from ding_lite.errors import ConfigError, PluginImportError, WorkerError
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.log import setup_console_logging
from ding_lite.worker.evaluator import EvalResult

# The ``parallel`` section of every config (compile_config merges it in; the serial pipeline ignores it).
PARALLEL_CONFIG: dict[str, Any] = dict(
    n_collectors=2,  # collector actors
    num_cpus=None,  # CPUs of the embedded local Ray instance (None: this machine's CPU count); unused with --address
    collector_num_cpus=1.0,  # CPUs Ray reserves for each collector actor
    evaluator_num_cpus=0.0,  # CPUs Ray reserves for the evaluator actor (it runs while the learner waits for it)
    broadcast_interval=1,  # off-policy: new weights go out every this many train iterations (on-policy: every round)
    max_actor_restarts=3,  # dead actors replaced over the whole run before it stops with an error
)

RAY_INSTALL_HINT = "pip install -e '.[ray]' (or pip install 'ray[default]')"

log = logging.getLogger("ding_lite")


def parallel_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                      max_train_iter: int | None = None, *, address: str | None = None,
                      exp_dir: str | Path | None = None, resume: bool = False, load_ckpt: str | Path | None = None,
                      strict: bool = False, overrides: tuple[str, ...] = (), progress: bool = True) -> dict[str, Any]:
    """Train as :func:`~ding_lite.entry.serial.serial_pipeline` does, with collectors and evaluator as Ray actors.

    ``config``, ``seed``, ``max_env_step``, ``max_train_iter``, ``exp_dir``, ``resume``, ``load_ckpt``, ``strict``,
    ``overrides`` and ``progress`` are as in ``serial_pipeline``; the config's ``parallel`` section sizes the run.

    Args:
        address: Ray cluster to join (``'auto'`` or ``'HOST:PORT'``, as printed by ``ray start --head``). None starts
            an embedded local Ray instance for this run and stops it afterwards. If this process is already connected
            to Ray (``ray.init`` was called), that connection is used and left open.

    Returns:
        The serial result dict plus the parallel statistics, also written to ``<exp_dir>/result.json``.

    Example::

        from ding_lite.entry import parallel_pipeline
        parallel_pipeline('dizoo/classic_control/cartpole/config/cartpole_dqn_config.py', seed=0)
    """
    ray = import_ray()
    start = time.perf_counter()
    run = start_run(config, seed, exp_dir, resume, load_ckpt, strict, overrides)
    cfg = run.cfg
    check_parallel_config(cfg.parallel)
    fill_model_shapes_from_env(cfg)  # env errors surface here, before any actor starts
    setup_console_logging()
    with ray_session(ray, address, cfg.parallel.num_cpus), _ParallelParts(ray, cfg, seed) as parts:
        return run_training(cfg, parts, run.exp_dir, run.ckpt_path, max_env_step, max_train_iter, progress=progress,
                            seed=seed, start=start, asked_dir=run.asked_dir)


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`PluginImportError` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise PluginImportError(f"the parallel mode needs Ray, which is not installed ({exc}): {RAY_INSTALL_HINT}") \
            from exc
    return ray


def check_parallel_config(par: Mapping[str, Any]) -> None:
    """Raise a :class:`ConfigError` naming the key for values no run can use."""
    for key, low in (("n_collectors", 1), ("broadcast_interval", 1), ("max_actor_restarts", 0)):
        if int(par[key]) < low:
            raise ConfigError(f"parallel.{key} must be at least {low}, got {par[key]!r}")
    for key in ("collector_num_cpus", "evaluator_num_cpus"):
        if float(par[key]) < 0:
            raise ConfigError(f"parallel.{key} must be >= 0, got {par[key]!r}")
    if par["num_cpus"] is not None and int(par["num_cpus"]) < 1:
        raise ConfigError(f"parallel.num_cpus must be a positive int or None (the CPU count), got {par['num_cpus']!r}")


@contextmanager
def ray_session(ray: Any, address: str | None, num_cpus: int | None) -> Iterator[None]:
    """Connect to Ray for one run: join ``address``, or start an embedded local instance (``num_cpus`` or the CPU
    count, no dashboard, Ray's own logging at ERROR). What this function started or joined it shuts down on exit,
    Ctrl-C included; an existing connection of the caller is used and left open."""
    if ray.is_initialized():
        yield
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage-stats notice on the console
    quiet = dict(logging_level=logging.ERROR, log_to_driver=True)
    if address:
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, ValueError) as exc:
            raise ConfigError(f"cannot join the Ray cluster at --address {address!r}: {_last_line(exc)}. Start one "
                              f"with `ray start --head` or leave --address out for a local instance; if the cluster "
                              f"uses token authentication, export RAY_AUTH_MODE=token here too, with its token in "
                              f"~/.ray/auth_token or RAY_AUTH_TOKEN (see docs/ray.md)") from exc
    else:
        # address='local': a new instance even where `ray start` left a cluster on this machine (plain ray.init()
        # would join that one)
        ray.init(address="local", num_cpus=int(num_cpus or os.cpu_count() or 1), include_dashboard=False, **quiet)
    try:
        yield
    finally:
        ray.shutdown()


def _to_cpu(tree: Any) -> Any:
    """A state dict with every tensor on the CPU (actors may have no GPU); mappings keep their type and metadata."""
    if isinstance(tree, Mapping):
        out: Any = type(tree)((k, _to_cpu(v)) for k, v in tree.items())  # type: ignore[call-arg]
        if hasattr(tree, "_metadata"):  # torch's state-dict version info
            out._metadata = tree._metadata  # type: ignore[attr-defined]
        return out
    return tree.cpu() if hasattr(tree, "cpu") else tree


class _Weights:
    """The learner's newest weights in Ray's object store: one ``ray.put`` per broadcast, one copy every actor loads."""

    def __init__(self, ray: Any, policy: Any) -> None:
        self.ray = ray
        self.policy = policy
        self.ref: Any = None
        self.version = -1  # train_iter of the weights behind ``ref``
        self.count = 0
        self.seconds = 0.0
        self.logger: Any = None

    def latest(self, train_iter: int, interval: int) -> tuple[Any, int]:
        """``(ref, version)`` of the weights to send; new ones are put when ``interval`` iterations passed."""
        if self.ref is None or train_iter - self.version >= interval:
            start = time.perf_counter()
            self.ref = self.ray.put(_to_cpu(self.policy.collect_mode.state_dict()))
            elapsed = time.perf_counter() - start
            self.version = train_iter
            self.count += 1
            self.seconds += elapsed
            if self.logger is not None:
                self.logger.scalar("speed/broadcast_ms", 1000 * elapsed, train_iter)
        return self.ref, self.version


class _ActorFactory:
    """Creates the actors (from the config, with fresh seeds), replaces dead ones within ``max_actor_restarts`` and
    closes them all at the end."""

    def __init__(self, ray: Any, cfg: Any, seed: int) -> None:
        par = cfg.parallel
        self.ray = ray
        self.cfg = to_plain(cfg)  # what travels to each actor: the compiled config, shapes filled
        self.seed = seed
        self.env_num = int(cfg.env.collector_env_num)
        self.max_restarts = int(par.max_actor_restarts)
        self.restarts = 0
        self.created = 0  # collectors created so far; the k-th gets seed + k * env_num, so no two share env seeds
        self.started = 0  # actors started so far (numbers their names)
        self.tag = f"ding_lite-{os.getpid()}-{id(self):x}"  # names: <tag>/collector<slot>-<k>, <tag>/evaluator-<k>
        self.collector_cls = ray.remote(num_cpus=float(par.collector_num_cpus), max_restarts=0)(CollectorShell)
        self.evaluator_cls = ray.remote(num_cpus=float(par.evaluator_num_cpus), max_restarts=0)(EvaluatorShell)
        self.live: dict[str, Any] = {}  # role ('collector0', ..., 'evaluator') -> actor handle
        self._restart: dict[str, Callable[[], Any]] = {}  # role -> starts a new actor for it
        self.logger: Any = None

    def collector(self, slot: int) -> Any:
        """Start the collector actor of ``slot`` (the k-th collector started gets seed + k * collector_env_num)."""
        seed = self.seed + self.created * self.env_num
        self.created += 1
        return self._start(f"collector{slot}", self.collector_cls, seed, lambda: self.collector(slot))

    def evaluator(self) -> Any:
        """Start the evaluator actor (the serial pipeline's eval seeds)."""
        return self._start("evaluator", self.evaluator_cls, self.seed, self.evaluator)

    def _start(self, role: str, cls: Any, seed: int, again: Callable[[], Any]) -> Any:
        handle = cls.options(name=f"{self.tag}/{role}-{self.started}").remote(self.cfg, seed)
        self.started += 1
        self.live[role] = handle
        self._restart[role] = again
        return handle

    def wait_ready(self, roles: list[str] | None = None) -> None:
        """Block until the actors of ``roles`` (default: all) are built; a start-up failure is a :class:`WorkerError`
        with its cause."""
        refs = {self.live[role].ready.remote(): role for role in (roles or list(self.live))}
        for ref, role in refs.items():
            try:
                self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:
                raise WorkerError(f"the {role} actor failed to start: {_last_line(exc)}") from None

    def replace(self, role: str, exc: Exception) -> Any:
        """A new actor for ``role`` after ``exc`` (its death); counts against ``parallel.max_actor_restarts``."""
        if getattr(exc, "actor_init_failed", False):
            raise WorkerError(f"the {role} actor failed to start: {_last_line(exc)}") from None
        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise WorkerError(f"the {role} actor died and parallel.max_actor_restarts={self.max_restarts} replacements "
                              f"are used up: {_last_line(exc)}") from None
        self.ray.kill(self.live[role])  # it may be unreachable rather than dead: make sure
        handle = self._restart[role]()
        self.wait_ready([role])
        message = (f"[parallel] {role} actor died ({_last_line(exc)}); replaced by a new actor "
                   f"(restart {self.restarts}/{self.max_restarts})")
        if self.logger is not None:
            self.logger.info(message)
        else:
            log.info(message)
        return handle

    def close(self, timeout: float = 10.0) -> None:
        """Let every actor close its envs (after its running task), then end them."""
        handles = list(self.live.values())
        self.live.clear()
        if not handles:
            return
        done = [h.close.remote() for h in handles]
        self.ray.wait(done, num_returns=len(done), timeout=timeout)
        for handle in handles:
            self.ray.kill(handle)


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _task_error(exc: Exception) -> BaseException:
    """The exception a remote task raised, as itself (a ding_lite error keeps its one-line message)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


class _RemoteCollectors:
    """Driver-side stand-in for a collector, served by ``parallel.n_collectors`` collector actors.

    ``collect(n_sample, train_iter)`` returns ``(samples, episodes)`` as a local collector does: the next finished
    batch of any actor (off-policy), or the union of one synchronous round of all actors (on-policy). Each actor
    collects ``n_sample`` steps per call. ``env_step`` counts the env steps of every batch received.
    """

    def __init__(self, ray: Any, cfg: Any, factory: _ActorFactory, weights: _Weights) -> None:
        self.ray = ray
        self.factory = factory
        self.weights = weights
        self.on_policy = bool(cfg.policy.on_policy)
        self.interval = int(cfg.parallel.broadcast_interval)
        n = int(cfg.parallel.n_collectors)
        self.actors = [factory.collector(slot) for slot in range(n)]
        self.loaded: list[int | None] = [None] * n  # weights version each actor holds (None: not known)
        self.pending: dict[Any, int] = {}  # in-flight collect -> slot
        self.idle = list(range(n))  # off-policy: slots whose last batch was handed out and that wait for new work
        self.env_step = 0
        self.logger: Any = None
        self.batches = 0
        self.lag_sum = 0
        self.lag_max = 0
        self.slot_steps = [0] * n
        self.slot_seconds = [0.0] * n
        self.load_seconds: list[float] = []

    def collect(self, n_sample: int, train_iter: int = 0) -> tuple[Batch, list]:
        """The next samples for the learner (see the class docstring)."""
        if self.on_policy:
            return self._round(n_sample, train_iter)
        return self._next(n_sample, train_iter)

    def _next(self, n_sample: int, train_iter: int) -> tuple[Batch, list]:
        ref, version = self.weights.latest(train_iter, self.interval)
        for slot in self.idle:
            self._submit(slot, ref, version, n_sample, train_iter)
        self.idle = []
        while True:
            slot, out = self._wait_one()
            if out is None:  # the actor died: its replacement starts over, nothing of the lost batch is kept
                self._submit(slot, ref, version, n_sample, train_iter)
                continue
            self.idle.append(slot)
            self._account(slot, out, train_iter)
            return out.samples, out.episodes

    def _round(self, n_sample: int, train_iter: int) -> tuple[Batch, list]:
        ref, version = self.weights.latest(train_iter, 1)  # on-policy: always the learner's current weights
        for slot in range(len(self.actors)):
            self._submit(slot, ref, version, n_sample, train_iter)
        outputs: dict[int, CollectOutput] = {}
        while self.pending:
            slot, out = self._wait_one()
            if out is None:  # the replacement collects this round's share with the same weights
                self._submit(slot, ref, version, n_sample, train_iter)
            else:
                outputs[slot] = out
        for slot in sorted(outputs):
            self._account(slot, outputs[slot], train_iter)
        episodes = [e for slot in sorted(outputs) for e in outputs[slot].episodes]
        return concat_batches([outputs[slot].samples for slot in sorted(outputs)]), episodes

    def _submit(self, slot: int, ref: Any, version: int, n_sample: int, train_iter: int) -> None:
        # The weights travel only to an actor that does not hold this version yet (Ray resolves the ref there).
        weights = ref if self.loaded[slot] != version else None
        self.loaded[slot] = version
        task = self.actors[slot].collect.remote(weights, version, n_sample, train_iter, self.env_step)
        self.pending[task] = slot

    def _wait_one(self) -> tuple[int, CollectOutput | None]:
        """The slot of the first finished collect and its output; None where the actor died (it is replaced)."""
        ready, _ = self.ray.wait(list(self.pending), num_returns=1)
        slot = self.pending.pop(ready[0])
        try:
            return slot, self.ray.get(ready[0])
        except self.ray.exceptions.RayActorError as exc:
            self.actors[slot] = self.factory.replace(f"collector{slot}", exc)
            self.loaded[slot] = None
            return slot, None
        except self.ray.exceptions.RayTaskError as exc:
            raise _task_error(exc) from None

    def _account(self, slot: int, out: CollectOutput, train_iter: int) -> None:
        lag = train_iter - out.weights_version
        self.env_step += out.env_steps
        self.batches += 1
        self.lag_sum += lag
        self.lag_max = max(self.lag_max, lag)
        self.slot_steps[slot] += out.env_steps
        self.slot_seconds[slot] += out.seconds
        if out.load_seconds > 0:
            self.load_seconds.append(out.load_seconds)
        if self.logger is not None:
            self.logger.scalar("collect/policy_lag", lag, train_iter)
            if out.seconds > 0:
                self.logger.scalar(f"speed/collector{slot}_env_steps_per_second", out.env_steps / out.seconds,
                                   self.env_step)

    def stats(self) -> dict[str, Any]:
        speeds = [round(s / t, 1) if t > 0 else None
                  for s, t in zip(self.slot_steps, self.slot_seconds, strict=True)]
        return {
            "batches_received": self.batches,
            "policy_lag_mean": round(self.lag_sum / self.batches, 3) if self.batches else None,
            "policy_lag_max": self.lag_max,
            "collector_env_steps_per_second": speeds,
            "weights_load_ms_mean": round(1000 * sum(self.load_seconds) / len(self.load_seconds), 3)
            if self.load_seconds else None,
        }


class _RemoteEvaluator:
    """Driver-side stand-in for the evaluator, served by one evaluator actor. The learner waits for each evaluation
    (as in serial mode, so ``ckpt_best`` holds exactly the evaluated weights) while the collectors go on."""

    def __init__(self, ray: Any, cfg: Any, factory: _ActorFactory, weights: _Weights) -> None:
        self.ray = ray
        self.factory = factory
        self.weights = weights
        self.eval_freq = int(cfg.policy.eval.evaluator.eval_freq)
        self.actor = factory.evaluator()
        self.loaded: int | None = None  # weights version the actor holds (None: not known)
        self.best_return = -math.inf  # over the whole run, whatever actor evaluated
        self._last_eval_iter: int | None = None

    def should_eval(self, train_iter: int) -> bool:
        """True at the first call and whenever ``eval_freq`` iterations passed since the last evaluation."""
        return self._last_eval_iter is None or train_iter - self._last_eval_iter >= self.eval_freq

    def eval(self, train_iter: int = 0, env_step: int = 0) -> EvalResult:
        """Evaluate the learner's current weights; a dead evaluator actor is replaced and the evaluation rerun."""
        self._last_eval_iter = train_iter
        ref, version = self.weights.latest(train_iter, 1)
        while True:
            weights = ref if self.loaded != version else None
            self.loaded = version
            try:
                result = self.ray.get(self.actor.eval.remote(weights, version, train_iter, env_step))
                break
            except self.ray.exceptions.RayActorError as exc:
                self.actor = self.factory.replace("evaluator", exc)
                self.loaded = None
            except self.ray.exceptions.RayTaskError as exc:
                raise _task_error(exc) from None
        improved = result.mean > self.best_return
        self.best_return = max(self.best_return, result.mean)
        return result._replace(improved=improved)


class _ParallelParts:
    """The parts :func:`~ding_lite.entry.serial.run_training` drives: the learner's policy and the buffer in this
    process, collectors and evaluator as actors (started here, all closed together)."""

    def __init__(self, ray: Any, cfg: Any, seed: int) -> None:
        self.ray = ray
        self.cfg = cfg
        _check_resources(ray, cfg.parallel)
        self.policy = build_policy(cfg, enable_field=["learn"])
        self.buffer = None if cfg.policy.on_policy else build_buffer(cfg, seed)
        self.weights = _Weights(ray, self.policy)
        self.factory = _ActorFactory(ray, cfg, seed)
        try:
            self.collector = _RemoteCollectors(ray, cfg, self.factory, self.weights)
            self.evaluator = _RemoteEvaluator(ray, cfg, self.factory, self.weights)
            self.factory.wait_ready()
        except BaseException:
            self.factory.close()
            raise

    def attach(self, learner: Any, logger: Any) -> None:
        """Log through the experiment's logger from now on."""
        self.factory.logger = self.weights.logger = self.collector.logger = logger
        par = self.cfg.parallel
        logger.info(f"[parallel] Ray at {self.ray.get_runtime_context().gcs_address}: {par.n_collectors} collector "
                    f"actors ({float(par.collector_num_cpus):g} CPU each) and 1 evaluator actor; "
                    f"{'synchronous on-policy rounds' if self.cfg.policy.on_policy else 'asynchronous off-policy'}")

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts happen inside the actors' own env managers, which log them there; the driver holds
        no env manager to count."""
        return {}

    def stats(self) -> dict[str, Any]:
        return {
            "mode": "parallel",
            "ray_address": self.ray.get_runtime_context().gcs_address,
            "n_collectors": int(self.cfg.parallel.n_collectors),
            "actor_restarts": self.factory.restarts,
            "weight_broadcasts": self.weights.count,
            "broadcast_ms_mean": round(1000 * self.weights.seconds / max(self.weights.count, 1), 3),
            **self.collector.stats(),
            "buffer_size": None if self.buffer is None else len(self.buffer),
        }

    def __enter__(self) -> _ParallelParts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.factory.close()


def _check_resources(ray: Any, par: Mapping[str, Any]) -> None:
    """Actors that cannot all be scheduled would wait for ever: fail with the numbers instead."""
    need = int(par["n_collectors"]) * float(par["collector_num_cpus"]) + float(par["evaluator_num_cpus"])
    have = float(ray.cluster_resources().get("CPU", 0.0))
    if need > have:
        raise ConfigError(f"parallel.n_collectors={par['n_collectors']} x collector_num_cpus="
                          f"{par['collector_num_cpus']} + evaluator_num_cpus={par['evaluator_num_cpus']} need {need:g} "
                          f"CPUs but the Ray cluster has {have:g}: lower them, raise parallel.num_cpus (local Ray) or "
                          f"add nodes")
