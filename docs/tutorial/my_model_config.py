"""Config of docs/tutorial_custom_model.md: PPO on CartPole with the custom model ``my_ac`` (DI-engine's form)."""
from easydict import EasyDict

main_config = EasyDict(dict(
    exp_name="cartpole_ppo_my_ac",
    env=dict(collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195),
    policy=dict(
        model=dict(
            type="my_ac",  # the registered model
            import_names=["my_model"],  # the module that registers it (found next to this file)
            hidden_size=64,  # a keyword argument of MyActorCritic; obs_shape and action_shape come from the env
        ),
        learn=dict(epoch_per_collect=10, batch_size=64, learning_rate=3e-4),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=80)),  # 10 epochs x 4 minibatches = 40 train iterations per collect
    ),
))
create_config = EasyDict(dict(
    env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
))
