"""DQN (Nature-DQN conv net, double, dueling, 3-step) on Pong through envpool with DI-engine's pong_dqn hyperparameters
(8 envs, 96 env steps then 10 gradient steps on batches of 32, Adam 1e-4, γ 0.99, 3-step targets, the target net copied
every 500 gradient steps, ε from 1.0 towards 0.05 as exp(-env step / 250,000), a 100,000-step buffer). Not DI-engine's
network: its config's encoder_hidden_size_list=[128, 128, 512] builds convs of 128, 128 and 512 channels, a 512-wide
layer and a 512-wide hidden layer in each dueling branch; here the Nature-DQN convs (32, 64, 64), 512 features and
dueling branches without a hidden layer. DI-engine also trains on its deepmind wrappers (a lost life ends the
episode, rewards clipped), which on Pong are the same task.

Run: ding_lite -m serial -c pong_dqn_config.py -s 0
Without envpool (ale-py, envpool's Atari env written out in Python: the same frames):
     ding_lite -m serial -c pong_dqn_config.py --set env.type=atari --set env.manager.type=subprocess
Atari variant: envpool's defaults on both routes (no sticky actions, 30 no-op starts, fire reset, whole-game episodes,
rewards unclipped, 4 frames of 84x84 grey stacked as uint8), FIRE after a lost life where the game waits for it.
Evaluation episodes stop at 10,000 agent steps (warned); the final evaluation plays 8 games.
"""
from easydict import EasyDict

pong_dqn_config = dict(
    exp_name="pong_dqn_seed0",
    env=dict(
        env_id="Pong-v5",
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=20,
        manager=dict(type="envpool"),
    ),
    policy=dict(
        cuda=False,
        model=dict(
            encoder="auto",  # the Nature-DQN conv net for the (4, 84, 84) frames
            encoder_hidden_size_list=[512],
            dueling=True,
            head_layer_num=0,  # the dueling branches read the 512 features directly (no head hidden layer)
        ),
        nstep=3,
        discount_factor=0.99,
        learn=dict(
            update_per_collect=10,
            batch_size=32,
            learning_rate=0.0001,
            target_update_freq=500,
        ),
        collect=dict(n_sample=96),
        eval=dict(
            evaluator=dict(eval_freq=4000, max_episode_steps=10_000),  # evaluation episodes stop there (warned)
            final_episodes=8,  # two games on each eval env
        ),
        other=dict(
            eps=dict(type="exp", start=1.0, end=0.05, decay=250000),
            replay_buffer=dict(replay_buffer_size=100000),
        ),
    ),
)
pong_dqn_config = EasyDict(pong_dqn_config)
main_config = pong_dqn_config
pong_dqn_create_config = dict(
    env=dict(type="envpool"),
    policy=dict(type="dqn"),
)
pong_dqn_create_config = EasyDict(pong_dqn_create_config)
create_config = pong_dqn_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
