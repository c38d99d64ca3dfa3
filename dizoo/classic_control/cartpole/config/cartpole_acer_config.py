"""ACER on CartPole-v1 (DI-engine's config vocabulary). Run: ding_lite -m serial -c cartpole_acer_config.py -s 0"""
from easydict import EasyDict

cartpole_acer_config = dict(
    exp_name="cartpole_acer_seed0",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[64, 64],
        ),
        learn=dict(
            update_per_collect=4,
            batch_size=16,
            learning_rate_actor=0.001,
            learning_rate_critic=0.001,
            entropy_weight=0.0,
            discount_factor=0.9,
            c_clip_ratio=10,
            trust_region=True,
            trust_region_value=1.0,
            target_theta=0.01,
        ),
        collect=dict(
            n_sample=16,
            unroll_len=32,
        ),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000)),
    ),
)
cartpole_acer_config = EasyDict(cartpole_acer_config)
main_config = cartpole_acer_config
cartpole_acer_create_config = dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="acer"),
)
cartpole_acer_create_config = EasyDict(cartpole_acer_create_config)
create_config = cartpole_acer_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
