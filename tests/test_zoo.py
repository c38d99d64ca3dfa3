"""benchmarks/zoo.py, the benchmark suites: the report's numbers on hand-made curves (final return, time to the
reference, resumed repeats, IQM with bootstrap intervals, the docs block), the suites' evaluation schedules against
their configs, one tiny suite run end to end (a run, its curve, the report) and one stopped by SIGTERM."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks import zoo, zoo_report  # noqa: E402
from ding_lite.config import read_config  # noqa: E402

pytestmark = pytest.mark.unittest


def _write_curve(folder: Path, points: list[tuple[int, float, float]], done: bool = True) -> None:
    folder.mkdir(parents=True)
    (folder / zoo.CURVE).write_text("".join(
        json.dumps({"env_step": s, "return_mean": r, "return_std": 0.0, "episodes": 10, "eval_seconds": 1.0,
                    "train_seconds": t, "load": 1.0, "final": False}) + "\n" for s, r, t in points))
    if done:
        (folder / zoo.DONE).write_text("{}")


def test_final_return_time_to_reference_and_a_resumed_repeat(tmp_path: Path) -> None:
    plan = zoo.plan_runs(zoo.SUITES["mujoco-ppo"], ["Hopper-v4"], [0], ["ding_lite", "sb3"], None, tmp_path, None)
    ours, peer = plan.specs
    assert (ours.side, ours.route, peer.side, peer.route) == ("ding_lite", "envpool", "sb3", "gym")
    # train seconds count from the first evaluation; a resumed run repeats 20,480 (the later line wins)
    _write_curve(Path(ours.folder), [(0, 10.0, 5.0), (10240, 2500.0, 25.0), (20480, 100.0, 40.0),
                                     (20480, 2000.0, 45.0), (30720, 2600.0, 60.0)])
    _write_curve(Path(peer.folder), [(0, 10.0, 0.0), (10240, 1000.0, 30.0), (20480, 2400.0, 70.0),
                                     (30720, 2000.0, 110.0)])
    runs = [zoo_report.load_run(s) for s in plan.specs]
    assert [r["env_step"] for r in runs[0].curve] == [0, 10240, 20480, 30720]
    assert runs[0].final_return() == pytest.approx((2500 + 2000 + 2600) / 3)
    assert runs[0].time_to(2382.86) == (20.0, 10240) and runs[1].time_to(2382.86) == (70.0, 20480)
    rows = zoo_report.task_rows(plan, runs)
    assert zoo_report.speed_ratios(rows) == {"Hopper-v4": pytest.approx(20 / 70)}
    assert runs[1].time_to(5000) is None and rows[0]["reference"] == 2382.86


def test_an_unfinished_run_is_reported_apart_from_the_final_returns(tmp_path: Path) -> None:
    plan = zoo.plan_runs(zoo.SUITES["mujoco-ppo"], ["Hopper-v4"], [0, 1, 2], ["ding_lite"], None, tmp_path, None)
    done, running, slow = plan.specs
    _write_curve(Path(done.folder), [(0, 10.0, 0.0), (10240, 2000.0, 10.0), (20480, 2100.0, 20.0),
                                     (30720, 2200.0, 30.0)])
    _write_curve(Path(running.folder), [(0, 10.0, 0.0), (10240, 3000.0, 10.0), (20480, 3300.0, 20.0),
                                        (30720, 3600.0, 30.0)], done=False)
    _write_curve(Path(slow.folder), [(0, 10.0, 0.0), (10240, 500.0, 10.0), (20480, 600.0, 20.0)], done=False)
    # seed 0 was resumed: its pipeline timed the last part only, so the wall time is the curve's (30 s of training
    # and 4 evaluations of 1 s) and its CPU time is left out
    (Path(done.folder) / zoo.DONE).write_text(json.dumps({"wall_seconds": 7.0, "cpu_seconds": 5.0, "resumed": True}))
    row, = zoo_report.task_rows(plan, [zoo_report.load_run(s) for s in plan.specs])
    # the median and the verdict come from the finished run alone (2,100 < 2,382.86), however well seed 1 does
    assert row["finals"] == [pytest.approx(2100.0)] and row["partial"] == [(1, 30720, pytest.approx(3300.0)),
                                                                    (2, 20480, pytest.approx(370.0))]
    # seed 1 reached the reference at 10 s; seed 2 has not yet (unknown, left out); seed 0 never did (infinite)
    assert row["seconds_to_reference"] == [math.inf, 10.0]
    assert row["wall_seconds"] == [34.0] and row["cpu_seconds"] == []
    block = zoo_report.markdown(plan, [row], {}, {}, "out", [])
    assert "| 2,100 | - | 2,382.86 | no |" in block and "seed 1: 3,300 at 30,720 env steps" in block


def test_iqm_and_its_stratified_bootstrap_interval() -> None:
    # 4 runs x 2 tasks: the IQM is the mean of the middle half of all 8 scores, (3 + 4 + 5 + 6) / 4
    scores = {"a": np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 7.0], [4.0, 8.0]])}
    points, intervals = zoo_report.stratified_bootstrap(scores, reps=200)  # rliable's procedure where arch fails
    low, high = intervals["a"]
    points = points["a"]
    assert points[0] == pytest.approx(4.5) and points[2] == pytest.approx(4.5)
    assert low[0] <= 4.5 <= high[0] and high[0] - low[0] < 4


def test_the_docs_block_is_replaced_between_its_markers(tmp_path: Path) -> None:
    docs = tmp_path / "results.md"
    docs.write_text("# Results\nbefore\n<!-- zoo:s start -->\nold\n<!-- zoo:s end -->\nafter\n")
    zoo_report.write_docs_block(docs, "s", "new table\n")
    assert docs.read_text() == "# Results\nbefore\n<!-- zoo:s start -->\nnew table\n<!-- zoo:s end -->\nafter\n"


@pytest.mark.parametrize("task", [t for s in zoo.SUITES.values() for t in s.tasks], ids=lambda t: t.name)
def test_each_tasks_evaluation_schedule_fits_its_config(task: zoo.Task) -> None:
    """``eval_freq`` learner iterations are ``eval_every`` env steps with the config's collects (PPO: epochs x
    minibatches per collect; DQN: its updates per collect), and the config exists on every route the task names."""
    main, _ = read_config(REPO_ROOT / task.config)
    policy, env = main["policy"], main["env"]
    n_sample, learn = policy["collect"]["n_sample"], policy["learn"]
    per_collect = learn["update_per_collect"] if "update_per_collect" in learn else \
        learn["epoch_per_collect"] * math.ceil(n_sample / learn["batch_size"])
    assert task.eval_freq % per_collect == 0
    assert task.eval_freq // per_collect * n_sample == task.eval_every
    assert env.get("env_id", "CartPole-v1") == task.name and task.reference.value > task.random


def test_a_tiny_suite_runs_resumes_and_reports(tmp_path: Path) -> None:
    args = ["--suite", "classic-control", "--seeds", "0", "--env-steps", "2304", "--jobs", "1", "--work",
            str(tmp_path / "work"), "--out", str(tmp_path / "out"), "--docs", str(tmp_path / "results.md")]
    zoo.main(args)
    folder = tmp_path / "work" / "classic-control" / "CartPole-v1" / "ding_lite-gym" / "seed0"
    curve = [json.loads(x) for x in (folder / zoo.CURVE).read_text().splitlines()]
    assert [c["env_step"] for c in curve] == [0, 2048, 2304] and (folder / zoo.DONE).is_file()
    assert all(c["episodes"] == 10 and not c["final"] for c in curve)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["rows"][0]["finished"] == 1 and summary["rows"][0]["median_final"] is not None
    block = (tmp_path / "results.md").read_text()
    assert "<!-- zoo:classic-control start -->" in block and "| CartPole-v1 | ding_lite-gym | 1/1 |" in block
    mtime = (folder / zoo.CURVE).stat().st_mtime
    zoo.main(args)  # finished runs are not made again
    assert (folder / zoo.CURVE).stat().st_mtime == mtime
    page = (tmp_path / "results.md").read_text()
    zoo.main([*args[:-1], "", "--report-only"])  # --docs '': the report rewrites no page
    assert (tmp_path / "results.md").read_text() == page


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux's /proc)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads child processes from /proc")
def test_a_terminated_suite_stops_its_runs_and_starts_no_more(tmp_path: Path) -> None:
    """SIGTERM to the suite (a scheduler's limit, ``kill``) ends the run processes too: none goes on writing into a
    folder that the next command resumes, and the queued seed does not start."""
    import signal
    import subprocess
    import time

    from conftest import cli_env
    work = tmp_path / "work"
    proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "benchmarks" / "zoo.py"), "--suite", "classic-control",
                             "--seeds", "0", "1", "--env-steps", "10000000", "--jobs", "1", "--work", str(work),
                             "--out", str(tmp_path / "out"), "--docs", ""], env=cli_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    curve = work / "classic-control" / "CartPole-v1" / "ding_lite-gym" / "seed0" / zoo.CURVE
    try:
        deadline = time.monotonic() + 120
        while not curve.is_file():  # the run is under way
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the run did not start within 120 s"
            time.sleep(0.1)
        runs = _children(proc.pid)
        assert len(runs) == 1
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "stopped: 1 run(s) terminated" in out and "start CartPole-v1/ding_lite-gym/seed1" not in out
    assert not Path(f"/proc/{runs[0]}").exists() or Path(f"/proc/{runs[0]}/stat").read_text().split()[2] == "Z"
    assert not (curve.parent / zoo.DONE).exists()


def test_sb3_dqn_gets_rl_zoos_acrobot_settings_back() -> None:
    """The Acrobot DQN config, written from rl-zoo's tuned Acrobot-v1 DQN settings in ding_lite's units (target copies
    in gradient steps, ε decay in env steps), translates back to exactly those SB3 settings."""
    from benchmarks.zoo_sb3 import sb3_dqn_kwargs
    from ding_lite.build import load_config

    cfg = load_config(str(REPO_ROOT / "dizoo/classic_control/acrobot/config/acrobot_dqn_config.py"), seed=0)
    kwargs = sb3_dqn_kwargs(cfg, 100_000)
    assert kwargs.pop("policy_kwargs") == {"net_arch": [256, 256]}
    assert kwargs == dict(learning_rate=6.3e-4, buffer_size=50_000, learning_starts=0, batch_size=128, tau=1.0,
                          gamma=0.99, train_freq=4, gradient_steps=4, target_update_interval=250,
                          exploration_fraction=0.12, exploration_initial_eps=1.0, exploration_final_eps=0.1,
                          max_grad_norm=10.0)


@pytest.mark.parametrize("override", ["policy.model.dueling=True", "policy.learn.double=True",
                                      "policy.learn.loss_type='mse'", "policy.nstep=3", "policy.other.eps.type='exp'"])
def test_a_dqn_config_sb3_cannot_express_has_no_sb3_peer(override: str) -> None:
    from benchmarks.zoo_sb3 import sb3_dqn_kwargs
    from ding_lite.build import load_config

    cfg = load_config(str(REPO_ROOT / "dizoo/classic_control/acrobot/config/acrobot_dqn_config.py"), seed=0,
                      overrides=[override])
    with pytest.raises(ValueError, match=override.split("=")[0].removeprefix("policy.")):
        sb3_dqn_kwargs(cfg, 100_000)


def test_the_suites_are_data_apart_from_the_runner() -> None:
    """zoo.py was 458 lines: the suites (data) live in zoo_suites.py, each file under the project's ~400 lines, and the
    names zoo_sb3.py, zoo_report.py and users' scripts import from ``benchmarks.zoo`` are still there."""
    from benchmarks import zoo_sb3, zoo_suites

    for module in (zoo, zoo_suites, zoo_report, zoo_sb3):
        assert len(Path(module.__file__).read_text().splitlines()) <= 400, module.__name__
    assert zoo.SUITES is zoo_suites.SUITES and zoo.Task is zoo_suites.Task and zoo.Suite is zoo_suites.Suite
    assert zoo_sb3.RunSpec is zoo.RunSpec and zoo_report.Plan is zoo.Plan
