"""Bytes per stored Atari transition: DQN's train samples on Pong (4x84x84 uint8 frame stacks) pushed into the
``uniform`` replay buffer, against the bytes of the frames the sample holds (its observation and its n-step
bootstrap observation, uint8), and PPO's on-policy samples against their frames.

Frames stay uint8 from the env to the buffer and are scaled inside the model, so the ratio is about 1; a float32
copy anywhere on the way would make it about 4. Each transition holds two frame stacks (obs and the bootstrap obs,
each 4x84x84); sharing frames between neighbouring transitions (as DQN's original replay memory does) is not done,
the table says what it would save. The last line is the DQN buffer's ratio, e.g. ``ratio 1.00``.

    python benchmarks/atari_memory.py [--capacity 2000] [--env-num 4] [--manager envpool|subprocess]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import numpy as np  # noqa: E402

from benchmarks.buffer_throughput import nbytes  # noqa: E402
from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config  # noqa: E402
from ding_lite.data.batch import batch_len  # noqa: E402
from ding_lite.data.keys import NEXT_OBS, NEXT_OBS_N, OBS  # noqa: E402
from ding_lite.registry import BUFFER_REGISTRY  # noqa: E402


def pong_config(policy: str, env_num: int, manager: str) -> Any:
    env_type = "envpool" if manager == "envpool" else "atari"
    return compile_config(dict(env=dict(type=env_type, env_id="Pong-v5", collector_env_num=env_num,
                                        evaluator_env_num=1, manager=dict(type=manager)),
                               policy=dict(type=policy, model=dict(encoder_hidden_size_list=[512]))))


def samples(policy: str, n: int, env_num: int, manager: str) -> dict[str, Any]:
    """At least ``n`` train samples of an untrained ``policy`` on Pong."""
    cfg = pong_config(policy, env_num, manager)
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy", enable_field=["collect"])
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        got, _ = collector.collect(n_sample=n)
    return got


def frame_bytes(batch: dict[str, Any]) -> int:
    """Bytes of the uint8 frame stacks a batch holds (obs and any next / bootstrap obs)."""
    return sum(batch[k].nbytes for k in (OBS, NEXT_OBS, NEXT_OBS_N) if k in batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=2000)
    parser.add_argument("--env-num", type=int, default=4)
    parser.add_argument("--manager", default="envpool", choices=["envpool", "subprocess", "base"])
    args = parser.parse_args()
    dqn = samples("dqn", args.capacity, args.env_num, args.manager)
    assert dqn[OBS].dtype == np.uint8 and dqn[NEXT_OBS_N].dtype == np.uint8, "frames were converted on the way"
    buf = BUFFER_REGISTRY.build("uniform", dict(replay_buffer_size=args.capacity), seed=0)
    buf.push(dqn)
    n = len(buf)
    stored = nbytes(buf) / n
    frames = frame_bytes(dqn) / batch_len(dqn)
    one_stack = dqn[OBS][0].nbytes
    ppo = samples("ppo", 512, args.env_num, args.manager)
    ppo_stored = sum(v.nbytes for v in ppo.values() if isinstance(v, np.ndarray)) / batch_len(ppo)
    ppo_frames = frame_bytes(ppo) / batch_len(ppo)
    print(f"Pong-v5 ({args.manager}), frame stack {dqn[OBS].shape[1:]} {dqn[OBS].dtype}, {n} transitions stored")
    print(f"{'samples':<28}{'bytes/transition':>18}{'frame bytes':>14}{'ratio':>8}")
    print(f"{'DQN uniform buffer':<28}{stored:>18,.0f}{frames:>14,.0f}{stored / frames:>8.3f}")
    print(f"{'PPO train samples':<28}{ppo_stored:>18,.0f}{ppo_frames:>14,.0f}{ppo_stored / ppo_frames:>8.3f}")
    print(f"one frame stack: {one_stack:,} bytes; a DQN transition holds two (obs, bootstrap obs): "
          f"{stored / one_stack:.2f} stacks, {stored / (one_stack / 4):.1f} single frames")
    print(f"ratio {stored / frames:.3f}")


if __name__ == "__main__":
    main()
