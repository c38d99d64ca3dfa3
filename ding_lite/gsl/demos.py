"""GSL's measurements and demos: per-variation evaluation of a phase's policy, and the demo files of phase II (each
specialist on its subset, the generalist on the other variations; only successful episodes kept)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ding_lite.build import build, build_env_managers, build_evaluator
from ding_lite.data.demo import episodes_to_dataset, success_rule
from ding_lite.data.demo_file import write_demo
from ding_lite.data.keys import ACTION
from ding_lite.gsl.phases import final_ckpt, phase_config, subset_env
from ding_lite.gsl.plateau import DEMOS, PHASE1, keep_successful, specialist_name
from ding_lite.gsl.state import PerVariation
from ding_lite.runtime.experiment import write_json
from ding_lite.utils.checkpoint import load_policy_weights
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.run_folder import BEST_CKPT, CKPT_DIR
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.episodes import Episode, run_episodes
from ding_lite.worker.evaluator import eval_step_cap


def evaluate_per_variation(cfg: Any, ckpt: Path, ids: list[int], seed: int) -> dict[str, dict[str, Any]]:
    """Return and success per variation of ``ckpt``'s eval policy, ``gsl.eval_episodes_per_variation`` episodes of
    each variation (the eval envs' seeds, so phase I and phase II are measured alike)."""
    ecfg = phase_config(cfg, subset_env(cfg, ids, int(cfg.gsl.eval_episodes_per_variation)))
    _, env = build_env_managers(ecfg, seed, collect=False)
    try:
        policy = build(ecfg, "policy", enable_field=("eval",))
        load_policy_weights(policy.eval_mode, ckpt, model_only=True)
        return build_evaluator(ecfg, env, policy, SeedPlan(seed).evaluator).eval().per_variation()
    finally:
        env.close()


def collect_gsl_demos(cfg: Any, root: Path, subsets: list[list[int]], ids: list[int], seed: int) -> dict[str, Any]:
    """Demo files in ``<exp>/demos/``: each specialist on its subset, the generalist on the other variations; only
    successful episodes (``demo.success_key`` / ``demo.return_threshold``, as ``-m collect_demo``) are kept."""
    is_success, rule = success_rule(cfg.demo.return_threshold, cfg.env.stop_value, cfg.demo.success_key)
    others = [v for v in ids if not any(v in s for s in subsets)]
    sources = [(specialist_name(k), s) for k, s in enumerate(subsets)] + ([(PHASE1, others)] if others else [])
    files, kept_total, steps_total, env_step = [], 0, 0, 0
    per_source = {}
    for name, subset in sources:
        n_episode = len(subset) * int(cfg.gsl.demo_episodes_per_variation)
        episodes, steps = _demo_rollout(cfg, demo_checkpoint(root / name), subset, n_episode, seed)
        kept = keep_successful(episodes, lambda e: is_success(e.end))
        env_step += steps
        per_source[name] = {"variations": subset, "n_episode": n_episode, "n_episode_kept": len(kept)}
        if not kept:
            continue
        meta = dict(env={"type": cfg.env.type, "env_id": cfg.env.get("env_id")}, variations=subset, source=name,
                    policy=cfg.policy.type, policy_mode="eval", seed=seed, success_rule=rule,
                    n_episode_rolled_out=n_episode, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        dataset = episodes_to_dataset([e.steps for e in kept], [e.end.episode_return for e in kept], meta,
                                      final_obs=[e.final_obs for e in kept],
                                      final_action_mask=[e.final_action_mask for e in kept])
        files.append(str(write_demo(root / DEMOS / f"{name}.npz", dataset)))
        kept_total, steps_total = kept_total + len(kept), steps_total + len(dataset)
    if not files:  # phase II then trains as plain PPO; the run's result says so
        setup_console_logging().warning(f"[gsl] warning: no successful demo episode ({rule}): phase II has no demo "
                                        f"term; give the specialists more env steps (gsl.specialist_max_env_step)")
    summary = {"files": files, "n_episode_kept": kept_total, "n_step": steps_total, "env_step": env_step,
               "success_rule": rule, "sources": per_source}
    write_json(root / DEMOS / "summary.json", summary)
    return summary


def demo_checkpoint(folder: Path) -> Path:
    """A specialist's best evaluated checkpoint (its policy may lose a level it had found while it keeps exploring;
    ``-m collect_demo`` rolls out the best one too); the generalist's final one, which phase II continues from."""
    best = folder / CKPT_DIR / BEST_CKPT
    return best if folder.name != PHASE1 and best.is_file() else final_ckpt(folder)


def _demo_rollout(cfg: Any, ckpt: Path, subset: list[int], n_episode: int, seed: int) -> tuple[list[Episode], int]:
    """Episodes of ``ckpt``'s eval policy on ``subset``, and the env steps they took."""
    dcfg = phase_config(cfg, subset_env(cfg, subset, 1))
    env, _ = build_env_managers(dcfg, seed, evaluate=False)
    try:
        policy = build(dcfg, "policy", enable_field=("eval",))
        load_policy_weights(policy.eval_mode, ckpt, model_only=True)
        forward = policy.eval_mode.forward  # once: each access of a mode builds it anew
        run = run_episodes(env, lambda obs: forward(obs)[ACTION], n_episode, record=True,
                           max_episode_steps=eval_step_cap(dcfg.policy.eval.evaluator))
        return run.episodes(), run.env_steps
    finally:
        env.close()


def summarize(phase1: PerVariation, phase2: PerVariation) -> dict[str, Any]:
    """Mean return and success rate over all variations after phase I and after phase II."""
    out = {}
    for phase, table in (("phase1", phase1), ("phase2", phase2)):
        rows = list(table.values())
        succ = [r["success_rate"] for r in rows if r["success_rate"] is not None]
        out[phase] = {"return_mean": sum(r["return_mean"] for r in rows) / len(rows),
                      "success_rate": sum(succ) / len(succ) if succ else None}
    return out
