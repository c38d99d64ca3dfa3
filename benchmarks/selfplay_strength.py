"""Self-play strength: the dizoo self-play configs trained with ``-m selfplay``, then measured against players the
learner never trained with (or a game-theoretic fact), per seed:

- tic-tac-toe (``tictactoe_dqn_config.py``): against a perfect player (``tictactoe_minimax``: negamax, uniformly
  among its best moves) and the random player, 100 games as first and 100 as second player: passes with no game
  lost (perfect play never loses); also, per seat, every position the learner reaches against any opponent
  (``every_position``: how many, in how many its move is worth less than the best, in how many it turns a draw into
  a loss; ``minimax.blunders``): no losing move on either seat means it loses to nobody;
- connect four (``connect_four_dqn_config.py``): against ``connect_four_one_ply`` (wins when it can, blocks the
  immediate win, else random among moves that hand over no win), 100 games per seat: passes with at least 0.6 wins
  on each seat (the wins against the random player are shown too);
- rock-paper-scissors (``rps_ppo_config.py``, snapshots that sample): the learner's action probabilities after every
  observation: passes with each within 0.05 of 1/3 (the game's only equilibrium);
- snake arena (``snake_arena_dqn_config.py``): 1 learner against 3 ``snake_careful`` snakes, 200 games: passes with
  at least 0.4 wins (an equal player wins 0.25).

Training is the config's own run (``selfplay_pipeline``, its env-step budget below or ``--steps``); the measurement
loads the run's last checkpoint into a fresh evaluator with its own seeds. Runs are resumable: a task and seed whose
``result.json`` exists in ``--out`` is measured again without training. Prints one row per task and seed, and last
``ratio`` (tasks and seeds passed / all).

    python benchmarks/selfplay_strength.py [--tasks tictactoe connect_four rps snake] [--seeds 0 1 2] [--out DIR]
        [--steps N] [--set KEY=VALUE ...] [--config OTHER_CONFIG.py (with one task)]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ding_lite.build import load_config  # noqa: E402
from ding_lite.entry.selfplay import selfplay_pipeline  # noqa: E402
from ding_lite.runtime.selfplay import selfplay_parts  # noqa: E402
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint  # noqa: E402
from dizoo.board_games.tictactoe.envs.minimax import blunders  # noqa: E402

ROOT = Path(__file__).resolve().parents[1] / "dizoo" / "board_games"
EVAL_SEED = 10_000  # seeds the training never used
# evaluations only at the start and the end of training: the measurement is separate, so training time goes to
# training
NO_EVAL = ("policy.eval.evaluator.eval_freq=100000000",)


class Task(NamedTuple):
    config: Path
    env_steps: int  # the training budget
    # (compiled config, checkpoint, seed, folder of the measurement) -> the row, with "pass"
    measure: Callable[[Any, Path, int, Path], dict[str, Any]]
    extra: tuple[str, ...] = ()  # overrides of the training run


def _table(cfg: Any, ckpt: Path, seed: int, opponents: list[str], n_games: int, folder: Path,
           probe: Callable[[Any], Any] | None = None) -> tuple[dict, Any]:
    """Win / draw / loss of the checkpoint's learner against each opponent (per learner seat where seats swap), and
    what ``probe`` finds in the learner's eval mode."""
    cfg.league.eval_opponents = opponents
    cfg.league.eval_latest = 0
    cfg.env.n_evaluator_episode = n_games
    with selfplay_parts(cfg, seed, folder) as parts:
        parts.policy.eval_mode.load_state_dict(load_checkpoint(ckpt)["policy"])
        parts.evaluator.eval()
        return dict(parts.evaluator.table), None if probe is None else probe(parts.policy.eval_mode)


def _tictactoe_blunders(eval_mode: Any) -> dict[str, Any]:
    """The learner's blunders in every position it reaches against any opponent (see ``minimax.blunders``)."""
    def act(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return eval_mode.forward({"observation": obs, "action_mask": mask})["action"]
    return {seat: {k: v for k, v in row.items() if k != "examples" or v} for seat, row in blunders(act).items()}


def measure_tictactoe(cfg: Any, ckpt: Path, seed: int, folder: Path) -> dict[str, Any]:
    table, every_position = _table(cfg, ckpt, seed, ["tictactoe_minimax", "random"], 100, folder,
                                   _tictactoe_blunders)
    losses = {k: int(round(v["loss"] * v["games"])) for k, v in table.items()}
    return {"losses": losses, "pass": sum(losses.values()) == 0,
            "draws_vs_minimax": {k: v["draw"] for k, v in table.items() if k.startswith("tictactoe")},
            "every_position": every_position}


def measure_connect_four(cfg: Any, ckpt: Path, seed: int, folder: Path) -> dict[str, Any]:
    table, _ = _table(cfg, ckpt, seed, ["connect_four_one_ply", "random"], 100, folder)
    wins = {k: v["win"] for k, v in table.items() if k.startswith("connect_four")}
    return {"wins": wins, "pass": min(wins.values()) >= 0.6,
            "wins_vs_random": {k: v["win"] for k, v in table.items() if k.startswith("random")}}


def measure_rps(cfg: Any, ckpt: Path, seed: int, folder: Path) -> dict[str, Any]:
    with selfplay_parts(cfg, seed, folder) as parts:
        parts.policy.eval_mode.load_state_dict(load_checkpoint(ckpt)["policy"])
        with torch.no_grad():  # after each observation: the opponent's last move (rock, paper, scissors, none)
            logits = parts.policy.model.compute_actor(torch.eye(4))["logit"]
        probs = torch.softmax(logits, dim=-1).numpy()
    return {"probs": np.round(probs, 3).tolist(), "max_gap": round(float(np.abs(probs - 1 / 3).max()), 4),
            "pass": bool(np.abs(probs - 1 / 3).max() <= 0.05)}


def measure_snake(cfg: Any, ckpt: Path, seed: int, folder: Path) -> dict[str, Any]:
    table, _ = _table(cfg, ckpt, seed, ["snake_careful"], 200, folder)
    row = table["snake_careful"]
    return {"win": row["win"], "draw": row["draw"], "pass": row["win"] >= 0.4}


TASKS = {
    "tictactoe": Task(ROOT / "tictactoe/config/tictactoe_dqn_config.py", 120_000, measure_tictactoe),
    "connect_four": Task(ROOT / "connect_four/config/connect_four_dqn_config.py", 150_000, measure_connect_four,
                         NO_EVAL),
    "rps": Task(ROOT / "rps/config/rps_ppo_config.py", 48_000, measure_rps),
    "snake": Task(ROOT / "snake/config/snake_arena_dqn_config.py", 60_000, measure_snake, NO_EVAL),
}


def run(name: str, seed: int, out: Path, steps: int | None, overrides: tuple[str, ...] = (),
        config: Path | None = None) -> dict[str, Any]:
    task = TASKS[name] if config is None else TASKS[name]._replace(config=config.resolve())
    extra = (*task.extra, *overrides)
    exp = out / f"{name}_seed{seed}"
    start = time.perf_counter()
    if not (exp / "result.json").is_file():
        resume = latest_checkpoint(exp / "ckpt") is not None if (exp / "ckpt").is_dir() else False
        if exp.exists() and not resume:  # a run killed before its first checkpoint: start this task and seed afresh
            shutil.rmtree(exp)
        selfplay_pipeline(str(task.config), seed=seed, max_env_step=steps or task.env_steps, exp_dir=exp,
                          resume=resume, progress=False, overrides=extra)
    trained = json.loads((exp / "result.json").read_text())
    ckpt = latest_checkpoint(exp / "ckpt")
    assert ckpt is not None, exp
    cfg = load_config(str(task.config), overrides=extra, seed=seed)
    row = task.measure(cfg, ckpt, seed + EVAL_SEED, out / f"{name}_seed{seed}_measure")
    return {"task": name, "seed": seed, "env_step": trained["env_step"],
            "train_seconds": trained.get("wall_seconds"), "measure_seconds": round(time.perf_counter() - start, 1),
            **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None, help="env steps of training (default: each task's)")
    parser.add_argument("--out", type=Path, default=Path("selfplay_strength_runs"))
    parser.add_argument("--set", nargs="*", action="extend", default=[], metavar="KEY=VALUE",
                        help="config overrides for every task run, as the CLI's --set (to measure a variant)")
    parser.add_argument("--config", type=Path, default=None,
                        help="train this config instead of the task's own (one task only), measured as the task is")
    args = parser.parse_args()
    if args.config is not None and len(args.tasks) != 1:
        parser.error("--config replaces one task's config: name that task alone in --tasks")
    torch.set_num_threads(1)
    rows = []
    for name in args.tasks:
        for seed in args.seeds:
            row = run(name, seed, args.out, args.steps, tuple(args.set), args.config)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"{'task':<14}{'seed':>5}{'env steps':>11}{'train s':>9}  {'pass':<6}measured")
    for row in rows:
        shown = {k: v for k, v in row.items() if k not in ("task", "seed", "env_step", "train_seconds",
                                                              "measure_seconds", "pass")}
        print(f"{row['task']:<14}{row['seed']:>5}{row['env_step']:>11,}{row['train_seconds'] or 0:>9.0f}  "
              f"{str(row['pass']):<6}{json.dumps(shown)}")
    print(f"ratio {sum(r['pass'] for r in rows) / len(rows):.2f}")


if __name__ == "__main__":
    main()
