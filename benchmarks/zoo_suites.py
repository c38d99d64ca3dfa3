"""The benchmark suites of ``benchmarks/zoo.py`` as data: each :class:`Suite` a list of :class:`Task` s, each naming its
dizoo config, env-step budget, evaluation interval, published reference with its source, random score, routes and the
peers that can run it. Adding a suite is adding an entry to :data:`SUITES`; ``zoo.py`` runs and reports them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


# ---- suites as data ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """A published result: its value, what it is and where it was published."""

    value: float
    source: str
    url: str


@dataclass(frozen=True)
class Task:
    """One benchmark task: a dizoo config run for ``env_steps`` on each route, evaluated every ``eval_freq``
    learner iterations (``eval_every`` env steps), scored against ``reference`` with ``random`` as 0."""

    name: str  # the env id, as the field names it
    config: str  # dizoo config, relative to the repository
    env_steps: int  # budget of every run
    eval_freq: int  # learner iterations between evaluations (``policy.eval.evaluator.eval_freq``)
    eval_every: int  # the same in env steps (for the peer and the report)
    reference: Reference
    random: float  # return of a uniformly random policy (the 0 of normalised scores)
    random_source: str
    routes: Mapping[str, tuple[str, ...]]  # route name -> config overrides that select it
    peers: tuple[str, ...] = ()  # peer frameworks that can run this config (see zoo_sb3.py)
    final_eval: bool = False  # keep the config's final evaluation (its cost is part of what a suite measures)
    eval_episodes: int = 10


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    tasks: tuple[Task, ...]
    seeds: tuple[int, ...] = (0, 1, 2)


# Open RL Benchmark's table (its rlops): each run's mean return over its last 100 training episodes (the stochastic
# policy's), then mean ± std over the runs
CLEANRL_LAST_100 = "mean ± std over 3 seeds of each seed's mean return over its last 100 training episodes"
CLEANRL_MUJOCO = f"CleanRL ppo_continuous_action, Open RL Benchmark (tag pr-424), 1M env steps: {CLEANRL_LAST_100}"
CLEANRL_MUJOCO_URL = "https://docs.cleanrl.dev/rl-algorithms/ppo/#ppo_continuous_actionpy"
D4RL_RANDOM = "D4RL's REF_MIN_SCORE (Fu et al. 2020), random policy"
MUJOCO_ROUTES = {"envpool": (), "gym": ("env.type=mujoco", "env.manager.type=base")}
ATARI_ROUTES = {"envpool": (), "gym": ("env.type=atari", "env.manager.type=subprocess")}
CLEANRL_ATARI = f"CleanRL ppo_atari, Open RL Benchmark (tag pr-424), 10M env steps (40M frames): {CLEANRL_LAST_100}"
CLEANRL_ATARI_URL = "https://docs.cleanrl.dev/rl-algorithms/ppo/#ppo_ataripy"
DQN_RANDOM = "Mnih et al. 2015, Extended Data Table 2 (random agent)"
RL_ZOO_DQN = ("rl-baselines3-zoo benchmark.md, DQN with its tuned hyperparameters, 100k (Acrobot) / 120k "
              "(MountainCar) env steps: one trained agent's mean over ~150k deterministic evaluation steps")
RL_ZOO_PPO = ("rl-baselines3-zoo benchmark.md, PPO with its Acrobot-v1 hyperparameters, 1M env steps: one trained "
              "agent's mean over ~150k deterministic evaluation steps")
RL_ZOO_URL = "https://github.com/DLR-RM/rl-baselines3-zoo/blob/master/benchmark.md"
RANDOM_TIME_LIMIT = "a uniformly random policy almost never reaches the goal: every step -1 up to the time limit"


def _mujoco(name: str, folder: str, reference: float, random: float) -> Task:
    return Task(name, f"dizoo/mujoco/{folder}/config/{folder}_ppo_config.py", 1_000_000, 1600, 10_240,
                Reference(reference, CLEANRL_MUJOCO, CLEANRL_MUJOCO_URL), random, D4RL_RANDOM, MUJOCO_ROUTES,
                peers=("sb3",))


SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("mujoco-ppo", "PPO on MuJoCo v4, CleanRL's ppo_continuous_action hyperparameters, 1M env steps", (
        _mujoco("Hopper-v4", "hopper", 2382.86, -20.272305),
        _mujoco("Walker2d-v4", "walker2d", 2287.95, 1.629008),
        _mujoco("HalfCheetah-v4", "halfcheetah", 1442.64, -280.178953),
    )),
    Suite("classic-control", "PPO on CartPole-v1 (the dizoo config), 100k env steps", (
        Task("CartPole-v1", "dizoo/classic_control/cartpole/config/cartpole_ppo_config.py", 100_000, 320, 2_048,
             Reference(490.04, f"CleanRL ppo.py, Open RL Benchmark (tag pr-424), 500k env steps: {CLEANRL_LAST_100}",
                       "https://docs.cleanrl.dev/rl-algorithms/ppo/#ppopy"),
             22.0, "a uniformly random policy (about 22 steps per episode)", {"gym": ()}),
    ), seeds=(0, 1, 2)),
    Suite("rl-zoo-dqn", "DQN on classic control with rl-baselines3-zoo's tuned settings, SB3's DQN beside", (
        Task("Acrobot-v1", "dizoo/classic_control/acrobot/config/acrobot_dqn_config.py", 100_000, 5000, 5_000,
             Reference(-76.64, RL_ZOO_DQN, RL_ZOO_URL), -500.0, RANDOM_TIME_LIMIT, {"gym": ()}, peers=("sb3",)),
        Task("MountainCar-v0", "dizoo/classic_control/mountain_car/config/mountain_car_dqn_config.py", 120_000, 4000,
             8_000, Reference(-100.85, RL_ZOO_DQN, RL_ZOO_URL), -200.0, RANDOM_TIME_LIMIT, {"gym": ()},
             peers=("sb3",)),
    )),
    Suite("rl-zoo-ppo", "PPO on Acrobot-v1 with rl-baselines3-zoo's settings, 200k env steps, SB3's PPO beside", (
        Task("Acrobot-v1", "dizoo/classic_control/acrobot/config/acrobot_ppo_config.py", 200_000, 512, 8_192,
             Reference(-73.51, RL_ZOO_PPO, RL_ZOO_URL), -500.0, RANDOM_TIME_LIMIT, {"gym": ()}, peers=("sb3",)),
    )),
    Suite("atari-smoke", "PPO on Pong and Breakout for 20k env steps with the final evaluation: it must end in "
          "bounded time on every game, on both routes", (
              Task("Pong-v5", "dizoo/atari/pong/config/pong_ppo_config.py", 20_000, 800, 51_200,
                   Reference(20.36, CLEANRL_ATARI, CLEANRL_ATARI_URL), -20.7, DQN_RANDOM, ATARI_ROUTES,
                   final_eval=True, eval_episodes=4),
              Task("Breakout-v5", "dizoo/atari/breakout/config/breakout_ppo_config.py", 20_000, 800, 51_200,
                   Reference(414.66, CLEANRL_ATARI, CLEANRL_ATARI_URL), 1.7, DQN_RANDOM, ATARI_ROUTES,
                   final_eval=True, eval_episodes=4),
          ), seeds=(0,)),
)}
