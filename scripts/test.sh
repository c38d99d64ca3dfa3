#!/usr/bin/env bash
# Install what the tests need (torch==2.13.0 first where torch is absent, never upgraded), lint, build the docs site
# (--strict: a broken link, a missing anchor or a page left out of mkdocs.yml's nav fails), then run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip --version >/dev/null
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[test,ray,plot,docs,pettingzoo,envpool,atari,mujoco,minigrid,wandb,mlflow,video,tune,bench]"
python -m ruff check .
python -m mypy ding_lite
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict  # not -q: quiet mode hides warnings from --strict
# One worker per core (PYTEST_WORKERS overrides; 0 runs in this process); a file's tests stay on one worker, so its
# module fixtures (trained runs shared by several tests) are built once.
workers="${PYTEST_WORKERS:-$(python -c 'import os; print(min(4, len(os.sched_getaffinity(0))))')}"
python -m pytest -q -m "not benchmark" --durations=15 -n "$workers" --dist loadfile "$@"
