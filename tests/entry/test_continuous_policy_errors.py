"""Bad input at the CLI for SAC and TD3 (a discrete action space, an action space without finite bounds, a budget
that ends before learning starts), for DQN and ACER (a Box action space) and for any replay-based policy (a budget
that ends before the buffer holds one batch). Each is one line on stderr, exit code 2, nothing written."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import DIZOO_PENDULUM, REPO_ROOT, run_cli

pytestmark = pytest.mark.unittest

SAC = str(DIZOO_PENDULUM / "pendulum_sac_config.py")
TD3 = str(DIZOO_PENDULUM / "pendulum_td3_config.py")
CARTPOLE = ["--set", "env.type=gymnasium", "--set", "env.env_id=CartPole-v1"]
UNBOUNDED = ["--set", "env.type=test_unbounded_box", "--set", "env.import_names=['qac_helpers']"]

CASES = {
    "sac on a discrete action space": (
        ["-c", SAC, *CARTPOLE], "policy 'sac' acts in a continuous (Box) action space, but env 'CartPole-v1' has "
                                "Discrete(2): use a policy for discrete actions"),
    "td3 on a discrete action space": (
        ["-m", "parallel", "-c", TD3, *CARTPOLE], "policy 'td3' acts in a continuous (Box) action space"),
    "sac without finite action bounds": (
        ["-c", SAC, *UNBOUNDED], "policy 'sac' rescales its actions to the env's bounds, but env "
                                 "'test_unbounded_box' has an action space without finite bounds"),
    "td3 without finite action bounds": (["-c", TD3, *UNBOUNDED], "has an action space without finite bounds"),
    "sac learning_starts above the budget": (
        ["-c", SAC, "--max-env-step", "500"], "policy.learning_starts=1000 is not below the env-step budget 500 "
                                               "(--max-env-step): the run would end before its first gradient step"),
    "td3 learning_starts above the budget": (
        ["-c", TD3, "--max-env-step", "2000", "--set", "policy.learning_starts=5000"],
        "policy.learning_starts=5000 is not below the env-step budget 2000"),
    "dqn on a Box action space": (
        ["-c", str(REPO_ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_dqn_config.py"),
         "--set", "env.type=gymnasium", "--set", "env.env_id=Pendulum-v1"],
        "policy 'dqn' acts in a discrete action space, but env 'Pendulum-v1' has Box(-2.0, 2.0, (1,), float32): use "
        "a policy for continuous actions (e.g. sac, td3, ppo)"),
    "acer on a Box action space": (
        ["-m", "parallel", "-c",
         str(REPO_ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_acer_config.py"),
         "--set", "env.type=gymnasium", "--set", "env.env_id=Pendulum-v1"],
        "policy 'acer' acts in a discrete action space, but env 'Pendulum-v1' has Box"),
    "dqn batch_size above the budget": (
        ["-c", str(REPO_ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_dqn_config.py"),
         "--max-env-step", "100", "--set", "policy.learn.batch_size=128"],
        "policy.learn.batch_size=128 is above the env-step budget 100 (--max-env-step)"),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folders = {case: tmp_path_factory.mktemp("qac_error") for case in CASES}

    def run(case: str):
        folder = folders[case]
        return folder, run_cli(*CASES[case][0], "--exp-name", "exp", cwd=folder,
                               extra_pythonpath=[str(REPO_ROOT / "tests")])

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(CASES, pool.map(run, CASES), strict=True))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_one_line_exit_2_nothing_written(case: str, outcomes) -> None:
    folder, proc = outcomes[case]
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert lines[0].startswith("ding_lite: error: ") and CASES[case][1] in lines[0], lines[0]
    assert list(Path(folder).iterdir()) == [], "something was written"


def test_parallel_refuses_a_budget_before_learning_starts_before_ray_starts(monkeypatch, tmp_path) -> None:
    # the check needs nothing built: Ray (about 15 s to start) is never reached
    import ding_lite.entry.parallel as parallel
    from ding_lite.errors import ConfigError

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started for a run the config already refuses")

    monkeypatch.setattr(parallel, "ray_session", no_ray)
    with pytest.raises(ConfigError, match=r"policy.learning_starts=5000 is not below the env-step budget 2000"):
        parallel.parallel_pipeline(TD3, max_env_step=2000, exp_dir=tmp_path / "exp",
                                   overrides=("policy.learning_starts=5000",))
    assert list(tmp_path.iterdir()) == []
