"""Where a run's scalars go: ``log.backends`` names the trackers, each given the same scalars (tag, value, step, as
tensorboard has them) and the compiled config.

- ``tensorboard`` (the default): tensorboardX event files under ``<exp>/log/``, which ``-m plot`` reads;
- ``wandb``: a Weights & Biases run (offline by default: files under ``<exp>/wandb/``, ``wandb sync`` uploads them),
  extra ``[wandb]``;
- ``mlflow``: an MLflow run in ``log.mlflow.tracking_uri`` (a file store, a database or a server), extra ``[mlflow]``.

A tracker of your own: a class with ``scalar(tag, value, step)`` and ``close()``, built from a :class:`RunInfo`,
registered with ``@TRACKER_REGISTRY.register('name')`` in a module that the config's ``import_names`` (or a plugin)
imports.
"""
from __future__ import annotations

import contextvars
import importlib
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ding_lite.errors import ConfigError, UnknownTypeError, first_line
from ding_lite.registry import CONFIG_SECTION_REGISTRY, Registry
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.run_folder import CONFIG_FILE, LOG_DIR

# The ``log`` section of every config.
LOG_CONFIG: dict[str, Any] = dict(
    backends=["tensorboard"],  # trackers that get every scalar: 'tensorboard', 'wandb', 'mlflow' (several allowed)
    print_every_seconds=30.0,  # a [log] line with the throughput this often when no progress bar shows (0: never)
    wandb=dict(
        project="ding_lite",  # W&B project
        entity=None,  # W&B team or user (None: your default entity)
        mode="offline",  # 'offline' (files under <exp>/wandb; `wandb sync` uploads them), 'online' or 'disabled'
        group=None,  # W&B run group (None: the experiment name without its _seed<K>)
        tags=[],  # W&B run tags
    ),
    mlflow=dict(
        tracking_uri=None,  # 'file:/path/mlruns', 'sqlite:///mlflow.db', 'http://host:5000' (None: MLflow's default)
        experiment_name=None,  # MLflow experiment (None: the experiment name without its _seed<K>)
    ),
)
CONFIG_SECTION_REGISTRY.register("log")(LOG_CONFIG)

TRACKER_REGISTRY = Registry("tracker")  # name -> tracker class (built-ins below; plugins register more)
_SEED_SUFFIX = re.compile(r"_seed\d+(_\d+)?$")


class RunInfo(NamedTuple):
    """What a tracker is built from: the run's folder, its compiled config (and that config as ``total_config.py``
    source), and the ``log`` section."""

    exp_dir: Path
    config: dict[str, Any]  # the compiled config as plain dicts and lists
    config_source: str  # the compiled config as the total_config.py source
    log_cfg: Mapping[str, Any]

    @property
    def run_name(self) -> str:
        return self.exp_dir.name

    @property
    def group_name(self) -> str:
        """The experiment a seed's run belongs to (``cartpole_ppo_seed1`` -> ``cartpole_ppo``)."""
        return _SEED_SUFFIX.sub("", self.exp_dir.name)


class Tracker(Protocol):
    """A backend of ``log.backends``: built from a :class:`RunInfo`, it gets every scalar."""

    def scalar(self, tag: str, value: float, step: int) -> None: ...

    def close(self) -> None: ...


def _require(module: str, extra: str, backend: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name != module:  # installed, but one of its own imports is missing
            raise _broken(backend, module, exc) from None
        raise ConfigError(f"log.backends lists '{backend}', which needs the {module} package (not installed): "
                          f"pip install 'ding_lite[{extra}]'") from None
    except Exception as exc:  # any error while importing a third-party package is the user's to see, in one line
        raise _broken(backend, module, exc) from None


def _broken(backend: str, module: str, exc: BaseException) -> ConfigError:
    """The package is installed but does not import (a missing shared library, a clash of versions)."""
    return ConfigError(f"log.backends lists '{backend}', but importing the {module} package failed: "
                       f"{type(exc).__name__}: {first_line(exc)}; check that package (python -c 'import {module}'), or "
                       f"leave '{backend}' out of log.backends")


def check_backends(log_cfg: Mapping[str, Any]) -> list[Any]:
    """The tracker classes ``log.backends`` names, each checked to be importable (a :class:`ConfigError` naming the
    extra to install otherwise); called before anything of the run is written."""
    backends = log_cfg.get("backends")
    if not isinstance(backends, Sequence) or isinstance(backends, str) \
            or not all(isinstance(b, str) for b in backends):
        raise ConfigError(f"log.backends must be a list of tracker names (e.g. ['tensorboard', 'wandb']), got "
                          f"{backends!r}")
    if len(set(backends)) != len(backends):
        raise ConfigError(f"log.backends lists a tracker twice: {list(backends)!r}")
    classes = []
    for name in backends:
        try:
            cls = TRACKER_REGISTRY.get(name)
        except UnknownTypeError as exc:  # the log section has no import_names: say which one imports a tracker
            known = str(exc).split(". A custom ")[0]
            raise ConfigError(f"log.backends: {known}. A tracker of your own must be registered with "
                              f"@TRACKER_REGISTRY.register('{name}') in a module that a section's import_names "
                              f"imports (e.g. env.import_names), or by a plugin") from None
        check = getattr(cls, "check", None)
        if check is not None:
            check(log_cfg)
        classes.append(cls)
    return classes


# Trackers that every run started in this context gets besides log.backends (a -m sweep trial's reporter to Ray
# Tune): they are no part of the config, so that the run's total_config.py stays a config any run can start from.
EXTRA_TRACKERS: contextvars.ContextVar[tuple[Callable[[RunInfo], Tracker], ...]] = contextvars.ContextVar(
    "ding_lite_extra_trackers", default=())


def build_trackers(cfg: Mapping[str, Any], exp_dir: Path) -> list[Tracker]:
    """The trackers of ``cfg.log.backends`` for a run in ``exp_dir`` (closed again if one fails to start)."""
    from ding_lite.config.writer import config_to_source

    log_cfg = cfg.get("log") or LOG_CONFIG
    info = RunInfo(Path(exp_dir), to_plain(cfg), config_to_source(cfg), log_cfg)
    trackers: list[Tracker] = []
    try:
        for cls in check_backends(log_cfg):
            trackers.append(cls(info))
        for make in EXTRA_TRACKERS.get():
            trackers.append(make(info))
    except BaseException:
        for tracker in trackers:
            tracker.close()
        raise
    return trackers


@TRACKER_REGISTRY.register("tensorboard")
class TensorboardTracker:
    """tensorboard event files in ``<exp>/log/`` (flushed every 10 s), written in the run's own thread, so that a
    refused write (a full disk) is an :class:`~ding_lite.errors.OutputError` naming the file; the compiled config as
    the text summary ``config/total_config``."""

    def __init__(self, info: RunInfo) -> None:
        from ding_lite.utils.events import ScalarWriter

        self._writer = ScalarWriter(info.exp_dir / LOG_DIR, flush_secs=10)
        self._writer.add_text(CONFIG_TEXT_TAG, info.config_source, 0)

    def scalar(self, tag: str, value: float, step: int) -> None:
        self._writer.add_scalar(tag, value, step)

    def flush(self) -> None:
        """Write out the buffered events now."""
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


CONFIG_TEXT_TAG = "config/total_config"  # the tensorboard text summary that holds the compiled config
WANDB_STEP = "global_step"  # the x of every W&B row: each scalar's own step, as tensorboard keeps it


@TRACKER_REGISTRY.register("wandb")
class WandbTracker:
    """A Weights & Biases run: each scalar is a row ``{tag: value, 'global_step': step}`` with ``global_step`` as
    the x axis of every chart (env steps for ``eval/*``, train iterations for ``learn/*``, as in tensorboard); the
    compiled config as the run's config and as the file ``total_config.py``."""

    @classmethod
    def check(cls, log_cfg: Mapping[str, Any]) -> None:
        _require("wandb", "wandb", "wandb")
        mode = (log_cfg.get("wandb") or {}).get("mode", "offline")
        if mode not in ("offline", "online", "disabled"):
            raise ConfigError(f"log.wandb.mode must be 'offline', 'online' or 'disabled', got {mode!r}")

    def __init__(self, info: RunInfo) -> None:
        import wandb

        opts = {**LOG_CONFIG["wandb"], **(info.log_cfg.get("wandb") or {})}
        os.environ.setdefault("WANDB_SILENT", "true")  # no banner lines between the run's own console lines
        self._run = wandb.init(project=opts["project"], entity=opts["entity"], mode=opts["mode"],
                               group=opts["group"] or info.group_name, tags=list(opts["tags"]) or None,
                               name=info.run_name, dir=str(info.exp_dir), config=info.config, reinit="create_new",
                               settings=wandb.Settings(console="off", x_disable_stats=True, silent=True))
        self._run.define_metric(WANDB_STEP)
        self._run.define_metric("*", step_metric=WANDB_STEP)
        source = Path(self._run.dir) / CONFIG_FILE
        source.write_text(info.config_source)  # files in the run's folder are uploaded with it (synced offline)

    def scalar(self, tag: str, value: float, step: int) -> None:
        self._run.log({tag: value, WANDB_STEP: step})

    def close(self) -> None:
        self._run.finish()


@TRACKER_REGISTRY.register("mlflow")
class MlflowTracker:
    """An MLflow run in experiment ``log.mlflow.experiment_name``: every scalar a metric with its step (batched, sent
    every 5 s and at the end), the compiled config flattened into params and as the artifact ``total_config.py``."""

    flush_seconds = 5.0

    @classmethod
    def check(cls, log_cfg: Mapping[str, Any]) -> None:
        _require("mlflow", "mlflow", "mlflow")
        uri = (log_cfg.get("mlflow") or {}).get("tracking_uri")
        if uri is None:
            return
        if not isinstance(uri, str):
            raise ConfigError(f"log.mlflow.tracking_uri must be a URI string (e.g. 'file:/path/mlruns', "
                              f"'sqlite:///mlflow.db', 'http://host:5000') or None, got {uri!r}")
        _check_mlflow_scheme(uri)

    def __init__(self, info: RunInfo) -> None:
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        opts = {**LOG_CONFIG["mlflow"], **(info.log_cfg.get("mlflow") or {})}
        uri = opts["tracking_uri"]
        if uri is not None and str(uri).startswith("file:"):
            # MLflow 3 refuses the file store unless asked for explicitly; naming a file: URI is asking for it
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self._client = MlflowClient(tracking_uri=uri)
        name = opts["experiment_name"] or info.group_name
        found = self._client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found is not None else self._client.create_experiment(name)
        self._run_id = self._client.create_run(experiment_id, run_name=info.run_name).info.run_id
        params = [Param(k, str(v)[:6000]) for k, v in flatten(info.config).items()]
        for start in range(0, len(params), 100):  # MLflow takes at most 100 params per batch
            self._client.log_batch(self._run_id, params=params[start:start + 100])
        self._client.log_text(self._run_id, info.config_source, CONFIG_FILE)
        self._pending: list[Any] = []
        self._last_flush = time.monotonic()

    @property
    def run_id(self) -> str:
        return self._run_id

    def scalar(self, tag: str, value: float, step: int) -> None:
        from mlflow.entities import Metric

        self._pending.append(Metric(tag, value, int(time.time() * 1000), step))
        if time.monotonic() - self._last_flush >= self.flush_seconds or len(self._pending) >= 1000:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._client.log_batch(self._run_id, metrics=self._pending)
            self._pending = []
        self._last_flush = time.monotonic()

    def close(self) -> None:
        self._flush()
        self._client.set_terminated(self._run_id)


def _check_mlflow_scheme(uri: str) -> None:
    """A :class:`ConfigError` if the installed MLflow has no tracking store for ``uri``'s scheme (MLflow says so only
    when the run's folder is written, in a traceback). The look-up builds no store, so it writes nothing. It is
    MLflow's internal registry, which plugins extend: another MLflow without it is not checked here."""
    from mlflow.exceptions import MlflowException

    try:
        from mlflow.tracking._tracking_service.utils import _tracking_store_registry as stores
        find = stores.get_store_builder
    except (ImportError, AttributeError):
        return
    try:
        find(uri)
    except MlflowException:
        known = sorted(s for s in getattr(stores, "_registry", {}) if s)
        raise ConfigError(f"log.mlflow.tracking_uri={uri!r} is no tracking store MLflow knows; its schemes: "
                          f"{', '.join(known)} (e.g. 'file:/path/mlruns', 'sqlite:///mlflow.db', "
                          f"'http://host:5000')") from None


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested config (``{'a': {'b': 1}}`` -> ``{'a.b': 1}``); lists stay values."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out
