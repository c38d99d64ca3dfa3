"""Config of docs/tutorial_custom_env.md: PPO on the custom env type ``corridor`` (unified form)."""
main_config = dict(
    exp_name="corridor_ppo",
    env=dict(
        type="corridor",
        import_names=["corridor_env"],  # the module that registers the env type
        length=8,
        collector_env_num=4,
        evaluator_env_num=4,
        n_evaluator_episode=8,
        stop_value=0.9,  # the optimum is 0.94 to 0.97, depending on the start cell
    ),
    policy=dict(
        type="ppo",
        learn=dict(epoch_per_collect=4, batch_size=64, learning_rate=3e-3),
        collect=dict(n_sample=128),
        eval=dict(evaluator=dict(eval_freq=8)),
    ),
)
