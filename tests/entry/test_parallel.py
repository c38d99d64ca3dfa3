"""Parallel pipeline (ding_lite/entry/parallel*.py): actor shells without Ray, config section, the actor factory's
failure budget on a fake Ray, Ray missing, learning on a shared local Ray, a dead collector and evaluator replaced
mid-run, collectors dying every few batches or at once, env restarts inside the evaluator actor. Ray starts slowly,
so the in-process runs share one local instance (the runs as processes: test_parallel_processes.py)."""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ding_lite.build import build, fill_model_shapes_from_env, load_config
from ding_lite.data.buffer import UniformBuffer
from ding_lite.distributed.actors import CollectorShell, EvaluatorShell
from ding_lite.distributed.collection import COUNTS_ENTRY
from ding_lite.distributed.remote import ActorFactory
from ding_lite.entry.parallel import PARALLEL_CONFIG, check_parallel_config, parallel_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.errors import ConfigError, WorkerError
from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint
from ding_lite.utils.events import read_scalars
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.seed import SeedPlan

from conftest import DIZOO_CARTPOLE, REPO_ROOT, run_cli  # isort: skip (tests/ helpers)

DQN_CONFIG = DIZOO_CARTPOLE / "cartpole_dqn_config.py"
PPO_CONFIG = DIZOO_CARTPOLE / "cartpole_ppo_config.py"


# ---- without Ray -----------------------------------------------------------------------------------------------
@pytest.mark.unittest
def test_parallel_section_is_declared_and_checked(capsys):
    cfg = load_config(DQN_CONFIG)
    assert dict(cfg.parallel) == PARALLEL_CONFIG  # every config carries the section, defaults as declared
    cfg = load_config(DQN_CONFIG, overrides=["parallel.n_collectors=3"])
    assert cfg.parallel.n_collectors == 3
    with pytest.raises(ConfigError, match="parallel.n_collectors"):
        load_config(DQN_CONFIG, overrides=["parallel.n_collectors='two'"])
    setup_console_logging()  # warnings go to stderr, whatever other tests did to the logger
    load_config(DQN_CONFIG, overrides=["parallel.n_collector=3"])
    assert "did you mean 'parallel.n_collectors'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"parallel.n_collectors must be at least 1, got 0"):
        check_parallel_config({**PARALLEL_CONFIG, "n_collectors": 0})
    with pytest.raises(ConfigError, match=r"parallel.max_actor_restarts"):
        check_parallel_config({**PARALLEL_CONFIG, "max_actor_restarts": -1})


@pytest.mark.unittest
def test_actor_shells_build_from_the_config_and_load_versioned_weights():
    cfg = load_config(DQN_CONFIG, seed=3)
    fill_model_shapes_from_env(cfg)
    learner_policy = build(cfg, "policy", enable_field=["learn"])
    weights = learner_policy.collect_mode.state_dict()
    collector = CollectorShell(cfg, seed=3)
    try:
        out = collector.collect(weights, 7, n_sample=16, train_iter=7, env_step=500)
        assert out.weights_version == 7 and out.env_steps == 16 and len(out.samples["obs"]) == 16
        assert out.load_seconds > 0 and out.seconds > 0
        assert collector.env_steps() == 516  # the run's global count goes on from what the driver sent
        again = collector.collect(None, 7, n_sample=8, train_iter=9, env_step=516)  # same version: nothing sent
        assert again.load_seconds == 0.0 and again.weights_version == 7
        with pytest.raises(RuntimeError, match="driver assumed 8"):
            collector.collect(None, 8, n_sample=8, train_iter=9, env_step=524)
        for name, value in collector._mode.state_dict()["model"].items():
            assert np.array_equal(value.numpy(), weights["model"][name].numpy())
    finally:
        collector.close()
    evaluator = EvaluatorShell(cfg, seed=3)
    try:
        result, env_restarts = evaluator.eval(weights, 7, train_iter=7, env_step=516)
        assert len(result.returns) == cfg.env.n_evaluator_episode and result.train_iter == 7
        assert env_restarts == 0
        assert np.array_equal(evaluator.eval(None, 7, 7, 516)[0].returns, result.returns)  # same seeds every time
    finally:
        evaluator.close()


@pytest.mark.unittest
def test_parallel_mode_without_ray_says_how_to_install_it(tmp_path):
    fake = tmp_path / "no_ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    proc = run_cli("-m", "parallel", "-c", str(DQN_CONFIG), cwd=tmp_path, extra_pythonpath=[str(fake.parent)])
    assert proc.returncode == 2, proc.stderr
    assert "needs Ray" in proc.stderr and "pip install 'ding_lite[ray]'" in proc.stderr
    assert "Traceback" not in proc.stderr


class _FakeRay:
    """Just enough of Ray for ActorFactory: actors are handles whose ``ready`` answers from a script of results."""

    class exceptions:  # noqa: N801 (as ray.exceptions)
        class RayError(Exception):
            pass

    def __init__(self, start_results: list[Any]) -> None:
        self.start_results = start_results  # what each new actor's ready() gives: True, or an exception (a death)
        self.killed = 0
        self.seeds: list[int] = []  # the seed each started actor got

    def remote(self, **options: Any) -> Any:
        fake = self

        class ActorClass:
            @staticmethod
            def options(name: str) -> Any:
                class Starter:
                    @staticmethod
                    def remote(cfg: Any, seed: int, folders: tuple[str, ...] = ()) -> Any:
                        fake.seeds.append(seed)
                        result = fake.start_results.pop(0) if fake.start_results else True
                        return type("Handle", (), {"ready": type("M", (), {"remote": staticmethod(lambda: result)})})

                return Starter

        return lambda cls: ActorClass

    def get(self, ref: Any) -> Any:
        if isinstance(ref, Exception):
            raise ref
        return ref

    def kill(self, handle: Any) -> None:
        self.killed += 1


@pytest.mark.unittest
@pytest.mark.parametrize("window,stops_at", [(3600.0, 4), (100.0, None), (None, None)])
def test_actor_factory_bounds_deaths_per_window(window, stops_at):
    """Deaths of one slot every 40 s, a batch in between each time (never 2 in a row): with 3 restarts allowed per
    window, the 4th death within 3600 s stops the run; within 100 s there are at most 3; no window, no limit."""
    cfg = load_config(DQN_CONFIG, overrides=["parallel.max_actor_restarts=1",
                                             f"parallel.actor_restart_window={window}",
                                             "parallel.max_actor_restarts_per_window=3"])
    factory = ActorFactory(_FakeRay([]), cfg, SeedPlan(0))
    now = [0.0]
    factory.clock = lambda: now[0]
    factory.collector(0)
    death = _FakeRay.exceptions.RayError("actor died")
    for k in range(1, 11):
        now[0] = 40.0 * k
        if k == stops_at:
            with pytest.raises(WorkerError, match=r"^the collector0 actor died after 3 restart\(s\) within 3600 s: "
                                                  r"actor died\. .*parallel.max_actor_restarts_per_window \(now 3\)$"):
                factory.replace("collector0", death, env_step=k)
            return
        factory.replace("collector0", death, env_step=k)
        factory.succeeded("collector0")
    assert stops_at is None and factory.restarts == 10


@pytest.mark.unittest
def test_a_replacement_dying_while_it_starts_counts_as_a_death_in_a_row():
    death = _FakeRay.exceptions.RayError("node lost")
    fake = _FakeRay([True, death, death])  # the first actor starts; its next two replacements die while starting
    factory = ActorFactory(fake, load_config(DQN_CONFIG, overrides=["parallel.max_actor_restarts=2"]), SeedPlan(0))
    factory.collector(0)
    with pytest.raises(WorkerError, match=r"collector0 actor died after 2 restart\(s\) in a row: node lost"):
        factory.replace("collector0", _FakeRay.exceptions.RayError("actor died"), env_step=0)
    assert factory.restarts == 2


@pytest.mark.unittest
def test_replacement_collectors_of_a_long_run_never_get_the_evaluators_env_seeds():
    """200 replacements of one slot (8 envs each): the 125th used to seed its envs 1000..1007, the evaluator's."""
    cfg = load_config(DQN_CONFIG, overrides=["parallel.actor_restart_window=None"])
    fake = _FakeRay([])
    factory = ActorFactory(fake, cfg, SeedPlan(0))
    factory.collector(0)
    for _ in range(200):
        factory.replace("collector0", _FakeRay.exceptions.RayError("preempted"), env_step=0)
        factory.succeeded("collector0")
    env_num, eval_num = int(cfg.env.collector_env_num), int(cfg.env.evaluator_env_num)
    envs = [seed + i for seed in fake.seeds for i in range(env_num)]
    assert fake.seeds[:3] == [0, env_num, 2 * env_num] and len(envs) == len(set(envs)) == 201 * env_num
    assert not set(envs) & {SeedPlan(0).evaluator + i for i in range(eval_num)}

# ---- the in-process runs share one local Ray (conftest's local_ray) ---------------------------------------------
@pytest.mark.algotest
@pytest.mark.parametrize("config", [DQN_CONFIG, PPO_CONFIG], ids=["dqn", "ppo"])
def test_dizoo_cartpole_config_solves_unchanged_in_serial_and_parallel(local_ray, config, tmp_path):
    serial = serial_pipeline(config, seed=0, max_env_step=30_000, exp_dir=tmp_path / "serial", progress=False)
    parallel = parallel_pipeline(config, seed=0, max_env_step=30_000, exp_dir=tmp_path / "parallel", progress=False)
    assert serial["stop"] and serial["eval_return"] >= 195, serial
    assert parallel["stop"] and parallel["eval_return"] >= 195, parallel
    assert parallel["n_collectors"] == 2 and parallel["actor_restarts"] == 0
    assert all(speed > 0 for speed in parallel["collector_env_steps_per_second"])
    assert parallel["weight_broadcasts"] >= 1 and parallel["broadcast_ms_mean"] > 0
    if "ppo" in config.name:  # synchronous rounds: every sample comes from the learner's current weights
        assert parallel["policy_lag_max"] == 0
        # one round (a batch of 256 samples from each collector) per update; train_iter counts its gradient steps:
        # 256 samples / 64 per minibatch x 10 epochs = 40 per batch
        assert parallel["batches_received"] * 40 == parallel["train_iter"]
    else:  # asynchronous: batches arrive from older weights, and every batch is accounted
        assert parallel["policy_lag_max"] > 0
        assert parallel["buffer_size"] == parallel["env_step"]
    # the same file compiles to the same config in both modes (each saved config names its own folder)
    assert (tmp_path / "serial" / "total_config.py").read_text().replace(str(tmp_path / "serial"), "EXP") == \
        (tmp_path / "parallel" / "total_config.py").read_text().replace(str(tmp_path / "parallel"), "EXP")
    # both end with the best checkpoint evaluated on fresh seeds (the evaluator actor runs it in parallel mode)
    for result in (serial, parallel):
        assert result["final_eval_episodes"] == 20 and result["final_eval_checkpoint"] == "ckpt/ckpt_best.pth.tar"
        assert result["final_eval_return"] > 0 and result["final_eval_std"] >= 0
    assert json.loads((tmp_path / "parallel" / "result.json").read_text())["mode"] == "parallel"
    assert list((tmp_path / "parallel" / "log").glob("events.out.tfevents.*"))


@pytest.mark.unittest
@pytest.mark.parametrize("name", ["cartpole_acer_config.py", "cartpole_eppo_config.py"])
def test_other_dizoo_cartpole_configs_run_unchanged_in_parallel(local_ray, name, tmp_path):
    """The remaining CartPole configs (DQN and PPO above) also run as they are under -m parallel (tiny budget)."""
    config = DQN_CONFIG.parent / name
    result = parallel_pipeline(config, seed=0, max_env_step=1024, exp_dir=tmp_path / "parallel", progress=False)
    assert result["mode"] == "parallel" and result["n_collectors"] == 2
    assert result["train_iter"] > 0 or result["stop"], result


@pytest.mark.unittest
@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_dizoo_pendulum_sac_and_td3_configs_run_in_parallel(local_ray, algo, tmp_path):
    """SAC and TD3 under -m parallel: random actions until learning starts (the collectors see the run's global env
    step), then the learner's replay schedule on the driver; a short budget past learning_starts."""
    config = REPO_ROOT / "dizoo" / "classic_control" / "pendulum" / "config" / f"pendulum_{algo}_config.py"
    result = parallel_pipeline(config, seed=0, max_env_step=1100, exp_dir=tmp_path / "parallel", progress=False,
                               overrides=("policy.eval.final_episodes=2",))
    assert result["mode"] == "parallel" and result["n_collectors"] == 2 and result["actor_restarts"] == 0
    assert result["env_step"] >= 1100 and result["buffer_size"] == result["env_step"]
    # one update per env step from the collect (8 steps) that reaches the 1,000th step on
    assert 0 < result["train_iter"] <= result["env_step"] - 1000 + 8
    assert np.isfinite(result["final_eval_return"])


@BUFFER_REGISTRY.register("test_recording")
class RecordingBuffer(UniformBuffer):
    """Uniform buffer that records the row count of every column of every push."""

    pushes: list[dict[str, int]] = []

    def push(self, samples):
        RecordingBuffer.pushes.append({k: len(v) for k, v in samples.items()})
        return super().push(samples)


def _kill_when(ray, role: str, min_env_steps: int, killed: list[str]) -> None:
    """Kill the live actor whose name holds ``role`` once the run's collection passed ``min_env_steps`` (as the
    latest collector0 actor reports it)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        names = ray.util.list_named_actors()
        probe = [n for n in names if "/collector0-" in n and n not in killed]
        target = [n for n in names if role in n and n not in killed]
        if probe and target:
            try:
                steps = ray.get(ray.get_actor(probe[-1]).env_steps.remote())
            except (ray.exceptions.RayActorError, ValueError):  # replaced meanwhile: ask the next one
                continue
            if steps >= min_env_steps:
                ray.kill(ray.get_actor(target[0]))
                killed.append(target[0])
                return
        time.sleep(0.05)


@pytest.mark.unittest
def test_dead_collector_and_evaluator_are_replaced_and_no_partial_batch_is_kept(local_ray, tmp_path):
    RecordingBuffer.pushes.clear()
    killed: list[str] = []

    def killer() -> None:
        _kill_when(local_ray, "/collector0-", 300, killed)
        _kill_when(local_ray, "/evaluator-", 600, killed)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    result = parallel_pipeline(DQN_CONFIG, seed=1, max_env_step=1500, exp_dir=tmp_path, progress=False,
                               overrides=("env.stop_value=1e9", "policy.other.replay_buffer.type=test_recording"))
    thread.join(timeout=30)
    assert len(killed) == 2, killed
    assert result["actor_restarts"] == 2 and result["env_step"] >= 1500
    log_text = (tmp_path / "log" / "train.log").read_text()
    assert "collector0 actor died" in log_text and "evaluator actor died" in log_text
    assert log_text.count("replaced by a new actor") == 2
    # every push is one whole batch: n_sample=8 steps of 8 envs, all columns the same length; nothing else went in
    assert RecordingBuffer.pushes and all(set(p.values()) == {8} for p in RecordingBuffer.pushes)
    assert result["buffer_size"] == 8 * len(RecordingBuffer.pushes) == result["env_step"]


def _faulty_dqn(tmp_path: Path, fail_at: int, **parallel: Any) -> dict:
    """A small DQN config on tests/faulty_env.py whose collector actors SIGKILL themselves at their envs' fail_at-th
    step, again in every new actor (the evaluator's envs are sound); one collector of 2 envs x 8 steps per batch."""
    env = dict(type="faulty", import_names=["faulty_env"], mode="kill", fail_at=fail_at,
               only_in_actor="/collector", collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1,
               stop_value=1e9)
    policy = dict(type="dqn", model=dict(encoder_hidden_size_list=[16]), collect=dict(n_sample=16),
                  learn=dict(batch_size=8, update_per_collect=1), eval=dict(evaluator=dict(eval_freq=1000)),
                  other=dict(replay_buffer=dict(type="test_recording")))
    return dict(exp_name=str(tmp_path / "run"), env=env, policy=policy, parallel=dict(n_collectors=1, **parallel))


@pytest.mark.unittest
def test_collector_dying_every_k_batches_runs_far_past_max_actor_restarts(local_ray, tmp_path):
    """Each collector actor delivers 2 batches, then dies in its 3rd (its envs' 20th step): 4 deaths with
    max_actor_restarts=1, each cleared by the next actor's first batch; the run finishes with whole batches only."""
    RecordingBuffer.pushes.clear()
    result = parallel_pipeline(_faulty_dqn(tmp_path, fail_at=20, max_actor_restarts=1), seed=0, max_env_step=160,
                               progress=False)
    assert result["env_step"] >= 160 and result["actor_restarts"] == 4
    assert result["actor_restart_rate"] > 0
    log_text = (tmp_path / "run" / "log" / "train.log").read_text()
    assert "replaced by a new actor (restart 4: 1 in a row of max_actor_restarts=1, 4 within 3600 s" in log_text
    # the batch each actor was collecting when it died never arrived: only whole batches of 2 envs x 8 steps went in
    assert RecordingBuffer.pushes and all(set(p.values()) == {16} for p in RecordingBuffer.pushes)
    assert result["buffer_size"] == 16 * len(RecordingBuffer.pushes) == result["env_step"]


@pytest.mark.unittest
def test_collector_dying_at_start_stops_after_max_actor_restarts(local_ray, tmp_path):
    with pytest.raises(WorkerError) as info:
        parallel_pipeline(_faulty_dqn(tmp_path, fail_at=1, max_actor_restarts=1), seed=0, max_env_step=160,
                          progress=False)
    message = str(info.value)
    assert message.startswith("the collector0 actor died after 1 restart(s) in a row: ") and "\n" not in message
    assert message.endswith("allow more restarts with parallel.max_actor_restarts (now 1)")


@pytest.mark.unittest
def test_an_actor_that_cannot_start_stops_the_run_with_its_error(local_ray, tmp_path, monkeypatch):
    monkeypatch.setenv("DING_LITE_TEST_DRIVER_PID", str(os.getpid()))  # the env builds here, not in an actor
    with pytest.raises(WorkerError, match=r"actor failed to start: .*this env builds only in the test driver"):
        parallel_pipeline(DQN_CONFIG, exp_dir=tmp_path / "run", progress=False,
                          overrides=("env.type=test_driver_only_cartpole",
                                     "env.import_names=['tests.entry.parallel_plugin_env']"))
    assert not (tmp_path / "run").exists()  # stopped before anything was written


@pytest.mark.unittest
def test_env_restarts_inside_the_evaluator_actor_reach_the_run_result(local_ray, tmp_path):
    """The evaluator actor's env manager restarts a worker whose env raised (once, over all processes); the driver
    counts that restart in result.json and in the log's per-manager line, as the serial pipeline does."""
    (tmp_path / "tokens").mkdir()
    cfg = _faulty_dqn(tmp_path, fail_at=5)
    cfg["env"].update(mode="raise", only_in_actor="/evaluator", token_dir=str(tmp_path / "tokens"), n_faults=1,
                      manager=dict(type="subprocess", step_timeout=5.0, reset_timeout=10.0, max_retry=3))
    result = parallel_pipeline(cfg, seed=0, max_env_step=160, progress=False)
    assert result["env_restarts"] == 1 and result["actor_restarts"] == 0
    log_text = (tmp_path / "run" / "log" / "train.log").read_text()
    assert "env worker restarts: 1 (collector 0, evaluator 1)" in log_text


@pytest.mark.unittest
def test_parallel_counts_continue_across_resume(local_ray, tmp_path):
    """A resumed parallel run counts on from its checkpoint's actor restarts, batches and broadcasts (before, each
    segment counted from 0: result.json held the last segment's, parallel/actor_restarts fell back in tensorboard)."""
    cfg = _faulty_dqn(tmp_path, fail_at=20, max_actor_restarts=1)  # each collector actor dies in its 3rd batch
    first = parallel_pipeline(cfg, seed=0, max_env_step=160, progress=False)
    saved = load_checkpoint(latest_checkpoint(tmp_path / "run" / "ckpt"))[COUNTS_ENTRY]
    assert saved["actor_restarts"] == first["actor_restarts"] >= 3 and saved["batches_received"] >= 10
    result = parallel_pipeline(cfg, seed=0, max_env_step=320, resume=True, progress=False)
    assert result["segments"] == 2 and result["env_step"] >= 320
    # 10 more batches of 16 env steps; a new actor every 2 of them
    assert result["batches_received"] >= saved["batches_received"] + 10
    assert result["actor_restarts"] >= saved["actor_restarts"] + 4
    assert result["weight_broadcasts"] > saved["weight_broadcasts"]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["actor_restarts"] == result["actor_restarts"]
    counts = read_scalars(tmp_path / "run" / "log").series["parallel/actor_restarts"].values
    assert counts == sorted(counts) and counts[-1] == result["actor_restarts"], counts


@pytest.mark.unittest
def test_the_learner_merges_the_collector_actors_observation_and_reward_statistics(local_ray, tmp_path):
    """PPO with obs_norm and reward_scale: the actors' statistics reach the learner with the samples, and the
    broadcast brings them back (before, the driver's policy counted as a collecting one, never merged, and every
    broadcast reset the actors' statistics to the untouched ones: count 0 after 512 env steps)."""
    result = parallel_pipeline(PPO_CONFIG, seed=0, max_env_step=512, exp_dir=tmp_path, progress=False,
                               overrides=("policy.model.obs_norm=True", "policy.collect.reward_scale=True",
                                          "policy.collect.n_sample=128", "policy.eval.final_episodes=0",
                                          "env.stop_value=1e9"))
    state = load_checkpoint(latest_checkpoint(tmp_path / "ckpt"))["policy"]
    assert result["env_step"] == 512
    assert float(state["model"]["obs_norm.count"]) == 512  # every collected observation, once
    assert state["reward_scaler"]["count"] >= 512
