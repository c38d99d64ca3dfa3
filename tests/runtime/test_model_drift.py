"""A checkpoint loaded under model settings other than those it was trained with (its run folder's
``total_config.py``) is one warning naming each setting and the ``--set`` that keeps the trained value: a setting
that changes no tensor's shape (``image_scale``, whose default for a float image went from 1/255 to 1 on
2026-12-07; an activation) otherwise loads without a word and the policy acts and learns differently."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.runtime.model_drift import model_drift

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
QUICK = ("env.stop_value=100000",)


def _model(**model):
    return {"policy": {"model": model}}


def test_model_drift_names_the_settings_that_differ_only():
    now = _model(image_scale=1.0, obs_shape=[3, 8, 8], conv_layers=None, added_since=1)
    trained = _model(image_scale=1.0 / 255.0, obs_shape=(3, 8, 8), conv_layers=[[8, 2, 1]], removed_since=2)
    assert model_drift(now, trained) == [("image_scale", 1.0, 1.0 / 255.0)]
    assert model_drift(trained, trained) == []


def test_another_model_types_checkpoint_is_no_drift():
    """A checkpoint of another network (a PPO run's 'vac' loaded by a DQN config) is refused by the load, naming the
    policy that wrote it; the warning before it advised --set policy.model.type='vac' and its settings on a DQN."""
    now = _model(type="dqn", activation="relu", encoder_hidden_size_list=[128, 128, 64])
    trained = _model(type="vac", activation="tanh", encoder_hidden_size_list=[64, 64])
    assert model_drift(now, trained) == []
    assert model_drift(_model(type="vac", activation="relu"), trained) == [("activation", "relu", "tanh")]


def _drift_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "policy.model." in r.getMessage()]


def test_a_checkpoint_trained_under_other_model_settings_is_one_warning(tmp_path: Path, warnings_log) -> None:
    from ding_lite.entry.eval import eval_pipeline
    from ding_lite.entry.serial import serial_pipeline

    run = tmp_path / "run"
    serial_pipeline(DQN, seed=0, max_train_iter=5, exp_dir=run, progress=False, overrides=QUICK)
    ckpt = run / "ckpt" / "iteration_5.pth.tar"
    eval_pipeline(DQN, seed=0, load_ckpt=ckpt, n_episode=1)
    assert _drift_warnings(warnings_log) == []  # the settings it was trained with: nothing to say

    # the run as an earlier ding_lite wrote it, under a default that has changed since (the weights fit either way)
    saved = run / "total_config.py"
    text = saved.read_text()
    assert "'activation': 'relu'" in text
    saved.write_text(text.replace("'activation': 'relu'", "'activation': 'tanh'"))
    eval_pipeline(DQN, seed=0, load_ckpt=ckpt, n_episode=1)
    serial_pipeline(DQN, seed=0, max_train_iter=6, exp_dir=run, resume=True, progress=False, overrides=QUICK)
    lines = _drift_warnings(warnings_log)
    assert len(lines) == 2
    for line, source in zip(lines, ("-m eval", "--resume"), strict=True):
        assert line.startswith(f"warning: {source}: iteration_5.pth.tar: policy.model.activation is 'relu' here "
                               f"but 'tanh' in {saved}")
        assert line.endswith("add --set policy.model.activation='tanh' to act and learn as it was trained")
        assert "\n" not in line
