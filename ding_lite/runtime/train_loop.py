"""What every training pipeline shares once it has started its run (:func:`~ding_lite.runtime.run_start.start_run`)
and built its parts (:class:`~ding_lite.runtime.parts.TrainingParts`: local workers in the serial pipeline, stand-ins
for Ray actors in the parallel one): the learner, the train loop and ``result.json`` (the run's record across
resumes: :mod:`ding_lite.runtime.run_record`)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ding_lite.build import build
from ding_lite.config.compile import ignored_keys
from ding_lite.envs.variations import log_per_variation
from ding_lite.errors import Interrupted, Terminated, first_line
from ding_lite.runtime.experiment import prepare_exp_dir, write_json
from ding_lite.runtime.parts import TrainingParts
from ding_lite.runtime.replay_ckpt import ENTRY as REPLAY_ENTRY
from ding_lite.runtime.replay_ckpt import ReplayCheckpoints
from ding_lite.runtime.restarts import ENTRY as RESTARTS_ENTRY
from ding_lite.runtime.restarts import RunRestarts, per_1k
from ding_lite.runtime.run_record import RunRecord
from ding_lite.runtime.run_start import RunStart
from ding_lite.runtime.stop_requests import StopRequests
from ding_lite.utils.checkpoint import latest_checkpoint
from ding_lite.utils.events import EVAL_RETURN_ITER_TAG, EVAL_RETURN_TAG
from ding_lite.utils.log import ExperimentLogger
from ding_lite.utils.run_folder import BEST_CKPT, BEST_CKPT_NAME, CKPT_DIR, RESULT_FILE
from ding_lite.utils.run_result import failed_entries
from ding_lite.utils.seed import SeedPlan
from ding_lite.utils.trackers import check_backends
from ding_lite.worker.disk_room import DiskRoom
from ding_lite.worker.learner import BaseLearner
from ding_lite.worker.video import PeriodicVideos

REPLAY_SCHEDULE_ENTRY = "replay_schedule"  # the checkpoint entry of the replay schedule (policy/replay.py)


def run_training(run: RunStart, parts: TrainingParts) -> dict[str, Any]:
    """The part every training pipeline shares once its workers are built: learner over ``parts.policy``, optional
    checkpoint, experiment folder, logger, the train loop, ``result.json``.

    ``parts`` (:class:`~ding_lite.runtime.parts.TrainingParts`) holds ``policy``, ``collector``, ``evaluator``,
    ``buffer`` (None on-policy), ``attach(learner, logger)`` (called once both exist), ``stats()`` (extra entries of
    the result), ``env_restarts()`` and ``run_counts()`` (counts saved with every checkpoint, continued on resume).
    The serial pipeline's parts are local workers; the parallel pipeline's are driver-side stand-ins for Ray actors
    with the same methods.
    """
    cfg, exp_dir = run.cfg, run.exp_dir  # resolved and frozen by start_run
    check_backends(cfg.log)  # a tracker whose package is missing fails here, before anything is written
    record = RunRecord(exp_dir, run.start)
    learner = BaseLearner(cfg.policy.learn.learner, parts.policy, exp_dir, None, cfg.policy.type, record.state)
    learner.watch_disk(DiskRoom(cfg.policy.learn.learner.get("hook") or {}, run.max_env_step, run.max_train_iter))
    record.follow(lambda: (learner.train_iter, parts.collector.env_step), lambda: parts.evaluator.last_eval_iter)
    restarts = RunRestarts(parts.env_restarts)  # the run's, across resumes
    replay = parts.policy.learn_mode.replay
    # what counts on across resumes (runtime/restarts.py), and the replay ratio's fraction of an update owed
    counts = {RESTARTS_ENTRY: restarts, **parts.run_counts(),
              **({REPLAY_SCHEDULE_ENTRY: replay} if replay is not None else {})}
    for entry, counter in counts.items():
        learner.save_with_checkpoints(entry, counter.state)
    if replay is not None:  # a budget that ends before learning starts fails here, before anything is written
        replay.check_budget(run.max_env_step)
    replay_ckpts = None if parts.buffer is None else ReplayCheckpoints(parts.buffer, learner.ckpt_dir)
    if replay_ckpts is not None:  # the buffer goes with the checkpoints a resume starts from
        learner.save_with_checkpoints(REPLAY_ENTRY, replay_ckpts.state)
    buffer_note = None
    if run.ckpt_path is not None:  # a checkpoint that does not fit the policy fails here, before anything is written
        learner.load_checkpoint(run.ckpt_path, run.ckpt_state)
        if run.resume:
            record.resume_from(learner.loaded_run, run.ckpt_path, learner)
            # the evaluations go on every eval_freq from the last one, not from the resume (a checkpoint without it,
            # or written at an evaluation: it evaluates first)
            parts.evaluator.continue_schedule(learner.loaded_run.get("last_eval_iter"))
            for entry, counter in counts.items():
                counter.continue_from(learner.loaded_with[entry])
            if replay_ckpts is not None:
                buffer_note = replay_ckpts.restore(learner.loaded_with[REPLAY_ENTRY], run.ckpt_path)
    # videos every video_every evaluations (None: off); an env that cannot render fails here, before any write
    videos = PeriodicVideos.from_config(cfg, exp_dir, parts.policy.eval_mode.state_dict,
                                        lambda: build(cfg, "policy", enable_field=("eval",)),
                                        run.seeds.evaluator)
    prepare_exp_dir(exp_dir, cfg, resumed=run.resume)
    logger = ExperimentLogger(exp_dir, progress_total=run.max_env_step, progress=run.progress, cfg=cfg,
                              folder_check=run.claim.check)
    learner.log_to(logger)
    if replay_ckpts is not None:
        replay_ckpts.log_to(logger.info)
    if exp_dir != run.asked_dir:
        logger.info(f"{run.asked_dir} {run.claim.skipped}: writing to {exp_dir}")
    logger.info(start_line(cfg, run.seed, run.max_env_step, run.max_train_iter, parts.stop_rules()))
    evals: list[Any] = []  # the run's evaluations (the result of a run that fails says how far it got)
    try:
        with _failure_logged(logger, exp_dir, lambda exc: _failed_result(exc, run, parts, learner, record, restarts,
                                                                         evals)):
            if run.ckpt_path is not None:
                logger.info(f"loaded {run.ckpt_path} (train_iter {learner.train_iter}, env_step {learner.env_step})"
                            + (f"; {buffer_note}" if buffer_note else ""))
            parts.attach(learner, logger)
            result = _train_loop(cfg, parts, learner, logger, run.max_env_step, run.max_train_iter, restarts, videos,
                                 record.mark_eval, evals)
            result.update(parts.stats())
            result.update(_final_eval_or_stop(cfg, parts, learner, run.seeds, logger))
            result.update(restarts.result(result["env_step"]))  # the final evaluation's restarts count too
            _log_restarts(logger, restarts)  # the same count as result.json's, the final evaluation's included
            result.update(_run_entries(run, record))
            logger.check_folder()
            write_json(exp_dir / RESULT_FILE, result)
            _log_done(logger, result, exp_dir, result["ignored_keys"])
    finally:
        logger.close()
        if videos is not None:
            videos.close()
    return result


@contextmanager
def _failure_logged(logger: ExperimentLogger, exp_dir: Path,
                    failed_result: Callable[[Exception], dict[str, Any]]) -> Iterator[None]:
    """An error in the block (diverged training, an env's failure, a worker's...) ends the text log too (``[failed]
    <the error's line>``; the console's line is the CLI's), and writes ``result.json`` with ``failed_result(exc)``
    (``failed`` true, ``stop_reason`` ``failed: <the error's line>``): before, the folder had none, and its readers
    (``-m plot``, ``-m sweep``) took it for a run killed mid-way, or after a failed ``--resume`` read the earlier
    segment's ``result.json`` and its spent budget. A stop by SIGINT or SIGTERM is no failure (it is resumable:
    the ``[stop]`` line, and no new ``result.json``)."""
    try:
        yield
    except Exception as exc:
        # nothing here may hide the run's own error (a full disk, say); a folder removed or moved meanwhile gets no
        # result.json (check_folder): it would make a new folder under the old name
        with contextlib.suppress(Exception):
            logger.text(f"[failed] {first_line(exc)}")
        with contextlib.suppress(Exception):
            logger.check_folder()
            write_json(exp_dir / RESULT_FILE, failed_result(exc))
        raise


def _run_entries(run: RunStart, record: RunRecord) -> dict[str, Any]:
    """The entries of ``result.json`` about the run itself, finished or failed."""
    return {"seed": run.seed, "wall_seconds": round(record.wall_seconds(), 3), "segments": len(record.resumes) + 1,
            "resumed_from": record.resumes, "exp_dir": str(run.exp_dir), "ignored_keys": ignored_keys(run.cfg)}


def _failed_result(exc: Exception, run: RunStart, parts: TrainingParts, learner: BaseLearner, record: RunRecord,
                   restarts: RunRestarts, evals: list[Any]) -> dict[str, Any]:
    """``result.json`` of a run that failed with ``exc``: how far it got and its evaluations so far."""
    env_step = parts.collector.env_step
    return {**failed_entries(exc, env_step, learner.train_iter, evals[-1] if evals else None,
                             float(parts.evaluator.best_return)),
            "stop_value": run.cfg.env.stop_value, **restarts.result(env_step), **_run_entries(run, record)}


def start_line(cfg: Any, seed: int, max_env_step: int | None, max_train_iter: int | None,
               stops: list[str] | None = None) -> str:
    """The run's first line: what it trains and what ends it (``stops``, the game's stop rules in words: by default
    the eval return's, :func:`eval_return_stops`; then the budgets), so that a run that stops early, or never, says
    why before it starts."""
    path = cfg.env.get("import_path")  # a PettingZoo game's 'package.module:callable': its module names the game
    env = cfg.env.get("env_id") or (str(path).split(":")[0].rsplit(".", 1)[-1] if path else cfg.env.type)
    ends = list(eval_return_stops(cfg) if stops is None else stops)
    ends += [f"{n:,} {unit}" for n, unit in ((max_env_step, "env steps"), (max_train_iter, "train iters"))
             if n is not None]
    text = " or ".join(ends) if ends else "nothing: it runs until stopped (Ctrl-C writes a checkpoint, then stops)"
    return f"[start] {cfg.policy.type} on {env}, seed {seed}; ends at {text}"


def eval_return_stops(cfg: Any) -> list[str]:
    """What ends a run on the config's env besides its budgets, in words: the mean eval return reaching
    ``env.stop_value``, and a plateau where the evaluator stops at one."""
    evaluator = cfg.policy.eval.evaluator
    every = f"{cfg.env.n_evaluator_episode} episodes every {evaluator.eval_freq} train iters"
    ends = [] if cfg.env.stop_value is None else [f"a mean eval return >= {number_text(cfg.env.stop_value)} ({every})"]
    if evaluator.get("type") == "plateau":
        ends.append(f"a plateau ({evaluator.plateau_patience} evaluations without a gain above "
                    f"{number_text(evaluator.plateau_tol)})")
    return ends


def number_text(value: float) -> str:
    """``value`` as short as ``:g`` writes it where that is the same number; else in full (``:g`` keeps 6 digits:
    a stop value of 1234567 would read 1.23457e+06, a threshold the run does not use)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def _log_restarts(logger: ExperimentLogger, restarts: RunRestarts) -> None:
    if restarts.total():
        logger.info(f"env worker restarts: {restarts.total()} ("
                    + ", ".join(f"{k} {v}" for k, v in restarts.per_manager().items()) + ")")


def _log_done(logger: ExperimentLogger, result: dict[str, Any], exp_dir: Path, ignored: list[str]) -> None:
    outcome = result["stop_reason"] if result["stop"] else "budget spent"
    final = "" if result.get("final_eval_return") is None else \
        f"; best checkpoint on {result['final_eval_episodes']} fresh episodes: " \
        f"{result['final_eval_return']:.2f} ± {result['final_eval_std']:.2f}"
    logger.info(f"[done] {outcome}: env_step {result['env_step']}, train_iter {result['train_iter']}, "
                f"{result['wall_seconds']:.1f} s{final}; results in {exp_dir}"
                + (f"; ignored unknown config keys: {', '.join(ignored)}" if ignored else ""))


def _train_loop(cfg: Any, parts: TrainingParts, learner: BaseLearner, logger: ExperimentLogger,
                max_env_step: int | None, max_train_iter: int | None, restarts: RunRestarts,
                videos: PeriodicVideos | None = None, mark_eval: Callable[[int, int], None] | None = None,
                evals: list[Any] | None = None) -> dict[str, Any]:
    collector, evaluator, buffer = parts.collector, parts.evaluator, parts.buffer
    collector.continue_from(learner.env_step)
    n_sample = cfg.policy.collect.n_sample or cfg.env.collector_env_num
    learner.call_hooks("before_run")
    last_eval = None
    evals = [] if evals is None else evals  # each evaluation's result appended (the caller's record of the last)
    restarts_logged = restarts.total()  # a resumed run's count so far is in tensorboard already
    with StopRequests() as stops:  # Ctrl-C or SIGTERM: a checkpoint, then stop (runtime/stop_requests.py)
        while True:
            if stops.requested:  # between iterations: every part is whole
                path = learner.save_for_stop(collector.env_step)
                stop = stops.error(str(path) if path is not None else "none (no experiment folder)",
                                   collector.env_step, learner.train_iter)
                logger.text(f"[stop] {stop}")  # the console gets it from whoever catches it (the CLI)
                raise stop
            if evaluator.should_eval(learner.train_iter):
                last_eval = _evaluate(evaluator, learner, logger, collector.env_step, videos, mark_eval)
                evals.append(last_eval)
                if last_eval.stop:
                    break
            if _budget_spent(collector.env_step, learner.train_iter, max_env_step, max_train_iter):
                if last_eval is None or last_eval.train_iter != learner.train_iter:
                    last_eval = _evaluate(evaluator, learner, logger, collector.env_step, videos, mark_eval)
                    evals.append(last_eval)
                break
            samples, episodes = collector.collect(n_sample, learner.train_iter)
            if restarts.total() != restarts_logged:
                restarts_logged = restarts.total()
                logger.scalar("env/restarts", restarts_logged, collector.env_step)
                logger.scalar("env/restart_rate", per_1k(restarts_logged, collector.env_step), collector.env_step)
            if episodes:
                logger.scalar("collect/episode_return", sum(e.episode_return for e in episodes) / len(episodes),
                              collector.env_step)
            if buffer is None:
                learner.train(samples, collector.env_step)
            else:  # the policy's replay schedule: push, then the updates due (ding_lite/policy/replay.py)
                learner.policy.replay.train(buffer, samples, collector.env_step, learner.train, learner.one_update)
            logger.progress(collector.env_step, learner.train_iter, learner.samples_trained,
                            None if last_eval is None else last_eval.mean)
    learner.end_run(collector.env_step)
    return {
        "stop": bool(last_eval.stop),
        "failed": False,  # a run that fails writes True (_failure_logged)
        "stop_reason": last_eval.stop_reason if last_eval.stop else None,  # the log's words for why it stopped
        "env_step": collector.env_step,
        "train_iter": learner.train_iter,
        "eval_return": last_eval.mean,
        "eval_return_std": last_eval.std,
        "best_eval_return": float(evaluator.best_return),
        "stop_value": cfg.env.stop_value,
        **restarts.result(collector.env_step),
        **({"eval_per_variation": table} if (table := last_eval.per_variation()) else {}),  # env variations only
    }


def _final_eval(cfg: Any, parts: TrainingParts, learner: BaseLearner, seeds: SeedPlan) -> dict[str, Any]:
    """The best checkpoint (else the last policy) over ``policy.eval.final_episodes`` episodes on fresh seeds: the
    stop rule's few evaluation episodes can call a policy solved by luck; this number says how good it is."""
    n_episode = int(cfg.policy.eval.get("final_episodes", 0) or 0)
    if n_episode <= 0:
        return {}
    best = learner.ckpt_dir / BEST_CKPT if learner.ckpt_dir is not None else None
    if best is not None and not best.is_file():
        best = None
    out = parts.final_eval(n_episode, seeds.final_eval, best)
    return {"final_eval_return": out.mean, "final_eval_std": out.std, "final_eval_episodes": len(out.returns),
            # relative to the experiment folder: runs that differ only in their folder have equal results
            "final_eval_checkpoint": f"{CKPT_DIR}/{BEST_CKPT}" if best is not None else None}


def _final_eval_or_stop(cfg: Any, parts: TrainingParts, learner: BaseLearner, seeds: SeedPlan,
                        logger: ExperimentLogger) -> dict[str, Any]:
    """:func:`_final_eval`; Ctrl-C in it (outside the loop's safe points: the training is over, its checkpoint
    written) says so and names the checkpoint that ``--resume`` evaluates again, as a stop in the loop does."""
    try:
        return _final_eval(cfg, parts, learner, seeds)
    except KeyboardInterrupt as exc:
        if isinstance(exc, (Interrupted, Terminated)):
            raise
        ckpt = latest_checkpoint(learner.ckpt_dir) if learner.ckpt_dir is not None else None
        stop = Interrupted(f"stopped by SIGINT in the final evaluation, after the training (env_step "
                           f"{learner.env_step}, train_iter {learner.train_iter}); checkpoint {ckpt or 'none'}: "
                           f"--resume runs the final evaluation again")
        logger.text(f"[stop] {stop}")  # as the loop's stops: the console gets it from the CLI
        raise stop from None


def _budget_spent(env_step: int, train_iter: int, max_env_step: int | None, max_train_iter: int | None) -> bool:
    return (max_env_step is not None and env_step >= max_env_step) or \
        (max_train_iter is not None and train_iter >= max_train_iter)


def _evaluate(evaluator: Any, learner: BaseLearner, logger: ExperimentLogger, env_step: int,
              videos: PeriodicVideos | None = None, mark_eval: Callable[[int, int], None] | None = None) -> Any:
    logger.check_folder()  # the folder removed or moved meanwhile: stop now, not at the end
    learner.log_now()  # learn scalars at least once per evaluation, whatever log_show_after_iter says
    learner.check_weights()  # weights gone NaN or inf with finite losses (Adam's moments overflowed): stop here
    if mark_eval is not None:  # a checkpoint of this train_iter written from here on keeps the logs as they are now
        mark_eval(learner.train_iter, env_step)
    result = evaluator.eval(learner.train_iter, env_step)
    learner.record_best_return(evaluator.best_return)
    if result.improved:
        learner.save_checkpoint(BEST_CKPT_NAME)
    learner.call_hooks("after_eval")
    logger.scalar(EVAL_RETURN_TAG, result.mean, env_step)
    logger.scalar("eval/return_std", result.std, env_step)
    logger.scalar(EVAL_RETURN_ITER_TAG, result.mean, learner.train_iter)
    log_per_variation(logger, result.per_variation(), env_step)  # env variations only (envs/variations.py)
    logger.info(f"[eval] iter {learner.train_iter:>6d}  env_step {env_step:>8d}  return {result.mean:8.2f} ± "
                f"{result.std:6.2f}  best {evaluator.best_return:8.2f}" + (f"  {result.stop_reason}" if result.stop
                                                                             else ""))
    for video in videos.after_eval(learner.train_iter) if videos is not None else ():
        logger.info(f"[video] {video.path}: return {video.episode_return:.2f}, {video.length} steps")
    return result
