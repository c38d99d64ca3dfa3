"""SAC on Pendulum-v1 at rl-baselines3-zoo's settings, for the side-by-side run against SB3
(``benchmarks/offpolicy_mujoco.py --envs pendulum``): hyperparams/sac.yml's Pendulum-v1 entry (learning rate 1e-3,
20,000 env steps) and SB3's SAC defaults for the rest: 256x256 networks, Adam 1e-3 for critics, actor and
temperature, batch 256, buffer 1e6, tau 0.005, gamma 0.99, 100 uniform random steps first, one gradient step per env
step on 1 env, the temperature tuned from 1.0 towards -dim(A). Products in float32, as SB3's.

``pendulum_sac_config.py`` is the quick one (64x64 networks, 8 envs, 1,000 random steps). rl-zoo trains for a fixed
budget: the stop value 0 is Pendulum's best possible return, so a run goes to its ``--max-env-step``.

Run: ding_lite -m serial -c pendulum_sac_rlzoo_config.py -s 0 --max-env-step 20000
"""
from easydict import EasyDict

pendulum_sac_rlzoo_config = dict(
    exp_name="pendulum_sac_rlzoo_seed0",
    env=dict(
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=0,
    ),
    policy=dict(
        cuda=False,
        discount_factor=0.99,
        learning_starts=100,  # SB3's SAC default (rl-zoo sets none for Pendulum-v1)
        model=dict(hidden_size_list=[256, 256]),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=1e-3,
            alpha=1.0,  # SB3's start value of the learned temperature
            target_theta=0.005,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    ),
)
pendulum_sac_rlzoo_config = EasyDict(pendulum_sac_rlzoo_config)
main_config = pendulum_sac_rlzoo_config
pendulum_sac_rlzoo_create_config = dict(
    env=dict(type="pendulum", import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="sac"),
)
pendulum_sac_rlzoo_create_config = EasyDict(pendulum_sac_rlzoo_create_config)
create_config = pendulum_sac_rlzoo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=20000)
