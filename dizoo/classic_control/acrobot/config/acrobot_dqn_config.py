"""DQN on Acrobot-v1 with rl-baselines3-zoo's tuned Acrobot-v1 DQN settings, in SB3's DQN form: 4 env steps per
collect then 4 gradient steps (one per env step) on batches of 128, learning rate 6.3e-4, γ 0.99, a 50k replay
buffer, learning from the start, ε linear from 1.0 to 0.1 over the first 12,000 env steps (12% of the 100k budget),
the target net copied every 250 env steps (250 gradient steps), a 256x256 ReLU Q-net without dueling or double-Q,
Huber loss, gradient-norm clip 10 (SB3's DQN defaults). rl-zoo's published agent: -76.6 after 100k env steps.

Run: ding_lite -m serial -c acrobot_dqn_config.py -s 0 --max-env-step 100000
Against SB3 at the same settings: python benchmarks/zoo.py --suite rl-zoo-dqn --tasks Acrobot-v1
"""
from easydict import EasyDict

acrobot_dqn_config = dict(
    exp_name="acrobot_dqn_seed0",
    env=dict(
        env_id="Acrobot-v1",
        collector_env_num=1,  # rl-zoo's one env
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=-80,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            encoder_hidden_size_list=[256, 256],
            dueling=False,
            head_layer_num=0,
        ),
        nstep=1,
        discount_factor=0.99,
        learn=dict(
            update_per_collect=4,
            batch_size=128,
            learning_rate=6.3e-4,
            target_update_freq=250,  # gradient steps (one per env step: 250 env steps)
            loss_type="huber",
            double=False,
            grad_clip_value=10.0,
        ),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=5000)),  # gradient steps: every 5,000 env steps
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=12000),
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
)
acrobot_dqn_config = EasyDict(acrobot_dqn_config)
main_config = acrobot_dqn_config
acrobot_dqn_create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
)
acrobot_dqn_create_config = EasyDict(acrobot_dqn_create_config)
create_config = acrobot_dqn_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=100_000)
