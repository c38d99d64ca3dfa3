"""Parallel runs as processes (ding_lite/entry/parallel.py, ding_lite/distributed/session.py): joining a separate Ray
head via --address, an address where nothing listens or nothing answers, Ray too old for token authentication, and
Ctrl-C or SIGTERM of an embedded run or of one waiting for its address (its Ray instance stopped, nothing left
behind)."""
from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ding_lite.errors import ConfigError, PluginImportError

from conftest import DIZOO_CARTPOLE, cli_env, ray_head, run_cli, wait_for_line  # isort: skip (tests/ helpers)

DQN_CONFIG = DIZOO_CARTPOLE / "cartpole_dqn_config.py"


# ---- CLI with its own Ray --------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.unittest
def test_parallel_run_joins_a_separate_ray_head_via_address(tmp_path):
    pytest.importorskip("ray")
    with ray_head(tmp_path, timeout=120) as (address, env):
        proc = subprocess.run([sys.executable, "-m", "ding_lite", "-m", "parallel", "-c", str(DQN_CONFIG),
                               "--address", address, "--max-env-step", "200", "--set",
                               "env.stop_value=1e9", "--exp-name", "run", "--no-progress"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads((tmp_path / "run" / "result.json").read_text())
        assert result["ray_address"].endswith(":" + address.rsplit(":", 1)[1]) and result["env_step"] >= 200
        assert "warning" not in proc.stderr.lower(), proc.stderr


def _descendants(pid: int) -> set[int]:
    """Pids of every living descendant of ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


def _listening_hosts(pids: set[int]) -> set[str]:
    """The local addresses on which the processes ``pids`` accept TCP connections."""
    import psutil

    hosts = set()
    for pid in pids:
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        hosts |= {c.laddr.ip for c in connections if c.status == psutil.CONN_LISTEN}
    return hosts


@pytest.mark.unittest
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the Ray processes")
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_an_embedded_run_and_its_ray_instance(tmp_path, sig, code):
    # SIGTERM (a scheduler's stop) as Ctrl-C; before, Ray's own handler printed a C++ stack dump and ended the
    # process at once (killed by the signal), without closing the actors
    pytest.importorskip("ray")
    cmd = [sys.executable, "-m", "ding_lite", "-m", "parallel", "-c", str(DQN_CONFIG), "--set", "env.stop_value=1e9",
           "--exp-name", "run", "--no-progress"]
    # SIGINT as a terminal's Ctrl-C sends it; the child gets Python's handler even if pytest runs with SIGINT ignored
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for_line(proc.stderr, "[eval] iter      0", timeout=180)
        ray_processes = _descendants(proc.pid)
        assert ray_processes  # the embedded Ray's own processes and the actors
        listening = _listening_hosts({proc.pid, *ray_processes})
        assert listening and listening <= LOOPBACK, f"the embedded Ray listens beyond 127.0.0.1: {listening}"
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == code, proc.stderr.read()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in ray_processes):
        time.sleep(0.2)
    alive = [pid for pid in ray_processes if Path(f"/proc/{pid}").exists()]
    assert not alive, f"Ray processes left running after {sig.name}: {alive}"
    assert (tmp_path / "run" / "log" / "train.log").exists()


@pytest.mark.unittest
def test_ray_older_than_token_authentication_is_refused(monkeypatch):
    ray = pytest.importorskip("ray")
    from ding_lite.distributed.session import import_ray

    monkeypatch.setattr(ray, "__version__", "2.58.1")
    with pytest.raises(PluginImportError, match=re.escape("needs Ray >= 2.59, whose local instances use token "
                                                          "authentication; this is Ray 2.58.1")):
        import_ray()


def _blackhole() -> tuple[socket.socket, socket.socket, str]:
    """An address whose TCP handshake never completes (its one-place accept queue is full): a connect to it waits,
    as one to a host that drops packets does. Returns the listening socket, the queued one and 'HOST:PORT'."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    queued = socket.create_connection(server.getsockname(), timeout=5)
    return server, queued, f"127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.unittest
def test_address_where_nothing_listens_fails_fast_in_one_line(tmp_path):
    """--address to a port where nothing listens: one line naming the address within seconds (Ray's own client
    retries for many minutes), exit code 2, and nothing written."""
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_free_port()}"
    start = time.monotonic()
    proc = run_cli("-m", "parallel", "-c", str(DQN_CONFIG), "--address", address, "--exp-name", "run", cwd=tmp_path,
                   timeout=120)
    lines = proc.stderr.strip().splitlines()
    # the refusal itself is immediate (the probe: test_an_address_that_never_answers...); the bound leaves room for
    # Python, torch and Ray to start on a busy machine, and is far below Ray's own minutes of retries
    assert proc.returncode == 2 and len(lines) == 1 and time.monotonic() - start < 90, proc.stderr[-3000:]
    assert lines[0].startswith(f"ding_lite: error: cannot join the Ray cluster at --address '{address}': nothing "
                               f"accepts connections at {address} (Connection refused"), lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.unittest
def test_an_address_that_never_answers_is_given_up_after_the_probe_time(monkeypatch):
    pytest.importorskip("ray")
    from ding_lite.distributed import session as parallel_session

    assert parallel_session.ADDRESS_PROBE_SECONDS == 5.0
    monkeypatch.setattr(parallel_session, "ADDRESS_PROBE_SECONDS", 0.5)  # the same wait, a tenth as long
    server, queued, silent = _blackhole()
    try:
        start = time.monotonic()
        with pytest.raises(ConfigError, match=re.escape(f"--address '{silent}': nothing accepts connections at "
                                                        f"{silent} (timed out within 0.5 s)")):
            parallel_session.probe_address(None, silent)
        assert 0.5 <= time.monotonic() - start < 5
    finally:
        queued.close()
        server.close()


@pytest.mark.unittest
def test_sigterm_ends_a_run_waiting_for_its_address(tmp_path):
    pytest.importorskip("ray")
    import psutil

    server, queued, silent = _blackhole()
    port = int(silent.rsplit(":", 1)[1])
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", "-m", "parallel", "-c", str(DQN_CONFIG), "--address",
                             silent, "--exp-name", "run"], cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any(c.raddr and c.raddr.port == port and c.status == psutil.CONN_SYN_SENT
                      for c in psutil.Process(proc.pid).net_connections(kind="tcp")):
            assert proc.poll() is None and time.monotonic() < deadline, "the run never tried the address"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)  # while it waits for the address
        assert proc.wait(timeout=3) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
        queued.close()
        server.close()
