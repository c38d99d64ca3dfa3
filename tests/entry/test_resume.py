"""Resume after SIGKILL (ding_lite/runtime/run_start.py, train_loop.py, worker/learner.py): a run killed after its
checkpoints continues with --resume from the latest one's train_iter and env_step, and continues the run's record."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, cli_env, run_cli

from ding_lite.runtime.replay_ckpt import BUFFER_SUFFIX
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint
from ding_lite.utils.events import read_scalars

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
# a resume checkpoint at every evaluation (every 40 iterations; 2 kept), written before the evaluation's line; a
# stop value no run reaches, so only SIGKILL or the budget ends it
SETTINGS = ["--set", "policy.learn.learner.hook.save_resume_ckpt.every_seconds=inf", "--set",
            "policy.learn.learner.hook.save_resume_ckpt.at_eval_after_seconds=0", "--set", "env.stop_value=100000",
            "--set", "policy.eval.final_episodes=2", "--exp-name", "exp", "-s", "0"]


def _wait_for_evaluation_80(proc: subprocess.Popen, log: Path) -> None:
    """Until the run ``proc`` logged its evaluation at iteration 80 in ``log`` (its text log)."""
    deadline = time.monotonic() + 240
    while not (log.is_file() and re.search(r"\[eval\] iter +80 ", log.read_text())):
        assert proc.poll() is None, "the run ended before its evaluation at iteration 80"
        assert time.monotonic() < deadline, "no evaluation at iteration 80 within the time limit"
        time.sleep(0.02)


def _kill_after_two_evaluations(cwd: Path) -> None:
    """Start a run and SIGKILL it once it logged its evaluation at iteration 80: the last checkpoint was written
    just before that line, so the line is the killed run's past its checkpoint (the resumed run logs it again)."""
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", "-m", "serial", "-c", DQN, *SETTINGS,
                             "--max-env-step", "1000000"], cwd=cwd, env=cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_evaluation_80(proc, cwd / "exp" / "log" / "train.log")
    finally:
        proc.kill()  # SIGKILL: no cleanup, no final checkpoint, no result.json
        proc.wait()
    assert proc.returncode == -9


def _iterations(log_text: str, kind: str) -> list[int]:
    return [int(m) for m in re.findall(rf"^\[{kind}\] iter +(\d+)", log_text, re.M)]


def test_resume_after_sigkill_continues_the_run(tmp_path: Path) -> None:
    """The resumed run continues from the checkpoint's counters, and continues the run itself: its wall time
    counts both segments, result.json says it was resumed, what the killed run logged after its checkpoint is in
    train.log and tensorboard once, and the killed run's resume checkpoints rotate out like the others."""
    _kill_after_two_evaluations(tmp_path)
    exp = tmp_path / "exp"
    assert not (exp / "result.json").exists()
    for path in (exp / "ckpt").glob("*.pth.tar"):
        load_checkpoint(path)  # every checkpoint the killed run left is complete (atomic writes)
    killed_resume_ckpts = set((exp / "ckpt").glob("resume_*.pth.tar"))
    assert killed_resume_ckpts
    latest = latest_checkpoint(exp / "ckpt")
    state = load_checkpoint(latest)
    train_iter, env_step = state["train_iter"], state["env_step"]
    assert train_iter >= 80 and env_step > 0
    assert train_iter in _iterations((exp / "log" / "train.log").read_text(), "eval")  # logged past the checkpoint
    # what a kill in the middle of a write leaves (utils/atomic.py's temp naming); another file starting with a dot
    # is not the run's to delete
    half_written = [exp / "ckpt" / f".resume_{train_iter + 40}.pth.tar.k1ll3d.tmp", exp / ".result.json.k1ll3d.tmp"]
    for path in half_written:
        path.write_bytes(b"PK\x03\x04 truncated")
    (exp / ".keep").write_text("")

    proc = run_cli("-m", "serial", "-c", DQN, *SETTINGS, "--resume", "--max-train-iter", str(train_iter + 90),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    start, *lines = proc.stderr.strip().splitlines()
    assert start.startswith("[start] dqn on cartpole, seed 0; ") and start.endswith(f"{train_iter + 90} train iters")
    # the replay buffer saved with that checkpoint (before it: the kill left it whole) comes back with it
    buffer_file = latest.name.replace(".pth.tar", BUFFER_SUFFIX)
    saved_samples = state["replay_buffer"]["samples"]
    assert 0 < saved_samples <= env_step
    assert lines[0] == f"loaded exp/ckpt/{latest.name} (train_iter {train_iter}, env_step {env_step}); replay " \
                       f"buffer: {saved_samples:,} samples from {buffer_file}"
    # the first evaluation of the resumed run happens at the checkpoint's counters
    first_eval = re.match(r"\[eval\] iter +(\d+) +env_step +(\d+)", lines[1])
    assert first_eval and (int(first_eval[1]), int(first_eval[2])) == (train_iter, env_step), lines[1]
    result = json.loads((exp / "result.json").read_text())
    assert result["train_iter"] == train_iter + 90  # counting went on from the checkpoint, not from 0
    assert result["env_step"] > env_step
    assert load_checkpoint(exp / "ckpt" / f"iteration_{train_iter + 90}.pth.tar")["env_step"] == result["env_step"]
    assert result["segments"] == 2
    assert result["resumed_from"] == [{"checkpoint": f"ckpt/{latest.name}", "train_iter": train_iter,
                                       "env_step": env_step}]
    assert result["wall_seconds"] > state["run"]["wall_seconds"] > 0  # the killed segment's time is in it
    text = (exp / "log" / "train.log").read_text()
    assert f"loaded exp/ckpt/{latest.name}" in text
    for kind in ("eval", "learn"):  # each iteration logged once, in order, across the kill
        its = _iterations(text, kind)
        assert its == sorted(set(its)), (kind, its)
    scalars = read_scalars(exp / "log").series
    for tag, series in scalars.items():  # the same in tensorboard, on every axis
        assert series.steps == sorted(set(series.steps)), (tag, series.steps)
    # and none missing: the events logged before the checkpoint were on disk with it, though the kill came within
    # the writer's flush interval (10 s)
    assert scalars["eval/return_mean_iter"].steps == _iterations(text, "eval")
    assert scalars["eval/return_mean_iter"].steps[:3] == [0, 40, 80]
    left = set((exp / "ckpt").glob("resume_*.pth.tar"))
    assert len(left) <= 2 and not left & killed_resume_ckpts  # rotated out like the resumed run's own
    assert len(list((exp / "ckpt").glob(f"*{BUFFER_SUFFIX}"))) == 2  # and the buffer files too
    assert not any(path.exists() for path in half_written) and (exp / ".keep").exists()


def test_checkpoints_keep_the_best_eval_return_and_a_resumed_run_keeps_its_bar(tmp_path: Path) -> None:
    """ckpt_best is replaced only by a policy better than every earlier one, across a resume too."""
    from ding_lite.entry.serial import serial_pipeline

    overrides = ("policy.learn.learner.hook.save_ckpt_after_iter=40", "policy.eval.evaluator.eval_freq=40",
                 "env.stop_value=100000")
    first = serial_pipeline(DQN, seed=0, max_train_iter=120, exp_dir=tmp_path / "exp", overrides=overrides,
                            progress=False)
    state = load_checkpoint(latest_checkpoint(tmp_path / "exp" / "ckpt"))
    assert state["best_eval_return"] == pytest.approx(first["best_eval_return"])
    best_before = load_checkpoint(tmp_path / "exp" / "ckpt" / "ckpt_best.pth.tar")["best_eval_return"]
    second = serial_pipeline(DQN, seed=0, max_train_iter=160, exp_dir=tmp_path / "exp", resume=True,
                             overrides=overrides, progress=False)
    assert second["best_eval_return"] >= first["best_eval_return"]
    best_after = load_checkpoint(tmp_path / "exp" / "ckpt" / "ckpt_best.pth.tar")["best_eval_return"]
    assert best_after >= best_before


def test_resume_and_load_ckpt_together_are_refused(tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", "-c", DQN, "--resume", "--load-ckpt", "x.pth.tar", "--exp-name", "exp",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("ding_lite: error: --resume and --load-ckpt both name a checkpoint to start from: "
                                   "give only one")
    assert not (tmp_path / "exp").exists()


def test_config_load_ckpt_before_run_is_the_start_checkpoint(tmp_path: Path) -> None:
    from ding_lite.entry.serial import serial_pipeline

    serial_pipeline(DQN, seed=0, max_train_iter=30, exp_dir=tmp_path / "a", progress=False,
                    overrides=("env.stop_value=100000",))
    ckpt = latest_checkpoint(tmp_path / "a" / "ckpt")
    result = serial_pipeline(DQN, seed=0, max_train_iter=35, exp_dir=tmp_path / "b", progress=False,
                             overrides=("env.stop_value=100000",
                                        f"policy.learn.learner.hook.load_ckpt_before_run='{ckpt}'"))
    assert result["train_iter"] == 35  # continued from the checkpoint's 30 iterations
    assert "loaded" in (tmp_path / "b" / "log" / "train.log").read_text()


def test_the_start_checkpoint_is_read_once(tmp_path: Path, monkeypatch) -> None:
    """--load-ckpt and --resume: the start checkpoint is read once (checked, then loaded from what was read)."""
    import torch

    from ding_lite.entry.serial import serial_pipeline

    overrides = ("env.stop_value=100000", "policy.eval.final_episodes=0")
    serial_pipeline(DQN, seed=0, max_train_iter=30, exp_dir=tmp_path / "a", progress=False, overrides=overrides)
    start = latest_checkpoint(tmp_path / "a" / "ckpt")
    reads: list[Path] = []
    torch_load = torch.load

    def counted(path, *args, **kwargs):
        if not hasattr(path, "read"):  # a file, not the in-memory round trip of the policy's learn-state check
            reads.append(Path(path))
        return torch_load(path, *args, **kwargs)

    monkeypatch.setattr(torch, "load", counted)
    serial_pipeline(DQN, seed=0, max_train_iter=35, exp_dir=tmp_path / "b", load_ckpt=start, progress=False,
                    overrides=overrides)
    assert reads.count(start) == 1, reads
    reads.clear()
    result = serial_pipeline(DQN, seed=0, max_train_iter=40, exp_dir=tmp_path / "a", resume=True, progress=False,
                             overrides=overrides)
    assert result["train_iter"] == 40 and reads.count(start) == 1, reads


@pytest.mark.parametrize("option,named", [
    (["--load-ckpt", "missing.pth.tar"], "--load-ckpt"),
    (["--set", "policy.learn.learner.hook.load_ckpt_before_run=missing.pth.tar"],
     "policy.learn.learner.hook.load_ckpt_before_run"),
])
def test_a_missing_start_checkpoint_names_where_it_was_given(tmp_path: Path, option: list[str], named: str) -> None:
    """Before, both said only 'checkpoint not found: missing.pth.tar' (found by a config-key fuzzer)."""
    proc = run_cli("-m", "serial", "-c", DQN, *option, "--exp-name", "exp", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"ding_lite: error: {named}: checkpoint not found: missing.pth.tar"
    assert not (tmp_path / "exp").exists()


@pytest.mark.parametrize("signal_name, code, said", [("SIGINT", 130, "interrupted"),
                                                     ("SIGTERM", 143, "terminated (SIGTERM)")])
def test_ctrl_c_or_sigterm_stops_between_iterations_with_a_checkpoint_to_resume_from(
        tmp_path: Path, signal_name: str, code: int, said: str) -> None:
    """Ctrl-C (SIGINT) or a scheduler's SIGTERM in the middle of a run: it ends its iteration, writes
    ``iteration_N`` with its replay buffer and says so; ``--resume`` goes on from exactly there. Before, the run
    stopped at once with nothing written since its last periodic checkpoint (by default 5 minutes of training), and a
    run younger than that could not be resumed at all."""
    import signal

    settings = ["--set", "env.stop_value=100000", "--set", "policy.eval.final_episodes=2", "--exp-name", "exp",
                "-s", "0", "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", "-c", DQN, *settings, "--max-env-step", "1000000"],
                            cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "exp" / "log" / "train.log"
    try:
        _wait_for_evaluation_80(proc, log)
        proc.send_signal(getattr(signal, signal_name))
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == code, stderr
    last = stderr.strip().splitlines()[-1]
    stop = re.fullmatch(rf"ding_lite: {re.escape(said)}: stopped by {signal_name} at env_step (\d+), train_iter "
                        r"(\d+); checkpoint exp/ckpt/(iteration_\d+\.pth\.tar): continue with --resume", last)
    assert stop, last
    env_step, train_iter, name = int(stop[1]), int(stop[2]), stop[3]
    state = load_checkpoint(tmp_path / "exp" / "ckpt" / name)
    assert (state["train_iter"], state["env_step"]) == (train_iter, env_step) and train_iter >= 80
    assert name == f"iteration_{train_iter}.pth.tar" and latest_checkpoint(tmp_path / "exp" / "ckpt").name == name
    assert f"[stop] stopped by {signal_name}" in log.read_text()
    assert not (tmp_path / "exp" / "result.json").exists()  # stopped, not finished

    resumed = run_cli("-c", DQN, *settings, "--resume", "--max-train-iter", str(train_iter + 40), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    first = resumed.stderr.strip().splitlines()[1]  # after the [start] line
    assert first == f"loaded exp/ckpt/{name} (train_iter {train_iter}, env_step {env_step}); replay buffer: " \
                    f"{state['replay_buffer']['samples']:,} samples from {name.replace('.pth.tar', BUFFER_SUFFIX)}"
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["train_iter"] == train_iter + 40 and result["segments"] == 2


def test_a_resumed_run_stopped_early_leaves_no_result_of_its_earlier_segment(tmp_path: Path) -> None:
    """A finished run resumed with a larger budget and stopped by Ctrl-C: its folder holds no result.json, as any run
    stopped early. Before, the first segment's result.json (budget spent at 128 env steps) stayed, and -m plot and
    -m sweep took the run for finished there."""
    import signal

    settings = ["--set", "env.stop_value=100000", "--exp-name", "exp", "-s", "0", "--no-progress"]
    assert run_cli("-c", DQN, *settings, "--max-env-step", "128", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "exp" / "result.json").read_text())["env_step"] == 128
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", "-c", DQN, *settings, "--resume", "--max-env-step",
                             "1000000"], cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    log = tmp_path / "exp" / "log" / "train.log"
    try:
        deadline = time.monotonic() + 240
        while "[eval]" not in log.read_text().partition("loaded exp/ckpt/")[2]:  # an evaluation of this segment
            assert proc.poll() is None and time.monotonic() < deadline, "the resumed run did not evaluate"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, stderr
    assert not (tmp_path / "exp" / "result.json").exists()


def test_resume_of_a_command_over_several_seeds_starts_the_seeds_it_had_not_reached(tmp_path: Path) -> None:
    """`-s 0 -s 1 --resume` after the command stopped during seed 0 (Ctrl-C, a scheduler's SIGTERM): seed 0 goes on
    from its checkpoint and seed 1, whose folder does not exist yet, starts. Before, seed 1 was refused ('no
    checkpoint ... the run stopped before its first one') and the command could not be completed with --resume."""
    budget = ["--max-env-step", "256", "--set", "env.stop_value=None", "--set", "policy.eval.final_episodes=0"]
    first = run_cli("-c", DQN, "-s", "0", "--exp-name", "runs_seed0", *budget, cwd=tmp_path)  # seed 0's folder only
    assert first.returncode == 0, first.stderr
    proc = run_cli("-c", DQN, "-s", "0", "-s", "1", "--exp-name", "runs", "--resume", *budget, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "[start] dqn on cartpole, seed 0; ends at 256 env steps", lines
    assert lines[1].startswith("loaded runs_seed0/ckpt/iteration_"), lines
    assert "--resume: runs_seed1 holds no run yet (the command stopped before seed 1): starting it" in lines
    assert json.loads((tmp_path / "runs_seed1" / "result.json").read_text())["segments"] == 1


def test_resume_of_a_folder_that_does_not_exist_says_so(tmp_path: Path) -> None:
    """One seed (or several, none of whose folders exist): a mistyped --exp-name is no new run; the line says there
    is no such folder (before: 'no checkpoint in .../ckpt (the run stopped before its first one)')."""
    for seeds in (["-s", "0"], ["-s", "0", "-s", "1"]):
        proc = run_cli("-c", DQN, *seeds, "--exp-name", "typo", "--resume", cwd=tmp_path)
        assert proc.returncode == 2 and not list(tmp_path.iterdir()), proc.stderr
        folder = "typo" if len(seeds) == 2 else "typo_seed0"
        assert proc.stderr.strip() == f"ding_lite: error: --resume: there is no run to continue in {folder} (no such " \
                                      f"folder): leave --resume out to start it, or name the run's folder with " \
                                      f"--exp-name"
    (tmp_path / "typo" / "ckpt").mkdir(parents=True)  # a folder whose run wrote no checkpoint yet
    proc = run_cli("-c", DQN, "--exp-name", "typo", "--resume", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(
        "ding_lite: error: --resume: no iteration_N.pth.tar or resume_N.pth.tar checkpoint in typo/ckpt (the run "
        "stopped before its first one)")
