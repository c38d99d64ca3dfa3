"""The run's ``[start]`` line (ding_lite/runtime/train_loop.py start_line) names the stop value the run compares with.
It wrote it with ``:g``, which keeps 6 significant digits: a stop value of 1234567 read ``>= 1.23457e+06`` and
3000.125 read ``>= 3000.12``, thresholds the run does not use."""
from __future__ import annotations

import pytest
from conftest import DIZOO_CARTPOLE, REPO_ROOT

from ding_lite.build import load_config
from ding_lite.runtime.train_loop import start_line

pytestmark = pytest.mark.unittest


@pytest.mark.parametrize(("stop_value", "shown"), [(195, "195"), (0.95, "0.95"), (-1e-3, "-0.001"), (1e6, "1e+06"),
                                                   (1234567, "1234567"), (3000.125, "3000.125")])
def test_the_start_line_shows_the_stop_value_the_run_compares_with(stop_value: float, shown: str) -> None:
    cfg = load_config(str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), overrides=[f"env.stop_value={stop_value!r}"])
    line = start_line(cfg, 0, None, None)
    assert f"ends at a mean eval return >= {shown} (" in line, line
    assert float(shown) == stop_value


@pytest.mark.parametrize(("stop_value", "ends"), [
    # the board-game configs' 2.0 ("never stops early"): no score reaches it, so the line names none
    (2.0, "ends at 64 env steps"),
    (0.9, "ends at a mean score >= 0.9 against tictactoe_minimax (win 1, draw 0.5; 100 games per seat every 1250 "
          "train iters) or 64 env steps")])
def test_a_selfplay_run_names_its_score_rule_not_an_eval_return(tmp_path, capsys, stop_value: float, ends: str) -> None:
    # a self-play run stops on its mean score against the first eval opponent; the line said 'a mean eval return
    # >= 2', a stop that can never happen, for every board-game config
    from ding_lite.cli import main

    config = REPO_ROOT / "dizoo" / "board_games" / "tictactoe" / "config" / "tictactoe_dqn_config.py"
    code = main(["-m", "selfplay", "-c", str(config), "-s", "0", "--max-env-step", "64", "--no-progress",
                 "--exp-name", str(tmp_path / "exp"), "--set", f"env.stop_value={stop_value}",
                 "policy.learn.batch_size=16", "policy.eval.final_episodes=0"])
    first = capsys.readouterr().err.splitlines()[0]
    assert code == 0
    assert first == f"[start] dqn on tictactoe_v3, seed 0; {ends}", first
