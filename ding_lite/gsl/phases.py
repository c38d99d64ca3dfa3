"""GSL's phases as configs and folders (Jia et al., ICML 2022; docs/gsl.md): the checks of a GSL config, each phase's
config (compiled from the run's), the start checkpoints that carry the generalist's weights into a phase, and a
phase folder's result or final checkpoint. The pipeline that runs them is ``ding_lite/entry/gsl.py``."""
from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.build import build
from ding_lite.config.compile import compile_config
from ding_lite.data.demo_file import read_demo
from ding_lite.envs.variations import variation_ids
from ding_lite.errors import ConfigError
from ding_lite.gsl.plateau import split_variations
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from ding_lite.utils.dicts import deep_merge, to_plain
from ding_lite.utils.run_folder import CKPT_DIR
from ding_lite.utils.run_result import finished_result


def check_gsl_config(cfg: Any) -> list[int]:
    """Every check that needs no run: the variation ids, n_low and n_specialists, the extra demo files' env.
    Returns the variation ids."""
    ids = variation_ids(cfg.env)
    if ids is None:
        raise ConfigError("-m gsl needs an env family: set env.variations (a count or a list of variation ids)")
    g = cfg.gsl
    if not 1 <= int(g.n_low) <= len(ids):
        raise ConfigError(f"gsl.n_low={g.n_low} must be between 1 and the {len(ids)} variations of env.variations")
    split_variations(list(range(int(g.n_low))), int(g.n_specialists))  # raises on more specialists than n_low
    for key in ("phase1_max_env_step", "specialist_max_env_step", "phase2_max_env_step",
                "eval_episodes_per_variation", "demo_episodes_per_variation"):
        if int(g[key]) < 1:
            raise ConfigError(f"gsl.{key} must be at least 1, got {g[key]!r}")
    _check_extra_demos(g.get("extra_demo_path"), cfg.env)
    phase1_config(cfg)  # the phases' configs compile (before anything is written)
    try:
        specialist_config(cfg, ids[:1])
    except ConfigError as exc:  # a bad gsl.specialist_learn: say where the value came from
        raise ConfigError(f"gsl.specialist_learn={dict(g.specialist_learn or {})!r}: {exc}") from exc
    try:
        phase2_config(cfg, [])
    except ConfigError as exc:  # name the gsl setting behind the phase-II key, which the user did not write
        raise ConfigError(_phase2_culprit(g, str(exc))) from exc
    return ids


def _phase2_culprit(g: Any, error: str) -> str:
    """The line for a phase-II config that does not compile: ``gsl.phase2_learn`` where the error names one of its
    keys, else ``gsl.phase2_policy_type`` (e.g. a policy that does not read the demo files)."""
    learn = dict(g.phase2_learn or {})
    if any(f"policy.learn.{key}" in error for key in learn):
        return f"gsl.phase2_learn={learn!r}: {error}"
    hint = (" (phase II passes the demo files as policy.learn.demo_path: use a policy with a demo term, e.g. "
            "'ppo_dapg')") if "policy.learn.demo_path" in error else ""
    return f"gsl.phase2_policy_type={g.phase2_policy_type!r}: {error}{hint}"


def _check_extra_demos(extra: Any, env_cfg: Mapping[str, Any]) -> None:
    """``gsl.extra_demo_path``: None, a demo file's path or a list of them, each collected in ``env_cfg``'s env."""
    paths = extra if isinstance(extra, (list, tuple)) else [extra]
    if extra is not None and not all(isinstance(path, str) for path in paths):
        raise ConfigError(f"gsl.extra_demo_path must be a demo file's path, a list of them or None, got {extra!r}")
    for path in _as_list(extra):
        check_demo_env(path, env_cfg)


def check_demo_env(path: str | Path, env_cfg: Mapping[str, Any]) -> None:
    """Raise a :class:`ConfigError` naming ``path`` if its demos were collected in another env than ``env_cfg``."""
    meta = read_demo(path).metadata.get("env") or {}
    here = {"type": env_cfg.get("type"), "env_id": env_cfg.get("env_id")}
    theirs = {"type": meta.get("type"), "env_id": meta.get("env_id")}
    if theirs != here:
        raise ConfigError(f"demo file {path} was collected in env {theirs}, but this run's env is {here}: use demos "
                          f"of this env (gsl.extra_demo_path)")


def phase_config(cfg: Any, changes: Mapping[str, Any]) -> Any:
    """``cfg`` with ``changes`` merged in, compiled again (a new policy type gets its defaults, all is checked)."""
    plain = {k: v for k, v in to_plain(cfg).items() if k != "gsl"}  # plain dicts; deep_merge copies them
    return compile_config(deep_merge(plain, changes), {}, strict=True)


def phase1_config(cfg: Any) -> Any:
    """Phase I: the user's config with the plateau evaluator, which stops at a plateau of the mean return."""
    g = cfg.gsl
    evaluator = dict(type="plateau", import_names=["ding_lite.gsl.plateau"],
                     plateau_patience=int(g.plateau_patience), plateau_tol=float(g.plateau_tol))
    return phase_config(cfg, deep_merge({"policy": {"eval": {"evaluator": evaluator}}}, RESUME_CKPT_AT_EVAL))


# A resume checkpoint at every evaluation (the learner keeps the newest `save_resume_ckpt.keep` of them), so that a
# killed phase resumes close to where it was without a file per evaluation piling up.
RESUME_CKPT_AT_EVAL: dict[str, Any] = {
    "policy": {"learn": {"learner": {"hook": {"save_resume_ckpt": {"at_eval_after_seconds": 0.0}}}}}}


def subset_env(cfg: Any, subset: list[int], per_variation: int) -> dict[str, Any]:
    return {"env": {"variations": list(subset), "n_evaluator_episode": len(subset) * per_variation}}


def specialist_config(cfg: Any, subset: list[int]) -> Any:
    """Specialist: the phase-I policy, its env restricted to ``subset`` (collector and evaluator), its
    ``policy.learn`` with ``gsl.specialist_learn`` merged in (e.g. a larger entropy bonus to explore its few
    variations)."""
    changes = deep_merge(subset_env(cfg, subset, int(cfg.gsl.eval_episodes_per_variation)), RESUME_CKPT_AT_EVAL)
    changes = deep_merge(changes, {"policy": {"learn": dict(cfg.gsl.specialist_learn or {})}})
    return phase_config(cfg, changes)


def phase2_config(cfg: Any, demo_files: list[str]) -> Any:
    """Phase II: all variations, ``gsl.phase2_policy_type`` (PPO-DAPG) on the GSL demos and any extra ones."""
    g = cfg.gsl
    learn = deep_merge(dict(g.phase2_learn), {"demo_path": list(demo_files) + _as_list(g.get("extra_demo_path"))})
    return phase_config(cfg, deep_merge({"policy": {"type": g.phase2_policy_type, "learn": learn}},
                                        RESUME_CKPT_AT_EVAL))


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    return [str(value)] if isinstance(value, (str, Path)) else [str(v) for v in value]


def run_phase(folder: Path, run: Any) -> dict[str, Any]:
    """A finished phase's result; else ``run(resume)``: resumed where the folder holds a checkpoint, from scratch
    (the folder cleared) where a killed run left none (a failed run's ``result.json`` is no finished phase)."""
    done = finished_result(folder)
    if done is not None:
        return done
    can_resume = latest_checkpoint(folder / CKPT_DIR) is not None
    if folder.exists() and not can_resume:
        shutil.rmtree(folder)
    return run(can_resume)


def final_ckpt(folder: Path) -> Path:
    ckpt = latest_checkpoint(folder / CKPT_DIR)
    if ckpt is None:
        raise ConfigError(f"{folder} finished without a final checkpoint: keep the learner's "
                          f"policy.learn.learner.hook.save_ckpt_after_run=True")
    return ckpt


def start_checkpoint(phase_cfg: Any, source: Path, target: Path) -> Path:
    """Write a checkpoint for ``phase_cfg``'s policy holding the weights of ``source`` (with their value and reward
    statistics) and fresh counters (the optimiser state too where the policy type is the same); a new phase counts
    its own env steps."""
    src = load_checkpoint(source)
    policy = build(phase_cfg, "policy", enable_field=("learn",))
    state = policy.learn_mode.state_dict()
    if src.get("policy_type") == phase_cfg.policy.type:
        state = {**state, **src["policy"]}
    else:  # the model's side: its weights and the statistics they are read with (PPO's value_norm, reward scale)
        model_side = policy.eval_mode.state_dict()
        state.update({k: v for k, v in src["policy"].items() if k in model_side and k in state})
    return save_checkpoint(target, {"policy": state, "train_iter": 0, "env_step": 0,
                                    "best_eval_return": float("-inf"), "policy_type": phase_cfg.policy.type})
