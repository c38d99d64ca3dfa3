"""Ensemble PPO (EPPO, 4 Gaussian members) on Pendulum-v1. Run: ding_lite -m serial -c pendulum_eppo_config.py -s 0"""
from easydict import EasyDict

pendulum_eppo_config = dict(
    exp_name="pendulum_eppo_seed0",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        recompute_adv=True,
        model=dict(
            obs_shape=3,
            action_shape=1,
            action_space="continuous",
            ensemble_size=4,
            encoder_hidden_size_list=[64, 64],
            sigma_type="fixed",
        ),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=3e-4,
            value_weight=0.5,
            entropy_weight=0.0,
            center_policy_coef=1.0,
            sub_policy_coef=0.5,
            diverse_coef=0.01,
            clip_ratio=0.2,
            adv_norm=True,
            value_norm=True,
        ),
        collect=dict(
            n_sample=2048,
            discount_factor=0.9,
            gae_lambda=0.95,
            ensemble_action="mixture",
        ),
        eval=dict(evaluator=dict(eval_freq=1600), continuous_action="mode"),
    ),
)
pendulum_eppo_config = EasyDict(pendulum_eppo_config)
main_config = pendulum_eppo_config
pendulum_eppo_create_config = dict(
    env=dict(type="pendulum", import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ensemble_ppo"),
)
pendulum_eppo_create_config = EasyDict(pendulum_eppo_create_config)
create_config = pendulum_eppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
