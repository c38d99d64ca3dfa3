"""The benchmark scripts stay runnable: each imports cleanly against the current package (they are not run in CI)."""
from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unittest

SCRIPTS = sorted((REPO_ROOT / "benchmarks").glob("*.py"))


def load_benchmark(script):
    """The script as a module: its imports and definitions run; the benchmark itself needs ``__main__``."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_script_imports(script) -> None:
    module = load_benchmark(script)
    assert module.__doc__, f"{script.name} needs a docstring saying what it measures and how to run it"


def test_offpolicy_mujoco_counts_a_closing_evaluation_once(tmp_path) -> None:
    """The serial pipeline evaluates at 19,999 env steps and again at 20,000 when its budget ends: one evaluation of
    one policy, which the final return (the mean of the last 3) must not count twice (SB3's side has one there)."""
    from tensorboardX import SummaryWriter

    bench = load_benchmark(REPO_ROOT / "benchmarks" / "offpolicy_mujoco.py")
    writer = SummaryWriter(str(tmp_path / "exp" / "log"))
    for step, ret in ((9_999, 100.0), (19_999, 200.0), (20_000, 210.0)):
        writer.add_scalar("eval/return_mean", ret, step)
        writer.add_scalar("speed/env_steps_per_second", 100.0, step)
    writer.close()
    curve = bench.ding_lite_curve(tmp_path)
    assert [(p["env_step"], p["ret"]) for p in curve] == [(9_999, 100.0), (20_000, 210.0)]


def test_offpolicy_mujoco_dizoo_configs_match_sb3_side() -> None:
    """Each (algo, env) runs its dizoo config against SB3 built from rl-zoo's entry: the hyperparameters the two
    sides share agree (SB3's defaults where rl-zoo's entry sets nothing), Pendulum-v1's rl-zoo configs included."""
    import inspect

    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    from ding_lite.build import load_config

    bench = load_benchmark(REPO_ROOT / "benchmarks" / "offpolicy_mujoco.py")
    sb3_side = load_benchmark(REPO_ROOT / "benchmarks" / "offpolicy_sb3.py")
    assert set(bench.CONFIGS) == {(a, e) for a in ("sac", "td3") for e in ("hopper", "halfcheetah", "pendulum")}
    for (algo, env), path in bench.CONFIGS.items():
        cls = {"sac": SAC, "td3": TD3}[algo]
        sb3 = {k: v.default for k, v in inspect.signature(cls.__init__).parameters.items()}
        sb3.update(sb3_side.sb3_kwargs(algo, sb3_side.ENV_IDS[env], n_act=3))
        policy = load_config(str(path), seed=0).policy
        learn, where = policy.learn, f"{algo} {env}"
        assert (policy.discount_factor, policy.learning_starts) == (sb3["gamma"], sb3["learning_starts"]), where
        assert (learn.batch_size, learn.target_theta) == (sb3["batch_size"], sb3["tau"]), where
        assert policy.other.replay_buffer.replay_buffer_size == sb3["buffer_size"], where
        assert (policy.collect.n_sample, learn.update_per_collect) == (sb3["train_freq"], sb3["gradient_steps"]), where
        net_arch = (sb3["policy_kwargs"] or {}).get("net_arch", [256, 256])  # SB3's SAC and TD3 default
        assert list(policy.model.hidden_size_list) == net_arch, where
        if algo == "sac":
            assert learn.learning_rate_q == learn.learning_rate_policy == learn.learning_rate_alpha == \
                sb3["learning_rate"], where
            assert learn.alpha == 1.0 and sb3["ent_coef"] == "auto", where  # SB3's 'auto' starts at 1.0
        else:
            assert learn.learning_rate_actor == learn.learning_rate_critic == sb3["learning_rate"], where
            assert (learn.actor_update_freq, learn.noise_sigma, learn.noise_range.max) == \
                (sb3["policy_delay"], sb3["target_policy_noise"], sb3["target_noise_clip"]), where
            noise = sb3["action_noise"]
            assert isinstance(noise, NormalActionNoise) and list(noise._sigma) == [policy.collect.noise_sigma] * 3
    assert bench.BUDGETS["pendulum"] == (20_000, 1_000)


def test_offpolicy_mujoco_return_ratio_is_below_one_when_behind() -> None:
    bench = load_benchmark(REPO_ROOT / "benchmarks" / "offpolicy_mujoco.py")
    assert bench.return_ratio(900.0, 1000.0) == pytest.approx(0.9)
    assert bench.return_ratio(-200.0, -150.0) == pytest.approx(0.75)  # Pendulum: costs, ding_lite behind
    assert bench.return_ratio(-150.0, -200.0) == pytest.approx(4 / 3)
    assert bench.return_ratio(10.0, -5.0) != bench.return_ratio(10.0, -5.0)  # nan: no meaningful ratio


def test_offpolicy_mujoco_paired_episodes_start_alike() -> None:
    """The paired evaluation plays both sides from the same starts: an episode from one reset seed repeats."""
    import gymnasium as gym

    bench = load_benchmark(REPO_ROOT / "benchmarks" / "offpolicy_mujoco.py")
    env = gym.make("Pendulum-v1")
    act = lambda obs: -obs[2:3]  # noqa: E731 - a fixed policy
    first, again, other = (bench.episode_return(env, act, seed) for seed in (bench.PAIRED_SEED, bench.PAIRED_SEED,
                                                                              bench.PAIRED_SEED + 1))
    assert first == again != other
