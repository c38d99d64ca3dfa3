"""Search spaces of ``ding_lite -m sweep``: ``--space KEY=SPEC`` options read into :class:`Dimension`\\s, checked
against the config (a key the config lacks gets a did-you-mean, a value of the wrong type names the key) before Ray
starts, and turned into Ray Tune's search space.

``SPEC`` is a list of values, ``[v1, v2, ...]`` (Python literals, as ``--set`` takes them: a grid axis in a grid
search, a categorical choice otherwise), or a distribution for random and Optuna search: ``uniform(LOW, HIGH)``,
``loguniform(LOW, HIGH)``, ``randint(LOW, HIGH)`` (integers LOW..HIGH, both included), ``choice(v1, v2, ...)``.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ding_lite.errors import ConfigError
from ding_lite.registry import closest_match

DISTRIBUTIONS = ("uniform", "loguniform", "randint", "choice")
SEARCHES = ("grid", "random", "optuna")


class SweepError(ConfigError):
    """``-m sweep`` input is wrong: a key the config lacks, an empty search space, a bad distribution."""


@dataclass(frozen=True)
class Dimension:
    """One swept key: ``kind`` is ``values`` (a list), or a distribution name with its ``args``."""

    key: str
    kind: str
    args: tuple[Any, ...]

    @property
    def spec(self) -> str:
        """The ``--space`` text of this dimension."""
        if self.kind == "values":
            return f"{self.key}={list(self.args)!r}"
        return f"{self.key}={self.kind}({', '.join(repr(a) for a in self.args)})"

    def probe_values(self) -> list[Any]:
        """Values to compile the config with before the sweep starts: every listed value, a distribution's ends."""
        return list(self.args) if self.kind in ("values", "choice") else list(self.args[:2])


def parse_dimension(text: str) -> Dimension:
    """``KEY=SPEC`` -> :class:`Dimension` (see the module docstring); a malformed one is a :class:`SweepError`."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or not all(key.split(".")):
        raise SweepError(f"--space expects KEY=[V1,V2,...] or KEY=uniform(LOW,HIGH) with a dotted config key, got "
                         f"{text!r}")
    try:
        node = ast.parse(raw.strip(), mode="eval").body
    except SyntaxError:
        raise SweepError(f"--space {text!r}: {raw.strip()!r} is neither a list of values nor a distribution "
                         f"({', '.join(d + '(...)' for d in DISTRIBUTIONS)})") from None
    if isinstance(node, (ast.List, ast.Tuple)):
        values = tuple(_literal(v, text) for v in node.elts)
        if not values:
            raise SweepError(f"empty search space: --space {text!r} lists no value")
        return Dimension(key, "values", values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DISTRIBUTIONS:
        args = tuple(_literal(a, text) for a in node.args)
        return _checked(Dimension(key, node.func.id, args), text)
    raise SweepError(f"--space {text!r}: {raw.strip()!r} is neither a list of values nor a distribution "
                     f"({', '.join(d + '(...)' for d in DISTRIBUTIONS)})")


def _literal(node: ast.AST, text: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        if isinstance(node, ast.Name):
            return node.id  # a bare word such as ppo, as --set takes it
        raise SweepError(f"--space {text!r}: {ast.unparse(node)!r} is not a literal value") from None


def _checked(dim: Dimension, text: str) -> Dimension:
    if dim.kind == "choice":
        if not dim.args:
            raise SweepError(f"empty search space: --space {text!r} lists no value")
        return dim
    numeric = len(dim.args) == 2 and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in dim.args)
    if not numeric or not dim.args[0] < dim.args[1]:
        raise SweepError(f"--space {text!r}: {dim.kind} takes LOW, HIGH with LOW < HIGH, got {list(dim.args)}")
    if dim.kind == "loguniform" and dim.args[0] <= 0:
        raise SweepError(f"--space {text!r}: loguniform needs LOW > 0, got {dim.args[0]!r}")
    if dim.kind == "randint" and not all(isinstance(a, int) for a in dim.args):
        raise SweepError(f"--space {text!r}: randint takes two ints, got {list(dim.args)}")
    return dim


def parse_space(texts: Sequence[str], search: str) -> list[Dimension]:
    """Every ``--space`` of a sweep, checked for the ``search`` kind (a grid takes value lists only)."""
    if search not in SEARCHES:
        raise SweepError(f"--search {search}: choose one of {', '.join(SEARCHES)}")
    if not texts:
        raise SweepError("empty search space: give at least one --space KEY=[V1,V2,...] (or, for random and optuna "
                         "search, KEY=uniform(LOW,HIGH), loguniform(LOW,HIGH), randint(LOW,HIGH), choice(...))")
    dims = [parse_dimension(t) for t in texts]
    seen = [d.key for d in dims]
    twice = sorted({k for k in seen if seen.count(k) > 1})
    if twice:
        raise SweepError(f"--space names {', '.join(twice)} twice: give each key once")
    for d in dims:
        if search == "grid" and d.kind not in ("values", "choice"):
            raise SweepError(f"--space {d.spec}: a grid search takes value lists (KEY=[V1,V2,...]); use --search "
                             f"random or optuna for {d.kind}(...)")
    return dims


def config_leaves(cfg: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys of a compiled config's settings (sections with known keys are walked into)."""
    out = []
    for key, value in cfg.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out += config_leaves(value, path + ".")
        else:
            out.append(path)
    return out


def check_keys(dims: Iterable[Dimension], cfg: Mapping[str, Any]) -> None:
    """A swept key must be a setting of the compiled config: otherwise a :class:`SweepError` with the closest key."""
    leaves = config_leaves(cfg)
    for d in dims:
        if d.key in leaves:
            continue
        hint = closest_match(d.key, leaves) or closest_match(d.key.rpartition(".")[2],
                                                             [k.rpartition(".")[2] for k in leaves])
        if hint is not None and hint not in leaves:  # a last-part match: name the full key
            hint = next(k for k in leaves if k.rpartition(".")[2] == hint)
        raise SweepError(f"--space {d.key}: the config has no setting '{d.key}'"
                         + (f" (did you mean '{hint}'?)" if hint else "")
                         + "; sweep keys are dotted paths of the compiled config (see its total_config.py)")


def override(key: str, value: Any) -> str:
    """The ``--set`` text that sets ``key`` to ``value``."""
    return f"{key}={value!r}"


def tune_space(dims: Sequence[Dimension], search: str) -> dict[str, Any]:
    """Ray Tune's ``param_space`` of the dimensions."""
    from ray import tune

    space: dict[str, Any] = {}
    for d in dims:
        if d.kind in ("values", "choice"):
            space[d.key] = tune.grid_search(list(d.args)) if search == "grid" else tune.choice(list(d.args))
        elif d.kind == "uniform":
            space[d.key] = tune.uniform(*d.args)
        elif d.kind == "loguniform":
            space[d.key] = tune.loguniform(*d.args)
        else:
            space[d.key] = tune.randint(d.args[0], d.args[1] + 1)  # Tune's upper bound is exclusive
    return space


def trial_label(params: Mapping[str, Any]) -> str:
    """A short name of a trial's values: the last part of each key (the full key where two share it)."""
    tails = [k.rpartition(".")[2] for k in params]
    return ", ".join(f"{tail if tails.count(tail) == 1 else key}={_short(v)}"
                     for key, tail, v in zip(params, tails, params.values(), strict=True))


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
