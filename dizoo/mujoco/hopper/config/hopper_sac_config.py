"""SAC on Hopper-v4 with rl-zoo's Hopper-v4 SAC hyperparameters (hyperparams/sac.yml: learning_starts 10,000, SB3's
SAC defaults otherwise): 256x256 networks, Adam 3e-4 for critics, actor and temperature, batch 256, buffer 1e6,
tau 0.005, gamma 0.99, one gradient step per env step on 1 env, the temperature tuned from 1.0 towards -dim(A).

Run: ding_lite -m serial -c hopper_sac_config.py -s 0 --max-env-step 1000000
"""
from easydict import EasyDict

hopper_sac_config = dict(
    exp_name="hopper_sac_seed0",
    env=dict(
        env_id="Hopper-v4",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=6000,
    ),
    policy=dict(
        cuda=False,
        learning_starts=10000,
        model=dict(hidden_size_list=[256, 256]),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            gradient_dtype="bfloat16",  # gradient-only products in bfloat16 (docs/sac_td3.md); 'float32' to turn off
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            alpha=1.0,  # SB3's start value of the learned temperature
            target_theta=0.005,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=10000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    ),
)
hopper_sac_config = EasyDict(hopper_sac_config)
main_config = hopper_sac_config
hopper_sac_create_config = dict(
    env=dict(type="mujoco"),
    env_manager=dict(type="base"),
    policy=dict(type="sac"),
)
hopper_sac_create_config = EasyDict(hopper_sac_create_config)
create_config = hopper_sac_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
