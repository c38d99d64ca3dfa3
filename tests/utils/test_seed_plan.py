"""The one seed plan: the seeds every pipeline derives from ``-s``, pinned (changing one changes every result)."""
from __future__ import annotations

import dataclasses

import pytest

from ding_lite.utils.seed import EVAL_SEED_OFFSET, SeedPlan

pytestmark = pytest.mark.unittest


def test_seed_plan_numbers_are_pinned() -> None:
    plan = SeedPlan(7)
    assert (plan.collector, plan.evaluator, plan.final_eval, plan.eval_players) == (7, 1007, 2007, 8)
    assert [plan.collector_actor(k, 4) for k in range(3)] == [7, 11, 15]
    assert [plan.specialist(k) for k in range(3)] == [8, 9, 10]
    assert EVAL_SEED_OFFSET == 1000


def test_seed_plan_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SeedPlan(0).seed = 1  # type: ignore[misc]


def test_a_resumed_segment_collects_on_seeds_of_its_own() -> None:
    """--resume: the collector's seeds derive from the run's seed and the checkpoint (the same checkpoint, the same
    seeds); the evaluations keep the run's."""
    fresh, resumed = SeedPlan(7), SeedPlan.resuming(7, {"train_iter": 40, "env_step": 320, "policy": {}})
    assert resumed == SeedPlan(7, (40, 320)) and resumed.resumed_at == (40, 320)
    assert resumed.collector == SeedPlan.resuming(7, {"train_iter": 40, "env_step": 320}).collector
    others = {fresh.collector, SeedPlan(7, (40, 328)).collector, SeedPlan(7, (41, 320)).collector,
              SeedPlan(8, (40, 320)).collector}
    assert resumed.collector not in others and 0 <= resumed.collector < 2**31
    assert resumed.collector_actor(1, 4) == resumed.collector + 4
    assert (resumed.evaluator, resumed.final_eval, resumed.eval_players) == (1007, 2007, 8)
    assert [resumed.specialist(k) for k in range(2)] == [8, 9]


@pytest.mark.unittest
@pytest.mark.parametrize("env_num", [1, 5, 8, 16, 100, 250, 1500])
@pytest.mark.parametrize("plan", [SeedPlan(7), SeedPlan(7, (40, 320))], ids=["fresh", "resumed"])
def test_collector_actors_never_step_an_evaluation_s_env_seeds(plan: SeedPlan, env_num: int) -> None:
    """Replacement actors take new k: over a long run k grows without bound. With 8 envs, actor 125 used to get
    seed + 1000, the evaluator's seeds (and actor 250 the final evaluation's). The actors whose env seeds stay below
    seed + 1000 keep theirs (every fresh run's published numbers); the later ones go on past the evaluations'."""
    eval_num = 16
    evaluations = {plan.evaluator + i for i in range(eval_num)} | {plan.final_eval + i for i in range(eval_num)}
    seen: set[int] = set()
    for k in range(4000 // env_num + 50):
        start = plan.collector_actor(k, env_num)
        block = set(range(start, start + env_num))
        if k == 0 or (k + 1) * env_num <= EVAL_SEED_OFFSET:
            assert start == plan.collector + k * env_num
        if env_num <= EVAL_SEED_OFFSET:  # (1500 envs: a count the config refuses, see below)
            assert not block & evaluations, (k, start)
        assert not block & seen, (k, start)
        seen |= block


@pytest.mark.unittest
@pytest.mark.parametrize("key", ["collector_env_num", "evaluator_env_num"])
def test_no_env_count_reaches_the_next_seed_block(key: str) -> None:
    """Env i of a manager gets its block's seed + i: with 1,001 collector envs, env 1000 started its first training
    episode from seed + 1000, the first evaluation episode's start (and 1,001 eval envs reached the final
    evaluation's seed + 2000). Such counts are refused in one line naming the key; 1,000 still fits."""
    from ding_lite.config import compile_config
    from ding_lite.errors import ConfigError

    env = dict(type="gymnasium", env_id="CartPole-v1")
    with pytest.raises(ConfigError, match=rf"^env\.{key} must be in \[1, 1000\].*got 1001$"):
        compile_config(dict(env={**env, key: EVAL_SEED_OFFSET + 1}, policy=dict(type="dqn")))
    cfg = compile_config(dict(env={**env, key: EVAL_SEED_OFFSET}, policy=dict(type="dqn")), seed=7)
    plan = SeedPlan(int(cfg.seed))
    blocks = [{plan.collector + i for i in range(cfg.env.collector_env_num)},
              {plan.evaluator + i for i in range(cfg.env.evaluator_env_num)},
              {plan.final_eval + i for i in range(cfg.env.evaluator_env_num)}]
    assert not (blocks[0] & blocks[1] or blocks[1] & blocks[2] or blocks[0] & blocks[2])
