"""Config-key fuzzer: every leaf key of a dizoo config's compiled config, given bad values through the command line.

The rule it checks: a bad config value is refused with ONE line on stderr naming the key and the value, exit code 2,
and nothing written (no experiment folder); never a traceback from deep inside a run, and never only after the run's
folder exists. For each config (``dizoo/*/*/config/*_config.py``, in the mode it is run with (``dizoo.modes``): serial,
``-m selfplay`` for the board games, ``-m gsl`` for the GSL configs) and each leaf key of its compiled config (lists
and empty sections are leaves; ``env.manager.*``, ``env.kwargs.*``, ``league.*`` and ``gsl.*`` included), each bad
value of :data:`VALUES` is given with ``--set KEY=VALUE`` to ``python -m ding_lite`` in a fresh folder under the
system's temporary folder, on a tiny budget, with a timeout. Outcomes:

* ``refused``: exit 2, one ``ding_lite: error:`` line, no traceback, nothing written: good;
* ``accepted``: exit 0 (fine for a legal value; ``accepted?`` marks a suspicious one, such as NaN or inf);
* ``diverged``: exit 2 with one line of a divergence check (the learner's losses, the collector's actions), after the
  run's folder was written: a legal value (a huge learning rate: step sizes have no upper limit) whose run diverged;
* ``DEFECT``: a traceback, another exit code, files written before the error, or a hang (the timeout).

A case whose config does not compile is refused in this process first (the command line compiles the same config
first, before anything is written: ``--no-prescreen`` runs those as commands too); only the rest start a process.
A value equal to the key's default is skipped, and so is the huge int for counts and budgets (it would build 10^12
envs or run forever).

Run from the repository root (a few seconds per case that compiles; ``--help`` lists the options):

    python scripts/config_fuzz.py --config snake_arena_dqn tictactoe --jobs 2 --out fuzz.md
    python scripts/config_fuzz.py --config cartpole_ppo --keys 'env.manager.*' --set env.manager.type=subprocess
"""
from __future__ import annotations

import argparse
import atexit
import functools
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from ding_lite.config import compile_config, read_config  # noqa: E402
from ding_lite.config.ranges import bound_for  # noqa: E402
from ding_lite.errors import DIVERGED_ADVICE, DingLiteError  # noqa: E402
from dizoo.modes import config_mode  # noqa: E402

# name -> what --set is given (the CLI parses it as a Python literal, or inf / nan, or a bare word)
VALUES: dict[str, str] = {
    "none": "None", "neg": "-1", "zero": "0", "huge": "1000000000000", "nan": "nan", "inf": "inf", "-inf": "-inf",
    "true": "True", "word": "x", "list_none": "[None]", "empty_list": "[]", "empty_dict": "{}",
}
# keys whose huge value would run for ever or build too much: budgets, counts, sizes, shapes
BUDGET_NAMES = ("max_*", "*_step", "*_steps", "*_iter", "*episode*", "*_num", "*size*", "*_shape", "*_freq",
                "*capacity*", "*_len", "*_per_*", "*_channels", "n_*", "*variations*", "*_plies", "*_games",
                "replay_ratio")
MODES = ("serial", "selfplay", "gsl")
# top-level sections each mode never reads (their values are checked when compiled, then unused): not fuzzed; nor
# the logging backends' sections, read only where log.backends names them
UNREAD: dict[str, tuple[str, ...]] = {
    "serial": ("league.*", "gsl.*", "demo.*", "parallel.*", "log.wandb.*", "log.mlflow.*"),
    "selfplay": ("gsl.*", "demo.*", "parallel.*", "log.wandb.*", "log.mlflow.*"),
    "gsl": ("league.*", "parallel.*", "log.wandb.*", "log.mlflow.*"),
}
TRAINING_BUDGET = 128  # env steps of a serial or self-play case
_SHORT = ["env.collector_env_num=2", "env.evaluator_env_num=2", "env.n_evaluator_episode=2",
          "policy.eval.final_episodes=0", "policy.learn.batch_size=32"]
# a case's own settings: short evaluations, short collects (the fuzzed key's --set comes after them and wins)
TINY: dict[str, list[str]] = {
    "serial": _SHORT,
    "selfplay": _SHORT,
    "gsl": ["env.collector_env_num=2", "env.evaluator_env_num=2", "env.n_evaluator_episode=4", "env.variations=4",
            "policy.collect.n_sample=128", "policy.learn.batch_size=64", "policy.learn.epoch_per_collect=1",
            "gsl.phase1_max_env_step=256", "gsl.n_low=2", "gsl.n_specialists=1", "gsl.specialist_max_env_step=256",
            "gsl.demo_episodes_per_variation=1", "gsl.phase2_max_env_step=256", "gsl.use_ray=False",
            "env.max_episode_steps=50", "policy.eval.final_episodes=0"],
}
# per config: what keeps its tiny run tiny (PPO collects of thousands of steps)
CONFIG_TINY: dict[str, list[str]] = {
    "snake_arena_ppo_config.py": ["policy.collect.n_sample=64"],
    "rps_ppo_config.py": ["policy.collect.n_sample=60"],
    "cartpole_ppo_config.py": ["policy.collect.n_sample=64"],
    "pendulum_ppo_config.py": ["policy.collect.n_sample=64"],
    "cartpole_ppo_dapg_config.py": ["policy.collect.n_sample=64"],
    # off-policy: a first gradient step inside the 128 env steps (their 1,000 random steps would refuse the budget)
    "pendulum_sac_config.py": ["policy.learning_starts=32"],
    "pendulum_td3_config.py": ["policy.learning_starts=32"],
}
# configs that learn from a demo file (policy.learn.demo_path, made by a trained expert): each case is given a
# synthetic one that fits the config's model (random steps; see demo_file)
NEEDS_DEMO = ("cartpole_ppo_dapg_config.py",)


@dataclass(frozen=True)
class Target:
    """One config file and the mode it is run with."""

    path: Path
    mode: str
    extra: tuple[str, ...] = ()  # --set of every case (e.g. env.manager.type=subprocess)

    def tiny(self) -> list[str]:
        demo = [f"policy.learn.demo_path={str(demo_file(self))!r}"] if self.path.name in NEEDS_DEMO else []
        return TINY[self.mode] + CONFIG_TINY.get(self.path.name, []) + demo + list(self.extra)


@functools.cache
def demo_file(target: Target) -> Path:
    """A demo file of random steps fitting ``target``'s model (its observation and action spaces), in a folder of
    this process's that is removed when it ends: what a config's tiny run reads in place of an expert's demos."""
    import numpy as np

    from ding_lite.data.demo import episodes_to_dataset, model_spaces
    from ding_lite.data.demo_file import write_demo

    main, create = read_config(target.path)
    cfg = compile_config(main, create, overrides=TINY[target.mode] + CONFIG_TINY.get(target.path.name, []))
    obs_space, act_space = model_spaces(cfg["policy"]["model"])
    obs_space.seed(0)
    act_space.seed(0)
    n = 64
    episode = {"obs": np.stack([obs_space.sample() for _ in range(n)]).clip(-1, 1),
               "action": np.stack([act_space.sample() for _ in range(n)]), "reward": np.ones(n, dtype=np.float32)}
    folder = Path(tempfile.mkdtemp(prefix="config_fuzz_demo_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return write_demo(folder / f"{target.path.stem}_demo.npz", episodes_to_dataset([episode], [float(n)], {}))


@dataclass
class Case:
    """One ``--set KEY=VALUE`` on one config, and what came of it."""

    target: Target
    key: str
    value_name: str
    default: Any
    component: str = ""
    outcome: str = ""
    detail: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def override(self) -> str:
        return f"{self.key}={VALUES[self.value_name]}"

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What makes two configs' cases alike: the mode, the component reading the key, the key, the value."""
        return self.target.mode, self.component, self.key, self.value_name


def find_targets(patterns: Sequence[str], extra: Sequence[str]) -> list[Target]:
    """The dizoo configs whose file name contains one of ``patterns`` (all of them for none)."""
    paths = sorted(REPO_ROOT.glob("dizoo/*/*/config/*_config.py"))
    chosen = [p for pat in patterns for p in paths if pat in p.name] if patterns else paths  # in the order asked
    chosen = list(dict.fromkeys(chosen))
    return [Target(p, config_mode(p), tuple(extra)) for p in chosen]


def leaves(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` of every leaf; a list and an empty section are leaves."""
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from leaves(value, path + ".")
        else:
            yield path, value


def is_budget(key: str, default: Any) -> bool:
    """Whether a huge value of ``key`` could hang a case: an int setting, a count or size by its rule or name."""
    name = key.rsplit(".", 1)[-1]
    bound = bound_for(key)
    return (isinstance(default, int) and not isinstance(default, bool)) or (bound is not None and bound.whole) \
        or any(fnmatchcase(name, pattern) for pattern in BUDGET_NAMES)


def same_as_default(value_name: str, default: Any) -> bool:
    """Whether the bad value is the key's default (nothing to test)."""
    from ding_lite.config.reader import parse_override

    value = parse_override(f"k={VALUES[value_name]}")[1]
    if isinstance(value, float) and math.isnan(value):
        return False
    return type(value) is type(default) and value == default


def make_cases(target: Target, keys: Sequence[str], value_names: Sequence[str]) -> list[Case]:
    """Every case of one config: its compiled keys (those matching ``keys``, none its mode never reads) times
    ``value_names``."""
    main, create = read_config(target.path)
    cfg = compile_config(main, create, overrides=target.tiny())
    cases = []
    for key, default in leaves(cfg):
        if keys and not any(fnmatchcase(key, pattern) for pattern in keys):
            continue
        if any(fnmatchcase(key, pattern) for pattern in UNREAD[target.mode]):
            continue
        for name in value_names:
            if (name == "huge" and is_budget(key, default)) or same_as_default(name, default):
                continue
            cases.append(Case(target, key, name, default, component=component_of(cfg, key)))
    return cases


POLICY_PARTS = (("collect", "collector"), ("eval", "evaluator"), ("other", "replay_buffer"), ("learn", "learner"))


def component_of(cfg: Mapping[str, Any], key: str) -> str:
    """The component that reads ``key`` (its section's type; a game's kwargs: the game): a key of the same component
    in the same mode behaves alike in every config, so one run of each (key, value) is enough (``--no-dedupe``: all).
    """
    env, policy = cfg["env"], cfg["policy"]
    # a policy's parts (collector, evaluator, replay buffer, learner) are components of their own, alike under
    # every policy
    parts = [(f"policy.{section}.{part}.", policy.get(section, {}).get(part, {}).get("type", part))
             for section, part in POLICY_PARTS]
    for prefix, name in (("env.kwargs", env.get("import_path") or env.get("env_id")),
                         ("env.manager.", env["manager"]["type"]), ("env.", env["type"]), *parts,
                         ("policy.model.", policy["model"]["type"]), ("policy.", policy["type"])):
        if key.startswith(prefix):
            return f"{prefix}{name}"
    return ""


def prescreen(case: Case) -> bool:
    """Compile the case's config in this process; True (and the case classified) where that refuses it."""
    main, create = read_config(case.target.path)
    try:
        compile_config(main, create, overrides=case.target.tiny() + [case.override])
    except DingLiteError as exc:
        case.outcome, case.detail = "refused", f"ding_lite: error: {' '.join(str(exc).split())}"
        case.notes.append("compile")
        return True
    except Exception:
        return False  # a traceback of compile_config: the command shows it
    return False


def command(case: Case) -> list[str]:
    target = case.target
    argv = [sys.executable, "-m", "ding_lite", "-m", target.mode, "-c", str(target.path), "--no-progress"]
    if case.key != "exp_name":
        argv += ["--exp-name", "exp"]
    if target.mode != "gsl":
        argv += ["--max-env-step", str(TRAINING_BUDGET)]
    return argv + ["--set", *target.tiny(), case.override]


def run_case(case: Case, timeout: float) -> Case:
    """Run the case as a command in a fresh folder and classify it (see the module docstring)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="config_fuzz_") as cwd:
        try:
            proc = subprocess.run(command(case), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            case.outcome, case.detail = "DEFECT", f"hang: no end after {timeout:.0f} s"
            case.seconds = time.monotonic() - start
            return case
        written = sorted(p.name for p in Path(cwd).iterdir())
    case.seconds = time.monotonic() - start
    classify(case, proc.returncode, proc.stderr, written)
    return case


def suspicious(case: Case) -> bool:
    """Whether a value that a run took is worth a look: NaN anywhere; inf for a number whose rule has no infinity; a
    word, a bool or a list where the default is a number."""
    number = isinstance(case.default, (int, float)) and not isinstance(case.default, bool)
    bound = bound_for(case.key)
    if case.value_name == "nan":
        return True
    if case.value_name in ("inf", "-inf"):
        return (number or bound is not None) and not (bound is not None and bound.allow_inf)
    return case.value_name in ("word", "true", "list_none", "empty_list") and number


def classify(case: Case, code: int, stderr: str, written: list[str]) -> None:
    errors = [line for line in stderr.splitlines() if line.startswith("ding_lite: error:")]
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if "Traceback (most recent call last)" in stderr:
        case.outcome, case.detail = "DEFECT", f"traceback (exit {code}): {last}"
    elif code == 0:
        case.outcome, case.detail = ("accepted?" if suspicious(case) else "accepted"), ""
    elif code != 2 or len(errors) != 1:
        case.outcome, case.detail = "DEFECT", f"exit {code}, {len(errors)} error lines: {last}"
    elif written and errors[0].endswith(DIVERGED_ADVICE):  # a DivergedError: the learner's or collector's check
        case.outcome, case.detail = "diverged", errors[0]
    elif written:
        case.outcome, case.detail = "DEFECT", f"wrote {', '.join(written)} before: {errors[0]}"
    else:
        case.outcome, case.detail = "refused", errors[0]


def baseline_ok(target: Target, timeout: float) -> str:
    """'' if the config's tiny run (no fuzzed key) ends with exit 0, else why not."""
    probe = run_case(Case(target, "policy.eval.final_episodes", "zero", None), timeout)
    return "" if probe.outcome.startswith("accepted") else f"{probe.outcome}: {probe.detail}"


def report(cases: Sequence[Case], out: Path | None) -> str:
    """A markdown summary: counts per config and outcome, then every defect and suspicious acceptance."""
    lines = ["| config | mode | keys | cases | refused | accepted | accepted? | diverged | DEFECT |", "|---" * 9 + "|"]
    by_config: dict[Path, list[Case]] = {}
    for case in cases:
        by_config.setdefault(case.target.path, []).append(case)
    for path, group in by_config.items():
        counts = Counter(c.outcome for c in group)
        keys = len({c.key for c in group})
        lines.append(f"| {path.stem} | {group[0].target.mode} | {keys} | {len(group)} | {counts['refused']} | "
                     f"{counts['accepted']} | {counts['accepted?']} | {counts['diverged']} | {counts['DEFECT']} |")
    for outcome in ("DEFECT", "accepted?", "diverged"):
        flagged = [c for c in cases if c.outcome == outcome]
        if flagged:
            lines += ["", f"## {outcome} ({len(flagged)})", "", "| config | --set | detail |", "|---|---|---|"]
            lines += [f"| {c.target.path.stem} | `{c.override}` | {c.detail.replace('|', '/')} |" for c in flagged]
    text = "\n".join(lines) + "\n"
    if out is not None:
        out.write_text(text)
    return text


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="*", default=[], help="parts of config file names (default: every config)")
    parser.add_argument("--keys", nargs="*", default=[], help="dotted-key globs to fuzz (default: every leaf)")
    parser.add_argument("--values", nargs="*", default=list(VALUES), choices=list(VALUES), help="bad values to try")
    parser.add_argument("--set", dest="extra", nargs="*", default=[], help="KEY=VALUE given to every case")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    parser.add_argument("--no-prescreen", action="store_true", help="run the cases that do not compile as commands")
    parser.add_argument("--no-dedupe", action="store_true", help="run a key and value of the same component again "
                        "on every config (default: once per mode)")
    parser.add_argument("--dry-run", action="store_true", help="count the cases, run none")
    parser.add_argument("--out", type=Path, default=None, help="write the summary (markdown) here too")
    parser.add_argument("--cases", type=Path, default=None, help="write every case here, one JSON object a line "
                        "(config, key, value, outcome, detail): the accepted values the summary does not list")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.disable(logging.WARNING)  # compiling in this process: no unknown-key warnings of the cases
    cases: list[Case] = []
    seen: set[tuple[str, str, str, str]] = set()
    for target in find_targets(args.config, args.extra):
        found = [c for c in make_cases(target, args.keys, args.values) if args.no_dedupe or c.identity not in seen]
        seen.update(c.identity for c in found)
        print(f"{target.path.name} (-m {target.mode}): {len(found)} cases", flush=True)
        to_run = [c for c in found if args.no_prescreen or not prescreen(c)]
        print(f"  {len(found) - len(to_run)} refused when compiled; {len(to_run)} to run", flush=True)
        if args.dry_run or not to_run:
            cases += found
            continue
        problem = baseline_ok(target, args.timeout)
        if problem:
            print(f"  skipped: its tiny run fails without a fuzzed key ({problem})", flush=True)
            continue
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for done, case in enumerate(pool.map(lambda c: run_case(c, args.timeout), to_run), 1):
                if case.outcome not in ("accepted", "refused"):
                    print(f"  {case.outcome}: --set {case.override}: {case.detail}", flush=True)
                if done % 25 == 0:
                    print(f"  {done}/{len(to_run)} run", flush=True)
        cases += found
    print(report(cases, args.out))
    if args.cases is not None:
        args.cases.write_text("".join(json.dumps(dict(config=c.target.path.stem, mode=c.target.mode, key=c.key,
                                                      value=VALUES[c.value_name], outcome=c.outcome, detail=c.detail))
                                      + "\n" for c in cases))
    return 1 if any(c.outcome == "DEFECT" for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
