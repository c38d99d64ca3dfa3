"""The SB3 side of the benchmark suites (``benchmarks/zoo.py``): SB3's PPO with the hyperparameters of a dizoo PPO
config, evaluated as ding_lite's runs are, and resumable.

The translation (:func:`sb3_ppo_kwargs`): ``n_steps = n_sample / collector_env_num`` over a ``DummyVecEnv`` of
``collector_env_num`` gymnasium envs, ``batch_size``, ``n_epochs = epoch_per_collect``, the learning rate (annealed
linearly to 0 over the run where the config anneals it), γ, λ, ``clip_range``, ``clip_range_vf = value_clip_ratio``,
``ent_coef``, ``vf_coef = value_weight / 2`` (SB3's value loss is the mean squared error; ding_lite's, as CleanRL's,
has a factor 1/2), ``max_grad_norm``, the advantage normalisation, the nets (``net_arch``, activation, orthogonal
init, initial log-std), and ``VecNormalize`` for the observation and reward normalisation with the same clips and γ.
The annealed learning rate reaches 0 where ding_lite's does: ``lr_decay_iter`` gradient steps are
``lr_decay_iter x n_sample / (epoch_per_collect x minibatches per collect)`` env steps, whatever the run's budget.
One difference remains that no setting removes: SB3 clips the value as ``v_old + clip(v - v_old)`` alone, ding_lite
(as CleanRL and OpenAI baselines) takes the larger of the clipped and unclipped squared errors. A config SB3's PPO
cannot express (value normalisation, advantages recomputed each epoch, dual clip, DI-engine's per-collect
``lr_scheduler``, a shared encoder, a state-dependent or bounded Gaussian) is a ``ValueError`` naming the key.

DQN configs (:func:`sb3_dqn_kwargs`) translate to SB3's DQN, which has one fixed form: a plain Q-net (no dueling
head, no double-Q target), the Huber loss, one-step targets and a linear ε schedule; a config outside that form is a
``ValueError`` naming the key, not a silently different peer. ``train_freq = n_sample / collector_env_num`` vec-env
steps, ``gradient_steps = update_per_collect``, ``target_update_interval`` in env steps (ding_lite counts gradient
steps: ``target_update_freq x n_sample / update_per_collect``), ``exploration_fraction = eps.decay / budget``.

Evaluations as on ding_lite's side: at the start and after every ``eval_every`` env steps of training (at the start
of the rollout that follows), ``eval_episodes`` deterministic episodes over as many eval envs, seeded with
``seed + 1000``, the observation statistics (where the config normalises them) frozen at the training run's.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks.zoo import RunClock, RunSpec, append_line, curve_line, kept_curve

MODEL_FILE, NORM_FILE, BUFFER_FILE = "sb3_model.zip", "sb3_vecnormalize.pkl", "sb3_replay_buffer.pkl"


def sb3_ppo_kwargs(cfg: Any, budget: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(PPO keyword arguments, VecNormalize keyword arguments)`` for a compiled dizoo PPO config."""
    import torch

    from ding_lite.policy.base_policy import resolve_discount_factor

    policy, learn, collect, model = cfg.policy, cfg.policy.learn, cfg.policy.collect, cfg.policy.model
    _check_sb3_form("PPO", {
        "learn.value_norm": (learn.value_norm, False), "recompute_adv": (policy.recompute_adv, False),
        "learn.dual_clip": (learn.dual_clip, None), "learn.lr_scheduler": (learn.lr_scheduler, None),
        "model.share_encoder": (model.share_encoder, False), "model.sigma_type": (model.sigma_type, "fixed"),
        "model.bound_type": (model.bound_type, None)})
    n_env = int(cfg.env.collector_env_num)
    gamma = resolve_discount_factor(policy)
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[model.activation]
    hidden = list(model.encoder_hidden_size_list)
    ppo = dict(
        n_steps=int(collect.n_sample) // n_env, batch_size=int(learn.batch_size), n_epochs=int(learn.epoch_per_collect),
        learning_rate=_learning_rate(learn, int(collect.n_sample), budget),
        gamma=gamma, gae_lambda=float(collect.gae_lambda), clip_range=float(learn.clip_ratio),
        clip_range_vf=learn.value_clip_ratio, ent_coef=float(learn.entropy_weight),
        vf_coef=float(learn.value_weight) / 2, max_grad_norm=learn.grad_clip_value or math.inf,
        normalize_advantage=bool(learn.adv_norm),
        policy_kwargs=dict(net_arch=dict(pi=hidden, vf=hidden), activation_fn=activation,
                           ortho_init=bool(model.ortho_init), log_std_init=float(model.init_log_std)),
    )
    norm = dict(norm_obs=bool(model.obs_norm), norm_reward=bool(collect.reward_scale),
                clip_obs=float(model.obs_norm_clip), clip_reward=float(collect.reward_clip or math.inf), gamma=gamma)
    return ppo, norm


def _learning_rate(learn: Any, n_sample: int, budget: int) -> Any:
    """SB3's learning rate for ``budget`` env steps: ding_lite's constant one, or its linear decay to 0 over
    ``lr_decay_iter`` gradient steps as a function of SB3's progress remaining (1 - env steps / budget)."""
    lr = float(learn.learning_rate)
    if not learn.lr_decay_iter:
        return lr
    # in env steps: a collect of n_sample rows is epoch_per_collect passes of ceil(n_sample / batch_size) minibatches;
    # annealing over the budget instead made a shorter run (--env-steps) end at 0 where ding_lite's had barely moved
    per_collect = int(learn.epoch_per_collect) * math.ceil(n_sample / int(learn.batch_size))
    span = int(learn.lr_decay_iter) * n_sample / per_collect
    return lambda progress: lr * max(1.0 - (1.0 - progress) * budget / span, 0.0)


def _check_sb3_form(algo: str, fixed: dict[str, tuple[Any, Any]]) -> None:
    """A ``ValueError`` naming the first key whose value SB3's ``algo`` has no setting for (``fixed``: key -> (the
    config's value, SB3's only value))."""
    for key, (value, sb3) in fixed.items():
        if value != sb3:
            raise ValueError(f"SB3's {algo} has no policy.{key}={value!r} (it has {sb3!r} only): no SB3 peer for "
                             f"this config")


def sb3_dqn_kwargs(cfg: Any, budget: int) -> dict[str, Any]:
    """SB3 ``DQN`` keyword arguments for a compiled dizoo DQN config run for ``budget`` env steps; a
    ``ValueError`` naming the key where the config is outside SB3's one form of DQN."""
    from ding_lite.policy.base_policy import resolve_discount_factor

    policy, learn, collect, model = cfg.policy, cfg.policy.learn, cfg.policy.collect, cfg.policy.model
    eps = policy.other.eps
    fixed = {"model.dueling": (model.dueling, False), "model.head_layer_num": (model.head_layer_num, 0),
             "model.activation": (model.activation, "relu"), "learn.double": (learn.double, False),
             "learn.loss_type": (learn.loss_type, "huber"), "nstep": (policy.nstep, 1),
             "other.eps.type": (eps.type, "linear"), "learn.target_theta": (learn.target_theta, None),
             "learn.replay_ratio": (learn.replay_ratio, None), "priority": (policy.priority, False),
             "learn.lr_decay_iter": (learn.lr_decay_iter, None)}  # SB3's DQN here: a constant learning rate
    _check_sb3_form("DQN", fixed)
    n_env, n_sample, updates = int(cfg.env.collector_env_num), int(collect.n_sample), int(learn.update_per_collect)
    if n_sample % n_env:
        raise ValueError(f"policy.collect.n_sample={n_sample} is not a multiple of env.collector_env_num={n_env}")
    return dict(
        learning_rate=float(learn.learning_rate), buffer_size=int(policy.other.replay_buffer.replay_buffer_size),
        learning_starts=int(policy.learning_starts or 0), batch_size=int(learn.batch_size), tau=1.0,
        # γ as ding_lite resolves it: DI-engine's learn/collect.discount_factor, where set, win over the home key
        gamma=resolve_discount_factor(policy), train_freq=n_sample // n_env, gradient_steps=updates,
        target_update_interval=int(learn.target_update_freq) * n_sample // updates,
        exploration_fraction=min(float(eps.decay) / budget, 1.0), exploration_initial_eps=float(eps.start),
        exploration_final_eps=float(eps.end), max_grad_norm=learn.grad_clip_value or math.inf,
        policy_kwargs=dict(net_arch=list(model.encoder_hidden_size_list)),
    )


def _sb3_model(cfg: Any, budget: int) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """``(SB3 class name, its keyword arguments, VecNormalize keyword arguments or None)`` for a dizoo config."""
    kind = cfg.policy.type
    if kind == "ppo":
        return ("PPO", *sb3_ppo_kwargs(cfg, budget))
    if kind == "dqn":
        return "DQN", sb3_dqn_kwargs(cfg, budget), None
    raise ValueError(f"no SB3 translation of policy type {kind!r} (known: ppo, dqn)")


def run_sb3(spec: RunSpec) -> dict[str, Any]:
    """Train the SB3 counterpart of the task's config (PPO or DQN) for ``spec.env_steps`` (resumed from the run's
    last save if there is one)."""
    import gymnasium as gym
    import stable_baselines3
    import torch
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from ding_lite.build import load_config
    from ding_lite.utils.seed import EVAL_SEED_OFFSET

    torch.set_num_threads(1)
    torch.set_flush_denormal(False)  # SB3 keeps torch's default
    task, folder = spec.task_spec(), Path(spec.folder)
    cfg = load_config(str(Path(__file__).resolve().parents[1] / task.config), seed=spec.seed)
    name, kwargs, norm_kwargs = _sb3_model(cfg, spec.env_steps)
    algo = getattr(stable_baselines3, name)
    env_id, n_env = str(cfg.env.env_id), int(cfg.env.collector_env_num)

    def vec(n: int, monitor: bool = False) -> DummyVecEnv:
        return DummyVecEnv([(lambda: Monitor(gym.make(env_id))) if monitor else (lambda: gym.make(env_id))
                            for _ in range(n)])

    resumed = (folder / MODEL_FILE).is_file() and (norm_kwargs is None or (folder / NORM_FILE).is_file())
    if resumed:
        env = vec(n_env) if norm_kwargs is None else VecNormalize.load(str(folder / NORM_FILE), vec(n_env))
        model = algo.load(str(folder / MODEL_FILE), env=env, device="cpu")
        if (folder / BUFFER_FILE).is_file():
            model.load_replay_buffer(str(folder / BUFFER_FILE))
    else:
        env = vec(n_env) if norm_kwargs is None else VecNormalize(vec(n_env), **norm_kwargs)
        model = algo("MlpPolicy", env, seed=spec.seed, device="cpu", **kwargs)
    kept = kept_curve(folder, model.num_timesteps if resumed else -1)
    eval_env = vec(task.eval_episodes, monitor=True) if norm_kwargs is None else \
        VecNormalize(vec(task.eval_episodes, monitor=True), training=False, norm_reward=False,
                     clip_obs=norm_kwargs["clip_obs"])
    eval_env.seed(spec.seed + EVAL_SEED_OFFSET)
    clock = RunClock(kept[-1]["train_seconds"] if kept else 0.0)
    evaluate = _Evaluation(folder, model, eval_env, task.eval_episodes, clock)
    if not kept:
        evaluate()
    callback = _EvalCallback(evaluate, task.eval_every, model.num_timesteps)
    model.learn(total_timesteps=spec.env_steps - model.num_timesteps, reset_num_timesteps=not resumed,
                callback=callback)
    if callback.last != model.num_timesteps:
        evaluate()
    return {"wall_seconds": None, "env_step": int(model.num_timesteps), "resumed": resumed}


class _Evaluation:
    """One evaluation of the model as a curve line, then a save of the model and its statistics (the resume point)."""

    def __init__(self, folder: Path, model: Any, eval_env: Any, episodes: int, clock: RunClock) -> None:
        self.folder, self.model, self.eval_env, self.episodes, self.clock = folder, model, eval_env, episodes, clock

    def __call__(self) -> None:
        import time

        from stable_baselines3.common.evaluation import evaluate_policy

        start = time.perf_counter()
        from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
        from stable_baselines3.common.vec_env import VecNormalize

        normalised = isinstance(self.eval_env, VecNormalize)  # PPO configs normalise, DQN ones do not
        if normalised:
            self.eval_env.obs_rms = self.model.get_env().obs_rms.copy()
        returns, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=self.episodes, deterministic=True,
                                     return_episode_rewards=True)
        seconds = time.perf_counter() - start
        self.clock.eval_seconds += seconds
        append_line(self.folder, curve_line(self.model.num_timesteps, [float(r) for r in returns], seconds,
                                            self.clock))
        save_start = time.perf_counter()
        self.model.save(str(self.folder / MODEL_FILE))
        if normalised:
            self.model.get_env().save(str(self.folder / NORM_FILE))
        if isinstance(self.model, OffPolicyAlgorithm):  # a resumed run goes on with its replay buffer
            self.model.save_replay_buffer(str(self.folder / BUFFER_FILE))
        self.clock.eval_seconds += time.perf_counter() - save_start  # saving is the suite's cost, not SB3's


def _eval_callback_base() -> type:
    from stable_baselines3.common.callbacks import BaseCallback
    return BaseCallback


class _EvalCallback(_eval_callback_base()):  # type: ignore[misc]
    """Evaluates at the start of the first rollout after each ``every`` env steps, i.e. after training on the
    rollouts before it, as ding_lite's train loop evaluates before its next collect."""

    def __init__(self, evaluate: _Evaluation, every: int, start: int) -> None:
        super().__init__()
        self.evaluate, self.every = evaluate, every
        self.next = (start // every + 1) * every
        self.last = start

    def _on_rollout_start(self) -> None:
        if self.num_timesteps >= self.next:
            self.evaluate()
            self.last = self.num_timesteps
            self.next = (self.num_timesteps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        return True
