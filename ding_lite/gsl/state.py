"""The state of a GSL run: what ``<exp>/result.json`` holds after every phase, and what ``--resume`` reads back."""
from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.gsl.plateau import DEMOS, PHASE1, PHASE2, SPECIALIST_PREFIX, SPECIALISTS_GLOB
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.run_folder import RESULT_FILE
from ding_lite.utils.run_result import finished_result

PerVariation = dict[str, dict[str, Any]]  # variation id (a string, as JSON keys are) -> return_mean, success_rate


@dataclass
class GslState:
    """Where a GSL run stands. Fields left None are not reached yet (and not written); the names are the keys of
    ``<exp>/result.json``."""

    variations: list[int]  # env.variations' ids
    seed: int
    phases_done: list[str] = field(default_factory=list)  # finished phases, in order (folder names)
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)  # per phase: env_step, ended_by, variations
    phase1_per_variation: PerVariation | None = None  # the phase-I generalist's final policy, per variation
    low_variations: list[int] | None = None  # the gsl.n_low worst of them
    specialist_subsets: list[list[int]] | None = None  # ... split into one subset per specialist
    specialists: list[dict[str, Any]] | None = None  # per specialist: variations, env_step, eval_return
    demos: dict[str, Any] | None = None  # demos/summary.json: files, episodes and steps kept, env steps
    phase2_per_variation: PerVariation | None = None  # the phase-II generalist's final policy, per variation
    env_steps: dict[str, Any] | None = None  # env steps of every phase and their total
    summary: dict[str, Any] | None = None  # mean return and success rate after phase I and after phase II
    wall_seconds: float | None = None
    exp_dir: str | None = None
    settings: dict[str, Any] | None = None  # the gsl section the phases ran with (None: a run written before it)

    def mark(self, phase: str, **info: Any) -> None:
        """``phase`` is done; ``info`` goes into its ``phases`` entry."""
        if phase not in self.phases_done:
            self.phases_done.append(phase)
        self.phases[phase] = {**self.phases.get(phase, {}), **info}

    def to_json(self) -> dict[str, Any]:
        """The ``result.json`` dict (a deep copy: later changes of the state do not reach it)."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) is not None}

    def check_resume(self, root: Path, variations: list[int], settings: Mapping[str, Any]) -> None:
        """Raise a :class:`ConfigError` naming the first setting (``env.variations`` or a ``gsl`` key) that differs
        from what a finished phase of this run ran with: a finished phase is kept, not redone, so a new value would be
        silently ignored. Settings of phases not finished yet may change (they run with the new values)."""
        if self.settings is None:  # a result.json written before the settings were kept
            return
        fixed: list[tuple[str, tuple[str, ...]]] = []  # (finished phase, the settings it fixed)
        if self.phases_done:
            fixed.append((PHASE1, ("plateau_patience", "plateau_tol", "phase1_max_env_step")))
        if self.specialist_subsets is not None:
            fixed.append((PHASE1, ("eval_episodes_per_variation", "n_low", "n_specialists")))
        finished = sorted({p.parent.name for p in root.glob(f"{SPECIALISTS_GLOB}/{RESULT_FILE}")
                           if finished_result(p.parent) is not None}
                          | {p for p in self.phases_done if p.startswith(SPECIALIST_PREFIX)})
        if finished:
            fixed.append((finished[0], ("specialist_max_env_step", "specialist_learn")))
        if DEMOS in self.phases_done:
            fixed.append((DEMOS, ("demo_episodes_per_variation",)))
        if PHASE2 in self.phases_done:
            fixed.append((PHASE2, ("phase2_max_env_step", "phase2_policy_type", "phase2_learn", "extra_demo_path")))
        if self.phases_done and list(variations) != list(self.variations):
            raise ConfigError(f"--resume: env.variations={list(variations)}, but {PHASE1} of the run in {root} "
                              f"finished with {self.variations}: {_KEPT}")
        for phase, keys in fixed:
            for key in keys:
                now, then = _plain(settings.get(key)), _plain(self.settings.get(key))
                if now != then:
                    raise ConfigError(f"--resume: gsl.{key}={now!r}, but {phase} of the run in {root} finished with "
                                      f"gsl.{key}={then!r}: {_KEPT}")

    @classmethod
    def read(cls, root: Path, variations: list[int], seed: int) -> GslState:
        """The state in ``<root>/result.json`` (a fresh one on ``variations`` where there is none) of the run of
        ``seed``; it keeps the variations the earlier run played, for :meth:`check_resume` to compare. A file
        that is not JSON, or not a GSL run's result, is a :class:`CheckpointError` naming it."""
        path = root / RESULT_FILE
        if not path.is_file():
            return cls(list(variations), seed)
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"--resume: {path} is not readable JSON ({exc}): it is not the result of a GSL "
                                  f"run; start a new run (another --exp-name) or remove it") from None
        known = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or not isinstance(data.get("phases_done", []), list) or \
                set(data) - known:
            extra = sorted(set(data) - known)[:3] if isinstance(data, dict) else []
            raise CheckpointError(f"--resume: {path} is not the result of a GSL run"
                                  + (f" (unknown keys {', '.join(extra)})" if extra else "")
                                  + ": start a new run (another --exp-name) or remove it")
        if data.get("seed", seed) != seed:
            raise ConfigError(f"--resume: {root} holds the GSL run of seed {data['seed']}, not seed {seed}: resume "
                              f"with -s {data['seed']}, or give this seed its own folder (--exp-name)")
        state = cls(**{"variations": list(variations), **data, "seed": seed})
        state.phases_done = list(state.phases_done)
        return state


# the end of the line that refuses a resume with a setting a finished phase ran without
_KEPT = ("a finished phase is kept, not redone: resume with the earlier value, or start a new run with this one "
         "(another --exp-name)")


def gsl_settings(cfg: Any) -> dict[str, Any]:
    """The ``gsl`` section of a compiled config as plain JSON data (what ``result.json`` keeps as ``settings``)."""
    return {str(k): _plain(v) for k, v in dict(cfg.gsl).items()}


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists, mappings as dicts), so that settings compare alike."""
    return json.loads(json.dumps(to_plain(value)))
