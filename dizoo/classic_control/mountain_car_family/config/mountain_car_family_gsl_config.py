"""GSL on 50 MountainCar levels (dizoo/classic_control/mountain_car_family: 40 direct levels and 10 swing levels;
docs/gsl.md): a PPO generalist, specialists on its worst levels (the swing levels it pushes up in vain), PPO-DAPG on
their demos.

Run: ding_lite -m gsl -c dizoo/classic_control/mountain_car_family/config/mountain_car_family_gsl_config.py -s 0
"""
from easydict import EasyDict

mountain_car_family_gsl_config = dict(
    exp_name="mountain_car_family_gsl_seed0",
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
    gsl=dict(
        plateau_patience=6,  # 6 evaluations (about 30k env steps) without a gain above plateau_tol end phase I
        plateau_tol=0.02,
        phase1_max_env_step=200000,
        n_low=10,  # the 10 worst of the 50 levels...
        n_specialists=10,  # ... get a specialist each
        specialist_max_env_step=40000,
        specialist_learn=dict(entropy_weight=1.0),  # a specialist explores its level: the generalist only pushes up
        eval_episodes_per_variation=1,  # levels are deterministic and eval is greedy: one episode says it all
        demo_episodes_per_variation=4,
        phase2_max_env_step=150000,
        phase2_learn=dict(demo_freq=1, demo_coeff=1.0, demo_log_likelihood=True),
    ),
)
mountain_car_family_gsl_config = EasyDict(mountain_car_family_gsl_config)
main_config = mountain_car_family_gsl_config
mountain_car_family_gsl_create_config = dict(
    env=dict(type="mountain_car_family",
             import_names=["dizoo.classic_control.mountain_car_family.envs.mountain_car_family_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
mountain_car_family_gsl_create_config = EasyDict(mountain_car_family_gsl_create_config)
create_config = mountain_car_family_gsl_create_config
