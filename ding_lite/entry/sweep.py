"""``ding_lite -m sweep``: hyperparameter search on Ray Tune. Each trial runs the config, with the trial's values set
as ``--set`` would, over the given seeds with the serial pipeline; its objective is the mean over those seeds of a
``result.json`` number (the last evaluation's return by default). Trials run in parallel on a local Ray instance or
a cluster (``--address``).

- ``--search grid`` (every combination of the value lists), ``random`` or ``optuna`` (Optuna's TPE sampler through
  Ray Tune's ``OptunaSearch``), ``--num-samples`` trials; with a pruner (``asha``, the default of optuna search, or
  ``median``) each trial reports its first seed's evaluation returns as it goes and the scheduler stops trials that
  trail the others at the same env step (later seeds do not run for a stopped trial).
- The sweep folder (``--exp-name``) holds ``trials/<trial id>/run_seed<K>/`` (ordinary experiment folders),
  ``tune/`` (Ray Tune's state), ``sweep.json`` (every trial's values, status, objective and runs), ``results.md``
  (the table printed at the end, sorted by the objective) and ``best_config.py`` (the best trial's compiled config,
  which runs with ``-m serial`` as any config does). ``ding_lite -m plot SWEEP_DIR`` draws one group per trial.
- A killed sweep continues with ``--resume`` (the same command line): finished trials are kept, seeds of a trial that
  finished are not run again, and a seed cut mid-run restarts from its newest checkpoint (or from scratch).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ding_lite.sweep.checks import check_spec
from ding_lite.sweep.console import ray_trial_tracebacks_dropped, trial_lines
from ding_lite.sweep.results import results_table, tune_status, write_results
from ding_lite.sweep.space import SweepError, tune_space
from ding_lite.sweep.trials import (
    METRICS,
    OBJECTIVE,
    PRUNERS,
    SPEC_FILE,
    TUNE_DIR,
    SweepSpec,
    import_tune,
    run_trial,
    scheduler,
    search_alg,
    trial_dirname,
)
from ding_lite.utils.cli_args import OneLineParser, budget_int, distinct_seeds, positive_float, positive_int, seed_arg


def sweep_pipeline(spec: SweepSpec, *, address: str | None = None, num_cpus: int | None = None,
                   cpus_per_trial: float = 1.0, resume: bool = False) -> dict[str, Any]:
    """Run (or with ``resume`` continue) the sweep ``spec`` on Ray Tune; returns the content of ``sweep.json``.

    ``address``: a Ray cluster to join (None: a local instance with ``num_cpus`` CPUs, default all);
    ``cpus_per_trial``: CPUs Ray reserves per trial (trials run in parallel as the CPUs allow).
    """
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # Tune's plain reporter, which verbose=0 silences
    tune = import_tune()
    dims = check_spec(spec, resume)
    if cpus_per_trial <= 0:
        raise SweepError(f"--cpus-per-trial must be positive, got {cpus_per_trial:g}")
    from ding_lite.distributed.session import import_ray, ray_session
    from ding_lite.entry.serial import serial_pipeline  # here: -m sweep --help needs no torch
    from ding_lite.runtime.experiment import write_json

    ray = import_ray("-m sweep")  # the version whose local instances use token authentication

    folder = Path(spec.sweep_dir)
    with ray_session(ray, address, num_cpus):
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / SPEC_FILE, asdict(spec))
        trainable = tune.with_resources(tune.with_parameters(run_trial, spec=spec, train=serial_pipeline,
                                                             workdir=os.getcwd()),
                                        {"cpu": cpus_per_trial})
        tune_path = folder / TUNE_DIR / "sweep"
        if resume and tune.Tuner.can_restore(str(tune_path)):
            tuner = tune.Tuner.restore(str(tune_path), trainable, resume_unfinished=True, resume_errored=True)
        else:
            tuner = tune.Tuner(
                trainable, param_space=tune_space(dims, spec.search),
                tune_config=tune.TuneConfig(metric=OBJECTIVE, mode=spec.mode, search_alg=search_alg(spec),
                                            scheduler=scheduler(spec), num_samples=spec.num_samples,
                                            reuse_actors=True, trial_dirname_creator=trial_dirname),
                run_config=tune.RunConfig(name="sweep", storage_path=str(folder / TUNE_DIR), verbose=0,
                                          callbacks=[trial_lines(spec)]))
        with ray_trial_tracebacks_dropped():  # a failed trial is one line of ours (trial_lines), not Ray's traceback
            grid = tuner.fit()
        address_used = ray.get_runtime_context().gcs_address
    return write_results(spec, tune_status(grid), address_used)


# ---- command line ----------------------------------------------------------------------------------------------
def build_sweep_parser() -> argparse.ArgumentParser:
    """The ``ding_lite -m sweep`` command line."""
    parser = OneLineParser(prog="ding_lite -m sweep", description="Hyperparameter search on Ray Tune: each trial "
                            "runs the config over the seeds with its values set; results sorted by the objective.")
    parser.add_argument("-m", "--mode", choices=["sweep"], default="sweep", help=argparse.SUPPRESS)
    parser.add_argument("-c", "--config", required=True, help="config file")
    parser.add_argument("-s", "--seed", type=seed_arg, action="append", help="seed of each trial's runs; repeat for "
                        "several (default 0)")
    parser.add_argument("--space", action="append", default=[], metavar="KEY=SPEC", help="a swept key: "
                        "KEY=[V1,V2,...], or for random/optuna search uniform(LOW,HIGH), loguniform(LOW,HIGH), "
                        "randint(LOW,HIGH), choice(V1,V2,...); repeat for several")
    parser.add_argument("--search", default="grid", choices=["grid", "random", "optuna"], help="search algorithm "
                        "(default grid)")
    parser.add_argument("--num-samples", type=positive_int, default=None, help="trials (random, optuna; default 8) or "
                        "repeats of the grid (default 1)")
    parser.add_argument("--metric", default="eval_return", help=f"objective, a result.json number: "
                        f"{', '.join(METRICS)} (default eval_return, the last evaluation's return)")
    parser.add_argument("--objective-mode", dest="objective_mode", default=None, choices=["max", "min"],
                        help="maximise or minimise the objective (default: max for returns, min for env_step and "
                        "wall_seconds)")
    parser.add_argument("--pruner", default=None, choices=PRUNERS, help="stop trials that trail at the same env "
                        "step (default asha for optuna search, none otherwise)")
    parser.add_argument("--prune-after", type=positive_int, default=None, metavar="ENV_STEPS",
                        help="env steps before the first pruning decision (default a quarter of --max-env-step)")
    parser.add_argument("--max-env-step", type=budget_int, default=None, help="env-step budget of each run")
    parser.add_argument("--max-train-iter", type=budget_int, default=None, help="train-iteration budget of each run")
    parser.add_argument("--exp-name", default=None, help="sweep folder (default <config exp_name>_sweep)")
    parser.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="config values of every trial, as ding_lite's --set (one or more after each --set; "
                             "repeatable)")
    parser.add_argument("--address", default=None, help="Ray cluster to join, 'auto' or HOST:PORT (default: start a "
                        "local Ray instance)")
    parser.add_argument("--num-cpus", type=positive_int, default=None,
                        help="CPUs of the local Ray instance (default all)")
    parser.add_argument("--cpus-per-trial", type=positive_float, default=1.0, help="CPUs Ray reserves per trial "
                        "(default 1)")
    parser.add_argument("--search-seed", type=seed_arg, default=0, help="seed of the random and optuna searches")
    parser.add_argument("--resume", action="store_true", help="continue the sweep in --exp-name")
    parser.add_argument("--strict", action="store_true", help="unknown config keys are errors, not warnings")
    return parser


def sweep_command(argv: Sequence[str]) -> None:
    """Run ``ding_lite -m sweep ...``: the results table to stdout, progress lines to stderr."""
    from ding_lite.build import load_config
    from ding_lite.runtime.experiment import exp_folder

    args = build_sweep_parser().parse_args(list(argv))
    distinct_seeds(args.seed)
    config = Path(args.config).resolve()
    cfg = load_config(config, strict=args.strict, overrides=args.overrides)
    folder = exp_folder(args.exp_name or f"{cfg.exp_name}_sweep", "--exp-name" if args.exp_name else "exp_name")
    folder = folder.resolve()  # '~' too, as a run's exp_name
    metric = args.metric
    spec = SweepSpec(config=str(config), sweep_dir=str(folder), space=list(args.space), search=args.search,
                     seeds=list(args.seed or [0]), metric=metric,
                     mode=args.objective_mode or METRICS.get(metric, "max"), overrides=list(args.overrides),
                     max_env_step=args.max_env_step, max_train_iter=args.max_train_iter,
                     num_samples=args.num_samples or (8 if args.search != "grid" else 1),
                     pruner=args.pruner or ("asha" if args.search == "optuna" else "none"),
                     prune_after=args.prune_after, search_seed=args.search_seed, strict=args.strict)
    summary = sweep_pipeline(spec, address=args.address, num_cpus=args.num_cpus, cpus_per_trial=args.cpus_per_trial,
                             resume=args.resume)
    print(results_table(spec, summary["trials"]))
    if summary["best"] is None:
        failed = next((t for t in summary["trials"] if t.get("error")), None)
        why = f"trial {failed['label']} failed: {failed['error']}; " if failed else ""
        raise SweepError(f"no trial finished: {why}see {folder / 'trials'} (each trial's trial.json and its runs' "
                         f"log/train.log)")
    print(f"best: {summary['best']['label']}; config {summary['best_config']}; rerun: {summary['command']}",
          file=sys.stderr)

