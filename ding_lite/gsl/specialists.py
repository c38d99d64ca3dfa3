"""GSL's specialists on Ray: one actor per CPU (at most one per specialist) trains them in turn; the training of one
specialist (a serial run of the pipeline layer) is passed in, so that this package needs nothing above it."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ding_lite.errors import Interrupted, Terminated
from ding_lite.gsl.plateau import specialist_name
from ding_lite.registry import add_config_folder, config_folders
from ding_lite.utils.run_folder import CKPT_DIR
from ding_lite.utils.run_result import finished_result
from ding_lite.utils.seed import SeedPlan

TrainSpecialist = Callable[..., dict[str, Any]]  # (cfg, root, k, subset, seed, progress) -> the phase's result
OnDone = Callable[[int, dict[str, Any]], object]  # (k, specialist k's result), called as each one finishes


class SpecialistActor:
    """A Ray actor that trains one specialist with ``train`` (the function the in-process path calls)."""

    def __init__(self, train: TrainSpecialist, folders: tuple[str, ...] = ()) -> None:
        for folder in folders:  # the driver's config folders: its import_names are found here as there
            add_config_folder(folder)
        self._train = train

    def train(self, cfg: Any, root: str, k: int, subset: list[int], seed: int) -> dict[str, Any]:
        return self._train(cfg, Path(root), k, subset, seed, progress=False)


def specialists_left(root: Path, n_specialists: int) -> list[int]:
    """The specialists of the run in ``root`` that have not finished (no finished ``result.json`` in their folder)."""
    return [k for k in range(n_specialists) if finished_result(root / specialist_name(k)) is None]


def run_specialists(train_specialist: TrainSpecialist, cfg: Any, root: Path, subsets: list[list[int]], seed: int,
                    address: str | None, progress: bool, on_done: OnDone | None = None) -> list[dict[str, Any]]:
    """Train every specialist with ``train_specialist`` (returns a finished one's result as it is); in parallel as
    Ray actors first when ``gsl.use_ray`` (local instance, or ``address``). ``on_done(k, result)`` is called as
    soon as specialist k has finished (on Ray in the order they finish), so that a run stopped in a later one
    already records it."""
    def done(k: int, result: dict[str, Any]) -> dict[str, Any]:
        if on_done is not None:
            on_done(k, result)
        return result

    root = root.resolve()
    todo = specialists_left(root, len(subsets))
    if cfg.gsl.use_ray and len(todo) > 0:
        from ding_lite.distributed.session import import_ray, ray_session

        ray = import_ray()
        with ray_session(ray, address, cfg.gsl.ray_num_cpus):
            _train_on_actors(ray, train_specialist, cfg, root, subsets, todo, seed, done)
    return [done(k, train_specialist(cfg, root, k, s, SeedPlan(seed).specialist(k), progress))
            for k, s in enumerate(subsets)]


def _train_on_actors(ray: Any, train: TrainSpecialist, cfg: Any, root: Path, subsets: list[list[int]], todo: list[int],
                     seed: int, on_done: OnDone) -> None:
    """One actor per CPU of the cluster (at most one per specialist), each training the next waiting specialist when
    it is done with one: a fresh worker process (Python, torch) per specialist would cost more than a tiny one."""
    actor_cls = ray.remote(num_cpus=1, max_restarts=0)(SpecialistActor)
    n_actors = max(1, min(len(todo), int(ray.cluster_resources().get("CPU", 1))))
    actors = [actor_cls.remote(train, tuple(config_folders())) for _ in range(n_actors)]
    waiting = list(todo)
    pending: dict[Any, tuple[Any, int]] = {}  # the ref of a specialist's result: (its actor, k)

    def give(actor: Any) -> None:
        k = waiting.pop(0)
        pending[actor.train.remote(cfg, str(root), k, subsets[k], SeedPlan(seed).specialist(k))] = (actor, k)

    try:
        for actor in actors[:len(waiting)]:
            give(actor)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            result = ray.get(done[0])  # a specialist's error stops the run here
            actor, k = pending.pop(done[0])
            on_done(k, result)
            if waiting:
                give(actor)
    except KeyboardInterrupt as exc:
        # Ctrl-C (SIGTERM) reaches this process only: the actors' runs end with it, each at its latest resume
        # checkpoint. Say so in the CLI's one line, as a serial phase's stop does (a bare KeyboardInterrupt said
        # only 'interrupted')
        if str(exc):
            raise
        where = ", ".join(str(root / specialist_name(k) / CKPT_DIR) for k in sorted(k for _, k in pending.values()))
        stop = Terminated if isinstance(exc, Terminated) else Interrupted
        raise stop(f"stopped by {'SIGTERM' if stop is Terminated else 'SIGINT'} while specialists trained on Ray; "
                   f"each continues from its latest resume checkpoint ({where}): continue with --resume") from None
    finally:
        for actor in actors:
            ray.kill(actor)
