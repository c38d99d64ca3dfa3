"""Which of DI-engine's own dizoo configs build here with the package renamed: every ``*_config.py`` of a DI-engine
checkout whose ``create_config`` names a policy ding_lite has (dqn, ppo, acer, sac, td3) and an env it has (cartpole,
pendulum, mujoco, atari), without a reward model, has ``ding.`` renamed to ``ding_lite.`` and is compiled with
``--strict``, its env managers and its policy built (no training). One line per config: ``ok`` or the one-line error
that stopped it; the last line is the count.

    git clone https://github.com/opendilab/DI-engine /tmp/DI-engine   # or any checkout of it
    python benchmarks/di_engine_port_scan.py /tmp/DI-engine [--out /tmp/di_engine_port_scan]

Each config builds in a fresh Python process (a config may register plugins, and a failure must not leak into the
next one), with this checkout's ``ding_lite`` and ``dizoo`` first on the path.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("dqn", "ppo", "acer", "sac", "td3")
ENVS = ("cartpole", "pendulum", "mujoco", "atari")
BUILD = """
import sys
from ding_lite.build import build, build_env_managers, load_config
from ding_lite.errors import DingLiteError
try:
    cfg = load_config(sys.argv[1], strict=True, seed=0)
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        build(cfg, "policy")
except DingLiteError as exc:
    print(" ".join(str(exc).split()))
    sys.exit(2)
print("ok")
"""


def section_type(source: str, section: str) -> str | None:
    """The ``type`` that a config's ``create_config`` gives ``section`` (``env`` or ``policy``), read as text."""
    found = re.search(rf"\b{section}=dict\(\s*type=['\"](\w+)['\"]", source)
    return found.group(1) if found else None


def candidates(checkout: Path) -> list[Path]:
    """The configs of ``checkout/dizoo`` with a policy and an env ding_lite has, and no reward model."""
    chosen = []
    for path in sorted((checkout / "dizoo").rglob("*_config.py")):
        source = path.read_text(errors="replace")
        if "main_config" in source and "reward_model" not in source and \
                section_type(source, "policy") in POLICIES and section_type(source, "env") in ENVS:
            chosen.append(path)
    return chosen


def scan(checkout: Path, out: Path) -> list[tuple[str, str]]:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rows = []
    for path in candidates(checkout):
        renamed = out / path.relative_to(checkout).as_posix().replace("/", "__")
        renamed.write_text(re.sub(r"\bding\.", "ding_lite.", path.read_text()))
        proc = subprocess.run([sys.executable, "-c", BUILD, str(renamed)], cwd=out, env=env, capture_output=True,
                              text=True, timeout=600)
        lines = proc.stdout.strip().splitlines()
        outcome = lines[-1] if lines else f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
        rows.append((str(path.relative_to(checkout)), outcome))
        print(f"{outcome[:160]:160s} {path.relative_to(checkout)}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a checkout of opendilab/DI-engine")
    parser.add_argument("--out", type=Path, default=Path("/tmp/di_engine_port_scan"), help="renamed configs go here")
    args = parser.parse_args()
    rows = scan(args.checkout, args.out)
    built = sum(outcome == "ok" for _, outcome in rows)
    print(f"built {built} of {len(rows)}")


if __name__ == "__main__":
    main()
