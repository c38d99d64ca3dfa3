"""Env workers started with 'spawn' / 'forkserver' are fresh processes: an env type they cannot import or a factory
they cannot unpickle is one ConfigError before any worker starts (not max_retry restarts with a warning each), and a
type registered by a module the config file imported (not named in import_names) runs as under 'fork'. A
'forkserver' worker is the fork server's child: idle, it must not take itself for an orphan."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import wait_gone

from ding_lite.build import build_env_manager
from ding_lite.cli import main
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial"

# a two-number env whose every step ends its episode; {name}: its class name
ENV_CLASS = '''
import gymnasium as gym
import numpy as np

class {name}(gym.Env):
    def __init__(self, cfg):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {{}}

    def step(self, action):
        return np.ones(2, np.float32), 1.0, True, False, {{}}
'''

INLINE_CONFIG = ENV_CLASS.format(name="InlineEnv") + textwrap.dedent('''
    from ding_lite.registry import ENV_REGISTRY
    ENV_REGISTRY.register("fresh_process_inline")(InlineEnv)

    main_config = dict(
        env=dict(type="fresh_process_inline", collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1,
                 manager=dict(type="subprocess", context="spawn")),
        policy=dict(type="dqn"),
    )
''')


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_env_type_defined_in_the_config_file_is_one_line_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture, context: str) -> None:
    config = tmp_path / "inline_config.py"
    config.write_text(INLINE_CONFIG)
    exp = tmp_path / "exp"
    code = main(["-c", str(config), "--max-env-step", "512", "--exp-name", str(exp), "--no-progress",
                 "--set", f"env.manager.context={context}"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "warning" not in err, err
    assert f"env.manager.context='{context}'" in err and "'fresh_process_inline'" in err
    assert "inline_config.py" in err and "env.import_names" in err
    assert not exp.exists()


def test_unpicklable_env_setting_is_named(tmp_path: Path) -> None:
    env_cfg = dict(type="gymnasium", env_id="CartPole-v1", kwargs=dict(render_fn=lambda: None),
                   manager=dict(type="subprocess", context="spawn"))
    with pytest.raises(ConfigError, match=r"env\.kwargs\.render_fn cannot be pickled"):
        build_env_manager(env_cfg, 1, 0)


def test_type_registered_by_a_module_the_config_imported_runs_under_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The config file imports the env's module itself and names no import_names: 'fork' workers inherit the
    registration, and a 'spawn' worker imports the registering module first, so both give the same trajectory."""
    monkeypatch.syspath_prepend(str(TUTORIAL))
    monkeypatch.delitem(sys.modules, "corridor_env", raising=False)
    import corridor_env  # noqa: F401  (registers 'corridor', as a config file's own import would)

    env_cfg = dict(type="corridor", length=8, step_penalty=0.01, max_episode_steps=50)
    actions = np.array([[1], [0], [1], [1], [1], [1], [1], [1]])
    runs = []
    for manager in (dict(type="base"), dict(type="subprocess", context="spawn")):
        with build_env_manager({**env_cfg, "manager": manager}, 1, 3) as env:
            rows = [env.reset().copy()]
            rows += [env.step(a).next_obs.copy() for a in actions]
            runs.append(np.stack(rows))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_type_registered_by_another_module_than_its_class_runs_under_spawn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin module registers a class defined in another module (``ENV_REGISTRY.register(name)(LibEnv)``): the
    spawned worker must import the module that registered it, not only the class's own (which registers nothing):
    before, each worker raised UnknownTypeError and was restarted max_retry times, a warning each."""
    lib = tmp_path / "fresh_lib_pkg"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "core.py").write_text(ENV_CLASS.format(name="CoreEnv"))
    (lib / "plugin.py").write_text("from ding_lite.registry import ENV_REGISTRY\n"
                                   "from fresh_lib_pkg.core import CoreEnv\n"
                                   "ENV_REGISTRY.register('fresh_process_other_module')(CoreEnv)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    import fresh_lib_pkg.plugin  # noqa: F401  (as the config file's own import would)

    env_cfg = dict(type="fresh_process_other_module",
                   manager=dict(type="subprocess", context="spawn", max_retry=1))
    with build_env_manager(env_cfg, 1, 0) as env:
        env.reset()
        np.testing.assert_array_equal(env.step(np.array([1])).next_obs, np.ones((1, 2), np.float32))
        assert env.restart_count == 0


def test_an_idle_forkserver_worker_stays_and_steps_as_base() -> None:
    """A forkserver worker idle for longer than its orphan check (0.5 s: an evaluator's envs while the learner
    trains) used to compare its parent, the fork server, with the main process's pid, leave, and be restarted with
    another seed: a warning per restart and other numbers than 'fork'."""
    cartpole = dict(type="gymnasium", env_id="CartPole-v1")
    runs = []
    for manager in (dict(type="base"), dict(type="subprocess", context="forkserver")):
        with build_env_manager({**cartpole, "manager": manager}, 1, 0) as env:
            rows = [env.reset().copy()]
            time.sleep(1.2)
            rows += [env.step(np.array([a])).next_obs.copy() for a in (0, 1, 1)]
            assert env.restart_count == 0
            runs.append(np.stack(rows))
    np.testing.assert_array_equal(runs[0], runs[1])


ORPHAN_SCRIPT = textwrap.dedent("""
    import os, signal
    import numpy as np
    from ding_lite.build import build_env_manager
    env = build_env_manager(dict(type="gymnasium", env_id="CartPole-v1",
                                 manager=dict(type="subprocess", context="forkserver")), 2, 0)
    env.reset()
    env.step(np.zeros(2, dtype=np.int64))
    print(" ".join(map(str, env.worker_pids())), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_forkserver_workers_end_when_the_main_process_is_killed(repo_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", ORPHAN_SCRIPT], capture_output=True, text=True, timeout=60,
                          cwd=str(repo_root), env={**os.environ, "PYTHONPATH": str(repo_root)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2, proc.stderr
    assert wait_gone(pids) == []


def test_a_gymnasium_id_registered_only_in_the_main_process_stops_at_once_under_spawn() -> None:
    """gymnasium.register in the config file itself: a spawned worker does not know the id. A setting no new worker
    would resolve is one error at the first reset, not max_retry restarts with a warning each."""
    import gymnasium as gym

    from ding_lite.errors import EnvError

    env_id = "FreshProcessCartPole-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv")
    env_cfg = dict(type="gymnasium", env_id=env_id, manager=dict(type="subprocess", context="spawn", max_retry=1))
    with build_env_manager(env_cfg, 1, 0) as env:
        with pytest.raises(EnvError, match=rf"env 0 cannot be built in its worker process: .*'{env_id}'.*"
                                           r"env\.import_names"):
            env.reset()
        assert env.restart_count == 0
