"""Shared test helpers: run the CLI in a subprocess, tiny configs, the repo root on PYTHONPATH."""
from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DIZOO_CARTPOLE = REPO_ROOT / "dizoo" / "classic_control" / "cartpole" / "config"
DIZOO_PENDULUM = REPO_ROOT / "dizoo" / "classic_control" / "pendulum" / "config"

# pytest runs with --import-mode=importlib (test files may share names across folders); shared helpers such as
# fake_envs.py are imported from the tests folder, ding_lite and dizoo from this checkout.
for path in (REPO_ROOT, REPO_ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def cli_env(extra_pythonpath: list[str] | None = None) -> dict[str, str]:
    """Environment for a CLI subprocess: this checkout first on PYTHONPATH (plus ``extra_pythonpath``)."""
    env = dict(os.environ)
    paths = [str(REPO_ROOT)] + list(extra_pythonpath or [])
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT: Python installs its KeyboardInterrupt handler
    only where SIGINT is not ignored, and a test command run under ``nohup`` or by a background CI runner ignores
    it (which children inherit); the child gets the default disposition, as a terminal's foreground job has."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def as_plain_user() -> None:
    """``preexec_fn`` for a child that must meet file permissions as an ordinary user does: where the tests run as
    root, the child drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from its capability bounding set
    (kept across exec), so that the kernel refuses it a read-only folder (EACCES) instead of letting root write."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def run_cli(*args: str, cwd: str | Path, extra_pythonpath: list[str] | None = None,
            timeout: float = 300, preexec_fn: Callable[[], None] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m ding_lite ARGS`` in ``cwd``; returns the completed process (text stdout/stderr)."""
    return subprocess.run([sys.executable, "-m", "ding_lite", *args], cwd=str(cwd), env=cli_env(extra_pythonpath),
                          capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn)


def wait_for_line(stream: Any, text: str, timeout: float) -> list[str]:
    """Read a child process's output ``stream`` until a line holds ``text`` (a thread reads on after it); returns the
    lines read so far; an AssertionError with the output's tail if none does within ``timeout`` seconds."""
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        for line in stream:
            lines.append(line)
            if text in line:
                done.set()
        done.set()

    threading.Thread(target=read, daemon=True).start()
    if not done.wait(timeout) or not any(text in line for line in lines):
        raise AssertionError(f"no line with {text!r} within {timeout}s: {''.join(lines)[-3000:]}")
    return lines



@contextlib.contextmanager
def ray_head(cwd: str | Path, timeout: float = 180) -> Iterator[tuple[str, dict[str, str]]]:
    """A `ray start --head` on a free local port with 2 CPUs and a fresh test token (not the user's ~/.ray one: Ray
    >= 2.59 turns token authentication on for `ray start` when a token exists); yields its address and the
    environment a driver needs to join it, and stops it afterwards (without Ray's 30 s drain)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = cli_env()
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0",
               RAY_USAGE_STATS_ENABLED="0")
    ray_cli = Path(sys.executable).with_name("ray")
    head = subprocess.Popen([str(ray_cli) if ray_cli.exists() else "ray", "start", "--head", "--block",
                             "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2",
                             "--include-dashboard", "false", "--disable-usage-stats"],
                            cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_line(head.stdout, "Ray runtime started", timeout=timeout)
        yield f"127.0.0.1:{port}", env
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops the processes it started, no one else's
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()

@pytest.fixture(scope="session")
def local_ray() -> Iterator[Any]:
    """One local Ray (2 CPUs) for every in-process parallel run of the session: Ray starts slowly."""
    ray = pytest.importorskip("ray")
    old = os.environ.get("PYTHONPATH")
    # actor processes import this checkout, and the tests' helper modules (faulty_env) as the test process does
    os.environ["PYTHONPATH"] = cli_env([str(REPO_ROOT / "tests")])["PYTHONPATH"]
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tests run small networks: one torch thread, as the pipelines use (two threads on two busy cores crawl)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch):
    """pytest's ``caplog``, also attached to the ``ding_lite`` logger itself: its console handler turns propagation
    off once a run has set it up in this process, and pytest's own caplog then saw nothing of it, so that a test
    asserting no warning passed whatever was logged, and one expecting a warning failed, by the tests run before it
    in the same worker."""
    logger = logging.getLogger("ding_lite")
    monkeypatch.setattr(logger, "propagate", False)  # each record once, whatever earlier tests did
    logger.addHandler(caplog.handler)
    yield caplog
    logger.removeHandler(caplog.handler)


@pytest.fixture
def warnings_log(caplog: pytest.LogCaptureFixture):
    """Records of the ``ding_lite`` logger (the ``caplog`` above, by the name the tests of warnings use)."""
    return caplog


def process_gone(pid: int) -> bool:
    """True if ``pid`` no longer runs (gone, or a zombie waiting to be reaped by someone else)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pids: list[int], timeout: float = 5.0) -> list[int]:
    """The pids still running after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if not process_gone(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if not process_gone(p)]


TEST_KINDS = ("unittest", "algotest", "benchmark")  # pytest.ini's markers: every test is one of them


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test with none of the markers would be run by the whole suite but left out of `-m unittest` and of
    `-m algotest` alike: refuse it at collection, naming it."""
    unmarked = [item.nodeid for item in items if not any(item.get_closest_marker(kind) for kind in TEST_KINDS)]
    if unmarked:
        raise pytest.UsageError(f"{len(unmarked)} test(s) carry none of the markers {', '.join(TEST_KINDS)} "
                                f"(pytestmark = pytest.mark.unittest, or mark each test): {', '.join(unmarked[:5])}")
