"""``ding_lite -m plot`` (ding_lite/entry/plot.py, plot_figure.py) on experiment folders made by short real runs:
the figure file, the summary's numbers against each run's result.json, the extra panels, and bad input."""
from __future__ import annotations

import json
import statistics
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, cli_env, run_cli

from ding_lite.entry.plot import plot_pipeline
from ding_lite.plot.figure import PANELS, build_figure, panel_keys, stop_lines_to_draw
from ding_lite.plot.runs import collect_groups, group_summary, seed_group_label

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
STEPS = "env steps to stop value, median [min, max]"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two seeds of CartPole DQN run to the stop value, and a third seed cut by a budget of 300 env steps."""
    root = tmp_path_factory.mktemp("runs")
    proc = run_cli("-m", "serial", "-c", DQN, "-s", "0", "-s", "1", "--exp-name", "dqn", "--no-progress", cwd=root)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("-m", "serial", "-c", DQN, "-s", "2", "--max-env-step", "300", "--exp-name", "short_seed2",
                   "--no-progress", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


def _results(*folders: Path) -> list[dict]:
    return [json.loads((f / "result.json").read_text()) for f in folders]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])  # IHDR width, height


def _rows(table: str) -> dict[str, dict[str, str]]:
    lines = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]
    head = lines[0]
    return {cells[0]: dict(zip(head, cells, strict=True)) for cells in lines[2:]}


def test_cli_figure_and_summary_match_result_json(runs: Path) -> None:
    proc = run_cli("-m", "plot", "dqn_seed0", "dqn_seed1", "-o", "fig.png", cwd=runs)
    assert proc.returncode == 0, proc.stderr
    width, height = _png_size(runs / "fig.png")
    assert (width, height) == (960, 660)  # one panel, 6.4 x 4.4 inches at the default 150 dpi
    row = _rows(proc.stdout)["dqn"]
    results = _results(runs / "dqn_seed0", runs / "dqn_seed1")
    assert all(r["stop"] for r in results)
    steps = [r["env_step"] for r in results]
    assert row["seeds"] == "2" and row["reached"] == "2/2" and row["stop value"] == "195"
    assert row[STEPS] == f"{statistics.median(steps):,.0f} [{min(steps):,}, {max(steps):,}]"
    returns = [r["eval_return"] for r in results]
    assert row["last eval return, mean ± sd"] == f"{statistics.mean(returns):.1f} ± {statistics.stdev(returns):.1f}"
    walls = sorted(r["wall_seconds"] for r in results)
    assert row["wall time (s), median [min, max]"].startswith(f"{statistics.median(walls):.3g}")


def test_summary_numbers_of_a_mixed_group(runs: Path) -> None:
    """A group whose third seed ran out of budget: it counts in the seeds, not in the env steps to the stop value."""
    groups = collect_groups([], [f"mixed={runs}/dqn_seed*,{runs}/short_seed2"])
    assert [g.label for g in groups] == ["mixed"] and len(groups[0].runs) == 3
    summary = group_summary(groups[0])
    results = _results(runs / "dqn_seed0", runs / "dqn_seed1", runs / "short_seed2")
    assert not results[2]["stop"] and results[2]["env_step"] >= 300
    assert summary["solved"] == 2 and summary["finished"] == 3
    assert sorted(summary["steps_to_stop"]) == sorted(r["env_step"] for r in results[:2])
    assert summary["final_return"] == [r["eval_return"] for r in results]
    assert summary["wall_seconds"] == [r["wall_seconds"] for r in results]
    assert summary["stop_values"] == [195]


def test_groups_by_seed_suffix_svg_bootstrap_wall_time(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "fig.svg"
    table = plot_pipeline([runs], out, x="wall_time", band="ci95", title="CartPole")
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()
    assert set(_rows(table)) == {"dqn", "short"}
    assert _rows(table)["short"]["reached"] == "0/1" and _rows(table)["short"][STEPS].startswith("none (> ")
    assert seed_group_label(Path("x/cartpole_ppo_seed12_1")) == "cartpole_ppo"


def test_extra_panels_plug_in_by_tag(tmp_path: Path) -> None:
    """GSL per-variation and self-play Elo tags each add a panel; the folders are written with tensorboardX as the
    pipelines write them (these pipelines do not exist yet: this checks only the hook)."""
    from tensorboardX import SummaryWriter

    for seed in (0, 1):
        writer = SummaryWriter(str(tmp_path / f"gsl_seed{seed}" / "log"))
        for step in (0, 100, 200):
            writer.add_scalar("eval/return_mean", step / 10 + seed, step)
            for variation in (0, 1):
                writer.add_scalar(f"eval/variation_{variation}/return_mean", step / 10 + variation, step)
            writer.add_scalar("selfplay/elo_main", 1000 + step, step)
        writer.close()
    groups = collect_groups([str(tmp_path)], [])
    assert panel_keys(groups, PANELS[0]) == {"0": "eval/variation_0/return_mean", "1": "eval/variation_1/return_mean"}
    assert panel_keys(groups, PANELS[1]) == {"main": "selfplay/elo_main"}
    table = plot_pipeline([tmp_path], tmp_path / "fig.png")
    assert _png_size(tmp_path / "fig.png") == (3 * 960, 660)
    assert _rows(table)["gsl"]["seeds"] == "2 (2 unfinished)"  # no result.json: running, stopped or killed


def test_stop_line_only_within_the_data_range(runs: Path) -> None:
    assert stop_lines_to_draw([195, 1000], 9.0, 190.0) == [195]  # 1000 would squash the curves
    assert stop_lines_to_draw([195], 9.0, 30.0) == [] and stop_lines_to_draw([195], 9.0, 30.0, force=True) == [195]
    solved = collect_groups([str(runs / "dqn_seed0")], [])
    short = collect_groups([str(runs / "short_seed2")], [])
    assert json.loads((runs / "dqn_seed0" / "result.json").read_text())["stop"]

    def stop_lines(groups, force=False):
        ax = build_figure(groups, x="env_step", metric="eval/return_mean", band="se", stop_line=force).axes[0]
        return [line.get_label() for line in ax.get_lines() if str(line.get_label()).startswith("stop value")]

    assert stop_lines(solved) == ["stop value 195"]
    assert max(short[0].runs[0].scalars.series["eval/return_mean"].values) < 100
    assert stop_lines(short) == [] and stop_lines(short, force=True) == ["stop value 195"]


def test_dpi_and_vector_output(runs: Path, tmp_path: Path) -> None:
    plot_pipeline([runs / "short_seed2"], tmp_path / "fig.png", dpi=300)
    assert _png_size(tmp_path / "fig.png") == (1920, 1320)  # 6.4 x 4.4 inches at 300 dpi
    plot_pipeline([runs / "short_seed2"], tmp_path / "fig.svg")
    svg = (tmp_path / "fig.svg").read_text()
    assert "<text" in svg and "evaluation return (mean over episodes)" in svg  # text stays text
    plot_pipeline([runs / "short_seed2"], tmp_path / "fig.pdf")
    pdf = (tmp_path / "fig.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"/FontFile2" in pdf  # TrueType fonts embedded (editable text)


def test_matplotlib_is_imported_only_to_draw(tmp_path: Path) -> None:
    code = ("import sys, ding_lite.cli, ding_lite.entry.plot; "
            "sys.exit('matplotlib' in sys.modules or 'ding_lite.plot.figure' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=cli_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_plot_help_is_its_own(tmp_path: Path) -> None:
    proc = run_cli("-m", "plot", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and "usage: ding_lite -m plot" in proc.stdout and "--metric" in proc.stdout


def _write_file(d: Path) -> list[str]:
    (d / "notes").mkdir()
    (d / "notes" / "a.txt").write_text("x")
    return ["notes"]


BAD = {
    "not an experiment": (_write_file, "not an experiment folder: notes (no log/events.out.tfevents.* or result.json "
                                       "in it or in its sub-folders)"),
    "missing folder": (lambda d: ["nope"], "not an experiment folder: nope (no such folder)"),
    "unknown metric": (lambda d: ["RUNS", "--metric", "eval/retrun_mean"],
                       "no run logged the metric 'eval/retrun_mean'; logged tags: collect/episode_return, "
                       "eval/return_mean, "),
    "empty group": (lambda d: ["--group", "ppo="], "group 'ppo' is empty: --group 'ppo=' names no folder"),
    "group without the metric": (lambda d: ["--group", "a=RUNS/dqn_seed0", "--metric", "learn/q_mean", "--group",
                                            f"b={_empty_run(d)}"], "group 'b' is empty: none of its 1 runs logged"),
    "bad suffix": (lambda d: ["RUNS", "-o", "fig.jpg"], "-o fig.jpg: the figure file must end in one of .png, .svg"),
    "nothing given": (lambda d: [], "nothing to plot: give experiment folders"),
    "non-finite return": (lambda d: ["RUNS/dqn_seed0", _diverged_run(d)], "diverged_seed0: eval/return_mean is not "
                          "finite at 2 of 3 logged points (first nan at step 200); a mean over seeds cannot"),
}


def _diverged_run(d: Path) -> str:
    from ding_lite.utils.events import ScalarWriter

    (d / "diverged_seed0" / "log").mkdir(parents=True)
    writer = ScalarWriter(d / "diverged_seed0" / "log")
    for step, value in ((100, 9.0), (200, float("nan")), (300, float("inf"))):
        writer.add_scalar("eval/return_mean", value, step)
    writer.close()
    return "diverged_seed0"


def _empty_run(d: Path) -> str:
    from tensorboardX import SummaryWriter

    SummaryWriter(str(d / "fresh" / "log")).close()  # a run that has written no scalar yet
    return "fresh"


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_one_line_exit_2_nothing_written(case: str, runs: Path, tmp_path: Path) -> None:
    make, expected = BAD[case]
    argv = [a.replace("RUNS", str(runs)) for a in make(tmp_path)]
    before = set(tmp_path.rglob("*"))
    proc = run_cli("-m", "plot", *argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ding_lite: error: "), proc.stderr
    assert expected in lines[0]
    assert set(tmp_path.rglob("*")) == before and proc.stdout == ""
