"""DQN learner against three snakes of its own opponent pool and the careful scripted snake in the 4-snake arena
(11x11); evaluated against three careful snakes (snake_careful: avoids every body and head, prefers open space),
whom an equal player beats in a quarter of the games. benchmarks/selfplay_strength.py measures it (docs/selfplay.md).
Run: ding_lite -m selfplay -c dizoo/board_games/snake/config/snake_arena_dqn_config.py -s 0"""
main_config = dict(
    exp_name="snake_arena_dqn_seed0",
    env=dict(
        type="pettingzoo",
        import_names=["dizoo.board_games.snake.envs.heuristic"],
        import_path="dizoo.board_games.snake.envs.snake_arena:snake_arena",
        # food_reward 0.3 (the env's default is 0.1): at max_steps the longest survivor wins, and at 0.1 the learner
        # learnt to survive (alive at the limit in 89 of 200 games against careful snakes, more than they are) but
        # not to eat (length 11 there against the winners' 17): it won 0.05; at 0.3 0.29, at 0.5 0.21 (seed 0)
        kwargs=dict(n_snakes=4, size=11, n_food=3, max_steps=100, food_reward=0.3),
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=48,
        stop_value=2.0,  # never stops early (win rate against three careful snakes, the first eval opponent)
        manager=dict(type="base"),
    ),
    policy=dict(
        type="dqn",
        model=dict(encoder_hidden_size_list=[64, 64], dueling=True),
        nstep=3,
        discount_factor=0.97,
        learn=dict(update_per_collect=2, batch_size=64, learning_rate=0.001, target_update_freq=200),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=5000)),  # each evaluation plays 48 games against each of 3 opponents
        other=dict(
            eps=dict(type="exp", start=0.9, end=0.05, decay=5000),
            replay_buffer=dict(replay_buffer_size=20000),
        ),
    ),
    league=dict(
        seats=["learner", "pool", "pool", "pool"],
        snapshot_freq=4000,
        capacity=6,
        strategy="pfsp",
        p_latest=0.3,
        # a share of the pool's seats to the careful snake: snapshots of a greedy learner play alike, the careful
        # snake shows the learner an opponent that survives
        baselines=["snake_careful"],
        p_baseline=0.5,
        eval_opponents=["snake_careful", "snake_heuristic"],
        eval_latest=1,
    ),
)
