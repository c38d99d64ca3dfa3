"""GSL on 50 trap-family maze levels (dizoo/grid/maze, family "trap"; docs/gsl.md): a PPO generalist, specialists on
its worst levels (the traps it runs into), PPO-DAPG on their demos.

Run: ding_lite -m gsl -c dizoo/grid/maze/config/maze_trap_gsl_config.py -s 0
"""
from easydict import EasyDict

maze_trap_gsl_config = dict(
    exp_name="maze_trap_gsl_seed0",
    env=dict(
        variations=50,  # levels 0..49, spread over the envs and episodes; 4, 9, ..., 49 are the 10 traps
        family="trap",
        min_distance=4,  # the staircases (easy levels): shortest path at least 4 steps
        hard_min_distance=8,  # the traps: a detour of 8-10 steps to a goal at most 2 cells away
        shaping_distance="manhattan",  # as the crow flies: right on staircases, a lure on traps
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=50,  # a multiple of the variation count: every level evaluated once
        stop_value=2.0,  # above the best mean return: train for the budget
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=147,
            action_shape=4,
            action_space="discrete",
            encoder_hidden_size_list=[128, 128],
        ),
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
            discount_factor=0.97,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=80)),  # 16 gradient steps per collect: every 5th collect
    ),
    gsl=dict(
        plateau_patience=10,  # 10 evaluations (about 50k env steps) without a gain above plateau_tol end phase I
        plateau_tol=0.02,
        phase1_max_env_step=200000,  # PPO alone is flat from about 150k steps on (docs/gsl.md)
        n_low=10,  # the 10 worst of the 50 levels...
        n_specialists=10,  # ... get a specialist each
        specialist_max_env_step=40000,
        # a specialist explores its trap: the advantages are normalised, so only a large bonus gets the generalist's
        # "walk towards the goal" policy off the wall (0.05-0.3 did not in 40k steps)
        specialist_learn=dict(entropy_weight=1.0),
        eval_episodes_per_variation=1,  # levels are deterministic and eval is greedy: one episode says it all
        demo_episodes_per_variation=4,
        phase2_max_env_step=150000,
        # PPO-DAPG with the log-likelihood demo term on every minibatch (as tuned on CartPole, docs/ppo_dapg.md)
        phase2_learn=dict(demo_freq=1, demo_coeff=1.0, demo_log_likelihood=True),
    ),
)
maze_trap_gsl_config = EasyDict(maze_trap_gsl_config)
main_config = maze_trap_gsl_config
maze_trap_gsl_create_config = dict(
    env=dict(type="maze", import_names=["dizoo.grid.maze.envs.maze_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
maze_trap_gsl_create_config = EasyDict(maze_trap_gsl_create_config)
create_config = maze_trap_gsl_create_config
