"""PPO on MiniGrid-DoorKey-5x5-v0 (the agent's 7x7x3 view, a small conv encoder) with rl-zoo's DoorKey
hyperparameters (8 envs x 128 steps, 10 epochs of minibatches of 64, learning rate 2.5e-4, γ 0.99, λ 0.95, clip 0.2,
no entropy bonus, gradient-norm clip 0.5); rl-zoo's network and inputs differ (an MLP, observations and rewards
normalised by VecNormalize), and so does the value loss's weight: value_weight 0.5 is half of rl-zoo's (SB3's default
vf_coef 0.5 on a value loss without ding_lite's 1/2 is value_weight 1.0).
The return is 1 - 0.9 * steps / max_steps on reaching the goal, 0 otherwise.

Run: ding_lite -m serial -c doorkey_ppo_config.py -s 0
envpool's MiniGrid gives dict observations, which the envpool manager does not batch; this config uses the minigrid
package (extra [minigrid]).
"""
from easydict import EasyDict

doorkey_ppo_config = dict(
    exp_name="doorkey_ppo_seed0",
    env=dict(
        env_id="MiniGrid-DoorKey-5x5-v0",
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=8,
        stop_value=0.9,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            encoder="auto",  # a small conv net for the (7, 7, 3) grid view
            image_scale=0.1,  # the grid holds object, colour and state indices (at most 10), not pixels
            encoder_hidden_size_list=[64],
            share_encoder=True,
            activation="tanh",
        ),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=2.5e-4,
            value_weight=0.5,  # half rl-zoo's (SB3's vf_coef 0.5 = value_weight 1.0): the weight the results used
            entropy_weight=0.0,
            clip_ratio=0.2,
        ),
        collect=dict(
            n_sample=1024,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=1600)),  # gradient steps: every 10 collects
    ),
)
doorkey_ppo_config = EasyDict(doorkey_ppo_config)
main_config = doorkey_ppo_config
doorkey_ppo_create_config = dict(
    env=dict(type="minigrid"),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
doorkey_ppo_create_config = EasyDict(doorkey_ppo_create_config)
create_config = doorkey_ppo_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
