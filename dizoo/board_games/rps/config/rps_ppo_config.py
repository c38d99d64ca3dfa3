"""PPO learner on PettingZoo's rock-paper-scissors (rps_v2, 15 rounds a game) against a pool of its own snapshots
that act by sampling their action distributions (league.snapshot_act='sample'). The game's only equilibrium is the
uniform mixed strategy; a pool of sampling snapshots, drawn uniformly (fictitious self-play), pulls the learner
towards it (benchmarks/selfplay_strength.py measures its action probabilities; docs/selfplay.md).
Run: ding_lite -m selfplay -c dizoo/board_games/rps/config/rps_ppo_config.py -s 0"""
main_config = dict(
    exp_name="rps_ppo_seed0",
    env=dict(
        type="pettingzoo",
        import_path="pettingzoo.classic.rps_v2:parallel_env",
        kwargs=dict(max_cycles=15),
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=48,
        stop_value=2.0,  # never stops early: against any opponent the equilibrium wins half of the time
        manager=dict(type="base"),
    ),
    policy=dict(
        type="ppo",
        # the observation is the opponent's last move (Discrete(4), one-hot)
        model=dict(encoder_hidden_size_list=[32, 32]),
        discount_factor=0.9,
        # a strong entropy bonus: the entropy-regularised game has the same (uniform) equilibrium, and learning in it
        # converges to it instead of cycling around it (Perolat et al. 2021, "From Poincare recurrence to convergence
        # in imperfect information games"); the learner still answers a biased opponent (its advantages, about 1 a
        # step once normalised, outweigh the bonus's pull). With 0.01 the learner ends 0.24 from 1/3 (seed 0)
        learn=dict(epoch_per_collect=4, batch_size=120, learning_rate=3e-4, entropy_weight=0.5),
        collect=dict(n_sample=480, gae_lambda=0.95),
        eval=dict(evaluator=dict(eval_freq=200), final_episodes=0),
    ),
    league=dict(
        seats=["learner", "pool"],
        # a greedy snapshot of a mixed strategy plays one pure strategy, which the learner then counters: snapshots
        # must play their mixed strategies, sampled
        snapshot_act="sample",
        snapshot_freq=2400,
        capacity=20,
        strategy="uniform",  # fictitious self-play: a best response to the average of the past strategies
        p_latest=0.0,
        eval_opponents=["random"],
        eval_latest=1,
    ),
)
