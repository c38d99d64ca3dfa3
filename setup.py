"""ding_lite: a light, registry-based reinforcement-learning framework in the style of DI-engine."""
from pathlib import Path

from setuptools import find_packages, setup

README = Path(__file__).with_name("README.md")

setup(
    name="ding_lite",
    version="0.1.0",
    description="A light, fast, strict registry-based RL framework (DI-engine style configs, Ray scale-out)",
    long_description=README.read_text() if README.exists() else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["ding_lite", "ding_lite.*", "dizoo", "dizoo.*"]),
    python_requires=">=3.10",
    install_requires=[
        "torch>=2.1",  # install torch==2.13.0 first where torch is absent (see README)
        "numpy>=1.24",
        "gymnasium>=1.0",
        "easydict>=1.10",
        "tensorboardX>=2.6",
        "tqdm>=4.60",
        # PPO's passes for MLP actor-critics, compiled (ding_lite/policy/ppo_jit.py; NumPy ops without them); numba
        # takes its BLAS (the matrix products) from scipy
        "numba>=0.61",
        "scipy>=1.10",
    ],
    extras_require={
        "test": ["pytest>=7", "pytest-xdist>=3.5", "ruff>=0.5", "mypy>=1.8"],  # xdist: the suite on every core
        "ray": ["ray[default]>=2.59"],  # 2.59: local instances use token authentication
        "plot": ["matplotlib>=3.7", "rliable>=1.2"],  # ding_lite -m plot (rliable: --aggregate's estimators)
        "wandb": ["wandb>=0.17"],  # log.backends=['tensorboard', 'wandb']
        "mlflow": ["mlflow>=2.10"],  # log.backends=['tensorboard', 'mlflow']
        "video": ["imageio-ffmpeg>=0.4.9"],  # -m eval --video, policy.eval.evaluator.video_every
        "tune": ["ray[tune]>=2.59", "optuna>=3.0"],  # ding_lite -m sweep
        "docs": ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"],  # mkdocs build / serve
        "pettingzoo": ["pettingzoo>=1.24"],  # multi-agent games and -m selfplay
        "envpool": ["envpool>=1.2"],  # batched C++ envs: Atari, MuJoCo, classic control (env.manager.type='envpool')
        "atari": ["ale-py>=0.9", "opencv-python-headless>=4"],  # env.type='atari' (envpool's Atari env over ale-py)
        "mujoco": ["mujoco>=3", "gymnasium[mujoco]>=1.0"],  # env.type='mujoco'
        "minigrid": ["minigrid>=2.3"],  # env.type='minigrid'
        "metaworld": ["metaworld>=3.0"],  # MT10 env family (dizoo/metaworld): benchmarks/gsl_metaworld_mt10.py
        # benchmarks/zoo.py: interval estimates (rliable), figures, the SB3 peer
        "bench": ["rliable>=1.0", "matplotlib>=3.7", "stable-baselines3>=2.3"],
    },
    entry_points={"console_scripts": ["ding_lite=ding_lite.cli:main"]},
)
