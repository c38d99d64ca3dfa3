"""Evaluation pipeline: load a checkpoint and report the mean ± std return over N episodes (and record videos)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ding_lite.build import (
    ConfigLike,
    build,
    build_env_manager,
    build_env_managers,
    build_evaluator,
    load_config,
)
from ding_lite.config.frozen import freeze
from ding_lite.errors import ConfigError
from ding_lite.league.seats import is_selfplay_config
from ding_lite.runtime.experiment import checkpoint_to_run
from ding_lite.runtime.model_drift import warn_of_model_drift
from ding_lite.runtime.selfplay import checkpoint_evaluator, resolve_selfplay_config
from ding_lite.utils.atomic import check_writable
from ding_lite.utils.checkpoint import load_checkpoint, load_policy_weights
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.seed import SeedPlan, set_seed
from ding_lite.utils.torch_setup import configure_torch
from ding_lite.worker.evaluator import eval_step_cap
from ding_lite.worker.video import (
    FrameEnv,
    import_ffmpeg,
    prepare_offscreen_rendering,
    record_episodes,
    render_section,
)


def eval_pipeline(config: ConfigLike, seed: int | None = 0, load_ckpt: str | Path | None = None,
                  n_episode: int | None = None, *, strict: bool = False,
                  overrides: tuple[str, ...] = (), exp_name: str | None = None, n_seeds: int = 1,
                  video: str | Path | None = None, video_episodes: int = 1) -> dict[str, Any]:
    """Evaluate a checkpoint's policy (eval mode) over ``n_episode`` episodes (default ``env.n_evaluator_episode``).

    Without ``load_ckpt`` the config's ``policy.load_path`` (DI-engine's key), else the experiment's
    ``ckpt/ckpt_best.pth.tar`` is used: the folder a serial run with the same ``exp_name`` (default: the config's) and
    number of seeds wrote. ``seed`` None: the config's ``seed``. Returns mean, std and all returns.

    With ``video`` (a folder), the first ``video_episodes`` episodes of the evaluator's first env are also recorded
    as ``<video>/eval_ep<k>.mp4`` (see :mod:`ding_lite.worker.video`); the result lists them under ``videos``.
    """
    if video is not None:
        prepare_offscreen_rendering()  # before any env (and MuJoCo) is loaded
        if video_episodes < 1:
            raise ConfigError(f"--video-episodes must be at least 1, got {video_episodes}")
        check_writable(Path(video) / "eval_ep0.mp4")  # a read-only --video folder fails now, not after the episodes
    cfg = load_config(config, strict=strict, overrides=overrides, seed=seed)
    seed = int(cfg.seed)  # None given: the config's
    if video is not None:
        render_section(cfg.env)  # an env type that cannot render fails first, whatever the checkpoint
    load_ckpt = checkpoint_to_run(cfg, load_ckpt, exp_name, seed, n_seeds)
    state = load_checkpoint(load_ckpt)
    set_seed(seed)
    configure_torch()
    selfplay = is_selfplay_config(cfg)  # a game: played against the league's eval opponents
    evaluator_env = _selfplay_env(cfg, seed) if selfplay else build_env_managers(cfg, seed, collect=False)[1]
    freeze(cfg)  # resolved (model shapes filled): the same values for every part from here on
    warn_of_model_drift(cfg, load_ckpt, "-m eval")
    frames = None
    try:
        if video is not None:  # an env that cannot render fails here, before anything is written
            import_ffmpeg()
            frames = FrameEnv(cfg.env, int(cfg.env.evaluator_env_num))
        policy = build(cfg, "policy", enable_field=("eval",))
        load_policy_weights(policy.eval_mode, load_ckpt, state)
        # the training run's eval seeds: the best checkpoint's eval return is reproduced exactly
        evaluator = _evaluator(cfg, evaluator_env, policy, seed, n_episode, selfplay)
        result = evaluator.eval(int(state.get("train_iter", 0)), int(state.get("env_step", 0)))
        videos = [] if frames is None or video is None else record_episodes(
            frames, policy.eval_mode, Path(video), "eval", video_episodes, SeedPlan(seed).evaluator,
            eval_step_cap(cfg.policy.eval.evaluator))  # cut where the evaluation cuts its episodes
    finally:
        evaluator_env.close()
        if frames is not None:
            frames.close()
    summary = {"checkpoint": str(load_ckpt), "n_episode": len(result.returns), "return_mean": result.mean,
               "return_std": result.std, "returns": [float(r) for r in result.returns],
               **({"eval_table": evaluator.table} if selfplay else {}),
               **({"videos": [{"path": str(v.path), "return": v.episode_return, "length": v.length}
                              for v in videos]} if video is not None else {})}
    console = setup_console_logging()
    console.info(f"[eval] {load_ckpt}: return {result.mean:.2f} ± {result.std:.2f} over "
                 f"{len(result.returns)} episodes")
    for opponent, row in summary.get("eval_table", {}).items():
        console.info(f"[eval] against {opponent}: win {row['win']:.2f}, draw {row['draw']:.2f}, "
                     f"loss {row['loss']:.2f} over {row['games']:.0f} games")
    for v in videos:
        console.info(f"[video] {v.path}: return {v.episode_return:.2f}, {v.length} steps")
    return summary


def _selfplay_env(cfg: Any, seed: int) -> Any:
    """The evaluator's games of a self-play config (its league checked against the game, the model shapes filled),
    seeded as the run's evaluations."""
    resolve_selfplay_config(cfg)
    return build_env_manager(cfg.env, cfg.env.evaluator_env_num, SeedPlan(seed).evaluator)


def _evaluator(cfg: Any, env: Any, policy: Any, seed: int, n_episode: int | None, selfplay: bool) -> Any:
    """The config's evaluator over ``env``; a self-play config's plays the league's eval opponents (the return: the
    win rate against the first), as the run's evaluations do."""
    if selfplay:
        n = int(n_episode if n_episode is not None else cfg.env.n_evaluator_episode)
        return checkpoint_evaluator(cfg, env, policy, SeedPlan(seed), n)
    return build_evaluator(cfg, env, policy, SeedPlan(seed).evaluator, None if n_episode is None else int(n_episode))
