# DI-engine's dizoo/mujoco/config/hopper_onppo_config.py (opendilab/DI-engine), the package renamed (ding ->
# ding_lite): the porting input of docs/coming_from_di_engine.md (tests/config/test_di_engine_suite_configs.py).
from easydict import EasyDict
import torch.nn as nn

hopper_onppo_config = dict(
    exp_name='hopper_onppo_seed0',
    env=dict(
        env_id='Hopper-v3',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=4000,
    ),
    policy=dict(
        cuda=True,
        recompute_adv=True,
        action_space='continuous',
        model=dict(
            encoder_hidden_size_list=[128, 128],
            obs_shape=11,
            action_shape=3,
            action_space='continuous',
            share_encoder=False,
            actor_head_layer_num=0,
            critic_head_layer_num=2,
            critic_head_hidden_size=256,
            actor_head_hidden_size=128,
            activation=nn.Tanh(),
            bound_type='tanh',
        ),
        learn=dict(
            epoch_per_collect=10,
            update_per_collect=1,
            batch_size=128,
            learning_rate=3e-4,
            lr_scheduler=dict(epoch_num=1500, min_lr_lambda=0),
            value_weight=0.5,
            entropy_weight=0.001,
            clip_ratio=0.2,
            adv_norm=True,
            value_norm=True,
            # for onppo, when we recompute adv, we need the key done in data to split traj, so we must
            # use ignore_done=False here,
            # but when we add key traj_flag in data as the backup for key done, we could choose to use ignore_done=True
            # for halfcheetah, the length=1000
            ignore_done=False,
            grad_clip_type='clip_norm',
            grad_clip_value=0.5,
        ),
        collect=dict(
            n_sample=2048,
            unroll_len=1,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=5000, )),
    ),
)
hopper_onppo_config = EasyDict(hopper_onppo_config)
main_config = hopper_onppo_config

hopper_onppo_create_config = dict(
    env=dict(
        type='mujoco',
        import_names=['dizoo.mujoco.envs.mujoco_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='ppo', ),
)
hopper_onppo_create_config = EasyDict(hopper_onppo_create_config)
create_config = hopper_onppo_create_config

if __name__ == "__main__":
    # or you can enter `ding_lite -m serial_onpolicy -c hopper_onppo_config.py -s 0`
    from ding_lite.entry import serial_pipeline_onpolicy
    serial_pipeline_onpolicy([main_config, create_config], seed=0)
