"""PPO generalist on 50 trap-family maze levels (dizoo/grid/maze, family "trap"): the baseline of GSL (docs/gsl.md).

Run: ding_lite -m serial -c dizoo/grid/maze/config/maze_trap_ppo_config.py -s 0 --max-env-step 200000
"""
from easydict import EasyDict

maze_trap_ppo_config = dict(
    exp_name="maze_trap_ppo_seed0",
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
)
maze_trap_ppo_config = EasyDict(maze_trap_ppo_config)
main_config = maze_trap_ppo_config
maze_trap_ppo_create_config = dict(
    env=dict(type="maze", import_names=["dizoo.grid.maze.envs.maze_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
maze_trap_ppo_create_config = EasyDict(maze_trap_ppo_create_config)
create_config = maze_trap_ppo_create_config
