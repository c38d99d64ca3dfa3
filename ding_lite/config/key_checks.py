"""Every key a user's config gives, checked against the merged component defaults: unknown keys (a warning, or an
error under ``strict``, with the closest known key), each value's type against its default's (ints given as integral
floats converted), None for an empty section read as the section, and the keys that name a file."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ding_lite.config.ranges import check_free_type, nullable
from ding_lite.errors import ConfigError
from ding_lite.registry import closest_match

logger = logging.getLogger("ding_lite")


def check_config(user: dict[str, Any], defaults: Mapping[str, Any], *, strict: bool = False,
                 notes: list[str] | None = None) -> list[str]:
    """Check every user key against ``defaults``: unknown keys (warning, or error under ``strict``), wrong types
    (always an error). Integral floats given for int settings (e.g. ``1e4``) are accepted and converted to int in
    ``user``, so that code reading the compiled config gets the int it expects (``range(8.0)`` would fail).
    None given for a section without defaults of its own (``env.kwargs``) is the empty section, as
    :func:`section_at` reads it. Unknown keys are removed from ``user`` after the warning: the compiled config (and
    ``total_config.py``) holds only settings that some component reads. Returns the dotted paths of the removed
    keys. With ``notes``, the unknown keys' messages are appended to it instead of logged (the caller warns once the
    whole config is known good, or folds them into its refusal: :func:`warn_unknown_keys`)."""
    all_paths = list(_dotted_paths(defaults))
    unknown: list[tuple[dict[str, Any], str]] = []
    ignored: list[str] = []
    for node, key, path, default, known in _walk(user, defaults, ""):
        if known is not None:  # unknown key at `path`; `known` are the valid sibling keys
            message = _report_unknown(path, known, all_paths, strict)
            if notes is None:
                warn_unknown_keys([message])
            else:
                notes.append(message)
            unknown.append((node, key))
            ignored.append(path)
            continue
        value = node[key]
        _check_type(path, value, default)
        if isinstance(value, float) and _expected_type(default) == "int":
            node[key] = int(value)
        elif value is None and _expected_type(default) == "dict":
            node[key] = {}  # None for a section whose defaults are empty (env.kwargs, PPO's policy.other): empty
    for node, key in unknown:
        del node[key]
    return ignored


def _walk(user: dict[str, Any], defaults: Mapping[str, Any], prefix: str):
    """Yield ``(parent, key, dotted path, default, known sibling keys or None)`` for every user leaf."""
    for key, value in user.items():
        path = f"{prefix}{key}"
        if key not in defaults:
            yield user, key, path, None, list(defaults)
            continue
        default = defaults[key]
        if isinstance(default, Mapping) and default:  # a section with known keys: recurse
            if not isinstance(value, dict):
                raise ConfigError(f"config key '{path}' must be a dict (a section), got {type(value).__name__} "
                                  f"{value!r}")
            yield from _walk(value, default, path + ".")
        else:
            yield user, key, path, default, None


# Keys whose default is None that name one file (a checkpoint to load, a demo file to write): a string or None.
FILE_KEYS: tuple[str, ...] = ("policy.load_path", "demo.demo_path")


def _check_type(path: str, value: Any, default: Any) -> None:
    if default is None:
        check_free_type(path, value)  # any type, but a key named like a number takes one
        if path in FILE_KEYS and value is not None and not isinstance(value, str):
            raise ConfigError(f"config key '{path}' must be a file path (a string) or None, got "
                              f"{type(value).__name__} {value!r}")
        return
    expected = _expected_type(default)
    if value is None:
        if nullable(path) or expected == "dict":
            return  # None: the setting switched off or resolved elsewhere (ranges.NULLABLE), or an empty section
        raise ConfigError(f"config key '{path}' must be {_ARTICLE.get(expected, 'a value')}, got None (default: "
                          f"{default!r}): None switches off only the keys whose reference says so; give a value, or "
                          f"leave the key out for its default")
    ok = {
        "dict": isinstance(value, Mapping),
        "bool": isinstance(value, bool),
        "int": (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer()),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "list": isinstance(value, (list, tuple)),
    }.get(expected, True)
    if not ok:
        # --set reads Python literals: YAML's and JSON's true/false/yes (or 1/0) reach here as another type
        hint = "; write True or False" if expected == "bool" else ""
        raise ConfigError(f"config key '{path}' must be {_ARTICLE[expected]}, got {type(value).__name__} {value!r} "
                          f"(default: {default!r}{hint})")


_ARTICLE = {"dict": "a dict", "bool": "a bool", "int": "an int", "float": "a number", "str": "a string",
            "list": "a list"}


def _expected_type(default: Any) -> str:
    for name, types in (("bool", bool), ("int", int), ("float", float), ("str", str), ("list", (list, tuple)),
                        ("dict", Mapping)):
        if isinstance(default, types):
            return name
    return "any"


def warn_unknown_keys(messages: list[str]) -> None:
    """One ``warning:`` line per unknown key message of :func:`check_config`."""
    for message in messages:
        logger.warning("warning: %s; it is ignored (use --strict to make this an error)", message)


def with_unknown_keys(exc: ConfigError, messages: list[str]) -> ConfigError:
    """``exc`` with the unknown keys that were ignored appended, so that a refusal stays one line and still shows a
    misspelt key that may be its cause."""
    if not messages:
        return exc
    return ConfigError(f"{exc} (also: {'; '.join(messages)}; ignored)")


def _report_unknown(path: str, siblings: list[str], all_paths: list[str], strict: bool) -> str:
    key = path.rsplit(".", 1)[-1]
    parent = path[: -len(key)]
    # the right key in the wrong section first: a sibling that merely looks alike (policy.collect.grad_clip_value
    # suggested policy.collect.reward_clip, not policy.learn.grad_clip_value) sends the user the wrong way
    elsewhere = [p for p in all_paths if p.rsplit(".", 1)[-1] == key]
    hint = closest_match(key, siblings)
    suggestion = elsewhere[0] if elsewhere else parent + hint if hint else None
    did_you_mean = f" (did you mean '{suggestion}'?)" if suggestion else ""
    message = f"unknown config key '{path}'{did_you_mean}"
    if strict:
        raise ConfigError(message)
    return message


def _dotted_paths(tree: Mapping[str, Any], prefix: str = ""):
    for key, value in tree.items():
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, Mapping):
            yield from _dotted_paths(value, path + ".")
