"""PPO on CartPole-v1 (DI-engine's config vocabulary). Run: ding_lite -m serial -c cartpole_ppo_config.py -s 0"""
from easydict import EasyDict

cartpole_ppo_config = dict(
    exp_name="cartpole_ppo_seed0",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        # the NumPy passes uncompiled: solved in about 2k env steps, the run would spend more on numba's start-up
        # (about 0.8 s) than its compiled passes save (docs/concepts.md)
        numba=False,
        model=dict(
            obs_shape=4,
            action_shape=2,
            action_space="discrete",
            encoder_hidden_size_list=[64, 64],
        ),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=3e-4,
            value_weight=0.5,
            entropy_weight=0.0,
            clip_ratio=0.2,
            adv_norm=True,
        ),
        collect=dict(
            n_sample=256,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=80)),  # 40 gradient steps (train iterations) per collect
    ),
)
cartpole_ppo_config = EasyDict(cartpole_ppo_config)
main_config = cartpole_ppo_config
cartpole_ppo_create_config = dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
cartpole_ppo_create_config = EasyDict(cartpole_ppo_create_config)
create_config = cartpole_ppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
