"""The dizoo configs that name the source of their hyperparameters run exactly those: each compiled config (policy
defaults filled in) against the source's values, written out here by hand in ding_lite's units, with the source
named. Differences are the documented ones, and the docstring says so. Sources read: rl-baselines3-zoo
``hyperparams/{sac,td3,dqn,ppo}.yml`` (SB3's defaults where an entry sets nothing: SAC ``stable_baselines3/sac/sac.py``,
TD3 ``td3/td3.py``, PPO ``ppo/ppo.py``), CleanRL ``cleanrl/ppo_continuous_action.py``'s ``Args``, DI-engine
``dizoo/atari/config/serial/pong/pong_dqn_config.py``, and the published tables (CleanRL ``docs/benchmark/*.md``,
rl-zoo ``benchmark.md``)."""
from __future__ import annotations

import sys
from typing import Any

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))

pytestmark = pytest.mark.unittest


def _compiled(rel: str) -> dict[str, Any]:
    """The compiled config as dotted keys (``policy.learn.batch_size``...)."""
    from ding_lite.build import load_config

    flat: dict[str, Any] = {}

    def walk(d: Any, prefix: str) -> None:
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            else:
                flat[f"{prefix}{k}"] = v
    walk(load_config(str(REPO_ROOT / rel), seed=0), "")
    return flat


def _doc(rel: str) -> str:
    import ast

    return " ".join((ast.get_docstring(ast.parse((REPO_ROOT / rel).read_text())) or "").split())


def _check(rel: str, expected: dict[str, Any]) -> None:
    got = _compiled(rel)
    assert {k: got[k] for k in expected} == expected


# SB3 SAC defaults (sac.py): lr 3e-4, buffer 1e6, batch 256, tau 0.005, gamma 0.99, train_freq 1, gradient_steps 1,
# ent_coef 'auto' (starts at 1.0), target_entropy 'auto' (-dim(A)), net_arch [256, 256]; 1 env (rl-zoo's n_envs)
SB3_SAC = {"env.collector_env_num": 1, "policy.collect.n_sample": 1, "policy.learn.update_per_collect": 1,
           "policy.model.hidden_size_list": [256, 256], "policy.learn.batch_size": 256,
           "policy.other.replay_buffer.replay_buffer_size": 1_000_000, "policy.learn.target_theta": 0.005,
           "policy.discount_factor": 0.99, "policy.learn.alpha": 1.0, "policy.learn.auto_alpha": True,
           "policy.learn.target_entropy": None}
# SB3 TD3 defaults (td3.py): buffer 1e6, tau 0.005, gamma 0.99, policy_delay 2, target_policy_noise 0.2,
# target_noise_clip 0.5, net_arch [400, 300]
SB3_TD3 = {"env.collector_env_num": 1, "policy.collect.n_sample": 1, "policy.learn.update_per_collect": 1,
           "policy.model.hidden_size_list": [400, 300], "policy.learn.batch_size": 256,
           "policy.other.replay_buffer.replay_buffer_size": 1_000_000, "policy.learn.target_theta": 0.005,
           "policy.discount_factor": 0.99, "policy.learn.actor_update_freq": 2, "policy.learn.noise_sigma": 0.2,
           "policy.learn.noise_range.min": -0.5, "policy.learn.noise_range.max": 0.5}


@pytest.mark.parametrize("env", ["hopper", "halfcheetah"])
def test_mujoco_sac_td3_configs_are_rl_zoos(env: str) -> None:
    lr = 3e-4  # sac.yml HalfCheetah-v4 &mujoco-defaults (Hopper-v4 merges it): learning_starts 10000, else SB3's
    _check(f"dizoo/mujoco/{env}/config/{env}_sac_config.py", {
        **SB3_SAC, "policy.learning_starts": 10_000, "policy.learn.learning_rate_q": lr,
        "policy.learn.learning_rate_policy": lr, "policy.learn.learning_rate_alpha": lr})
    # td3.yml HalfCheetah-v4 &mujoco-defaults: learning_starts 10000, normal noise 0.1, train_freq 1, gradient_steps 1,
    # learning_rate 1e-3, batch_size 256, net_arch [400, 300]
    _check(f"dizoo/mujoco/{env}/config/{env}_td3_config.py", {
        **SB3_TD3, "policy.learning_starts": 10_000, "policy.learn.learning_rate_actor": 1e-3,
        "policy.learn.learning_rate_critic": 1e-3, "policy.collect.noise_sigma": 0.1})


def test_pendulum_configs_are_rl_zoos_and_say_where_they_differ() -> None:
    # sac.yml Pendulum-v1: learning_rate 1e-3 (n_timesteps 20000); SB3's defaults otherwise (learning_starts 100)
    rlzoo_sac = {**SB3_SAC, "policy.learning_starts": 100, "policy.learn.learning_rate_q": 1e-3,
                 "policy.learn.learning_rate_policy": 1e-3, "policy.learn.learning_rate_alpha": 1e-3}
    _check("dizoo/classic_control/pendulum/config/pendulum_sac_rlzoo_config.py", rlzoo_sac)
    # td3.yml Pendulum-v1: gamma 0.98, buffer 200000, learning_starts 10000, normal noise 0.1, train_freq 1,
    # gradient_steps 1, learning_rate 1e-3, net_arch [400, 300]
    rlzoo_td3 = {**SB3_TD3, "policy.discount_factor": 0.98, "policy.other.replay_buffer.replay_buffer_size": 200_000,
                 "policy.learning_starts": 10_000, "policy.collect.noise_sigma": 0.1,
                 "policy.learn.learning_rate_actor": 1e-3, "policy.learn.learning_rate_critic": 1e-3}
    _check("dizoo/classic_control/pendulum/config/pendulum_td3_rlzoo_config.py", rlzoo_td3)
    # the quick ones: 64x64 nets, 8 envs (8 gradient steps per 8 env steps), 1,000 random steps, as documented
    quick = {"env.collector_env_num": 8, "policy.collect.n_sample": 8, "policy.learn.update_per_collect": 8,
             "policy.model.hidden_size_list": None, "policy.model.actor_head_hidden_size": 64,
             "policy.model.actor_head_layer_num": 1, "policy.learning_starts": 1000}
    sac_rel = "dizoo/classic_control/pendulum/config/pendulum_sac_config.py"
    _check(sac_rel, {**rlzoo_sac, **quick, "policy.other.replay_buffer.replay_buffer_size": 100_000})
    assert "100,000-step replay buffer (SB3's holds 1e6" in _doc(sac_rel)  # the docstring said "SB3's defaults"
    _check("dizoo/classic_control/pendulum/config/pendulum_td3_config.py", {**rlzoo_td3, **quick})


@pytest.mark.parametrize("env", ["hopper", "walker2d", "halfcheetah"])
def test_mujoco_ppo_configs_are_cleanrls(env: str) -> None:
    # ppo_continuous_action.py Args: lr 3e-4 annealed over total_timesteps 1M, num_steps 2048 (1 env: here 8 x 256),
    # gamma 0.99, gae_lambda 0.95, num_minibatches 32 (of 64), update_epochs 10, norm_adv, clip_coef 0.2, clip_vloss,
    # ent_coef 0, vf_coef 0.5 (its value loss has the 1/2, as ding_lite's), max_grad_norm 0.5; NormalizeObservation,
    # observations clipped at 10, NormalizeReward, rewards clipped at 10; 64x64 tanh nets, orthogonal init, log-std 0
    _check(f"dizoo/mujoco/{env}/config/{env}_ppo_config.py", {
        "policy.learn.learning_rate": 3e-4, "policy.learn.lr_decay_iter": (1_000_000 // 2048) * 10 * 32,
        "policy.collect.n_sample": 2048, "policy.discount_factor": 0.99, "policy.collect.discount_factor": 0.99,
        "policy.collect.gae_lambda": 0.95, "policy.learn.batch_size": 2048 // 32, "policy.learn.epoch_per_collect": 10,
        "policy.learn.adv_norm": True, "policy.learn.clip_ratio": 0.2, "policy.learn.value_clip_ratio": 0.2,
        "policy.learn.entropy_weight": 0.0, "policy.learn.value_weight": 0.5, "policy.learn.grad_clip_value": 0.5,
        "policy.model.obs_norm": True, "policy.model.obs_norm_clip": 10.0, "policy.collect.reward_scale": True,
        "policy.collect.reward_clip": 10.0, "policy.model.encoder_hidden_size_list": [64, 64],
        "policy.model.activation": "tanh", "policy.model.share_encoder": False, "policy.model.ortho_init": True,
        "policy.model.sigma_type": "fixed", "policy.model.init_log_std": 0.0, "policy.learn.value_norm": False})


def test_acrobot_ppo_and_dqn_configs_are_rl_zoos() -> None:
    # ppo.yml Acrobot-v1: normalize true, n_envs 16, n_steps 256, gae_lambda 0.94, gamma 0.99, n_epochs 4, ent_coef 0;
    # SB3's PPO defaults: lr 3e-4, batch_size 64, clip_range 0.2, vf_coef 0.5 (= value_weight 1.0), max_grad_norm 0.5
    _check("dizoo/classic_control/acrobot/config/acrobot_ppo_config.py", {
        "env.collector_env_num": 16, "policy.collect.n_sample": 16 * 256, "policy.collect.gae_lambda": 0.94,
        "policy.collect.discount_factor": 0.99, "policy.learn.epoch_per_collect": 4,
        "policy.learn.entropy_weight": 0.0, "policy.learn.learning_rate": 3e-4, "policy.learn.batch_size": 64,
        "policy.learn.clip_ratio": 0.2, "policy.learn.value_weight": 1.0, "policy.learn.grad_clip_value": 0.5,
        "policy.model.obs_norm": True, "policy.collect.reward_scale": True, "policy.learn.lr_decay_iter": None})
    from benchmarks.zoo_sb3 import sb3_dqn_kwargs
    from ding_lite.build import load_config

    # dqn.yml MountainCar-v0 (Acrobot-v1's: tests/test_zoo.py), SB3's units; tau 1.0 and max_grad_norm 10: SB3's DQN
    cfg = load_config(str(REPO_ROOT / "dizoo/classic_control/mountain_car/config/mountain_car_dqn_config.py"), seed=0)
    assert sb3_dqn_kwargs(cfg, 120_000) == dict(
        learning_rate=4e-3, buffer_size=10_000, learning_starts=1000, batch_size=128, tau=1.0, gamma=0.98,
        train_freq=16, gradient_steps=8, target_update_interval=600, exploration_fraction=0.2,
        exploration_initial_eps=1.0, exploration_final_eps=0.07, max_grad_norm=10.0,
        policy_kwargs=dict(net_arch=[256, 256]))


def test_doorkey_ppo_config_is_rl_zoos_and_says_its_value_weight_is_not() -> None:
    # ppo.yml MiniGrid-DoorKey-5x5-v0 (&minigrid-defaults): n_envs 8, n_steps 128, batch_size 64, gae_lambda 0.95,
    # gamma 0.99, n_epochs 10, ent_coef 0, learning_rate 2.5e-4, clip_range 0.2; SB3's max_grad_norm 0.5
    rel = "dizoo/minigrid/doorkey/config/doorkey_ppo_config.py"
    _check(rel, {"env.collector_env_num": 8, "policy.collect.n_sample": 8 * 128, "policy.learn.batch_size": 64,
                 "policy.collect.gae_lambda": 0.95, "policy.collect.discount_factor": 0.99,
                 "policy.learn.epoch_per_collect": 10, "policy.learn.entropy_weight": 0.0,
                 "policy.learn.learning_rate": 2.5e-4, "policy.learn.clip_ratio": 0.2,
                 "policy.learn.grad_clip_value": 0.5, "policy.learn.value_weight": 0.5})
    assert "value_weight 0.5 is half of rl-zoo's" in _doc(rel)  # SB3's vf_coef 0.5 would be value_weight 1.0


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_atari_ppo_configs_are_rl_zoos_but_for_the_fixed_clip(game: str) -> None:
    # ppo.yml atari: n_envs 8, n_steps 128, n_epochs 4, batch_size 256, n_timesteps 1e7, learning_rate lin_2.5e-4,
    # clip_range lin_0.1, vf_coef 0.5 (= value_weight 1.0), ent_coef 0.01; SB3's gamma 0.99, gae_lambda 0.95, 0.5 clip
    rel = f"dizoo/atari/{game}/config/{game}_ppo_config.py"
    _check(rel, {"env.collector_env_num": 8, "policy.collect.n_sample": 8 * 128, "policy.learn.epoch_per_collect": 4,
                 "policy.learn.batch_size": 256, "policy.learn.learning_rate": 2.5e-4,
                 "policy.learn.lr_decay_iter": 10_000_000 * 4 // 256, "policy.learn.clip_ratio": 0.1,
                 "policy.learn.value_weight": 1.0, "policy.learn.entropy_weight": 0.01,
                 "policy.collect.discount_factor": 0.99, "policy.collect.gae_lambda": 0.95,
                 "policy.learn.grad_clip_value": 0.5})
    doc = _doc(rel)  # it said "clip 0.1 (rl-zoo anneals it too)": ding_lite's clip range is not annealed
    assert "clip 0.1 held fixed (rl-zoo anneals it to 0" in doc and "anneals it too" not in doc


def test_pong_dqn_config_has_di_engines_hyperparameters_and_says_its_network_is_not() -> None:
    # DI-engine pong_dqn_config.py: 8 collector envs, nstep 3, discount 0.99, update_per_collect 10, batch_size 32,
    # learning_rate 1e-4, target_update_freq 500, n_sample 96, eps exp 1.0 -> 0.05 decay 250000, buffer 100000
    rel = "dizoo/atari/pong/config/pong_dqn_config.py"
    _check(rel, {"env.collector_env_num": 8, "policy.nstep": 3, "policy.discount_factor": 0.99,
                 "policy.learn.update_per_collect": 10, "policy.learn.batch_size": 32,
                 "policy.learn.learning_rate": 1e-4, "policy.learn.target_update_freq": 500,
                 "policy.collect.n_sample": 96, "policy.other.eps.type": "exp", "policy.other.eps.start": 1.0,
                 "policy.other.eps.end": 0.05, "policy.other.eps.decay": 250_000,
                 "policy.other.replay_buffer.replay_buffer_size": 100_000, "policy.model.dueling": True})
    # DI-engine's encoder_hidden_size_list=[128, 128, 512] is three convs (128, 128, 512 channels) and a 512 layer,
    # its DuelingHead one hidden layer per branch (head_layer_num=1); the docstring used to say "DI-engine's settings"
    assert "Not DI-engine's network" in _doc(rel)


def test_published_references_are_the_sources_numbers_and_wording() -> None:
    from benchmarks.zoo_suites import SUITES

    refs = {(name, t.name): t.reference for name, s in SUITES.items() for t in s.tasks}
    # CleanRL docs/benchmark/ppo_continuous_action.md, ppo_atari.md, ppo.md (tag pr-424, 3 seeds each)
    cleanrl = {("mujoco-ppo", "Hopper-v4"): 2382.86, ("mujoco-ppo", "Walker2d-v4"): 2287.95,
               ("mujoco-ppo", "HalfCheetah-v4"): 1442.64, ("atari-smoke", "Pong-v5"): 20.36,
               ("atari-smoke", "Breakout-v5"): 414.66, ("classic-control", "CartPole-v1"): 490.04}
    # rl-zoo benchmark.md: dqn Acrobot-v1 -76.639 (100k), dqn MountainCar-v0 -100.849 (120k), ppo Acrobot-v1 -73.506
    rl_zoo = {("rl-zoo-dqn", "Acrobot-v1"): -76.64, ("rl-zoo-dqn", "MountainCar-v0"): -100.85,
              ("rl-zoo-ppo", "Acrobot-v1"): -73.51}
    assert {k: refs[k].value for k in {**cleanrl, **rl_zoo}} == {**cleanrl, **rl_zoo}
    for suite, task in cleanrl:
        # openrlbenchmark's rlops: each run's mean over its last 100 training episodes, then mean ± std over runs
        source = refs[(suite, task)].source
        assert "tag pr-424" in source and "last 100 training episodes" in source and "over 3 seeds" in source
    assert "one trained agent" in refs[("rl-zoo-ppo", "Acrobot-v1")].source  # rl-zoo: a single run


def test_offpolicy_sb3_peer_has_rl_zoos_entries() -> None:
    from benchmarks.offpolicy_sb3 import RLZOO

    td3_mujoco = dict(learning_starts=10000, learning_rate=1e-3, batch_size=256, train_freq=1, gradient_steps=1,
                      noise_type="normal", noise_std=0.1, policy_kwargs=dict(net_arch=[400, 300]))
    rl_zoo = {  # sac.yml / td3.yml, less n_timesteps and policy
        ("sac", "Hopper-v4"): dict(learning_starts=10000), ("sac", "HalfCheetah-v4"): dict(learning_starts=10000),
        ("td3", "Hopper-v4"): td3_mujoco, ("td3", "HalfCheetah-v4"): td3_mujoco,
        ("sac", "Pendulum-v1"): dict(learning_rate=1e-3),
        ("td3", "Pendulum-v1"): dict(gamma=0.98, buffer_size=200000, learning_starts=10000, noise_type="normal",
                                     noise_std=0.1, gradient_steps=1, train_freq=1, learning_rate=1e-3,
                                     policy_kwargs=dict(net_arch=[400, 300]))}
    assert rl_zoo == RLZOO
