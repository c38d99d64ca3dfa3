"""Generalist-specialist learning (GSL, Jia et al., ICML 2022), one command from the generalist to the fine-tuned
generalist: ``ding_lite -m gsl -c CONFIG``. The phases (docs/gsl.md) each run as a sub-experiment of the serial
pipeline in ``<exp>/``:

1. ``phase1_generalist/``: PPO on all ``env.variations`` until the mean eval return plateaus (``gsl.plateau_*``) or
   ``gsl.phase1_max_env_step``; then a per-variation evaluation of its final policy.
2. ``specialist_k/``: the ``gsl.n_low`` worst variations split into ``gsl.n_specialists`` disjoint subsets; each
   specialist starts from the generalist's weights and trains only on its subset (Ray actors in parallel, or one
   after the other), ``gsl.specialist_max_env_step`` env steps each.
3. ``demos/``: successful episodes of each specialist (its best evaluated checkpoint) on its subset and of the
   generalist on the other variations.
4. ``phase2_generalist/``: the generalist continues with PPO-DAPG on those demos, on all variations.

``<exp>/result.json`` is rewritten after every phase (the per-variation tables, the subsets, the env steps of every
phase); ``--resume`` continues the phase a killed run was in and redoes none that finished. Start checkpoints (the
generalist's weights with fresh counters) are written to ``<exp>/starts/``. Model shapes left out of the config are
filled in from the env once, before any phase, so that every phase (and every start checkpoint) builds the same
model.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike, fill_model_shapes_from_env, import_plugins
from ding_lite.config import save_config
from ding_lite.entry.serial import serial_pipeline
from ding_lite.envs.variations import variation_ids
from ding_lite.gsl.demos import collect_gsl_demos, evaluate_per_variation, summarize
from ding_lite.gsl.phases import (
    check_gsl_config,
    final_ckpt,
    phase1_config,
    phase2_config,
    run_phase,
    specialist_config,
    start_checkpoint,
)
from ding_lite.gsl.plateau import (
    DEMOS,
    PHASE1,
    PHASE2,
    specialist_name,
    split_variations,
    step_accounting,
    worst_variations,
)
from ding_lite.gsl.specialists import run_specialists, specialists_left
from ding_lite.gsl.state import GslState, gsl_settings
from ding_lite.runtime.experiment import write_json
from ding_lite.runtime.run_start import RunOptions, start_run
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.run_folder import CKPT_SUFFIX, CONFIG_FILE, RESULT_FILE
from ding_lite.utils.trackers import check_backends


def gsl_pipeline(config: ConfigLike, seed: int = 0, *, exp_dir: str | Path | None = None, resume: bool = False,
                 strict: bool = False, overrides: tuple[str, ...] = (), address: str | None = None,
                 progress: bool = False) -> dict[str, Any]:
    """Run GSL's phases (module docstring) and return the top result (also ``<exp>/result.json``).

    Args:
        config: a config whose env has ``variations``; its ``gsl`` section holds GSL's settings.
        seed: seed of phase I; specialist k uses ``seed + 1 + k``, phase II ``seed``.
        exp_dir: the experiment folder (default ``cfg.exp_name``; a folder holding an earlier run is kept and
            ``<exp>_1``... used, unless ``resume``).
        resume: continue a killed run in ``exp_dir`` from the phase it was in.
        address: Ray cluster for the specialists (None: a local Ray instance).

    Example::

        gsl_pipeline('dizoo/grid/maze/config/maze_gsl_config.py', seed=0)
    """
    # the root folder is claimed and locked for the whole run, as each phase's own folder is (utils/claim.py)
    options = RunOptions(seed, exp_dir=exp_dir, resume=resume, strict=strict, overrides=overrides, progress=progress)
    with start_run(config, options, partial(_resolve_and_check, resume=resume), checkpoints=False) as run:
        cfg = run.cfg  # resolved and frozen: every phase and start checkpoint builds the same model
        ids = variation_ids(cfg.env) or []  # checked by _resolve_and_check
        return _run_gsl(cfg, run.exp_dir, ids, seed, resume, address, progress, run.start)


def _resolve_and_check(cfg: Any, resume: bool = False) -> None:
    """Before the folder is claimed: the model shapes from one probe env, then every GSL check."""
    fill_model_shapes_from_env(cfg)
    check_gsl_config(cfg)
    check_backends(cfg.log)  # as a serial run does before writing: the phases would refuse it after total_config.py
    # a missing Ray found now, not after phase I's hours of training; a resumed run checks once it has read which
    # specialists are left to train (_run_gsl)
    if cfg.gsl.use_ray and not resume:
        _check_ray_installed()


def _check_ray_installed() -> None:
    """The specialists' Ray actors need Ray: a :class:`PluginImportError` saying how to install it, or how to go on
    without it."""
    from ding_lite.distributed.session import import_ray

    import_ray("-m gsl (gsl.use_ray=True; --set gsl.use_ray=False trains the specialists one after the other)")


def _run_gsl(cfg: Any, root: Path, ids: list[int], seed: int, resume: bool, address: str | None, progress: bool,
             start: float) -> dict[str, Any]:
    """The phases of :func:`gsl_pipeline` in its claimed folder ``root``."""
    state = GslState.read(root, ids, seed) if resume else GslState(ids, seed)
    settings = gsl_settings(cfg)
    if resume:  # a finished phase is not redone: a setting it ran without is refused, not silently ignored
        state.check_resume(root, ids, settings)
        # a run whose specialists are done goes on without Ray (run_specialists starts none)
        if cfg.gsl.use_ray and (state.specialist_subsets is None
                                or specialists_left(root, len(state.specialist_subsets))):
            _check_ray_installed()
    # the run's own config with its gsl section (each phase's total_config.py holds its phase's config only):
    # `-m gsl -c <exp>/total_config.py` runs it again; written after a resume's checks, which may refuse it
    save_config(cfg, root / CONFIG_FILE)
    state.variations, state.settings = list(ids), settings
    earlier = set(state.phases_done)  # phases a resumed run finds done: kept, not redone
    log = setup_console_logging()
    g = cfg.gsl
    p1 = run_phase(root / PHASE1, lambda r: serial_pipeline(
        phase1_config(cfg), seed, g.phase1_max_env_step, exp_dir=root / PHASE1, resume=r, progress=progress))
    _mark(root, state, PHASE1, env_step=p1["env_step"], ended_by=_phase1_end(p1))
    if state.phase1_per_variation is None:
        state.phase1_per_variation = evaluate_per_variation(cfg, final_ckpt(root / PHASE1), ids, seed)
        state.low_variations = worst_variations(state.phase1_per_variation, g.n_low)
        state.specialist_subsets = split_variations(state.low_variations, g.n_specialists)
        _save_state(root, state)
    subsets = state.specialist_subsets or []
    log.info(f"[gsl] phase I {_earlier(PHASE1, earlier)} ({p1['env_step']} env steps, ended by "
             f"{state.phases[PHASE1]['ended_by']}); specialists on {subsets}")
    specialists = _specialists(cfg, root, state, subsets, seed, address, progress, earlier)
    if DEMOS not in state.phases_done:
        state.demos = collect_gsl_demos(cfg, root, subsets, ids, seed)
        _mark(root, state, DEMOS)
    demos = state.demos or {}
    log.info(f"[gsl] demos {_earlier(DEMOS, earlier)}: {demos['n_episode_kept']} episodes, {demos['n_step']} steps")
    p2 = run_phase(root / PHASE2, lambda r: _phase2(cfg, root, _demo_files(root, demos["files"]), seed, r, progress))
    _mark(root, state, PHASE2, env_step=p2["env_step"])
    log.info(f"[gsl] phase II {_earlier(PHASE2, earlier)} ({p2['env_step']} env steps)")
    if state.phase2_per_variation is None:
        state.phase2_per_variation = evaluate_per_variation(cfg, final_ckpt(root / PHASE2), ids, seed)
    state.env_steps = step_accounting(p1["env_step"], [s["env_step"] for s in specialists], demos["env_step"],
                                      p2["env_step"])
    state.summary = summarize(state.phase1_per_variation, state.phase2_per_variation)
    state.wall_seconds, state.exp_dir = round(time.perf_counter() - start, 3), str(root)
    _save_state(root, state)
    log.info(f"[gsl] done: mean return {state.summary['phase1']['return_mean']:.3f} -> "
             f"{state.summary['phase2']['return_mean']:.3f}, {state.env_steps['total']} env steps; {root}")
    return state.to_json()


def _earlier(phase: str, earlier: set[str]) -> str:
    """How a log line names a phase that a resumed run found done (and did not redo)."""
    return "kept from the earlier run" if phase in earlier else "done"


def _specialists(cfg: Any, root: Path, state: GslState, subsets: list[list[int]], seed: int, address: str | None,
                 progress: bool, earlier: set[str]) -> list[dict[str, Any]]:
    """Train the specialists (those a resumed run finds finished are kept) and mark each one done, in order, as soon
    as it and those before it have finished: result.json is rewritten after every phase, so a run stopped in
    specialist 1 already lists specialist 0."""
    finished: dict[int, dict[str, Any]] = {}

    def on_done(k: int, result: dict[str, Any]) -> None:
        finished[k] = result
        for j in range(len(subsets)):  # the finished prefix: phases_done keeps its order on Ray too
            if j not in finished:
                break
            if specialist_name(j) not in state.phases_done:
                _mark(root, state, specialist_name(j), env_step=finished[j]["env_step"], variations=subsets[j])

    results = run_specialists(train_specialist, cfg, root, subsets, seed, address, progress, on_done)
    state.specialists = [{"variations": s, "env_step": r["env_step"], "eval_return": r["eval_return"]}
                         for s, r in zip(subsets, results, strict=True)]
    names = [specialist_name(k) for k in range(len(subsets))]
    kept = all(name in earlier for name in names)
    setup_console_logging().info(f"[gsl] specialists {'kept from the earlier run' if kept else 'done'} "
                                 f"({[row['env_step'] for row in state.specialists]} env steps)")
    return state.specialists


def _demo_files(root: Path, written: list[str]) -> list[str]:
    """The demo files a run wrote, where they are now: always ``<root>/demos/<name>``, so a run folder that was moved
    or copied before ``--resume`` reads its own demos (the state keeps the paths they were written at)."""
    return [str(root / DEMOS / Path(f).name) for f in written]


def _phase2(cfg: Any, root: Path, demo_files: list[str], seed: int, resume: bool, progress: bool) -> dict[str, Any]:
    p2cfg = phase2_config(cfg, demo_files)
    start = None if resume else start_checkpoint(p2cfg, final_ckpt(root / PHASE1),
                                                 root / "starts" / f"phase2{CKPT_SUFFIX}")
    return serial_pipeline(p2cfg, seed, cfg.gsl.phase2_max_env_step, exp_dir=root / PHASE2, resume=resume,
                           load_ckpt=start, progress=progress)


def train_specialist(cfg: Any, root: Path, k: int, subset: list[int], seed: int, progress: bool) -> dict[str, Any]:
    """Specialist ``k``: start from the phase-I generalist's final weights, train on ``subset`` only (resumed where a
    killed run left a checkpoint, returned as is where it finished)."""
    import_plugins(cfg)  # a fresh Ray worker process knows only what it imports
    scfg = specialist_config(cfg, subset)
    folder = root / specialist_name(k)

    def run(resume: bool) -> dict[str, Any]:
        start = None if resume else start_checkpoint(scfg, final_ckpt(root / PHASE1),
                                                     root / "starts" / f"{specialist_name(k)}{CKPT_SUFFIX}")
        return serial_pipeline(scfg, seed, cfg.gsl.specialist_max_env_step, exp_dir=folder, resume=resume,
                               load_ckpt=start, progress=progress)

    return run_phase(folder, run)


def _phase1_end(result: Mapping[str, Any]) -> str:
    """Why phase I ended: 'stop_value', 'plateau' (the plateau evaluator stopped it) or 'budget'."""
    if not result["stop"]:
        return "budget"
    reached = result["stop_value"] is not None and result["eval_return"] >= result["stop_value"]
    return "stop_value" if reached else "plateau"


def _save_state(root: Path, state: GslState) -> None:
    root.mkdir(parents=True, exist_ok=True)
    write_json(root / RESULT_FILE, state.to_json())


def _mark(root: Path, state: GslState, phase: str, **info: Any) -> None:
    state.mark(phase, **info)
    _save_state(root, state)
