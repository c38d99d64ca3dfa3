"""``ding_lite -m selfplay`` from the command line: a run, its resume, and bad input (one line, exit 2, nothing
written)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO_ROOT, run_cli

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")

TESTS = str(REPO_ROOT / "tests")

TAG_CONFIG = """
main_config = dict(
    exp_name="tag",
    env=dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=dict(n_seats=3, episode_len=3{extra}),
             collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=2),
    policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), learn=dict(batch_size=4),
                collect=dict(n_sample=4), eval=dict(evaluator=dict(eval_freq=5)),
                other=dict(replay_buffer=dict(replay_buffer_size=100))),
    league=dict(seats=["learner", "pool", "pool"], snapshot_freq=8, capacity=3, eval_opponents=["random"]),
)
"""


def _config(folder: Path, extra: str = "") -> str:
    (folder / "tag_config.py").write_text(textwrap.dedent(TAG_CONFIG.format(extra=extra)))
    return "tag_config.py"


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _one_line_exit_2(proc, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_run_resume_and_a_snapshot_that_does_not_fit(tmp_path):
    config = _config(tmp_path)
    proc = run_cli("-m", "selfplay", "-c", config, "--max-env-step", "40", "--no-progress", cwd=tmp_path,
                   extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "tag" / "result.json").read_text())
    assert result["league"]["snapshots"][0] == "snapshot_0" and len(result["league"]["snapshots"]) == 3
    assert "elo_learner" in result["league"] and "random" in result["eval_table"]
    saved = torch.load(tmp_path / "tag" / "ckpt" / "iteration_30.pth.tar", weights_only=True)
    assert saved["league"]["snapshots"] == result["league"]["snapshots"]  # the league goes with the checkpoint
    assert list((tmp_path / "tag" / "log").glob("events.out.tfevents.*"))
    proc = run_cli("-m", "selfplay", "-c", config, "--max-env-step", "56", "--resume", "--no-progress",
                   cwd=tmp_path, extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    resumed = json.loads((tmp_path / "tag" / "result.json").read_text())
    assert resumed["env_step"] == 56
    # the pool came back from <exp>/league: the initial snapshot's games go on counting, newer snapshots were added
    assert resumed["league"]["snapshots"][0] == "snapshot_0" and resumed["league"]["snapshots"][-1] == "snapshot_56"
    assert resumed["league"]["payoff"]["snapshot_0"]["games"] >= result["league"]["payoff"]["snapshot_0"]["games"]
    snapshot = tmp_path / "tag" / "league" / "snapshot_0.pth.tar"
    torch.save({"policy": {"model": {"encoder.0.weight": torch.zeros(2, 2)}}}, snapshot)
    before = _files(tmp_path)
    proc = run_cli("-m", "selfplay", "-c", config, "--max-env-step", "64", "--resume", "--no-progress",
                   cwd=tmp_path, extra_pythonpath=[TESTS])
    _one_line_exit_2(proc, "snapshot_0.pth.tar", "does not fit")
    assert _files(tmp_path) == before


def test_resume_restores_the_league_saved_with_its_checkpoint(tmp_path):
    # the last checkpoint is written after iteration 20 (env step 28); the run goes on to env step 40, adding and
    # evicting snapshots, and dies without a final checkpoint: a resume must take the league of iteration 20
    config = _config(tmp_path)
    hooks = ("--set", "policy.learn.learner.hook.save_ckpt_after_run=False", "--set",
             "policy.learn.learner.hook.save_ckpt_after_iter=20")
    proc = run_cli("-m", "selfplay", "-c", config, "--max-env-step", "40", "--no-progress", *hooks, cwd=tmp_path,
                   extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    first = json.loads((tmp_path / "tag" / "result.json").read_text())["league"]
    assert first["snapshots"] == ["snapshot_0", "snapshot_32", "snapshot_40"]  # later than the checkpoint
    proc = run_cli("-m", "selfplay", "-c", config, "--max-env-step", "28", "--resume", "--no-progress", *hooks,
                   cwd=tmp_path, extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    resumed = json.loads((tmp_path / "tag" / "result.json").read_text())["league"]
    assert resumed["snapshots"] == ["snapshot_0", "snapshot_16", "snapshot_24"]  # as at env step 28
    # the checkpoint due at iteration 20 is written at the end of the collect's updates, named by its train_iter
    (ckpt,) = (tmp_path / "tag" / "ckpt").glob("iteration_*.pth.tar")
    saved = torch.load(ckpt, weights_only=True)
    assert saved["env_step"] == 28 and saved["league"]["snapshots"] == resumed["snapshots"]
    assert {k: v["games"] for k, v in resumed["payoff"].items()} == \
        {k: sum(v) for k, v in saved["league"]["payoff"]["counts"].items()}  # no game counted twice
    # the snapshots of the discarded span are gone; the evicted ones the checkpoint lists are there
    assert sorted(p.name for p in (tmp_path / "tag" / "league").iterdir()) == \
        ["snapshot_0.pth.tar", "snapshot_16.pth.tar", "snapshot_24.pth.tar"]


def test_more_seats_than_the_config_assigns(tmp_path):
    proc = run_cli("-m", "selfplay", "-c", _config(tmp_path), "--set", "league.seats=['learner','pool']",
                   cwd=tmp_path, extra_pythonpath=[TESTS])
    _one_line_exit_2(proc, "league.seats", "3 seats")
    assert _files(tmp_path) == {"tag_config.py"}


def test_an_unknown_pool_baseline(tmp_path):
    proc = run_cli("-m", "selfplay", "-c", _config(tmp_path), "--set", "league.baselines=['randon']", "--set",
                   "league.p_baseline=0.5", cwd=tmp_path, extra_pythonpath=[TESTS])
    _one_line_exit_2(proc, "league.baselines", "'randon' (did you mean 'random'?)")
    assert _files(tmp_path) == {"tag_config.py"}


def test_seats_with_different_observation_spaces(tmp_path):
    proc = run_cli("-m", "selfplay", "-c", _config(tmp_path, ", obs_sizes=[3, 4, 3]"), cwd=tmp_path,
                   extra_pythonpath=[TESTS])
    _one_line_exit_2(proc, "seat 'p1'", "one observation space")
    assert _files(tmp_path) == {"tag_config.py"}


def test_a_single_agent_env_is_refused(tmp_path):
    proc = run_cli("-m", "selfplay", "-c", str(REPO_ROOT / "dizoo/classic_control/cartpole/config/"
                                               "cartpole_dqn_config.py"), cwd=tmp_path)
    _one_line_exit_2(proc, "not a multi-agent game")
    assert _files(tmp_path) == set()


def test_parallel_runs_a_selfplay_config_with_actors_holding_their_opponents(tmp_path):
    pytest.importorskip("ray")
    proc = run_cli("-m", "parallel", "-c", _config(tmp_path), "--max-env-step", "48", "--no-progress", "--set",
                   "parallel.num_cpus=2", "--set", "league.baselines=['random']", "--set", "league.p_baseline=0.3",
                   cwd=tmp_path, extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "tag" / "result.json").read_text())
    assert result["mode"] == "parallel" and result["n_collectors"] == 2 and result["env_step"] >= 48
    league = result["league"]
    assert league["snapshots"][0] == "snapshot_0" and len(league["snapshots"]) == 3
    assert sum(row["games"] for row in league["payoff"].values()) > 0  # results came back from the actors
    assert league["baselines"]["random"]["games"] > 0  # the actors drew the pool's baseline by name too



def test_an_actor_keeps_the_weights_of_evicted_snapshots_its_games_still_play():
    # a game drew snapshot_8 under the last view and loads it when its seat first moves; the pool evicted it since
    from types import SimpleNamespace

    from ding_lite.distributed.league import ActorLeague, LeagueView

    roles = np.array([["learner", "snapshot_8"], ["learner", "random"]], dtype=object)
    shell = SimpleNamespace(env=SimpleNamespace(roles=roles),
                            view=LeagueView(["snapshot_0", "snapshot_4", "snapshot_8"], [1.0, 1.0, 1.0],
                                            {"snapshot_0": "r0", "snapshot_4": "r4", "snapshot_8": "r8"}))
    ActorLeague.update(shell, LeagueView(["snapshot_0", "snapshot_12"], [1.0, 1.0],
                                                        {"snapshot_0": "r0", "snapshot_12": "r12"}))
    assert shell.view.names == ["snapshot_0", "snapshot_12"]  # new games draw from the new pool only
    assert shell.view.refs == {"snapshot_0": "r0", "snapshot_8": "r8", "snapshot_12": "r12"}  # 4: no game plays it


SNAKE = str(REPO_ROOT / "dizoo/board_games/snake/config/snake_arena_dqn_config.py")
BAD_LEAGUE_INPUT = {
    "snapshot_freq 0": (["-c", "tag_config.py", "--set", "league.snapshot_freq=0"],
                        "league.snapshot_freq must be at least 1, got 0"),
    "snapshot_freq negative": (["-c", "tag_config.py", "--set", "league.snapshot_freq=-500"],
                               "league.snapshot_freq must be at least 1, got -500"),
    "snapshot_act unknown": (["-c", "tag_config.py", "--set", "league.snapshot_act=stochastic"],
                             "league.snapshot_act must be one of greedy, sample, got 'stochastic'"),
    "eval opponent misspelt": (["-c", SNAKE, "--set", "league.eval_opponents=['snake_carefull']"],
                               "league: unknown player 'snake_carefull' (did you mean 'snake_careful'?)"),
    # before, every evaluation's return was NaN (numpy's RuntimeWarnings) and no best checkpoint was kept (found by
    # the config fuzzer)
    "no eval opponents": (["-c", "tag_config.py", "--set", "league.eval_opponents=[]"],
                          "league.eval_opponents is empty: the eval return is the win rate against the first of them"),
    # before, every later snapshot was evicted at once: the pool held only the initial policy, without a word
    "capacity 1 keeping the initial snapshot": (["-c", "tag_config.py", "--set", "league.capacity=1"],
                                                "league.capacity=1 with league.keep_initial=True keeps only the "
                                                "initial snapshot"),
    "game rejects its kwargs": (["-c", SNAKE, "--set", "env.kwargs.n_snakes=6"],
                                "env.import_path 'dizoo.board_games.snake.envs.snake_arena:snake_arena' could not "
                                "build its game from env.kwargs={'n_snakes': 6, 'size': 11, 'n_food': 3, "
                                "'max_steps': 100, 'food_reward': 0.3}: ValueError: snake arena: n_snakes must be "
                                "2, 3 or 4, got 6"),
}


@pytest.mark.parametrize("case", list(BAD_LEAGUE_INPUT))
def test_bad_league_input_is_one_line_exit_2_nothing_written(tmp_path, case):
    _config(tmp_path)
    args, expected = BAD_LEAGUE_INPUT[case]
    proc = run_cli("-m", "selfplay", *args, "--exp-name", "exp", cwd=tmp_path, extra_pythonpath=[TESTS])
    _one_line_exit_2(proc, expected)
    assert proc.stderr.startswith("ding_lite: error: ") and "Traceback" not in proc.stderr and proc.stdout == ""
    assert _files(tmp_path) == {"tag_config.py"}


def test_eval_of_a_selfplay_run_plays_its_eval_opponents_and_collect_demo_is_refused(tmp_path):
    """The chain after a self-play run: -m eval of its total_config.py and checkpoint plays league.eval_opponents
    (before: refused, 'env 'pettingzoo' has the action space MultiDiscrete([...]) ... wrap the env'); -m collect_demo
    says in one line that demo files are single-agent (before: the same misleading line)."""
    proc = run_cli("-m", "selfplay", "-c", _config(tmp_path), "--max-env-step", "40", "--no-progress", cwd=tmp_path,
                   extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    run = ["-c", "tag/total_config.py", "--load-ckpt", "tag/ckpt/ckpt_best.pth.tar", "--n-episode", "4"]
    proc = run_cli("-m", "eval", *run, cwd=tmp_path, extra_pythonpath=[TESTS])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "over 4 episodes" in out and "[eval] against random: win" in out, out
    proc = run_cli("-m", "collect_demo", *run, cwd=tmp_path, extra_pythonpath=[TESTS])
    _one_line_exit_2(proc, "-m collect_demo rolls out a single-agent env", "'pettingzoo' is a multi-agent game")
