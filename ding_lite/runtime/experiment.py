"""The experiment folder: its name per seed, the compiled config saved in it, JSON written atomically."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from easydict import EasyDict

from ding_lite.config import save_config
from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.claim import normal_path
from ding_lite.utils.run_folder import BEST_CKPT, CKPT_DIR, CONFIG_FILE, RESULT_FILE


def experiment_dir(cfg: EasyDict, exp_name: str | None, seed: int, n_seeds: int) -> Path:
    """``<exp_name>`` for a single seed; with several seeds from one command, one folder per seed: a trailing
    ``_seed<K>`` of the name (DI-engine's habit) becomes ``_seed<seed>``, otherwise ``_seed<seed>`` is appended. A
    ``..`` in the name is resolved by name (``a/../b`` is ``b``), as the run's folder is claimed."""
    if exp_name is None and cfg.get("exp_name") is None:  # str(None) would name a folder 'None'
        raise ConfigError("exp_name is None: give the experiment a name (exp_name='cartpole_dqn' in the config, or "
                          "--exp-name cartpole_dqn)")
    name = str(exp_name if exp_name is not None else cfg.exp_name)
    where = "--exp-name" if exp_name is not None else "exp_name"
    folder = str(exp_folder(name, where))  # its '..' parts resolved by name: 'a/../b' is the folder 'b'
    if name == "" or Path(folder).name in ("", ".", ".."):
        raise ConfigError(f"{where} {name!r} names no folder of its own: give the experiment a name, e.g. "
                          f"--exp-name cartpole_dqn")
    if n_seeds > 1:
        folder = re.sub(r"_seed\d+$", "", folder) + f"_seed{seed}"
    return Path(folder)


def exp_folder(name: str, where: str = "--exp-name") -> Path:
    """The folder that the experiment name ``name`` (given as ``where``) names: a leading ``~`` is the home folder
    (:func:`~ding_lite.utils.claim.normal_path`). A name that would make a folder literally named ``~`` in the current
    directory (``a/~``; ``~bob/x`` where no user bob exists) is refused: a later ``rm -rf ~`` to tidy it up removes
    the home folder (one that exists already is not made: a path through it is used). So is the home folder itself
    (``~``): a run would write among its files, or, as it is not empty, beside it (``/home/<user>_1``)."""
    folder = normal_path(name)
    home = normal_path("~")
    if folder == home:
        raise ConfigError(f"{where} {name!r} is the home folder itself, not a folder for the run: name one in it, "
                          f"e.g. {where} ~/runs/cartpole_dqn")
    # a '~' folder that exists already is not made here (a run, or a sweep's trial given its absolute path, from a
    # directory inside one): refused, -m sweep failed in every trial where -m serial ran with the same name
    if "~" in folder.parts and not Path(*folder.parts[:folder.parts.index("~") + 1]).is_dir():
        raise ConfigError(f"{where} {name!r} would make a folder literally named '~' (a trap: rm -rf ~ removes the "
                          f"home folder); only a leading ~ is read as the home folder: give {where} ~/runs/x, or "
                          f"a name without ~")
    if folder.parts[:1] and folder.parts[0].startswith("~") and not Path(folder.parts[0]).is_dir():  # '~bob/x', no bob
        raise ConfigError(f"{where} {name!r}: no user {folder.parts[0][1:]!r} has a home folder for "
                          f"{folder.parts[0]} to name (a folder literally named '{folder.parts[0]}' would be made "
                          f"here); your home folder is ~/: give {where} ~/runs/x")
    return folder


def checkpoint_to_run(cfg: EasyDict, load_ckpt: str | Path | None, exp_name: str | None, seed: int,
                      n_seeds: int = 1) -> Path:
    """The checkpoint that ``-m eval`` and ``-m collect_demo`` roll out: ``load_ckpt`` (``--load-ckpt``), else the
    config's ``policy.load_path`` (DI-engine's key), else the experiment's ``ckpt/ckpt_best.pth.tar``, which must
    exist."""
    if load_ckpt is not None:
        return Path(load_ckpt)
    if cfg.policy.get("load_path"):
        return Path(cfg.policy.load_path)
    best = experiment_dir(cfg, exp_name, seed, n_seeds) / CKPT_DIR / BEST_CKPT
    if not best.is_file():
        raise CheckpointError(f"no checkpoint given (--load-ckpt or policy.load_path) and none found at {best}"
                              f"{_gsl_hint(best.parent.parent)}")
    return best


def _gsl_hint(folder: Path) -> str:
    """Where ``folder`` holds a ``-m gsl`` run (whose top ``total_config.py`` has no checkpoint of its own: its phases
    have theirs), the phase config to evaluate: the final generalist's (phase I's while phase II has not started)."""
    from ding_lite.gsl.plateau import PHASE1, PHASE2  # here: the gsl package is not needed to run anything else

    if not (folder / PHASE1).is_dir():
        return ""
    phase = PHASE2 if (folder / PHASE2).is_dir() else PHASE1
    return (f": {folder} holds a -m gsl run, whose phases have the checkpoints: -m eval -c "
            f"{folder / phase / CONFIG_FILE}")


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON atomically (temp file + rename)."""
    atomic_write(path, lambda f: f.write((json.dumps(data, indent=2) + "\n").encode()))


def prepare_exp_dir(exp_dir: Path, cfg: EasyDict, *, resumed: bool = False) -> None:
    """Create the experiment folder and save the compiled config in it (atomically: a full disk leaves none).
    ``resumed``: the earlier segment's ``result.json`` is removed, as it no longer describes the run (this segment
    writes its own at its end or failure; one stopped early, by Ctrl-C or SIGTERM, leaves none, as any run stopped
    early does)."""
    save_config(cfg, exp_dir / CONFIG_FILE)
    if resumed:
        (exp_dir / RESULT_FILE).unlink(missing_ok=True)
