"""DQN learner on PettingZoo's connect_four_v3 against its own opponent pool and the random player, as first and
second player (the seats are shuffled every game). Beats the random player in at least 90% of games on either seat
after 30,000 env steps (tests/entry/test_selfplay_learning.py; the measured table is in docs/selfplay.md).
Run: ding_lite -m selfplay -c dizoo/board_games/connect_four/config/connect_four_dqn_config.py -s 0"""
main_config = dict(
    exp_name="connect_four_dqn_seed0",
    env=dict(
        type="pettingzoo",
        import_names=["dizoo.board_games.connect_four.envs.heuristic"],
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
        # the (6, 7, 2) board gets the small conv encoder; its pieces are 0/1, not pixels: no 1/255 scaling
        model=dict(encoder_hidden_size_list=[128, 128], dueling=True, image_scale=1.0),
        nstep=3,
        discount_factor=0.9,  # a win now is worth more than a win later: against any opponent, finish the game
        learn=dict(update_per_collect=8, batch_size=128, learning_rate=0.001, target_update_freq=200),
        # each transition and its left-right mirror image go to the buffer
        collect=dict(n_sample=64, augment="dizoo.board_games.connect_four.envs.symmetry:mirror"),
        eval=dict(evaluator=dict(eval_freq=1250), final_episodes=0),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.05, decay=5000),
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
        # a share of the pool's games against the random player: snapshots of a greedy learner play one line
        # each, the random player shows the learner the positions a snapshot never reaches
        baselines=["random"],
        p_baseline=0.75,
        eval_opponents=["random", "connect_four_heuristic"],
        eval_latest=1,
    ),
)
