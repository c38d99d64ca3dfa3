"""PPO generalist on 50 MountainCar levels (dizoo/classic_control/mountain_car_family: 40 direct levels and 10 swing
levels): the baseline of GSL (docs/gsl.md).

Run: ding_lite -m serial -c dizoo/classic_control/mountain_car_family/config/mountain_car_family_ppo_config.py -s 0 \\
    --max-env-step 300000
"""
from easydict import EasyDict

mountain_car_family_ppo_config = dict(
    exp_name="mountain_car_family_ppo_seed0",
    env=dict(
        variations=50,  # levels 0..49, spread over the envs and episodes; 4, 9, ..., 49 are the 10 swing levels
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=50,  # a multiple of the variation count: every level evaluated once
        stop_value=2.0,  # above the best mean return: train for the budget
    ),
    policy=dict(
        cuda=False,
        model=dict(encoder_hidden_size_list=[64, 64]),  # obs and action shapes: from the env
        learn=dict(
            epoch_per_collect=4,
            batch_size=256,
            learning_rate=1e-3,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
            adv_norm=True,
        ),
        collect=dict(
            n_sample=1024,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=80)),  # 16 gradient steps per collect: every 5th collect
    ),
)
mountain_car_family_ppo_config = EasyDict(mountain_car_family_ppo_config)
main_config = mountain_car_family_ppo_config
mountain_car_family_ppo_create_config = dict(
    env=dict(type="mountain_car_family",
             import_names=["dizoo.classic_control.mountain_car_family.envs.mountain_car_family_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
mountain_car_family_ppo_create_config = EasyDict(mountain_car_family_ppo_create_config)
create_config = mountain_car_family_ppo_create_config
