"""Bad input to the CLI: each is answered by ONE line on stderr, exit code 2, and nothing written to disk."""
from __future__ import annotations

import re
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from conftest import DIZOO_CARTPOLE, DIZOO_PENDULUM, REPO_ROOT, run_cli

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.utils.checkpoint import save_checkpoint

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
SAC = str(DIZOO_PENDULUM / "pendulum_sac_config.py")


class NotAllowed:
    """A class a weights-only load must refuse; unpickling it would run ``__reduce__``'s call."""

    def __reduce__(self):
        return (Path.touch, (Path("unpickled_marker"),))


def _write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(textwrap.dedent(text))
    return name


def _ppo_checkpoint(folder: Path) -> str:
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="ppo")),
                         overrides=["policy.model.obs_shape=4", "policy.model.action_shape=2",
                                    "policy.model.action_space='discrete'"])
    policy = build(cfg, "policy")
    save_checkpoint(folder / "ppo.pth.tar", {"policy": policy.learn_mode.state_dict(), "train_iter": 1,
                                             "env_step": 8})
    return "ppo.pth.tar"


def _narrow_dqn_checkpoint(folder: Path) -> str:
    """A DQN checkpoint of another net (hidden sizes 32, 32 where the config's DQN has 128, 128, 64)."""
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="dqn")),
                         overrides=["policy.model.obs_shape=4", "policy.model.action_shape=2",
                                    "policy.model.encoder_hidden_size_list=[32, 32]"])
    policy = build(cfg, "policy")
    save_checkpoint(folder / "narrow.pth.tar", {"policy": policy.learn_mode.state_dict(), "train_iter": 1,
                                                "env_step": 8, "policy_type": "dqn"})
    return "narrow.pth.tar"


def _truncated_checkpoint(folder: Path) -> str:
    data = (folder / _ppo_checkpoint(folder)).read_bytes()
    (folder / "truncated.pth.tar").write_bytes(data[: len(data) // 2])  # what a non-atomic write could leave
    return "truncated.pth.tar"


def _raising_plugin_config(folder: Path) -> str:
    """A config whose policy's import_names module raises (not an ImportError) while it is imported."""
    _write(folder, "raising_plugin_xyz.py", "raise RuntimeError('no licence')\n")
    return _write(folder, "cfg.py", """
        main_config = dict(env=dict(type='gymnasium', env_id='CartPole-v1'),
                           policy=dict(type='dqn', import_names=['raising_plugin_xyz']))
        """)


def _keyword_env_config(folder: Path) -> str:
    """A custom env type written gymnasium's way, with keyword settings: built with the env section as its one
    argument, its `size` would silently be that whole section."""
    _write(folder, "keyword_env_xyz.py", """
        import gymnasium as gym
        from ding_lite.registry import ENV_REGISTRY

        @ENV_REGISTRY.register('keyword_env_xyz')
        class KeywordEnv(gym.Env):
            def __init__(self, size=5):
                self.observation_space = gym.spaces.Box(-1.0, 1.0, (size,))
                self.action_space = gym.spaces.Discrete(2)
        """)
    return _write(folder, "cfg.py", """
        main_config = dict(env=dict(type='keyword_env_xyz', import_names=['keyword_env_xyz']),
                           policy=dict(type='dqn'))
        """)


def _custom_class_checkpoint(folder: Path) -> str:
    torch.save({"policy": {"model": NotAllowed()}}, folder / "custom.pth.tar")
    return "custom.pth.tar"


CASES = {
    "no -c": (lambda d: ["-s", "0"], "the following arguments are required: -c/--config (see ding_lite --help)"),
    "unknown mode": (lambda d: ["-m", "seriall", "-c", DQN], "invalid choice: 'seriall'"),
    "seed not an int": (lambda d: ["-c", DQN, "-s", "zero"], "argument -s/--seed: invalid int value: 'zero'"),
    "missing config file": (lambda d: ["-c", "no_such_config.py"], "config file not found: no_such_config.py"),
    "no main_config": (lambda d: ["-c", _write(d, "cfg.py", "cartpole_config = dict(env=dict())\n")],
                       "defines no main_config dict (it defines cartpole_config)"),
    "no policy section": (lambda d: ["-c", _write(d, "cfg.py", """
        main_config = dict(env=dict(type='gymnasium', env_id='CartPole-v1'))
        """)], "config has no 'policy' section"),
    "no policy type": (lambda d: ["-c", _write(d, "cfg.py", """
        main_config = dict(env=dict(type='gymnasium', env_id='CartPole-v1'), policy=dict())
        """)], "policy.type is not set: name a registered policy (known: "),
    "unknown policy type": (lambda d: ["-c", _write(d, "cfg.py", """
        main_config = dict(env=dict(type='gymnasium', env_id='CartPole-v1'), policy=dict())
        create_config = dict(policy=dict(type='dqnn'))
        """)], "unknown policy type 'dqnn' (did you mean 'dqn'?); known policy types: "),
    "unknown env type": (lambda d: ["-c", DQN, "--set", "env.type=cartpol"],
                         "unknown env type 'cartpol' (did you mean 'cartpole'?)"),
    "unknown gymnasium id": (lambda d: ["-c", DQN, "--set", "env.type=gymnasium", "--set", "env.env_id=CartPol-v1"],
                             "unknown gymnasium env id env.env_id='CartPol-v1' (did you mean 'CartPole-v1'?)"),
    "misspelled key under --strict": (lambda d: ["-c", DQN, "--strict", "--set", "policy.learn.batch_sise=32"],
                                      "unknown config key 'policy.learn.batch_sise' (did you mean "
                                      "'policy.learn.batch_size'?)"),
    "wrong value type": (lambda d: ["-c", DQN, "--set", "policy.learn.learning_rate=fast"],
                         "config key 'policy.learn.learning_rate' must be a number, got str 'fast'"),
    "bad --set": (lambda d: ["-c", DQN, "--set", "policy.learn.batch_size"], "--set expects KEY=VALUE"),
    "missing import_names module": (lambda d: ["-c", DQN, "--set", "policy.import_names=['no_such_plugin_xyz']"],
                                    "cannot import module 'no_such_plugin_xyz' listed in policy.import_names"),
    "no envs": (lambda d: ["-c", DQN, "--set", "env.collector_env_num=0"],
                "env.collector_env_num must be in [1, 1000]"),
    "buffer smaller than a batch": (lambda d: ["-c", DQN, "--set", "policy.other.replay_buffer.replay_buffer_size=16"],
                                    "replay_buffer_size=16 is smaller than policy.learn.batch_size=64"),
    "model obs_shape does not fit the env": (lambda d: ["-c", DQN, "--set", "policy.model.obs_shape=3"],
                                            "policy.model.obs_shape=3 does not fit env 'cartpole', whose observations "
                                            "have shape [4]"),
    "model action_shape does not fit the env": (lambda d: ["-c", DQN, "--set", "policy.model.action_shape=3"],
                                                "policy.model.action_shape=3 does not fit env 'cartpole', whose "
                                                "discrete action space has 2 actions"),
    "ppo tanh-bounded mean on Pendulum's [-2, 2]": (  # the greedy torque stayed in [-1, 1] before
        lambda d: ["-c", str(DIZOO_PENDULUM / "pendulum_ppo_config.py"), "--set", "policy.model.bound_type=tanh"],
        "policy.model.bound_type='tanh' keeps the Gaussian's mean in [-1, 1], but env 'pendulum' takes actions in "
        "Box(-2.0, 2.0, (1,), float32): leave bound_type out"),
    "ppo model action_space does not fit the env": (
        lambda d: ["-c", str(DIZOO_CARTPOLE / "cartpole_ppo_config.py"), "--set",
                   "policy.model.action_space=continuous"],
        "policy.model.action_space='continuous' does not fit env 'cartpole', whose action space is discrete"),
    "missing checkpoint": (lambda d: ["-c", DQN, "--load-ckpt", "nope.pth.tar"], "checkpoint not found: nope.pth.tar"),
    "corrupt checkpoint": (lambda d: ["-c", DQN, "--load-ckpt", _write(d, "bad.pth.tar", "not a checkpoint")],
                           "cannot read checkpoint bad.pth.tar: refused by torch.load(weights_only=True)"),
    "truncated checkpoint": (lambda d: ["-c", DQN, "--load-ckpt", _truncated_checkpoint(d)],
                             "cannot read checkpoint truncated.pth.tar"),
    "checkpoint with a pickled class": (lambda d: ["-c", DQN, "--load-ckpt", _custom_class_checkpoint(d)],
                                        "refused by torch.load(weights_only=True): Unsupported global"),
    "checkpoint of another policy": (lambda d: ["-c", DQN, "--load-ckpt", _ppo_checkpoint(d)],
                                     "ppo.pth.tar: checkpoint lacks ['target_model', 'train_steps'] needed by "
                                     "policy 'dqn'"),
    "resume without checkpoint": (
        lambda d: ["-c", DQN, "--resume"],
        "--resume: there is no run to continue in exp (no such folder): leave --resume out to start it"),
    "eval: missing checkpoint": (lambda d: ["-m", "eval", "-c", DQN, "--load-ckpt", "nope.pth.tar"],
                                 "checkpoint not found: nope.pth.tar"),
    "eval: corrupt checkpoint": (lambda d: ["-m", "eval", "-c", DQN, "--load-ckpt", _truncated_checkpoint(d)],
                                 "cannot read checkpoint truncated.pth.tar"),
    "eval: no checkpoint in the experiment": (lambda d: ["-m", "eval", "-c", DQN],
                                              "no checkpoint given (--load-ckpt or policy.load_path) and none found at "
                                              "exp/ckpt/ckpt_best.pth.tar"),
}


# These run as `python -m ding_lite` in a fresh process, one per code path that imports something of its own (the
# argument parser, every registry, gymnasium's env probe, the checkpoint loader, eval mode): the one line on stderr
# is then the whole of stderr, with nothing an import prints. Each costs a Python start with torch, so the other
# cases run in this process (a config compile each).
IN_SUBPROCESS = ("no -c", "unknown policy type", "missing import_names module", "model obs_shape does not fit the env",
                 "checkpoint with a pickled class", "resume without checkpoint", "eval: corrupt checkpoint")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str], object]]:
    """Every subprocess case run once, side by side."""

    folders = {case: tmp_path_factory.mktemp("cli_error") for case in IN_SUBPROCESS}  # mktemp is not thread-safe

    def run(case: str) -> tuple[Path, list[str], object]:
        folder = folders[case]
        args = CASES[case][0](folder)
        before = sorted(p.name for p in folder.iterdir())
        return folder, before, run_cli(*args, "--exp-name", "exp", cwd=folder, timeout=300)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(IN_SUBPROCESS, pool.map(run, IN_SUBPROCESS), strict=True))


@pytest.mark.parametrize("case", IN_SUBPROCESS)
def test_bad_input_one_line_exit_2_nothing_written(case: str, outcomes) -> None:
    folder, before, proc = outcomes[case]
    expected = CASES[case][1]
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert lines[0].startswith("ding_lite: error: "), lines[0]
    assert expected in lines[0], lines[0]
    assert proc.stdout == ""
    assert sorted(p.name for p in folder.iterdir()) == before, "something was written"
    assert not (folder / "exp").exists()
    assert not (folder / "unpickled_marker").exists()  # a refused pickle never ran its code


ACER = str(DIZOO_CARTPOLE / "cartpole_acer_config.py")
DAPG = str(DIZOO_CARTPOLE / "cartpole_ppo_dapg_config.py")
CONNECT_FOUR = str(REPO_ROOT / "dizoo" / "board_games" / "connect_four" / "config" / "connect_four_dqn_config.py")
# Run in this process (main() returns the exit code; an uncaught exception fails the test as a traceback would):
# each costs a config compile, not a Python start. The cases first, then more of the same kinds.
IN_PROCESS = {**{case: CASES[case] for case in CASES if case not in IN_SUBPROCESS},
    "negative learning rate": (lambda d: ["-c", DQN, "--set", "policy.learn.learning_rate=-1"],
                               "policy.learn.learning_rate must be > 0, got -1"),
    "NaN stop value": (lambda d: ["-c", DQN, "--set", "env.stop_value=nan"], "env.stop_value is NaN (nan)"),
    "negative seed": (lambda d: ["-c", DQN, "-s", "-1"],
                      "argument -s/--seed: a seed must be an int from 0 to 4294967295, got -1"),
    "negative env-step budget": (lambda d: ["-c", DQN, "--max-env-step", "-5"],
                                 "argument --max-env-step/--env-step: must be at least 1 (leave it out for no "
                                 "limit), got -5"),
    "negative train-iteration budget": (lambda d: ["-c", DQN, "--max-train-iter", "-1"],
                                        "argument --max-train-iter/--train-iter: must be at least 1 (leave it out "
                                        "for no limit), "
                                        "got -1"),
    "no episodes to evaluate": (lambda d: ["-m", "eval", "-c", DQN, "--n-episode", "0"],
                                "argument --n-episode: must be at least 1, got 0"),
    "config calls sys.exit": (lambda d: ["-c", _write(d, "cfg.py", "import sys\nsys.exit(3)\n")],
                              "config file cfg.py called sys.exit(3) while being read"),
    "checkpoint of another net": (lambda d: ["-c", DQN, "--load-ckpt", _narrow_dqn_checkpoint(d)],
                                  "narrow.pth.tar (a 'dqn' checkpoint): checkpoint entry 'model' does not fit "
                                  "this policy: shape mismatch: encoder.1.weight [32, 4] in the checkpoint, [128, 4] "
                                  "here"),
    "league snapshot at every collect": (lambda d: ["-m", "selfplay", "-c", CONNECT_FOUR, "--set",
                                                    "league.snapshot_freq=0"],
                                         "league.snapshot_freq must be at least 1, got 0"),
    "negative batch size": (lambda d: ["-c", DQN, "--set", "policy.learn.batch_size=-64"],
                            "policy.learn.batch_size must be at least 1, got -64"),
    "epsilon above 1": (lambda d: ["-c", DQN, "--set", "policy.other.eps.start=1.5"],
                        "policy.other.eps.start must be in [0, 1], got 1.5"),
    "negative eval episodes": (lambda d: ["-c", DQN, "--set", "env.n_evaluator_episode=-1"],
                               "env.n_evaluator_episode must be at least 1, got -1"),
    "negative final episodes": (lambda d: ["-c", DQN, "--set", "policy.eval.final_episodes=-1"],
                                "policy.eval.final_episodes must be ≥ 0, got -1"),
    "negative checkpoint interval": (lambda d: ["-c", DQN, "--set",
                                                "policy.learn.learner.hook.save_ckpt_after_iter=-5"],
                                     "policy.learn.learner.hook.save_ckpt_after_iter must be ≥ 0, got -5"),
    "NaN count": (lambda d: ["-c", DQN, "--set", "policy.learn.target_update_freq=nan"],
                  "config key 'policy.learn.target_update_freq' must be an int, got float nan"),
    "NaN learning rate": (lambda d: ["-c", DQN, "--set", "policy.learn.learning_rate=nan"],
                          "policy.learn.learning_rate is NaN (nan)"),
    "infinite learning rate": (lambda d: ["-c", DQN, "--set", "policy.learn.learning_rate=inf"],
                               "policy.learn.learning_rate must be a finite number (> 0), got inf"),
    "word for a stop value": (lambda d: ["-c", DQN, "--set", "env.stop_value=high"],
                              "env.stop_value must be a number, got 'high'"),
    "negative actor learning rate (ACER)": (lambda d: ["-c", ACER, "--set", "policy.learn.learning_rate_actor=-1e-4"],
                                            "policy.learn.learning_rate_actor must be > 0, got -0.0001"),
    "unknown TD loss (DQN)": (lambda d: ["-c", DQN, "--set", "policy.learn.loss_type=l1"],
                              "policy.learn.loss_type must be one of 'huber', 'mse', got 'l1'"),
    "discount factor above 1": (lambda d: ["-c", DQN, "--set", "policy.discount_factor=1.5"],
                                "policy.discount_factor must be a number in [0, 1], got 1.5"),
    "seed beyond numpy's range": (lambda d: ["-c", DQN, "-s", "4294967296"],
                                  "argument -s/--seed: a seed must be an int"),
    "zero episodes": (lambda d: ["-m", "eval", "-c", DQN, "--n-episode", "0"],
                      "argument --n-episode: must be at least 1"),
    "zero video episodes": (lambda d: ["-m", "eval", "-c", DQN, "--video", "v", "--video-episodes", "0"],
                            "argument --video-episodes: must be at least 1"),
    "zero train iterations": (lambda d: ["-c", DQN, "--max-train-iter", "0"],
                              "argument --max-train-iter/--train-iter: must be at least 1"),
    "empty experiment name": (lambda d: ["-c", DQN, "--exp-name", ""], "--exp-name '' names no folder of its own"),
    "current folder as experiment name": (lambda d: ["-c", DQN, "--exp-name", "."], "--exp-name '.' names no folder"),
    "sweep: negative seed": (lambda d: ["-m", "sweep", "-c", DQN, "-s", "-1"],
                             "argument -s/--seed: a seed must be an int from 0 to 4294967295, got -1"),
    "sweep: negative env-step budget": (lambda d: ["-m", "sweep", "-c", DQN, "--max-env-step", "-5"],
                                        "argument --max-env-step: must be at least 1"),
    "sweep: no CPU per trial": (lambda d: ["-m", "sweep", "-c", DQN, "--cpus-per-trial", "0"],
                                "argument --cpus-per-trial: must be a finite number above 0, got 0"),
    "gsl: a budget it would ignore": (lambda d: ["-m", "gsl", "-c", DQN, "--max-env-step", "2000"],
                                      "-m gsl does not read --max-env-step: its phases have budgets of their own"),
    "DQN with a sequence length": (lambda d: ["-c", DQN, "--set", "policy.collect.unroll_len=5"],
                                   "policy.collect.unroll_len=5 must be 1: DQN learns from single n-step "
                                   "transitions (for longer returns set policy.nstep)"),
    "SAC with a sequence length": (lambda d: ["-c", SAC, "--set", "policy.collect.unroll_len=8"],
                                   "policy.collect.unroll_len=8 must be 1: SAC learns from single transitions"),
    "parallel: an empty address": (lambda d: ["-m", "parallel", "-c", DQN, "--address", ""],
                                   "--address '' names no Ray cluster: give 'auto' or HOST:PORT"),
    "serial: a Ray address it would ignore": (lambda d: ["-c", DQN, "--address", "auto"],
                                              "--address joins a Ray cluster for -m parallel and -m gsl; -m serial"),
    "serial: an episode count it would ignore": (lambda d: ["-c", DQN, "--n-episode", "5"],
                                                 "--n-episode is read by -m eval and -m collect_demo, not by -m "
                                                 "serial (a training run's evaluations take env.n_evaluator_episode"),
    "eval: a budget it would ignore": (lambda d: ["-m", "eval", "-c", DQN, "--max-env-step", "100"],
                                       "--max-env-step is read by -m serial, -m parallel and -m selfplay, not by -m "
                                       "eval"),
    "eval: --resume": (lambda d: ["-m", "eval", "-c", DQN, "--resume"],
                       "--resume is read by -m serial, -m parallel, -m selfplay and -m gsl, not by -m eval "
                       "(evaluation and demo collection start from --load-ckpt)"),
    "eval: --no-progress": (lambda d: ["-m", "eval", "-c", DQN, "--no-progress"],
                            "--no-progress is read by -m serial, -m parallel, -m selfplay and -m gsl, not by -m eval"),
    "collect_demo: --no-progress": (lambda d: ["-m", "collect_demo", "-c", DQN, "--no-progress"],
                                    "--no-progress is read by -m serial, -m parallel, -m selfplay and -m gsl, not by"),
    "eval: a demo path": (lambda d: ["-m", "eval", "-c", DQN, "--demo-path", "d.npz"],
                          "--demo-path is read by -m collect_demo, not by -m eval"),
    "eval: video episodes without --video": (lambda d: ["-m", "eval", "-c", DQN, "--video-episodes", "3"],
                                             "--video-episodes counts the episodes recorded with --video DIR"),
    "selfplay: video episodes": (lambda d: ["-m", "selfplay", "-c", DQN, "--video-episodes", "3"],
                                 "--video-episodes is read by -m eval, not by -m selfplay"),
    "a second -m, plot": (lambda d: ["-m", "serial", "-c", DQN, "-m", "plot"],
                          "argument -m/--mode: invalid choice: 'serial' (choose from 'plot')"),
    "--mode shortened, plot": (lambda d: ["-c", DQN, "--mo", "plot"], "unrecognized arguments: -c"),
    "a module in import_names that raises": (lambda d: ["-c", _raising_plugin_config(d)],
                                              "module 'raising_plugin_xyz' listed in policy.import_names failed while "
                                              "being imported: RuntimeError: no licence"),
    "import_names not a list of names": (lambda d: ["-c", DQN, "--set", "policy.import_names=[5]"],
                                         "policy.import_names must be a list of module names"),
    "a type that is not a name": (lambda d: ["-c", DQN, "--set", "policy.type=['dqn']"],
                                  "policy.type must be a string naming a registered policy, got list ['dqn']"),
    "a hidden size that is not whole": (lambda d: ["-c", DQN, "--set", "policy.model.encoder_hidden_size_list=[64.5]"],
                                        "policy.model.encoder_hidden_size_list must be a whole number"),
    "a YAML config": (lambda d: ["-c", _write(d, "cfg.yaml", "env:\n  type: cartpole\n")],
                      "config file cfg.yaml is not Python"),
    "serial: a multi-agent game": (lambda d: ["-c", CONNECT_FOUR],
                                   "env type 'pettingzoo' plays a multi-agent game, and this pipeline trains one "
                                   "agent on a single-agent env: train a game with -m selfplay"),
    "gsl: a multi-agent game": (lambda d: ["-m", "gsl", "-c", CONNECT_FOUR], "plays a multi-agent game"),
    "sweep: a multi-agent game": (lambda d: ["-m", "sweep", "-c", CONNECT_FOUR, "--space",
                                             "policy.learn.learning_rate=[1e-3]"], "plays a multi-agent game"),
    "sweep: a demo file no trial would find": (lambda d: ["-m", "sweep", "-c", DAPG, "--space",
                                                          "policy.learn.demo_coeff=[0.5]"],
                                               "demo file not found: cartpole_ppo_expert/demo.npz"),
    "an env type that takes keywords": (lambda d: ["-c", _keyword_env_config(d)],
                                        "env type 'keyword_env_xyz' (KeywordEnv) is built as KeywordEnv(cfg) with the "
                                        "env section, but its first parameter 'size' defaults to 5"),
    "a --set list of bare words": (lambda d: ["-c", DQN, "--set", "env.import_names=[my_env]"],
                                   "--set env.import_names=[my_env]: [my_env] is not a Python literal"),
    "plot: no bootstrap resample": (lambda d: ["-m", "plot", "runs", "--aggregate", "--reps", "0"],
                                    "--reps 0: give 1 or more bootstrap resamples"),
}


@pytest.mark.parametrize("case", list(IN_PROCESS))
def test_more_bad_input_one_line_exit_2_nothing_written(case: str, tmp_path: Path, monkeypatch, capsys) -> None:
    from ding_lite.cli import main

    monkeypatch.chdir(tmp_path)
    make_args, expected = IN_PROCESS[case]
    argv = make_args(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    if "--exp-name" not in argv and "plot" not in argv:
        argv = [*argv, "--exp-name", "exp"]
    assert main(argv) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and re.match(r"ding_lite( -m \w+)?: error: ", lines[0]), out.err
    assert expected in lines[0], lines[0]
    assert out.out == "" and sorted(p.name for p in tmp_path.iterdir()) == before, "something was written"


def test_an_exp_name_of_none_is_refused_not_a_folder_named_none(tmp_path: Path, monkeypatch, capsys) -> None:
    from ding_lite.cli import main

    monkeypatch.chdir(tmp_path)
    config = _write(tmp_path, "cfg.py", """
        main_config = dict(exp_name=None, env=dict(type='gymnasium', env_id='CartPole-v1'), policy=dict(type='dqn'))
        """)
    assert main(["-c", config, "--max-env-step", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("ding_lite: error: exp_name is None: give the experiment a name (exp_name='cartpole_dqn' in the "
                   "config, or --exp-name cartpole_dqn)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.py"]


def test_a_run_refused_after_its_folder_was_claimed_leaves_no_folder_on_a_path_through_dotdot(
        tmp_path: Path, monkeypatch, capsys) -> None:
    # 'a/../../escape' names <tmp>/escape from <tmp>/work; the budget check (a built policy's) refuses the run after
    # the claim, which must remove what it made: neither the folder nor the 'a' it passed through stays
    from ding_lite.cli import main

    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert main(["-c", DQN, "--set", "exp_name=a/../../escape", "--max-env-step", "10"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "policy.learn.batch_size=64 is above the env-step budget 10" in lines[0], lines
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*")] == [Path("work")]


def test_a_diverged_run_stops_with_one_line_naming_the_loss(tmp_path: Path, monkeypatch, capsys) -> None:
    """CartPole DQN at a learning rate of 1e12: before, it trained to its budget on NaN weights (the argmax of NaN
    Q-values is action 0) and reported returns of 9; now the second update stops it."""
    from ding_lite.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "--max-env-step", "2000", "--no-progress",
            "--exp-name", "exp", "--set", "policy.learn.learning_rate=1e12"]
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # (the log goes there too)
    assert len(errors) == 1 and errors[0].startswith("ding_lite: error: training diverged at train iter "), errors
    assert ": loss is nan" in errors[0] and "; lower the learning rate" in errors[0]  # other scalars between
    assert not list((tmp_path / "exp").glob("ckpt/iteration_*"))  # no final checkpoint of the NaN weights
