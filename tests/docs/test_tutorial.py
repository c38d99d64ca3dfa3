"""The tutorials' code (docs/tutorial/) is what the pages show, and it works through the CLI as the pages say."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO_ROOT, cli_env, run_cli

pytestmark = pytest.mark.unittest

DOCS = REPO_ROOT / "docs"
TUTORIAL = DOCS / "tutorial"
PAGES = {
    "tutorial_custom_policy.md": ("my_policy.py", "my_config.py"),
    "tutorial_custom_env.md": ("corridor_env.py", "corridor_config.py"),
    "tutorial_custom_model.md": ("my_model.py", "my_model_config.py"),
}


def _error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, f"expected one error line and exit 2, got {proc.returncode}: " \
                                                     f"{proc.stderr}"
    return lines[0]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_pages_show_the_tutorial_files_verbatim(page: str) -> None:
    text = (DOCS / page).read_text()
    for name in PAGES[page]:
        code = (TUTORIAL / name).read_text().rstrip("\n")
        assert f"```python\n{code}\n```" in text, f"docs/{page} does not show docs/tutorial/{name} verbatim: paste it"


def test_custom_policy_trains_through_the_cli(tmp_path) -> None:
    exp = tmp_path / "exp"
    proc = run_cli("-m", "serial", "-c", str(TUTORIAL / "my_config.py"), "-s", "0", "--exp-name", str(exp),
                   "--max-env-step", "8000", "--no-progress", cwd=tmp_path, extra_pythonpath=[str(TUTORIAL)])
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    result = json.loads((exp / "result.json").read_text())
    assert result["train_iter"] > 0
    # One-step DQN solves CartPole in about a thousand env steps (760-2808 for seeds 0-7); 8000 leaves a margin.
    assert result["stop"] and result["eval_return"] >= 195, result
    # The page says the checkpoints hold the target network and the optimizer next to the model.
    state = torch.load(exp / "ckpt" / "ckpt_best.pth.tar", weights_only=True)
    assert state["policy_type"] == "my_dqn"
    assert set(state["policy"]) == {"model", "target_model", "optimizer"}
    # ... and that total_config.py keeps import_names, so it runs again (here as an eval config).
    proc = run_cli("-m", "eval", "-c", str(exp / "total_config.py"), "--load-ckpt",
                   str(exp / "ckpt" / "ckpt_best.pth.tar"), "--n-episode", "2", cwd=tmp_path,
                   extra_pythonpath=[str(TUTORIAL)])
    assert proc.returncode == 0 and "[eval]" in proc.stderr, proc.stderr


def test_custom_policy_module_missing_is_the_error_the_page_shows(tmp_path) -> None:
    exp = tmp_path / "exp"
    proc = run_cli("-m", "serial", "-c", str(TUTORIAL / "my_config.py"), "--exp-name", str(exp),
                   "--set", "policy.import_names=['my_polcy']", cwd=tmp_path)
    line = _error_line(proc)
    assert str(TUTORIAL) in line and str(tmp_path) in line  # the config's folder and the working folder
    shown = re.sub(r"PYTHONPATH \([^)]*\)", "PYTHONPATH (...)", line)
    assert shown in (DOCS / "tutorial_custom_policy.md").read_text()
    assert not exp.exists()


def test_custom_policy_passes_the_policy_contract() -> None:
    # In a subprocess, so that my_dqn is not registered in this test process.
    contract = REPO_ROOT / "tests" / "policy" / "test_contract.py"
    script = (
        "import importlib.util, sys\n"
        "import my_policy  # registers my_dqn\n"
        f"spec = importlib.util.spec_from_file_location('contract', {str(contract)!r})\n"
        "contract = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(contract)\n"
        "contract.test_policy_contract('my_dqn', contract.DISCRETE_ENV)\n"
        "contract.test_interrupted_rollout_stores_no_placeholder('my_dqn', contract.DISCRETE_ENV)\n"
        "print('contract ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=str(REPO_ROOT), env=cli_env([str(TUTORIAL)]),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "contract ok" in proc.stdout, proc.stderr


def test_custom_env_trains_through_the_cli(tmp_path) -> None:
    exp = tmp_path / "exp"
    proc = run_cli("-m", "serial", "-c", str(TUTORIAL / "corridor_config.py"), "-s", "0", "--exp-name", str(exp),
                   "--max-env-step", "5000", "--no-progress", cwd=tmp_path, extra_pythonpath=[str(TUTORIAL)])
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    result = json.loads((exp / "result.json").read_text())
    assert result["train_iter"] > 0
    # PPO passes 0.9 within 128-512 env steps for seeds 0-4; an untrained policy gets -0.5 for seed 0.
    assert result["stop"] and result["eval_return"] >= 0.9, result
    total = (exp / "total_config.py").read_text()
    assert "'type': 'corridor'" in total and "'length': 8" in total


def test_custom_env_check_config_rejects_a_bad_length_before_writing(tmp_path) -> None:
    exp = tmp_path / "exp"
    proc = run_cli("-m", "serial", "-c", str(TUTORIAL / "corridor_config.py"), "--exp-name", str(exp),
                   "--set", "env.length=1", cwd=tmp_path, extra_pythonpath=[str(TUTORIAL)])
    line = _error_line(proc)
    assert line == "ding_lite: error: env.length must be at least 2, got 1"
    assert line in (DOCS / "tutorial_custom_env.md").read_text()
    assert not exp.exists()


def test_custom_model_trains_through_the_cli(tmp_path) -> None:
    # no extra PYTHONPATH: my_model is found next to the config file
    exp = tmp_path / "exp"
    proc = run_cli("-m", "serial", "-c", str(TUTORIAL / "my_model_config.py"), "-s", "0", "--exp-name", str(exp),
                   "--max-env-step", "1536", "--no-progress", "--set", "policy.eval.final_episodes=2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    result = json.loads((exp / "result.json").read_text())
    assert result["train_iter"] == 6 * 40  # 6 collects of 10 epochs x 4 minibatches
    state = torch.load(exp / "ckpt" / f"iteration_{result['train_iter']}.pth.tar", weights_only=True)
    assert {k.split(".")[0] for k in state["policy"]["model"]} == {"trunk", "policy_head", "value_head"}
    total = (exp / "total_config.py").read_text()
    assert "'type': 'my_ac'" in total and "'hidden_size': 64" in total and "'obs_shape': 4" in total


def test_custom_policy_page_counts_train_iterations_as_gradient_steps() -> None:
    # The on-policy note once said "one collect is one train iteration", which PPO contradicts: the learner advances
    # train_iter by the number of log dicts _forward_learn returns (40 per collect for PPO's 10 epochs x 4 batches).
    text = " ".join((DOCS / "tutorial_custom_policy.md").read_text().split())
    assert "one collect is one train iteration" not in text
    assert "advances by the number of log dicts" in text
    concepts = " ".join((DOCS / "concepts.md").read_text().split())  # the train loop's summary said it too
    assert "one train iteration is one collect" not in concepts
    assert "a train iteration is one gradient step for every policy" in concepts
