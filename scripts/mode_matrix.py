"""Every dizoo config through the chain of modes a user runs after training it, on a tiny budget.

Run from the repository root (each config in a fresh folder under ``--work``; a step's stdout and stderr are kept
there as ``<step>.out`` / ``<step>.err``)::

    nice -n 10 python scripts/mode_matrix.py --work /tmp/matrix --jobs 2
    python scripts/mode_matrix.py --only cartpole_dqn pendulum_sac --steps train resume eval

For each ``dizoo/*/*/config/*_config.py`` it runs, as separate ``python -m ding_lite`` commands:

1. ``train``: the config's own mode (``-m gsl`` for a config with a ``gsl`` section, ``-m selfplay`` for one with a
   ``league``, else ``-m serial``) with ``--max-env-step 256`` (GSL: tiny phase budgets by ``--set``);
2. ``resume``: the same command with ``--resume`` and a larger budget (the first run's env steps + 256); its
   ``result.json`` must say that it continued the first run (a second segment resumed from the first run's last
   counters; GSL: every phase of the first run kept);
3. ``eval``: ``-m eval -c <exp>/total_config.py --load-ckpt <exp>/ckpt/ckpt_best.pth.tar`` on as many episodes as
   the run's final evaluation (the saved config must run as is); its mean return is compared with that evaluation's;
4. ``collect_demo``: ``-m collect_demo`` of the same checkpoint, ``--n-episode 2``, every episode kept;
5. ``parallel``: ``-m parallel`` (Ray, a local instance, one collector) on a tiny budget, for the serial configs;
   at most one at a time;
6. ``plot``: ``-m plot`` over the experiment folder.

Each cell of the printed table is ``ok``, ``refused: <the one line>`` (a non-zero exit with a single
``ding_lite...: error:`` line), ``skip: <why>`` or ``DEFECT: <what>``: a traceback, a timeout (a hang), a non-zero
exit without that line, a resume that started over, or an eval return far from the run's own final evaluation.
The exit code is 1 when any cell is a defect. ``--json FILE`` also writes the cells.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from dizoo.modes import config_mode  # noqa: E402

STEPS = ("train", "resume", "eval", "collect_demo", "parallel", "plot")
BUDGET = 256  # env steps of the first run; the resume runs to twice this
EXP = "exp"  # the experiment folder, in the config's own work folder

# Real workloads shortened as tests/test_dizoo_configs.py shortens them: short episodes, small collects, learning
# that starts within the budget.
_SHORT = ["env.max_episode_steps=30", "env.evaluator_env_num=2", "env.n_evaluator_episode=2"]
_OFF_POLICY_MUJOCO = _SHORT + ["policy.learning_starts=128", "policy.learn.batch_size=32"]
SMOKE: dict[str, list[str]] = {
    "pong_dqn": _SHORT + ["policy.learn.update_per_collect=1", "policy.other.replay_buffer.replay_buffer_size=1000",
                          "policy.learning_starts=128"],
    "pong_ppo": _SHORT + ["policy.collect.n_sample=128", "policy.learn.batch_size=64"],
    "breakout_ppo": _SHORT + ["policy.collect.n_sample=128", "policy.learn.batch_size=64"],
    "walker2d_ppo": _SHORT + ["policy.collect.n_sample=128"],
    "hopper_ppo": _SHORT + ["policy.collect.n_sample=128"],
    "halfcheetah_ppo": _SHORT + ["policy.collect.n_sample=128"],
    "doorkey_ppo": _SHORT + ["policy.collect.n_sample=128"],
    **{f"{env}_{algo}": _OFF_POLICY_MUJOCO for env in ("hopper", "halfcheetah") for algo in ("sac", "td3")},
    **{f"pendulum_{algo}": ["policy.learning_starts=128"] for algo in ("sac", "td3")},
    "mountain_car_dqn": ["policy.learning_starts=128"],
    "acrobot_dqn": ["policy.learning_starts=128"],
}
SELFPLAY_SMOKE = ["env.evaluator_env_num=2", "env.n_evaluator_episode=2"]
GSL_SMOKE = ["policy.collect.n_sample=128", "gsl.phase1_max_env_step=256", "gsl.specialist_max_env_step=128",
             "gsl.n_low=2", "gsl.n_specialists=2", "gsl.demo_episodes_per_variation=1", "gsl.use_ray=False"]
# every demo episode kept: the step checks that a checkpoint rolls out and writes a file, not that it succeeds
DEMO_SETTINGS = ["demo.return_threshold=-1e9", "demo.success_key=''"]
PARALLEL_SETTINGS = ["parallel.n_collectors=1", "parallel.num_cpus=2"]
ERROR_LINE = re.compile(r"^ding_lite[\w -]*: error: ")
EVAL_LINE = re.compile(r"return (-?[\d.e+-]+|nan) ± ([\d.e+-]+|nan) over (\d+) episodes")


@dataclass
class Case:
    """One config: its mode, its smoke settings and its work folder."""

    config: Path
    mode: str
    settings: list[str]
    cwd: Path
    cells: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.config.stem.removesuffix("_config")


@dataclass
class Outcome:
    """A finished (or timed-out) command."""

    code: int | None  # None: timed out
    stdout: str
    stderr: str


def make_case(config: Path, work: Path) -> Case:
    """The case of ``config``: its mode (:func:`dizoo.modes.config_mode`) and smoke settings."""
    name = config.stem.removesuffix("_config")
    mode = config_mode(config)
    settings = {"gsl": GSL_SMOKE, "selfplay": SELFPLAY_SMOKE + SMOKE.get(name, [])}.get(mode, SMOKE.get(name, []))
    return Case(config, mode, list(settings), work / name)


def run(case: Case, step: str, args: Sequence[str], timeout: float) -> Outcome:
    """``python -m ding_lite ARGS`` in the case's folder, its output kept as ``<step>.out`` / ``<step>.err``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    cmd = [sys.executable, "-m", "ding_lite", *args]
    (case.cwd / f"{step}.cmd").write_text(" ".join(cmd) + "\n")
    try:
        proc = subprocess.run(cmd, cwd=case.cwd, env=env, capture_output=True, text=True, timeout=timeout)
        outcome = Outcome(proc.returncode, proc.stdout, proc.stderr)
    except subprocess.TimeoutExpired as exc:
        outcome = Outcome(None, _text(exc.stdout), _text(exc.stderr))
    (case.cwd / f"{step}.out").write_text(outcome.stdout)
    (case.cwd / f"{step}.err").write_text(outcome.stderr)
    return outcome


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def verdict(outcome: Outcome, timeout: float) -> str | None:
    """The cell of a command that did not succeed (None where it did): a one-line refusal or a defect."""
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    if outcome.code is None:
        return f"DEFECT: no answer in {timeout:.0f} s (hang?)"
    if "Traceback (most recent call last)" in outcome.stderr:
        last = next((line for line in reversed(lines) if not line.startswith(" ")), "?")
        return f"DEFECT: traceback: {last[:160]}"
    if outcome.code == 0:
        return None
    errors = [line for line in lines if ERROR_LINE.match(line)]
    if len(errors) == 1:
        return f"refused: {errors[0][:200]}"
    return f"DEFECT: exit {outcome.code} without one error line: {(lines[-1] if lines else '(no output)')[:160]}"


def read_result(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def train_args(case: Case, budget: int, resume: bool) -> list[str]:
    args = ["-m", case.mode, "-c", str(case.config), "--exp-name", EXP, "--no-progress", "--strict"]
    settings = list(case.settings)
    if case.mode == "gsl":
        settings.append(f"gsl.phase2_max_env_step={budget}")
    else:
        args += ["--max-env-step", str(budget)]
    return args + (["--resume"] if resume else []) + set_args(settings)


def set_args(settings: Sequence[str]) -> list[str]:
    """``--set k=v ...``, or nothing for no settings (a bare ``--set`` is a usage error)."""
    return ["--set", *settings] if settings else []


def step_train(case: Case, timeout: float) -> str:
    case.cwd.mkdir(parents=True, exist_ok=True)
    if case.name == "cartpole_ppo_dapg":
        problem = make_dapg_demos(case, timeout)
        if problem:
            return problem
    outcome = run(case, "train", train_args(case, BUDGET, resume=False), timeout)
    bad = verdict(outcome, timeout)
    if bad:
        return bad
    result = read_result(case.cwd / EXP / "result.json")
    return "ok" if result else "DEFECT: exit 0 but no result.json"


def make_dapg_demos(case: Case, timeout: float) -> str | None:
    """The demo file the DAPG config names, from a briefly trained PPO (docs/ppo_dapg.md's recipe, threshold 0)."""
    ppo = str(REPO_ROOT / "dizoo/classic_control/cartpole/config/cartpole_ppo_config.py")
    outcome = run(case, "expert", ["-m", "serial", "-c", ppo, "--max-env-step", "256", "--exp-name", "expert",
                                   "--no-progress"], timeout)
    if outcome.code == 0:
        outcome = run(case, "expert_demo", ["-m", "collect_demo", "-c", ppo, "--load-ckpt",
                                            "expert/ckpt/ckpt_best.pth.tar", "--n-episode", "4", "--demo-path",
                                            "cartpole_ppo_expert/demo.npz", "--set", *DEMO_SETTINGS], timeout)
    return None if outcome.code == 0 else f"skip: the expert's demos failed ({verdict(outcome, timeout)})"


def step_resume(case: Case, timeout: float) -> str:
    before = read_result(case.cwd / EXP / "result.json")
    # a larger budget than the first run spent (an on-policy collect may overshoot BUDGET): one more collect at least
    budget = 2 * BUDGET if case.mode == "gsl" else int(before.get("env_step") or 0) + BUDGET
    outcome = run(case, "resume", train_args(case, budget, resume=True), timeout)
    bad = verdict(outcome, timeout)
    if bad:
        return bad
    after = read_result(case.cwd / EXP / "result.json")
    return check_gsl_resume(before, after) if case.mode == "gsl" else check_resume(before, after)


def check_resume(before: dict[str, Any], after: dict[str, Any]) -> str:
    """A resume continues the first run: a second segment, from the first run's last counters, further on."""
    resumed = after.get("resumed_from") or []
    if after.get("segments") != 2 or len(resumed) != 1:
        return f"DEFECT: started over (segments={after.get('segments')}, resumed_from={resumed})"
    start = resumed[0]
    if (start.get("train_iter"), start.get("env_step")) != (before.get("train_iter"), before.get("env_step")):
        return (f"DEFECT: resumed from train_iter={start.get('train_iter')} env_step={start.get('env_step')}, "
                f"the first run ended at train_iter={before.get('train_iter')} env_step={before.get('env_step')}")
    if after.get("env_step", 0) <= before.get("env_step", 0) and not before.get("stop"):
        return f"DEFECT: no further env steps ({before.get('env_step')} -> {after.get('env_step')})"
    return f"ok ({before.get('env_step')} -> {after.get('env_step')} env steps)"


def check_gsl_resume(before: dict[str, Any], after: dict[str, Any]) -> str:
    """A GSL resume keeps the phases done; none of them is redone (their env steps unchanged)."""
    steps_before, steps_after = before.get("env_steps") or {}, after.get("env_steps") or {}
    if after.get("phases_done") != before.get("phases_done"):
        return f"DEFECT: phases {before.get('phases_done')} -> {after.get('phases_done')}"
    if steps_after.get("phase1") != steps_before.get("phase1"):
        return f"DEFECT: phase I redone ({steps_before.get('phase1')} -> {steps_after.get('phase1')} env steps)"
    return f"ok (total {steps_before.get('total')} -> {steps_after.get('total')} env steps)"


def final_folder(case: Case) -> Path:
    """The folder of the run's final policy: GSL's phase II generalist, else the experiment folder."""
    return case.cwd / EXP / "phase2_generalist" if case.mode == "gsl" else case.cwd / EXP


def step_eval(case: Case, timeout: float) -> str:
    folder = final_folder(case)
    result = read_result(folder / "result.json")
    n_episode = int(result.get("final_eval_episodes") or 5)
    outcome = run(case, "eval", ["-m", "eval", "-c", str(folder / "total_config.py"), "--load-ckpt",
                                 str(folder / "ckpt" / "ckpt_best.pth.tar"), "--n-episode", str(n_episode)], timeout)
    bad = verdict(outcome, timeout)
    if bad:
        return bad
    match = EVAL_LINE.search(outcome.stdout + outcome.stderr)
    if not match:
        return "ok (no '[eval] ... return' line to compare)"
    return compare_eval(float(match.group(1)), float(match.group(2)), int(match.group(3)), result)


def compare_eval(mean: float, std: float, n: int, result: dict[str, Any]) -> str:
    """``ok`` where the eval's mean is within 4 standard errors (or 10 %) of the run's final evaluation."""
    final, final_std = result.get("final_eval_return"), result.get("final_eval_std")
    if final is None or final_std is None:
        return f"ok ({mean:.3g}; no final evaluation to compare)"
    spread = 4 * math.sqrt((std ** 2 + final_std ** 2) / max(n, 1)) + 0.1 * abs(final) + 1e-6
    text = f"{mean:.3g} vs final {final:.3g}"
    return f"ok ({text})" if abs(mean - final) <= spread else f"DEFECT: eval return {text} (±{final_std:.3g})"


def step_collect_demo(case: Case, timeout: float) -> str:
    folder = final_folder(case)
    outcome = run(case, "collect_demo", ["-m", "collect_demo", "-c", str(folder / "total_config.py"),
                                         "--load-ckpt", str(folder / "ckpt" / "ckpt_best.pth.tar"),
                                         "--n-episode", "2", "--set", *DEMO_SETTINGS], timeout)
    bad = verdict(outcome, timeout)
    if bad:
        return bad
    demos = sorted(folder.glob("demo*.npz"))
    return "ok" if demos else "DEFECT: exit 0 but no demo file"


RAY_LOCK = threading.Lock()  # one Ray instance at a time: each starts a dozen processes


def step_parallel(case: Case, timeout: float) -> str:
    if case.mode != "serial":
        return f"skip: -m {case.mode} config"
    args = ["-m", "parallel", "-c", str(case.config), "--exp-name", "par", "--no-progress", "--max-env-step",
            str(BUDGET), *set_args([*case.settings, *PARALLEL_SETTINGS])]
    with RAY_LOCK:
        outcome = run(case, "parallel", args, timeout)
    bad = verdict(outcome, timeout)
    if bad:
        return bad
    result = read_result(case.cwd / "par" / "result.json")
    return f"ok ({result.get('env_step')} env steps)" if result else "DEFECT: exit 0 but no result.json"


def step_plot(case: Case, timeout: float) -> str:
    outcome = run(case, "plot", ["-m", "plot", str(case.cwd / EXP), "-o", str(case.cwd / "plot.png")], timeout)
    bad = verdict(outcome, timeout)
    if bad:
        return bad
    return "ok" if (case.cwd / "plot.png").is_file() else "DEFECT: exit 0 but no plot.png"


STEP_FUNCTIONS = {"train": step_train, "resume": step_resume, "eval": step_eval, "collect_demo": step_collect_demo,
                  "parallel": step_parallel, "plot": step_plot}


def run_case(case: Case, steps: Sequence[str], timeout: float) -> Case:
    """The case's steps in order; a step after a failed train is skipped."""
    for step in steps:
        if step != "train" and "train" in case.cells and not case.cells["train"].startswith("ok"):
            case.cells[step] = "skip: train failed"
        else:
            case.cells[step] = STEP_FUNCTIONS[step](case, timeout)
        print(f"[{case.name}] {step}: {case.cells[step]}", flush=True)
    return case


def table(cases: Sequence[Case], steps: Sequence[str]) -> str:
    """The markdown table: a row per config, a column per step."""
    lines = ["| config | mode | " + " | ".join(steps) + " |", "| --- " * (len(steps) + 2) + "|"]
    for case in cases:
        cells = [case.cells.get(step, "").replace("|", "/") for step in steps]
        lines.append(f"| {case.name} | {case.mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a new temp folder)")
    parser.add_argument("--only", nargs="+", default=None, help="configs whose name contains one of these")
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=STEPS, help="steps to run, in order")
    parser.add_argument("--jobs", type=int, default=1, help="configs run at once")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per command before it counts as hung")
    parser.add_argument("--json", type=Path, default=None, help="also write the cells to this file")
    args = parser.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="mode_matrix_"))).resolve()
    configs = sorted((REPO_ROOT / "dizoo").glob("*/*/config/*_config.py"))
    cases = [make_case(c, work) for c in configs if not args.only or any(s in c.name for s in args.only)]
    print(f"{len(cases)} configs, work folder {work}", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(lambda case: run_case(case, args.steps, args.timeout), cases))
    print(table(cases, args.steps))
    if args.json:
        args.json.write_text(json.dumps({case.name: case.cells for case in cases}, indent=1))
    return 1 if any(cell.startswith("DEFECT") for case in cases for cell in case.cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
