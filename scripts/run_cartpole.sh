#!/usr/bin/env bash
# Install ding_lite (torch==2.13.0 first where torch is absent, never upgraded) and train DQN on CartPole-v1.
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e .
ding_lite -m serial -c dizoo/classic_control/cartpole/config/cartpole_dqn_config.py -s 0 "$@"
