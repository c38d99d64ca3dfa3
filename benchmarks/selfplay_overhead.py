"""Self-play overhead: collector env steps/s of the 4-snake arena (16 envs) with three frozen opponent snapshots
against the same run with the opponents' actions replaced by a constant (no forward at all), and the peak memory of
16 ``subprocess`` envs with and without the three opponents.

Both speed sides run the same SampleCollector, DQN learner and SelfPlayEnvManager over 16 ``base`` envs; the
opponents' seats are played by three distinct snapshots (one batched forward each per step, printed as forward
calls per step) or by a scripted constant player. Runs alternate; the table shows medians. Memory is measured in
fresh child processes: peak RSS of the main process plus every env worker. The last line is the speed ratio.

    python benchmarks/selfplay_overhead.py [--steps 3000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import numpy as np  # noqa: E402

from ding_lite.build import load_config
from ding_lite.registry import OPPONENT_REGISTRY  # noqa: E402
from ding_lite.runtime.parts import RunParts  # noqa: E402
from ding_lite.runtime.selfplay import selfplay_parts  # noqa: E402
from ding_lite.utils.torch_setup import configure_torch  # noqa: E402

CONFIG = str(Path(__file__).resolve().parents[1] / "dizoo/board_games/snake/config/snake_arena_dqn_config.py")
N_ENV = 16


class ConstantOpponent:
    """Always action 0 (straight on): the opponents' cost without any network."""

    def __init__(self, seed: int = 0) -> None:
        pass

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return np.zeros(len(obs), dtype=np.int64)


if "bench_constant" not in OPPONENT_REGISTRY:
    OPPONENT_REGISTRY.register("bench_constant")(ConstantOpponent)


def build(folder: Path, opponents: str, manager: str) -> RunParts:
    seats = ["learner", "pool", "pool", "pool"] if opponents == "frozen" else ["learner"] + ["bench_constant"] * 3
    cfg = load_config(CONFIG, overrides=[f"env.collector_env_num={N_ENV}", "env.evaluator_env_num=1",
                                         f"env.manager.type='{manager}'", f"league.seats={seats}",
                                         "league.strategy='uniform'", "league.p_latest=0.0"])
    parts = selfplay_parts(cfg, 0, folder)
    for step in range(3):  # three distinct snapshots in the pool
        model = parts.policy.learn_mode.state_dict()["model"]
        parts.game.pool.add({k: v + 0.01 * step for k, v in model.items()}, step)
    return parts


def speed(opponents: str, steps: int) -> tuple[float, float]:
    """Env steps/s of collection and forward calls per step."""
    with tempfile.TemporaryDirectory() as tmp, build(Path(tmp), opponents, "base") as parts:
        collector = parts.collector.inner
        collector.rollout(20)  # warm up
        calls = parts.game.players.forward_calls
        start = time.perf_counter()
        collector.rollout(steps // N_ENV)
        elapsed = time.perf_counter() - start
        return steps / elapsed, (parts.game.players.forward_calls - calls) / (steps // N_ENV)


def peak_memory_child(opponents: str, steps: int) -> None:
    """Run in a child: collect with 16 subprocess envs; print peak RSS (MiB) of this process plus its workers."""
    with tempfile.TemporaryDirectory() as tmp, build(Path(tmp), opponents, "subprocess") as parts:
        parts.collector.inner.rollout(steps // N_ENV)
        workers = parts.collector_env.inner.worker_pids()
        worker_kib = sum(_vm_hwm_kib(pid) for pid in workers)
        own_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"mib": (own_kib + worker_kib) / 1024, "main_mib": own_kib / 1024}))


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def peak_memory(opponents: str, steps: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--memory-child", opponents, "--steps", str(steps)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3000, help="env steps per timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_torch()
    if args.memory_child:
        peak_memory_child(args.memory_child, args.steps)
        return
    runs: dict[str, list[float]] = {"frozen": [], "constant": []}
    calls: dict[str, float] = {}
    for _ in range(args.repeats):
        for side in runs:
            steps_per_s, calls[side] = speed(side, args.steps)
            runs[side].append(steps_per_s)
    memory = {side: peak_memory(side, 640) for side in runs}
    frozen, constant = statistics.median(runs["frozen"]), statistics.median(runs["constant"])
    print(f"{'opponents':<30}{'env steps/s (median)':>22}{'player calls/step':>19}{'peak MiB (16 subproc)':>23}")
    for side, label in (("frozen", "3 frozen snapshots"), ("constant", "constant actions")):
        print(f"{label:<30}{statistics.median(runs[side]):>22,.0f}{calls[side]:>19.2f}{memory[side]['mib']:>23,.0f}")
    print(f"memory ratio {memory['frozen']['mib'] / memory['constant']['mib']:.3f} "
          f"(main process {memory['frozen']['main_mib']:.0f} vs {memory['constant']['main_mib']:.0f} MiB)")
    print(f"ratio {frozen / constant:.2f}")


if __name__ == "__main__":
    main()
