"""benchmarks/zoo_sb3.py's translation of dizoo configs to SB3: each setting with SB3's meaning (SB3's PPO
``learning_rate`` schedule takes the progress remaining, 1 - env steps / the learn call's total; its DQN ``gamma`` is
the one γ), and a config SB3 cannot express refused by name rather than run as a different peer."""
from __future__ import annotations

import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))

pytestmark = pytest.mark.unittest

HOPPER_PPO = REPO_ROOT / "dizoo/mujoco/hopper/config/hopper_ppo_config.py"
ACROBOT_PPO = REPO_ROOT / "dizoo/classic_control/acrobot/config/acrobot_ppo_config.py"
ACROBOT_DQN = REPO_ROOT / "dizoo/classic_control/acrobot/config/acrobot_dqn_config.py"


def _load(path, *overrides: str):
    from ding_lite.build import load_config

    return load_config(str(path), seed=0, overrides=list(overrides))


@pytest.mark.parametrize("budget", [1_000_000, 100_000])
def test_sb3_ppo_learning_rate_anneals_as_ding_lites_whatever_the_budget(budget: int) -> None:
    """Hopper's config lowers 3e-4 to 0 over 156,160 gradient steps (320 per collect of 2,048 env steps: 999,424 env
    steps). SB3's schedule must give the same rate at the same env step for a 1M run and for a 100k one
    (``zoo.py --env-steps``); it used to anneal over the budget, reaching 0 at 100k."""
    from benchmarks.zoo_sb3 import sb3_ppo_kwargs

    schedule = sb3_ppo_kwargs(_load(HOPPER_PPO), budget)[0]["learning_rate"]
    for env_step in (0, 50_000, budget // 2, budget):
        ding_lite = 3e-4 * max(1.0 - (env_step * 320 / 2048) / 156_160, 0.0)  # linear_lr_decay per gradient step
        assert schedule(1.0 - env_step / budget) == pytest.approx(ding_lite, rel=1e-9, abs=1e-12)
    assert sb3_ppo_kwargs(_load(ACROBOT_PPO), 200_000)[0]["learning_rate"] == 3e-4  # no lr_decay_iter: constant


@pytest.mark.parametrize("override", ["policy.learn.value_norm=True", "policy.recompute_adv=True",
                                      "policy.learn.dual_clip=3.0", "policy.model.share_encoder=True"])
def test_a_ppo_config_sb3_cannot_express_has_no_sb3_peer(override: str) -> None:
    from benchmarks.zoo_sb3 import sb3_ppo_kwargs

    with pytest.raises(ValueError, match=override.split("=")[0].removeprefix("policy.")):
        sb3_ppo_kwargs(_load(ACROBOT_PPO, override), 200_000)


@pytest.mark.parametrize("position", ["learn", "collect"])
def test_sb3_dqn_gamma_is_the_one_ding_lite_learns_with(position: str) -> None:
    """DI-engine's positions of γ win over policy.discount_factor in ding_lite (resolve_discount_factor); the SB3 peer
    used to read policy.discount_factor alone and train with 0.99 where ding_lite used 0.9."""
    from benchmarks.zoo_sb3 import sb3_dqn_kwargs

    assert sb3_dqn_kwargs(_load(ACROBOT_DQN, f"policy.{position}.discount_factor=0.9"), 100_000)["gamma"] == 0.9


def test_a_dqn_config_with_an_annealed_learning_rate_has_no_sb3_peer() -> None:
    from benchmarks.zoo_sb3 import sb3_dqn_kwargs

    with pytest.raises(ValueError, match="learn.lr_decay_iter"):
        sb3_dqn_kwargs(_load(ACROBOT_DQN, "policy.learn.lr_decay_iter=1000"), 100_000)
