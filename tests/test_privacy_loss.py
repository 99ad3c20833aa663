"""Privacy losses from output laws (dipsy.privacy.loss and the mechanisms' privacy_loss): each
against a closed form or a brute-force enumeration, composition against the product law, and the
laws against the mechanisms' own draws.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from dipsy.audit import CASES
from dipsy.audit.losses import check, sampled
from dipsy.audit.record import files, recorded
from dipsy.privacy.loss import (
    ALPHAS,
    PrivacyLoss,
    bounded_discrete_laplace_factor,
    categorical,
    discrete_gaussian_factor,
    discrete_laplace_factor,
)
from dipsy.privacy.measurement import DiscreteGaussian, DiscreteLaplace, Laplace
from dipsy.privacy.selection import ExponentialSelection


def brute(log_p: np.ndarray, log_q: np.ndarray) -> tuple[float, callable, callable]:
    """ε, D_α and δ(ε) of two laws on the same outputs, straight from the definitions."""
    seen = (log_p > -np.inf) & (log_q > -np.inf)  # past underflow (below 1e-323) the enumeration cannot tell
    log_p, log_q = log_p[seen], log_q[seen]
    p, q = np.exp(log_p), np.exp(log_q)
    eps = float(np.max(np.abs(log_p - log_q)))

    def renyi(a):
        return max(logsumexp(a * log_p + (1 - a) * log_q), logsumexp(a * log_q + (1 - a) * log_p)) / (a - 1)

    def delta(e):
        return max(np.sum(np.maximum(p - math.exp(e) * q, 0)), np.sum(np.maximum(q - math.exp(e) * p, 0)))

    return eps, renyi, delta


def dl_law(centre: int, scale: float, z: np.ndarray) -> np.ndarray:
    q = math.exp(-1 / scale)
    return math.log((1 - q) / (1 + q)) - np.abs(z - centre) / scale


@pytest.mark.parametrize("shift, scale", [(1, 0.5), (2, 0.5), (3, 1.7), (1, 40.0)])
def test_discrete_laplace_against_the_enumerated_law(shift, scale):
    z = np.arange(-3000, 3001)
    eps, renyi, delta = brute(dl_law(0, scale, z), dl_law(shift, scale, z))
    loss = PrivacyLoss((discrete_laplace_factor(shift, scale),))
    assert loss.epsilon == pytest.approx(shift / scale, rel=1e-12) == pytest.approx(eps, rel=1e-9)
    for a in (1.5, 2.0, 7.0):
        assert loss.renyi(np.array([a]))[0] == pytest.approx(renyi(a), rel=1e-9)
    for e in (0.0, 0.5 * shift / scale, 0.99 * shift / scale):
        assert delta(e) - 1e-5 <= loss.delta(e) <= delta(e) + 1e-12  # rounded down on a 1e-6 grid: a lower bound


def test_discrete_gaussian_rho_is_exact_and_attained():
    for shift, sigma2 in ((1, 1.0), (2, 6827 / 1024), (3, 50.0)):
        loss = PrivacyLoss((discrete_gaussian_factor(shift, sigma2),))
        rho = shift**2 / (2 * sigma2)
        assert loss.rho == pytest.approx(rho, rel=1e-10)
        d = loss.renyi(ALPHAS)
        assert np.all(d <= ALPHAS * rho * (1 + 1e-10))  # D_α <= αρ at every order, with equality at the integers
        assert d[ALPHAS == 2.0][0] == pytest.approx(2 * rho, rel=1e-10)
    assert DiscreteGaussian(Fraction(2)).privacy_loss([0, 0, 5], [1, 2, 5]).rho == pytest.approx(5 / 4, rel=1e-10)


def test_a_wide_discrete_gaussian_has_the_gaussian_privacy_profile():
    # Balle & Wang 2018, Thm 8: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), μ = Δ/σ; the discrete law approaches it
    sigma2, loss = 400.0, PrivacyLoss((discrete_gaussian_factor(1, 400.0),))
    mu = 1 / math.sqrt(sigma2)
    for e in (0.0, 0.02, 0.05):
        assert loss.delta(e) == pytest.approx(norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2), rel=1e-3)


def test_the_laplace_binned_law_is_a_tight_lower_bound():
    d, b = 1.0, 0.5
    loss = Laplace(b).privacy_loss([0.0], [d])
    assert loss.epsilon == pytest.approx(d / b, rel=1e-12)
    for a in (1.5, 2.0, 5.0):  # Mironov 2017, Prop. 6
        exact = math.log(a / (2 * a - 1) * math.exp((a - 1) * d / b) + (a - 1) / (2 * a - 1) * math.exp(-a * d / b)) / (a - 1)
        assert exact * (1 - 1e-4) <= loss.renyi(np.array([a]))[0] <= exact


@pytest.mark.parametrize(
    "a, b, lower, upper, truncated",
    [(0, 1, 0, 1, False), (3, 5, 0, 10, False), (3, 5, 0, 10, True), (0, 2, 0, math.inf, False), (9, 7, 0, 9, True)],
)
def test_bounded_discrete_laplace_against_the_enumerated_law(a, b, lower, upper, truncated):
    scale, z = 1.3, np.arange(-600, 601)  # farther out the probabilities are denormal, their logs inexact

    def law(c):
        p = np.exp(dl_law(c, scale, z))
        top = int(min(upper, 600))
        if truncated:
            inside = (z >= lower) & (z <= top)
            return np.log(p[inside] / p[inside].sum())
        out = np.zeros(top - lower + 1)
        np.add.at(out, np.clip(z, lower, top) - lower, p)
        with np.errstate(divide="ignore"):
            return np.log(out)

    eps, renyi, delta = brute(law(a), law(b))
    loss = PrivacyLoss((bounded_discrete_laplace_factor(a, b, scale, lower, upper, truncated),))
    assert loss.epsilon == pytest.approx(eps, rel=1e-9)
    assert loss.renyi(np.array([2.0]))[0] == pytest.approx(renyi(2.0), rel=1e-9)
    assert delta(0.3) - 1e-5 <= loss.delta(0.3) <= delta(0.3) + 1e-12


def test_independent_outputs_compose_into_the_product_law():
    f, g = discrete_laplace_factor(1, 0.8), categorical(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]))
    product = PrivacyLoss((f,)) + PrivacyLoss((g,))
    joint_p = (f.log_p[:, None] + g.log_p[None, :]).ravel()
    joint_q = (f.log_q[:, None] + g.log_q[None, :]).ravel()
    eps, renyi, delta = brute(joint_p, joint_q)
    assert product.epsilon == pytest.approx(eps, rel=1e-12)
    assert product.renyi(np.array([3.0]))[0] == pytest.approx(renyi(3.0), rel=1e-9)
    assert delta(0.5) - 1e-5 <= product.delta(0.5) <= delta(0.5) + 1e-12
    assert PrivacyLoss((categorical(np.array([0.5, 0.5]), np.array([0.25, 0.75]), times=3),)).epsilon == pytest.approx(
        3 * math.log(2)
    )


def test_the_selection_law_is_its_draws_law():
    s = ExponentialSelection.for_epsilon(1, 1, "pure-DP", units=4)
    scores = np.array([0.0, 0.5, 1.0, 0.25])
    moved = scores + np.array([1.0, -1.0, 0.0, 0.5])  # each score moves by at most Δ = 1
    assert s.privacy_loss(scores, moved).epsilon <= 1.0 + 1e-12  # within its ε
    # the law of its draws: the exact sampler's frequencies match `probabilities` (χ²-style tolerance, 4 sd)
    from dipsy.privacy.rng import Randomness

    rand, n = Randomness.from_seed(3), 2000
    counts = np.bincount([s.randomise(scores, rand) for _ in range(n)], minlength=4)
    p = s.probabilities(scores)
    assert np.all(np.abs(counts - n * p) <= 4 * np.sqrt(n * p * (1 - p)))
    assert DiscreteLaplace(Fraction(1, 2)).privacy_loss([0, 3], [1, 1]).epsilon == pytest.approx(6.0)


@pytest.mark.parametrize("method", ["laplace-sanitizer", "smoothed-histogram", "modips"])
def test_the_exact_loss_bounds_what_the_draws_show(method):
    # the laws privacy_loss uses are those randomise draws from: on the broken variant the draws alone
    # refute the stated cost (power), and never show more than the exact loss (95 %: a fixed seed here)
    case = CASES[method]
    with files(case) as folder:
        _, log = recorded(case, 0, Path(folder), broken=True)
    r = log[0]
    drawn = sampled(r.measurement.label, r.measurement.cost, r.ran, r.answer, r.neighbour, draws=1000, seed=1)
    exact = check(r.measurement.label, r.measurement.cost, r.ran, r.answer, r.neighbour)
    assert exact.how == "exact" and drawn.stated < drawn.found <= exact.found
