"""PPO-DAPG on CartPole-v1: PPO plus a demo term on expert demonstrations (see docs/ppo_dapg.md).

The demo file comes from a trained expert (recipe, from the repository root):

    ding_lite -m serial -c dizoo/classic_control/cartpole/config/cartpole_ppo_config.py -s 0 \\
        --set env.stop_value=500 --exp-name cartpole_ppo_expert
    ding_lite -m collect_demo -c dizoo/classic_control/cartpole/config/cartpole_ppo_config.py \\
        --load-ckpt cartpole_ppo_expert/ckpt/ckpt_best.pth.tar --n-episode 20 --demo-path cartpole_ppo_expert/demo.npz
    ding_lite -m serial -c dizoo/classic_control/cartpole/config/cartpole_ppo_dapg_config.py -s 0
"""
from easydict import EasyDict

cartpole_ppo_dapg_config = dict(
    exp_name="cartpole_ppo_dapg_seed0",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=4,
            action_shape=2,
            action_space="discrete",
            encoder_hidden_size_list=[64, 64],
        ),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=3e-4,
            value_weight=0.5,
            entropy_weight=0.0,
            clip_ratio=0.2,
            adv_norm=True,
            demo_path="cartpole_ppo_expert/demo.npz",  # relative to the working directory; a list also works
            # Tuned for CartPole (benchmarks/dapg_vs_ppo.py): raw advantages reach ~14 here, and the probability
            # form of the demo term (the policy's default) sharpens the policy on demo states without fixing its
            # confident mistakes; the log-likelihood on every minibatch imitates the expert reliably.
            demo_freq=1,
            demo_coeff=2.0,
            demo_batch_size=64,
            demo_log_likelihood=True,
            demo_adv_scale="raw",  # the weight w = demo_coeff·max raw GAE advantage it was tuned with
        ),
        collect=dict(
            n_sample=256,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=80)),  # 40 gradient steps (train iterations) per collect
    ),
)
cartpole_ppo_dapg_config = EasyDict(cartpole_ppo_dapg_config)
main_config = cartpole_ppo_dapg_config
cartpole_ppo_dapg_create_config = dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo_dapg"),
)
cartpole_ppo_dapg_create_config = EasyDict(cartpole_ppo_dapg_create_config)
create_config = cartpole_ppo_dapg_create_config

if __name__ == "__main__":
    from ding_lite.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
