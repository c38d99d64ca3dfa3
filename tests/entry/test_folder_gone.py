"""The experiment folder removed or moved while its run goes on (ding_lite/utils/claim.py FolderClaim.check). Before,
the run went on to its end with exit code 0: the text log and the event files went to unlinked files (or into the
moved folder), and the next checkpoint or result.json made a new, partial folder (ckpt/ and result.json only) under
the old name. Now the next evaluation or checkpoint stops it with one line naming the folder (exit code 2)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main
from ding_lite.runtime import train_loop
from ding_lite.utils.checkpoint import load_checkpoint

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
ARGS = ["-c", DQN, "--exp-name", "exp", "--max-env-step", "400", "--no-progress", "--set", "env.stop_value=100000",
        "--set", "policy.eval.final_episodes=0", "--set", "policy.eval.evaluator.eval_freq=20",
        "--set", "policy.learn.learner.hook.save_ckpt_after_iter=20"]


@pytest.mark.parametrize("how", ["removed", "moved"])
def test_a_folder_removed_or_moved_mid_run_stops_it_in_one_line(tmp_path: Path, monkeypatch, capsys,
                                                                how: str) -> None:
    monkeypatch.chdir(tmp_path)
    evaluate = train_loop._evaluate
    calls = []

    def evaluate_after_the_folder_went(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # a few checkpoints are written by then
            if how == "removed":
                shutil.rmtree(tmp_path / "exp")
            else:
                (tmp_path / "exp").rename(tmp_path / "moved")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(train_loop, "_evaluate", evaluate_after_the_folder_went)
    assert main(ARGS) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith(("[start]", "[eval]"))]
    assert len(calls) == 3  # stopped at the evaluation that found the folder gone
    assert len(err) == 1 and err[0].startswith("ding_lite: error: the experiment folder exp was removed or moved "
                                               "while its run was going"), err
    assert not (tmp_path / "exp").exists()  # no partial folder made again under the old name
    if how == "moved":  # the moved folder is whole, and goes on from where it is
        assert not (tmp_path / "moved" / "result.json").exists()
        for ckpt in (tmp_path / "moved" / "ckpt").glob("*.pth.tar"):
            load_checkpoint(ckpt)
        monkeypatch.setattr(train_loop, "_evaluate", evaluate)
        assert main([*ARGS[:2], "--exp-name", "moved", *ARGS[4:], "--resume"]) == 0
        assert (tmp_path / "moved" / "result.json").is_file() and not (tmp_path / "exp").exists()
