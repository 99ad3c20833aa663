"""The Dirichlet-multinomial synthesizer: its ε-DP bound by exact enumeration, its sampler by χ²."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dipsy
from dipsy.errors import DipsyError
from dipsy.methods.dirichlet_multinomial import (
    DirichletMultinomial,
    draw_predictive,
    log_predictive,
    minimum_alpha,
)
from dipsy.privacy import PureDP, audit
from dipsy.privacy.audit import compositions


def largest_privacy_loss(cells: int, n: int, alpha: float) -> float:
    """The largest log p(y*|y, alpha) - log p(y*|x, alpha) over neighbours (S-000 eqs. 8–9)."""
    return audit.largest_privacy_loss(lambda out, y: log_predictive(out, y, alpha), n, cells)


@pytest.mark.parametrize("cells", [2, 3, 4])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 5.0])
def test_privacy_loss_is_at_most_epsilon_at_the_least_alpha_and_exceeds_it_below(cells, n, epsilon):
    alpha = minimum_alpha(n, epsilon)
    assert largest_privacy_loss(cells, n, alpha) <= epsilon + 1e-9
    assert largest_privacy_loss(cells, n, 0.5 * alpha) > epsilon


def test_the_bound_is_attained():
    """The worst case of S-000 eq. 11 is reached, so no smaller alpha would do."""
    n, epsilon = 5, 1.0
    assert largest_privacy_loss(3, n, minimum_alpha(n, epsilon)) == pytest.approx(epsilon, abs=1e-9)


@pytest.mark.parametrize("alpha", [0.3, 2.0, 40.0])
def test_predictive_is_a_probability_distribution(alpha):
    y = np.array([3, 0, 2, 1])
    total = np.exp(log_predictive(compositions(6, 4), y, alpha)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)


def chi_square_of_sampler(y: np.ndarray, alpha_sampled: float, alpha_tested: float, draws: int, seed: int) -> float:
    """p-value of a χ² test: draws of the sampler at ``alpha_sampled`` against the pmf at ``alpha_tested``."""
    rng = np.random.default_rng(seed)
    outputs = compositions(int(y.sum()), len(y))
    index = {tuple(o): k for k, o in enumerate(outputs)}
    observed = np.zeros(len(outputs))
    for _ in range(draws):
        observed[index[tuple(draw_predictive(y, alpha_sampled, rng))]] += 1
    expected = draws * np.exp(log_predictive(outputs, y, alpha_tested))
    return float(stats.chisquare(observed, expected).pvalue)


def test_sampler_draws_from_the_posterior_predictive():
    """χ² goodness of fit over all 21 outcomes (min expected count > 130 at these settings)."""
    y = np.array([3, 1, 1])
    alpha = minimum_alpha(5, 1.0)
    assert chi_square_of_sampler(y, alpha, alpha, draws=20_000, seed=1) > 1e-3


def test_the_same_test_rejects_a_wrong_alpha():
    y = np.array([3, 1, 1])
    alpha = minimum_alpha(5, 1.0)
    assert chi_square_of_sampler(y, alpha, 0.5 * alpha, draws=20_000, seed=1) < 1e-3
    assert chi_square_of_sampler(y, alpha, 2.0 * alpha, draws=20_000, seed=1) < 1e-3


def test_ce_race_example_of_s000():
    """alpha = 6.742953 for n = 994, ε = 5; mean of theta* is (y + alpha)/sum(y + alpha)."""
    y = np.array([816, 109, 7, 39, 6, 17])
    alpha = minimum_alpha(int(y.sum()), 5.0)
    assert round(alpha, 6) == 6.742953
    rng = np.random.default_rng(123)
    draws = 4000
    theta = rng.dirichlet(y + alpha, size=draws)
    ystar = np.array([draw_predictive(y, alpha, rng) for _ in range(draws)])
    expected = (y + alpha) / (y + alpha).sum()
    # y*/n has mean E[theta*] and sd at most sqrt(Var(theta*) + theta(1-theta)/n) per cell
    sd = np.sqrt(theta.var(axis=0) + expected * (1 - expected) / y.sum())
    assert np.all(np.abs(ystar.mean(axis=0) / y.sum() - expected) < 5 * sd / np.sqrt(draws))
    assert np.all(ystar.sum(axis=1) == y.sum())


def test_plan_charges_each_set_its_share_and_raises_alpha_for_it():
    domain = dipsy.Domain.from_sizes({"a": 3})
    plan = DirichletMultinomial(PureDP(3.0), sets=3).plan(100, domain)
    assert [s.budget.epsilon for s in plan.spends] == [1.0, 1.0, 1.0]
    assert plan.parameters["alpha"] == pytest.approx(100 / math.expm1(1.0))
    assert sum(m.cost.epsilon for m in plan.measurements) == pytest.approx(3.0)
    assert all(m.relation.name == "substitute" for m in plan.measurements)


def test_alpha_option_may_raise_alpha_but_never_lower_it():
    domain = dipsy.Domain.from_sizes({"a": 3})
    least = minimum_alpha(100, 1.0)
    plan = DirichletMultinomial(PureDP(1.0), options={"alpha": "80"}).plan(100, domain)
    assert plan.parameters["alpha"] == 80.0 > least
    with pytest.raises(DipsyError, match="below"):
        DirichletMultinomial(PureDP(1.0), options={"alpha": least / 2}).plan(100, domain)
    with pytest.raises(DipsyError, match="no option 'beta'"):
        DirichletMultinomial(PureDP(1.0), options={"beta": 1})


def test_records_reproduce_the_synthetic_counts_and_are_shuffled():
    data = pd.DataFrame({"a": np.repeat([0, 1, 2], [50, 30, 20]), "b": np.tile([0, 1], 50)})
    domain = dipsy.Domain.from_sizes({"a": 3, "b": 2})
    release = dipsy.synthesize(data, domain, epsilon=2.0, sets=2, seed=5)
    for table in release.tables:
        assert len(table) == 100 and list(table.columns) == ["a", "b"]
        assert not table["a"].is_monotonic_increasing  # shuffled, not in cell order
    again = dipsy.synthesize(data, domain, epsilon=2.0, sets=2, seed=5)
    pd.testing.assert_frame_equal(release.tables[1], again.tables[1])


def test_large_sparse_domain_draws_in_memory_proportional_to_cells():
    """10^5 cells, 10^3 records: every draw has n records, spread beyond the occupied cells."""
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"a": rng.integers(0, 100, 1000), "b": rng.integers(0, 1000, 1000)})
    domain = dipsy.Domain.from_sizes({"a": 100, "b": 1000})
    table = dipsy.synthesize(data, domain, epsilon=1.0, seed=1, accept_noise=True).tables[0]
    assert len(table) == 1000
    assert table["a"].between(0, 99).all() and table["b"].between(0, 999).all()
