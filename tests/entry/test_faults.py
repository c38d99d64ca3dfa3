"""Faults of the machine, not of the input (ding_lite/utils/atomic.py, utils/claim.py, utils/log.py, cli.py): a full
disk, a read-only folder, two runs on one experiment folder. Each is one line on stderr (exit code 2), leaves nothing
half-written, and a run killed by a full disk resumes from its last good checkpoint.

A full disk is the kernel's refusal of a write: here RLIMIT_FSIZE makes write(2) fail (EFBIG, the same path through
the code as ENOSPC, which needs a small filesystem CI does not offer); a read-only folder is a 0555 folder, met as an
ordinary user meets it (conftest.as_plain_user where the tests run as root).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, as_plain_user, cli_env

from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint
from ding_lite.utils.claim import LOCK_NAME, claim_existing, claim_new
from ding_lite.utils.events import ScalarWriter, read_scalars

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
QUICK = ["--set", "env.stop_value=100000", "--set", "policy.eval.final_episodes=0", "--no-progress"]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _one_error_line(proc: subprocess.CompletedProcess, expected: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert lines[-1].startswith("ding_lite: error: ") and expected in lines[-1], proc.stderr[-3000:]
    assert not any(line.startswith("ding_lite: error: ") for line in lines[:-1])


def _no_file_growth() -> None:
    """preexec_fn: every write that would grow a file fails (EFBIG), as on a full disk."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_a_full_disk_from_the_start_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    """Run in this process (Python ignores SIGXFSZ, so a write past the limit fails with EFBIG): the file-size
    limit is lowered to 0 around main() and raised back after."""
    from ding_lite.cli import main

    monkeypatch.chdir(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    try:
        code = main(["-c", DQN, "--exp-name", "exp", *QUICK])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    err = capsys.readouterr().err
    _one_error_line(subprocess.CompletedProcess([], code, "", err), "cannot write exp/total_config.py: File too large")
    assert len(err.strip().splitlines()) == 1
    assert _tree(tmp_path) == []  # no half-made folder, no half-written total_config.py


def test_a_disk_that_fills_during_a_run_stops_it_in_one_line_and_it_resumes(tmp_path: Path, monkeypatch) -> None:
    from ding_lite.cli import main

    args = ["-c", DQN, "--exp-name", "exp", "-s", "0", *QUICK, "--set",
            "policy.learn.learner.hook.save_ckpt_after_iter=20"]
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", *args, "--max-env-step", "1000000"], cwd=tmp_path,
                            env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while latest_checkpoint(tmp_path / "exp" / "ckpt") is None:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no checkpoint within the time limit"
            time.sleep(0.02)
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (0, 0))  # the disk is full from now on
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _one_error_line(subprocess.CompletedProcess(args, proc.returncode, "", err), "cannot write exp/")
    exp = tmp_path / "exp"
    assert not (exp / "result.json").exists()
    assert not [p for p in exp.rglob(".*.tmp")], "a temp file of an atomic write was left"
    for ckpt in (exp / "ckpt").glob("*.pth.tar"):
        load_checkpoint(ckpt)  # every checkpoint on disk is whole
    state = load_checkpoint(latest_checkpoint(exp / "ckpt"))
    monkeypatch.chdir(tmp_path)  # the resumed run in this process: a Python start less
    assert main([*args, "--resume", "--max-train-iter", str(state["train_iter"] + 5)]) == 0
    assert json.loads((exp / "result.json").read_text())["train_iter"] == state["train_iter"] + 5


READ_ONLY_SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys
    from ding_lite.cli import main
    for argv in json.loads(sys.argv[1]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(argv)
        print(json.dumps({"code": code, "stderr": err.getvalue()}))
""")


def test_read_only_folders_are_one_line_each_and_nothing_is_written(tmp_path: Path) -> None:
    run = tmp_path / "run"  # an experiment to plot
    (run / "log").mkdir(parents=True)
    writer = ScalarWriter(run / "log")
    writer.add_scalar("eval/return_mean", 10.0, 0)
    writer.close()
    (tmp_path / "ro").mkdir()
    before = _tree(tmp_path)
    (tmp_path / "ro").chmod(0o555)
    cases = {  # argv -> what the one line says
        "ro/exp": (["-c", DQN, "--exp-name", "ro/exp", *QUICK], "cannot write ro/exp: Permission denied"),
        "ro": (["-c", DQN, "--exp-name", "ro", *QUICK], f"cannot write ro/{LOCK_NAME}: Permission denied"),
        "plot -o": (["-m", "plot", "run", "-o", "ro/curve.png"], "cannot write ro/curve.png: Permission denied"),
        "--demo-path": (["-m", "collect_demo", "-c", DQN, "--demo-path", "ro/demo.npz"],
                        "cannot write ro/demo.npz: ro is not writable"),
    }
    try:
        proc = subprocess.run([sys.executable, "-c", READ_ONLY_SCRIPT, json.dumps([a for a, _ in cases.values()])],
                              cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=300,
                              preexec_fn=as_plain_user)
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcomes = [json.loads(line) for line in proc.stdout.splitlines()]
    for (case, (_, expected)), out in zip(cases.items(), outcomes, strict=True):
        lines = out["stderr"].strip().splitlines()
        assert out["code"] == 2 and len(lines) == 1 and expected in lines[0], (case, out)
    assert _tree(tmp_path) == before


def test_two_runs_started_together_on_one_folder_take_two_folders(tmp_path: Path) -> None:
    runs = [subprocess.Popen([sys.executable, "-m", "ding_lite", "-c", DQN, "--exp-name", "exp", "-s", str(seed),
                              "--max-env-step", "160", *QUICK], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for seed in (0, 1)]
    for proc in runs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert folders == ["exp", "exp_1"]
    seeds = set()
    for name in folders:
        exp = tmp_path / name
        result = json.loads((exp / "result.json").read_text())
        saved = (exp / "total_config.py").read_text()
        assert f"'seed': {result['seed']}," in saved  # the config and the result are of one run
        assert (exp / "log" / "train.log").read_text().count("[done]") == 1
        assert len(list((exp / "log").glob("events.out.tfevents.*"))) == 1
        assert not (exp / LOCK_NAME).exists()  # released when the run ended
        seeds.add(result["seed"])
    assert seeds == {0, 1}


def test_a_folder_in_use_is_skipped_and_a_second_resume_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    from ding_lite.cli import main

    first = claim_new(tmp_path / "exp")  # a run holds exp
    try:
        second = claim_new(tmp_path / "exp")
        assert second.path == tmp_path / "exp_1" and second.skipped == "is in use by another run"
        second.release(failed=True)
        assert not (tmp_path / "exp_1").exists()  # claimed, nothing written, removed again
        monkeypatch.chdir(tmp_path)
        assert main(["-c", DQN, "--exp-name", "exp", "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--resume: exp is in use by a run that is still going" in err[0], err
    finally:
        first.release()
    assert sorted(os.listdir(tmp_path)) == ["exp"] and not list((tmp_path / "exp").iterdir())
    claim_existing(tmp_path / "exp").release()  # free again once the first run let go


def test_a_resumed_run_cuts_the_event_files_back_to_its_checkpoint(tmp_path: Path) -> None:
    from ding_lite.utils.events import drop_events_after

    writer = ScalarWriter(tmp_path)
    writer.add_scalar("eval/return_mean", 1.0, 10)
    writer.flush()
    cut = time.time()
    time.sleep(0.01)
    writer.add_scalar("eval/return_mean", 2.0, 20)  # after the checkpoint: the resumed run logs it again
    writer.close()
    assert drop_events_after(tmp_path, cut) == 1
    assert read_scalars(tmp_path).series["eval/return_mean"].steps == [10]
    assert drop_events_after(tmp_path, 0.0) == 2 and not list(tmp_path.iterdir())  # file opened after: removed


def test_a_resume_skips_a_checkpoint_that_cannot_be_read(tmp_path: Path, monkeypatch, capsys) -> None:
    """A newest checkpoint cut short (a copy of the folder that stopped, a disk error) is skipped with a warning
    naming it, and the run goes on from the one before; with none readable, the newest one's error, in one line."""
    from ding_lite.cli import main

    monkeypatch.chdir(tmp_path)
    every = ["--set", "policy.learn.learner.hook.save_ckpt_after_iter=200"]
    assert main(["-c", DQN, "--exp-name", "exp", "--max-train-iter", "450", *every, *QUICK]) == 0
    ckpt = tmp_path / "exp" / "ckpt"
    newest = latest_checkpoint(ckpt)
    assert newest is not None and newest.name == "iteration_450.pth.tar"
    newest.write_bytes(newest.read_bytes()[:1000])
    capsys.readouterr()
    assert main(["-c", DQN, "--exp-name", "exp", "--resume", "--max-train-iter", "500", *every, *QUICK]) == 0
    err = capsys.readouterr().err
    assert "warning: --resume skips exp/ckpt/iteration_450.pth.tar: cannot read checkpoint" in err, err
    assert "loaded exp/ckpt/iteration_400.pth.tar (train_iter 400" in err, err
    assert load_checkpoint(ckpt / "iteration_500.pth.tar")["train_iter"] == 500
    for path in ckpt.glob("*.pth.tar"):
        if path.name != "ckpt_best.pth.tar":
            path.write_bytes(b"not a checkpoint")
    code = main(["-c", DQN, "--exp-name", "exp", "--resume", "--max-train-iter", "600", *every, *QUICK])
    _one_error_line(subprocess.CompletedProcess([], code, "", capsys.readouterr().err),
                    "cannot read checkpoint exp/ckpt/iteration_500.pth.tar")
