"""Connect-four tactics of a trained DQN run, checkpoint by checkpoint: in positions the learner never trained on
(random games), how often its greedy move takes an immediate win, and how often it blocks the opponent's single
immediate win; with the mean Q-value of the winning (blocking) column against the best other one.

The positions come from games in which both sides play a random legal column, except that a side facing a single
threat blocks it half the time (so the games last); every position where the mover can win now goes to the win set,
every position with exactly one opposing threat and no win of its own to the block set. A winning move's value is
+1 whatever the opponent (the game ends), so ``Q(win)`` far below 1 means the network has not learnt to see a win
on a board it has not met.

    python benchmarks/connect_four_tactics.py RUN_DIR [--set KEY=VALUE ...] [--positions 400]

RUN_DIR is a ``-m selfplay`` run of ``connect_four_dqn_config.py`` (its ``ckpt/iteration_*.pth.tar`` are read);
``--set`` repeats the run's overrides, so the model is built as it was trained.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ding_lite.build import build, load_config  # noqa: E402
from ding_lite.utils.checkpoint import load_checkpoint  # noqa: E402
from dizoo.board_games.connect_four.envs.heuristic import _winning_columns  # noqa: E402
from dizoo.board_games.connect_four.envs.planes import landing_plane  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "dizoo/board_games/connect_four/config/connect_four_dqn_config.py"
Position = tuple[np.ndarray, list[int], np.ndarray]  # board (mover's view), the winning / blocking columns, legal


def positions(n: int, seed: int = 0) -> tuple[list[Position], list[Position]]:
    """``n`` win positions and ``n`` block positions from random games (see the module docstring)."""
    rng = np.random.default_rng(seed)
    wins: list[Position] = []
    blocks: list[Position] = []
    while len(wins) < n or len(blocks) < n:
        board = np.zeros((6, 7, 2), np.int8)  # plane p: player p's pieces
        for ply in range(42):
            mover = ply % 2
            occupied = board.any(-1)
            legal = np.flatnonzero(~occupied[0])
            view = board if mover == 0 else board[..., ::-1]  # PettingZoo's planes: the mover's first
            win = _winning_columns(view[..., 0] > 0, occupied, legal)
            threat = _winning_columns(view[..., 1] > 0, occupied, legal)
            if win:
                if len(wins) < n:
                    wins.append((view.copy(), win, legal))
                break
            if len(threat) == 1 and len(blocks) < n:
                blocks.append((view.copy(), threat, legal))
            col = int(rng.choice(threat if threat and rng.random() < 0.5 else legal))
            board[int(np.flatnonzero(~occupied[:, col])[-1]), col, mover] = 1
    return wins, blocks


def tactics(model: torch.nn.Module, sets: list[list[Position]], planes: bool) -> dict[str, float]:
    """Share of ``sets[0]`` (wins) and ``sets[1]`` (blocks) where the greedy legal column is the right one, and the
    mean Q of the right column against the best other legal one."""
    out: dict[str, float] = {}
    for name, group in zip(("win", "block"), sets, strict=True):
        boards = np.stack([np.concatenate([b, landing_plane(b)[..., None]], -1) if planes else b for b, _, _ in group])
        with torch.no_grad():
            q = model(torch.as_tensor(boards, dtype=torch.float32))["q_value"].numpy()
        right = [float(q[i, cols].max()) for i, (_, cols, _) in enumerate(group)]
        other = [float(max(q[i, c] for c in legal if c not in cols)) for i, (_, cols, legal) in enumerate(group)
                 if len(legal) > len(cols)]
        hit = [int(legal[int(np.argmax(q[i, legal]))]) in cols for i, (_, cols, legal) in enumerate(group)]
        out[f"{name}_played"] = round(float(np.mean(hit)), 3)
        out[f"q_{name}"] = round(float(np.mean(right)), 3)
        out[f"q_best_other_{name}"] = round(float(np.mean(other)), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--set", nargs="*", action="extend", default=[], metavar="KEY=VALUE")
    parser.add_argument("--positions", type=int, default=400)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = load_config(str(CONFIG), overrides=tuple(args.set), seed=0)
    planes = "planes" in str(cfg.env.import_path)
    cfg.policy.model.obs_shape = [6, 7, 3 if planes else 2]
    cfg.policy.model.action_shape = 7
    policy = build(cfg, "policy", enable_field=("eval",))
    sets = list(positions(args.positions))
    ckpts = sorted((args.run / "ckpt").glob("iteration_*.pth.tar"),
                   key=lambda p: int(p.name.split("_")[1].split(".")[0]))
    if not ckpts:
        raise SystemExit(f"no ckpt/iteration_*.pth.tar under {args.run}")
    for ckpt in ckpts:
        policy.eval_mode.load_state_dict(load_checkpoint(ckpt)["policy"])
        print(ckpt.name, tactics(policy.model, sets, planes), flush=True)


if __name__ == "__main__":
    main()
