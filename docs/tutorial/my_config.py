"""Config of docs/tutorial_custom_policy.md: CartPole with the custom policy ``my_dqn`` (DI-engine's form)."""
from easydict import EasyDict

main_config = EasyDict(dict(
    exp_name="cartpole_my_dqn",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[128, 128, 64]),
        discount_factor=0.97,
        learn=dict(update_per_collect=5, batch_size=64, learning_rate=1e-3, target_update_freq=100),
        collect=dict(n_sample=8, eps_decay=2000),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(replay_buffer=dict(replay_buffer_size=20000)),
    ),
))
create_config = EasyDict(dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="my_dqn", import_names=["my_policy"]),  # the module that registers my_dqn
))
