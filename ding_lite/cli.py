"""Command line: ``ding_lite -m MODE -c CONFIG [-s SEED ...] ...``; each mode calls one pipeline function."""
from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ding_lite.errors import ConfigError, DingLiteError, Terminated
from ding_lite.utils.cli_args import OneLineParser, budget_int, distinct_seeds, positive_int, seed_arg
from ding_lite.utils.run_folder import CKPT_DIR, CONFIG_FILE, LOG_DIR

if TYPE_CHECKING:
    from ding_lite.runtime.run_start import RunOptions

MODES = ("serial", "parallel", "eval", "collect_demo", "plot", "selfplay", "gsl", "sweep", "serial_onpolicy")


def build_parser(mode: str | None = None) -> argparse.ArgumentParser:
    """The command line of the modes that take a config; with ``mode`` (``-m MODE --help``) the help shows only the
    options that mode reads (the others are still parsed, so that giving one is refused naming the modes that read
    it, see :func:`_check_mode_options`)."""
    from ding_lite import __version__

    def shown(option: str, text: str) -> str:
        return argparse.SUPPRESS if mode in RUNNERS and mode not in HELP_READERS.get(option, (mode,)) else text

    parser = OneLineParser(prog="ding_lite", description="Run a ding_lite experiment from a config file" + (
        f" (the options of -m {mode}; ding_lite --help lists every mode's)." if mode in RUNNERS else "."))
    parser.add_argument("--version", action="version", version=f"ding_lite {__version__}")
    parser.add_argument("-m", "--mode", default="serial", choices=MODES, help="pipeline to run (default: serial; "
                        "DI-engine's serial_onpolicy is serial, which trains on-policy and off-policy policies); "
                        "plot takes experiment folders instead of a config: ding_lite -m plot --help; sweep has "
                        "options of its own: ding_lite -m sweep --help")
    parser.add_argument("-c", "--config", required=True, help="config file (.py holding main_config)")
    parser.add_argument("-s", "--seed", type=seed_arg, action="append",
                        help="seed; repeat for several runs (default: the config's seed, 0 unless it sets one)")
    parser.add_argument("--max-env-step", "--env-step", type=budget_int, default=None, help=shown(
        "--max-env-step", "stop after this many env steps (e.g. 300000 or 3e5; --env-step is DI-engine's name; "
        "-m gsl: gsl.*_max_env_step instead)"))
    parser.add_argument("--max-train-iter", "--train-iter", type=budget_int, default=None, help=shown(
        "--max-train-iter", "stop after this many train iterations (--train-iter is DI-engine's name)"))
    parser.add_argument("--exp-name", default=None, help="experiment folder (default: the config's exp_name); a "
                        "leading ~ is the home folder (~/runs/x), a folder named ~ is refused")
    parser.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="override config values, e.g. --set policy.learn.batch_size=128 env.collector_env_num=4 "
                             "(one or more after each --set; repeatable)")
    parser.add_argument("--resume", action="store_true",
                        help=shown("--resume", "continue from the experiment's latest checkpoint"))
    parser.add_argument("--load-ckpt", "--load-path", default=None, help=shown(
        "--load-ckpt", "checkpoint to start from (serial), evaluate (eval) or roll out (collect_demo); "
        "--load-path is DI-engine's name"))
    parser.add_argument("--strict", action="store_true", help="unknown config keys are errors, not warnings")
    parser.add_argument("--n-episode", type=positive_int, default=None,
                        help=shown("--n-episode", "eval, collect_demo: number of episodes"))
    parser.add_argument("--demo-path", default=None,
                        help=shown("--demo-path", "collect_demo: output file (default <exp_name>/demo.npz)"))
    parser.add_argument("--no-progress", action="store_true", help=shown(
        "--no-progress", "hide the progress bar of a training run (-m eval and -m collect_demo show none)"))
    parser.add_argument("--video", "--replay-path", default=None, metavar="DIR", help=shown(
        "--video", "eval: also record evaluation episodes as mp4 files in DIR (the evaluator's first env; training "
        "runs: policy.eval.evaluator.video_every); --replay-path is DI-engine's name"))
    parser.add_argument("--video-episodes", type=positive_int, default=None, metavar="N",
                        help=shown("--video-episodes", "eval: episodes to record with --video (default 1)"))
    parser.add_argument("--address", default=None, help=shown(
        "--address", "parallel, gsl: Ray cluster to join, 'auto' or HOST:PORT (default: start a local Ray instance)"))
    return parser


def training_run(args: argparse.Namespace, seed: int | None, n_seeds: int) -> tuple[Any, RunOptions]:
    """The compiled config and the :class:`~ding_lite.runtime.run_start.RunOptions` of a training mode's run of
    ``seed`` (one of ``n_seeds``; None: the config's ``seed``): the config is compiled here (``--strict``, ``--set``),
    so the options carry none. ``--resume`` of a command over several seeds that was stopped continues the seeds it
    had started and starts those it had not reached (no folder yet); where no seed has a folder, it is refused as
    for one seed (a mistyped --exp-name is no new run)."""
    from ding_lite.build import load_config
    from ding_lite.runtime.experiment import experiment_dir
    from ding_lite.runtime.run_start import RunOptions
    from ding_lite.utils.log import setup_console_logging

    cfg = load_config(args.config, strict=args.strict, overrides=args.overrides, seed=seed)
    seed = int(cfg.seed)
    exp_dir = experiment_dir(cfg, args.exp_name, seed, n_seeds)
    resume = args.resume
    if resume and n_seeds > 1 and not exp_dir.exists() and \
            any(experiment_dir(cfg, args.exp_name, other, n_seeds).exists() for other in args.seed or ()):
        # a command over several seeds that was stopped: the seeds it had not reached start now
        setup_console_logging().info(f"--resume: {exp_dir} holds no run yet (the command stopped before seed "
                                     f"{seed}): starting it")
        resume = False
    if args.mode in ("serial", "serial_onpolicy", "parallel") and seed == (args.seed or [seed])[0]:
        _warn_of_gsl_settings(cfg, args.mode)
    return cfg, RunOptions(seed, args.max_env_step, args.max_train_iter, exp_dir=exp_dir, resume=resume,
                           load_ckpt=args.load_ckpt, progress=not args.no_progress)


def _warn_of_gsl_settings(cfg: Any, mode: str) -> None:
    """A GSL config trained by another mode trains its generalist alone: say so. Every compiled config has a ``gsl``
    section, so only settings that differ from its defaults tell that the config was written for -m gsl."""
    from ding_lite.gsl.plateau import GSL_CONFIG
    from ding_lite.utils.log import setup_console_logging

    changed = [f"gsl.{key}" for key, default in GSL_CONFIG.items() if cfg.gsl.get(key, default) != default]
    if changed:
        setup_console_logging().warning(
            f"warning: {', '.join(changed)} {'is' if len(changed) == 1 else 'are'} set, but only -m gsl reads the gsl "
            f"section: -m {mode} trains one policy on the env, without the specialists and the PPO-DAPG phase "
            f"(run -m gsl for them)")


def run_serial(args: argparse.Namespace, seed: int | None, n_seeds: int) -> Any:
    from ding_lite.entry.serial import serial_pipeline

    cfg, options = training_run(args, seed, n_seeds)
    return serial_pipeline(cfg, **options.keywords())


def run_parallel(args: argparse.Namespace, seed: int | None, n_seeds: int) -> Any:
    from ding_lite.entry.parallel import parallel_pipeline
    from ding_lite.entry.parallel_selfplay import parallel_selfplay_pipeline
    from ding_lite.league.seats import is_selfplay_config

    cfg, options = training_run(args, seed, n_seeds)
    pipeline = parallel_selfplay_pipeline if is_selfplay_config(cfg) else parallel_pipeline  # a game: self-play
    return pipeline(cfg, address=args.address, **options.keywords())


def run_selfplay(args: argparse.Namespace, seed: int | None, n_seeds: int) -> Any:
    from ding_lite.entry.selfplay import selfplay_pipeline

    cfg, options = training_run(args, seed, n_seeds)
    return selfplay_pipeline(cfg, **options.keywords())


def run_eval(args: argparse.Namespace, seed: int | None, n_seeds: int) -> Any:
    from ding_lite.entry.eval import eval_pipeline

    return eval_pipeline(args.config, seed, args.load_ckpt, args.n_episode, strict=args.strict,
                         overrides=tuple(args.overrides), exp_name=args.exp_name, n_seeds=n_seeds,
                         video=args.video, video_episodes=args.video_episodes or 1)


def run_collect_demo(args: argparse.Namespace, seed: int | None, n_seeds: int) -> Any:
    from ding_lite.entry.collect_demo import collect_demo_pipeline

    return collect_demo_pipeline(args.config, seed, args.load_ckpt, args.n_episode, args.demo_path,
                                 strict=args.strict, overrides=tuple(args.overrides), n_seeds=n_seeds,
                                 exp_name=args.exp_name)


def run_gsl(args: argparse.Namespace, seed: int | None, n_seeds: int) -> Any:
    from ding_lite.entry.gsl import gsl_pipeline

    cfg, options = training_run(args, seed, n_seeds)  # GSL's phases have budgets of their own
    return gsl_pipeline(cfg, options.seed, exp_dir=options.exp_dir, resume=options.resume, address=args.address,
                        progress=options.progress)


RUNNERS: dict[str, Callable[[argparse.Namespace, int | None, int], Any]] = {"serial": run_serial, "eval": run_eval,
                                                                     "collect_demo": run_collect_demo,
                                                                     "parallel": run_parallel,
                                                                     "selfplay": run_selfplay, "gsl": run_gsl,
                                                                     "serial_onpolicy": run_serial}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ding_lite`` command; returns the exit code (2 on bad input).

    Run as the command (``argv`` None), a successful run ends the process at once after flushing: every file, env
    worker, writer thread and Ray instance is closed by then, and interpreter teardown with torch loaded would add
    about 0.7 s of nothing. Errors and in-process calls (``argv`` given) return normally.
    """
    code = _run(argv)
    if code == 0 and argv is None and not os.environ.get("DING_LITE_SLOW_EXIT"):
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return code


# How argparse lets ``--mode`` be written: in full or shortened to an unambiguous prefix (``--m`` could also be
# ``--max-env-step``), with the value as the next word or after ``=``; ``-m`` also takes it attached (``-mplot``).
_MODE_FLAGS = ("--mo", "--mod", "--mode")


def _requested_mode(argv: Sequence[str]) -> str | None:
    """The ``-m``/``--mode`` value of ``argv`` as the main parser would read it: the last one given wins (plot and
    sweep take command lines of their own, so they are told apart before that parser runs)."""
    mode = None
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if word == "-m" or word in _MODE_FLAGS:
            mode = argv[i + 1] if i + 1 < len(argv) else mode
        elif eq and flag in _MODE_FLAGS:
            mode = value
        elif word.startswith("-m") and not word.startswith("--"):
            mode = word[2:].removeprefix("=")
    return mode


def _run(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            if _requested_mode(argv) == "plot":  # plot and sweep have command lines of their own
                from ding_lite.entry.plot import plot_command

                plot_command(argv)
                return 0
            if _requested_mode(argv) == "sweep":
                from ding_lite.entry.sweep import sweep_command

                sweep_command(argv)
                return 0
            args = build_parser(_requested_mode(argv)).parse_args(argv)  # the mode's help: its options only
        except SystemExit as exc:  # --help, --version, or a usage error (its line printed): main() returns the code
            return exc.code if isinstance(exc.code, int) else 2
        if args.mode not in RUNNERS:  # plot or sweep, spelt in a way the look-ahead above did not read
            raise ConfigError(f"-m {args.mode} takes a command line of its own: write it as ding_lite -m {args.mode} "
                              f"... (see ding_lite -m {args.mode} --help)")
        _check_mode_options(args)
        distinct_seeds(args.seed)
        args = _in_the_folder_of_its_config(args)
        seeds: list[int | None] = args.seed or [None]  # None: the config's seed (a total_config.py's is its run's)
        for seed in seeds:
            RUNNERS[args.mode](args, seed, len(seeds))
    except DingLiteError as exc:
        return _error(str(exc))
    except OSError as exc:
        if exc.errno not in SYSTEM_REFUSALS:
            raise  # not the user's disk or folder: a bug, with its traceback
        return _error(f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror or str(exc))
    except Terminated as exc:
        print(f"ding_lite: terminated (SIGTERM){_said(exc)}", file=sys.stderr)
        return 143
    except KeyboardInterrupt as exc:
        print(f"ding_lite: interrupted{_said(exc)}", file=sys.stderr)
        return 130
    return 0


def _in_the_folder_of_its_config(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with ``--exp-name`` set to the folder of ``-c <run folder>/total_config.py`` where the file names
    another folder as its run's (``exp_name``): the run folder was moved or copied since. Without this a copy's
    ``--resume`` wrote into the original folder, and a moved folder's ``-m eval`` looked for its checkpoints where it
    used to be. An explicit ``--exp-name``, or several seeds (one folder each), keep the file's name."""
    from pathlib import Path

    from ding_lite.config.reader import read_saved_config
    from ding_lite.gsl.plateau import PHASE1
    from ding_lite.utils.log import setup_console_logging

    path = Path(args.config)
    folder = path.parent
    if folder.name in ("", ".."):  # '-c total_config.py' inside the folder: '.' names no folder of its own
        folder = Path(os.path.abspath(folder))
    if args.exp_name is not None or len(args.seed or [None]) > 1 or path.name != CONFIG_FILE \
            or not any((folder / sub).is_dir() for sub in (CKPT_DIR, LOG_DIR, PHASE1)):  # no run's own folder
        return args  # (a GSL run's top folder has neither ckpt/ nor log/: its phases have them)
    try:
        named = read_saved_config(path).get("exp_name")
    except (ConfigError, OSError):
        return args  # the config's compile says what is wrong with it
    if not isinstance(named, str) or os.path.realpath(named) == os.path.realpath(folder):
        return args
    setup_console_logging().info(f"{path} names {named} as its run's folder, but it is in {folder} (moved or "
                                 f"copied): using {folder}; --exp-name {named} uses the other")
    return argparse.Namespace(**{**vars(args), "exp_name": str(folder)})


def _said(exc: BaseException) -> str:
    """``': <message>'`` of a stop that says where it stopped (a training run's: its checkpoint), else nothing."""
    return f": {exc}" if str(exc) else ""


TRAINING_MODES = ("serial", "serial_onpolicy", "parallel", "selfplay", "gsl")
# The options only some modes read: (option, its args attribute, the modes that read it, what the others read instead)
MODE_OPTIONS = (
    ("--n-episode", "n_episode", ("eval", "collect_demo"),
     "a training run's evaluations take env.n_evaluator_episode episodes"),
    ("--demo-path", "demo_path", ("collect_demo",), "only -m collect_demo writes a demo file"),
    ("--video-episodes", "video_episodes", ("eval",), "it counts the episodes -m eval records with --video"),
    ("--resume", "resume", TRAINING_MODES, "evaluation and demo collection start from --load-ckpt"),
    ("--no-progress", "no_progress", TRAINING_MODES, "-m eval and -m collect_demo show no progress bar"),
    ("--max-env-step", "max_env_step", ("serial", "serial_onpolicy", "parallel", "selfplay"),
     "-m eval and -m collect_demo run --n-episode episodes"),
    ("--max-train-iter", "max_train_iter", ("serial", "serial_onpolicy", "parallel", "selfplay"),
     "-m eval and -m collect_demo do not train"),
)

# Which modes read an option, for ``-m MODE --help`` (an option not listed here is read by every mode)
HELP_READERS: dict[str, tuple[str, ...]] = {
    **{option: readers for option, _, readers, _ in MODE_OPTIONS},
    "--video": ("eval",),
    "--address": ("parallel", "gsl"),
    "--load-ckpt": ("serial", "serial_onpolicy", "parallel", "selfplay", "eval", "collect_demo"),
}


def _check_mode_options(args: argparse.Namespace) -> None:
    """Refuse an option the chosen mode would ignore, naming what the mode reads instead."""
    if args.video is not None and args.mode != "eval":
        raise ConfigError(f"--video records evaluation episodes of -m eval, not of -m {args.mode}: for a "
                          f"training run set policy.eval.evaluator.video_every=N (a video every N evaluations)")
    if args.video_episodes is not None and args.video is None and args.mode == "eval":
        raise ConfigError("--video-episodes counts the episodes recorded with --video DIR: give --video too")
    if args.address is not None and not args.address.strip():
        raise ConfigError(f"--address {args.address!r} names no Ray cluster: give 'auto' or HOST:PORT, or leave "
                          f"--address out for a local Ray instance")
    if args.address is not None and args.mode not in ("parallel", "gsl"):
        raise ConfigError(f"--address joins a Ray cluster for -m parallel and -m gsl; -m {args.mode} runs in this "
                          f"process: leave --address out")
    if args.mode == "gsl":
        given = [name for name, value in (("--max-env-step", args.max_env_step),
                                          ("--max-train-iter", args.max_train_iter),
                                          ("--load-ckpt", args.load_ckpt)) if value is not None]
        if given:
            raise ConfigError(f"-m gsl does not read {', '.join(given)}: its phases have budgets of their own "
                              f"(--set gsl.phase1_max_env_step=N gsl.specialist_max_env_step=N "
                              f"gsl.phase2_max_env_step=N) and start from the generalist's weights")
    for option, attribute, readers, instead in MODE_OPTIONS:
        value = getattr(args, attribute)
        if value not in (None, False) and args.mode not in readers:
            names = [f"-m {mode}" for mode in readers if mode != "serial_onpolicy"]
            modes = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            raise ConfigError(f"{option} is read by {modes}, not by -m {args.mode} ({instead}): leave it out")


# What the system answers when a folder or disk the user named cannot take a write (or read): said in one line, as
# bad input is, not as a traceback (the pipelines name the file where the system does not).
SYSTEM_REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM,
                             errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP})


def _error(message: str) -> int:
    """Print a user-caused error as one line on stderr; the CLI's exit code for it is 2."""
    text = " ".join(message.split())  # one line, whatever the message holds
    print(f"ding_lite: error: {text}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
