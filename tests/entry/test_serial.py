"""The serial pipeline through the CLI (ding_lite/entry/serial.py, ding_lite/cli.py): the experiment folder, the
tensorboard records, the console, eval mode, several seeds."""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, DIZOO_PENDULUM, run_cli

from ding_lite.build import load_config
from ding_lite.utils.checkpoint import load_checkpoint

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")
PENDULUM = str(DIZOO_PENDULUM / "pendulum_ppo_config.py")
SAC = str(DIZOO_PENDULUM / "pendulum_sac_config.py")
TD3 = str(DIZOO_PENDULUM / "pendulum_td3_config.py")
RESULT_KEYS = {"stop", "env_step", "train_iter", "eval_return", "best_eval_return", "wall_seconds"}
EVAL_LINE = re.compile(r"^\[eval\] iter +(\d+) +env_step +(\d+) +return +(-?[\d.]+) ± +([\d.]+) +best +(-?[\d.]+)"
                       r"(  stop value reached)?$")


def read_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Scalars of every tensorboard events file in ``log_dir``: tag -> [(step, value)], parsed from the TFRecord
    framing (u64 length, u32 crc, payload, u32 crc) with tensorboardX's protobuf classes."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def _run(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str):
    cwd = tmp_path_factory.mktemp(name)
    proc = run_cli("-m", "serial", *args, "--exp-name", name, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc, cwd / name


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory):
    return _run(tmp_path_factory, "dqn", "-c", DQN, "-s", "0")


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    return _run(tmp_path_factory, "ppo", "-c", PPO, "-s", "0")


@pytest.mark.parametrize("run", ["dqn_run", "ppo_run"])
def test_experiment_folder(run: str, request: pytest.FixtureRequest) -> None:
    proc, exp = request.getfixturevalue(run)
    assert sorted(p.name for p in exp.iterdir()) == ["ckpt", "log", "result.json", "total_config.py"]
    result = json.loads((exp / "result.json").read_text())
    assert set(result) >= RESULT_KEYS
    assert result["stop"] is True and result["eval_return"] >= 195
    assert result["best_eval_return"] >= result["eval_return"]
    assert result["wall_seconds"] > 0 and result["env_step"] > 0 and result["train_iter"] > 0
    # checkpoints: the best eval's and the final one, both loadable, the final one at the last counters
    ckpts = sorted(p.name for p in (exp / "ckpt").iterdir())
    final_name = f"iteration_{result['train_iter']}"
    # an off-policy run's replay buffer is saved next to the final checkpoint (for --resume)
    buffer_file = [f"{final_name}.buffer.pt"] if run == "dqn_run" else []
    assert ckpts == sorted(["ckpt_best.pth.tar", f"{final_name}.pth.tar", *buffer_file])
    final = load_checkpoint(exp / "ckpt" / f"iteration_{result['train_iter']}.pth.tar")
    assert final["train_iter"] == result["train_iter"]
    assert load_checkpoint(exp / "ckpt" / "ckpt_best.pth.tar")["train_iter"] == result["train_iter"]
    # atomic writes leave no temp files behind
    assert not [p for p in exp.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    # the saved config is a config: strict compile, same counters and settings
    cfg = load_config(exp / "total_config.py", strict=True)
    assert cfg.seed == 0 and cfg.env.stop_value == 195


@pytest.mark.parametrize("run,loss_tag", [("dqn_run", "learn/loss"), ("ppo_run", "learn/total_loss")])
def test_tensorboard_holds_eval_return_losses_and_speed(run: str, loss_tag: str, request) -> None:
    proc, exp = request.getfixturevalue(run)
    result = json.loads((exp / "result.json").read_text())
    scalars = read_scalars(exp / "log")
    evals = scalars["eval/return_mean"]
    assert evals[-1] == (result["env_step"], pytest.approx(result["eval_return"]))
    assert [s for s, _ in evals] == sorted(s for s, _ in evals) and evals[0][0] == 0
    assert scalars[loss_tag], f"no {loss_tag} records"
    assert all(step <= result["train_iter"] for step, _ in scalars[loss_tag])
    # throughput at every log interval (log_show_after_iter train iterations), x axis env steps
    speeds = scalars["speed/env_steps_per_second"]
    assert speeds and all(v > 0 for _, v in speeds) and all(0 < s <= result["env_step"] for s, _ in speeds)
    assert [s for s, _ in scalars["speed/train_samples_per_second"]] == [s for s, _ in speeds]
    assert "eval/return_std" in scalars and "collect/episode_return" in scalars


@pytest.mark.parametrize("run", ["dqn_run", "ppo_run"])
def test_console_is_one_line_per_eval_and_no_warnings(run: str, request) -> None:
    proc, exp = request.getfixturevalue(run)
    result = json.loads((exp / "result.json").read_text())
    # [log] throughput lines come every log.print_every_seconds (a slow machine may print one)
    start, *lines, done = [line for line in proc.stderr.strip().splitlines() if not line.startswith("[log] ")]
    # the opening line says what ends the run (the config's stop value; no budget was given)
    algo = run.split("_")[0]
    assert start.startswith(f"[start] {algo} on cartpole, seed 0; ends at a mean eval return >= 195 ("), start
    assert done.startswith("[done] stop value reached: "), done  # the closing summary line
    assert proc.stdout == ""
    matches = [EVAL_LINE.match(line) for line in lines]
    assert all(matches), f"unexpected console lines:\n{proc.stderr}"
    assert len(lines) == len(read_scalars(exp / "log")["eval/return_mean"])
    last = matches[-1]
    assert (int(last[1]), int(last[2])) == (result["train_iter"], result["env_step"])
    assert last[6] and not any(m[6] for m in matches[:-1])  # "stop value reached" once, at the end
    assert (exp / "log" / "train.log").read_text().count("[eval]") == len(lines)


def test_pendulum_config_runs_clean(tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", "-c", PENDULUM, "--max-env-step", "4096", "--exp-name", "pend", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # [log] throughput lines come every log.print_every_seconds (a slow machine may print one)
    start, *lines, done = [line for line in proc.stderr.strip().splitlines() if not line.startswith("[log] ")]
    assert start.startswith("[start] ppo on pendulum, seed 0; ends at a mean eval return >= -250 (") and \
        start.endswith(") or 4,096 env steps"), start
    assert len(lines) == 2 and all(EVAL_LINE.match(line) for line in lines), proc.stderr  # before and after
    assert done.startswith("[done] budget spent: "), done
    result = json.loads((tmp_path / "pend" / "result.json").read_text())
    # one collect: 4096 samples / 64 per minibatch x 10 epochs = 640 gradient steps
    assert result["env_step"] == 4096 and result["train_iter"] == 640 and result["stop"] is False


def test_eval_mode_reports_mean_and_std_over_n_episodes(dqn_run) -> None:
    proc, exp = dqn_run
    cwd = exp.parent
    out = run_cli("-m", "eval", "-c", DQN, "--exp-name", "dqn", "--n-episode", "7", cwd=cwd)
    assert out.returncode == 0, out.stderr
    (line,) = out.stderr.strip().splitlines()
    match = re.fullmatch(r"\[eval\] dqn/ckpt/ckpt_best.pth.tar: return (-?[\d.]+) ± ([\d.]+) over 7 episodes", line)
    assert match, line
    assert 0 < float(match[1]) <= 500 and float(match[2]) >= 0
    # an explicit checkpoint and the default episode count (env.n_evaluator_episode = 5) on the training run's eval
    # seeds: the greedy policy of the best checkpoint scores what it scored in training
    result = json.loads((exp / "result.json").read_text())
    out = run_cli("-m", "eval", "-c", DQN, "--load-ckpt", "dqn/ckpt/ckpt_best.pth.tar", cwd=cwd)
    assert out.returncode == 0, out.stderr
    match = re.search(r"return (-?[\d.]+) ± ([\d.]+) over 5 episodes$", out.stderr.strip())
    assert match and float(match[1]) == pytest.approx(result["best_eval_return"], abs=0.01), out.stderr
    assert sorted(p.name for p in cwd.iterdir()) == ["dqn"]  # eval writes nothing


def test_several_seeds_make_one_folder_each(tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", "-c", PPO, "-s", "0", "-s", "1", "--max-env-step", "256", "--exp-name", "multi",
                   "--set", "policy.learn.epoch_per_collect=1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["multi_seed0", "multi_seed1"]
    results = [json.loads((tmp_path / f"multi_seed{s}" / "result.json").read_text()) for s in (0, 1)]
    assert [r["seed"] for r in results] == [0, 1]
    assert [load_config(tmp_path / f"multi_seed{s}" / "total_config.py").seed for s in (0, 1)] == [0, 1]
    assert all(r["env_step"] == 256 for r in results)
    first_evals = [line for line in proc.stderr.splitlines() if " iter      0 " in line]
    assert len(first_evals) == 2 and first_evals[0] != first_evals[1]  # the seeds differ


@pytest.mark.parametrize("config", [DQN, PPO], ids=["dqn", "ppo"])
def test_same_seed_same_run(config: str, tmp_path: Path) -> None:
    from ding_lite.entry.serial import serial_pipeline

    runs = [serial_pipeline(config, seed=1, max_env_step=512, exp_dir=tmp_path / str(i), progress=False,
                            overrides=("env.stop_value=100000",)) for i in range(2)]
    for run in runs:
        del run["wall_seconds"], run["exp_dir"]
    assert runs[0] == runs[1]
    curves = [read_scalars(tmp_path / str(i) / "log")["collect/episode_return"] for i in range(2)]
    assert curves[0] == curves[1]


@pytest.mark.parametrize("config", [SAC, TD3], ids=["sac", "td3"])
def test_same_seed_same_run_continuous_off_policy(config: str, tmp_path: Path) -> None:
    """SAC and TD3 draw from RNGs of their own (the uniform warm-up actions before ``learning_starts``, the Gaussian
    sampling or noise after): the same seed repeats the run exactly (eval returns after learning, the losses), another
    seed does not."""
    from ding_lite.entry.serial import serial_pipeline

    overrides = ("env.stop_value=100000", "policy.learning_starts=200", "policy.learn.batch_size=32",
                 "policy.eval.evaluator.eval_freq=100", "policy.eval.final_episodes=0")
    runs = [serial_pipeline(config, seed=seed, max_env_step=400, exp_dir=tmp_path / str(i), progress=False,
                            overrides=overrides) for i, seed in enumerate((1, 1, 2))]
    for run in runs:
        del run["wall_seconds"], run["exp_dir"]
    assert runs[0]["train_iter"] > 0
    assert runs[0] == runs[1]
    assert runs[0]["eval_return"] != runs[2]["eval_return"]
    losses = [read_scalars(tmp_path / str(i) / "log")["learn/critic_loss"] for i in range(2)]
    assert losses[0] and losses[0] == losses[1]
