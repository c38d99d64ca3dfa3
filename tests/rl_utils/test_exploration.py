"""Hand-computed checks of ding_lite.rl_utils.exploration."""
import math

import pytest

from ding_lite.errors import ConfigError
from ding_lite.rl_utils.exploration import epsilon_schedule

pytestmark = pytest.mark.unittest


def test_exponential_schedule() -> None:
    eps = epsilon_schedule(dict(type="exp", start=0.95, end=0.1, decay=10000))
    assert eps(0) == pytest.approx(0.95)
    assert eps(10000) == pytest.approx(0.1 + 0.85 / math.e)  # 0.41270
    assert eps(20000) == pytest.approx(0.1 + 0.85 * math.exp(-2))  # 0.21503
    assert eps(10**9) == pytest.approx(0.1)


def test_linear_schedule_then_flat() -> None:
    eps = epsilon_schedule(dict(type="linear", start=1.0, end=0.1, decay=100))
    assert [eps(s) for s in (0, 50, 100, 1000)] == pytest.approx([1.0, 0.55, 0.1, 0.1])


@pytest.mark.parametrize("cfg,match", [
    (dict(type="exp", start=1.0, end=0.1, decay=0), "eps.decay must be positive"),
    (dict(type="cosine", start=1.0, end=0.1, decay=10), "unknown eps.type 'cosine'"),
])
def test_bad_schedules(cfg: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        epsilon_schedule(cfg)
