"""The benchmark scripts stay runnable: each imports cleanly against the current package (they are not run in CI)."""
from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unittest

SCRIPTS = sorted((REPO_ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_script_imports(script) -> None:
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: dataclasses look their module up there
    try:
        spec.loader.exec_module(module)  # runs the imports and definitions; the benchmark itself needs __main__
    finally:
        del sys.modules[spec.name]
    assert module.__doc__, f"{script.name} needs a docstring saying what it measures and how to run it"
