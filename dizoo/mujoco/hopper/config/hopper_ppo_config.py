"""PPO on Hopper-v4 (envpool) with rl-zoo's tuned Hopper hyperparameters (1 env x 512 steps there), run as 8 envs x 64
steps per collect, plus the MuJoCo details of Huang et al. 2022: running observation normalisation inside the model,
reward scaling by the return's spread, state-independent log-std; orthogonal init off, as rl-zoo tuned the set.

Run: ding_lite -m serial -c hopper_ppo_config.py -s 0
Without envpool (gymnasium[mujoco], same task): ding_lite -m serial -c hopper_ppo_config.py --set env.type=mujoco
"""
from easydict import EasyDict

hopper_ppo_config = dict(
    exp_name="hopper_ppo_seed0",
    env=dict(
        env_id="Hopper-v4",
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=3000,
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
            epoch_per_collect=5,
            batch_size=32,
            learning_rate=9.80828e-05,
            value_weight=1.671342,  # rl-zoo's vf_coef 0.835671 x 2: SB3's value loss has no 1/2
            entropy_weight=0.00229519,
            clip_ratio=0.2,
            grad_clip_value=0.7,
        ),
        collect=dict(
            n_sample=512,
            discount_factor=0.999,
            gae_lambda=0.99,
            reward_scale=True,
        ),
        eval=dict(evaluator=dict(eval_freq=1600)),  # gradient steps: every 20 collects
    ),
)
hopper_ppo_config = EasyDict(hopper_ppo_config)
main_config = hopper_ppo_config
hopper_ppo_create_config = dict(
    env=dict(type="envpool"),
    policy=dict(type="ppo"),
)
hopper_ppo_create_config = EasyDict(hopper_ppo_create_config)
create_config = hopper_ppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
