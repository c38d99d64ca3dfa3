# DI-engine's dizoo/mujoco/config/halfcheetah_td3_config.py (opendilab/DI-engine), the package renamed (ding ->
# ding_lite): the porting input of docs/coming_from_di_engine.md (tests/config/test_di_engine_mujoco_configs.py).
from easydict import EasyDict

halfcheetah_td3_config = dict(
    exp_name='halfcheetah_td3_seed0',
    env=dict(
        env_id='HalfCheetah-v3',
        norm_obs=dict(use_norm=False, ),
        norm_reward=dict(use_norm=False, ),
        collector_env_num=1,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=11000,
    ),
    policy=dict(
        cuda=True,
        random_collect_size=25000,
        model=dict(
            obs_shape=17,
            action_shape=6,
            twin_critic=True,
            actor_head_hidden_size=256,
            critic_head_hidden_size=256,
            action_space='regression',
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            ignore_done=True,
            target_theta=0.005,
            discount_factor=0.99,
            actor_update_freq=2,
            noise=True,
            noise_sigma=0.2,
            noise_range=dict(
                min=-0.5,
                max=0.5,
            ),
        ),
        collect=dict(
            n_sample=1,
            unroll_len=1,
            noise_sigma=0.1,
        ),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000, ), ),
    )
)

halfcheetah_td3_config = EasyDict(halfcheetah_td3_config)
main_config = halfcheetah_td3_config

halfcheetah_td3_create_config = dict(
    env=dict(
        type='mujoco',
        import_names=['dizoo.mujoco.envs.mujoco_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(
        type='td3',
        import_names=['ding_lite.policy.td3'],
    ),
    replay_buffer=dict(type='naive', ),
)
halfcheetah_td3_create_config = EasyDict(halfcheetah_td3_create_config)
create_config = halfcheetah_td3_create_config

if __name__ == "__main__":
    # or you can enter `ding_lite -m serial -c halfcheetah_td3_config.py -s 0 --max-env-step 10000000`
    from ding_lite.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
