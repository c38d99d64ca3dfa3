"""PPO (shared Nature-DQN conv encoder) on Breakout through envpool: the Pong config with another game id, with
rl-zoo's Atari PPO hyperparameters (8 envs x 128 steps, 4 epochs of minibatches of 256, learning rate 2.5e-4 annealed
to 0 over 10M env steps, clip 0.1 held fixed (rl-zoo anneals it to 0 with the learning rate), entropy 0.01).

Run: ding_lite -m serial -c breakout_ppo_config.py -s 0
Without envpool (ale-py, envpool's Atari env written out in Python: the same frames):
     ding_lite -m serial -c breakout_ppo_config.py --set env.type=atari --set env.manager.type=subprocess
Atari variant: envpool's defaults on both routes (no sticky actions, 30 no-op starts, fire reset, whole-game episodes,
rewards unclipped, 4 frames of 84x84 grey stacked as uint8), and FIRE pressed after a lost life in games that wait
for it (env.fire_on_life_loss, the same on both routes). Evaluation episodes stop at 10,000 agent steps (warned),
so an evaluation ends in bounded time whatever the policy does; the final evaluation plays 8 games.
"""
from easydict import EasyDict

breakout_ppo_config = dict(
    exp_name="breakout_ppo_seed0",
    env=dict(
        env_id="Breakout-v5",
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=400,
        manager=dict(type="envpool"),
    ),
    policy=dict(
        cuda=False,
        model=dict(
            encoder="auto",  # the Nature-DQN conv net for the (4, 84, 84) frames
            encoder_hidden_size_list=[512],
            share_encoder=True,
            activation="relu",
        ),
        learn=dict(
            epoch_per_collect=4,
            batch_size=256,
            learning_rate=2.5e-4,
            lr_decay_iter=156250,  # gradient steps in 10M env steps: 9,765.6 collects x 4 epochs x 4 minibatches
            value_weight=1.0,  # rl-zoo's vf_coef 0.5 x 2: SB3's value loss has no 1/2
            entropy_weight=0.01,
            clip_ratio=0.1,
            grad_clip_value=0.5,
        ),
        collect=dict(
            n_sample=1024,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(
            evaluator=dict(eval_freq=800, max_episode_steps=10_000),  # eval_freq in gradient steps: 50 collects
            final_episodes=8,  # two games on each eval env
        ),
    ),
)
breakout_ppo_config = EasyDict(breakout_ppo_config)
main_config = breakout_ppo_config
breakout_ppo_create_config = dict(
    env=dict(type="envpool"),
    policy=dict(type="ppo"),
)
breakout_ppo_create_config = EasyDict(breakout_ppo_create_config)
create_config = breakout_ppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
