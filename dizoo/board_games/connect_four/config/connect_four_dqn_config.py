"""DQN learner on PettingZoo's connect_four_v3 against its own opponent pool, the scripted heuristic and a random
player that takes its wins, as first and second player (the seats are shuffled every game). Its Q-network values the
board after each column's move (dizoo/board_games/connect_four/model.py).
benchmarks/selfplay_strength.py measures it against the one-ply player, which it never meets in training (at least
0.6 wins on each seat after the 150,000 env steps; the measured tables are in docs/selfplay.md);
tests/entry/test_selfplay_learning.py trains it and checks it against the random and the one-ply player.
Run (the budget of the measured tables):
    ding_lite -m selfplay -c dizoo/board_games/connect_four/config/connect_four_dqn_config.py -s 0 --max-env-step 150000
"""
main_config = dict(
    exp_name="connect_four_dqn_seed0",
    env=dict(
        type="pettingzoo",
        import_names=["dizoo.board_games.connect_four.envs.heuristic", "dizoo.board_games.connect_four.model"],
        # the unwrapped game: the learner and every frozen player honour the action mask, so PettingZoo's
        # illegal-move and order-enforcing wrappers only cost time
        import_path="pettingzoo.classic.connect_four_v3:raw_env",
        collector_env_num=16,
        evaluator_env_num=25,
        n_evaluator_episode=100,  # per eval opponent and learner seat: 90% tells apart from 80%
        stop_value=2.0,  # never stops early: a run spends its budget (win rate against random is at most 1)
        manager=dict(type="base"),
    ),
    policy=dict(
        type="dqn",
        # Q(s, c) = V(the board after the piece drops in column c), V a 4x4 conv pooled over the board's windows
        # (dizoo/board_games/connect_four/model.py): a win is a board with four in a row, a missed block one with
        # the opponent's open three, patterns it learns on boards it never met (docs/selfplay.md)
        model=dict(type="connect_four_afterstate_q", encoder_hidden_size_list=[64], pool_channels=32),
        nstep=3,
        # a win now is worth clearly more than a win later (1 against 0.8 ** 2 = 0.64 two moves on): an opponent that
        # blocks punishes a win let pass
        discount_factor=0.8,
        learn=dict(update_per_collect=8, batch_size=256, learning_rate=0.001, target_update_freq=200),
        # each transition and its left-right mirror image go to the buffer
        collect=dict(n_sample=64, augment="dizoo.board_games.connect_four.envs.symmetry:mirror"),
        eval=dict(evaluator=dict(eval_freq=1250), final_episodes=0),
        other=dict(
            # 15% random moves to the end: the learner keeps trying the moves its Q-values rank low (an unblocked
            # win, a block), which greedy play against the pool would rarely show it
            eps=dict(type="linear", start=1.0, end=0.15, decay=20000),
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
    league=dict(
        seats=["learner", "pool"],
        swap_seats=True,
        snapshot_freq=5000,
        capacity=6,
        # snapshots play their collect mode (epsilon-greedy): a greedy snapshot plays one line
        snapshot_act="sample",
        # 0-4 random plies open each training game: more positions than the learner's own openings reach
        opening_plies=4,
        strategy="pfsp",
        p_latest=0.3,
        # three pool games in ten against the heuristic (wins when it can, blocks the opponent's win): it punishes
        # every missed win and every missed block at once, which the random player and early snapshots rarely do;
        # three in ten against connect_four_win_or_random (wins when it can, else any column): the random player's
        # positions, which no snapshot reaches, with every missed block punished there too (the learner's missed
        # blocks are what loses its games against the one-ply player); the rest to snapshots. The evaluation's
        # one-ply player is not among them.
        baselines=["connect_four_heuristic", "connect_four_win_or_random"],
        p_baseline=0.6,
        eval_opponents=["random", "connect_four_heuristic"],
        eval_latest=1,
    ),
)
