"""The figure kinds of ``ding_lite -m plot`` (ding_lite/plot/figure.py, aggregate.py), each built from short
real runs: axis labels from the table of known metrics, one colour per group in every panel (return, per-variation,
Elo), the per-variation panel's mean, band and named worst variations, and the aggregate figure (normalised scores
against gymnasium's own numbers, rliable's estimators, the stratified bootstrap, performance profiles) with its bad
input. The stop-line rule, dpi and vector output are tested in test_plot.py on its runs."""
from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import scipy.stats
from conftest import DIZOO_CARTPOLE, REPO_ROOT

from ding_lite.entry.plot import plot_pipeline
from ding_lite.entry.selfplay import selfplay_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.errors import PlotInputError
from ding_lite.plot.aggregate import (
    collect_scores,
    interval_estimates,
    performance_profiles,
    stratified_bootstrap,
)
from ding_lite.plot.figure import build_figure, group_colors, metric_label, variation_curves, worst_variations
from ding_lite.plot.runs import collect_groups

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.unittest

DQN = DIZOO_CARTPOLE / "cartpole_dqn_config.py"
PPO = DIZOO_CARTPOLE / "cartpole_ppo_config.py"
MAZE = REPO_ROOT / "dizoo" / "grid" / "maze" / "config" / "maze_ppo_config.py"
CONNECT_FOUR = REPO_ROOT / "dizoo" / "board_games" / "connect_four" / "config" / "connect_four_dqn_config.py"
QUICK = ("policy.eval.final_episodes=0",)


@pytest.fixture(scope="module")
def panel_runs(tmp_path_factory) -> Path:
    """Two maze groups with 6 variations (one collect each, lr differs) and a connect-four self-play run long enough
    for two snapshots (Elo ratings): three groups, three panels."""
    root = tmp_path_factory.mktemp("panels")
    maze = ("env.variations=6", "env.n_evaluator_episode=6", "env.collector_env_num=2", "env.evaluator_env_num=3",
            "policy.collect.n_sample=128", "policy.learn.epoch_per_collect=1", "policy.eval.evaluator.eval_freq=1",
            *QUICK)
    for name, lr in (("maze_a", 1e-3), ("maze_b", 3e-3)):
        serial_pipeline(MAZE, 0, max_env_step=256, exp_dir=root / f"{name}_seed0", progress=False,
                        overrides=(*maze, f"policy.learn.learning_rate={lr}"))
    selfplay_pipeline(CONNECT_FOUR, 0, max_env_step=256, exp_dir=root / "c4_seed0", progress=False,
                      overrides=("env.collector_env_num=4", "env.evaluator_env_num=2", "env.n_evaluator_episode=2",
                                 "policy.collect.n_sample=32", "policy.learn.update_per_collect=1",
                                 "policy.eval.evaluator.eval_freq=100000", "league.snapshot_freq=96",
                                 "league.eval_opponents=['random']", "league.eval_latest=0"))
    return root


def _line_colors(ax, label_part: str) -> set:
    return {line.get_color() for line in ax.get_lines() if label_part in str(line.get_label())}


def test_labels_come_from_the_known_metrics() -> None:
    assert metric_label("eval/return_mean") == "evaluation return (mean over episodes)"
    assert metric_label("learn/total_loss") == "total loss"
    assert metric_label("eval/variation_7/success_rate") == "success rate, variation 7"
    assert metric_label("selfplay/eval_win_rate/random_seat0") == "win rate against random_seat0"
    assert metric_label("speed/train_samples_per_second") == "train samples per second"
    assert metric_label("my_plugin/odd_number") == "my_plugin/odd_number"  # unknown: the tag itself


def test_one_colour_per_group_in_every_panel(panel_runs: Path) -> None:
    groups = collect_groups([str(panel_runs)], [])
    assert [g.label for g in groups] == ["c4", "maze_a", "maze_b"]
    fig = build_figure(groups, x="env_step", metric="eval/return_mean", band="se")
    main, variations, elo = fig.axes
    assert main.get_ylabel() == "evaluation return (mean over episodes)" and main.get_xlabel() == "env steps"
    assert variations.get_title().startswith("return per env variation") and elo.get_title() == \
        "Elo rating (self-play)"
    c4 = [g for g in groups if g.label == "c4"]  # a self-play run's eval return is its win rate
    assert build_figure(c4, x="env_step", metric="eval/return_mean", band="se").axes[0].get_ylabel() == \
        "win rate against random (evaluation)"
    colors = group_colors(groups)
    assert len(set(colors.values())) == 3
    for g in groups:  # each group's lines in each panel it appears in are drawn in its colour only
        assert _line_colors(main, f"{g.label} (") == {colors[g.label]}
    for label in ("maze_a", "maze_b"):
        assert _line_colors(variations, label) == {colors[label]}
    assert _line_colors(elo, "c4") == {colors["c4"]} and elo.get_ylabel() == "Elo rating"
    assert not _line_colors(variations, "c4") and not _line_colors(elo, "maze")


def test_variation_panel_mean_band_and_worst_named(panel_runs: Path) -> None:
    groups = collect_groups([str(panel_runs / "maze_a_seed0")], [])
    keys = {str(v): f"eval/variation_{v}/return_mean" for v in range(6)}
    grid, curves = variation_curves(groups[0], keys, "env_step", "se")
    assert sorted(curves) == [str(v) for v in range(6)]
    run = json.loads((panel_runs / "maze_a_seed0" / "result.json").read_text())
    finals = {k: row["return_mean"] for k, row in run["eval_per_variation"].items()}
    assert {k: c[-1] for k, c in curves.items()} == pytest.approx(finals)  # the last evaluation's table
    worst = worst_variations(curves, 3)
    assert worst == sorted(finals, key=lambda k: (finals[k], list(finals).index(k)))[:3]
    fig = build_figure(groups, x="env_step", metric="eval/return_mean", band="se", worst=3)
    panel = fig.axes[1]
    labels = [line.get_label() for line in panel.get_lines()]
    assert labels == ["maze_a: mean of 6 variations", *(f"maze_a: variation {k}" for k in worst)]
    mean_line = panel.get_lines()[0]
    assert mean_line.get_ydata()[-1] == pytest.approx(np.mean(list(finals.values())))
    assert len(panel.get_legend().get_texts()) == 4  # not one entry per variation


# ---- aggregate over tasks --------------------------------------------------------------------------------------
TASKS = {"CartPole-v1": (), "Acrobot-v1": ("env.type='gymnasium'", "env.env_id='Acrobot-v1'",
                                           "policy.model.obs_shape=None", "policy.model.action_shape=None")}


@pytest.fixture(scope="module")
def task_runs(tmp_path_factory) -> Path:
    """DQN and PPO on CartPole-v1 (dizoo's env type) and Acrobot-v1 (gymnasium's id), seeds 0 and 1, one collect or a
    few hundred env steps each."""
    root = tmp_path_factory.mktemp("tasks")
    for algo, config, budget in (("dqn", DQN, 200), ("ppo", PPO, 256)):
        for task, extra in TASKS.items():
            for seed in (0, 1):
                serial_pipeline(config, seed, max_env_step=budget, exp_dir=root / algo / f"{task}_seed{seed}",
                                progress=False, overrides=(*QUICK, "env.stop_value=None", "env.evaluator_env_num=2",
                                                           "env.n_evaluator_episode=2", *extra))
    return root


def _random_score(env_id: str, episodes: int = 20) -> float:
    """A uniformly random policy, seeded as documented: reset seeds 0..19, the action space seeded with 0."""
    env = gym.make(env_id)
    env.action_space.seed(0)
    returns = []
    for k in range(episodes):
        env.reset(seed=k)
        total, done = 0.0, False
        while not done:
            _, r, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(r)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def test_normalised_scores_against_gymnasium(task_runs: Path) -> None:
    groups = collect_groups([], [f"DQN={task_runs}/dqn", f"PPO={task_runs}/ppo"])
    agg = collect_scores(groups)
    assert agg.tasks == ["Acrobot-v1", "CartPole-v1"]
    for task in agg.tasks:
        norm = agg.norms[task]
        assert norm.high == gym.spec(task).reward_threshold and norm.high_from == "gymnasium reward_threshold"
        assert norm.low == pytest.approx(_random_score(task))
    for label, algo in (("DQN", "dqn"), ("PPO", "ppo")):
        expected = [[(json.loads((task_runs / algo / f"{t}_seed{s}" / "result.json").read_text())["eval_return"]
                      - agg.norms[t].low) / (agg.norms[t].high - agg.norms[t].low) for t in agg.tasks]
                     for s in (0, 1)]
        assert sorted(map(tuple, agg.scores[label])) == pytest.approx(sorted(map(tuple, expected)))
    estimates = interval_estimates(agg, reps=500)
    for label, scores in agg.scores.items():
        point = {m: v[0] for m, v in estimates[label].items()}
        assert point["IQM"] == pytest.approx(scipy.stats.trim_mean(scores.ravel(), 0.25))
        assert point["mean"] == pytest.approx(scores.mean())
        assert point["median"] == pytest.approx(np.median(scores.mean(axis=0)))
        assert point["optimality gap"] == pytest.approx(np.mean(np.maximum(1.0 - scores, 0.0)))
        for m, (p, low, high) in estimates[label].items():
            assert low <= p + 1e-9 and p <= high + 1e-9, (label, m)


def test_stratified_bootstrap_keeps_the_tasks_apart() -> None:
    scores = np.array([[0.0, 10.0], [1.0, 11.0], [2.0, 12.0]])
    rng = np.random.default_rng(0)
    column_means = stratified_bootstrap(scores, lambda s: s.mean(axis=0), 400, rng)
    assert column_means.shape == (400, 2)
    assert column_means[:, 0].min() >= 0.0 and column_means[:, 0].max() <= 2.0  # task 0 never draws task 1's runs
    assert column_means[:, 1].min() >= 10.0
    same = stratified_bootstrap(np.ones((3, 2)), lambda s: s.mean(), 50, rng)
    assert np.all(same == 1.0)  # equal runs: no spread


def test_aggregate_figure_and_table(task_runs: Path, tmp_path: Path) -> None:
    groups = [f"DQN={task_runs}/dqn", f"PPO={task_runs}/ppo"]
    table = plot_pipeline([], tmp_path / "agg.png", groups=groups, aggregate=True, reps=300)
    lines = table.splitlines()
    assert lines[0] == "| group | runs per task | median [95% CI] | IQM [95% CI] | mean [95% CI] | " \
                       "optimality gap [95% CI] |"
    assert lines[2].startswith("| DQN | 2 | ") and lines[3].startswith("| PPO | 2 | ")
    assert "| CartPole-v1 | " in table and "(gymnasium reward_threshold)" in table
    assert (tmp_path / "agg.png").read_bytes()[:4] == b"\x89PNG"
    from ding_lite.plot.aggregate import draw_aggregate, profile_taus

    found = collect_groups([], groups)
    agg = collect_scores(found)
    taus = profile_taus(agg)
    profiles = performance_profiles(agg, taus, reps=200)
    assert profiles["DQN"][0][0] == pytest.approx(np.mean(agg.scores["DQN"] > 0.0))
    fig = draw_aggregate(agg, interval_estimates(agg, reps=200), profiles, taus, group_colors(found))
    *metric_axes, profile_ax = fig.axes
    assert [ax.get_title() for ax in metric_axes] == ["median", "IQM", "mean", "optimality gap"]
    colors = group_colors(found)
    for ax in metric_axes:
        assert [tuple(p.get_facecolor()[:3]) for p in ax.patches] == \
            [pytest.approx(_rgb(colors[label])) for label in ("DQN", "PPO")]
    assert {line.get_label(): line.get_color() for line in profile_ax.get_lines() if line.get_label() in colors} \
        == colors


def _rgb(color: str) -> tuple:
    from matplotlib.colors import to_rgb

    return to_rgb(color)


def test_aggregate_bad_input(task_runs: Path, tmp_path: Path) -> None:
    dqn, ppo = f"DQN={task_runs}/dqn", f"PPO={task_runs}/ppo"
    with pytest.raises(PlotInputError, match=r"group 'DQN' has 2 on Acrobot-v1, 1 on CartPole-v1: give each task "
                                             r"the same number of runs"):
        plot_pipeline([], tmp_path / "a.png", groups=[f"DQN={task_runs}/dqn/Acrobot*,{task_runs}/dqn/CartPole-v1_"
                                                      f"seed0"], aggregate=True)
    with pytest.raises(PlotInputError, match=r"group 'PPO' has no run on Acrobot-v1"):
        plot_pipeline([], tmp_path / "a.png", groups=[dqn, f"PPO={task_runs}/ppo/CartPole*"], aggregate=True)
    with pytest.raises(PlotInputError, match=r"--norm names Pong-v5, which no run is on"):
        plot_pipeline([], tmp_path / "a.png", groups=[dqn, ppo], aggregate=True, norms=["Pong-v5=-21,21"])
    with pytest.raises(PlotInputError, match=r"--norm expects TASK=LOW,HIGH"):
        plot_pipeline([], tmp_path / "a.png", groups=[dqn], aggregate=True, norms=["CartPole-v1=0"])
    assert not list(tmp_path.iterdir())


def test_aggregate_refuses_non_finite_scores_and_norms(task_runs: Path, tmp_path: Path) -> None:
    import shutil

    runs = tmp_path / "dqn"
    shutil.copytree(task_runs / "dqn", runs)
    result = runs / "CartPole-v1_seed1" / "result.json"
    result.write_text(json.dumps({**json.loads(result.read_text()), "eval_return": float("nan")}))
    out = tmp_path / "figs"
    with pytest.raises(PlotInputError, match=r"CartPole-v1_seed1: eval_return in result.json is nan, not a finite "
                                             r"number"):
        plot_pipeline([], out / "a.png", groups=[f"DQN={runs}"], aggregate=True)
    with pytest.raises(PlotInputError, match=r"--norm expects TASK=LOW,HIGH with two different finite numbers, got "
                                             r"'CartPole-v1=nan,475'"):
        plot_pipeline([], out / "a.png", groups=[f"DQN={task_runs}/dqn"], aggregate=True,
                      norms=["CartPole-v1=nan,475"])
    assert not out.exists()
