"""A training run's start, shared by every training pipeline: the options it is asked to run with
(:class:`RunOptions`), and what it settles before it builds anything (:func:`start_run`): the config compiled, resolved
once and frozen, the budgets checked, the experiment folder claimed, the start checkpoint (``--resume``,
``--load-ckpt`` or the config's) read, the process seeded. The train loop (:mod:`ding_lite.runtime.train_loop`) takes
it from there."""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike, fill_model_shapes_from_env, load_config
from ding_lite.config.compile import check_moved_env
from ding_lite.config.frozen import freeze
from ding_lite.config.reader import read_saved_config
from ding_lite.errors import CheckpointError, ConfigError, optional_count
from ding_lite.policy.replay import check_replay_budget_early
from ding_lite.runtime.experiment import exp_folder, experiment_dir
from ding_lite.runtime.model_drift import warn_of_model_drift
from ding_lite.runtime.parts import StartCheckpoint
from ding_lite.utils.atomic import remove_stale_temps
from ding_lite.utils.checkpoint import load_checkpoint, resume_checkpoint
from ding_lite.utils.claim import FolderClaim, claim_existing, claim_new
from ding_lite.utils.run_folder import BEST_CKPT, CKPT_DIR, CONFIG_FILE
from ding_lite.utils.seed import SeedPlan, set_seed
from ding_lite.utils.torch_setup import configure_torch
from ding_lite.worker.video import prepare_offscreen_rendering


@dataclass(frozen=True)
class RunOptions:
    """How a training run is asked to run, besides its config: what the CLI's flags and the training pipelines'
    keyword arguments say (the pipelines build one from their arguments; the CLI builds one from its flags)."""

    seed: int = 0  # seed of envs, torch and numpy
    max_env_step: int | None = None  # env-step budget (None: unbounded)
    max_train_iter: int | None = None  # train-iteration budget (None: unbounded)
    exp_dir: str | Path | None = None  # experiment folder (None: the config's exp_name)
    resume: bool = False  # continue from the folder's latest checkpoint
    load_ckpt: str | Path | None = None  # start from this checkpoint's weights and counters
    strict: bool = False  # unknown config keys are errors
    overrides: tuple[str, ...] = ()  # 'a.b.c=value' strings applied last
    progress: bool = True  # a progress bar on an interactive terminal

    def keywords(self) -> dict[str, Any]:
        """The options as the training pipelines' keyword arguments."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class RunStart:
    """What a training pipeline settles before it builds anything: the config, the experiment folder (claimed and
    locked until the run ends: use the run as a context manager), the start checkpoint and the budgets.

    Leaving the ``with`` block releases the folder; one that the run leaves by an error while the folder holds
    nothing (a refused start) is removed again, so that bad input changes nothing on disk."""

    def __init__(self, cfg: Any, options: RunOptions, claim: FolderClaim, asked_dir: Path, ckpt_path: Path | None,
                 start: float, best_return: float = -math.inf, seeds: SeedPlan | None = None,
                 ckpt_state: dict[str, Any] | None = None) -> None:
        self.cfg = cfg
        self.options = options
        self.seed = options.seed
        # this segment's seeds: a resumed one collects on seeds drawn from where it resumes (SeedPlan)
        self.seeds = seeds if seeds is not None else SeedPlan(options.seed)
        self.claim = claim
        self.exp_dir = claim.path  # where this run writes
        self.asked_dir = asked_dir  # where the caller asked it to write (exp_dir differs if that one was taken)
        self.ckpt_path = ckpt_path
        self.ckpt_state = ckpt_state  # its contents, read once by start_run (None: a fresh start)
        self.resume = options.resume
        self.max_env_step, self.max_train_iter = options.max_env_step, options.max_train_iter
        self.progress = options.progress
        self.start = start  # time.perf_counter() when the run began
        # the start checkpoint's best mean eval return (-inf: a fresh start): the evaluator starts from it, so that
        # ckpt_best is replaced only by a better policy
        self.best_return = best_return

    @property
    def resume_from(self) -> StartCheckpoint | None:
        """The checkpoint a resumed run continues and its contents, as read by :func:`start_run` (None unless
        ``--resume``): the parts take what they keep in it (a self-play run's league) from here, not from the file."""
        if not self.resume or self.ckpt_path is None:
            return None
        return StartCheckpoint(self.ckpt_path, self.ckpt_state or {})

    def __enter__(self) -> RunStart:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.claim.release(failed=exc_type is not None)


def start_run(config: ConfigLike, options: RunOptions, resolve: Callable[[Any], object] = fill_model_shapes_from_env,
              *, checkpoints: bool = True) -> RunStart:
    """Resolve the config once and freeze it, with everything else a run settles before anything is written; shared
    by every training pipeline. Use the result as a context manager (``with start_run(config, options) as run:``).

    In order: compile the config (seed and overrides in), ``resolve(cfg)`` (the pipeline's part: by default the env
    checked and the model shapes filled from one probe env; a self-play run's game and league), check the budgets,
    claim the experiment folder (its path becomes ``exp_name``), check the start checkpoint; then the config is
    frozen (every part reads the same values; a write names the key), and the process seeded (a resumed segment on
    seeds drawn from where it resumes: :class:`~ding_lite.utils.seed.SeedPlan`) and torch set up.
    ``checkpoints=False``: a run whose folder holds no checkpoints of its own (GSL's, whose phases have theirs)."""
    start = time.perf_counter()
    seed, resume = options.seed, options.resume
    cfg = load_config(config, strict=options.strict, overrides=options.overrides, seed=seed)
    resolve(cfg)
    check_moved_env(cfg)  # a stop value kept from the env --set moved away from
    check_budget("max_env_step", options.max_env_step)
    check_budget("max_train_iter", options.max_train_iter)
    if checkpoints:  # (GSL's phases have budgets of their own, checked as each starts)
        check_replay_budget_early(cfg.policy, options.max_env_step)  # before Ray starts in the parallel pipeline
    # the Python API's exp_dir as --exp-name: a leading '~' is the home folder, a folder named '~' is refused
    asked_dir = exp_folder(str(options.exp_dir), "exp_dir") if options.exp_dir is not None \
        else experiment_dir(cfg, None, seed, 1)
    held = claim_existing(asked_dir) if resume and asked_dir.is_dir() else None  # a second --resume is refused
    try:
        if resume:
            check_resume_seed(asked_dir, seed)
        # refused before a folder is made
        start_ckpt = checkpoint_to_load(asked_dir, resume, options.load_ckpt, cfg) if checkpoints else None
        claim = held or claim_new(asked_dir)
    except BaseException:
        if held is not None:
            held.release()
        raise
    # the saved total_config.py names this run's own folder: `-m eval -c` or `--resume -c` that file finds this
    # run's checkpoints, not those of the run (seed) the config was written for
    cfg.exp_name = str(claim.path)
    if resume:  # the killed run may have died mid-write; its half-written temp files would stay forever
        remove_stale_temps(claim.path)
    freeze(cfg)
    if cfg.policy.eval.evaluator.get("video_every"):
        prepare_offscreen_rendering()  # before any env (and MuJoCo) is loaded
    ckpt_path, saved = start_ckpt if start_ckpt is not None else (None, {})
    if ckpt_path is not None:  # settings the weights do not show (a default changed since they were trained)
        warn_of_model_drift(cfg, ckpt_path, "--resume" if resume else "--load-ckpt" if options.load_ckpt is not None
                            else HOOK_CKPT_KEY)
    seeds = SeedPlan.resuming(seed, saved) if resume else SeedPlan(seed)
    set_seed(seeds.collector)
    configure_torch()
    best = float(saved.get("best_eval_return", -math.inf))
    return RunStart(cfg, options, claim, asked_dir, ckpt_path, start, best, seeds, saved if ckpt_path else None)


def check_budget(name: str, value: int | None) -> int | None:
    """A run budget (``max_env_step``, ``max_train_iter``): None (unbounded) or an int of at least 1."""
    return optional_count(name, value, "unbounded")


def check_resume_seed(exp_dir: Path, seed: int) -> None:
    """``--resume`` continues only the run of the same seed: a folder whose saved config names another seed holds
    another run, and resuming there would write into it. The saved config is read as data, never run (an
    experiment folder may come from anywhere)."""
    saved = exp_dir / CONFIG_FILE
    if not saved.is_file():
        return
    try:
        saved_seed = read_saved_config(saved).get("seed")
    except ConfigError as exc:
        raise ConfigError(f"--resume: {exc}") from exc
    if saved_seed is not None and saved_seed != seed:
        raise ConfigError(f"--resume: {exp_dir} holds the run of seed {saved_seed}, not seed {seed}: resume with "
                          f"-s {saved_seed}, or give this seed its own folder (--exp-name)")


HOOK_CKPT_KEY = "policy.learn.learner.hook.load_ckpt_before_run"


def checkpoint_to_load(exp_dir: Path, resume: bool, load_ckpt: str | Path | None,
                       cfg: Any = None) -> tuple[Path, dict[str, Any]] | None:
    """The checkpoint a run starts from and its contents, read here (so it is readable) before anything is written,
    and only here; None for a fresh start.

    ``load_ckpt`` (``--load-ckpt``) first; else with ``resume`` the latest of ``exp_dir``; else the config's
    ``policy.learn.learner.hook.load_ckpt_before_run``."""
    if load_ckpt is not None and resume:
        raise ConfigError("--resume and --load-ckpt both name a checkpoint to start from: give only one")
    source = "--load-ckpt"  # named in the error: a path that fails to load may sit deep in the config
    if load_ckpt is None and not resume and cfg is not None:
        load_ckpt, source = cfg.policy.learn.learner.hook.get("load_ckpt_before_run") or None, HOOK_CKPT_KEY
    if load_ckpt is not None:
        try:
            return Path(load_ckpt), load_checkpoint(load_ckpt)  # a CheckpointError if missing or unreadable
        except CheckpointError as exc:
            raise CheckpointError(f"{source}: {exc}") from exc
    if resume:
        if not exp_dir.is_dir():
            raise CheckpointError(f"--resume: there is no run to continue in {exp_dir} (no such folder): leave "
                                  f"--resume out to start it, or name the run's folder with --exp-name")
        if not (exp_dir / CKPT_DIR).is_dir() and not (exp_dir / CONFIG_FILE).is_file():
            # not a run stopped early (that has its total_config.py): some other folder, named by mistake
            raise CheckpointError(f"--resume: {exp_dir} is not a run's folder (no total_config.py, no ckpt/): name "
                                  f"the run's folder with --exp-name, or leave --resume out to start a new run")
        latest = resume_checkpoint(exp_dir / CKPT_DIR)  # the newest that loads: an unreadable one is skipped, warned
        if latest is None:
            raise CheckpointError(
                f"--resume: no iteration_N.pth.tar or resume_N.pth.tar checkpoint in {exp_dir / CKPT_DIR} (the run "
                f"stopped before its first one): start from another checkpoint with --load-ckpt PATH (e.g. "
                f"{exp_dir / CKPT_DIR / BEST_CKPT}), or write them more often with "
                f"--set policy.learn.learner.hook.save_resume_ckpt.every_seconds=S or "
                f"policy.learn.learner.hook.save_ckpt_after_iter=N")
        return latest
    return None
