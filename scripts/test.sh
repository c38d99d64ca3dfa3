#!/usr/bin/env bash
# Install what the tests need (torch==2.13.0 first where torch is absent, never upgraded), lint, then run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip --version >/dev/null
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[test,ray,envpool,atari,mujoco,minigrid]"
python -m ruff check ding_lite dizoo tests benchmarks
python -m mypy ding_lite
python -m pytest -q -m "not benchmark" --durations=15 "$@"
