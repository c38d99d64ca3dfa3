"""TD3 on HalfCheetah-v4 with rl-zoo's TD3 hyperparameters for it (hyperparams/td3.yml: 400x300 networks, Adam 1e-3,
batch 256, exploration N(0, 0.1), one gradient step per env step, learning_starts 10,000; SB3's TD3 defaults
otherwise: buffer 1e6, tau 0.005, gamma 0.99, smoothing N(0, 0.2) clipped at 0.5, policy delay 2), on 1 env.

Run: ding_lite -m serial -c halfcheetah_td3_config.py -s 0 --max-env-step 1000000
"""
from easydict import EasyDict

halfcheetah_td3_config = dict(
    exp_name="halfcheetah_td3_seed0",
    env=dict(
        env_id="HalfCheetah-v4",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=12000,
    ),
    policy=dict(
        cuda=False,
        learning_starts=10000,
        model=dict(hidden_size_list=[400, 300]),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            gradient_dtype="bfloat16",  # gradient-only products in bfloat16 (docs/sac_td3.md); 'float32' to turn off
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            target_theta=0.005,
            actor_update_freq=2,
            noise_sigma=0.2,
            noise_range=dict(min=-0.5, max=0.5),
        ),
        collect=dict(n_sample=1, noise_sigma=0.1),
        eval=dict(evaluator=dict(eval_freq=10000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    ),
)
halfcheetah_td3_config = EasyDict(halfcheetah_td3_config)
main_config = halfcheetah_td3_config
halfcheetah_td3_create_config = dict(
    env=dict(type="mujoco"),
    env_manager=dict(type="base"),
    policy=dict(type="td3"),
)
halfcheetah_td3_create_config = EasyDict(halfcheetah_td3_create_config)
create_config = halfcheetah_td3_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
