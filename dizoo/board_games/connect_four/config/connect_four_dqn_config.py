"""DQN learner on PettingZoo's connect_four_v3 against its own opponent pool, as first and second player (the
seats are shuffled every game). Run: ding_lite -m selfplay -c dizoo/board_games/connect_four/config/
connect_four_dqn_config.py -s 0"""
main_config = dict(
    exp_name="connect_four_dqn_seed0",
    env=dict(
        type="pettingzoo",
        import_names=["dizoo.board_games.connect_four.envs.heuristic"],
        import_path="pettingzoo.classic.connect_four_v3:env",
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=48,
        stop_value=0.95,  # win rate against a random player (both seats together)
        manager=dict(type="base"),
    ),
    policy=dict(
        type="dqn",
        model=dict(encoder_hidden_size_list=[128, 128], dueling=True),
        nstep=1,
        discount_factor=0.99,
        learn=dict(update_per_collect=4, batch_size=64, learning_rate=0.0005, target_update_freq=200),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(
            eps=dict(type="exp", start=0.9, end=0.05, decay=10000),
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
    league=dict(
        seats=["learner", "pool"],
        swap_seats=True,
        snapshot_freq=5000,
        capacity=6,
        strategy="pfsp",
        p_latest=0.3,
        eval_opponents=["random", "connect_four_heuristic"],
        eval_latest=1,
    ),
)
