"""SAC on Pendulum-v1: rl-zoo's Pendulum-v1 SAC settings (learning rate 1e-3, one gradient step per env step, batch
256, SB3's defaults otherwise) with 64x64 networks, 8 envs stepped together, 1,000 random steps first and a 100,000-step
replay buffer (SB3's holds 1e6; a run that stops at -250 collects a few thousand steps).

Run: ding_lite -m serial -c pendulum_sac_config.py -s 0
"""
from easydict import EasyDict

pendulum_sac_config = dict(
    exp_name="pendulum_sac_seed0",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        learning_starts=1000,
        model=dict(
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            update_per_collect=8,  # one gradient step per env step (8 per collect of 8)
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=1e-3,
            alpha=1.0,  # SB3's start value
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
pendulum_sac_config = EasyDict(pendulum_sac_config)
main_config = pendulum_sac_config
pendulum_sac_create_config = dict(
    env=dict(type="pendulum", import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="sac"),
)
pendulum_sac_create_config = EasyDict(pendulum_sac_create_config)
create_config = pendulum_sac_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
