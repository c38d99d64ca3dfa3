"""A new user's first day (issue 10): --version, one folder per seed, the config's folder on the import path,
ignored keys in the last line and in result.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, run_cli

import ding_lite
from ding_lite.config import read_config

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")


def test_version(tmp_path) -> None:
    proc = run_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"ding_lite {ding_lite.__version__}"


def _tiny_dqn(*extra: str) -> list[str]:
    return ["-c", DQN, "--max-env-step", "64", "--no-progress", "--set", "env.stop_value=None",
            "--set", "env.n_evaluator_episode=1", "--set", "env.evaluator_env_num=1",
            "--set", "policy.learn.batch_size=8", "--set", "policy.eval.final_episodes=1", *extra]


def test_each_seed_saves_a_config_naming_its_own_folder(tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", *_tiny_dqn(), "-s", "0", "-s", "1", "--exp-name", "run_seed0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for seed in (0, 1):
        main, _ = read_config(tmp_path / f"run_seed{seed}" / "total_config.py")
        assert main["exp_name"] == f"run_seed{seed}" and main["seed"] == seed
    # eval of seed 1's saved config evaluates seed 1's checkpoint
    proc = run_cli("-m", "eval", "-c", "run_seed1/total_config.py", "--n-episode", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "run_seed1/ckpt/ckpt_best.pth.tar" in proc.stderr, proc.stderr
    # a resume from seed 1's saved config continues in seed 1's folder ...
    before0 = sorted(p.name for p in (tmp_path / "run_seed0" / "ckpt").iterdir())
    proc = run_cli("-m", "serial", "-c", "run_seed1/total_config.py", "-s", "1", "--resume", "--max-env-step", "96",
                   "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "results in run_seed1" in proc.stderr, proc.stderr
    assert sorted(p.name for p in (tmp_path / "run_seed0" / "ckpt").iterdir()) == before0
    # ... and a resume of that folder under another seed is refused: one line, exit 2, nothing written
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    proc = run_cli("-m", "serial", "-c", "run_seed1/total_config.py", "-s", "0", "--resume", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "holds the run of seed 1, not seed 0" in proc.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == listing


PLUGIN_POLICY = '''
from ding_lite.policy.dqn import DQNPolicy
from ding_lite.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("first_day_dqn")
class FirstDayDQN(DQNPolicy):
    pass
'''


def test_config_folder_is_searched_for_import_names(tmp_path: Path) -> None:
    # `ding_lite -c my_config.py` from the folder holding my_policy.py finds it, as `python my_config.py` would
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "first_day_policy.py").write_text(PLUGIN_POLICY)
    (folder / "my_config.py").write_text(
        f"from runpy import run_path\nns = run_path({DQN!r})\nmain_config = ns['main_config']\n"
        "create_config = ns['create_config']\n"
        "create_config['policy'] = dict(type='first_day_dqn', import_names=['first_day_policy'])\n")
    args = ["-c", "proj/my_config.py", "--max-env-step", "32", "--no-progress", "--set", "env.stop_value=None",
            "--set", "policy.learn.batch_size=8", "--exp-name", "exp2"]
    proc = run_cli("-m", "serial", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "exp2" / "result.json").read_text())["train_iter"] > 0
    # the module missing: the error names the folders searched
    (folder / "first_day_policy.py").unlink()
    proc = run_cli("-m", "serial", *args[:-1], "exp3", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "cannot import module 'first_day_policy'" in lines[0] and str(folder) in lines[0], lines[0]
    assert not (tmp_path / "exp3").exists()


def test_ignored_keys_are_repeated_at_the_end_and_in_result_json(tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", *_tiny_dqn("--set", "policy.learn.batch_sise=3", "--set", "env.colour=1"),
                   "--exp-name", "exp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("[done]") and "ignored unknown config keys: env.colour, policy.learn.batch_sise" in last
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["ignored_keys"] == ["env.colour", "policy.learn.batch_sise"]
    assert result["final_eval_episodes"] == 1 and "final_eval_return" in result and "final_eval_std" in result
