"""PPO on HalfCheetah-v4 (envpool) with rl-zoo's tuned HalfCheetah hyperparameters (1 env x 512 steps there),
run as 8 envs x 64 steps per collect, plus the MuJoCo details of Huang et al. 2022: running observation
normalisation inside the model, reward scaling by the return's spread, state-independent log-std; orthogonal init off,
as rl-zoo tuned the set.

Run: ding_lite -m serial -c halfcheetah_ppo_config.py -s 0
Without envpool (gymnasium[mujoco], same task): ding_lite -m serial -c halfcheetah_ppo_config.py --set env.type=mujoco
"""
from easydict import EasyDict

halfcheetah_ppo_config = dict(
    exp_name="halfcheetah_ppo_seed0",
    env=dict(
        env_id="HalfCheetah-v4",
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=5000,
        manager=dict(type="envpool"),
    ),
    policy=dict(
        cuda=False,
        model=dict(
            encoder_hidden_size_list=[256, 256],
            activation="relu",
            sigma_type="fixed",
            init_log_std=-2.0,
            obs_norm=True,
            ortho_init=False,  # as rl-zoo tuned these hyperparameters
        ),
        learn=dict(
            epoch_per_collect=20,
            batch_size=64,
            learning_rate=2.0633e-05,
            value_weight=1.16192,  # rl-zoo's vf_coef 0.58096 x 2: SB3's value loss has no 1/2
            entropy_weight=0.000401762,
            clip_ratio=0.1,
            grad_clip_value=0.8,
        ),
        collect=dict(
            n_sample=512,
            discount_factor=0.98,
            gae_lambda=0.92,
            reward_scale=True,
        ),
        eval=dict(evaluator=dict(eval_freq=3200)),  # gradient steps: every 20 collects
    ),
)
halfcheetah_ppo_config = EasyDict(halfcheetah_ppo_config)
main_config = halfcheetah_ppo_config
halfcheetah_ppo_create_config = dict(
    env=dict(type="envpool"),
    policy=dict(type="ppo"),
)
halfcheetah_ppo_create_config = EasyDict(halfcheetah_ppo_create_config)
create_config = halfcheetah_ppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
