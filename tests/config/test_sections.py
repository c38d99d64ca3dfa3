"""Config sections: the component table (COMPONENT_SECTIONS), pipeline-owned top-level sections
(CONFIG_SECTION_REGISTRY) and the generic ``build``."""
from __future__ import annotations

import pytest

from ding_lite.build import build
from ding_lite.config.compile import COMPONENT_SECTIONS, compile_config
from ding_lite.data.buffer import UniformBuffer
from ding_lite.data.prioritized import PrioritizedBuffer
from ding_lite.errors import ConfigError
from ding_lite.registry import CONFIG_SECTION_REGISTRY

pytestmark = pytest.mark.unittest

CARTPOLE = dict(env=dict(env_id="CartPole-v1"), policy=dict(type="dqn", model=dict(obs_shape=4, action_shape=2)))


def test_every_component_section_gets_its_type_and_import_names() -> None:
    cfg = compile_config(CARTPOLE)
    for component in COMPONENT_SECTIONS:
        node = cfg
        for part in component.path.split("."):
            node = node[part]
        assert node["type"] in component.registry, component.path
        assert node["import_names"] == [], component.path


def test_a_plugin_section_is_merged_and_checked() -> None:
    name = "test_sections_probe"
    CONFIG_SECTION_REGISTRY.register(name)(dict(rounds=10, label="x"))
    try:
        cfg = compile_config({**CARTPOLE, name: dict(rounds=3)})
        assert dict(cfg[name]) == dict(rounds=3, label="x")
        with pytest.raises(ConfigError, match=f"'{name}.rounds' must be an int"):
            compile_config({**CARTPOLE, name: dict(rounds="many")})
    finally:
        CONFIG_SECTION_REGISTRY._entries.pop(name)


@pytest.mark.parametrize("buffer_type, cls", [("uniform", UniformBuffer), ("prioritized", PrioritizedBuffer)])
def test_build_looks_up_the_section_type(buffer_type: str, cls: type) -> None:
    cfg = compile_config({**CARTPOLE, "policy": {**CARTPOLE["policy"],
                                                 "other": dict(replay_buffer=dict(type=buffer_type))}})
    buffer = build(cfg, "policy.other.replay_buffer", seed=0)
    assert type(buffer) is cls
    policy = build(cfg, "policy", enable_field=["eval"])
    assert policy.eval_mode is not None


def test_build_names_the_known_sections() -> None:
    with pytest.raises(ValueError, match="'policy.learn' is not a component section; known: env, env.manager"):
        build(compile_config(CARTPOLE), "policy.learn")
