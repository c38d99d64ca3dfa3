"""Learner: runs the policy's learn mode, counts iterations, and calls its hooks (learner_hooks.py)."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ding_lite.data.batch import batch_len
from ding_lite.errors import DIVERGED_ADVICE, ConfigError, DivergedError
from ding_lite.registry import LEARNER_HOOK_REGISTRY
from ding_lite.utils.checkpoint import (
    ITERATION_PREFIX,
    first_non_finite,
    load_policy_weights,
    save_checkpoint,
)
from ding_lite.utils.log import is_scalar
from ding_lite.utils.run_folder import CKPT_DIR, CKPT_SUFFIX
from ding_lite.worker.disk_room import DiskRoom

POSITIONS = ("before_run", "after_iter", "after_eval", "after_run", "after_save")  # after_save: a checkpoint
# was written (its path: BaseLearner.last_saved)


class BaseLearner:
    """Calls ``policy.learn_mode.forward`` on each batch and runs the hooks named in ``cfg.hook``.

    Args:
        cfg: the ``policy.learn.learner`` section.
        policy: the policy (its ``learn_mode`` is used).
        exp_dir: experiment folder; checkpoints go to ``<exp_dir>/ckpt`` (None: no checkpoints).
        logger: an :class:`ExperimentLogger` (None: no logging).
        run_state: what every checkpoint keeps about the run besides the learner (the pipelines' wall time and log
            positions, for ``--resume``), under ``"run"``; the loaded checkpoint's is :attr:`loaded_run`.
    """

    config: dict[str, Any] = dict(
        hook=dict(
            load_ckpt_before_run="",  # checkpoint to load before training ('' : none)
            log_show_after_iter=100,  # log learn scalars every this many iterations
            save_ckpt_after_iter=10000,  # write ckpt/iteration_N.pth.tar every this many iterations
            save_ckpt_after_run=True,  # write a final checkpoint when the run ends
            keep_iteration_ckpt=0,  # iteration_N.pth.tar kept, the newest (0: all, as DI-engine); bounds the disk
            # ckpt/resume_N.pth.tar for --resume, kept fresh by wall time (the last `keep` are kept)
            save_resume_ckpt=dict(
                every_seconds=300.0,  # at the end of an iteration once this long passed since the last one
                at_eval_after_seconds=30.0,  # at an evaluation once this long passed since the last one
                keep=2,  # resume checkpoints kept (0: none written)
            ),
        ),
    )

    def __init__(self, cfg: Mapping[str, Any], policy: Any, exp_dir: Path | None = None, logger: Any = None,
                 policy_type: str = "", run_state: Callable[[], dict[str, Any]] | None = None) -> None:
        self.cfg = cfg
        self.policy = policy.learn_mode
        self.policy_type = policy_type
        self.exp_dir = Path(exp_dir) if exp_dir is not None else None
        self.logger = logger
        self.train_iter = 0
        self.env_step = 0
        self.samples_trained = 0  # rows of the batches handed to train() in this process (the throughput's count)
        self.best_eval_return = -math.inf  # kept in checkpoints: a resumed run keeps ckpt_best's bar
        self.loaded_from: Path | None = None  # the checkpoint this learner started from, if any
        self.loaded_run: dict[str, Any] = {}  # its "run" entry (see run_state)
        self.loaded_with: dict[str, Any] = {}  # its entries of the keys given to save_with_checkpoints
        self._run_state = run_state
        self.last_log: dict[str, Any] = {}
        self.loss_check = LossCheck()
        self.finite_at: int | None = None  # train_iter of the last check_weights that found every tensor finite
        self.last_logged_iter = -1  # train_iter of the learn scalars last sent to the logger
        self._hooks: dict[str, list[Any]] = {p: [] for p in POSITIONS}
        self._saved_with: dict[str, Callable[[str], Any]] = {}  # extra checkpoint entries (save_with_checkpoints)
        self._update_end: int | None = None  # train_iter at the end of the update in progress (one_update)
        self._due: list[str] = []  # checkpoints due within it, written at its end
        self.last_saved: Path | None = None  # the checkpoint written last (for the after_save hooks)
        self.disk_room: DiskRoom | None = None  # warns once if the run's checkpoints will not fit (set by pipelines)
        for name, value in (cfg.get("hook") or {}).items():
            hook = LEARNER_HOOK_REGISTRY.build(name, value)
            for position in getattr(hook, "positions", None) or (hook.position,):
                self._hooks[position].append(hook)

    def log_to(self, logger: Any) -> None:
        """Log through ``logger`` from now on (a pipeline's experiment logger exists only once the checkpoint it
        starts from has been loaded into this learner, before anything is written)."""
        self.logger = logger

    def record_best_return(self, best_return: float) -> None:
        """The best mean eval return so far (kept in every checkpoint: a resumed run keeps ckpt_best's bar)."""
        self.best_eval_return = float(best_return)

    @property
    def ckpt_dir(self) -> Path | None:
        return self.exp_dir / CKPT_DIR if self.exp_dir is not None else None

    def train(self, batch: dict, env_step: int) -> list[dict[str, Any]]:
        """One call of ``learn_mode.forward``; returns its log dicts, one per gradient step.

        As DI-engine's learner, ``train_iter`` counts gradient steps: it advances by one per log dict that the
        policy returns (a single dict counts as one), and the ``after_iter`` hooks run once per step, so that
        ``eval_freq``, ``save_ckpt_after_iter`` and ``log_show_after_iter`` mean what they mean in DI-engine."""
        self.env_step = env_step
        monitor_vars = getattr(self.policy, "monitor_vars", None)  # a stand-in learn mode may have none
        logs = as_log_list(self.policy.forward(batch), self.policy.forward, monitor_vars() if monitor_vars else ())
        self.samples_trained += batch_len(batch)
        with self.one_update(len(logs)):  # the weights are those of the last step already (e.g. PPO's epochs)
            for log in logs:
                self.loss_check.add(log, self.train_iter + 1, env_step)
                self.last_log = log
                self.train_iter += 1
                self.call_hooks("after_iter")
        return logs

    @contextmanager
    def one_update(self, n_steps: int) -> Iterator[None]:
        """The block makes the next ``n_steps`` gradient steps as one update (a forward that returns several
        steps' logs, a collect's replay updates): a checkpoint due within it is written at its end, as of that end
        (named by its ``train_iter``), never with weights, counters or replay state of different steps, which a
        resume could not continue from. Nested blocks belong to the outermost; one left by an error writes none."""
        if self._update_end is not None:
            yield
            return
        self._update_end = self.train_iter + n_steps
        try:
            yield
        except BaseException:
            self._due = []
            raise
        finally:
            self._update_end = None
        due, self._due = self._due, []
        for name in due:
            self.save_checkpoint(name)

    def log_now(self) -> None:
        """Send the latest learn scalars now unless this iteration's were sent already (the pipelines call it at
        each evaluation, so that a short run logs its losses however large ``log_show_after_iter`` is)."""
        if self.logger is None or not self.last_log or self.last_logged_iter == self.train_iter:
            return
        self.last_logged_iter = self.train_iter
        self.logger.scalars("learn", self.last_log, self.train_iter)
        scalars = " ".join(f"{k}={float(v):.4g}" for k, v in self.last_log.items() if is_scalar(v))
        self.logger.text(f"[learn] iter {self.train_iter} env_step {self.env_step} {scalars}")

    def end_run(self, env_step: int) -> None:
        """The run ended at ``env_step`` (the collector's count: collects after the last update, or before the
        first, count too): the ``after_run`` hooks run, so the final checkpoint records where the run stopped and a
        run that collected without training yet is resumable."""
        self.env_step = env_step
        self.call_hooks("after_run")

    def save_for_stop(self, env_step: int) -> Path | None:
        """The run stops before its end at ``env_step`` (a signal, taken between iterations): write
        ``iteration_N`` as a run's end does (whatever ``save_ckpt_after_run`` says), for ``--resume`` to go on from
        here. Returns its path (None without an experiment folder)."""
        self.env_step = env_step
        self.disk_room = None  # the run stops here
        return self.save_checkpoint(f"{ITERATION_PREFIX}{self.train_iter}")

    def watch_disk(self, room: DiskRoom) -> None:
        """Warn once, at the first checkpoint after an update, where the run's remaining checkpoints will not fit."""
        self.disk_room = room

    def call_hooks(self, position: str) -> None:
        if position == "after_run":
            self.loss_check.flush()
            self.disk_room = None  # the run has ended: its last checkpoint leaves none to warn of
        for hook in self._hooks[position]:
            if len(getattr(hook, "positions", ())) > 1:
                hook(self, position)  # a hook at several positions is told which one
            else:
                hook(self)

    def save_with_checkpoints(self, key: str, state: Callable[[str], Any]) -> None:
        """Store ``state(name)`` under ``key`` in every checkpoint written from now on (``name``: the checkpoint's,
        e.g. ``'resume_120'``): state that a resume must find as it was at that checkpoint, such as a self-play
        league. ``state`` returns plain data (what ``torch.load(weights_only=True)`` reads back). A checkpoint loaded
        afterwards gives its entry back in :attr:`loaded_with` (None where it has none)."""
        self._saved_with[key] = state

    def check_weights(self, policy_state: Mapping[str, Any] | None = None) -> None:
        """A :class:`DivergedError` naming the first tensor of the policy's state (``policy_state``, else its
        ``state_dict()``: weights, target networks, optimiser moments) that holds NaN or inf.

        Every loss can stay finite while the state does not: a gradient above about 1.8e19 (observations or rewards
        of 1e14 and more) overflows Adam's mean of squared gradients to inf in float32, and from then on those weights
        never move (their step is m / inf = 0), in silence; a step on an inf gradient makes them NaN. The pipelines
        call it at each evaluation, and every checkpoint is checked before it is written: one pass over the state
        every so often, not a cost per update."""
        self.loss_check.flush()  # a GPU's kept losses first: a non-finite loss names its update
        bad = first_non_finite(self.policy.state_dict() if policy_state is None else policy_state)
        if bad is None:
            self.finite_at = self.train_iter
            return
        path, kind = bad
        since = f" (finite at train iter {self.finite_at:,})" if self.finite_at is not None else ""
        raise DivergedError(f"training diverged by train iter {self.train_iter:,} (env step {self.env_step:,}): the "
                            f"policy's {path} holds {kind}{since} while every loss was finite; {WEIGHTS_ADVICE}")

    def checkpoint_state(self, name: str = "") -> dict[str, Any]:
        self.loss_check.flush()  # no checkpoint of diverged weights: neither after a non-finite loss
        policy_state = self.policy.state_dict()
        self.check_weights(policy_state)  # nor with NaN or inf in the state while the losses were finite
        state = {"policy": policy_state, "train_iter": self.train_iter, "env_step": self.env_step,
                 "best_eval_return": self.best_eval_return, "policy_type": self.policy_type,
                 **{key: saved(name) for key, saved in self._saved_with.items()}}
        if self._run_state is not None:
            state["run"] = self._run_state()
        return state

    def save_checkpoint(self, name: str) -> Path | None:
        """Write ``<exp_dir>/ckpt/<name>.pth.tar`` atomically (nothing without an experiment folder)."""
        if self.ckpt_dir is None:
            return None
        if self._update_end is not None:  # within an update: written at its end, as of its end (one_update)
            suffix = f"_{self.train_iter}"
            if name.endswith(suffix):
                name = f"{name[:-len(suffix)]}_{self._update_end}"
            if name not in self._due:
                self._due.append(name)
            return self.ckpt_dir / f"{name}{CKPT_SUFFIX}"
        if self.logger is not None:
            self.logger.check_folder()  # not into a folder made again where the run's folder was (removed, moved)
            self.logger.flush_events()  # the events logged so far go with the checkpoint (a resume cuts back to it)
        self.last_saved = save_checkpoint(self.ckpt_dir / f"{name}{CKPT_SUFFIX}", self.checkpoint_state(name))
        self.call_hooks("after_save")
        if self.disk_room is not None:
            self.disk_room.check(self.last_saved, self.train_iter, self.env_step)
        return self.last_saved

    def load_checkpoint(self, path: str | Path, state: dict[str, Any] | None = None) -> None:
        """Restore policy state, ``train_iter``, ``env_step`` and the best eval return from a checkpoint (``state``:
        its contents, if already read)."""
        state = load_policy_weights(self.policy, path, state)
        self.train_iter = int(state.get("train_iter", 0))
        self.env_step = int(state.get("env_step", 0))
        self.best_eval_return = float(state.get("best_eval_return", -math.inf))
        self.loaded_run = dict(state.get("run") or {})
        self.loaded_with = {key: state.get(key) for key in self._saved_with}
        self.loaded_from = Path(path)


class LossCheck:
    """Stops training at the first loss (a logged scalar whose name ends in ``loss``) that is NaN or inf, with a
    :class:`DivergedError` naming it and its update: the batch was finite (the collector checks what the envs give),
    so the network diverged, and every later update would train on NaN weights in silence (a greedy argmax over NaN
    values still returns an action).

    Losses on the CPU (and plain numbers) are checked at their update. A GPU's are kept and checked every
    ``every`` updates and before any checkpoint is written: reading a value back waits for the GPU's queue to drain,
    which at every update would stall it."""

    def __init__(self, every: int = 100) -> None:
        self.every = every
        self.pending: list[tuple[int, int, str, Any]] = []  # (train_iter, env_step, key, a GPU's 0-dim tensor)
        self.updates_pending = 0  # updates whose GPU losses are kept

    def add(self, log: Mapping[str, Any], train_iter: int, env_step: int) -> None:
        for key, value in log.items():
            if not key.endswith("loss") or not is_scalar(value):
                continue
            if on_accelerator(value):
                self.pending.append((train_iter, env_step, key, value))
            elif not math.isfinite(float(value)):
                raise _diverged(train_iter, env_step, key, value, _also_not_finite(log, key))
        if self.pending and self.pending[-1][0] == train_iter:
            self.updates_pending += 1
        if self.updates_pending >= self.every:
            self.flush()

    def flush(self) -> None:
        """Check the kept GPU losses now (one read-back for all of them)."""
        if not self.pending:
            return
        import torch

        pending, self.pending, self.updates_pending = self.pending, [], 0
        finite = torch.isfinite(torch.stack([value.float() for *_, value in pending])).cpu()
        if not bool(finite.all()):
            raise _diverged(*pending[int((~finite).nonzero()[0, 0])])


WEIGHTS_ADVICE = ("very large observations or rewards overflow float32 gradients (scale them down, e.g. with a "
                  "gymnasium wrapper), or " + DIVERGED_ADVICE)


def on_accelerator(value: Any) -> bool:
    """Whether ``value`` is a tensor on a GPU (or another device whose read-back waits for its queue)."""
    return getattr(getattr(value, "device", None), "type", "cpu") != "cpu"


def _diverged(train_iter: int, env_step: int, key: str, value: Any, also: list[str] | None = None) -> DivergedError:
    """``also``: the update's other logged scalars that are not finite, named as hints to the cause (SAC's ``alpha``
    at inf says the temperature's learning rate, not the critic's, made ``critic_loss`` inf)."""
    hint = f" ({', '.join(also)} {'is' if len(also) == 1 else 'are'} not finite either)" if also else ""
    return DivergedError(f"training diverged at train iter {train_iter:,} (env step {env_step:,}): {key} is "
                         f"{float(value)}{hint}; {DIVERGED_ADVICE}")


def _also_not_finite(log: Mapping[str, Any], key: str) -> list[str]:
    """The scalars of ``log`` besides ``key`` that are NaN or inf (read only once an update has diverged)."""
    return [k for k, v in log.items() if k != key and is_scalar(v) and not math.isfinite(float(v))]


def as_log_list(out: Mapping[str, Any] | Sequence[Mapping[str, Any]], forward: Any = None,
                monitored: Iterable[str] = ()) -> list[dict[str, Any]]:
    """What ``learn_mode.forward`` returned, as a list of log dicts (DI-engine's convention: a list with one dict
    per gradient step; a single dict is one step). Anything else, or a loss or a ``monitored`` entry (the policy's
    ``_monitor_vars_learn()``) that is not one number, is a :class:`ConfigError` naming ``forward`` (the policy's
    method)."""
    name = getattr(forward, "__qualname__", "learn_mode.forward")
    if isinstance(out, Mapping) or isinstance(out, (list, tuple)) and out and all(isinstance(log, Mapping)
                                                                                  for log in out):
        logs = [dict(out)] if isinstance(out, Mapping) else [dict(log) for log in out]
        _check_logged_numbers(logs, name, set(monitored))
        return logs
    got = "an empty list" if isinstance(out, (list, tuple)) and not out else \
        "None" if out is None else f"a {type(out).__name__}" if not isinstance(out, (list, tuple)) else \
        f"a list holding a {next(type(log).__name__ for log in out if not isinstance(log, Mapping))}"
    raise ConfigError(f"{name}(batch) returned {got}: it must return one log dict per gradient step (a list of "
                      f"dicts, or one dict for one step)")


def _check_logged_numbers(logs: Sequence[Mapping[str, Any]], name: str, monitored: set[str]) -> None:
    """A loss (a key ending in ``loss``) or a monitored entry holding an array or tensor of one or more dimensions
    is an error: only 0-dim values are logged and checked for NaN, so it would vanish from the logs in silence."""
    for log in logs:
        for key, value in log.items():
            shape = getattr(value, "shape", None)
            if (str(key).endswith("loss") or key in monitored) and shape is not None and len(shape) > 0:
                raise ConfigError(f"{name}(batch) returned '{key}' of shape {list(shape)}: a loss or monitored "
                                  f"value is logged (and a loss checked for NaN) only as one number, a 0-dim "
                                  f"tensor or a float: reduce it (e.g. .mean())")


def mean_log(logs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean of each scalar over a list of log dicts (keys missing from some entries: mean over the others)."""
    import torch

    values: dict[str, list[Any]] = {}
    for log in logs:
        for k, v in log.items():
            if is_scalar(v):
                values.setdefault(k, []).append(torch.as_tensor(v, dtype=torch.float32))
    return {k: torch.stack(v).mean() for k, v in values.items()}
