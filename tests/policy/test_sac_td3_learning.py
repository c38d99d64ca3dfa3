"""SAC and TD3 learn Pendulum-v1 (algotest): the dizoo configs reach the stop value -250 within 20,000 env steps for
seeds 0, 1, 2, as they are (float32) and with ``policy.learn.gradient_dtype='bfloat16'`` (the gradient-only products
in bfloat16, as the MuJoCo configs run). The runs go two at a time in CLI processes (one per core); each prints its
env steps and seconds. CI runs seed 0 of each algorithm and dtype; seeds 1 and 2 carry the ``benchmark`` mark
(``pytest -s -m "algotest or benchmark" tests/policy/test_sac_td3_learning.py`` runs all twelve)."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import DIZOO_PENDULUM, run_cli

pytestmark = pytest.mark.algotest

BUDGET = 20_000  # env steps (the acceptance bound); SAC stops after about 4k, TD3 after 7-8k
RUNS = [(algo, seed, dtype) for dtype in ("float32", "bfloat16") for algo in ("sac", "td3") for seed in (0, 1, 2)]
CASES = [pytest.param(algo, seed, dtype, marks=() if seed == 0 else pytest.mark.benchmark,
                      id=f"{algo}-seed{seed}" + ("" if dtype == "float32" else f"-{dtype}"))
         for algo, seed, dtype in RUNS]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[tuple[str, int], dict]:
    folder = tmp_path_factory.mktemp("pendulum")
    selected = {tuple(item.callspec.params[key] for key in ("algo", "seed", "dtype")) for item in request.session.items
                if item.module is request.module}
    runs = [run for run in RUNS if run in selected]  # only the runs this session's tests read

    def run(case: tuple[str, int, str]) -> dict:
        algo, seed, dtype = case
        exp = folder / f"{algo}_s{seed}_{dtype}"
        proc = run_cli("-m", "serial", "-c", str(DIZOO_PENDULUM / f"pendulum_{algo}_config.py"), "-s", str(seed),
                       "--max-env-step", str(BUDGET), "--exp-name", str(exp), "--no-progress",
                       "--set", "policy.eval.final_episodes=0", "--set", f"policy.learn.gradient_dtype={dtype}",
                       cwd=folder, timeout=900)
        assert proc.returncode == 0, proc.stderr
        return json.loads((exp / "result.json").read_text())

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(runs, pool.map(run, runs), strict=True))


@pytest.mark.parametrize("algo,seed,dtype", CASES)
def test_pendulum_reaches_minus_250_within_20k_env_steps(algo: str, seed: int, dtype: str, results,
                                                         record_property) -> None:
    result = results[(algo, seed, dtype)]
    line = (f"{algo} Pendulum-v1 seed {seed} {dtype}: eval {result['eval_return']:.1f} after {result['env_step']} "
            f"env steps, {result['train_iter']} train iterations, {result['wall_seconds']:.1f} s")
    print(line)
    record_property("env_step", result["env_step"])
    assert result["stop"] is True and result["eval_return"] >= -250, line
    assert result["env_step"] <= BUDGET, line
