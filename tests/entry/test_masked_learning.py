"""Learning with action masks: DQN and PPO reach the best legal return of ``masked_env`` (tests/fake_masked.py).

The task is built so that masks matter: action 0 pays 2, the step's good action 1, the third legal one 0, but action 0
is legal on every fourth step only. A learner that ignored the mask would rate action 0 best in every state and take
it where it is illegal (the env raises; a forgiving env would make it waste those steps). The optimum is hand
computed: 8 steps, action 0 on steps 3 and 7 (2 each) and the good action on the 6 others (1 each): 10. A uniformly
random legal policy gets 2 * (2 + 1 + 0) / 3 + 6 * (1 + 0) / 2 = 5 (4.98 over 500 episodes), the untrained
networks of seeds 0-2 (a learning rate of 1e-12) 1.75-5.75. Each run takes about 1-3 s here. The optimum is
myopic (the best immediate legal reward at every step), so a learner without credit assignment (discount 0, a
target net never updated) also reaches it: these tests check the masks; the CartPole and Pendulum tests check
learning over time (a discount of 0 or a frozen target fails those).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from fake_masked import masked_config, optimal_return

from ding_lite.entry.serial import serial_pipeline

pytestmark = pytest.mark.algotest

LENGTH = 8
BUDGET = 20_000  # env steps; both reach the optimum within about 3k here


def test_the_hand_computed_optimum() -> None:
    assert optimal_return(LENGTH) == 2 * 2 + 6 * 1


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["dqn", "ppo"])
def test_masked_learners_reach_the_best_legal_return(tmp_path: Path, policy: str, seed: int) -> None:
    result = serial_pipeline(masked_config(policy, length=LENGTH), seed=seed, max_env_step=BUDGET,
                             exp_dir=tmp_path / "exp", progress=False)
    line = (f"{policy} masked_env seed {seed}: eval {result['eval_return']:.2f} after {result['env_step']} env steps, "
            f"{result['wall_seconds']:.2f} s")
    print(line)
    assert result["stop"] is True and result["eval_return"] == optimal_return(LENGTH), line
