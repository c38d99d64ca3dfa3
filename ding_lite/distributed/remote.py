"""Driver-side stand-ins for the Ray actors of the parallel pipeline: the weights in Ray's object store, the factory
that starts, replaces (within each slot's failure budget) and closes the actors, and the collector and evaluator
objects the train loop drives as it drives local workers (:class:`~ding_lite.runtime.parts.TrainingParts`).
"""
from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from ding_lite.data.batch import Batch, concat_batches, writable
from ding_lite.distributed.actors import CollectorShell, CollectOutput, EvaluatorShell
from ding_lite.distributed.session import last_line
from ding_lite.errors import WorkerError
from ding_lite.registry import config_folders
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.failure_budget import FailureBudget
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.evaluator import EvalResult
from ding_lite.worker.tracker import BestReturnTracker, Tracked

log = logging.getLogger("ding_lite")


def to_cpu(tree: Any) -> Any:
    """A state dict with every tensor on the CPU (actors may have no GPU); mappings keep their type and metadata."""
    if isinstance(tree, Mapping):
        out: Any = type(tree)((k, to_cpu(v)) for k, v in tree.items())  # type: ignore[call-arg]
        if hasattr(tree, "_metadata"):  # torch's state-dict version info
            out._metadata = tree._metadata  # type: ignore[attr-defined]
        return out
    return tree.cpu() if hasattr(tree, "cpu") else tree


def restart_rate(restarts: int, seconds: float) -> float:
    """Actor replacements per hour, ``restarts`` within ``seconds``."""
    return round(3600 * restarts / max(seconds, 1e-9), 4)


class Weights:
    """The learner's newest weights in Ray's object store: one ``ray.put`` per broadcast, one copy every actor loads."""

    def __init__(self, ray: Any, policy: Any) -> None:
        self.ray = ray
        self.policy = policy
        self.ref: Any = None
        self.version = -1  # train_iter of the weights behind ``ref``
        self.count = 0
        self.seconds = 0.0
        self.logger: Any = None  # the experiment's logger, once the run has one (log_to)

    def log_to(self, logger: Any) -> None:
        """Log the broadcast times through ``logger`` from now on."""
        self.logger = logger

    def latest(self, train_iter: int, interval: int) -> tuple[Any, int]:
        """``(ref, version)`` of the weights to send; new ones are put when ``interval`` iterations passed."""
        if self.ref is None or train_iter - self.version >= interval:
            start = time.perf_counter()
            self.ref = self.ray.put(to_cpu(self.policy.collect_mode.state_dict()))
            elapsed = time.perf_counter() - start
            self.version = train_iter
            self.count += 1
            self.seconds += elapsed
            if self.logger is not None:
                self.logger.scalar("speed/broadcast_ms", 1000 * elapsed, train_iter)
        return self.ref, self.version


class ActorFactory:
    """Creates the actors (from the config, with fresh seeds), replaces dead ones while each slot's failure budget
    allows (``parallel.max_actor_restarts`` in a row, ``parallel.max_actor_restarts_per_window`` within
    ``parallel.actor_restart_window`` seconds) and closes them all at the end.

    Ray's own actor restart (``max_restarts``) is not used: it counts over the actor's life (the very limit the budget
    replaces), a restarted actor reruns its constructor with the same seed (a collector would repeat the dead one's
    episodes), and an actor ended by ``ray.kill`` is not restarted at all. A new actor does the same job with fresh
    seeds, placed by Ray on any node with room."""

    def __init__(self, ray: Any, cfg: Any, seeds: SeedPlan, games: Any = None) -> None:
        par = cfg.parallel
        self.ray = ray
        self.cfg = to_plain(cfg)  # what travels to each actor: the compiled config, shapes filled
        self.seeds = seeds  # the segment's (a resumed one's collector actors start on seeds of their own)
        self.env_num = int(cfg.env.collector_env_num)
        self.max_restarts = int(par.max_actor_restarts)
        window, per_window = par.actor_restart_window, par.max_actor_restarts_per_window
        self._budget_args = (self.max_restarts, None if window is None or per_window is None else int(per_window),
                             float(window or 0))
        self.budgets: dict[str, FailureBudget] = {}  # role -> its failure budget (from its first death on)
        self.restarts = 0
        self.clock = time.monotonic  # the clock of the restart window (seconds)
        self.born = self.clock()
        self.created = 0  # collectors created so far; the k-th gets seeds.collector_actor(k): no two share env seeds
        self.started = 0  # actors started so far (numbers their names)
        self.tag = f"ding_lite-{os.getpid()}-{id(self):x}"  # names: <tag>/collector<slot>-<k>, <tag>/evaluator-<k>
        self.folders = tuple(config_folders())  # where the driver found the config's import_names
        self.games = games  # each collector actor gets a copy: how it wraps its env manager (None: it does not)
        self.collector_cls = ray.remote(num_cpus=float(par.collector_num_cpus), max_restarts=0)(CollectorShell)
        self.evaluator_cls = ray.remote(num_cpus=float(par.evaluator_num_cpus), max_restarts=0)(EvaluatorShell)
        self.live: dict[str, Any] = {}  # role ('collector0', ..., 'evaluator') -> actor handle
        self._restart: dict[str, Callable[[], Any]] = {}  # role -> starts a new actor for it
        self.logger: Any = None  # the experiment's logger, once the run has one (log_to); else the console
        self.run: Any = None  # the whole run's counts (a RunCounts; None: this factory's are the run's)

    def log_to(self, logger: Any, run: Any = None) -> None:
        """Report actor replacements through ``logger`` from now on; ``run`` (a
        :class:`~ding_lite.runtime.restarts.RunCounts` with ``actor_restarts`` and ``actor_seconds``) gives the
        counts of the whole run (a resumed run's earlier segments included)."""
        self.logger, self.run = logger, run

    def collector(self, slot: int) -> Any:
        """Start the collector actor of ``slot`` (the k-th collector started gets ``seeds.collector_actor(k)``)."""
        seed = self.seeds.collector_actor(self.created, self.env_num)
        self.created += 1
        args = (seed,) if self.games is None else (seed, self.games)  # a plain env's actor needs no games
        return self._start(f"collector{slot}", self.collector_cls, args, lambda: self.collector(slot))

    def evaluator(self) -> Any:
        """Start the evaluator actor (the serial pipeline's eval seeds)."""
        return self._start("evaluator", self.evaluator_cls, (self.seeds.seed,), self.evaluator)

    def _start(self, role: str, cls: Any, args: tuple, again: Callable[[], Any]) -> Any:
        handle = cls.options(name=f"{self.tag}/{role}-{self.started}").remote(self.cfg, *args, folders=self.folders)
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
                raise WorkerError(f"the {role} actor failed to start: {last_line(exc)}") from None

    def succeeded(self, role: str) -> None:
        """The actor of ``role`` delivered a batch or an evaluation: its slot is healthy again."""
        budget = self.budgets.get(role)
        if budget is not None:
            budget.record_success(clear=True)

    def replace(self, role: str, exc: Exception, env_step: int) -> Any:
        """A new actor for ``role`` after ``exc`` (its death), while the slot's failure budget allows; a replacement
        that dies while it starts counts as one more death in a row. ``env_step`` places the tensorboard points."""
        budget = self.budgets.setdefault(role, FailureBudget(
            *self._budget_args, keys=("parallel.max_actor_restarts", "parallel.max_actor_restarts_per_window"),
            unit="s"))
        while True:
            if getattr(exc, "actor_init_failed", False):
                raise WorkerError(f"the {role} actor failed to start: {last_line(exc)}") from None
            spent = budget.record_failure(self.clock())
            if spent is not None:
                raise WorkerError(f"the {role} actor died after {spent.what}: {last_line(exc)}. Find out why, or "
                                  f"allow more restarts with {spent.key} (now {spent.limit})") from None
            self.restarts += 1
            self._report(role, exc, budget, env_step)
            self.ray.kill(self.live[role])  # it may be unreachable rather than dead: make sure
            handle = self._restart[role]()
            try:
                self.ray.get(handle.ready.remote())
                return handle
            except self.ray.exceptions.RayError as failure:
                exc = failure

    def run_restarts(self) -> tuple[int, float]:
        """Actor replacements of the run so far (earlier segments included) and their rate per hour."""
        if self.run is None:
            return self.restarts, restart_rate(self.restarts, self.clock() - self.born)
        run = self.run.totals()
        return int(run["actor_restarts"]), restart_rate(int(run["actor_restarts"]), float(run["actor_seconds"]))

    def _report(self, role: str, exc: Exception, budget: FailureBudget, env_step: int) -> None:
        restarts, per_hour = self.run_restarts()
        rate = "" if budget.max_per_window is None else \
            f", {budget.in_window(self.clock())} within {budget.window:g} s of max_actor_restarts_per_window=" \
            f"{budget.max_per_window}"
        message = (f"[parallel] {role} actor died ({last_line(exc)}); replaced by a new actor (restart "
                   f"{restarts}: {budget.in_a_row} in a row of max_actor_restarts={self.max_restarts}{rate})")
        if self.logger is None:
            log.info(message)
            return
        self.logger.info(message)
        self.logger.scalar("parallel/actor_restarts", restarts, env_step)
        self.logger.scalar("parallel/actor_restart_rate", per_hour, env_step)

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


def _task_error(exc: Exception) -> BaseException:
    """The exception a remote task raised, as itself (a ding_lite error keeps its one-line message)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


class RemoteCollectors:
    """Driver-side stand-in for a collector, served by ``parallel.n_collectors`` collector actors.

    ``collect(n_sample, train_iter)`` returns ``(samples, episodes)`` as a local collector does: the next finished
    batch of any actor (off-policy), or the union of one synchronous round of all actors (on-policy). Each actor
    collects ``n_sample`` steps per call. ``env_step`` counts the env steps of every batch received.
    """

    def __init__(self, ray: Any, cfg: Any, factory: ActorFactory, weights: Weights, link: Any = None) -> None:
        self.ray = ray
        self.factory = factory
        self.weights = weights
        # the game's driver side (None: a plain env): its message goes with each collect, and it receives each
        # batch's ended episodes (the self-play pool and the game results)
        self.link = link
        self.on_policy = bool(cfg.policy.on_policy)
        self.interval = int(cfg.parallel.broadcast_interval)
        n = int(cfg.parallel.n_collectors)
        self.actors = [factory.collector(slot) for slot in range(n)]
        self.loaded: list[int | None] = [None] * n  # weights version each actor holds (None: not known)
        self.pending: dict[Any, int] = {}  # in-flight collect -> slot
        self.idle = list(range(n))  # off-policy: slots whose last batch was handed out and that wait for new work
        self.env_step = 0
        self.logger: Any = None  # the experiment's logger, once the run has one (log_to)
        self.batches = 0
        self.lag_sum = 0
        self.lag_max = 0
        self.slot_steps = [0] * n
        self.slot_seconds = [0.0] * n
        # weights loads: their count and total time (a sum, not a list: one load per collect would grow it with
        # the run, 1.25M entries in 10M CartPole DQN steps)
        self.loads = 0
        self.load_seconds = 0.0
        self.env_restarts = [0] * n  # env worker restarts inside each slot's current actor, as of its last batch
        self.retired_env_restarts = 0  # the same, of the slots' dead actors

    def log_to(self, logger: Any) -> None:
        """Log the policy lag and the actors' speeds through ``logger`` from now on."""
        self.logger = logger

    def continue_from(self, env_step: int) -> None:
        """Count env steps on from ``env_step`` (a resumed run's); the actors are told the count with each collect."""
        self.env_step = int(env_step)

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
            return writable(out.samples), out.episodes

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
        return writable(concat_batches([outputs[slot].samples for slot in sorted(outputs)])), episodes

    def _submit(self, slot: int, ref: Any, version: int, n_sample: int, train_iter: int) -> None:
        # The weights travel only to an actor that does not hold this version yet (Ray resolves the ref there).
        weights = ref if self.loaded[slot] != version else None
        self.loaded[slot] = version
        message = None if self.link is None else self.link.message()
        task = self.actors[slot].collect.remote(weights, version, n_sample, train_iter, self.env_step, message)
        self.pending[task] = slot

    def _wait_one(self) -> tuple[int, CollectOutput | None]:
        """The slot of the first finished collect and its output; None where the actor died (it is replaced)."""
        ready, _ = self.ray.wait(list(self.pending), num_returns=1)
        slot = self.pending.pop(ready[0])
        try:
            out: CollectOutput = self.ray.get(ready[0])
        except self.ray.exceptions.RayActorError as exc:
            self.retired_env_restarts += self.env_restarts[slot]  # as of the dead actor's last batch
            self.env_restarts[slot] = 0
            self.actors[slot] = self.factory.replace(f"collector{slot}", exc, self.env_step)
            self.loaded[slot] = None
            return slot, None
        except self.ray.exceptions.RayTaskError as exc:
            raise _task_error(exc) from None
        self.factory.succeeded(f"collector{slot}")
        self.env_restarts[slot] = out.env_restarts
        return slot, out

    def _account(self, slot: int, out: CollectOutput, train_iter: int) -> None:
        lag = train_iter - out.weights_version
        self.env_step += out.env_steps
        self.batches += 1
        self.lag_sum += lag
        self.lag_max = max(self.lag_max, lag)
        self.slot_steps[slot] += out.env_steps
        self.slot_seconds[slot] += out.seconds
        if self.link is not None:
            self.link.received(out.episodes)
        if out.load_seconds > 0:
            self.loads += 1
            self.load_seconds += out.load_seconds
        if self.logger is not None:
            self.logger.scalar("collect/policy_lag", lag, train_iter)
            if out.seconds > 0:
                self.logger.scalar(f"speed/collector{slot}_env_steps_per_second", out.env_steps / out.seconds,
                                   self.env_step)

    def stats(self) -> dict[str, Any]:
        speeds = [round(s / t, 1) if t > 0 else None
                  for s, t in zip(self.slot_steps, self.slot_seconds, strict=True)]
        return {  # (the counts, of the whole run: RayCollection.stats)
            "collector_env_steps_per_second": speeds,
            "weights_load_ms_mean": round(1000 * self.load_seconds / self.loads, 3) if self.loads else None,
        }


class RemoteEvaluator(Tracked):
    """Driver-side stand-in for the evaluator, served by one evaluator actor. The learner waits for each evaluation
    (as in serial mode, so ``ckpt_best`` holds exactly the evaluated weights) while the collectors go on."""

    def __init__(self, ray: Any, cfg: Any, factory: ActorFactory, weights: Weights,
                 best_return: float = -math.inf) -> None:
        self.ray = ray
        self.factory = factory
        self.weights = weights
        # when to evaluate and the best so far over the whole run, whatever actor evaluated (the actor's own
        # evaluator decides the stop; its `improved` is replaced by this one's)
        self.tracker = BestReturnTracker(int(cfg.policy.eval.evaluator.eval_freq), None, best_return)
        self.actor = factory.evaluator()
        self.loaded: int | None = None  # weights version the actor holds (None: not known)
        self._last_env_step = 0
        self.env_restarts = 0  # env worker restarts inside the current actor, as of its last evaluation
        self.retired_env_restarts = 0  # the same, of the evaluator actors that died

    def _replace_actor(self, exc: Exception) -> None:
        """A new evaluator actor for the dead one; its env restarts so far are kept in the run's count."""
        self.actor = self.factory.replace("evaluator", exc, self._last_env_step)
        self.retired_env_restarts += self.env_restarts
        self.env_restarts = 0
        self.loaded = None

    def eval(self, train_iter: int = 0, env_step: int = 0) -> EvalResult:
        """Evaluate the learner's current weights; a dead evaluator actor is replaced and the evaluation rerun."""
        self._last_env_step = env_step
        ref, version = self.weights.latest(train_iter, 1)
        while True:
            weights = ref if self.loaded != version else None
            self.loaded = version
            try:
                result, self.env_restarts = self.ray.get(self.actor.eval.remote(weights, version, train_iter,
                                                                                 env_step))
                break
            except self.ray.exceptions.RayActorError as exc:
                self._replace_actor(exc)
            except self.ray.exceptions.RayTaskError as exc:
                raise _task_error(exc) from None
        self.factory.succeeded("evaluator")
        return result._replace(improved=self.tracker.update(result.mean, train_iter))

    def final_eval(self, weights: Mapping[str, Any], n_episode: int, seed: int) -> EvalResult:
        """Evaluate ``weights`` once more after the run on fresh seeds (a dead evaluator actor is replaced)."""
        while True:
            try:
                result, self.env_restarts = self.ray.get(self.actor.final_eval.remote(weights, n_episode, seed))
                break
            except self.ray.exceptions.RayActorError as exc:
                self._replace_actor(exc)
            except self.ray.exceptions.RayTaskError as exc:
                raise _task_error(exc) from None
        self.loaded = None  # the actor now holds other weights than any broadcast version
        return result
