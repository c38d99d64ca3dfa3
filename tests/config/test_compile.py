"""Config compilation (ding_lite/config/compile.py): both file forms, defaults merged, validation, overrides."""
from __future__ import annotations

import logging
import re

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.config import compile_config, read_config, unify
from ding_lite.errors import ConfigError, UnknownTypeError

pytestmark = pytest.mark.unittest

ENV = dict(type="gymnasium", env_id="CartPole-v1")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_dizoo_main_and_create_form(warnings_log) -> None:
    main, create = read_config(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
    cfg = compile_config(main, create)
    assert not _warnings(warnings_log)
    # create_config sections land where the compiled config keeps them
    assert cfg.env.type == "cartpole"
    assert cfg.env.import_names == ["dizoo.classic_control.cartpole.envs.cartpole_env"]
    assert cfg.env.manager.type == "base"
    assert cfg.policy.type == "dqn"
    # the user's values win ...
    assert cfg.policy.learn.update_per_collect == 5 and cfg.env.stop_value == 195
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 20000
    assert cfg.policy.eval.evaluator.eval_freq == 40
    # ... over the defaults of every component, merged in below them
    assert cfg.policy.learn.double is True and cfg.policy.learn.loss_type == "mse"
    assert cfg.policy.other.replay_buffer.type == "uniform"
    assert cfg.policy.collect.collector.type == "sample"
    assert cfg.policy.eval.evaluator.type == "interaction"
    assert cfg.policy.learn.learner.hook.save_ckpt_after_iter == 10000
    assert cfg.policy.model.type == "dqn" and cfg.policy.model.activation == "relu"
    assert cfg.env.max_episode_steps == 500  # the cartpole env type's own default
    assert cfg.policy.learn.batch_size == 64 and cfg.seed == 0


def test_unified_form_compiles_like_main_plus_create() -> None:
    main, create = read_config(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
    unified = dict(main)
    unified["env"] = dict(main["env"], type="cartpole", import_names=create["env"]["import_names"])
    unified["env_manager"] = dict(type="base")  # create-style section at the top level of a unified config
    unified["policy"] = dict(main["policy"], type="dqn")
    assert compile_config(unified) == compile_config(main, create)


def test_create_sections_fold_into_their_places() -> None:
    create = dict(env=dict(type="gymnasium"), policy=dict(type="dqn"), model=dict(dueling=False),
                  replay_buffer=dict(type="uniform", replay_buffer_size=77), collector=dict(type="episode"),
                  evaluator=dict(type="interaction"), learner=dict(hook=dict(save_ckpt_after_iter=5)))
    folded = unify(dict(env=dict(env_id="CartPole-v1"), policy=dict()), create)
    assert folded["policy"]["model"] == {"dueling": False}
    assert folded["policy"]["other"]["replay_buffer"] == {"type": "uniform", "replay_buffer_size": 77}
    assert folded["policy"]["collect"]["collector"] == {"type": "episode"}
    assert folded["policy"]["learn"]["learner"]["hook"] == {"save_ckpt_after_iter": 5}
    cfg = compile_config(dict(env=dict(env_id="CartPole-v1"), policy=dict()), create)
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 77
    assert cfg.policy.collect.collector.type == "episode"


def test_a_key_set_in_both_main_and_create_config_takes_main_config_s_value_at_any_depth() -> None:
    """One rule: main_config holds the settings, create_config names the components. Before, a top-level (unified)
    section of main_config won over create_config, but create_config won over a nested main_config section."""
    create = dict(model=dict(dueling=False, head=dict(hidden=8)), env_manager=dict(type="base", step_timeout=5.0),
                  env=dict(type="gymnasium", import_names=["json"]))
    main = dict(env=dict(env_id="CartPole-v1", import_names=["os", "json"]),
                policy=dict(model=dict(dueling=True, head=dict(hidden=16))), env_manager=dict(step_timeout=9.0))
    folded = unify(main, create)
    assert folded["policy"]["model"] == {"dueling": True, "head": {"hidden": 16}}  # nested: main_config's
    assert folded["env"]["manager"] == {"type": "base", "step_timeout": 9.0}  # top level: main_config's too
    assert folded["env"]["import_names"] == ["json", "os"]  # both lists imported, once each
    assert folded["env"]["type"] == "gymnasium"  # a key only create_config sets is kept


def test_unknown_create_section_suggests_nearest() -> None:
    with pytest.raises(ConfigError, match=r"unknown create_config section 'replay_bufer' \(did you mean "
                                          r"'replay_buffer'\?\)"):
        unify(dict(env=dict(), policy=dict()), dict(replay_bufer=dict(type="uniform")))


def test_defaults_are_deep_merged_under_the_user_config() -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn", learn=dict(batch_size=32),
                                                   other=dict(eps=dict(decay=500)))))
    assert cfg.policy.learn.batch_size == 32
    assert cfg.policy.learn.learning_rate == 0.001 and cfg.policy.learn.target_update_freq == 100  # siblings kept
    assert cfg.policy.other.eps == dict(type="exp", start=0.95, end=0.1, decay=500)  # one level deeper too
    assert cfg.env.collector_env_num == 8 and cfg.env.env_id == "CartPole-v1"
    ppo = compile_config(dict(env=ENV, policy=dict(type="ppo")))
    assert ppo.policy.learn.clip_ratio == 0.2 and ppo.policy.collect.gae_lambda == 0.95
    assert "replay_buffer" not in ppo.policy.other  # on-policy: no buffer unless asked for


def test_unknown_key_warns_with_nearest_key(warnings_log) -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn", learn=dict(batch_sise=32))))
    (message,) = _warnings(warnings_log)
    assert "unknown config key 'policy.learn.batch_sise' (did you mean 'policy.learn.batch_size'?)" in message
    assert "--strict" in message
    assert cfg.policy.learn.batch_size == 64  # the misspelled key did not set anything


def test_key_in_the_wrong_section_suggests_where_it_lives(warnings_log) -> None:
    compile_config(dict(env=ENV, policy=dict(type="dqn", learn=dict(nstep=3))))
    (message,) = _warnings(warnings_log)
    assert "'policy.learn.nstep' (did you mean 'policy.nstep'?)" in message


@pytest.mark.parametrize("moved,where", [("policy.collect.grad_clip_value=1.0", "policy.learn.grad_clip_value"),
                                         ("policy.learn.evaluator={'eval_freq': 10}", "policy.eval.evaluator")])
def test_a_key_in_the_wrong_section_beats_a_sibling_that_looks_alike(warnings_log, moved: str, where: str) -> None:
    # before, the hint was the sibling that looked alike (policy.collect.reward_clip, policy.learn.value_norm): the
    # wrong way for a key moved to another section (found by the config fuzzer)
    compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=[moved])
    (message,) = _warnings(warnings_log)
    assert f"(did you mean '{where}'?)" in message


@pytest.mark.parametrize("bad", ["policy.learn.batch_size='x'", "policy.eval.final_episodes=-1",
                                 "log.backends=None"])
def test_a_refused_config_with_a_misspelt_key_is_one_line_naming_both(warnings_log, bad: str) -> None:
    # Before: the misspelt key's 'warning:' line went out first, then the refusal (two lines on stderr; found by the
    # CLI fuzzer with e.g. --set gsl.palteau_patience=3 policy.eval.final_episodes=-1). Now the refusal carries it.
    with pytest.raises(ConfigError) as info:
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=["policy.learn.batch_sise=32", bad])
    assert "(also: unknown config key 'policy.learn.batch_sise' (did you mean 'policy.learn.batch_size'?); " \
           "ignored)" in str(info.value)
    assert bad.split("=")[0] in str(info.value) and "\n" not in str(info.value)
    assert _warnings(warnings_log) == []


def test_unknown_key_is_an_error_under_strict() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'env.colector_env_num' \(did you mean "
                                          r"'env.collector_env_num'\?\)"):
        compile_config(dict(env=dict(ENV, colector_env_num=4), policy=dict(type="dqn")), strict=True)


def test_import_names_is_known_in_every_section(warnings_log) -> None:
    main = dict(env=dict(ENV, import_names=[], manager=dict(import_names=[])),
                policy=dict(type="dqn", import_names=[], model=dict(import_names=[]),
                            collect=dict(collector=dict(import_names=[])), eval=dict(evaluator=dict(import_names=[])),
                            other=dict(replay_buffer=dict(import_names=[]))))
    compile_config(main, strict=True)
    assert not _warnings(warnings_log)


@pytest.mark.parametrize("path,value,expected", [
    ("policy.learn.batch_size", "64", "an int, got str '64'"),
    ("policy.learn.batch_size", 64.5, "an int, got float 64.5"),
    ("policy.learn.learning_rate", "fast", "a number, got str 'fast'"),
    ("policy.learn.double", 1, "a bool, got int 1"),
    ("policy.learn.loss_type", 2, "a string, got int 2"),
    ("policy.model.encoder_hidden_size_list", 64, "a list, got int 64"),
    ("policy.learn", 5, "a dict (a section), got int 5"),
])
def test_wrong_type_names_the_dotted_path(path: str, value, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[f"{path}={value!r}"])
    assert f"config key '{path}' must be {expected}" in str(info.value)


def test_int_accepted_for_float_and_integral_float_for_int() -> None:
    policy = dict(type="dqn", learn=dict(learning_rate=1, batch_size=1e2),
                  other=dict(replay_buffer=dict(replay_buffer_size=1e4)))
    cfg = compile_config(dict(env=dict(ENV, collector_env_num=4.0), policy=policy))
    assert cfg.policy.learn.learning_rate == 1
    # 1e4 for an int setting becomes the int code expects (range(), array sizes)
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 10000
    assert type(cfg.policy.other.replay_buffer.replay_buffer_size) is int
    assert type(cfg.policy.learn.batch_size) is int and type(cfg.env.collector_env_num) is int


def test_missing_policy_section_or_type() -> None:
    with pytest.raises(ConfigError, match="config has no 'policy' section"):
        compile_config(dict(env=ENV))
    with pytest.raises(ConfigError, match=r"config section 'policy' must be a dict, policy=dict\(...\), got 5"):
        compile_config(dict(env=ENV, policy=5))  # before: 'config has no policy section', though it has one
    with pytest.raises(ConfigError, match=r"policy.type is not set: name a registered policy \(known: .*dqn"):
        compile_config(dict(env=ENV, policy=dict()))


def test_unknown_types_name_the_nearest() -> None:
    with pytest.raises(UnknownTypeError, match="unknown policy type 'ppp' \\(did you mean 'ppo'\\?\\)"):
        compile_config(dict(env=ENV, policy=dict(type="ppp")))
    with pytest.raises(UnknownTypeError, match="unknown env type 'gymnasum' \\(did you mean 'gymnasium'\\?\\)"):
        compile_config(dict(env=dict(ENV, type="gymnasum"), policy=dict(type="dqn")))


def test_set_overrides_parse_literals_and_strings(warnings_log) -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[
        "policy.learn.batch_size=128",  # int
        "policy.learn.learning_rate=5e-4",  # float
        "policy.learn.double=False",  # bool
        "policy.model.encoder_hidden_size_list=[32, 16]",  # list
        "policy.learn.target_theta=0.01",  # None default: any value
        "env.env_id=Acrobot-v1",  # a bare word stays a string
        "policy.learn.loss_type='mse'",  # quoted string
        "exp_name=runs/a=b",  # only the first '=' splits
        "policy.learn.batch_size=256",  # the last override wins
    ])
    assert cfg.policy.learn.batch_size == 256 and cfg.policy.learn.learning_rate == 5e-4
    assert cfg.policy.learn.double is False and cfg.policy.model.encoder_hidden_size_list == [32, 16]
    assert cfg.policy.learn.target_theta == 0.01
    assert cfg.env.env_id == "Acrobot-v1" and cfg.policy.learn.loss_type == "mse" and cfg.exp_name == "runs/a=b"
    assert not _warnings(warnings_log)


def test_set_creates_new_nested_keys(warnings_log) -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[
        "policy.learn.learner.hook.save_ckpt_after_iter=7",  # a section the user config did not have
        "policy.other.replay_buffer.replay_buffer_size=99",
    ])
    assert cfg.policy.learn.learner.hook.save_ckpt_after_iter == 7
    assert cfg.policy.learn.learner.hook.save_ckpt_after_run is True  # defaults still merged around it
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 99
    assert not _warnings(warnings_log)
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=["policy.brand.new.key=1"])
    assert "brand" not in cfg.policy  # reported, then dropped: the compiled config holds only known settings
    assert any("unknown config key 'policy.brand'" in m for m in _warnings(warnings_log))


def test_set_errors() -> None:
    with pytest.raises(ConfigError, match="--set expects KEY=VALUE"):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=["policy.learn.batch_size"])
    with pytest.raises(ConfigError, match="'policy.type' is a value, not a section"):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=["policy.type.x=1"])
    with pytest.raises(ConfigError, match="is not a dotted path"):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=["policy..x=1"])


def test_seed_argument_sets_the_seed() -> None:
    assert compile_config(dict(env=ENV, policy=dict(type="dqn")), seed=7).seed == 7


def test_policy_defaults_for_its_parts_win_over_the_parts_defaults() -> None:
    # A policy may set defaults for its parts (here a log interval); the learner's generic default is 100
    from ding_lite.policy.ppo import PPOPolicy
    from ding_lite.registry import POLICY_REGISTRY

    @POLICY_REGISTRY.register("ppo_log_every_7")
    class LogEvery7(PPOPolicy):
        config = dict(type="ppo_log_every_7", learn=dict(learner=dict(hook=dict(log_show_after_iter=7))))

    ppo = compile_config(dict(env=ENV, policy=dict(type="ppo_log_every_7")))
    dqn = compile_config(dict(env=ENV, policy=dict(type="dqn")))
    assert ppo.policy.learn.learner.hook.log_show_after_iter == 7
    assert dqn.policy.learn.learner.hook.log_show_after_iter == 100
    assert ppo.policy.learn.learner.hook.save_ckpt_after_iter == 10000  # the rest of the learner defaults stay
    user = compile_config(dict(env=ENV, policy=dict(type="ppo_log_every_7", learn=dict(learner=dict(hook=dict(
        log_show_after_iter=5))))))
    assert user.policy.learn.learner.hook.log_show_after_iter == 5  # and the user's value wins over both


@pytest.mark.parametrize("override,message", [
    ("policy.nstep=0", "policy.nstep must be at least 1, got 0"),
    ("policy.learn.batch_size=0", "policy.learn.batch_size must be at least 1, got 0"),
    ("policy.learn.target_update_freq=0", "policy.learn.target_update_freq must be at least 1, got 0"),
    ("env.collector_env_num=0", "env.collector_env_num must be in [1, 1000]"),
    ("policy.other.replay_buffer.replay_buffer_size=16",
     "policy.other.replay_buffer.replay_buffer_size=16 is smaller than policy.learn.batch_size=64"),
])
def test_counts_below_one_and_a_buffer_smaller_than_a_batch_are_config_errors(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[override])


def test_on_policy_counts_are_checked_too() -> None:
    with pytest.raises(ConfigError, match=re.escape("policy.learn.epoch_per_collect must be at least 1, got 0")):
        compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=["policy.learn.epoch_per_collect=0"])


@pytest.mark.parametrize("section,value", [("policy", ["dqn"]), ("policy", 5), ("env", {"id": "CartPole-v1"}),
                                           ("policy.model", ("dqn",))])
def test_a_type_that_is_not_a_name_is_a_config_error(section: str, value) -> None:
    main = dict(env=dict(ENV), policy=dict(type="dqn", model=dict()))
    node = main
    for part in section.split("."):
        node = node[part]
    node["type"] = value
    with pytest.raises(ConfigError, match=re.escape(f"{section}.type must be a string naming a registered")):
        compile_config(main)


def test_a_component_named_differently_in_main_and_create_config_is_a_config_error() -> None:
    main = dict(env=dict(ENV), policy=dict(type="ppo"))
    with pytest.raises(ConfigError, match=re.escape("policy.type is 'ppo' in main_config but "
                                                    "create_config.policy.type is 'dqn'")):
        compile_config(main, dict(policy=dict(type="dqn")))
    assert compile_config(main, dict(policy=dict(type="ppo"))).policy.type == "ppo"  # the same name twice is fine


@pytest.mark.parametrize("override", ["policy.other=None", "env.kwargs=None"])
def test_none_for_a_section_without_defaults_is_the_empty_section(override: str) -> None:
    # policy.other=None for PPO (whose other section is empty) was kept as None, and the buffer check of the compiled
    # config was an AttributeError traceback (found by the config fuzzer)
    cfg = compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=[override])
    assert cfg.policy.other == {} and cfg.env.kwargs == {}


@pytest.mark.parametrize("policy,value", [("acer", True), ("dqn", True), ("ppo", False)])
def test_on_policy_is_the_policy_types_own(policy: str, value: bool) -> None:
    # ACER with policy.on_policy=True got no replay buffer and its first update was a torch RuntimeError traceback
    # (found by the config fuzzer)
    with pytest.raises(ConfigError, match=re.escape(f"policy.on_policy={value}: policy '{policy}' learns")):
        compile_config(dict(env=ENV, policy=dict(type=policy)), overrides=[f"policy.on_policy={value}"])
    assert compile_config(dict(env=ENV, policy=dict(type=policy, on_policy=not value))).policy.on_policy is not value


@pytest.mark.parametrize("key", ["policy.load_path", "demo.demo_path"])
@pytest.mark.parametrize("value", ["-1", "True", "[]", "{}", "inf"])
def test_a_file_key_takes_a_path_or_none(key: str, value: str) -> None:
    # policy.load_path=-1 compiled, and -m eval was a TypeError traceback of Path(-1) (found by the config fuzzer)
    with pytest.raises(ConfigError, match=re.escape(f"config key '{key}' must be a file path (a string) or None")):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[f"{key}={value}"])
    assert compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[f"{key}='ckpt/x.pth.tar'"])


@pytest.mark.parametrize("value", [["MiniGrid-DoorKey-5x5-v0"], {"id": "CartPole-v1"}, 5])
def test_an_env_id_that_is_no_string_is_a_config_error(value) -> None:
    # env.env_id=[...] was a TypeError traceback (unhashable list) from gymnasium's registry look-up (config fuzzer)
    from ding_lite.build import check_env_config

    cfg = compile_config(dict(env=dict(type="gymnasium", env_id=value), policy=dict(type="ppo")))
    with pytest.raises(ConfigError, match=re.escape(f"env.env_id must be a string (a gymnasium id such as "
                                                    f"'CartPole-v1'), got {type(value).__name__}")):
        check_env_config(cfg.env)


def test_variations_on_an_env_type_without_them_are_a_warning(warnings_log) -> None:
    # env.variations=[1] on CartPole ran exactly as without it, without a word (found by the config fuzzer)
    from conftest import REPO_ROOT

    from ding_lite.build import fill_model_shapes_from_env, load_config

    cfg = load_config(DIZOO_CARTPOLE / "cartpole_dqn_config.py", overrides=["env.variations=[1]"])
    fill_model_shapes_from_env(cfg)
    assert _warnings(warnings_log) == [
        "warning: env.variations is set, but env type 'cartpole' declares no num_variations (see "
        "docs/gsl.md#env-variations): unless its reset reads options['variation'], every id plays the same env"]
    warnings_log.clear()
    maze = load_config(REPO_ROOT / "dizoo" / "grid" / "maze" / "config" / "maze_gsl_config.py")
    fill_model_shapes_from_env(maze)  # an env family: no warning
    assert not _warnings(warnings_log)


def test_a_type_of_none_is_the_sections_default_type() -> None:
    """``type=None`` (a DI-engine create_config's env_manager=dict(type=None), or ``--set env.manager.type=None``)
    asks for the default: the compiled config names the default type. Before: the None was merged over it and the
    build said "unknown env_manager type 'None'"."""
    cfg = compile_config(dict(env={**ENV, "manager": dict(type=None)}, policy=dict(type="dqn"),
                              replay_buffer=dict(type=None)))
    assert cfg.env.manager.type == "base"
    assert cfg.policy.other.replay_buffer.type == "uniform"


@pytest.mark.parametrize("where", ["env", "policy", "policy.model"])
@pytest.mark.parametrize("bad", ["[[]]", "[{}]"])
def test_import_names_holding_no_string_is_refused_naming_the_section(where: str, bad: str) -> None:
    # Before: TypeError: unhashable type: 'list' (a traceback) from the check for DI-engine's built-in modules (found
    # by the CLI fuzzer: --set policy.model.import_names=[[]]); the same from main_config and create_config both
    # listing import_names
    with pytest.raises(ConfigError, match=rf"^{re.escape(where)}\.import_names must be a list of module names"):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[f"{where}.import_names={bad}"])
    with pytest.raises(ConfigError, match=r"^env\.import_names must be a list of module names"):
        compile_config(dict(env=dict(ENV, import_names=[[]]), policy=dict(type="dqn")),
                       dict(env=dict(import_names=["math"])))
