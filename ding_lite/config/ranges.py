"""What numeric config values may be, by the DI-engine vocabulary's key names.

Every component of one kind shares its key names (``learning_rate``, ``batch_size``, ``*_env_num``, ``*_weight`` ...),
so a value that no component can use is recognised by its name, wherever it sits and whichever component declares it:
a negative learning rate, a zero batch size, a discount factor above 1. :func:`check_ranges` checks every numeric leaf
of a compiled config against :data:`RULES` (the first matching rule decides) and refuses NaN anywhere; ``None`` always
passes (a setting switched off, or filled in later), and so does a bool (a switch such as ``priority_IS_weight``).
Components check what only they know when they are built.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ding_lite.errors import ConfigError
from ding_lite.utils.seed import EVAL_SEED_OFFSET


@dataclass(frozen=True)
class Bound:
    """The numbers a setting accepts: ``low``/``high`` (inclusive or not), whether infinity is one of them, and the
    words of the error message (``"at least 1"``, ``"in [0, 1]"``)."""

    low: float
    low_inclusive: bool
    high: float = math.inf
    high_inclusive: bool = True
    allow_inf: bool = False
    words: str = ""
    whole: bool = False  # a count or a size: a whole number (an integral float such as 1e4 is taken as the int)
    many: bool = False  # a list of such numbers is accepted too (a shape, hidden sizes), each checked

    def accepts(self, x: float) -> bool:
        if math.isinf(x) and not self.allow_inf:
            return False
        above = x >= self.low if self.low_inclusive else x > self.low
        below = x <= self.high if self.high_inclusive else x < self.high
        return above and below


COUNT = Bound(1, True, words="at least 1", whole=True)
SIZES = Bound(1, True, words="at least 1", whole=True, many=True)  # a size or a list of sizes (shapes, layers)
POSITIVE = Bound(0, False, words="> 0")
POSITIVE_OR_INF = Bound(0, False, allow_inf=True, words="> 0 (inf: never)")
NON_NEGATIVE = Bound(0, True, words="≥ 0")
NON_NEGATIVE_OR_INF = Bound(0, True, allow_inf=True, words="≥ 0 (inf: never)")
UNIT = Bound(0, True, 1, True, words="in [0, 1]")
DISCOUNT = Bound(0, True, 1, True, words="a number in [0, 1]")  # as the policies word γ (resolve_discount_factor)
ABOVE_ONE = Bound(1, False, words="> 1")
SEED = Bound(0, True, 2**32 - 1, True, words="in [0, 4294967295] (numpy's seed range)")
ANY_NUMBER = Bound(-math.inf, True, allow_inf=True, words="a number")
FINITE = Bound(-math.inf, True, words="a real number, not inf")
# a log standard deviation whose exp, the standard deviation, is a positive finite float32 (the models' dtype): above
# ln(3.4e38) ≈ 88.7 it is inf, below ln(1.2e-38) ≈ -87.3 (float32's smallest normal) it is 0 or a denormal, and the
# first sampled action or log-probability is inf or NaN
# env i of a manager is seeded seed + i of its block (utils/seed.py): the collector's block starts at the run's seed,
# the evaluations' 1,000 above it, the final evaluation's 2,000 above; more envs would step into the next block
ENV_COUNT = Bound(1, True, EVAL_SEED_OFFSET, True, whole=True,
                  words=f"in [1, {EVAL_SEED_OFFSET}] (env i's seed is its block's + i, and the evaluations' block "
                        f"starts {EVAL_SEED_OFFSET} above the collector's)")
LOG_STD = Bound(-87.3, True, 88.7, True, words="in [-87.3, 88.7] (e^x, the standard deviation, must be a positive "
                "finite float32)")

# (pattern, bound): a pattern without a dot matches the key's own name, one with a dot its dotted path (fnmatch);
# the first match decides. Counts: a 0 divides by zero, splits into empty minibatches or trains nothing.
RULES: tuple[tuple[str, Bound], ...] = (
    ("seed", SEED),
    # counts
    ("collector_env_num", ENV_COUNT), ("evaluator_env_num", ENV_COUNT),
    ("*_env_num", COUNT), ("batch_size", COUNT), ("*_batch_size", COUNT), ("n_sample", COUNT), ("n_episode", COUNT),
    ("n_evaluator_episode", COUNT), ("update_per_collect", COUNT), ("epoch_per_collect", COUNT),
    ("unroll_len", COUNT), ("nstep", COUNT), ("replay_buffer_size", COUNT), ("*_freq", COUNT), ("*_interval", COUNT),
    ("ensemble_size", COUNT), ("capacity", COUNT), ("stack_num", COUNT), ("frame_skip", COUNT),
    ("screen_size", COUNT), ("n_collectors", COUNT), ("n_specialists", COUNT), ("n_low", COUNT),
    ("*_hidden_size", COUNT), ("*_hidden_size_list", SIZES), ("obs_shape", SIZES),
    ("action_shape", SIZES), ("*_per_variation", COUNT), ("*_max_env_step", COUNT), ("max_episode_steps", COUNT),
    ("max_use", COUNT), ("anneal_step", COUNT), ("lr_decay_iter", COUNT), ("pipeline_groups", COUNT),
    ("num_cpus", COUNT), ("ray_num_cpus", COUNT), ("plateau_patience", COUNT), ("*_channels", COUNT),
    ("*.eps.decay", POSITIVE),
    # step sizes, clips, temperatures: 0 or less learns nothing or diverges
    ("dual_clip", ABOVE_ONE),  # Ye et al. 2020 (dual-clip PPO): the lower bound c > 1
    ("learning_rate", POSITIVE), ("learning_rate_*", POSITIVE), ("*_learning_rate", POSITIVE), ("lr", POSITIVE),
    ("*_lr", POSITIVE), ("clip_ratio", POSITIVE), ("*_clip_ratio", POSITIVE), ("grad_clip_value", POSITIVE),
    ("*_clip", POSITIVE), ("clip_rho_threshold", POSITIVE), ("*_temperature", POSITIVE),
    ("trust_region_value", POSITIVE), ("image_scale", POSITIVE), ("elo_k", POSITIVE),
    # a failure budget's count within its window (max_retry_per_window): 0 stops at the first failure; before the
    # window's own rule, which would take it for a time
    ("*_per_window", NON_NEGATIVE),
    # times: infinity means never (a timeout or a window of 0 would fail everything; 0 s between checkpoints is
    # a checkpoint at every occasion)
    ("*_timeout", POSITIVE_OR_INF), ("*_window", POSITIVE_OR_INF), ("*_seconds", NON_NEGATIVE_OR_INF),
    # loss weights, retry budgets, optional counts: 0 switches them off
    ("*_weight", NON_NEGATIVE), ("weight_decay", NON_NEGATIVE), ("*_coef", NON_NEGATIVE), ("*_coeff", NON_NEGATIVE),
    ("demo_lambda0", NON_NEGATIVE), ("*_layer_num", NON_NEGATIVE), ("max_retry", NON_NEGATIVE),
    ("max_retry_*", NON_NEGATIVE), ("ckpt_max_mb", NON_NEGATIVE),
    ("max_actor_restarts", NON_NEGATIVE), ("max_actor_restarts_*", NON_NEGATIVE), ("keep", NON_NEGATIVE),
    ("save_ckpt_after_iter", NON_NEGATIVE), ("log_show_after_iter", NON_NEGATIVE), ("final_episodes", NON_NEGATIVE),
    ("*_num_cpus", NON_NEGATIVE), ("num_threads", NON_NEGATIVE), ("noop_max", NON_NEGATIVE),
    ("healthy_steps", NON_NEGATIVE), ("eval_latest", NON_NEGATIVE), ("prior_games", NON_NEGATIVE),
    ("pfsp_p", NON_NEGATIVE), ("plateau_tol", NON_NEGATIVE), ("*replay_buffer.alpha", NON_NEGATIVE),
    # discount factors, λ-returns, probabilities, rates
    ("discount_factor", DISCOUNT), ("gae_lambda", UNIT), ("lambda_", UNIT), ("demo_lambda1", UNIT),
    ("*_probability", UNIT), ("*_prob", UNIT), ("p_*", UNIT), ("*_momentum", UNIT), ("prior_rate", UNIT),
    ("target_theta", UNIT),
    ("*.eps.start", UNIT), ("*.eps.end", UNIT), ("*replay_buffer.beta", UNIT),
    # thresholds: any number (a string or NaN would fail deep inside a comparison)
    ("stop_value", ANY_NUMBER), ("return_threshold", ANY_NUMBER),
    # reward shaping weights (an env's ``shaping``): inf makes the first reward NaN (inf · 0) mid-run
    ("shaping", FINITE),
    # initial values of weights: inf makes every output inf or NaN from the first step, and so does a log std whose
    # exp overflows or underflows float32
    ("init_log_std", LOG_STD),
)


# Keys whose default is a value but which also take None, in the meaning their reference gives: a section's
# component type (None: the default one), a clip or a rate guard switched off, a time limit lifted, γ given at
# DI-engine's positions instead, n_sample from the env count, the experiment folder from --exp-name, target networks
# copied every target_update_freq updates instead of averaged (an off-policy target_theta). None for any
# other key whose default is not None is a ConfigError (a count of None would fail deep inside a run, a switch of
# None would silently be off).
NULLABLE: tuple[str, ...] = (
    "type", "exp_name", "grad_clip_value", "reward_clip", "*_timeout", "*_window", "n_sample", "discount_factor",
    "max_episode_steps", "target_theta",
)


def nullable(path: str) -> bool:
    """Whether the key at dotted ``path`` takes None although its default is a value (see :data:`NULLABLE`)."""
    name = path.rsplit(".", 1)[-1]
    return any(fnmatchcase(name, pattern) for pattern in NULLABLE)


def bound_for(path: str) -> Bound | None:
    """The rule of the config key at dotted ``path`` (None: no rule, any value of its type)."""
    name = path.rsplit(".", 1)[-1]
    for pattern, bound in RULES:
        if fnmatchcase(path if "." in pattern else name, pattern):
            return bound
    return None


def check_ranges(cfg: Mapping[str, Any]) -> None:
    """Every numeric value of ``cfg`` within its rule's bound, and no NaN anywhere; else a :class:`ConfigError`
    naming the dotted key, the value and what it must be. A list (hidden sizes, shapes) is checked element-wise."""
    for path, value in _leaves(cfg, ""):
        bound = bound_for(path)
        if isinstance(value, (list, tuple)) and bound is not None and not bound.many:
            raise ConfigError(f"{path} must be a number{_words(bound)}, got a list {value!r}: give one number")
        for x in value if isinstance(value, (list, tuple)) else (value,):
            if x is None and x is not value and bound is not None:
                raise ConfigError(f"{path} must be a list of numbers{_words(bound)}, got {value!r}: None is no size")
            _check_value(path, value, x, bound)


def check_free_type(path: str, value: Any) -> None:
    """A value given for a key whose default is ``None`` (no type to check against) but whose name has a rule: a
    number (or a list of them where the rule takes one), never a bool (``True`` is an int to Python, and would be
    taken as 1), never a dict (a section, which the range check would pass over); else a :class:`ConfigError`. The
    range itself is checked on the compiled config."""
    bound = bound_for(path)
    if bound is not None and isinstance(value, bool):
        raise ConfigError(f"{path} must be a number{_words(bound)}, got bool {value!r}: a bool is no number here "
                          f"(True would count as 1); give a number, or None")
    if bound is not None and isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a number{_words(bound)}, got a dict {value!r}: give a number, or None")


def _words(bound: Bound | None) -> str:
    return "" if bound is None or bound is ANY_NUMBER else f" ({bound.words})"


def whole_counts(tree: dict[str, Any], prefix: str = "") -> None:
    """Integral floats (``4.0``, ``1e4``) at keys whose rule asks for a whole number, lists' elements included, as
    the ints that code reading them expects (``nn.Linear(4, 128.0)`` fails); in place. A key whose default is an int
    is converted when its type is checked; this covers those without one (``obs_shape``, hidden sizes)."""
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):  # a section (a compiled config's are EasyDicts, dicts)
            whole_counts(value, path + ".")
            continue
        bound = bound_for(path)
        if bound is None or not bound.whole:
            continue
        if isinstance(value, list):
            tree[key] = [_as_int(x) for x in value]
        elif isinstance(value, tuple):
            tree[key] = tuple(_as_int(x) for x in value)
        else:
            tree[key] = _as_int(value)


def _as_int(x: Any) -> Any:
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _check_value(path: str, value: Any, x: Any, bound: Bound | None) -> None:
    number = isinstance(x, (int, float)) and not isinstance(x, bool)
    if number and math.isnan(x):
        raise ConfigError(f"{path} is NaN ({value!r}): give a number")
    if bound is None or x is None or isinstance(x, bool):
        return  # a bool is a switch (``priority_IS_weight``); the type check refuses one given for a number
    if not number:
        raise ConfigError(f"{path} must be a number{'' if bound is ANY_NUMBER else ' ' + bound.words}, got "
                          f"{value!r}")
    if math.isinf(x) and not bound.allow_inf:
        raise ConfigError(f"{path} must be a finite number ({bound.words}), got {value!r}")
    if bound.whole and not float(x).is_integer():
        raise ConfigError(f"{path} must be a whole number ({bound.words}), got {value!r}")
    if not bound.accepts(float(x)):
        raise ConfigError(f"{path} must be {bound.words}, got {value!r}")


def _leaves(tree: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _leaves(value, path + ".")
        else:
            yield path, value
