"""Ray for one parallel run: Ray imported on demand, a connection that ends with the run, and a check that the
cluster can place every actor."""
from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ding_lite.errors import ConfigError, PluginImportError

RAY_INSTALL_HINT = "pip install -e '.[ray]' (or pip install 'ray[default]')"


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`PluginImportError` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise PluginImportError(f"the parallel mode needs Ray, which is not installed ({exc}): {RAY_INSTALL_HINT}") \
            from exc
    return ray


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
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, ValueError) as exc:
            raise ConfigError(f"cannot join the Ray cluster at --address {address!r}: {last_line(exc)}. Start one "
                              f"with `ray start --head` or leave --address out for a local instance; if the cluster "
                              f"uses token authentication, export RAY_AUTH_MODE=token here too, with its token in "
                              f"~/.ray/auth_token or RAY_AUTH_TOKEN (see docs/ray.md)") from exc
    else:
        # address='local': a new instance even where `ray start` left a cluster on this machine (plain ray.init()
        # would join that one)
        ray.init(address="local", num_cpus=int(num_cpus or os.cpu_count() or 1), include_dashboard=False, **quiet)
    try:
        yield
    finally:
        ray.shutdown()


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
