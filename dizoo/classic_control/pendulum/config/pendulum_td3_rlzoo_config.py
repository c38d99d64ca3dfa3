"""TD3 on Pendulum-v1 at rl-baselines3-zoo's settings, for the side-by-side run against SB3
(``benchmarks/offpolicy_mujoco.py --envs pendulum``): hyperparams/td3.yml's Pendulum-v1 entry (400x300 networks,
Adam 1e-3, gamma 0.98, buffer 200,000, exploration N(0, 0.1), one gradient step per env step, 10,000 uniform random
steps first, 20,000 env steps) and SB3's TD3 defaults for the rest: batch 256, tau 0.005, smoothing N(0, 0.2) clipped
at 0.5, actor and targets every 2nd critic step; on 1 env. Products in float32, as SB3's.

``pendulum_td3_config.py`` is the quick one (64x64 networks, 8 envs, 1,000 random steps). rl-zoo trains for a fixed
budget: the stop value 0 is Pendulum's best possible return, so a run goes to its ``--max-env-step``.

Run: ding_lite -m serial -c pendulum_td3_rlzoo_config.py -s 0 --max-env-step 20000
"""
from easydict import EasyDict

pendulum_td3_rlzoo_config = dict(
    exp_name="pendulum_td3_rlzoo_seed0",
    env=dict(
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=0,
    ),
    policy=dict(
        cuda=False,
        discount_factor=0.98,
        learning_starts=10000,
        model=dict(hidden_size_list=[400, 300]),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            target_theta=0.005,
            actor_update_freq=2,
            noise_sigma=0.2,
            noise_range=dict(min=-0.5, max=0.5),
        ),
        collect=dict(n_sample=1, noise_sigma=0.1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=200000)),
    ),
)
pendulum_td3_rlzoo_config = EasyDict(pendulum_td3_rlzoo_config)
main_config = pendulum_td3_rlzoo_config
pendulum_td3_rlzoo_create_config = dict(
    env=dict(type="pendulum", import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="td3"),
)
pendulum_td3_rlzoo_create_config = EasyDict(pendulum_td3_rlzoo_create_config)
create_config = pendulum_td3_rlzoo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=20000)
