"""``-m gsl`` end to end on a tiny maze family whose config leaves the model shapes to the env (as the tutorials
do): folders, phase order, per-variation tables, a plateau that ends phase I, Ray specialists, ``-m plot`` on the top
folder, a kill in phase II and ``--resume``, specialists that only see their subsets, and bad input (one line, exit
2, nothing written)."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_env, run_cli

from ding_lite.build import build, build_env_managers
from ding_lite.config import read_config
from ding_lite.config.compile import compile_config
from ding_lite.data.demo import episodes_to_dataset
from ding_lite.data.demo_file import write_demo
from ding_lite.gsl.demos import demo_checkpoint as _demo_ckpt
from ding_lite.gsl.phases import phase1_config, phase2_config, specialist_config
from ding_lite.gsl.plateau import PHASE1, PHASE2
from ding_lite.plot.runs import collect_groups
from ding_lite.utils.events import read_scalars
from dizoo.grid.maze.envs.maze_env import make_level

TINY = """
from easydict import EasyDict
main_config = EasyDict(dict(
    exp_name="gsl_exp",
    env=dict(type="maze", import_names=["dizoo.grid.maze.envs.maze_env"], num_levels=20, variations=6, size=4,
             min_distance=3, max_episode_steps=12, collector_env_num=4, evaluator_env_num=3, n_evaluator_episode=6,
             stop_value=10),
    policy=dict(type="ppo", model=dict(encoder_hidden_size_list=[32]),  # obs and action shapes: from the env
                learn=dict(epoch_per_collect=2, batch_size=128, learning_rate=3e-3, entropy_weight=0.01),
                collect=dict(n_sample=256, discount_factor=0.95), eval=dict(evaluator=dict(eval_freq=8))),
    gsl=dict(phase1_max_env_step=1500, n_low=4, n_specialists=2, specialist_max_env_step=1000,
             demo_episodes_per_variation=2, phase2_max_env_step=1000, use_ray=USE_RAY, ray_num_cpus=1),
))
"""


def _config(folder: Path, use_ray: bool = False) -> str:
    (folder / "gsl_tiny.py").write_text(textwrap.dedent(TINY).replace("USE_RAY", str(use_ray)))
    return "gsl_tiny.py"


def _check_run(exp: Path) -> dict:
    top = json.loads((exp / "result.json").read_text())
    assert top["phases_done"] == [PHASE1, "specialist_0", "specialist_1", "demos", PHASE2]
    for sub in (PHASE1, "specialist_0", "specialist_1", PHASE2):
        for name in ("total_config.py", "result.json", "log", "ckpt"):
            assert (exp / sub / name).exists(), (sub, name)
    assert (exp / "demos" / "summary.json").is_file()
    for phase in ("phase1_per_variation", "phase2_per_variation"):
        assert sorted(top[phase], key=int) == [str(v) for v in range(6)]
        assert all(row["episodes"] == 1 and row["success_rate"] in (0.0, 1.0) for row in top[phase].values())
    subsets = top["specialist_subsets"]
    assert sorted(v for s in subsets for v in s) == sorted(top["low_variations"]) and len(subsets) == 2
    for k, subset in enumerate(subsets):  # each specialist's own config names only its subset
        main, _ = read_config(exp / f"specialist_{k}" / "total_config.py")
        assert list(main["env"]["variations"]) == subset
    steps = top["env_steps"]
    assert steps["phase1"] == json.loads((exp / PHASE1 / "result.json").read_text())["env_step"]
    assert steps["total"] == steps["phase1"] + sum(steps["specialists"]) + steps["demos"] + steps["phase2"]
    assert all(s >= 1000 for s in steps["specialists"])
    # the phases ran in order: each later folder was written after the previous one finished
    done = [(exp / sub / "result.json").stat().st_mtime for sub in (PHASE1, "specialist_0", PHASE2)]
    assert done == sorted(done)
    return top


@pytest.mark.unittest
def test_gsl_end_to_end_with_a_plateau_and_ray_specialists(tmp_path: Path) -> None:
    """Phase I stops at a plateau (no gain above a tolerance of 100 for one evaluation: at its second one, far below
    its budget); two specialists on a one-CPU Ray instance (its one actor trains them in turn); ``-m plot`` on the top
    folder draws the generalist with phase II after phase I, the specialists and the demos."""
    pytest.importorskip("ray")
    proc = run_cli("-m", "gsl", "-c", _config(tmp_path, use_ray=True), "--no-progress", "--set",
                   "gsl.plateau_patience=1", "--set", "gsl.plateau_tol=100.0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    exp = tmp_path / "gsl_exp"
    saved, _ = read_config(exp / PHASE1 / "total_config.py")
    assert saved["policy"]["eval"]["evaluator"]["type"] == "plateau"
    assert saved["policy"]["eval"]["evaluator"]["plateau_patience"] == 1
    top = json.loads((exp / "result.json").read_text())
    assert top["phases"][PHASE1]["ended_by"] == "plateau"
    top = _check_run(exp)
    assert set(top["summary"]) == {"phase1", "phase2"}
    phase1 = json.loads((exp / PHASE1 / "result.json").read_text())
    assert phase1["stop"] and phase1["env_step"] == top["env_steps"]["phase1"] < 1500  # before the budget
    assert phase1["stop_reason"].startswith("plateau")
    assert "[done] plateau (no gain above plateau_tol=100" in proc.stderr  # the log says why, not 'stop value'
    _check_plot(tmp_path, top)


def _check_plot(tmp_path: Path, top: dict) -> None:
    """``-m plot``'s reading of the GSL folder (tests/entry/test_gsl_plot.py draws one): one run, phase II's
    evaluations after every env step spent before it."""
    (run,) = collect_groups([str(tmp_path / "gsl_exp")], [])[0].runs
    steps = run.scalars.series["eval/return_mean"].steps
    phase2 = read_scalars(tmp_path / "gsl_exp" / PHASE2 / "log").series["eval/return_mean"].steps
    before = top["env_steps"]["total"] - top["env_steps"]["phase2"]  # phase I + specialists + demos
    assert steps[-len(phase2):] == [before + s for s in phase2] and steps[len(steps) - len(phase2)] == before
    assert steps == sorted(steps) and max(steps) == top["env_steps"]["total"]
    assert run.result["env_step"] == top["env_steps"]["total"]


@pytest.mark.unittest
def test_gsl_killed_in_phase2_resumes_there(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    cmd = [sys.executable, "-m", "ding_lite", "-m", "gsl", "-c", cfg, "--no-progress",
           "--set", "gsl.phase2_max_env_step=10000000",
           "demo.success_key=''", "demo.return_threshold=-1"]  # every episode a demo: phase II reads demo files
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ckpts = tmp_path / "gsl_exp" / PHASE2 / "ckpt"
    try:
        while not any(ckpts.glob("resume_*.pth.tar")) and proc.poll() is None:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert any(ckpts.glob("resume_*.pth.tar")), proc.stderr.read().decode()[-3000:] if proc.stderr else ""
    # the killed run's folder is moved before the resume: its demo files are read where they are now (the state
    # records the paths they were written at, which no longer exist)
    exp = tmp_path / "moved" / "gsl_exp"
    exp.parent.mkdir()
    (tmp_path / "gsl_exp").rename(exp)
    before = {sub: (exp / sub / "result.json").stat().st_mtime for sub in (PHASE1, "specialist_0", "specialist_1")}
    assert not (exp / PHASE2 / "result.json").exists()
    resumed = run_cli("-m", "gsl", "-c", "moved/gsl_exp/total_config.py", "--no-progress", "--resume",
                      "--set", "gsl.phase2_max_env_step=1000", cwd=tmp_path)  # the killed run had it at 1e7
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert before == {sub: (exp / sub / "result.json").stat().st_mtime for sub in before}  # not redone
    assert "loaded" in resumed.stderr and "phase2_generalist/ckpt/resume_" in resumed.stderr
    # the finished phases are reported as kept, not as if they were done again
    assert "[gsl] phase I kept from the earlier run" in resumed.stderr
    assert "[gsl] demos kept from the earlier run" in resumed.stderr and "[gsl] demos done" not in resumed.stderr
    assert "[gsl] phase II done (" in resumed.stderr  # it was resumed and finished in this run
    assert json.loads((exp / "demos" / "summary.json").read_text())["n_episode_kept"] > 0
    assert not (tmp_path / "gsl_exp").exists() and not (tmp_path / "moved" / "gsl_exp_1").exists()
    _check_run(exp)
    # a resume checkpoint per evaluation, rotated: the final one, the best one and at most two resume ones remain
    for sub in (PHASE1, "specialist_0", PHASE2):
        names = sorted(p.name for p in (exp / sub / "ckpt").iterdir())
        assert sum(n.startswith("iteration_") for n in names) == 1 and len(names) <= 4, (sub, names)


@pytest.mark.unittest
def test_a_specialist_only_ever_sees_its_subset(tmp_path: Path) -> None:
    main, create = read_config(tmp_path / _config(tmp_path))
    cfg = compile_config(main, create)
    subset = [1, 4]
    scfg = specialist_config(cfg, subset)
    env, eval_env = build_env_managers(scfg, 0)
    try:
        collector = build(scfg, "policy.collect.collector", env, build(scfg, "policy").collect_mode)
        samples, episodes = collector.collect(600)
    finally:
        env.close()
        eval_env.close()
    assert len(episodes) > 10 and {e.info["variation"] for e in episodes} <= set(subset)
    walls = {v: make_level(v, 4, 0.3, 3)[0].reshape(-1).astype(np.float32) for v in range(20)}
    layout_of = [[v for v, w in walls.items() if np.array_equal(row[:16], w)] for row in samples["obs"]]
    assert all(found and set(found) <= set(subset) for found in layout_of)  # every trained-on step: its subset


@pytest.mark.unittest
def test_specialist_learn_overrides_only_the_specialists(tmp_path: Path) -> None:
    main, create = read_config(tmp_path / _config(tmp_path))
    main["gsl"]["specialist_learn"] = {"entropy_weight": 0.5}
    cfg = compile_config(main, create)
    assert specialist_config(cfg, [1, 4]).policy.learn.entropy_weight == 0.5
    assert phase1_config(cfg).policy.learn.entropy_weight == 0.01  # the generalist keeps the config's own


@pytest.mark.unittest
def test_phase_configs_name_the_plateau_evaluator_and_rotate_their_checkpoints(tmp_path: Path) -> None:
    main, create = read_config(tmp_path / _config(tmp_path))
    main["gsl"].update(plateau_patience=5, plateau_tol=0.5)
    cfg = compile_config(main, create)
    phase1 = phase1_config(cfg)
    assert phase1.policy.eval.evaluator.type == "plateau"
    assert (phase1.policy.eval.evaluator.plateau_patience, phase1.policy.eval.evaluator.plateau_tol) == (5, 0.5)
    assert phase1.policy.eval.evaluator.eval_freq == 8  # the config's own
    for phase in (phase1, specialist_config(cfg, [1, 4]), phase2_config(cfg, [])):
        hook = phase.policy.learn.learner.hook
        assert hook.save_ckpt_after_iter == cfg.policy.learn.learner.hook.save_ckpt_after_iter  # no file per eval
        assert hook.save_resume_ckpt.at_eval_after_seconds == 0.0 and hook.save_resume_ckpt.keep == 2


@pytest.mark.unittest
def test_demos_come_from_a_specialists_best_checkpoint_and_the_generalists_final_one(tmp_path: Path) -> None:
    for name in ("specialist_0", PHASE1, "specialist_1"):
        (tmp_path / name / "ckpt").mkdir(parents=True)
        for ckpt in ("iteration_8.pth.tar", "iteration_16.pth.tar", "ckpt_best.pth.tar"):
            (tmp_path / name / "ckpt" / ckpt).touch()
    (tmp_path / "specialist_1" / "ckpt" / "ckpt_best.pth.tar").unlink()
    assert _demo_ckpt(tmp_path / "specialist_0").name == "ckpt_best.pth.tar"
    assert _demo_ckpt(tmp_path / PHASE1).name == "iteration_16.pth.tar"  # phase II continues from this one
    assert _demo_ckpt(tmp_path / "specialist_1").name == "iteration_16.pth.tar"  # no best: the final one


def _assert_rejected(proc: subprocess.CompletedProcess, words: str, folder: Path, keep: set[str]) -> None:
    assert proc.returncode == 2, proc.stderr
    # -m serial of a GSL config warns first that it does not read the gsl settings; then the one error line
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("warning: gsl.")]
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert {p.name for p in folder.iterdir()} == keep  # nothing written


@pytest.mark.unittest
@pytest.mark.parametrize("override, words", [
    ("env.variations=[0,25]", "env.variations: id 25 is out of range"),
    ("gsl.n_specialists=5", "gsl.n_specialists=5 is more than the 4 low variations"),
    ("gsl.n_low=7", "gsl.n_low=7 must be between 1 and the 6 variations"),
    # found by the config fuzzer: before, a TypeError traceback ('int' object is not iterable), and a bad
    # specialist_learn value refused only when the specialists started, after phase I had written its folder
    ("gsl.extra_demo_path=-1", "gsl.extra_demo_path must be a demo file's path, a list of them or None, got -1"),
    ("gsl.specialist_learn.entropy_weight=None", "gsl.specialist_learn={'entropy_weight': None}: config key "
                                                 "'policy.learn.entropy_weight' must be a number, got None"),
    # before, 'policy.type is not set' / 'config key policy.learn.demo_freq ...': phase II's keys, not the gsl ones
    ("gsl.phase2_policy_type=''", "gsl.phase2_policy_type='': policy.type is not set"),
    ("gsl.phase2_learn.demo_freq=None", "gsl.phase2_learn={'demo_freq': None}: config key "
                                        "'policy.learn.demo_freq' must be an int, got None"),
])
def test_bad_gsl_input_is_one_line_exit_2_nothing_written(tmp_path: Path, override: str, words: str) -> None:
    cfg = _config(tmp_path)
    proc = run_cli("-m", "gsl", "-c", cfg, "--set", override, cwd=tmp_path)
    _assert_rejected(proc, words, tmp_path, {cfg})


@pytest.mark.unittest
def test_a_demo_file_of_another_env_is_rejected(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    steps = {"obs": np.zeros((3, 48), np.float32), "action": np.zeros(3, np.int64), "reward": np.ones(3, np.float32)}
    write_demo(tmp_path / "cartpole_demo.npz", episodes_to_dataset([steps], [3.0], {"env": {"type": "cartpole"}}))
    proc = run_cli("-m", "gsl", "-c", cfg, "--set", "gsl.extra_demo_path='cartpole_demo.npz'", cwd=tmp_path)
    _assert_rejected(proc, "demo file cartpole_demo.npz was collected in env", tmp_path, {cfg, "cartpole_demo.npz"})


@pytest.mark.unittest
def test_serial_run_with_an_out_of_range_variation_is_rejected(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    proc = run_cli("-m", "serial", "-c", cfg, "--set", "env.variations=[3,20]", cwd=tmp_path)
    _assert_rejected(proc, "id 20 is out of range for env type 'maze' (ids 0..19)", tmp_path, {cfg})



@pytest.mark.unittest
def test_a_gsl_config_trained_serially_says_its_gsl_settings_are_not_read(tmp_path: Path, monkeypatch, capsys) -> None:
    """-m serial of a GSL config trains the generalist alone; before, it did so without a word. Every compiled config
    (and so every run's total_config.py) holds a gsl section at its defaults: only settings off them warn."""
    from ding_lite.cli import main

    config = str(Path(__file__).resolve().parents[2] / "dizoo" / "classic_control" / "mountain_car_family" / "config"
                 / "mountain_car_family_gsl_config.py")
    monkeypatch.chdir(tmp_path)
    quick = ["--max-env-step", "64", "--no-progress", "--set", "policy.eval.final_episodes=0", "env.stop_value=None"]
    assert main(["-c", config, "--exp-name", "serial", *quick]) == 0
    err = capsys.readouterr().err
    assert re.search(r"warning: gsl\.\w+(, gsl\.\w+)* (is|are) set, but only -m gsl reads the gsl section: -m serial "
                     r"trains one policy on the env, without the specialists and the PPO-DAPG phase", err), err
    plain = config.replace("mountain_car_family_gsl_config", "mountain_car_family_ppo_config")
    assert main(["-c", plain, "--exp-name", "plain", *quick]) == 0
    assert main(["-c", "plain/total_config.py", "--exp-name", "again", *quick]) == 0
    assert "gsl section" not in capsys.readouterr().err


@pytest.mark.unittest
def test_bad_log_backends_are_refused_before_the_gsl_folder_is_written(tmp_path: Path) -> None:
    # Before: -m gsl wrote <exp>/total_config.py, then phase I refused log.backends: the refusal left the folder
    # behind (found by the CLI fuzzer: --set "log.backends=[[]]" on mountain_car_family_gsl_config.py)
    proc = run_cli("-m", "gsl", "-c", _config(tmp_path), "--exp-name", "exp", "--set", "log.backends=[[]]",
                   cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "ding_lite: error: log.backends must be a list of tracker names (e.g. ['tensorboard', 'wandb']), got [[]]"]
    assert not (tmp_path / "exp").exists()
