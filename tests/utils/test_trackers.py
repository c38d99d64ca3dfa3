"""ding_lite/utils/trackers.py: one real CartPole run logging to tensorboard, Weights & Biases (offline mode) and MLflow
(a file store) at once; each tracker's own files, read back with its own reader (wandb's run file, MLflow's client),
hold the same scalars and the same compiled config as the tensorboard events. Bad backends: one line, exit 2."""
from __future__ import annotations

import json
import struct
import sys
import time
import zlib
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main
from ding_lite.config import read_config
from ding_lite.entry.serial import serial_pipeline
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.events import event_files, iter_records, read_scalars
from ding_lite.utils.trackers import CONFIG_TEXT_TAG, WANDB_STEP, flatten

pytestmark = pytest.mark.unittest
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory) -> Path:
    """One PPO run of two collects logging to the three trackers (in this process, as the CLI's run would)."""
    pytest.importorskip("wandb")
    pytest.importorskip("mlflow")
    root = tmp_path_factory.mktemp("tracked")
    serial_pipeline(PPO, 0, max_env_step=512, exp_dir=root / "run_seed0", progress=False,
                    overrides=("env.stop_value=None", "policy.eval.final_episodes=0",
                               "policy.eval.evaluator.eval_freq=40", "policy.learn.learner.hook.log_show_after_iter=20",
                               "log.backends=['tensorboard', 'wandb', 'mlflow']",
                               f"log.mlflow.tracking_uri='file:{root / 'mlruns'}'"))
    return root


def _tensorboard(exp: Path) -> tuple[dict[str, list[tuple[int, float]]], str]:
    from tensorboardX.proto.event_pb2 import Event

    series = read_scalars(exp / "log").series
    scalars = {tag: list(zip(s.steps, s.values, strict=True)) for tag, s in series.items()}
    texts = [v.tensor.string_val[0].decode() for path in event_files(exp / "log") for payload in iter_records(path)
             for v in Event.FromString(payload).summary.value if v.tag.startswith(CONFIG_TEXT_TAG)]
    assert len(texts) == 1
    return scalars, texts[0]


def _wandb_records(path: Path) -> list:
    """The records of a W&B run file: a 7-byte header (':W&B', magic 0xBEE1, version 0), then LevelDB-log framing in
    32 KiB blocks (each chunk: crc32 seeded with its type byte, u16 length, u8 type full/first/middle/last), each
    record a ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    if len(data) < 7:  # not written out yet
        return []
    assert struct.unpack("<4sHB", data[:7]) == (b":W&B", 0xBEE1, 0)
    block, pos, pending, records = 32768, 7, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a chunk header is padding
            pos += block - pos % block
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 or pos + 7 + length > len(data):  # the end, or a chunk still being written
            break
        chunk = data[pos + 7:pos + 7 + length]
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc
        pos += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def _finished_wandb_records(run_file: Path, timeout: float = 60.0) -> list:
    """The run file's records once it holds the run's exit record. ``run.finish()`` returns before wandb-core has
    written the file out: under load it can still be the bare 7-byte header then, and it is complete within a second
    or two (and always when the process ends: wandb tears its service down at exit)."""
    deadline = time.monotonic() + timeout
    while True:
        records = _wandb_records(run_file)
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


def _wandb(exp: Path) -> tuple[dict[str, list[tuple[int, float]]], dict, str]:
    (run_dir,) = (exp / "wandb").glob("offline-run-*")
    (run_file,) = run_dir.glob("run-*.wandb")
    scalars: dict[str, list[tuple[int, float]]] = {}
    config: dict = {}
    for record in _finished_wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            row = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            for tag, value in row.items():
                if not tag.startswith("_") and tag != WANDB_STEP:
                    scalars.setdefault(tag, []).append((row[WANDB_STEP], value))
        elif kind == "run":
            config = {u.key or "/".join(u.nested_key): json.loads(u.value_json) for u in record.run.config.update}
            config.pop("_wandb", None)
    return scalars, config, (run_dir / "files" / "total_config.py").read_text()


def _mlflow(root: Path, tags: list[str]) -> tuple[dict[str, list[tuple[int, float]]], dict, str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file:{root / 'mlruns'}")
    (run,) = client.search_runs([client.get_experiment_by_name("run").experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == "run_seed0"
    scalars = {tag: [(m.step, m.value) for m in sorted(client.get_metric_history(run.info.run_id, tag),
                                                        key=lambda m: (m.timestamp, m.step))] for tag in tags}
    assert set(run.data.metrics) == set(tags)  # no scalar that tensorboard lacks
    path = client.download_artifacts(run.info.run_id, "total_config.py", str(root / "mlflow_download"))
    return scalars, run.data.params, Path(path).read_text()


def _same(a: dict[str, list[tuple[int, float]]], b: dict[str, list[tuple[int, float]]]) -> None:
    assert sorted(a) == sorted(b)
    for tag in a:
        assert [s for s, _ in a[tag]] == [s for s, _ in b[tag]], tag
        assert [v for _, v in a[tag]] == pytest.approx([v for _, v in b[tag]], rel=1e-6), tag  # tb keeps float32


def test_wandb_offline_and_mlflow_file_store_hold_the_tensorboard_scalars_and_config(tracked_run: Path,
                                                                                     monkeypatch) -> None:
    exp = tracked_run / "run_seed0"
    tb, tb_config = _tensorboard(exp)
    assert {"eval/return_mean", "learn/total_loss", "speed/env_steps_per_second"} <= set(tb)
    assert len(tb["eval/return_mean"]) >= 2 and len(tb["speed/train_samples_per_second"]) >= 1
    saved = (exp / "total_config.py").read_text()
    assert tb_config == saved
    compiled = to_plain(read_config(exp / "total_config.py")[0])

    wb, wb_config, wb_source = _wandb(exp)
    _same(tb, wb)
    assert wb_source == saved and wb_config == json.loads(json.dumps(compiled))

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads file stores only when asked to
    ml, ml_params, ml_source = _mlflow(tracked_run, sorted(tb))
    _same(tb, ml)
    assert ml_source == saved
    assert ml_params == {k: str(v) for k, v in flatten(compiled).items()}


def _bad(argv: list[str], capsys, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.rglob("*"))
    code = main(["-m", "serial", "-c", PPO, "--exp-name", "bad", "--no-progress", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("ding_lite: error: "), err
    assert set(tmp_path.rglob("*")) == before
    return err[0]


@pytest.mark.parametrize("backend,extra", [("wandb", "wandb"), ("mlflow", "mlflow")])
def test_a_tracker_whose_package_is_missing_names_its_extra(backend, extra, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, backend, None)  # import fails as if it were not installed
    line = _bad(["--set", f"log.backends=['tensorboard', '{backend}']"], capsys, tmp_path, monkeypatch)
    assert f"log.backends lists '{backend}', which needs the {backend} package (not installed): " \
           f"pip install 'ding_lite[{extra}]'" in line


@pytest.mark.parametrize("error", [ImportError("libfoo.so: cannot open shared object file"),
                                   RuntimeError("protobuf versions clash")])
def test_a_tracker_whose_package_fails_to_import_quotes_the_error(error, capsys, tmp_path, monkeypatch) -> None:
    import importlib

    real_import = importlib.import_module

    def failing(name: str, *args, **kwargs):
        if name == "wandb":
            raise error
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", failing)
    line = _bad(["--set", "log.backends=['tensorboard', 'wandb']"], capsys, tmp_path, monkeypatch)
    assert f"log.backends lists 'wandb', but importing the wandb package failed: {type(error).__name__}: " \
           f"{error}" in line and "not installed" not in line


def test_unknown_tracker_did_you_mean(capsys, tmp_path, monkeypatch) -> None:
    line = _bad(["--set", "log.backends=['tensorbord']"], capsys, tmp_path, monkeypatch)
    assert "log.backends: unknown tracker type 'tensorbord' (did you mean 'tensorboard'?)" in line
    # the fix names a section that has import_names (before: "the section's import_names", and the log section has
    # none: log.import_names was an unknown key)
    assert "in a module that a section's import_names imports (e.g. env.import_names)" in line
    assert "the section's import_names" not in line
    line = _bad(["--set", "log.backends='wandb'"], capsys, tmp_path, monkeypatch)
    assert "config key 'log.backends' must be a list, got str 'wandb'" in line


@pytest.mark.parametrize("uri, shown", [
    ("bogus://host/x", "log.mlflow.tracking_uri='bogus://host/x' is no tracking store MLflow knows"),
    (123, "log.mlflow.tracking_uri must be a URI string (e.g. 'file:/path/mlruns'"),
])
def test_a_bad_mlflow_tracking_uri_is_one_line_before_anything_is_written(uri, shown, capsys, tmp_path,
                                                                          monkeypatch) -> None:
    """Before, MLflow's own exception came as a traceback (exit 1) once the run's folder was written."""
    pytest.importorskip("mlflow")
    line = _bad(["--set", "log.backends=['mlflow']", f"log.mlflow.tracking_uri={uri!r}"], capsys, tmp_path,
                monkeypatch)
    assert shown in line
