"""A new user's first day (issue 10): --version, one folder per seed, the config's folder on the import path,
ignored keys in the last line and in result.json."""
from __future__ import annotations

import pytest
from conftest import run_cli

import ding_lite

pytestmark = pytest.mark.unittest


def test_version(tmp_path) -> None:
    proc = run_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"ding_lite {ding_lite.__version__}"
