"""The checks of ``ding_lite -m sweep`` before Ray starts or anything is written (see :mod:`ding_lite.entry.sweep`):
the space and each listed value (a trial's config checked as its run would check it), the metric, the pruner, the
seeds and budgets, the sweep folder (a ``--resume`` must give the same spec)."""
from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ding_lite.errors import DingLiteError
from ding_lite.sweep.space import SweepError, check_keys, override, parse_space
from ding_lite.sweep.trials import METRICS, PRUNABLE, PRUNERS, SPEC_FILE, SweepSpec


def check_trial_start(cfg: Any) -> None:
    """What each trial's serial run checks before its first step, checked once here before Ray starts, so that a
    config no trial can run is one error and not every trial failed: the env (a multi-agent game, an unknown id, the
    model shapes from one probe env) and the policy (built once and dropped: its settings, its demo files)."""
    from ding_lite.build import build, fill_model_shapes_from_env
    from ding_lite.config.compile import check_moved_env

    fill_model_shapes_from_env(cfg)  # a multi-agent game refused there: trials run the serial pipeline
    check_moved_env(cfg)  # a swept env.env_id under the config's stop value (config/moved_env.py)
    build(cfg, "policy")


def check_spec(spec: SweepSpec, resume: bool) -> list[Any]:
    """Every input checked before Ray starts or anything is written: the space, its keys and each listed value (the
    config with it checked as a trial's run would check it: :func:`check_trial_start`), the metric, the pruner, the
    sweep folder. Returns the dimensions."""
    from ding_lite.build import load_config
    from ding_lite.runtime.run_start import check_budget

    dims = parse_space(spec.space, spec.search)
    cfg = load_config(spec.config, strict=spec.strict, overrides=spec.overrides)
    check_keys(dims, cfg)
    firsts = [override(d.key, d.probe_values()[0]) for d in dims]  # a config every trial's run has a value for
    cfg = _checked_start(spec, [], firsts, cfg)
    _check_metric_recorded(cfg, spec.metric, "")
    console = logging.getLogger("ding_lite")
    level = console.level
    console.setLevel(logging.ERROR)  # the first compile warned of unknown keys already: once is enough
    try:
        for d in dims:
            for value in d.probe_values():
                try:
                    trial_cfg = _checked_start(spec, [override(d.key, value)], firsts)
                    _check_metric_recorded(trial_cfg, spec.metric, f" (with {override(d.key, value)})")
                except DingLiteError as exc:
                    raise SweepError(f"--space {d.spec}: {exc}") from None
    finally:
        console.setLevel(level)
    if spec.metric not in METRICS:
        raise SweepError(f"--metric {spec.metric}: choose one of {', '.join(METRICS)}")
    if spec.mode not in ("max", "min"):
        raise SweepError(f"--mode {spec.mode}: choose max or min")
    if not spec.seeds:
        raise SweepError("-s: give at least one seed")
    if any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**32 for s in spec.seeds):
        raise SweepError(f"-s: a seed must be an int from 0 to 4294967295, got {spec.seeds}")
    for name in ("max_env_step", "max_train_iter", "prune_after"):  # each trial's runs would refuse them later
        check_budget(name, getattr(spec, name))
    if spec.num_samples < 1:
        raise SweepError(f"--num-samples must be at least 1, got {spec.num_samples}")
    _check_pruner(spec)
    _check_folder(spec, resume)
    return dims


def _checked_start(spec: SweepSpec, values: list[str], firsts: list[str], cfg: Any = None) -> Any:
    """The config with the sweep's ``--set`` and ``values``, checked by :func:`check_trial_start`. Where that fails,
    it is checked again with every swept key at its first value under ``values`` (as each trial has a value for
    every key): a config that lacks what only the space gives (``env.env_id`` in a sweep over env ids) was refused
    though every trial could run. Refused (the first error) only if that fails too."""
    from ding_lite.build import load_config

    if cfg is None:
        cfg = load_config(spec.config, strict=spec.strict, overrides=[*spec.overrides, *values])
    try:
        check_trial_start(cfg)
        return cfg
    except DingLiteError as exc:
        first_error = exc
    retry = load_config(spec.config, strict=spec.strict, overrides=[*spec.overrides, *firsts, *values])
    try:
        check_trial_start(retry)
    except DingLiteError:
        raise first_error from None
    return retry


def _check_metric_recorded(cfg: Any, metric: str, where: str) -> None:
    """``final_eval_return`` is in ``result.json`` only when the run ends with a final evaluation: without one, every
    trial would train to its end and then fail on the missing number (a ``KeyError``)."""
    if metric == "final_eval_return" and int(cfg.policy.eval.get("final_episodes", 0) or 0) <= 0:
        raise SweepError(f"--metric final_eval_return needs policy.eval.final_episodes > 0 (the final evaluation of "
                         f"each run's best checkpoint), but the config{where} sets "
                         f"{cfg.policy.eval.get('final_episodes')!r}: leave out --set policy.eval.final_episodes=0, "
                         f"or choose --metric eval_return or best_eval_return")


def _check_pruner(spec: SweepSpec) -> None:
    if spec.pruner not in PRUNERS:
        raise SweepError(f"--pruner {spec.pruner}: choose one of {', '.join(PRUNERS)}")
    if spec.pruner == "none":
        return
    if spec.metric not in PRUNABLE:
        raise SweepError(f"--pruner {spec.pruner} compares evaluation returns during a trial, which do not estimate "
                         f"--metric {spec.metric}: use --pruner none")
    if spec.prune_after is None and spec.max_env_step is None:
        raise SweepError(f"--pruner {spec.pruner} needs --prune-after ENV_STEPS (or --max-env-step, a quarter of "
                         f"which is the default)")


def _check_folder(spec: SweepSpec, resume: bool) -> None:
    folder = Path(spec.sweep_dir)
    saved = folder / SPEC_FILE
    if not resume:
        if folder.exists() and any(folder.iterdir()):
            raise SweepError(f"--exp-name {folder}: the folder holds files already (a sweep?): --resume continues "
                             f"the sweep saved there, or choose another folder")
        return
    if not saved.is_file():
        raise SweepError(f"--resume: no sweep to continue in {folder} (no {SPEC_FILE})")
    old = json.loads(saved.read_text())
    new = asdict(spec)
    changed = [k for k in new if old.get(k) != new[k]]
    if changed:
        k = changed[0]
        raise SweepError(f"--resume: the sweep in {folder} was started with {k}={old.get(k)!r}, not {new[k]!r}: "
                         f"give the same command line to continue it")
