"""Argument parsing shared by every ``ding_lite -m ...`` command line: a parser that answers mistakes in one line,
and the value types of seeds, budgets and resource shares."""
from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Command-line mistakes are answered in one line too (the full usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def seed_arg(text: str) -> int:
    """An ``-s`` value: an int numpy accepts as a seed."""
    value = int_arg(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a seed must be an int from 0 to 4294967295, got {value}")
    return value


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
