"""The discrete Gaussian measurement: its variance rounds up, its spend never passes the budget."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dipsy.privacy.mechanisms import DENOMINATOR, discrete_gaussian_counts, plan_discrete_gaussian
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_gaussian


@given(rho=st.floats(1e-6, 50), theta=st.integers(1, 10))
def test_variance_is_the_least_grid_value_whose_spend_fits_the_budget(rho, theta):
    plan = plan_discrete_gaussian(rho, theta)
    exact = Fraction(theta) ** 2 / (2 * Fraction(rho))
    assert plan.sigma2 >= exact and plan.sigma2 - Fraction(1, DENOMINATOR) < exact
    assert plan.spend.rho <= rho
    assert Fraction(theta) ** 2 / (2 * plan.sigma2) <= Fraction(rho)


def test_noisy_counts_are_the_counts_plus_the_samplers_noise():
    counts = np.arange(1000)
    plan = plan_discrete_gaussian(0.02, 7)
    noisy = discrete_gaussian_counts(counts, plan, Randomness.from_seed(5))
    assert noisy.tolist() == (counts + discrete_gaussian(plan.sigma2, 1000, Randomness.from_seed(5))).tolist()
    assert plan.sd == pytest.approx(np.sqrt(49 / 0.04), rel=1e-3)
