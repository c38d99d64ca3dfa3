"""Ray for one parallel run: Ray imported on demand, a connection that ends with the run, and a check that the
cluster can place every actor."""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ding_lite.errors import ConfigError, PluginImportError, Terminated, WorkerError, first_line
from ding_lite.extras import install_hint

# Ray 2.59 is the first whose local instances (ray.init() without an address) use token authentication by default
# (ray-project/ray#64755, in the 2.59.0 release); with an older Ray anyone who reaches the ports runs code.
MIN_RAY_VERSION = (2, 59)
RAY_INSTALL_HINT = f"{install_hint('ray')} (or pip install 'ray[default]>=2.59')"
ADDRESS_PROBE_SECONDS = 5.0  # how long --address may take to accept a TCP connection before the run gives up


def import_ray(user: str = "the parallel mode") -> Any:
    """The ``ray`` module, or a :class:`PluginImportError` that says how to install it (or a recent enough one);
    ``user`` names what needs it in that message."""
    try:
        import ray
    except ImportError as exc:
        raise PluginImportError(f"{user} needs Ray, which is not installed ({exc}): {RAY_INSTALL_HINT}") from exc
    if _version(ray.__version__) < MIN_RAY_VERSION:
        raise PluginImportError(f"{user} needs Ray >= {'.'.join(map(str, MIN_RAY_VERSION))}, whose local "
                                f"instances use token authentication; this is Ray {ray.__version__}: "
                                f"{RAY_INSTALL_HINT}")
    return ray


def _version(text: str) -> tuple[int, ...]:
    """(major, minor) of a version string such as '2.60.0' or '3.0.0.dev0' (anything unparsable counts as new)."""
    parts = text.split(".")[:2]
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else (10**6,)


@contextmanager
def ray_session(ray: Any, address: str | None, num_cpus: int | None) -> Iterator[None]:
    """Connect to Ray for one run: join ``address``, or start an embedded local instance (``num_cpus`` or the CPU
    count, no dashboard, Ray's own logging at ERROR). What this function started or joined it shuts down on exit,
    Ctrl-C included; an existing connection of the caller is used and left open."""
    if ray.is_initialized():
        yield
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage-stats notice on the console
    quiet = dict(logging_level=logging.ERROR, log_to_driver=True)
    if address:
        probe_address(ray, address)
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, ValueError) as exc:
            raise ConfigError(f"cannot join the Ray cluster at --address {address!r}: {last_line(exc)}. Start one "
                              f"with `ray start --head` or leave --address out for a local instance; if the cluster "
                              f"uses token authentication, export RAY_AUTH_MODE=token here too, with its token in "
                              f"~/.ray/auth_token or RAY_AUTH_TOKEN (see docs/ray.md)") from exc
    else:
        # address='local': a new instance even where `ray start` left a cluster on this machine (plain ray.init()
        # would join that one); bound to 127.0.0.1: nothing on the network reaches its GCS, raylet or workers
        with _loopback_only(ray):
            try:
                ray.init(address="local", num_cpus=int(num_cpus or os.cpu_count() or 1), include_dashboard=False,
                         **quiet)
            except Exception as exc:  # noqa: BLE001 (Ray raises a bare Exception when its processes start too slowly)
                with contextlib.suppress(Exception):
                    ray.shutdown()  # whatever of the instance did start
                raise WorkerError(f"the local Ray instance did not start: {last_line(exc)} (Ray gives its processes "
                                  f"30 s; on a machine this busy, start the run again once the load is lower, or "
                                  f"join a running cluster with --address)") from exc
    try:
        with _sigterm_as_interrupt():
            yield
    finally:
        ray.shutdown()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While the session lasts, SIGTERM raises :class:`~ding_lite.errors.Terminated` (a ``KeyboardInterrupt``), so
    that it ends the run as Ctrl-C does. ``ray.init`` installs a handler of its own that prints a C++ stack dump
    and ends the process at once, without closing the actors or stopping the embedded instance; this one replaces
    it (signal handlers can only be set from the main thread: elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


@contextmanager
def _loopback_only(ray: Any) -> Iterator[None]:
    """A local Ray instance started here takes 127.0.0.1 as its node address, and its GCS, raylet, object manager
    and workers listen there only.

    Ray's switch for that is its single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read once at import
    into ``ray_constants.ENABLE_RAY_CLUSTER``): with it off, the node address Ray picks for a new instance is the
    loopback one. It is turned off only while the instance starts, so that joining a cluster later from this process
    still finds the machine's network address."""
    import ray._private.ray_constants as ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def probe_address(ray: Any, address: str) -> None:
    """Fail within :data:`ADDRESS_PROBE_SECONDS` if nothing accepts a connection at ``--address`` (Ray itself retries
    for many minutes, deaf to SIGTERM while it waits in its C++ client); ``'auto'`` is the cluster Ray would pick."""
    target = address
    if address == "auto":
        from ray._private.services import canonicalize_bootstrap_address

        try:
            target = canonicalize_bootstrap_address(address) or ""
        except Exception:  # no cluster found: ray.init(address='auto') says so at once, in its own words
            return
        if not target:
            return
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"--address {address!r} is not HOST:PORT or 'auto' (ray start --head prints the address "
                          f"to use)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=ADDRESS_PROBE_SECONDS):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or first_line(exc))
        raise ConfigError(f"cannot join the Ray cluster at --address {address!r}: nothing accepts connections at "
                          f"{target} ({reason} within {ADDRESS_PROBE_SECONDS:g} s). Start one with `ray start "
                          f"--head` or leave --address out for a local instance") from exc


def check_resources(ray: Any, par: Mapping[str, Any]) -> None:
    """Actors that cannot all be scheduled would wait for ever: fail with the numbers instead."""
    need = int(par["n_collectors"]) * float(par["collector_num_cpus"]) + float(par["evaluator_num_cpus"])
    have = float(ray.cluster_resources().get("CPU", 0.0))
    if need > have:
        raise ConfigError(f"parallel.n_collectors={par['n_collectors']} x collector_num_cpus="
                          f"{par['collector_num_cpus']} + evaluator_num_cpus={par['evaluator_num_cpus']} need {need:g} "
                          f"CPUs but the Ray cluster has {have:g}: lower them, raise parallel.num_cpus (local Ray) or "
                          f"add nodes")


def last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
