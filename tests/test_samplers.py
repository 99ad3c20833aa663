"""Tests of :mod:`dipsy.privacy.samplers`.

Noise tests follow Tumult Core's convention: a test that accepts the true distribution must also
reject a wrong one, or it has no power. For each discrete sampler and scale, 100,000 draws from a
fixed seed pass Pearson's chi-square goodness-of-fit test against the exact pmf (p > 1e-4, tails
pooled so that every expected count is at least 5), and the same draws fail the same test against
the pmf at 0.7 and 1.3 times the scale (p < 1e-4). Seeded tests are deterministic; the secure-mode
checks (``os.urandom``, no seed) use p > 1e-6, so a correct sampler fails them about once in a
million runs.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dipsy.errors import DipsyError
from dipsy.privacy import samplers
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_gaussian_pmf,
    discrete_laplace,
    discrete_laplace_pmf,
    gaussian,
    laplace,
    to_fraction,
)

SEED = 2026
N = 100_000
ACCEPT = 1e-4  # a correct sampler passes (seeded: deterministic; the level of the test)
REJECT = 1e-4  # a wrong scale must fail
SECURE_ACCEPT = 1e-6

LAPLACE_SCALES = [0.5, 1, Fraction(3, 2), 10, 1 / 0.3]  # 1/0.3 reads as 33333333333333335/10**16
GAUSSIAN_SIGMA2 = [0.25, 1, Fraction(7, 2), 50, 1000]


def chi_square_p(draws: np.ndarray, pmf) -> float:
    """Pearson's chi-square p-value of integer ``draws`` against a symmetric unimodal ``pmf``.

    Each integer with expected count >= 5 is its own bin (these form ``[-m, m]``); the two tails
    are bins of their own, or are pooled into the outermost bins when their expected count is < 5.
    """
    n = draws.size
    k = np.arange(0, 100_000)
    m = int(k[n * pmf(k) >= 5].max())
    values = np.arange(-m, m + 1)
    probs = pmf(values).astype(float)
    tail = max(0.0, (1.0 - probs.sum()) / 2)
    if n * tail >= 5:
        probs = np.concatenate([[tail], probs, [tail]])
        observed = np.bincount(np.clip(draws, -m - 1, m + 1) + m + 1, minlength=2 * m + 3)
    else:
        probs[0] += tail
        probs[-1] += tail
        observed = np.bincount(np.clip(draws, -m, m) + m, minlength=2 * m + 1)
    expected = n * probs / probs.sum()
    return float(stats.chisquare(observed, expected).pvalue)


def binned_normal_p(draws: np.ndarray, sigma: float, bins: int = 20) -> float:
    """Chi-square p-value against N(0, sigma²) over ``bins`` equiprobable half-integer-edged bins.

    For sigma of thousands and more, the discrete Gaussian's mass of an interval of integers equals
    the normal probability of the half-integer-widened interval up to O(1/sigma): far below what
    20,000 draws can see.
    """
    edges = np.round(stats.norm.ppf(np.linspace(0, 1, bins + 1)[1:-1]) * sigma) + 0.5
    cdf = np.concatenate([[0.0], stats.norm.cdf(edges / sigma), [1.0]])
    observed = np.bincount(np.searchsorted(edges, draws), minlength=bins)
    return float(stats.chisquare(observed, draws.size * np.diff(cdf)).pvalue)


def seeded(offset: int = 0) -> Randomness:
    return Randomness.from_seed(SEED + offset)


# ----------------------------------------------------------------------------------------------
# to_fraction
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (0.1, Fraction(1, 10)),
        (1 / 0.3, Fraction("3.3333333333333335")),
        (1e-3, Fraction(1, 1000)),
        (np.float64(0.25), Fraction(1, 4)),
        ("0.25", Fraction(1, 4)),
        (" 1/3 ", Fraction(1, 3)),
        ("2e-2", Fraction(1, 50)),
        (2, Fraction(2)),
        (np.int64(7), Fraction(7)),
        (Fraction(3, 7), Fraction(3, 7)),
        (10**40, Fraction(10**40)),
    ],
)
def test_to_fraction_reads_what_was_written(value, expected):
    got = to_fraction(value)
    assert got == expected and isinstance(got, Fraction)


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, 0, 0.0, -1, Fraction(-1, 2), "nan", "inf", "x", "", True, None, [1], 1j]
)
def test_to_fraction_refuses_with_a_fix(value):
    with pytest.raises(DipsyError) as info:
        to_fraction(value, "scale")
    assert "scale" in info.value.problem and info.value.fix


@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_to_fraction_of_a_float_round_trips(x):
    f = to_fraction(x)
    assert f == Fraction(repr(x)) and float(f) == x


# ----------------------------------------------------------------------------------------------
# uniform integers (the base of every exact sampler)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bound", [2, 3, 10, 64, 1000, 2**40 + 1])
def test_uniform_integers_are_uniform(bound):
    u = samplers._uniform(bound, 60_000, seeded(1))
    assert u.dtype == np.uint64 and int(u.max()) < bound
    bins = min(bound, 50)
    counts = np.bincount((u.astype(object) * bins // bound).astype(np.int64), minlength=bins)
    # equal-width bins of [0, bound) hold floor/ceil(bound/bins) integers each
    sizes = np.diff([(-(-i * bound // bins)) for i in range(bins + 1)]).astype(float)
    assert stats.chisquare(counts, u.size * sizes / bound).pvalue > ACCEPT


def test_uniform_integers_with_one_bound_per_element():
    bounds = np.tile(np.array([3, 7, 2**20 + 3], dtype=np.uint64), 30_000)
    u = samplers._uniform(bounds, bounds.size, seeded(2))
    assert np.all(u < bounds)
    for b in (3, 7):
        counts = np.bincount(u[bounds == b].astype(np.int64), minlength=b)
        assert stats.chisquare(counts).pvalue > ACCEPT


def test_big_uniform_integers_are_in_range_and_uniform():
    bound = np.full(20_000, 3 * 2**70 + 1, dtype=object)
    u = samplers._below_big(bound, seeded(3))
    assert all(0 <= v < 3 * 2**70 + 1 for v in u[:1000])
    thirds = np.array([v * 3 // (3 * 2**70 + 1) for v in u], dtype=np.int64)
    assert stats.chisquare(np.bincount(thirds, minlength=3)).pvalue > ACCEPT


# ----------------------------------------------------------------------------------------------
# Bernoulli(exp(-gamma))
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "num, den",
    [(1, 3), (1, 1), (3, 2), (5, 2), (7, 1), (2**62 + 1, 2**63 + 3), (10**30, 3 * 10**29), (2**64 + 5, 2**64 + 7)],
    ids=["1/3", "1", "3/2", "5/2", "7", "wide-den", "bigint-10/3", "bigint-near-1"],
)
def test_bernoulli_exp_frequency(num, den):
    n = 200_000 if num < 2**64 else 40_000  # the big-integer fallback is slower
    gamma = Fraction(num, den)
    draws = bernoulli_exp(np.full(n, num, dtype=object if num >= 2**63 else np.uint64), den, seeded(4))
    assert draws.dtype == bool and draws.shape == (n,)
    hits = int(draws.sum())
    assert stats.binomtest(hits, n, math.exp(-gamma)).pvalue > ACCEPT
    assert stats.binomtest(hits, n, math.exp(-1.1 * gamma)).pvalue < REJECT  # and has power


def test_bernoulli_exp_minus_one_is_sharp():
    # the workhorse coin of every sampler: 2,000,000 draws see a bias of 0.5% (6 sd)
    n = 2_000_000
    hits = int(samplers._exp_minus_one(n, seeded(7)).sum())
    assert stats.binomtest(hits, n, math.exp(-1)).pvalue > ACCEPT
    for wrong in (math.exp(-1) * 0.995, math.exp(-1) * 1.005):
        assert stats.binomtest(hits, n, wrong).pvalue < REJECT


def test_bernoulli_exp_of_zero_is_always_one():
    assert bernoulli_exp(np.zeros(1000, dtype=np.int64), np.arange(1, 1001), seeded()).all()


def test_bernoulli_exp_mixed_array_broadcasts():
    num = np.array([0, 1, 3, 5, 40])
    den = np.array([1, 3, 2, 1, 1])
    draws = bernoulli_exp(np.tile(num, (40_000, 1)), den, seeded(5))
    assert draws.shape == (40_000, 5)
    for j in range(5):
        p = math.exp(-num[j] / den[j])
        hits = int(draws[:, j].sum())
        if p > 1e-12:
            assert stats.binomtest(hits, 40_000, p).pvalue > ACCEPT
        else:
            assert hits == 0  # e^-40 ≈ 4e-18


@pytest.mark.parametrize(
    "num, den, error",
    [
        ([1], [0], ValueError),
        ([-1], [1], ValueError),
        ([0.5], [1], TypeError),
        ([1], [True], TypeError),
        (np.array([1, -2], dtype=object), 1, ValueError),
    ],
)
def test_bernoulli_exp_refuses_bad_input(num, den, error):
    with pytest.raises(error):
        bernoulli_exp(num, den, seeded())


def test_bernoulli_exp_with_huge_floor_is_zero_or_fine():
    draws = bernoulli_exp(np.full(10_000, 2**63, dtype=np.uint64), 3, seeded(6))
    assert not draws.any()  # probability e^(-2^63/3) per draw


# ----------------------------------------------------------------------------------------------
# Discrete Laplace
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace_fits_its_pmf_and_not_a_wrong_scale(scale):
    draws = discrete_laplace(scale, N, seeded(10))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    b = to_fraction(scale)
    assert chi_square_p(draws, lambda x: discrete_laplace_pmf(x, b)) > ACCEPT
    for wrong in (b * Fraction(7, 10), b * Fraction(13, 10)):
        assert chi_square_p(draws, lambda x, w=wrong: discrete_laplace_pmf(x, w)) < REJECT


def test_discrete_laplace_secure_mode():
    draws = discrete_laplace(Fraction(3, 2), 30_000, Randomness.from_seed(None))
    assert chi_square_p(draws, lambda x: discrete_laplace_pmf(x, Fraction(3, 2))) > SECURE_ACCEPT


@pytest.mark.parametrize(
    "scale",
    [Fraction(10**20 + 1, 10**20) * Fraction(3, 2), Fraction(1, 3 * 2**64 + 1) * 2**65],
    ids=["bigint-t-and-s", "bigint-s"],
)
def test_discrete_laplace_big_integer_fallback(scale):
    draws = discrete_laplace(scale, 20_000, seeded(11))
    assert chi_square_p(draws, lambda x: discrete_laplace_pmf(x, scale)) > ACCEPT
    assert chi_square_p(draws, lambda x: discrete_laplace_pmf(x, scale * Fraction(13, 10))) < REJECT


def test_discrete_laplace_is_symmetric_and_shaped():
    draws = discrete_laplace(3, (200, 300), seeded(12))
    assert draws.shape == (200, 300) and draws.dtype == np.int64
    positive, negative = int((draws > 0).sum()), int((draws < 0).sum())
    assert stats.binomtest(positive, positive + negative, 0.5).pvalue > ACCEPT


@pytest.mark.parametrize("sampler", [discrete_laplace, discrete_gaussian])
@pytest.mark.parametrize("size, shape", [(0, (0,)), ((0, 3), (0, 3)), (1, (1,)), ((2, 3, 4), (2, 3, 4))])
def test_sizes(sampler, size, shape):
    draws = sampler(2, size, seeded())
    assert draws.shape == shape and draws.dtype == np.int64


@pytest.mark.parametrize("size", [-1, 2.5, (2, -1), True])
def test_bad_sizes_are_refused(size):
    with pytest.raises(ValueError):
        discrete_laplace(1, size, seeded())


def test_discrete_laplace_tiny_and_huge_scales():
    assert not discrete_laplace(Fraction(1, 1000), 10_000, seeded(13)).any()  # P[X != 0] ≈ 2e^-1000
    big = discrete_laplace(2**56, 20_000, seeded(14)).astype(float)
    var = 2 * math.exp(-(2.0**-56)) / math.expm1(-(2.0**-56)) ** 2
    assert abs(big.var() / var - 1) < 0.1  # sd of the ratio is about sqrt(5/20000) = 0.016


@pytest.mark.parametrize("scale", [0, -1, math.nan, math.inf, "abc", 2**56 + 1])
def test_discrete_laplace_refuses_bad_scale(scale):
    with pytest.raises(DipsyError):
        discrete_laplace(scale, 10, seeded())


# ----------------------------------------------------------------------------------------------
# Discrete Gaussian
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2, ids=str)
def test_discrete_gaussian_fits_its_pmf_and_not_a_wrong_scale(sigma2):
    draws = discrete_gaussian(sigma2, N, seeded(20))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    s2 = to_fraction(sigma2)
    assert chi_square_p(draws, lambda x: discrete_gaussian_pmf(x, s2)) > ACCEPT
    for wrong in (s2 * Fraction(7, 10), s2 * Fraction(13, 10)):
        assert chi_square_p(draws, lambda x, w=wrong: discrete_gaussian_pmf(x, w)) < REJECT


def test_discrete_gaussian_secure_mode():
    draws = discrete_gaussian(Fraction(7, 2), 30_000, Randomness.from_seed(None))
    assert chi_square_p(draws, lambda x: discrete_gaussian_pmf(x, Fraction(7, 2))) > SECURE_ACCEPT


def test_discrete_gaussian_big_integer_fallback():
    # D = 2 n d t^2 passes 2**64: the exponent is handled in Python integers
    s2 = Fraction(7, 2) * Fraction(2**70 + 1, 2**70)
    draws = discrete_gaussian(s2, 20_000, seeded(21))
    assert chi_square_p(draws, lambda x: discrete_gaussian_pmf(x, s2)) > ACCEPT
    assert chi_square_p(draws, lambda x: discrete_gaussian_pmf(x, s2 * Fraction(13, 10))) < REJECT


@pytest.mark.parametrize("sigma2", [2 * 10**9, 2**40, 2**100], ids=["uint64-D-near-2^63", "bigint-D", "huge"])
def test_discrete_gaussian_large_sigma(sigma2):
    draws = discrete_gaussian(sigma2, 20_000, seeded(22))
    sigma = math.sqrt(sigma2)
    assert binned_normal_p(draws, sigma) > ACCEPT
    assert binned_normal_p(draws, sigma * math.sqrt(1.3)) < REJECT


def test_discrete_gaussian_is_symmetric_and_shaped():
    draws = discrete_gaussian(9, (300, 200), seeded(23))
    assert draws.shape == (300, 200) and draws.dtype == np.int64
    positive, negative = int((draws > 0).sum()), int((draws < 0).sum())
    assert stats.binomtest(positive, positive + negative, 0.5).pvalue > ACCEPT


@pytest.mark.parametrize("sigma2", [0, -2, math.nan, "1/0", 2**113])
def test_discrete_gaussian_refuses_bad_sigma2(sigma2):
    with pytest.raises(DipsyError):
        discrete_gaussian(sigma2, 10, seeded())


# ----------------------------------------------------------------------------------------------
# Reproducibility, the source of randomness, pmfs
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sampler, parameter", [(discrete_laplace, 1.5), (discrete_gaussian, 3), (laplace, 1.5), (gaussian, 2)])
def test_same_seed_same_draws(sampler, parameter):
    a = sampler(parameter, 5_000, Randomness.from_seed(99))
    b = sampler(parameter, 5_000, Randomness.from_seed(99))
    c = sampler(parameter, 5_000, Randomness.from_seed(100))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


class _NoFloats:
    """Stands in for the NumPy generator: any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"an exact sampler used the float generator ({name})")


@pytest.mark.parametrize("sampler, parameter", [(discrete_laplace, Fraction(5, 2)), (discrete_gaussian, Fraction(5, 2))])
def test_exact_samplers_in_secure_mode_use_only_the_secure_source(sampler, parameter):
    rand = Randomness(None, _NoFloats())  # secure: below() reads os.urandom
    a, b = sampler(parameter, 2_000, rand), sampler(parameter, 2_000, rand)
    assert a.dtype == np.int64 and not np.array_equal(a, b)


def test_out_of_int64_draws_raise_rather_than_wrap():
    with pytest.raises(OverflowError):
        samplers._to_int64(np.array([2**63], dtype=np.uint64))


@pytest.mark.parametrize("scale", [Fraction(1, 2), 1, 10, 1 / 0.3])
def test_discrete_laplace_pmf_sums_to_one(scale):
    x = np.arange(-3000, 3001)
    assert math.isclose(math.fsum(discrete_laplace_pmf(x, scale)), 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), 1, 99, 100, 101, 1000])
def test_discrete_gaussian_pmf_sums_to_one(sigma2):
    x = np.arange(-2000, 2001)
    assert math.isclose(math.fsum(discrete_gaussian_pmf(x, sigma2)), 1.0, rel_tol=1e-12)


# ----------------------------------------------------------------------------------------------
# Continuous samplers (real-valued statistics only)
# ----------------------------------------------------------------------------------------------


def test_laplace_mean_and_variance():
    b, n = 2.0, 200_000
    x = laplace(b, n, seeded(30))
    assert x.dtype == np.float64 and x.shape == (n,)
    var = 2 * b * b
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 5 * math.sqrt(20 * b**4 / n)  # Var(s²) ≈ (μ4 - σ⁴)/n, μ4 = 24 b⁴


def test_gaussian_mean_and_variance():
    s, n = 3.0, 200_000
    x = gaussian(s, (400, 500), seeded(31)).ravel()
    assert abs(x.mean()) < 5 * s / math.sqrt(n)
    assert abs(x.var() - s * s) < 5 * math.sqrt(2 / n) * s * s


@pytest.mark.parametrize("sampler", [laplace, gaussian])
@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf])
def test_continuous_samplers_refuse_bad_scale(sampler, bad):
    with pytest.raises(DipsyError):
        sampler(bad, 10, seeded())
