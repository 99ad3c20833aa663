"""The discrete Gaussian measurement (privacy.measurement.DiscreteGaussian): its variance rounds up,
its cost never passes the budget, and its noise is the exact sampler's.

(Moved from the tests of the former ``privacy.mechanisms`` module, whose ``plan_discrete_gaussian``
and ``discrete_gaussian_counts`` the mechanism replaces.)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dipsy.privacy import ZCDP
from dipsy.privacy.measurement import DENOMINATOR, DiscreteGaussian
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_gaussian


@given(rho=st.floats(1e-6, 50), theta=st.integers(1, 10))
def test_variance_is_the_least_grid_value_whose_cost_fits_the_budget(rho, theta):
    noise = DiscreteGaussian.for_budget(ZCDP(rho), theta)
    exact = Fraction(theta) ** 2 / (2 * Fraction(rho))
    assert noise.sigma2 >= exact and noise.sigma2 - Fraction(1, DENOMINATOR) < exact
    assert noise.sigma2.denominator <= DENOMINATOR and (noise.sigma2 * DENOMINATOR).denominator == 1
    assert noise.cost.rho <= rho
    assert Fraction(theta) ** 2 / (2 * noise.sigma2) <= Fraction(rho)
    assert noise.sensitivity == theta


def test_noisy_counts_are_the_counts_plus_the_samplers_noise():
    counts = np.arange(1000)
    noise = DiscreteGaussian.for_budget(ZCDP(0.02), 7)
    noisy = noise.randomise(counts, Randomness.from_seed(5))
    assert noisy.tolist() == (counts + discrete_gaussian(noise.sigma2, 1000, Randomness.from_seed(5))).tolist()
    assert noise.sd == pytest.approx(np.sqrt(49 / 0.04), rel=1e-3)
