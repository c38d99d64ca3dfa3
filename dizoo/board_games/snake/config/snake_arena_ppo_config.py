"""PPO learner against three snakes of its own opponent pool (sampling their action distributions) and the careful
scripted snake in the 4-snake arena (11x11), evaluated against three careful snakes (snake_careful), as
snake_arena_dqn_config.py but on-policy: 16 envs, 2,048-step collects, gamma 0.99 (a 100-step horizon, the game's
max_steps). benchmarks/selfplay_strength.py measures it with --config (docs/selfplay.md).
Run: ding_lite -m selfplay -c dizoo/board_games/snake/config/snake_arena_ppo_config.py -s 0 --max-env-step 300000"""
main_config = dict(
    exp_name="snake_arena_ppo_seed0",
    env=dict(
        type="pettingzoo",
        import_names=["dizoo.board_games.snake.envs.heuristic"],
        import_path="dizoo.board_games.snake.envs.snake_arena:snake_arena",
        kwargs=dict(n_snakes=4, size=11, n_food=3, max_steps=100, food_reward=0.3),
        collector_env_num=16,
        evaluator_env_num=8,
        n_evaluator_episode=48,
        stop_value=2.0,  # never stops early (win rate against three careful snakes, the first eval opponent)
        manager=dict(type="base"),
    ),
    policy=dict(
        type="ppo",
        model=dict(encoder_hidden_size_list=[128, 128]),
        discount_factor=0.99,
        learn=dict(epoch_per_collect=4, batch_size=256, learning_rate=3e-4, entropy_weight=0.01),
        collect=dict(n_sample=2048, gae_lambda=0.95),
        eval=dict(evaluator=dict(eval_freq=50000)),  # each evaluation plays 48 games against each of 2 opponents
    ),
    league=dict(
        seats=["learner", "pool", "pool", "pool"],
        snapshot_act="sample",  # snapshots play their stochastic policies, as the learner collects
        snapshot_freq=20000,
        capacity=6,
        strategy="pfsp",
        p_latest=0.3,
        baselines=["snake_careful"],
        p_baseline=0.5,
        eval_opponents=["snake_careful"],
        eval_latest=1,
    ),
)
