"""``ding_lite -m sweep`` (ding_lite/entry/sweep.py, sweep_space.py) on Ray Tune: a grid of 4 trials x 2 seeds on
CartPole in parallel on a local Ray instance (results sorted by the objective, each trial's objective against its
runs' result.json, the best trial's saved config rerun with -m serial to the same numbers, -m plot over the trials),
an Optuna search with pruning of 4 trials x 2 seeds through --address to a `ray start` head, killed and resumed,
and bad input (tests/entry/test_sweep_bad_input.py). Ray starts slowly: one head serves the --address tests."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, run_cli
from conftest import ray_head as start_ray_head

import ding_lite.entry.sweep  # noqa: F401 (registers the 'ray_tune' tracker)
from ding_lite.cli import main
from ding_lite.sweep.space import parse_dimension, parse_space, trial_label, tune_space
from ding_lite.utils.events import read_scalars

pytestmark = pytest.mark.unittest
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")
DAPG = str(DIZOO_CARTPOLE / "cartpole_ppo_dapg_config.py")
QUICK = ["--set", "policy.eval.final_episodes=0", "--set", "env.stop_value=None"]
GRID = ["--space", "policy.learn.learning_rate=[3e-4, 1e-3]", "--space", "policy.learn.batch_size=[64, 128]"]


def _trials(sweep: Path) -> list[dict]:
    return json.loads((sweep / "sweep.json").read_text())["trials"]


def _result(sweep: Path, run: str) -> dict:
    return json.loads((sweep / run / "result.json").read_text())


def _table_rows(stdout: str) -> list[list[str]]:
    lines = [line for line in stdout.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    pytest.importorskip("ray.tune")
    root = tmp_path_factory.mktemp("sweep")
    proc = run_cli("-m", "sweep", "-c", PPO, "-s", "0", "-s", "1", *GRID, "--max-env-step", "256", *QUICK,
                   "--num-cpus", "2", "--exp-name", "grid", cwd=root, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "grid", proc


def test_grid_sweep_on_local_ray(local_sweep) -> None:
    sweep, proc = local_sweep
    trials = _trials(sweep)
    assert len(trials) == 4 and all(t["status"] == "done" for t in trials)
    assert sorted((t["params"]["policy.learn.learning_rate"], t["params"]["policy.learn.batch_size"])
                  for t in trials) == [(3e-4, 64), (3e-4, 128), (1e-3, 64), (1e-3, 128)]
    for t in trials:  # each trial's objective is the mean over its seeds of the runs' own result.json
        returns = [_result(sweep, run)["eval_return"] for run in t["runs"]]
        assert len(returns) == 2 and t["per_seed"] == returns
        assert t["objective"] == pytest.approx(sum(returns) / 2)
        cfg = (sweep / t["runs"][0] / "total_config.py").read_text()
        assert f"'learning_rate': {t['params']['policy.learn.learning_rate']!r}" in cfg
    objectives = [t["objective"] for t in trials]
    assert objectives == sorted(objectives, reverse=True)  # best first
    rows = _table_rows(proc.stdout)
    assert [r[1] for r in rows] == [t["trial_id"] for t in trials] and rows[0][0] == "1"
    # in parallel: with 2 CPUs, two trials' spans overlap
    spans = sorted((t["started"], t["updated"]) for t in trials)
    assert any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))
    assert "[eval]" not in proc.stderr  # the runs' console lines went to each trial's console.log
    assert sum(line.startswith("[sweep] trial") for line in proc.stderr.splitlines()) == 4


def test_best_config_reproduces_with_serial(local_sweep, monkeypatch) -> None:
    sweep, _ = local_sweep
    best = _trials(sweep)[0]
    command = json.loads((sweep / "sweep.json").read_text())["command"]
    assert command == f"ding_lite -m serial -c {sweep / 'best_config.py'} -s 0 -s 1 --max-env-step 256"
    monkeypatch.chdir(sweep)
    assert main([*command.split()[1:], "--no-progress"]) == 0  # the command, in this process
    again = [_result(sweep, f"best_seed{s}")["eval_return"] for s in (0, 1)]
    assert again == best["per_seed"]


def test_plot_over_the_trials(local_sweep, tmp_path: Path, monkeypatch, capsys) -> None:
    sweep, _ = local_sweep
    assert main(["-m", "plot", str(sweep), "-o", str(tmp_path / "trials.png")]) == 0
    rows = _table_rows(capsys.readouterr().out)
    assert [r[0] for r in rows] == [t["label"] for t in _trials(sweep)] and all(r[1] == "2" for r in rows)


# ---- through --address, killed and resumed ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """A `ray start --head` with 2 CPUs (a fresh test token, not the user's), stopped after the module."""
    pytest.importorskip("ray.tune")
    with start_ray_head(tmp_path_factory.mktemp("head")) as head:
        yield head


def test_optuna_sweep_with_pruning_via_address_killed_and_resumed(ray_head, tmp_path: Path) -> None:
    address, env = ray_head
    argv = [sys.executable, "-m", "ding_lite", "-m", "sweep", "-c", PPO, "-s", "0", "-s", "1", "--search", "optuna",
            "--num-samples", "4", "--space", "policy.learn.learning_rate=loguniform(1e-6, 1e-2)",
            "--max-env-step", "768", "--prune-after", "256", "--set", "policy.eval.evaluator.eval_freq=40", *QUICK,
            "--address", address, "--exp-name", "opt"]
    sweep = tmp_path / "opt"
    first = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # until some trial's run has finished (a result.json is written atomically)
        deadline = time.monotonic() + 300
        while not list(sweep.glob("trials/*/run_seed*/result.json")) and time.monotonic() < deadline:
            assert first.poll() is None, "the sweep ended before any run finished"
            time.sleep(0.2)
    finally:
        first.kill()  # SIGKILL of the driver: Ray ends its trials; nothing is saved on the way out
        first.wait()
    finished = {p: p.stat().st_mtime_ns for p in sweep.glob("trials/*/run_seed*/result.json")}
    assert finished, "no run finished within 300 s"
    proc = subprocess.run([*argv, "--resume"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((sweep / "sweep.json").read_text())
    assert summary["ray_address"].endswith(address.rpartition(":")[2])
    trials = summary["trials"]
    assert len(trials) == 4 and {t["status"] for t in trials} <= {"done", "pruned"}
    assert any(t["status"] == "done" for t in trials)
    for t in trials:
        seed0 = read_scalars(sweep / t["runs"][0] / "log").series["eval/return_mean"].steps
        if t["status"] == "done":
            assert all((sweep / run / "result.json").is_file() for run in t["runs"])
            assert t["objective"] == pytest.approx(sum(_result(sweep, r)["eval_return"] for r in t["runs"]) / 2)
        else:  # stopped at a rung (256 or 512 env steps) of its first seed: no later seed ran
            assert seed0[-1] in (256, 512) and not (sweep / t["runs"][1]).exists()
    for path, mtime in finished.items():  # the seeds that had finished were not run again
        assert path.stat().st_mtime_ns == mtime
    done = [t["objective"] for t in trials if t["status"] == "done"]
    assert done == sorted(done, reverse=True) and trials[0]["status"] == "done"


def test_a_trial_finds_a_file_the_config_names_relative_to_the_sweeps_folder(ray_head, tmp_path: Path) -> None:
    """Ray Tune starts each trial in a folder of its own; a config's relative paths (here PPO-DAPG's demo file) are
    found where the sweep was started, as a serial run finds them. Before, every trial failed with 'demo file not
    found' while ``-m serial`` of the same config ran."""
    import numpy as np

    from ding_lite.data.demo import episodes_to_dataset
    from ding_lite.data.demo_file import write_demo

    rng = np.random.default_rng(0)
    episode = {"obs": rng.normal(size=(30, 4)).astype(np.float32), "action": rng.integers(0, 2, 30),
               "reward": np.ones(30, dtype=np.float32)}
    write_demo(tmp_path / "demos" / "expert.npz", episodes_to_dataset([episode], [30.0], {}))
    address, env = ray_head
    proc = subprocess.run([sys.executable, "-m", "ding_lite", "-m", "sweep", "-c", DAPG, "--space",
                           "policy.learn.demo_coeff=[0.5]", "--max-env-step", "128", *QUICK, "--set",
                           "policy.learn.demo_path='demos/expert.npz'", "policy.collect.n_sample=64",
                           "--address", address, "--exp-name", "dapg"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (trial,) = _trials(tmp_path / "dapg")
    assert trial["status"] == "done"
    log = (tmp_path / "dapg" / trial["runs"][0] / "log" / "train.log").read_text()
    assert "demo" in log.lower()


def test_a_trial_the_restored_search_does_not_know_is_left_out_of_the_results(tmp_path: Path, capsys) -> None:
    """A killed driver can start a trial after Ray Tune last saved its state; the restored search then draws another
    in its place. The orphan's folder stays but it is not one of the sweep's trials: results list what Tune knows."""
    from ding_lite.sweep.results import write_results
    from ding_lite.sweep.trials import OBJECTIVE, SweepSpec

    spec = SweepSpec(config=PPO, sweep_dir=str(tmp_path), space=["policy.learn.learning_rate=[0.001,0.01]"],
                     search="optuna", seeds=[0], metric="eval_return", mode="max", num_samples=2)
    for trial_id, status in (("t_done", "done"), ("t_pruned", "running"), ("t_orphan", "running")):
        (tmp_path / "trials" / trial_id).mkdir(parents=True)
        (tmp_path / "trials" / trial_id / "trial.json").write_text(json.dumps(
            {"trial_id": trial_id, "label": trial_id, "params": {"policy.learn.learning_rate": 0.001},
             "runs": [f"trials/{trial_id}/run_seed0"], "seeds": [0], "metric": "eval_return", "status": status,
             "per_seed": [50.0] if status == "done" else [], "objective": 50.0 if status == "done" else None}))
    known = {"t_done": {"error": None, "last": {OBJECTIVE: 50.0}},
             "t_pruned": {"error": None, "last": {OBJECTIVE: 20.0}}}
    summary = write_results(spec, known)
    assert [(t["trial_id"], t["status"]) for t in summary["trials"]] == [("t_done", "done"), ("t_pruned", "pruned")]
    assert [a["trial_id"] for a in summary["abandoned"]] == ["t_orphan"]
    assert json.loads((tmp_path / "sweep.json").read_text())["abandoned"][0]["trial_id"] == "t_orphan"
    assert "t_orphan" in capsys.readouterr().err and (tmp_path / "trials" / "t_orphan").is_dir()


def test_a_trial_that_raises_is_recorded_failed_with_its_error(tmp_path: Path) -> None:
    """trial.json of a trial whose run raised says 'failed' and why (it said 'running' for good before), and the
    results take that error where Ray Tune's record has none."""
    from ding_lite.errors import ConfigError
    from ding_lite.sweep.results import write_results
    from ding_lite.sweep.trials import SweepSpec, _TrialRecord

    spec = SweepSpec(config=PPO, sweep_dir=str(tmp_path), space=["policy.learn.learning_rate=[0.001,0.01]"],
                     search="optuna", seeds=[0], metric="eval_return", mode="max", num_samples=1)
    (tmp_path / "trials" / "t_fail").mkdir(parents=True)
    record = _TrialRecord(tmp_path / "trials" / "t_fail", "t_fail", {"policy.learn.learning_rate": 0.001}, spec)
    record.fail(ConfigError("model.sigma_type must be 'fixed' or 'conditioned', got 'bogus'"))
    saved = json.loads((tmp_path / "trials" / "t_fail" / "trial.json").read_text())
    assert saved["status"] == "failed" and saved["error"].startswith("ConfigError: model.sigma_type must be")
    summary = write_results(spec, {"t_fail": {"error": None, "last": None}})
    assert summary["best"] is None
    assert [(t["status"], t["error"]) for t in summary["trials"]] == [("failed", saved["error"])]


def test_a_failed_trial_is_one_console_line_with_its_error(tmp_path: Path, capsys) -> None:
    """The line said only 'failed, see <folder>', under Ray Tune's traceback of Ray's own frames: it now quotes the
    run's error from trial.json, and Ray's records of the failure are dropped (the traceback stays in error.txt)."""
    import logging
    from types import SimpleNamespace

    from ding_lite.errors import DivergedError
    from ding_lite.sweep.console import RayTrialTracebacks, trial_lines
    from ding_lite.sweep.trials import SweepSpec, _TrialRecord

    spec = SweepSpec(config=PPO, sweep_dir=str(tmp_path), space=["policy.learn.value_weight=[1e38]"],
                     search="grid", seeds=[0], metric="eval_return", mode="max")
    params = {"policy.learn.value_weight": 1e38}
    (tmp_path / "trials" / "t_div").mkdir(parents=True)
    _TrialRecord(tmp_path / "trials" / "t_div", "t_div", params, spec).fail(
        DivergedError("training diverged at train iter 1 (env step 256): total_loss is inf"))
    trial_lines(spec).on_trial_error(0, [], SimpleNamespace(trial_id="t_div", config=params))
    assert capsys.readouterr().err.splitlines() == [
        f"[sweep] trial t_div (value_weight=1e+38): failed: DivergedError: training diverged at train iter 1 (env "
        f"step 256): total_loss is inf; see {tmp_path / 'trials' / 't_div'}"]
    quiet = RayTrialTracebacks()
    record = logging.LogRecord("ray.tune.execution.tune_controller", logging.ERROR, __file__, 1,
                               "Trial task failed for trial run_trial_t_div", None, None)
    other = logging.LogRecord("ray.tune.tune", logging.ERROR, __file__, 1, "the GCS is unreachable", None, None)
    assert not quiet.filter(record) and quiet.filter(other)


def test_a_pruned_trials_record_says_pruned(tmp_path: Path) -> None:
    """A trial stopped by the pruner kept status 'running' in its trial.json (sweep.json said 'pruned')."""
    from ding_lite.sweep.results import write_results
    from ding_lite.sweep.trials import SweepSpec, _TrialRecord

    spec = SweepSpec(config=PPO, sweep_dir=str(tmp_path), space=["policy.learn.learning_rate=[0.001]"],
                     search="optuna", seeds=[0, 1], metric="eval_return", mode="max", num_samples=1)
    (tmp_path / "trials" / "t_cut").mkdir(parents=True)
    _TrialRecord(tmp_path / "trials" / "t_cut", "t_cut", {"policy.learn.learning_rate": 0.001}, spec)
    summary = write_results(spec, {"t_cut": {"error": None,
                                             "last": {"objective": 40.5, "env_step": 512, "all_seeds": False}}})
    saved = json.loads((tmp_path / "trials" / "t_cut" / "trial.json").read_text())
    assert [t["status"] for t in summary["trials"]] == ["pruned"]
    assert (saved["status"], saved["objective"]) == ("pruned", 40.5)


# ---- bad input -------------------------------------------------------------------------------------------------
def test_space_parsing_and_tune_spaces() -> None:
    assert parse_dimension("a.b=[1, 2.5, 'x']").args == (1, 2.5, "x")
    assert parse_dimension("a.b=loguniform(1e-4, 1e-2)").kind == "loguniform"
    assert parse_dimension("a.b=choice(ppo, dqn)").args == ("ppo", "dqn")
    assert trial_label({"policy.learn.learning_rate": 0.001, "policy.collect.n_sample": 64}) == \
        "learning_rate=0.001, n_sample=64"
    pytest.importorskip("ray.tune")
    from ray.tune.search.sample import Categorical, Float, Integer

    dims = parse_space(["a=[1, 2]", "b=randint(2, 4)", "c=loguniform(1e-4, 1e-2)"], "random")
    space = tune_space(dims, "random")
    assert isinstance(space["a"], Categorical) and space["a"].categories == [1, 2]
    assert isinstance(space["b"], Integer) and (space["b"].lower, space["b"].upper) == (2, 5)  # 4 included
    assert isinstance(space["c"], Float) and space["c"].lower == 1e-4
    assert tune_space(parse_space(["a=[1, 2]"], "grid"), "grid") == {"a": {"grid_search": [1, 2]}}


def test_the_pruning_reporter_stays_out_of_the_runs_config(tmp_path: Path) -> None:
    """The first seed of a pruned sweep reports to Ray Tune through a tracker of its run, not through its
    log.backends: its total_config.py named 'ray_tune', and -m serial -c that file failed ('unknown tracker type')."""
    from ding_lite.build import load_config
    from ding_lite.sweep import trials
    from ding_lite.utils.trackers import build_trackers

    spec = trials.SweepSpec(config=PPO, sweep_dir=str(tmp_path), space=["policy.learn.learning_rate=[0.001]"],
                            search="optuna", seeds=[0, 1], metric="eval_return", mode="max", pruner="asha",
                            max_env_step=256)
    seen = []

    def train(config, seed, max_env_step, max_train_iter, *, exp_dir, overrides, **kwargs):
        cfg = load_config(config, overrides=list(overrides))
        (exp_dir / "log").mkdir(parents=True)
        built = build_trackers(cfg, exp_dir)
        seen.append((seed, list(cfg.log.backends), [type(t).__name__ for t in built]))
        for tracker in built:
            tracker.close()
        return {"eval_return": 1.0, "env_step": 256}

    trial_dir = tmp_path / "trials" / "t"
    trial_dir.mkdir(parents=True)
    record = trials._TrialRecord(trial_dir, "t", {}, spec)
    trials._run_seeds({}, spec, trial_dir, record, train)
    assert seen == [(0, ["tensorboard"], ["TensorboardTracker", "RayTuneReporter"]),
                    (1, ["tensorboard"], ["TensorboardTracker"])]


def test_the_ray_tune_tracker_works_only_in_a_trial(tmp_path: Path) -> None:
    from ding_lite.errors import ConfigError
    from ding_lite.utils.trackers import build_trackers

    with pytest.raises(ConfigError, match="'ray_tune' reports the evaluations of a -m sweep trial"):
        build_trackers({"log": {"backends": ["ray_tune"]}}, tmp_path)


def test_a_finished_seed_of_a_trial_leaves_no_replay_buffer_files(tmp_path: Path) -> None:
    """The sweep never resumes a finished seed, so its replay buffer files (saved for --resume, up to twice the
    buffer) are deleted once the seed's run returns; its checkpoints stay."""
    from types import SimpleNamespace

    from ding_lite.runtime.replay_ckpt import BUFFER_SUFFIX
    from ding_lite.sweep.trials import _run_seeds

    def train(config: str, seed: int, *args: object, exp_dir: Path, **kwargs: object) -> dict:
        ckpt = exp_dir / "ckpt"
        ckpt.mkdir(parents=True)
        for name in ("iteration_10", "resume_12"):
            (ckpt / f"{name}.pth.tar").write_bytes(b"ckpt")
            (ckpt / f"{name}{BUFFER_SUFFIX}").write_bytes(b"samples")
        return {"eval_return": 1.0, "env_step": 12}

    spec = SimpleNamespace(overrides=[], seeds=[0, 1], pruner="none", config="c.py", max_env_step=12,
                           max_train_iter=None, strict=False)
    record = SimpleNamespace(save=lambda results, status: None)
    results = _run_seeds({}, spec, tmp_path, record, train)
    assert len(results) == 2
    for seed in (0, 1):
        ckpt = tmp_path / f"run_seed{seed}" / "ckpt"
        assert sorted(p.name for p in ckpt.iterdir()) == ["iteration_10.pth.tar", "resume_12.pth.tar"]


def test_the_objective_modes_help_names_every_metric_minimised() -> None:
    # --metric wall_seconds is minimised by default as env_step is (docs/sweep.md); the help named env_step only
    from ding_lite.entry.sweep import build_sweep_parser
    from ding_lite.sweep.trials import METRICS

    text = " ".join(build_sweep_parser().format_help().split())
    assert all(metric in text.split("--objective-mode {max,min}")[-1].split("--pruner")[0]
               for metric, mode in METRICS.items() if mode == "min")
