"""Argument parsing shared by every ``ding_lite -m ...`` command line: a parser that answers mistakes in one line,
and the value types of seeds, budgets and resource shares."""
from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any, NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Command-line mistakes are answered in one line too (the full usage is one ``--help`` away). An option that
    takes one value is refused when given twice (argparse keeps the last: ``-c a.py -c b.py`` ran b.py, silently),
    and a mistyped choice is answered with the nearest one."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if args and args[0].startswith("-") and kwargs.get("action", "store") == "store":
            kwargs["action"] = _Once
        return super().add_argument(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: Any = None) -> tuple[Any, list[str]]:
        self.given_once: dict[str, str] = {}  # dest -> the first value's text, for _Once
        return super().parse_known_args(args, namespace)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)  # type: ignore[misc]
        except argparse.ArgumentError as exc:
            near = difflib.get_close_matches(str(value), [str(c) for c in action.choices or ()], n=1)
            if not near:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}; did you mean '{near[0]}'?") from None

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Once(argparse.Action):
    """``store``, refused the second time in one command line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given: dict[str, str] = getattr(parser, "given_once", {})
        if self.dest in given:
            raise argparse.ArgumentError(self, f"given twice ({given[self.dest]}, then {option_string} {values}): "
                                               f"give it once")
        given[self.dest] = f"{option_string} {values}"
        setattr(namespace, self.dest, values)


def seed_arg(text: str) -> int:
    """An ``-s`` value: an int numpy accepts as a seed."""
    value = int_arg(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a seed must be an int from 0 to 4294967295, got {value}")
    return value


def distinct_seeds(seeds: Sequence[int] | None) -> None:
    """Refuse a seed given twice (``-s 0 -s 0``): it would train the same run twice, the second into a ``_1``
    folder, where ``-s 0 -s 1`` was most likely meant."""
    from ding_lite.errors import ConfigError

    for i, seed in enumerate(seeds or ()):
        if seed in (seeds or ())[:i]:
            raise ConfigError(f"-s {seed} is given twice: each seed runs once, give each one -s")


def positive_int(text: str) -> int:
    """A count (``--n-episode``, ``--num-samples``): an int of at least 1."""
    value = int_arg(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def budget_int(text: str) -> int:
    """A budget (``--max-env-step``, ``--max-train-iter``): an int of at least 1, also written as a whole number in
    float notation (``1e6``, as DI-engine's command line takes it); no flag means no limit."""
    try:
        value = int_arg(text)
    except argparse.ArgumentTypeError:
        number = _float_or_none(text)
        if number is None or not number.is_integer():
            raise
        value = int(number)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (leave it out for no limit), got {value}")
    return value


def positive_float(text: str) -> float:
    """A share of a resource (``-m sweep --cpus-per-trial``): a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: '{text}'") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: '{text}'") from None
