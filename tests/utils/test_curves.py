"""Curves over seeds (ding_lite/utils/curves.py): the step-hold grid and the bands, computed by hand."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.utils.curves import band_over_seeds, hold_on_grid, median_and_range

pytestmark = pytest.mark.unittest

nan = np.nan


def test_hold_on_grid_is_the_last_value_at_or_before_x() -> None:
    grid = np.array([-1.0, 0, 5, 10, 20])
    np.testing.assert_array_equal(hold_on_grid([10, 0], [3, 1], grid, hold_after_end=False), [nan, 1, 1, 3, nan])
    np.testing.assert_array_equal(hold_on_grid([0, 10], [1, 3], grid, hold_after_end=True), [nan, 1, 1, 3, 3])
    assert np.isnan(hold_on_grid([], [], grid, hold_after_end=True)).all()


def test_standard_error_band() -> None:
    # column 0: values 1 and 3 -> mean 2, std (ddof 1) sqrt(2), se 1; column 1: one seed -> mean 2, no band
    band = band_over_seeds(np.array([[1.0, 2.0], [3.0, nan]]), "se")
    np.testing.assert_allclose(band.mean, [2, 2])
    np.testing.assert_allclose(band.low[:1], [1])
    np.testing.assert_allclose(band.high[:1], [3])
    assert np.isnan(band.low[1]) and np.isnan(band.high[1])
    np.testing.assert_array_equal(band.n_seeds, [2, 1])


def test_bootstrap_interval_of_two_seeds() -> None:
    # resampling two seeds {0, 10}: the mean is 0, 5 or 10 with probability 1/4, 1/2, 1/4, so the 2.5 and 97.5
    # percentiles of 2000 resamples are 0 and 10; a constant column has a zero-width interval
    band = band_over_seeds(np.array([[0.0, 4.0], [10.0, 4.0]]), "ci95")
    np.testing.assert_allclose(band.mean, [5, 4])
    np.testing.assert_allclose(band.low, [0, 4])
    np.testing.assert_allclose(band.high, [10, 4])


def test_no_seed_gives_nan_and_bad_band_name_is_an_error() -> None:
    band = band_over_seeds(np.array([[nan], [nan]]), "se")
    assert np.isnan(band.mean[0]) and band.n_seeds[0] == 0
    with pytest.raises(ValueError, match="band must be one of"):
        band_over_seeds(np.zeros((2, 1)), "iqr")


def test_median_and_range() -> None:
    assert median_and_range([3, 1, 10]) == (3.0, 1.0, 10.0)
    assert median_and_range([1, 2]) == (1.5, 1.0, 2.0)
    assert median_and_range([]) is None
