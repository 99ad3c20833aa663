"""Two-sample tests of dipsy's exact discrete samplers against OpenDP, an outside-reviewed library.

What is checked
---------------
- :func:`~dipsy.privacy.samplers.discrete_laplace` (``P[z] ∝ exp(-|z|/scale)``) at scales 0.5, 1,
  3.7 and 20 against OpenDP's integer Laplace, ``make_laplace(vector_domain(atom_domain(T=int)),
  l1_distance(T=int), scale=scale)`` applied to a vector of zeros;
- :func:`~dipsy.privacy.samplers.discrete_gaussian` (``P[z] ∝ exp(-z²/(2σ²))``) at σ² = 0.25, 1,
  10 and 400 against OpenDP's integer Gaussian, ``make_gaussian(vector_domain(atom_domain(T=int)),
  l2_distance(T=int), scale=σ)``;
- that OpenDP itself draws what we think it does: its draws fit the exact pmfs
  (:func:`~dipsy.privacy.samplers.discrete_laplace_pmf`,
  :func:`~dipsy.privacy.samplers.discrete_gaussian_pmf`).
  OpenDP 0.16's samplers document ``P[x] ∝ e^(-|x|/scale)`` (``sample_discrete_laplace``) and
  ``N_ℤ(0, scale²)`` (``sample_discrete_gaussian``), the same CKS 2020 algorithms dipsy implements.

OpenDP is a test-time oracle only (the ``test`` extra): dipsy never calls it to release anything,
and this module is skipped when it is not installed.

The test
--------
Pearson's chi-square test of homogeneity on the 2 × k table of counts (``N`` = 50,000 draws from
each side: dipsy seeded, OpenDP from the OS, so a fresh sample every run). Cells are the
integers; consecutive cells are pooled (tails included) until every expected count is at least 5;
the bins depend on the pooled sample only. The pmf checks are Pearson goodness-of-fit tests on the
OpenDP draws with bins pooled from the pmf the same way.

Every test is at level ``ALPHA = 1e-5``: a correct pair passes when ``p > 1e-5``. There are 16
acceptance tests (8 two-sample, 8 pmf), so a correct implementation fails some test in a run with
probability at most 1.6e-4 (Bonferroni); the tolerance comes from the distribution, not from a
lucky seed.

Power (measured, N = 50,000)
----------------------------
The power checks run dipsy at the WRONG parameter (0.8 × scale, 0.8 × σ²) against OpenDP at the
true one and require ``p < 1e-5``; over three runs they reached p between 1e-295 and 1e-67
(weakest: σ² = 400, 1e-80 to 1e-67; Laplace scale 20, about 1e-150). The pmf checks likewise
reject the pmf at 0.8 × the parameter (p < 1e-279). Finer errors: at 0.9 × the parameter the
two-sample test gave p ≤ 1e-14 in every case; at 0.95 × it gave p between 1e-5 and 1e-13, about
the limit of what this N can resolve.

Run time: OpenDP draws ~10 µs (Laplace) to ~20 µs (Gaussian) per value, about 8 s for all eight
samples of 50,000 (the whole file: 12-14 s wall); each sample is drawn once and cached for the
two-sample, power and pmf tests.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

dp = pytest.importorskip(
    "opendp.prelude",
    reason="opendp (>= 0.16, in the test extra; the test-time oracle here) is not installed",
)

from dipsy.privacy.rng import Randomness  # noqa: E402
from dipsy.privacy.samplers import (  # noqa: E402
    discrete_gaussian,
    discrete_gaussian_pmf,
    discrete_laplace,
    discrete_laplace_pmf,
)

N = 50_000  # draws per sample, from each of dipsy and OpenDP
ALPHA = 1e-5  # level of every test: accept when p > ALPHA; the power checks need p < ALPHA
WRONG = 0.8  # the power checks run dipsy at WRONG x scale (Laplace) or WRONG x sigma^2 (Gaussian)
MIN_EXPECTED = 5.0  # bins are pooled until every expected count is at least this
SEED = 20_260_421

LAPLACE_SCALES = ["0.5", "1", "3.7", "20"]  # dipsy reads these exactly; OpenDP gets float(s)
GAUSSIAN_SIGMA2 = ["0.25", "1", "10", "400"]  # OpenDP's scale is sigma = sqrt(sigma2)


# --------------------------------------------------------------------------------------------
# OpenDP draws (cached: each is reused by the two-sample, power and pmf tests)
# --------------------------------------------------------------------------------------------


@functools.cache
def _opendp_laplace(scale: str) -> np.ndarray:
    """N draws of OpenDP's integer Laplace noise: ``make_laplace`` on a vector of N zeros."""
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
    meas = dp.m.make_laplace(*space, scale=float(scale))
    return np.asarray(meas([0] * N), dtype=np.int64)


@functools.cache
def _opendp_gaussian(sigma2: str) -> np.ndarray:
    """N draws of OpenDP's integer Gaussian noise: ``make_gaussian`` (scale = sigma) on N zeros."""
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
    meas = dp.m.make_gaussian(*space, scale=math.sqrt(float(sigma2)))
    return np.asarray(meas([0] * N), dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Chi-square tests on pooled integer bins
# --------------------------------------------------------------------------------------------


def _pool(weights: np.ndarray, minimum: float) -> np.ndarray:
    """Bin index for each consecutive integer cell: greedy left-to-right merging of ``weights``.

    A bin is closed once its total reaches ``minimum``; a short last bin joins the one before.
    The first and last bins thus hold the tails.
    """
    labels = np.empty(weights.size, dtype=np.int64)
    current, total = 0, 0.0
    for i, w in enumerate(weights):
        labels[i] = current
        total += w
        if total >= minimum:
            current, total = current + 1, 0.0
    if total < minimum and current > 0:  # short last bin (or trailing cells with no weight)
        labels[labels == current] = current - 1
    return labels


def two_sample_pvalue(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """Pearson's chi-square test of homogeneity of two integer samples; (p-value, bins).

    Cells are the integers between the pooled minimum and maximum; bins pool consecutive cells
    until every expected count under the null (``n_j · pooled count / (n_x + n_y)``) is at least
    ``MIN_EXPECTED``. The bins depend on the pooled sample only, which is exchangeable under the
    null. ``df = bins - 1``.
    """
    lo = int(min(x.min(), y.min()))
    hi = int(max(x.max(), y.max()))
    cx = np.bincount(x - lo, minlength=hi - lo + 1)
    cy = np.bincount(y - lo, minlength=hi - lo + 1)
    # expected count of the smaller sample in a bin is n_min · c / (n_x + n_y) >= MIN_EXPECTED
    need = MIN_EXPECTED * (x.size + y.size) / min(x.size, y.size)
    labels = _pool(cx + cy, need)
    bx = np.bincount(labels, weights=cx)
    by = np.bincount(labels, weights=cy)
    if bx.size < 2:
        return 1.0, 1
    res = stats.chi2_contingency(np.vstack([bx, by]), correction=False)
    return float(res.pvalue), int(bx.size)


def pmf_pvalue(x: np.ndarray, pmf, width: int) -> tuple[float, int]:
    """Pearson's chi-square goodness-of-fit of integer sample ``x`` to a symmetric ``pmf``.

    Cells are ``-width .. width`` (mass and draws beyond go to the end cells, which become the
    tails); bins pool consecutive cells until every expected count is at least ``MIN_EXPECTED``.
    The bins depend on the pmf only. ``df = bins - 1``.
    """
    cells = np.arange(-width, width + 1)
    p = np.asarray(pmf(cells), dtype=float)
    rest = max(0.0, 1.0 - math.fsum(p))
    p[0] += rest / 2
    p[-1] += rest / 2
    labels = _pool(x.size * p, MIN_EXPECTED)
    expected = np.bincount(labels, weights=x.size * p)
    observed = np.bincount(labels[np.clip(x, -width, width) + width], minlength=expected.size)
    expected *= x.size / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue), int(expected.size)


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_discrete_laplace_matches_opendp(scale: str) -> None:
    """dipsy's discrete Laplace and OpenDP's integer Laplace are one distribution."""
    ours = discrete_laplace(scale, N, Randomness.from_seed(SEED + LAPLACE_SCALES.index(scale)))
    p, bins = two_sample_pvalue(ours, _opendp_laplace(scale))
    print(f"laplace scale={scale}: p={p:.3g} ({bins} bins)")
    assert p > ALPHA, f"dipsy vs OpenDP, discrete Laplace scale {scale}: p = {p:.3g} over {bins} bins"


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2)
def test_discrete_gaussian_matches_opendp(sigma2: str) -> None:
    """dipsy's discrete Gaussian and OpenDP's integer Gaussian are one distribution."""
    ours = discrete_gaussian(sigma2, N, Randomness.from_seed(SEED + 10 + GAUSSIAN_SIGMA2.index(sigma2)))
    p, bins = two_sample_pvalue(ours, _opendp_gaussian(sigma2))
    print(f"gaussian sigma2={sigma2}: p={p:.3g} ({bins} bins)")
    assert p > ALPHA, f"dipsy vs OpenDP, discrete Gaussian sigma^2 {sigma2}: p = {p:.3g} over {bins} bins"


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_two_sample_rejects_wrong_laplace_scale(scale: str) -> None:
    """Power: dipsy at WRONG x scale against OpenDP at the true scale must be rejected."""
    wrong = Fraction(scale) * Fraction(str(WRONG))
    ours = discrete_laplace(wrong, N, Randomness.from_seed(SEED + 20 + LAPLACE_SCALES.index(scale)))
    p, bins = two_sample_pvalue(ours, _opendp_laplace(scale))
    print(f"power laplace scale={scale} vs {wrong}: p={p:.3g} ({bins} bins)")
    assert p < ALPHA, f"no power: dipsy at scale {wrong} vs OpenDP at {scale} gave p = {p:.3g}"


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2)
def test_two_sample_rejects_wrong_gaussian_sigma2(sigma2: str) -> None:
    """Power: dipsy at WRONG x sigma^2 against OpenDP at the true sigma^2 must be rejected."""
    wrong = Fraction(sigma2) * Fraction(str(WRONG))
    ours = discrete_gaussian(wrong, N, Randomness.from_seed(SEED + 30 + GAUSSIAN_SIGMA2.index(sigma2)))
    p, bins = two_sample_pvalue(ours, _opendp_gaussian(sigma2))
    print(f"power gaussian sigma2={sigma2} vs {wrong}: p={p:.3g} ({bins} bins)")
    assert p < ALPHA, f"no power: dipsy at sigma^2 {wrong} vs OpenDP at {sigma2} gave p = {p:.3g}"


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_opendp_laplace_follows_exact_pmf(scale: str) -> None:
    """OpenDP's integer Laplace is P[z] ∝ exp(-|z|/scale): it fits the exact pmf, not 0.8x scale's."""
    draws = _opendp_laplace(scale)
    width = math.ceil(60 * float(scale)) + 10  # P[|X| > width] < e^-60
    p, bins = pmf_pvalue(draws, lambda z: discrete_laplace_pmf(z, scale), width)
    wrong = Fraction(scale) * Fraction(str(WRONG))
    p_wrong, _ = pmf_pvalue(draws, lambda z: discrete_laplace_pmf(z, wrong), width)
    print(f"opendp laplace pmf scale={scale}: p={p:.3g} ({bins} bins); at {wrong}: p={p_wrong:.3g}")
    assert p > ALPHA, f"OpenDP's integer Laplace does not fit pmf(scale={scale}): p = {p:.3g}"
    assert p_wrong < ALPHA, f"no power: OpenDP draws fit pmf(scale={wrong}) too, p = {p_wrong:.3g}"


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2)
def test_opendp_gaussian_follows_exact_pmf(sigma2: str) -> None:
    """OpenDP's integer Gaussian with scale σ is P[z] ∝ exp(-z²/(2σ²)): it fits the exact pmf."""
    draws = _opendp_gaussian(sigma2)
    width = math.ceil(15 * math.sqrt(float(sigma2))) + 10  # P[|X| > width] < e^-112
    p, bins = pmf_pvalue(draws, lambda z: discrete_gaussian_pmf(z, sigma2), width)
    wrong = Fraction(sigma2) * Fraction(str(WRONG))
    p_wrong, _ = pmf_pvalue(draws, lambda z: discrete_gaussian_pmf(z, wrong), width)
    print(f"opendp gaussian pmf sigma2={sigma2}: p={p:.3g} ({bins} bins); at {wrong}: p={p_wrong:.3g}")
    assert p > ALPHA, f"OpenDP's integer Gaussian does not fit pmf(sigma2={sigma2}): p = {p:.3g}"
    assert p_wrong < ALPHA, f"no power: OpenDP draws fit pmf(sigma2={wrong}) too, p = {p_wrong:.3g}"
