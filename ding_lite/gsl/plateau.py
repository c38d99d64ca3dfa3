"""The pure pieces of generalist-specialist learning (GSL, Jia et al., ICML 2022; docs/gsl.md): its settings, the
evaluator that stops phase I at a plateau (the detector itself, :class:`~ding_lite.worker.tracker.PlateauDetector`, is
a rule of the evaluators' shared best-return tracker), the choice and split of the worst variations, the demo success
filter and the env-step accounting. The phases are ``phases.py``, ``demos.py``, ``specialists.py`` and ``state.py``
next to this module; the pipeline that wires them is ``ding_lite/entry/gsl.py``."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ding_lite.errors import ConfigError
from ding_lite.registry import CONFIG_SECTION_REGISTRY, EVALUATOR_REGISTRY
from ding_lite.worker.evaluator import InteractionEvaluator
from ding_lite.worker.tracker import PlateauDetector

# The ``gsl`` config section: settings of ``ding_lite -m gsl`` (merged into every compiled config).
GSL_CONFIG: dict[str, Any] = dict(
    plateau_patience=3,  # phase I ends after this many evaluations in a row without a gain above plateau_tol
    plateau_tol=0.02,  # gain of the best mean eval return that counts as progress (absolute, in return units)
    phase1_max_env_step=200000,  # phase I env-step budget (it also ends earlier at a plateau or the stop value)
    n_low=10,  # the n_low worst variations after phase I get specialists
    n_specialists=2,  # ... split into this many disjoint subsets, one specialist each
    specialist_max_env_step=50000,  # env steps of each specialist (on its own subset)
    specialist_learn={},  # the specialists' policy.learn overrides, e.g. dict(entropy_weight=0.05) to explore more
    eval_episodes_per_variation=1,  # per-variation evaluation: episodes of each variation
    demo_episodes_per_variation=4,  # demo roll-outs of each variation (only successful episodes are kept)
    phase2_max_env_step=200000,  # phase II (PPO-DAPG on all variations) env-step budget
    phase2_policy_type="ppo_dapg",  # policy of phase II; its learn settings come from `phase2_learn`
    phase2_learn={},  # phase II's policy.learn overrides, e.g. dict(demo_coeff=1.0) (the rest: the policy's defaults)
    extra_demo_path=None,  # demo file(s) of this env added to phase II's (e.g. human demos); None: only GSL's
    use_ray=True,  # specialists as Ray actors (in parallel); False: one after the other in this process
    ray_num_cpus=None,  # CPUs of a local Ray instance (None: Ray's default)
)
CONFIG_SECTION_REGISTRY.register("gsl")(GSL_CONFIG)

T = TypeVar("T")

# The sub-experiment folders of a GSL run (``<exp>/<name>/``); specialist k's is :func:`specialist_name`.
PHASE1, DEMOS, PHASE2 = "phase1_generalist", "demos", "phase2_generalist"
SPECIALIST_PREFIX = "specialist_"
SPECIALISTS_GLOB = f"{SPECIALIST_PREFIX}*"  # every specialist's folder


def specialist_name(k: int) -> str:
    """Folder (and ``phases_done`` entry) of specialist ``k``."""
    return f"{SPECIALIST_PREFIX}{k}"


@EVALUATOR_REGISTRY.register("plateau")
class PlateauEvaluator(InteractionEvaluator):
    """The interaction evaluator whose ``stop`` is also set at a plateau of the mean return (GSL's phase I ends
    there); ``plateau`` records at which evaluation that happened."""

    # every key of the interaction evaluator (a test keeps them equal), then the plateau's own
    config: dict[str, Any] = dict(
        type="plateau",
        eval_freq=1000,  # evaluate every this many train iterations
        video_every=0,  # training runs: an episode as <exp>/videos/eval_iter<N>_ep0.mp4 every this many evals (0: none)
        max_episode_steps=None,  # cut each episode here, truncated (None: the env's own); counted so far, warned
        plateau_patience=3,  # evaluations in a row without a gain above plateau_tol
        plateau_tol=0.02,  # gain of the best mean return that counts as progress
    )

    def __init__(self, cfg: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        detector = PlateauDetector(int(cfg.get("plateau_patience", 3)), float(cfg.get("plateau_tol", 0.02)))
        super().__init__(cfg, *args, plateau=detector, **kwargs)

    @property
    def detector(self) -> PlateauDetector:
        """The plateau rule of this evaluator's tracker."""
        assert self.tracker.plateau is not None
        return self.tracker.plateau

    @property
    def plateau(self) -> bool:
        """Whether the plateau was reached (at this or an earlier evaluation)."""
        return self.tracker.plateaued


def worst_variations(table: Mapping[str, Mapping[str, Any]], n_low: int) -> list[int]:
    """The ``n_low`` variations with the lowest success rate (return where success is unknown; ties broken by lower
    return, then by id). ``table`` maps id strings to ``{'return_mean', 'success_rate'}`` rows."""
    if n_low < 1:
        raise ConfigError(f"gsl.n_low must be at least 1, got {n_low}")
    if n_low > len(table):
        raise ConfigError(f"gsl.n_low={n_low} is more than the {len(table)} variations evaluated: lower gsl.n_low")

    def key(item: tuple[str, Mapping[str, Any]]) -> tuple[float, float, int]:
        v, row = item
        success = row.get("success_rate")
        primary = row["return_mean"] if success is None else success
        return (primary, row["return_mean"], int(v))

    return [int(v) for v, _ in sorted(table.items(), key=key)[:n_low]]


def split_variations(ids: Sequence[int], n_specialists: int) -> list[list[int]]:
    """Split ``ids`` (worst first) into ``n_specialists`` disjoint subsets of near-equal size, dealt round-robin so
    that each subset gets a share of the hardest ones: [0, 1, 2, 3, 4] into 2 → [[0, 2, 4], [1, 3]]."""
    if n_specialists < 1:
        raise ConfigError(f"gsl.n_specialists must be at least 1, got {n_specialists}")
    if n_specialists > len(ids):
        raise ConfigError(f"gsl.n_specialists={n_specialists} is more than the {len(ids)} low variations "
                          f"(gsl.n_low): lower gsl.n_specialists or raise gsl.n_low")
    return [sorted(int(v) for v in ids[k::n_specialists]) for k in range(n_specialists)]


def keep_successful(episodes: Sequence[T], is_success: Callable[[T], bool]) -> list[T]:
    """The episodes for which ``is_success`` holds, in order (the demo filter: only successes become demos)."""
    return [e for e in episodes if is_success(e)]


def step_accounting(phase1: int, specialists: Sequence[int], demos: int, phase2: int) -> dict[str, Any]:
    """Env steps of every phase and their total (what GSL is compared at against PPO alone).

    Each entry is the env steps that phase itself took (a specialist's own steps, not the generalist's before it)."""
    for name, value in (("phase1", phase1), ("demos", demos), ("phase2", phase2)):
        if value < 0:
            raise ValueError(f"{name} env steps must be non-negative, got {value}")
    if any(s < 0 for s in specialists):
        raise ValueError(f"specialist env steps must be non-negative, got {list(specialists)}")
    return {"phase1": int(phase1), "specialists": [int(s) for s in specialists], "demos": int(demos),
            "phase2": int(phase2), "total": int(phase1 + sum(specialists) + demos + phase2)}
