"""Generalist-specialist learning (GSL, Jia et al., ICML 2022), one command from the generalist to the fine-tuned
generalist: ``ding_lite -m gsl -c CONFIG``. The phases (docs/gsl.md) each run as a sub-experiment of the serial
pipeline in ``<exp>/``:

1. ``phase1_generalist/``: PPO on all ``env.variations`` until the mean eval return plateaus (``gsl.plateau_*``) or
   ``gsl.phase1_max_env_step``; then a per-variation evaluation of its final policy.
2. ``specialist_k/``: the ``gsl.n_low`` worst variations split into ``gsl.n_specialists`` disjoint subsets; each
   specialist starts from the generalist's weights and trains only on its subset (Ray actors in parallel, or one
   after the other), ``gsl.specialist_max_env_step`` env steps each.
3. ``demos/``: successful episodes of each specialist (its best evaluated checkpoint) on its subset and of the
   generalist on the other variations.
4. ``phase2_generalist/``: the generalist continues with PPO-DAPG on those demos, on all variations.

``<exp>/result.json`` is rewritten after every phase (the per-variation tables, the subsets, the env steps of every
phase); ``--resume`` continues the phase a killed run was in and redoes none that finished. Start checkpoints (the
generalist's weights with fresh counters) are written to ``<exp>/starts/``. Model shapes left out of the config are
filled in from the env once, before any phase, so that every phase (and every start checkpoint) builds the same
model.
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.build import (
    ConfigLike,
    build,
    build_env_managers,
    build_evaluator,
    fill_model_shapes_from_env,
    import_plugins,
)
from ding_lite.config.compile import compile_config
from ding_lite.config.frozen import freeze
from ding_lite.data.demo import episodes_to_dataset, read_demo, write_demo
from ding_lite.entry.collect_demo import rollout_episodes, success_rule
from ding_lite.entry.serial import serial_pipeline
from ding_lite.envs.variations import variation_ids
from ding_lite.errors import ConfigError
from ding_lite.gsl.plateau import (
    DEMOS,
    PHASE1,
    PHASE2,
    keep_successful,
    specialist_name,
    split_variations,
    step_accounting,
    worst_variations,
)
from ding_lite.gsl.state import GslState, PerVariation
from ding_lite.runtime.experiment import write_json
from ding_lite.runtime.train_loop import start_run
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint, load_policy_weights, save_checkpoint
from ding_lite.utils.dicts import deep_merge, to_plain
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.seed import SeedPlan


def gsl_pipeline(config: ConfigLike, seed: int = 0, *, exp_dir: str | Path | None = None, resume: bool = False,
                 strict: bool = False, overrides: tuple[str, ...] = (), address: str | None = None,
                 progress: bool = False) -> dict[str, Any]:
    """Run GSL's phases (module docstring) and return the top result (also ``<exp>/result.json``).

    Args:
        config: a config whose env has ``variations``; its ``gsl`` section holds GSL's settings.
        seed: seed of phase I; specialist k uses ``seed + 1 + k``, phase II ``seed``.
        exp_dir: the experiment folder (default ``cfg.exp_name``; a folder holding an earlier run is kept and
            ``<exp>_1``... used, unless ``resume``).
        resume: continue a killed run in ``exp_dir`` from the phase it was in.
        address: Ray cluster for the specialists (None: a local Ray instance).

    Example::

        gsl_pipeline('dizoo/grid/maze/config/maze_gsl_config.py', seed=0)
    """
    # the root folder is claimed and locked for the whole run, as each phase's own folder is (utils/claim.py)
    with start_run(config, seed, exp_dir, resume, None, strict, overrides, progress=progress,
                   check=_resolve_and_check, checkpoints=False) as run:
        cfg = freeze(run.cfg)  # model shapes filled: every phase and start checkpoint builds the same model
        ids = variation_ids(cfg.env) or []  # checked by _resolve_and_check
        return _run_gsl(cfg, run.exp_dir, ids, seed, resume, address, progress, run.start)


def _resolve_and_check(cfg: Any) -> None:
    """Before the folder is claimed: the model shapes from one probe env, then every GSL check."""
    fill_model_shapes_from_env(cfg)
    check_gsl_config(cfg)


def _run_gsl(cfg: Any, root: Path, ids: list[int], seed: int, resume: bool, address: str | None, progress: bool,
             start: float) -> dict[str, Any]:
    """The phases of :func:`gsl_pipeline` in its claimed folder ``root``."""
    state = GslState.read(root, ids, seed) if resume else GslState(ids, seed)
    earlier = set(state.phases_done)  # phases a resumed run finds done: kept, not redone
    log = setup_console_logging()
    g = cfg.gsl
    p1 = _run_phase(root / PHASE1, lambda r: serial_pipeline(
        phase1_config(cfg), seed, g.phase1_max_env_step, exp_dir=root / PHASE1, resume=r, progress=progress))
    _mark(root, state, PHASE1, env_step=p1["env_step"], ended_by=_phase1_end(p1))
    if state.phase1_per_variation is None:
        state.phase1_per_variation = evaluate_per_variation(cfg, _final_ckpt(root / PHASE1), ids, seed)
        state.low_variations = worst_variations(state.phase1_per_variation, g.n_low)
        state.specialist_subsets = split_variations(state.low_variations, g.n_specialists)
        _save_state(root, state)
    subsets = state.specialist_subsets or []
    log.info(f"[gsl] phase I {_earlier(PHASE1, earlier)} ({p1['env_step']} env steps, ended by "
             f"{state.phases[PHASE1]['ended_by']}); specialists on {subsets}")
    specialists = _specialists(cfg, root, state, subsets, seed, address, progress, earlier)
    if DEMOS not in state.phases_done:
        state.demos = collect_gsl_demos(cfg, root, subsets, ids, seed)
        _mark(root, state, DEMOS)
    demos = state.demos or {}
    log.info(f"[gsl] demos {_earlier(DEMOS, earlier)}: {demos['n_episode_kept']} episodes, {demos['n_step']} steps")
    p2 = _run_phase(root / PHASE2, lambda r: _phase2(cfg, root, demos["files"], seed, r, progress))
    _mark(root, state, PHASE2, env_step=p2["env_step"])
    if state.phase2_per_variation is None:
        state.phase2_per_variation = evaluate_per_variation(cfg, _final_ckpt(root / PHASE2), ids, seed)
    state.env_steps = step_accounting(p1["env_step"], [s["env_step"] for s in specialists], demos["env_step"],
                                      p2["env_step"])
    state.summary = _summary(state.phase1_per_variation, state.phase2_per_variation)
    state.wall_seconds, state.exp_dir = round(time.perf_counter() - start, 3), str(root)
    _save_state(root, state)
    log.info(f"[gsl] done: mean return {state.summary['phase1']['return_mean']:.3f} -> "
             f"{state.summary['phase2']['return_mean']:.3f}, {state.env_steps['total']} env steps; {root}")
    return state.to_json()


def _earlier(phase: str, earlier: set[str]) -> str:
    """How a log line names a phase that a resumed run found done (and did not redo)."""
    return "kept from the earlier run" if phase in earlier else "done"


def _specialists(cfg: Any, root: Path, state: GslState, subsets: list[list[int]], seed: int, address: str | None,
                 progress: bool, earlier: set[str]) -> list[dict[str, Any]]:
    """Train the specialists (those a resumed run finds finished are kept) and mark each one done, in order."""
    results = run_specialists(cfg, root, subsets, seed, address, progress)
    state.specialists = [{"variations": s, "env_step": r["env_step"], "eval_return": r["eval_return"]}
                         for s, r in zip(subsets, results, strict=True)]
    names = [specialist_name(k) for k in range(len(subsets))]
    for name, row in zip(names, state.specialists, strict=True):
        _mark(root, state, name, env_step=row["env_step"], variations=row["variations"])
    kept = all(name in earlier for name in names)
    setup_console_logging().info(f"[gsl] specialists {'kept from the earlier run' if kept else 'done'} "
                                 f"({[row['env_step'] for row in state.specialists]} env steps)")
    return state.specialists


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
    for path in _as_list(g.get("extra_demo_path")):
        check_demo_env(path, cfg.env)
    phase1_config(cfg)  # the phases' configs compile (before anything is written)
    phase2_config(cfg, [])
    return ids


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


def _subset_env(cfg: Any, subset: list[int], per_variation: int) -> dict[str, Any]:
    return {"env": {"variations": list(subset), "n_evaluator_episode": len(subset) * per_variation}}


def specialist_config(cfg: Any, subset: list[int]) -> Any:
    """Specialist: the phase-I policy, its env restricted to ``subset`` (collector and evaluator), its
    ``policy.learn`` with ``gsl.specialist_learn`` merged in (e.g. a larger entropy bonus to explore its few
    variations)."""
    changes = deep_merge(_subset_env(cfg, subset, int(cfg.gsl.eval_episodes_per_variation)), RESUME_CKPT_AT_EVAL)
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


def _run_phase(folder: Path, run: Any) -> dict[str, Any]:
    """A finished phase's result; else ``run(resume)``: resumed where the folder holds a checkpoint, from scratch
    (the folder cleared) where a killed run left none."""
    done = folder / "result.json"
    if done.is_file():
        return json.loads(done.read_text())
    can_resume = latest_checkpoint(folder / "ckpt") is not None
    if folder.exists() and not can_resume:
        shutil.rmtree(folder)
    return run(can_resume)


def _final_ckpt(folder: Path) -> Path:
    ckpt = latest_checkpoint(folder / "ckpt")
    if ckpt is None:
        raise ConfigError(f"{folder} finished without a final checkpoint: keep the learner's "
                          f"policy.learn.learner.hook.save_ckpt_after_run=True")
    return ckpt


def start_checkpoint(phase_cfg: Any, source: Path, target: Path) -> Path:
    """Write a checkpoint for ``phase_cfg``'s policy holding the weights of ``source`` and fresh counters (the
    optimiser state too where the policy type is the same); a new phase counts its own env steps."""
    src = load_checkpoint(source)
    policy = build(phase_cfg, "policy", enable_field=("learn",))
    state = policy.learn_mode.state_dict()
    if src.get("policy_type") == phase_cfg.policy.type:
        state = {**state, **src["policy"]}
    else:
        state["model"] = src["policy"]["model"]
    return save_checkpoint(target, {"policy": state, "train_iter": 0, "env_step": 0,
                                    "best_eval_return": float("-inf"), "policy_type": phase_cfg.policy.type})


def _phase2(cfg: Any, root: Path, demo_files: list[str], seed: int, resume: bool, progress: bool) -> dict[str, Any]:
    p2cfg = phase2_config(cfg, demo_files)
    start = None if resume else start_checkpoint(p2cfg, _final_ckpt(root / PHASE1), root / "starts" / "phase2.pth.tar")
    return serial_pipeline(p2cfg, seed, cfg.gsl.phase2_max_env_step, exp_dir=root / PHASE2, resume=resume,
                           load_ckpt=start, progress=progress)


def train_specialist(cfg: Any, root: Path, k: int, subset: list[int], seed: int, progress: bool) -> dict[str, Any]:
    """Specialist ``k``: start from the phase-I generalist's final weights, train on ``subset`` only (resumed where a
    killed run left a checkpoint, returned as is where it finished)."""
    import_plugins(cfg)  # a fresh Ray worker process knows only what it imports
    scfg = specialist_config(cfg, subset)
    folder = root / specialist_name(k)

    def run(resume: bool) -> dict[str, Any]:
        start = None if resume else start_checkpoint(scfg, _final_ckpt(root / PHASE1),
                                                     root / "starts" / f"{specialist_name(k)}.pth.tar")
        return serial_pipeline(scfg, seed, cfg.gsl.specialist_max_env_step, exp_dir=folder, resume=resume,
                               load_ckpt=start, progress=progress)

    return _run_phase(folder, run)


class SpecialistActor:
    """A Ray actor that trains one specialist (the same function the in-process path calls)."""

    def train(self, cfg: Any, root: str, k: int, subset: list[int], seed: int) -> dict[str, Any]:
        return train_specialist(cfg, Path(root), k, subset, seed, progress=False)


def run_specialists(cfg: Any, root: Path, subsets: list[list[int]], seed: int, address: str | None,
                    progress: bool) -> list[dict[str, Any]]:
    """Train every specialist; in parallel as Ray actors when ``gsl.use_ray`` (local instance, or ``address``)."""
    root = root.resolve()
    todo = [k for k in range(len(subsets)) if not (root / specialist_name(k) / "result.json").is_file()]
    if cfg.gsl.use_ray and len(todo) > 0:
        from ding_lite.entry.parallel import import_ray, ray_session

        ray = import_ray()
        with ray_session(ray, address, cfg.gsl.ray_num_cpus):
            _train_on_actors(ray, cfg, root, subsets, todo, seed)
    return [train_specialist(cfg, root, k, s, SeedPlan(seed).specialist(k), progress) for k, s in enumerate(subsets)]


def _train_on_actors(ray: Any, cfg: Any, root: Path, subsets: list[list[int]], todo: list[int], seed: int) -> None:
    """One actor per CPU of the cluster (at most one per specialist), each training the next waiting specialist when
    it is done with one: a fresh worker process (Python, torch) per specialist would cost more than a tiny one."""
    actor_cls = ray.remote(num_cpus=1, max_restarts=0)(SpecialistActor)
    n_actors = max(1, min(len(todo), int(ray.cluster_resources().get("CPU", 1))))
    actors = [actor_cls.remote() for _ in range(n_actors)]
    waiting = list(todo)
    pending: dict[Any, Any] = {}

    def give(actor: Any) -> None:
        k = waiting.pop(0)
        pending[actor.train.remote(cfg, str(root), k, subsets[k], SeedPlan(seed).specialist(k))] = actor

    try:
        for actor in actors[:len(waiting)]:
            give(actor)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            ray.get(done[0])  # a specialist's error stops the run here
            actor = pending.pop(done[0])
            if waiting:
                give(actor)
    finally:
        for actor in actors:
            ray.kill(actor)


def evaluate_per_variation(cfg: Any, ckpt: Path, ids: list[int], seed: int) -> dict[str, dict[str, Any]]:
    """Return and success per variation of ``ckpt``'s eval policy, ``gsl.eval_episodes_per_variation`` episodes of
    each variation (the eval envs' seeds, so phase I and phase II are measured alike)."""
    ecfg = phase_config(cfg, _subset_env(cfg, ids, int(cfg.gsl.eval_episodes_per_variation)))
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
        episodes, steps = _demo_rollout(cfg, _demo_ckpt(root / name), subset, n_episode, seed)
        kept = keep_successful(episodes, lambda e: is_success(e.end))
        env_step += steps
        per_source[name] = {"variations": subset, "n_episode": n_episode, "n_episode_kept": len(kept)}
        if not kept:
            continue
        meta = dict(env={"type": cfg.env.type, "env_id": cfg.env.get("env_id")}, variations=subset, source=name,
                    policy=cfg.policy.type, policy_mode="eval", seed=seed, success_rule=rule,
                    n_episode_rolled_out=n_episode, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        dataset = episodes_to_dataset([e.steps for e in kept], [e.end.episode_return for e in kept], meta)
        files.append(str(write_demo(root / DEMOS / f"{name}.npz", dataset)))
        kept_total, steps_total = kept_total + len(kept), steps_total + len(dataset)
    if not files:  # phase II then trains as plain PPO; the run's result says so
        setup_console_logging().warning(f"[gsl] no successful demo episode ({rule}): phase II has no demo term; "
                                        f"give the specialists more env steps (gsl.specialist_max_env_step)")
    summary = {"files": files, "n_episode_kept": kept_total, "n_step": steps_total, "env_step": env_step,
               "success_rule": rule, "sources": per_source}
    write_json(root / DEMOS / "summary.json", summary)
    return summary


def _demo_ckpt(folder: Path) -> Path:
    """A specialist's best evaluated checkpoint (its policy may lose a level it had found while it keeps exploring;
    ``-m collect_demo`` rolls out the best one too); the generalist's final one, which phase II continues from."""
    best = folder / "ckpt" / "ckpt_best.pth.tar"
    return best if folder.name != PHASE1 and best.is_file() else _final_ckpt(folder)


def _demo_rollout(cfg: Any, ckpt: Path, subset: list[int], n_episode: int, seed: int) -> tuple[list[Any], int]:
    """Episodes of ``ckpt``'s eval policy on ``subset``, and the env steps they took."""
    dcfg = phase_config(cfg, _subset_env(cfg, subset, 1))
    env, _ = build_env_managers(dcfg, seed, evaluate=False)
    try:
        policy = build(dcfg, "policy", enable_field=("eval",))
        load_policy_weights(policy.eval_mode, ckpt, model_only=True)
        steps = [0]

        def act(obs: Any) -> Any:
            steps[0] += env.env_num
            return policy.eval_mode.forward(obs)["action"]

        return rollout_episodes(env, act, n_episode), steps[0]
    finally:
        env.close()


def _phase1_end(result: Mapping[str, Any]) -> str:
    """Why phase I ended: 'stop_value', 'plateau' (the plateau evaluator stopped it) or 'budget'."""
    if not result["stop"]:
        return "budget"
    reached = result["stop_value"] is not None and result["eval_return"] >= result["stop_value"]
    return "stop_value" if reached else "plateau"


def _summary(phase1: PerVariation, phase2: PerVariation) -> dict[str, Any]:
    """Mean return and success rate over all variations after phase I and after phase II."""
    out = {}
    for phase, table in (("phase1", phase1), ("phase2", phase2)):
        rows = list(table.values())
        succ = [r["success_rate"] for r in rows if r["success_rate"] is not None]
        out[phase] = {"return_mean": sum(r["return_mean"] for r in rows) / len(rows),
                      "success_rate": sum(succ) / len(succ) if succ else None}
    return out


def _save_state(root: Path, state: GslState) -> None:
    root.mkdir(parents=True, exist_ok=True)
    write_json(root / "result.json", state.to_json())


def _mark(root: Path, state: GslState, phase: str, **info: Any) -> None:
    state.mark(phase, **info)
    _save_state(root, state)
