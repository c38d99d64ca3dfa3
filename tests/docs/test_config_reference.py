"""docs/config_reference.md is what docs/gen_config_reference.py generates from the code."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO_ROOT, cli_env

pytestmark = pytest.mark.unittest


def test_config_reference_is_up_to_date() -> None:
    # A subprocess: the page documents the built-in registries, not types other tests registered in this process.
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "docs" / "gen_config_reference.py"), "--check"],
                          cwd=str(REPO_ROOT), env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_every_default_key_has_a_comment() -> None:
    reference = (REPO_ROOT / "docs" / "config_reference.md").read_text()
    rows = [line for line in reference.splitlines() if line.startswith("| `")]
    assert len(rows) > 50
    bare = [row.split("|")[1].strip() for row in rows if row.rstrip().endswith("|  |")]
    assert not bare, f"config keys without a one-line comment in their component's `config` dict: {bare}"


def _leaves(node: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in node.items():
        out += _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [prefix + key]
    return out


def test_every_key_of_a_compiled_config_is_listed() -> None:
    # Every section a compiled config holds, the pipelines' (demo, ...) and the policy's parts included, has its rows.
    from ding_lite.build import load_config
    from ding_lite.registry import CONFIG_SECTION_REGISTRY

    reference = (REPO_ROOT / "docs" / "config_reference.md").read_text()
    listed = {line.split("`")[1] for line in reference.splitlines() if line.startswith("| `")}
    cfg = load_config(REPO_ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_dqn_config.py")
    keys = _leaves(cfg)
    assert {name for name in CONFIG_SECTION_REGISTRY.names()} <= {key.split(".")[0] for key in keys}
    assert [key for key in keys if key not in listed] == []
