"""PPO on Acrobot-v1 with rl-baselines3-zoo's Acrobot-v1 PPO settings (16 envs x 256 steps per update, 4 epochs of
minibatches of 64, learning rate 3e-4, γ 0.99, λ 0.94, no entropy bonus, observations and rewards normalised as SB3's
VecNormalize does, SB3's defaults otherwise: clip 0.2, value coefficient 0.5, gradient-norm clip 0.5, 64x64 tanh
nets with orthogonal init). rl-zoo's published agent: -73.5 after 1M env steps; after 200k this config's runs end
at -83 (median of the last 3 evaluations over seeds 0-23; SB3 at the same settings -82): docs/results.md.

Run: ding_lite -m serial -c acrobot_ppo_config.py -s 0 --max-env-step 200000
Against SB3 at the same settings: python benchmarks/zoo.py --suite rl-zoo-ppo
"""
from easydict import EasyDict

acrobot_ppo_config = dict(
    exp_name="acrobot_ppo_seed0",
    env=dict(
        env_id="Acrobot-v1",
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=-80,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            encoder_hidden_size_list=[64, 64],
            activation="tanh",
            obs_norm=True,
        ),
        learn=dict(
            epoch_per_collect=4,
            batch_size=64,
            learning_rate=3e-4,
            value_weight=1.0,  # SB3's vf_coef 0.5: its value loss has no 1/2, ding_lite's (CleanRL's) has
            entropy_weight=0.0,
            clip_ratio=0.2,
            grad_clip_value=0.5,
        ),
        collect=dict(
            n_sample=4096,
            discount_factor=0.99,
            gae_lambda=0.94,
            reward_scale=True,
            reward_clip=10.0,
        ),
        eval=dict(evaluator=dict(eval_freq=512)),  # gradient steps: every 2 collects (8,192 env steps)
    ),
)
acrobot_ppo_config = EasyDict(acrobot_ppo_config)
main_config = acrobot_ppo_config
acrobot_ppo_create_config = dict(
    env=dict(type="gymnasium"),
    policy=dict(type="ppo"),
)
acrobot_ppo_create_config = EasyDict(acrobot_ppo_create_config)
create_config = acrobot_ppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=200_000)
