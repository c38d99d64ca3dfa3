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
