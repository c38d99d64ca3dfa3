"""GSL against PPO alone on Meta-World MT10 (the benchmark of the official GSL code), task ids as variations.

Same protocol as ``benchmarks/gsl_vs_ppo.py`` (GSL, then PPO for GSL's total env steps from the same seed, both
final policies evaluated on every task), on the ``metaworld_mt10`` env family (dizoo/metaworld/mt10). Needs the
``[metaworld]`` extra; not run by CI. Meta-World steps at about 100-1,000 steps/s per core, so the paper's budgets
(tens of millions of steps) are far beyond a small machine: ``--smoke`` runs every phase on a tiny budget to check
the wiring.

Run:
    python benchmarks/gsl_metaworld_mt10.py --seeds 0 1 2 --jobs 1
    python benchmarks/gsl_metaworld_mt10.py --smoke --seeds 0 --jobs 1

The last line is ``ratio R``: GSL's mean success rate over PPO's.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import gsl_vs_ppo  # noqa: E402

pytestmark = pytest.mark.benchmark

CONFIG = '''
from easydict import EasyDict
main_config = EasyDict(dict(
    exp_name="mt10_gsl",
    env=dict(type="metaworld_mt10", import_names=["dizoo.metaworld.mt10.envs.mt10_env"], variations=10,
             collector_env_num={envs}, evaluator_env_num=5, n_evaluator_episode=10, stop_value=100000,
             max_episode_steps={ep_len}),
    policy=dict(type="ppo", model=dict(obs_shape=49, action_shape=4, action_space="continuous",
                                       encoder_hidden_size_list=[256, 256]),
                learn=dict(epoch_per_collect=10, batch_size=256, learning_rate=3e-4, entropy_weight=0.0,
                           value_weight=0.5, clip_ratio=0.2, adv_norm=True),
                collect=dict(n_sample={n_sample}, discount_factor=0.99, gae_lambda=0.95),
                eval=dict(evaluator=dict(eval_freq={eval_freq}))),
    gsl=dict(plateau_patience=5, plateau_tol=50.0, phase1_max_env_step={phase1}, n_low=4, n_specialists=2,
             specialist_max_env_step={specialist}, eval_episodes_per_variation=1, demo_episodes_per_variation=4,
             phase2_max_env_step={phase2}, phase2_learn=dict(demo_log_likelihood=True, demo_coeff=0.1)),
    demo=dict(return_threshold=100000),  # Meta-World reports info['success']: that decides
))
'''
FULL = dict(envs=10, ep_len=500, n_sample=5000, eval_freq=4000,  # about 200 gradient steps per collect
            phase1=2_000_000, specialist=500_000,
            phase2=1_000_000)
SMOKE = dict(envs=2, ep_len=50, n_sample=200, eval_freq=20, phase1=400, specialist=200, phase2=400)


def write_configs(work: Path, smoke: bool) -> tuple[str, str]:
    """The GSL config and the same config for PPO alone (the serial pipeline ignores the gsl section)."""
    path = work / "mt10_gsl_config.py"
    path.write_text(CONFIG.format(**(SMOKE if smoke else FULL)))
    return str(path), str(path)


if __name__ == "__main__":
    smoke = "--smoke" in sys.argv
    if smoke:
        sys.argv.remove("--smoke")
    work = Path(tempfile.mkdtemp(prefix="gsl_mt10_"))
    if "--work" not in sys.argv:
        sys.argv += ["--work", str(work)]
    else:
        work = Path(sys.argv[sys.argv.index("--work") + 1])
        work.mkdir(parents=True, exist_ok=True)
    gsl_vs_ppo.main(*write_configs(work, smoke))
