"""DQN on MountainCar-v0 with rl-baselines3-zoo's tuned MountainCar-v0 DQN settings, in SB3's DQN form: 16 env steps
per collect then 8 gradient steps on batches of 128, learning rate 4e-3, γ 0.98, a 10k replay buffer, 1,000 env steps
before learning starts, ε linear from 1.0 to 0.07 over the first 24,000 env steps (20% of the 120k budget), the
target net copied every 600 env steps (300 gradient steps), a 256x256 ReLU Q-net without dueling or double-Q, Huber
loss, gradient-norm clip 10 (SB3's DQN defaults). rl-zoo's published agent: -100.8 after 120k env steps.

Run: ding_lite -m serial -c mountain_car_dqn_config.py -s 0 --max-env-step 120000
Against SB3 at the same settings: python benchmarks/zoo.py --suite rl-zoo-dqn --tasks MountainCar-v0
"""
from easydict import EasyDict

mountain_car_dqn_config = dict(
    exp_name="mountain_car_dqn_seed0",
    env=dict(
        env_id="MountainCar-v0",
        collector_env_num=1,  # rl-zoo's one env
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=-110,
    ),
    policy=dict(
        cuda=False,
        learning_starts=1000,
        model=dict(
            encoder_hidden_size_list=[256, 256],
            dueling=False,
            head_layer_num=0,
        ),
        nstep=1,
        discount_factor=0.98,
        learn=dict(
            update_per_collect=8,
            batch_size=128,
            learning_rate=4e-3,
            target_update_freq=300,  # gradient steps (8 per 16 env steps: 600 env steps)
            loss_type="huber",
            double=False,
            grad_clip_value=10.0,
        ),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=4000)),  # gradient steps: every 8,000 env steps
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.07, decay=24000),
            replay_buffer=dict(replay_buffer_size=10000),
        ),
    ),
)
mountain_car_dqn_config = EasyDict(mountain_car_dqn_config)
main_config = mountain_car_dqn_config
mountain_car_dqn_create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
)
mountain_car_dqn_create_config = EasyDict(mountain_car_dqn_create_config)
create_config = mountain_car_dqn_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=120_000)
