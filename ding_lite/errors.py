"""The project's own error classes.

Every error that a user can cause (a bad config, an unknown type, a missing module, a bad checkpoint) is raised as a
subclass of :class:`DingLiteError`; the CLI prints its message as one line on stderr and exits with code 2.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when the message is empty), for one-line errors."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class DingLiteError(Exception):
    """Base class of every error caused by user input (config, plugin, checkpoint, env)."""


class ConfigError(DingLiteError, ValueError):
    """A config file or value is wrong: missing, unreadable, unknown key (under strict), or wrong type."""


def optional_count(key: str, value: object, none_means: str = "") -> int | None:
    """``value`` of the setting ``key`` if it is None or an int of at least 1 (a cap, a budget), else a
    :class:`ConfigError` naming the key (``none_means``: what None stands for, shown in the message)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{key} must be a positive int or None{f' ({none_means})' if none_means else ''}, got "
                          f"{value!r}")
    return value


def int_at_least(key: str, value: object, low: int, note: str = "") -> int:
    """``value`` of the setting ``key`` if it is an int (not a bool) of at least ``low``, else a :class:`ConfigError`
    naming the key (``note``: what the number counts or what ``low`` means, shown in the message)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{key} must be an int >= {low}{f' ({note})' if note else ''}, got {value!r}")
    return value


class UnknownTypeError(DingLiteError, KeyError):
    """A registry has no entry under the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message; show it as written
        return str(self.args[0]) if self.args else ""


class DuplicateRegistrationError(DingLiteError, KeyError):
    """A different object was registered under a name that is already taken."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class PluginImportError(DingLiteError, ImportError):
    """A module named in ``import_names`` (or a plugin entry point) cannot be imported."""


class CheckpointError(DingLiteError, OSError):
    """A checkpoint is missing, unreadable, or does not match the policy."""


class EnvError(DingLiteError, RuntimeError):
    """An env cannot be built or keeps failing."""


@contextmanager
def naming_envs(role: str) -> Iterator[None]:
    """Say whose envs an :class:`EnvError` raised inside is about: ``role`` ('collector', 'evaluator') goes in
    front of a message that starts with ``env <index>``, since a collector's env 0 and an evaluator's env 0 are two
    envs (other seeds, maybe another env config). The named error is raised from the original (its traceback kept
    as the cause); an inner ``naming_envs`` wins (its message no longer starts with ``env``)."""
    try:
        yield
    except EnvError as exc:
        message = str(exc)
        if re.match(r"env \d", message):
            raise EnvError(f"{role} {message}") from exc
        raise


class DivergedError(DingLiteError, RuntimeError):
    """Training diverged: a loss, or an action of the policy, is NaN or inf although the env's data were finite
    (a learning rate too high, or a checkpoint whose weights already were)."""


DIVERGED_ADVICE = ("lower the learning rate (policy.learn.learning_rate*), clip gradients "
                   "(policy.learn.grad_clip_value), or start again from an earlier checkpoint")


class WorkerError(DingLiteError, RuntimeError):
    """A remote worker (Ray actor) cannot start, or keeps dying beyond the configured number of replacements."""


class OutputError(DingLiteError, OSError):
    """A file or folder cannot be written: the disk is full, the folder read-only or not the user's
    (``errno`` is the system's; the message names the path)."""

    def __str__(self) -> str:  # OSError would prefix "[Errno N]"
        return str(self.strerror)


def output_error(exc: OSError, path: object) -> OutputError:
    """``exc`` (a failed write of ``path``) as a one-line :class:`OutputError` naming the file and the reason."""
    if isinstance(exc, OutputError):
        return exc
    return OutputError(exc.errno, f"cannot write {path}: {exc.strerror or first_line(exc)}")


class Interrupted(KeyboardInterrupt):
    """A training run stopped by Ctrl-C at a safe point, after writing a checkpoint to resume from (its message says
    which); the CLI exits with code 130 (128 + SIGINT), as for any Ctrl-C."""


class Terminated(KeyboardInterrupt):
    """A SIGTERM (a scheduler's stop, ``kill``) that ends a run as Ctrl-C does: a training run at a safe point, after
    writing a checkpoint to resume from (the message says which); a parallel run's actors closed and its embedded
    Ray instance stopped; the CLI exits with code 143 (128 + SIGTERM)."""


class PlotInputError(DingLiteError, ValueError):
    """``-m plot`` input is wrong: a folder that is no experiment, a metric no run logged, an empty group."""
