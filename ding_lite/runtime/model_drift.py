"""A checkpoint's model settings against those a run builds now.

A checkpoint holds weights, not the settings that give them their meaning: a setting that changes no tensor's shape
(``policy.model.image_scale``, an activation) loads without a word under another value, and the policy then acts
and learns differently. That happens when a default changed since the checkpoint's run (``image_scale``: 1/255 for
every image before 2026-12-07, now 1 for a float image) and the run is resumed or loaded with its original config
file. The checkpoint's own run folder keeps the settings it was trained with (``total_config.py``); they are
compared here, and a difference is one warning naming each setting and the ``--set`` that keeps the trained value.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.config.reader import read_saved_config
from ding_lite.errors import ConfigError
from ding_lite.utils.run_folder import CKPT_DIR, CONFIG_FILE

logger = logging.getLogger("ding_lite")


def trained_config(ckpt_path: str | Path) -> Path | None:
    """The ``total_config.py`` of the run that wrote ``<folder>/ckpt/<name>.pth.tar`` (None for a checkpoint kept
    elsewhere, or a folder without one)."""
    ckpt_dir = Path(ckpt_path).parent
    saved = ckpt_dir.parent / CONFIG_FILE
    return saved if ckpt_dir.name == CKPT_DIR and saved.is_file() else None


def model_drift(now: Mapping[str, Any], trained: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(key, value now, trained value)`` of each ``policy.model`` key both configs hold with different values (a
    key only one of them has, added or removed since, is not compared; nor one left None now, which the model does
    not read: ``image_scale`` on a vector observation). Nothing for a checkpoint of another ``model.type``: another
    network (another algorithm's run), whose settings are no advice for this one; the load says whether it fits."""
    now_model = (now.get("policy") or {}).get("model") or {}
    trained_model = (trained.get("policy") or {}).get("model") or {}
    if "type" in now_model and "type" in trained_model and now_model["type"] != trained_model["type"]:
        return []
    return [(key, now_model[key], trained_model[key]) for key in sorted(now_model)
            if key in trained_model and now_model[key] is not None and not _same(now_model[key], trained_model[key])]


def warn_of_model_drift(cfg: Mapping[str, Any], ckpt_path: str | Path, source: str) -> None:
    """One warning where the model settings of ``cfg`` (resolved: shapes and scales filled from the env) differ from
    those the checkpoint was trained with; ``source`` names what gave the checkpoint (``--resume``, ``--load-ckpt``)."""
    saved = trained_config(ckpt_path)
    if saved is None:
        return
    try:
        trained = read_saved_config(saved)
    except ConfigError:
        return  # not readable as data: nothing to compare with (the checkpoint itself was readable)
    drift = model_drift(cfg, trained)
    if not drift:
        return
    differ = "; ".join(f"policy.model.{key} is {now!r} here but {old!r} in {saved}" for key, now, old in drift)
    keep = " ".join(f"policy.model.{key}={old!r}".replace(" ", "") for key, _, old in drift)
    logger.warning("warning: %s: %s: %s (the config it was trained with; a default may have changed since): add "
                   "--set %s to act and learn as it was trained", source, Path(ckpt_path).name, differ, keep)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
                and not isinstance(b, bool):
            return math.isclose(a, b, rel_tol=1e-9) or (math.isnan(a) and math.isnan(b))
        return False
    return bool(a == b)
