"""Configs: read config files, compile (merge defaults, validate, override) and save them."""
from ding_lite.config.compile import compile_config, unify
from ding_lite.config.reader import apply_overrides, parse_override, read_config
from ding_lite.config.writer import config_to_source, save_config

__all__ = ["read_config", "compile_config", "unify", "apply_overrides", "parse_override", "save_config",
           "config_to_source"]
