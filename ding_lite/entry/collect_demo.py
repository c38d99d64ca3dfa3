"""Demo collection: roll out a trained policy, keep its successful episodes, write a demo file (data/demo.py)."""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.build import ConfigLike, build, build_env_managers, load_config
from ding_lite.config.frozen import freeze
from ding_lite.data.demo import episodes_to_dataset, success_rule
from ding_lite.data.demo_file import write_demo
from ding_lite.data.keys import ACTION
from ding_lite.errors import ConfigError, DingLiteError
from ding_lite.league.seats import is_selfplay_config
from ding_lite.runtime.experiment import checkpoint_to_run, experiment_dir
from ding_lite.utils.atomic import check_writable, free_path
from ding_lite.utils.checkpoint import load_checkpoint, load_policy_weights
from ding_lite.utils.log import setup_console_logging
from ding_lite.utils.seed import set_seed
from ding_lite.utils.torch_setup import configure_torch
from ding_lite.worker.episodes import Episode, run_episodes
from ding_lite.worker.evaluator import eval_step_cap

POLICY_MODES = ("eval", "collect")


def collect_demo_pipeline(config: ConfigLike, seed: int | None = 0, load_ckpt: str | Path | None = None,
                          n_episode: int | None = None, demo_path: str | Path | None = None, *,
                          strict: bool = False, overrides: tuple[str, ...] = (), n_seeds: int = 1,
                          exp_name: str | None = None) -> dict[str, Any]:
    """Roll out a checkpoint's policy for ``n_episode`` episodes, keep the successful ones, write a demo file.

    Settings come from the config's ``demo`` section (``policy_mode``, ``n_episode``, ``return_threshold``,
    ``success_key``, ``demo_path``); the arguments override it. An episode succeeds when its final info holds
    ``success_key`` and that value is true, or, for an env that does not report it, when its return is at least
    ``return_threshold`` (default ``env.stop_value``). Episodes are spread evenly over the collector envs (env i runs
    its share, like the evaluator), so short failed episodes are not over-represented;
    ``policy.eval.evaluator.max_episode_steps`` cuts an episode there (truncated), as in evaluations.

    Args:
        config: config file path, ``(main_config, create_config)``, dict or compiled config: the policy's config.
        seed: seed of the envs and torch (None: the config's ``seed``).
        load_ckpt: checkpoint to roll out (default: ``policy.load_path``, else ``<exp_name>/ckpt/ckpt_best.pth.tar``).
        exp_name: the experiment folder of those defaults (default: the config's ``exp_name``), as ``--exp-name``.
        n_episode: episodes to roll out (default ``demo.n_episode``).
        demo_path: output file (default ``demo.demo_path``, else ``<exp_name>/demo.npz``); with ``n_seeds > 1``,
            ``_seed<N>`` is added before the suffix. An existing file is never overwritten, as an earlier run's
            folder is not: the demos go to the first free ``<stem>_<k><suffix>`` (k = 1, 2, ...), logged and
            returned as ``demo_path``.

    Returns:
        Summary: the file, episodes rolled out and kept (and how many of those were truncated), steps kept, returns
        of the kept episodes.

    Example::

        collect_demo_pipeline('cartpole_ppo_config.py', seed=0, load_ckpt='expert/ckpt/ckpt_best.pth.tar',
                              n_episode=20, demo_path='expert/demo.npz')
    """
    cfg = load_config(config, strict=strict, overrides=overrides, seed=seed)
    seed = int(cfg.seed)  # None given: the config's
    if is_selfplay_config(cfg):
        raise ConfigError(f"-m collect_demo rolls out a single-agent env, and env type {cfg.env.type!r} is a "
                          f"multi-agent game (a self-play config): a demo file holds one agent's episodes; evaluate "
                          f"the checkpoint with -m eval (it plays league.eval_opponents)")
    mode, n_episode = _demo_settings(cfg.demo, n_episode)
    is_success, rule = success_rule(cfg.demo.return_threshold, cfg.env.stop_value, cfg.demo.success_key)
    out = _output_path(cfg, demo_path, seed, n_seeds, exp_name)
    check_writable(out)  # a read-only --demo-path fails now, not after the rollouts
    console = setup_console_logging()
    if (free := free_path(out)) != out:  # as a run never writes into an earlier run's folder (it takes <folder>_1)
        console.info(f"[collect_demo] {out} exists (an earlier demo file is never overwritten): writing to {free}")
    ckpt = checkpoint_to_run(cfg, load_ckpt, exp_name, seed)
    state = load_checkpoint(ckpt)
    set_seed(seed)
    configure_torch()
    start = time.perf_counter()
    env_manager, _ = build_env_managers(cfg, seed, evaluate=False)
    freeze(cfg)  # resolved (model shapes filled): the same values for every part from here on
    try:
        policy = build(cfg, "policy", enable_field=(mode,))
        act = _acting_fn(policy, mode, ckpt, state)
        episodes = rollout_episodes(env_manager, act, n_episode, eval_step_cap(cfg.policy.eval.evaluator))
    finally:
        env_manager.close()
    kept = [e for e in episodes if is_success(e.end)]
    returns = [e.end.episode_return for e in episodes]
    if not kept:
        raise DingLiteError(f"none of the {n_episode} episodes of {ckpt} succeeded ({rule}; returns "
                            f"{min(returns):.1f} to {max(returns):.1f}): "
                            f"{no_success_hint([e.end for e in episodes], cfg.demo.success_key)}")
    metadata = dict(
        env={"type": cfg.env.type, "env_id": cfg.env.get("env_id")},
        policy=cfg.policy.type, policy_mode=mode, checkpoint=str(ckpt), seed=seed, success_rule=rule,
        n_episode_rolled_out=n_episode, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    dataset = episodes_to_dataset([e.steps for e in kept], [e.end.episode_return for e in kept], metadata,
                                  final_obs=[e.final_obs for e in kept],
                                  final_action_mask=[e.final_action_mask for e in kept])
    out = write_demo(out, dataset, overwrite=False)  # the first free name now (another run may have taken one)
    n_truncated = int(dataset.truncated.sum())
    cut = f" ({n_truncated} of them truncated: cut by a time limit or the step cap)" if n_truncated else ""
    console.info(f"[collect_demo] {out}: kept {len(kept)}/{n_episode} episodes{cut} ({rule}), {len(dataset)} steps, "
                 f"mean kept return {np.mean(dataset.episode_return):.2f}")
    return {"demo_path": str(out), "checkpoint": str(ckpt), "n_episode_rolled_out": n_episode,
            "n_episode_kept": len(kept), "n_episode_truncated": n_truncated, "n_step": len(dataset),
            "kept_returns": [float(r) for r in dataset.episode_return], "all_returns": [float(r) for r in returns],
            "seconds": round(time.perf_counter() - start, 3)}


def _demo_settings(demo: Mapping[str, Any], n_episode: int | None) -> tuple[str, int]:
    """The policy mode that rolls out and the number of episodes (``n_episode``, else ``demo.n_episode``), checked."""
    mode = demo["policy_mode"]
    if mode not in POLICY_MODES:
        raise ConfigError(f"demo.policy_mode must be one of {POLICY_MODES}, got {mode!r}")
    n_episode = int(n_episode if n_episode is not None else demo["n_episode"])
    if n_episode < 1:
        raise ConfigError(f"the number of demo episodes (--n-episode / demo.n_episode) must be at least 1, got "
                          f"{n_episode}")
    return mode, n_episode


def rollout_episodes(env_manager: Any, act: Callable[[np.ndarray], np.ndarray], n_episode: int,
                     max_episode_steps: int | None = None) -> list[Episode]:
    """Run ``n_episode`` episodes (env i runs ``n_episode // N`` plus one of the remainder; later episodes of an env
    that is ahead are not counted) and return each with its steps. Box actions are stored as executed (clipped).
    ``max_episode_steps`` (``policy.eval.evaluator.max_episode_steps``) cuts an episode there, truncated (its
    ``end.terminated`` False, an empty info, its last step's ``truncated`` flag set): it is kept if its return so far
    reaches the return threshold."""
    return run_episodes(env_manager, act, n_episode, max_episode_steps=max_episode_steps, record=True).episodes()


def no_success_hint(ends: list[Any], success_key: str | None) -> str:
    """What to change when no episode succeeded: where the env reported ``info[success_key]`` for every episode, that
    decided (a lower return threshold changes nothing); else the threshold."""
    if success_key and all(isinstance(end.info, Mapping) and success_key in end.info for end in ends):
        return (f"train the policy longer (the env's info['{success_key}'] decides; demo.success_key='' keeps "
                f"episodes by return instead)")
    return "train the policy longer or lower demo.return_threshold"


def _acting_fn(policy: Any, mode: str, ckpt: Path, state: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    if mode == "eval":
        load_policy_weights(policy.eval_mode, ckpt, state)
        forward = policy.eval_mode.forward  # once: each access of a mode builds it anew
        return lambda obs: forward(obs)[ACTION]
    load_policy_weights(policy.collect_mode, ckpt, state)
    env_step = int(state.get("env_step", 0))  # schedules such as DQN's epsilon continue where training stopped
    collect = policy.collect_mode.forward
    return lambda obs: collect(obs, env_step=env_step)[ACTION]


def _output_path(cfg: Any, demo_path: str | Path | None, seed: int, n_seeds: int, exp_name: str | None) -> Path:
    path = Path(demo_path or cfg.demo.demo_path or experiment_dir(cfg, exp_name, seed, 1) / "demo.npz")
    return path.with_name(f"{path.stem}_seed{seed}{path.suffix}") if n_seeds > 1 else path
