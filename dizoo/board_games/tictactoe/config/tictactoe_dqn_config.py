"""DQN learner on PettingZoo's tictactoe_v3 against its own opponent pool and the random player, as first and
second player (the seats are shuffled every game). Evaluated against a perfect player (minimax, uniformly among its
best moves) and the random player; benchmarks/selfplay_strength.py measures it after 120,000 env steps, the budget
its learning rate anneals over (docs/selfplay.md, Strength).
Run: ding_lite -m selfplay -c dizoo/board_games/tictactoe/config/tictactoe_dqn_config.py -s 0 --max-env-step 120000"""
main_config = dict(
    exp_name="tictactoe_dqn_seed0",
    env=dict(
        type="pettingzoo",
        import_names=["dizoo.board_games.tictactoe.envs.minimax"],
        # the unwrapped game: the learner and every other player honour the action mask
        import_path="pettingzoo.classic.tictactoe_v3:raw_env",
        collector_env_num=16,
        evaluator_env_num=25,
        n_evaluator_episode=100,  # per eval opponent and learner seat
        stop_value=2.0,  # never stops early: a run spends its budget
        manager=dict(type="base"),
    ),
    policy=dict(
        type="dqn",
        # the (3, 3, 2) board is too small for the conv stack: the MLP takes its 18 cells
        model=dict(encoder_hidden_size_list=[128, 128], dueling=True),
        nstep=1,  # one-step Q-learning is exact off-policy: exploratory moves do not bias the targets
        discount_factor=0.9,  # a win now is worth more than a win later
        learn=dict(update_per_collect=8, batch_size=256, learning_rate=0.001, target_update_freq=200,
                   # to 0 over the 120,000 env steps' 15,000 updates (120,000 / 64 x 8): at a constant rate the
                   # checkpoints of a run move in and out of perfect play (one losing move among ~300 positions);
                   # annealed over 60,000 env steps, seeds 2, 4, 5 and 6 of 0-7 kept one losing move
                   lr_decay_iter=15000),
        # each transition and its 7 rotated and reflected images go to the buffer
        collect=dict(n_sample=64, augment="dizoo.board_games.tictactoe.envs.symmetry:d4"),
        eval=dict(evaluator=dict(eval_freq=1250), final_episodes=0),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=10000),
            # the last ~37,000 env steps (8 samples each): the Q-values follow the pool as it is, not its first
            # near-random snapshots
            replay_buffer=dict(replay_buffer_size=300000),
        ),
    ),
    league=dict(
        seats=["learner", "pool"],
        swap_seats=True,
        # snapshots play their collect mode (ε-greedy): a greedy snapshot plays one line, a sampling one shows the
        # learner the positions around it
        snapshot_act="sample",
        snapshot_freq=2500,
        capacity=10,
        strategy="pfsp",
        p_latest=0.3,
        # a tenth of the pool's games against the random player: it reaches positions after the opening that no
        # snapshot plays (without it a learner lost to it as first player); more would teach the learner to bet on
        # its mistakes there, which a perfect player punishes
        baselines=["random"],
        p_baseline=0.1,
        # 0-3 random plies open each training game: the learner meets every opening a perfect player may choose,
        # against snapshots that punish its mistakes there (without them it lost 7 of 100 games as second player)
        opening_plies=3,
        eval_opponents=["tictactoe_minimax", "random"],
        eval_latest=0,
    ),
)
