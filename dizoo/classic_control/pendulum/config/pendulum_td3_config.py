"""TD3 on Pendulum-v1: rl-zoo's Pendulum-v1 TD3 settings (learning rate 1e-3, gamma 0.98, exploration N(0, 0.1), one
gradient step per env step, batch 256, SB3's TD3 defaults otherwise: smoothing N(0, 0.2) clipped at 0.5, actor and
targets every 2nd update, tau 0.005) with 64x64 networks, 8 envs stepped together and 1,000 random steps first.

Run: ding_lite -m serial -c pendulum_td3_config.py -s 0
"""
from easydict import EasyDict

pendulum_td3_config = dict(
    exp_name="pendulum_td3_seed0",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        discount_factor=0.98,
        learning_starts=1000,
        model=dict(
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            update_per_collect=8,  # one gradient step per env step (8 per collect of 8)
            batch_size=256,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
        ),
        collect=dict(n_sample=8, noise_sigma=0.1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=200000)),
    ),
)
pendulum_td3_config = EasyDict(pendulum_td3_config)
main_config = pendulum_td3_config
pendulum_td3_create_config = dict(
    env=dict(type="pendulum", import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="td3"),
)
pendulum_td3_create_config = EasyDict(pendulum_td3_create_config)
create_config = pendulum_td3_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
