"""Bowen & Liu's simulation studies (S-003 §4; METHODS.md §2.3), vectorised over repetitions.

Study 1 — binary data: x_i ~ Bernoulli(θ), n records, 9 scenarios (3 n × 3 θ). Methods and what
each releases, with the inference each supports:

- ``Ori``: the original data (Wald interval);
- ``MS``: traditional multiple synthesis without DP, 10 sets from Beta(s + 1/3, n − s + 1/3)
  (Kerman's neutral prior), Reiter's (2003) partial-synthesis rule;
- ``MD``: the beta-binomial / Dirichlet-multinomial synthesizer, 10 sets each ε/10 with
  a = n/(e^(ε/10) − 1) (dipsy's ``beta-binomial``), Reiter's rule;
- ``DP-prior``: one set from Binomial(n, (s + a)/(n + 2a)), a = 1/(e^(ε/n) − 1) (dipsy's ``dp-prior``);
- ``modips-thr`` / ``modips-trunc``: modips (Liu 2016), s* = s + discrete Laplace(10/ε) per set, thresholded to
  [0, n] or drawn from the Laplace truncated to [0, n], then θ* ~ Beta(s* + 1/3, n − s* + 1/3), 10 sets
  (``dipsy.methods.modips.bernoulli_sets``). Truncation is charged honestly in dipsy (its scale is doubled to
  stay ε-DP), so ``modips-trunc`` at ε is Bowen & Liu's truncation at ε/2; ``modips-trunc (paper scale)`` is
  dipsy's truncation at 2ε, i.e. the paper's noise scale 10/ε at ε (then about 2ε-DP, not ε);
- ``LS``: the Laplace sanitizer as the paper releases it: s* = s + discrete Laplace(1/ε) thresholded to
  [0, n], and s* itself is the synthetic count (n public) — what dipsy's ``laplace-sanitizer`` records
  release does by default (``records=replicate``); ``LS-redraw``: n records from Binomial(n, s*/n) on top
  (its ``records=redraw``, a second layer of noise); ``LS-dipsy``: dipsy's default record release under
  add/remove (Δ = 1), which noises both cells (ones and zeros) and releases their noisy total of rows.

Per method and ε: bias and RMSE of the point estimate, coverage and mean width of the 95 % interval,
and the share of usable repetitions; averages are over the usable repetitions. Usable (``--usable``):
``variance`` (default, the paper's: the combined variance exists, > 0 — the rule that reproduces
supplementary Table 1) or ``every-set`` (every set has 0 < θ̂ < 1). Where the paper's values were not
recovered (METHODS.md marks them [NR]) this script chooses: n ∈ {40, 100, 1000}, θ ∈ {0.1, 0.25, 0.5}
(both pinned by supplementary Table 1), ln ε ∈ {−10, −9, …, 4}.

Study 2 — normal data: Ori, MS, modips split and non-split (thresholding), the perturbed histogram
(10 sets) and the smoothed histogram (one set, the least δ); estimands μ and σ², with bounds not
symmetric about μ (the paper's figures 4–5 and supplementary 8–9) and symmetric ones (supplementary
figures 4–7); design choices at ``study2_scenario``.

Study 3 — mixed data (three categorical variables, K = 24 cells, bivariate normal (y1, y2) within
cells, n = 2000): Ori, MS, modips (mixed model, split budget over 6 components, thresholding) and the
np-dips comparator (Laplace sanitizer on the counts + perturbed 2-D histograms per cell); estimands the
paper's: the 6 free marginal probabilities, the 24 cell means of y1 and of y2, σ1², σ2², σ12 and ρ, and
supplementary Table 5's average number of empty cells; design choices at ``study3_scenario`` (the
comment block above ``N3``).

Writes ``study{1,2,3}.json`` and PNGs per study, estimand and metric into ``--out`` (default
``build/bench/bowen_liu``), then the fidelity table's S-003 rows (``benchmarks/fidelity.py``;
``--no-record`` skips it). The paper's scale is 5000 repetitions everywhere (``--reps1 5000 --reps
5000``: hours of CPU); the documented numbers come from ``--reps1 5000 --reps 200`` (about 6 minutes
of CPU), the default (``--reps1 1000 --reps 40``) takes a few minutes.

Usage: python benchmarks/bowen_liu.py [--reps1 1000] [--reps 40] [--usable variance] [--seed 2016] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from fidelity import Row, record  # a sibling script, not a package

from dipsy.inference import combine
from dipsy.methods.dirichlet_multinomial import minimum_alpha
from dipsy.methods.dp_prior import minimum_prior
from dipsy.methods.histograms import least_delta
from dipsy.methods.modips import bernoulli_sets, mixed_sets, normal_sets
from dipsy.methods.modips.models import draw_mixed
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace

OUT = Path(__file__).resolve().parents[1] / "build" / "bench" / "bowen_liu"
NS = (40, 100, 1000)
THETAS = (0.1, 0.25, 0.5)
LOG_EPSILONS = tuple(range(-10, 5))
SETS = 10
#: What makes a repetition usable (its summaries are over the usable ones): ``variance`` (default, the
#: paper's: the interval's variance exists, > 0; it reproduces supplementary Table 1) or ``every-set``
#: (every one of the m sets has 0 < θ̂ < 1; stricter for multiple sets, the same for one set).
USABLE = ("variance", "every-set")
PRIOR = 1 / 3  # Kerman's (2011) neutral Beta prior, as Bowen & Liu cite
Z = 1.959963984540054


def wald(s: np.ndarray, rows) -> dict[str, np.ndarray]:
    """One set: θ̂ = s/rows with variance θ̂(1 − θ̂)/rows and a normal interval; usable when that variance is > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = s / rows
        half = Z * np.sqrt(q * (1 - q) / rows)
    usable = (s > 0) & (s < rows)
    return {"estimate": q, "lower": q - half, "upper": q + half, "usable": usable, "usable_every_set": usable}


def multiple(s_sets: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """m sets (reps, m): per set q = s/n, u = q(1 − q)/n, combined by Reiter's (2003) rule.

    ``usable`` (the paper's rule, :data:`USABLE`): the combined variance T = ū + b/m exists (> 0),
    which fails only when every set has the same θ̂ ∈ {0, 1}; ``usable_every_set`` (the stricter
    alternative): every set has 0 < θ̂ < 1.
    """
    q = s_sets / n
    u = q * (1 - q) / n
    c = combine(q.T, u.T, "reiter2003-partial")
    return {
        "estimate": c.estimate,
        "lower": c.lower,
        "upper": c.upper,
        "usable": np.isfinite(c.variance) & (c.variance > 0),
        "usable_every_set": np.all((s_sets > 0) & (s_sets < n), axis=1),
    }


def study1_scenario(n: int, theta: float, reps: int, rand: Randomness, usable: str = "variance") -> dict[str, list[dict]]:
    rng = rand.numpy
    s = rng.binomial(n, theta, reps)
    names = (
        "Ori",
        "MS",
        "MD",
        "modips-thr",
        "modips-trunc",
        "modips-trunc (paper scale)",
        "DP-prior",
        "LS",
        "LS-redraw",
        "LS-dipsy",
    )
    rows: dict[str, list[dict]] = {name: [] for name in names}
    ms_theta = rng.beta(s[:, None] + PRIOR, n - s[:, None] + PRIOR, (reps, SETS))
    static = {"Ori": wald(s, n), "MS": multiple(rng.binomial(n, ms_theta), n)}
    for log_eps in LOG_EPSILONS:
        eps = math.exp(log_eps)
        results = dict(static)
        a = minimum_alpha(n, eps / SETS)
        md_theta = rng.beta(s[:, None] + a, n - s[:, None] + a, (reps, SETS))
        results["MD"] = multiple(rng.binomial(n, md_theta), n)
        # dipsy's truncation at ε runs at scale 20/ε (ε-DP); at 2ε it runs at the paper's 10/ε (then ~2ε-DP)
        for name, post, budget in (
            ("modips-thr", "threshold", eps),
            ("modips-trunc", "truncation", eps),
            ("modips-trunc (paper scale)", "truncation", 2 * eps),
        ):
            theta_star = bernoulli_sets(s, n, budget, SETS, post, rand, reps)
            results[name] = multiple(rng.binomial(n, theta_star), n)
        prior = minimum_prior(n, eps)
        results["DP-prior"] = wald(rng.binomial(n, (s + prior) / (n + 2 * prior)), n)
        noisy = np.clip(s + discrete_laplace(1 / eps, reps, rand), 0, n)
        results["LS"] = wald(noisy, n)  # the paper's release: the noisy count s* itself, n public
        results["LS-redraw"] = wald(rng.binomial(n, noisy / n), n)  # records=redraw: Binomial(n, s*/n) on top
        # dipsy's default record release (add/remove, Δ = 1): both cells noised, each repeated by its count
        ones = np.maximum(s + discrete_laplace(1 / eps, reps, rand), 0)
        zeros = np.maximum(n - s + discrete_laplace(1 / eps, reps, rand), 0)
        results["LS-dipsy"] = wald(ones, np.maximum(ones + zeros, 1))
        for name, r in results.items():
            rows[name].append(summarise(r, theta, log_eps, usable))
    return rows


# -- study 2: normal data -------------------------------------------------------------------------------------
#
# x_i ~ N(0, σ²) truncated to public bounds, a range of 7.3σ either way (so the bin counts below fit the
# paper's medians): ``asymmetric`` [-3σ, 4.3σ] (the left bound closer to the mean, as in the paper's main
# figures 4–5 and supplementary figures 8–9) and ``symmetric`` [-3.65σ, 3.65σ] (supplementary figures 4–7);
# the paper's exact bounds are [NR]. Bins data-independent, K = 7, 10, 21 for n = 40, 100, 1000 (the
# paper's median Scott bin counts; Scott's rule itself reads the data). Estimands: the mean μ (per set
# q = x̄*, u = s*²/n) and the variance σ² (per set q = s*², u = 2 s*⁴/(n − 1), the normal-theory
# variance of s²; the paper's is [NR]); the truths are the truncated normal's mean and variance.

NS2 = (40, 100, 1000)
SIGMAS = (1.0, 3.0, 5.0)
BINS = {40: 7, 100: 10, 1000: 21}
LOG_EPSILONS2 = tuple(range(-4, 7))
BOUNDS2 = {"asymmetric": (-3.0, 4.3), "symmetric": (-3.65, 3.65)}
METHODS2 = ("Ori", "MS", "modips-split", "modips-nonsplit", "PH", "SH")


def truncated_normal(mu: np.ndarray, sigma2: np.ndarray, lower: float, upper: float, size: tuple, rng) -> np.ndarray:
    from scipy import stats

    sd = np.sqrt(sigma2)
    a, b = (lower - mu) / sd, (upper - mu) / sd
    return stats.truncnorm.rvs(a, b, loc=mu, scale=sd, size=size, random_state=rng)


def from_cells(p: np.ndarray, edges: np.ndarray, n: int, rng) -> np.ndarray:
    """n values per row of ``p`` (..., K): a cell by its probability, then uniform inside it."""
    cdf = np.cumsum(p, axis=-1)
    cdf /= cdf[..., -1:]
    u = rng.random((*p.shape[:-1], n))
    cell = (u[..., None] > cdf[..., None, :-1]).sum(axis=-1)
    lo, width = edges[:-1][cell], np.diff(edges)[cell]
    return lo + rng.random(cell.shape) * width


def normal_estimates(values: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Sets (reps, m, n): μ (q = x̄*, u = s*²/n) and σ² (q = s*², u = 2 s*⁴/(n − 1)), each combined by
    Reiter's rule (one set: its own t interval with n − 1 df for μ, a normal interval for σ²)."""
    n = values.shape[-1]
    xbar, s2 = values.mean(axis=-1), values.var(axis=-1, ddof=1)
    rule = "reiter2003-partial" if xbar.shape[1] > 1 else "single"
    out = {}
    for name, q, u, df in (("mu", xbar, s2 / n, n - 1), ("sigma2", s2, 2 * s2**2 / (n - 1), np.inf)):
        c = combine(q.T, u.T, rule, single_df=df)
        out[name] = {
            "estimate": c.estimate,
            "lower": c.lower,
            "upper": c.upper,
            "usable": np.isfinite(c.variance) & (c.variance > 0),
        }
    return out


def study2_scenario(
    n: int, sigma: float, reps: int, rand: Randomness, bounds: str = "asymmetric"
) -> dict[str, dict[str, list[dict]]]:
    """{estimand: {method: [summarise(...) per ln ε]}} for one (n, σ) and one choice of bounds."""
    from scipy import stats

    rng = rand.numpy
    lo, hi = BOUNDS2[bounds]
    lower, upper = lo * sigma, hi * sigma
    x = truncated_normal(np.zeros(()), np.full((), sigma**2), lower, upper, (reps, n), rng)
    truths = {"mu": float(stats.truncnorm.mean(lo, hi, scale=sigma)), "sigma2": float(stats.truncnorm.var(lo, hi, scale=sigma))}
    xbar, s2 = x.mean(axis=1), x.var(axis=1, ddof=1)
    edges = np.linspace(lower, upper, BINS[n] + 1)
    counts = np.stack(
        [np.bincount(np.clip(np.searchsorted(edges[1:-1], row, side="right"), 0, BINS[n] - 1), minlength=BINS[n]) for row in x]
    )
    sigma2_ms = (n - 1) * s2[:, None] / rng.chisquare(n - 1, (reps, SETS))
    mu_ms = rng.normal(xbar[:, None], np.sqrt(sigma2_ms / n))
    static = {
        "Ori": normal_estimates(x[:, None, :]),
        "MS": normal_estimates(rng.normal(mu_ms[..., None], np.sqrt(sigma2_ms)[..., None], (reps, SETS, n))),
    }
    rows: dict[str, dict[str, list[dict]]] = {e: {k: [] for k in METHODS2} for e in truths}
    for log_eps in LOG_EPSILONS2:
        eps = math.exp(log_eps)
        results = dict(static)
        for name, budget in (("modips-split", "split"), ("modips-nonsplit", "non-split")):
            mu, sig2 = normal_sets(xbar, s2, n, lower, upper, eps, SETS, budget, "threshold", rand, reps)
            sig2 = np.maximum(sig2, 1e-12 * sigma**2)
            results[name] = normal_estimates(truncated_normal(mu[..., None], sig2[..., None], lower, upper, (reps, SETS, n), rng))
        noisy = counts[:, None, :] + discrete_laplace(SETS / eps, (reps, SETS, BINS[n]), rand)
        noisy = np.maximum(noisy, 0).astype(float)
        noisy[noisy.sum(axis=-1) == 0] = 1.0  # an all-zero table: uniform over the bins
        results["PH"] = normal_estimates(from_cells(noisy, edges, n, rng))
        share = np.diff(edges) / (upper - lower)
        delta = least_delta(n, eps, float(share.min()))
        p = (1 - delta) * counts / n + delta * share
        results["SH"] = normal_estimates(from_cells(p[:, None, :], edges, n, rng))
        for name, by_estimand in results.items():
            for e, r in by_estimand.items():
                rows[e][name].append(summarise(r, truths[e], log_eps))
    return rows


# -- study 3: mixed data ----------------------------------------------------------------------------------------
#
# Three categorical variables A, B, C with 2, 3, 4 levels: K = 24 cells (C order, A slowest). Cell
# probabilities π_k = 0.007 + 0.069 t_k^γ, t_k = 0, 1/23, …, 1, with γ solved so Σ π = 1, then shuffled
# over the cells (seed 3): π spans exactly [0.007, 0.076] (the paper's range; its Table 3 values [NR]).
# Within a cell (y1, y2) ~ N2(μ_k, Σ), σ1 = 1, σ2 = 2, ρ = 0.5, μ_k1 ~ U(-2, 2), μ_k2 ~ U(-4, 4) (seed 3,
# fixed), truncated to the public box [-6, 6] × [-12, 12] (at least 4σ from every cell mean, so the
# truncated truths differ from μ_k1 and ρ by < 2e-4σ; the untruncated values are used as the truth).
# n = 2000 (the paper's n is [NR]); every method releases n records per set.
#
# Estimands (per set q, u; Reiter's rule over sets; Ori is one set), the paper's (S-003 §4.3):
# - the 6 free marginal probabilities P(A = a1), P(B = b1), P(B = b2), P(C = c1), P(C = c2), P(C = c3):
#   q = p̂, u = p̂(1 − p̂)/n;
# - the mean of y1 and of y2 in each of the 24 cells: q = ȳ_kj, u = s²_kj/n_k (t with n_k − 1 df for Ori;
#   a set is unusable if n_k < 2);
# - the pooled within-cell variances σ1², σ2² and covariance σ12, S = W/(n − K): u(S_jj) = (m4_j − S_jj²)/(n − K)
#   and u(S_12) = (m22 − S_12²)/(n − K), m4_j = Σ d_j⁴/n, m22 = Σ d1² d2²/n (d the within-cell deviations):
#   the paper's forms σ⁴(2 + κ)/n and the covariance's with ρ, written with the sample moments (κ the excess
#   kurtosis; their exact printed forms are lost);
# - ρ, the pooled within-cell correlation r = W12/√(W11 W22): combined on Fisher's z = atanh r with
#   u = 1/(n − K − 2) (W has n − K degrees of freedom; the 1/(n − 3) of a plain correlation with n − 1
#   replaced by n − K), the estimate and interval mapped back by tanh;
# - supplementary Table 5: the average number of empty cells (of 24) in a synthetic set.
# Truths: π's marginals, μ_k and Σ untruncated (the box is ≥ 4σ from every cell mean: the truncated
# moments differ by < 1e-3 relative).
# Methods:
# - Ori; MS: π ~ Dirichlet(n_k + 1/3), Σ ~ Inv-Wishart(n − K, W), μ_k | Σ ~ N(ȳ_k, Σ/n_k) (the modips
#   posterior at the exact statistics), 10 sets;
# - modips (split over the 6 components, thresholding; ``mixed_sets``): ε/10 per set, ε/60 per component,
#   sensitivities derived in dipsy.methods.modips.models (cell *sums*, not means: the (c1 − c0)/n_k of a
#   cell mean is not a global sensitivity), 10 sets;
# - PH (np-dips): the Laplace sanitizer on the 24 counts plus perturbed 2-D histograms of (y1, y2) in each
#   cell, ε/10 per set halved between the two queries, each a histogram of Δ = 1 (add/remove, as study 2's
#   PH): discrete Laplace of scale 20/ε on each count and each of the 24 × 36 bins; bins data-independent,
#   6 × 6 per cell over the box (square in units of the box; Bowen & Liu's Scott-rule bins, median 16–49
#   per cell, read the data). Negative counts set to 0; n cells drawn from the noisy counts, then a bin
#   from the cell's noisy histogram (uniform if all zero) and a uniform point in it. 10 sets.
# Records of MS and modips: N2(μ*_k, Σ*) redrawn until in the box (at most 50 rounds, then clipped).

N3 = 2000
LEVELS = (2, 3, 4)
K3 = math.prod(LEVELS)
SIG3 = (1.0, 2.0)
RHO = 0.5
LOWER3, UPPER3 = np.array([-6.0, -12.0]), np.array([6.0, 12.0])
HBINS = 6
LOG_EPSILONS3 = tuple(range(-1, 7))


def study3_design(seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fixed cell probabilities ``(K,)``, cell means ``(K, 2)`` and common ``Σ``."""
    from scipy.optimize import brentq

    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, K3)
    gamma = brentq(lambda g: np.sum(0.007 + 0.069 * t**g) - 1, 0.1, 10)
    pi = rng.permutation(0.007 + 0.069 * t**gamma)
    pi /= pi.sum()
    mu = np.column_stack([rng.uniform(-2, 2, K3), rng.uniform(-4, 4, K3)])
    sigma = np.array([[SIG3[0] ** 2, RHO * SIG3[0] * SIG3[1]], [RHO * SIG3[0] * SIG3[1], SIG3[1] ** 2]])
    return pi, mu, sigma


def mvn_records(cells: np.ndarray, mu: np.ndarray, sigma: np.ndarray, rng) -> np.ndarray:
    """Records ``(R, n, 2)``: cell ``cells[r, i]`` of set ``r``, ``N2(mu[r, cell], sigma[r])`` redrawn into the box."""
    chol = np.linalg.cholesky(np.broadcast_to(sigma, (cells.shape[0], 2, 2)))
    centre = np.take_along_axis(np.broadcast_to(mu, (cells.shape[0], *mu.shape[-2:])), cells[..., None], axis=1)
    y = centre + np.einsum("rnj,rij->rni", rng.standard_normal(cells.shape + (2,)), chol)
    for _ in range(50):
        bad = np.nonzero(np.any((y < LOWER3) | (y > UPPER3), axis=-1))
        if not bad[0].size:
            break
        y[bad] = centre[bad] + np.einsum("nj,nij->ni", rng.standard_normal((bad[0].size, 2)), chol[bad[0]])
    return np.clip(y, LOWER3, UPPER3)


def draw_cells(p: np.ndarray, n: int, rng) -> np.ndarray:
    """``(R, n)`` cell labels: cell counts ``Multinomial(n, p_r)`` per row of ``p`` ``(R, K)``."""
    counts = rng.multinomial(n, p / p.sum(axis=-1, keepdims=True))
    return np.repeat(np.tile(np.arange(p.shape[-1]), len(p)), counts.ravel()).reshape(len(p), n)


def histogram_records(cells: np.ndarray, hist: np.ndarray, rng) -> np.ndarray:
    """Records ``(R, n, 2)`` from per-set, per-cell bin weights ``hist`` ``(R, K, B²)``: a bin, then uniform in it."""
    r, n = cells.shape
    w = hist.reshape(r * K3, -1).astype(float)
    w[w.sum(axis=1) == 0] = 1.0
    cdf = np.cumsum(w, axis=1) / w.sum(axis=1, keepdims=True)
    group = (np.arange(r)[:, None] * K3 + cells).ravel()
    flat = (cdf + np.arange(r * K3)[:, None]).ravel()
    u = np.minimum(rng.random(group.size), 1 - 1e-12)
    b = np.searchsorted(flat, group + u, side="right") - group * cdf.shape[1]
    b = np.minimum(b, cdf.shape[1] - 1)
    edges = [np.linspace(LOWER3[j], UPPER3[j], HBINS + 1) for j in range(2)]
    ij = np.unravel_index(b, (HBINS, HBINS))
    y = np.column_stack([edges[j][ij[j]] + rng.random(b.size) * (edges[j][1] - edges[j][0]) for j in range(2)])
    return y.reshape(r, n, 2)


def cell_statistics(cells: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """Per set (rows of ``cells`` ``(R, n)``): counts ``(R, K)``, centred sums of y1, y2 ``(R, K)``, W11, W22, W12 ``(R,)``
    (the first six: modips' statistics), then the per-cell sums of squares of y1, y2 ``(R, K)`` and the
    fourth-moment sums Σd1⁴, Σd2⁴, Σd1²d2² ``(R,)``."""
    r = cells.shape[0]
    g = (np.arange(r)[:, None] * K3 + cells).ravel()
    yc = (y - (LOWER3 + UPPER3) / 2).reshape(-1, 2)
    counts = np.bincount(g, minlength=r * K3)
    sums = [np.bincount(g, yc[:, j], r * K3) for j in range(2)]
    means = [np.divide(s, counts, out=np.zeros_like(s), where=counts > 0) for s in sums]
    dev = [yc[:, j] - means[j][g] for j in range(2)]
    w = [np.bincount(g // K3, a * b, r) for a, b in ((dev[0], dev[0]), (dev[1], dev[1]), (dev[0], dev[1]))]
    ss = [np.bincount(g, dev[j] ** 2, r * K3).reshape(r, K3) for j in range(2)]  # per-cell sums of squares
    fourth = [np.bincount(g // K3, a, r) for a in (dev[0] ** 4, dev[1] ** 4, dev[0] ** 2 * dev[1] ** 2)]
    return [counts.reshape(r, K3), sums[0].reshape(r, K3), sums[1].reshape(r, K3), *w, *ss, *fourth]


MARGINALS = (
    ("P(A=a1)", (2, 3), 0),
    ("P(B=b1)", (1, 3), 0),
    ("P(B=b2)", (1, 3), 1),
    ("P(C=c1)", (1, 2), 0),
    ("P(C=c2)", (1, 2), 1),
    ("P(C=c3)", (1, 2), 2),
)
COVARIANCE = ("sigma1^2", "sigma2^2", "sigma12")


def study3_estimates(stats: list[np.ndarray], reps: int) -> dict[str, dict[str, np.ndarray]]:
    """Every estimand's combined inference from the per-set statistics of ``reps × m`` sets."""
    counts, sums1, sums2, w11, w22, w12, ss1, ss2, f11, f22, f12 = stats
    m = counts.shape[0] // reps
    n = int(counts[0].sum())

    def pool(q, u, df=None, usable=None):
        q, u = q.reshape(reps, m), u.reshape(reps, m)
        ok = np.all(np.isfinite(q) & np.isfinite(u), axis=1) if usable is None else usable.reshape(reps, m).all(axis=1)
        if m == 1 and df is not None:  # one set with its own t reference (df per repetition)
            from scipy import stats as st

            half = st.t.ppf(0.975, np.maximum(df, 1)) * np.sqrt(u[:, 0])
            return {"estimate": q[:, 0], "lower": q[:, 0] - half, "upper": q[:, 0] + half, "usable": ok}
        rule = "reiter2003-partial" if m > 1 else "single"
        with np.errstate(divide="ignore", invalid="ignore"):
            c = combine(q.T, u.T, rule)
        return {
            "estimate": c.estimate,
            "lower": c.lower,
            "upper": c.upper,
            "usable": ok & np.isfinite(c.variance) & (c.variance > 0),
        }

    out = {}
    shape = counts.reshape(-1, *LEVELS)
    for name, axes, level in MARGINALS:
        p = shape.sum(axis=axes)[:, level] / n
        out[name] = pool(p, p * (1 - p) / n, usable=(p > 0) & (p < 1))
    for j, (sums, ss) in enumerate(((sums1, ss1), (sums2, ss2))):
        centre = (LOWER3[j] + UPPER3[j]) / 2
        for k in range(K3):
            nk = counts[:, k].astype(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                q = centre + sums[:, k] / nk
                u = ss[:, k] / (nk - 1) / nk
            out[f"mean y{j + 1}, cell {k}"] = pool(q, u, df=nk - 1, usable=nk >= 2)
    dof = n - K3
    for name, w, f in zip(COVARIANCE, (w11, w22, w12), (f11, f22, f12)):
        q = w / dof
        out[name] = pool(q, np.maximum(f / n - q**2, 0) / dof)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.arctanh(np.clip(w12 / np.sqrt(w11 * w22), -1 + 1e-12, 1 - 1e-12))
    r = pool(z, np.full(z.shape, 1 / (dof - 2)))
    out["rho"] = {k: (np.tanh(v) if k != "usable" else v) for k, v in r.items()}
    return out


def empty_cells(counts: np.ndarray, reps: int, log_eps: float) -> dict:
    """Supplementary Table 5: the average number of empty cells (of K) in a set, with its standard error over repetitions."""
    per_rep = (counts == 0).sum(axis=1).reshape(reps, -1).mean(axis=1)
    return {"log_epsilon": log_eps, "empty_cells": float(per_rep.mean()), "se": float(per_rep.std(ddof=1) / math.sqrt(reps))}


def study3_scenario(reps: int, rand: Randomness) -> tuple[dict[str, dict[str, list[dict]]], dict[str, list[dict]]]:
    """({estimand: {method: [summarise(...) per ln ε]}}, {method: [empty_cells(...) per ln ε]}) for study 3."""
    rng = rand.numpy
    pi, mu, sigma = study3_design()
    grid = pi.reshape(LEVELS)
    truths = {name: float(grid.sum(axis=tuple(a - 1 for a in axes)).take(level)) for name, axes, level in MARGINALS}
    truths |= {f"mean y{j + 1}, cell {k}": float(mu[k, j]) for j in range(2) for k in range(K3)}
    truths |= dict(zip(COVARIANCE, (sigma[0, 0], sigma[1, 1], sigma[0, 1]))) | {"rho": RHO}
    cells = draw_cells(np.tile(pi, (reps, 1)), N3, rng)
    y = mvn_records(cells, np.broadcast_to(mu, (reps, K3, 2)), sigma, rng)
    ori = cell_statistics(cells, y)
    model_stats = ori[:6]
    h = np.searchsorted(np.linspace(LOWER3[0], UPPER3[0], HBINS + 1)[1:-1], y[..., 0], side="right") * HBINS
    h = h + np.searchsorted(np.linspace(LOWER3[1], UPPER3[1], HBINS + 1)[1:-1], y[..., 1], side="right")
    hist = np.zeros((reps, K3 * HBINS * HBINS), np.int64)
    np.add.at(hist, (np.repeat(np.arange(reps), N3), (cells * HBINS * HBINS + h).ravel()), 1)
    del y

    def from_posterior(p_star, mu_star, sigma_star):
        c = draw_cells(p_star.reshape(-1, K3), N3, rng)
        return cell_statistics(c, mvn_records(c, mu_star.reshape(-1, K3, 2), sigma_star.reshape(-1, 2, 2), rng))

    exact = [np.asarray(a)[:, None, ...].repeat(SETS, axis=1) for a in model_stats]
    ms = from_posterior(*draw_mixed(exact, N3, LOWER3, UPPER3, PRIOR, rng))
    static = {"Ori": (study3_estimates(ori, reps), ori[0]), "MS": (study3_estimates(ms, reps), ms[0])}
    methods = ("Ori", "MS", "modips", "PH")
    rows: dict[str, dict[str, list[dict]]] = {e: {k: [] for k in methods} for e in truths}
    empty: dict[str, list[dict]] = {k: [] for k in methods}
    for log_eps in LOG_EPSILONS3:
        eps = math.exp(log_eps)
        results = dict(static)
        st = from_posterior(*mixed_sets(model_stats, N3, LOWER3, UPPER3, eps, SETS, "split", "threshold", rand))
        results["modips"] = (study3_estimates(st, reps), st[0])
        scale = 2 * SETS / eps
        noisy_counts = (
            np.maximum(ori[0][:, None, :] + discrete_laplace(scale, (reps, SETS, K3), rand), 0).reshape(-1, K3).astype(float)
        )
        noisy_counts[noisy_counts.sum(axis=1) == 0] = 1.0
        noisy_hist = np.maximum(hist[:, None, :] + discrete_laplace(scale, (reps, SETS, hist.shape[1]), rand), 0)
        c = draw_cells(noisy_counts, N3, rng)
        st = cell_statistics(c, histogram_records(c, noisy_hist.reshape(reps * SETS, K3, -1), rng))
        results["PH"] = (study3_estimates(st, reps), st[0])
        for name, (by_estimand, counts) in results.items():
            for e, r in by_estimand.items():
                rows[e][name].append(summarise(r, truths[e], log_eps))
            empty[name].append(empty_cells(counts, reps, log_eps))
    return rows, empty


def cell_summary(results3: dict[str, dict[str, list[dict]]], j: int, how=np.nanmedian) -> dict[str, list[dict]]:
    """The 24 cell means of y_j summarised per method and ε by ``how`` over cells (the paper's box plots)."""
    keys = [f"mean y{j}, cell {k}" for k in range(K3)]
    out = {}
    for method in results3[keys[0]]:
        series = [results3[k][method] for k in keys]
        out[method] = [
            {
                "log_epsilon": series[0][i]["log_epsilon"],
                **{m: float(how([s[i][m] for s in series])) for m in ("usable", "bias", "rmse", "coverage", "width")},
            }
            for i in range(len(series[0]))
        ]
    return out


def summarise(r: dict[str, np.ndarray], truth: float, log_eps: float, usable: str = "variance") -> dict:
    """Bias, RMSE, coverage and width over the usable repetitions, by :data:`USABLE` rule ``usable``;
    ``usable`` and ``usable_every_set`` are the shares of usable repetitions by either rule, ``sd`` the
    standard deviation of the estimate (for standard errors: bias ± sd/√n_usable)."""
    every = r.get("usable_every_set", r["usable"])
    ok = r["usable"] if usable == "variance" else every
    est, lo, hi = r["estimate"][ok], r["lower"][ok], r["upper"][ok]
    nan = float("nan")
    return {
        "log_epsilon": log_eps,
        "usable": float(r["usable"].mean()),
        "usable_every_set": float(every.mean()),
        "n_usable": int(ok.sum()),
        "bias": float(np.mean(est - truth)) if ok.any() else nan,
        "sd": float(np.std(est, ddof=1)) if ok.sum() > 1 else nan,
        "rmse": float(np.sqrt(np.mean((est - truth) ** 2))) if ok.any() else nan,
        "coverage": float(np.mean((lo <= truth) & (truth <= hi))) if ok.any() else nan,
        "width": float(np.mean(hi - lo)) if ok.any() else nan,
    }


def plot(
    results: dict,
    metric: str,
    path: Path,
    rows=NS,
    cols=THETAS,
    key="n={n}, theta={c}",
    label="θ",
    title="Study 1 (binary)",
    figsize=(11, 8),
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), len(cols), figsize=figsize, sharex=True, constrained_layout=True, squeeze=False)
    for i, n in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i, j]
            for name, series in results[key.format(n=n, c=c)].items():
                ax.plot([r["log_epsilon"] for r in series], [r[metric] for r in series], marker=".", label=name)
            if metric == "coverage":
                ax.axhline(0.95, color="grey", lw=0.8, ls="--")
            ax.set_title(f"n = {n}, {label} = {c}" if label else f"n = {n}: {c}", fontsize=9)
            if i == len(rows) - 1:
                ax.set_xlabel("ln ε")
            if j == 0:
                ax.set_ylabel(metric)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"{title}: {metric} by ln ε")
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- the fidelity table ---------------------------------------------------------------------------------------
#
# The paper's printed numbers (supplementary Table 1 of S-003; its rows are θ = 0.1, 0.25, 0.5, each with
# n = 40, 100, 1000; the modips table is cut off in the source after its fourth row). Every value dipsy
# reports below is computed in this run.

TABLE1_LS = (
    (0.0008, 0.0018, 0.0074, 0.0190, 0.0448, 0.1140),
    (0.0016, 0.0074, 0.0140, 0.0446, 0.1144, 0.2672),
    (0.0240, 0.0548, 0.1480, 0.3160, 0.5942, 0.8078),
    (0.0008, 0.0020, 0.0078, 0.0174, 0.0472, 0.1214),
    (0.0020, 0.0076, 0.0158, 0.0458, 0.1120, 0.2748),
    (0.0238, 0.0568, 0.1510, 0.3310, 0.6496, 0.8990),
    (0.0012, 0.0024, 0.0074, 0.0162, 0.0464, 0.1336),
    (0.0024, 0.0070, 0.0190, 0.0458, 0.1152, 0.2868),
    (0.0240, 0.0584, 0.1554, 0.3558, 0.7058, 0.9658),
)
TABLE1_LOG_EPS = (-10, -9, -8, -7, -6, -5)
#: (modips-thresholding at ln ε = -10, -9; modips-truncation; MD; DP-prior) for the first rows; row 4 only has the first pair.
TABLE1_MULTI = (
    ((0.9996, 0.9994), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)),
    ((1.0, 0.9996), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)),
    ((0.9998, 0.9994), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)),
    ((0.9998, 1.0),),
)
PAPER_REPS = 5000
TITLE = "Bowen & Liu, Differentially private data synthesis methods (arXiv 1602.01063)"
SCENARIOS1 = [(n, theta) for theta in THETAS for n in NS]  # the table's row order


def _verdict(hits: int, total: int) -> str:
    return "agrees" if hits == total else "partly" if hits else "differs"


def _at(series: list[dict], log_eps: float) -> dict:
    return next(r for r in series if r["log_epsilon"] == log_eps)


def _cov_se(r: dict) -> float:
    return math.sqrt(max(r["coverage"] * (1 - r["coverage"]), 1e-12) / max(r["n_usable"], 1))


def _share_se(p_paper: float, p_dipsy: float, reps: int) -> float:
    """The SE of the difference of two simulated shares, under the hypothesis that they estimate the same one (pooled)."""
    p = (p_paper * PAPER_REPS + p_dipsy * reps) / (PAPER_REPS + reps)
    return math.sqrt(p * (1 - p) * (1 / PAPER_REPS + 1 / reps))


def usable_probability(n: int, theta: float, eps: float) -> float:
    """Exactly P(0 < s + e < n), s ~ Binomial(n, θ), e ~ discrete Laplace(1/ε): the Laplace sanitizer's usable share."""
    from scipy import stats

    s = np.arange(n + 1)
    r = math.exp(-eps)

    def below(k):  # P(e <= k) of the discrete Laplace with P(z) ∝ r^|z|
        k = np.asarray(k, float)
        return np.where(k < 0, r ** (-k) / (1 + r), 1 - r ** (k + 1) / (1 + r))

    inside = below(n - s - 1) - below(-s)
    return float(np.sum(stats.binom.pmf(s, n, theta) * inside))


def fidelity_rows(res1: dict, res2: dict, res3: dict, empty3: dict, args) -> list[Row]:
    from scipy import stats
    from scipy.optimize import brentq

    cmd = f"nice -n 10 .venv/bin/python benchmarks/bowen_liu.py --reps1 {args.reps1} --reps {args.reps} --seed {args.seed}"
    r1 = args.reps1
    key = "n={}, theta={}".format
    top = LOG_EPSILONS[-1]
    rows: list[Row] = []

    # study 1: the Laplace sanitizer's coverage at large ε
    hits, covs, oris = 0, [], []
    for n, theta in SCENARIOS1:
        ls, ori = _at(res1[key(n, theta)]["LS"], top), _at(res1[key(n, theta)]["Ori"], top)
        covs.append(ls["coverage"]), oris.append(ori["coverage"])
        hits += abs(ls["coverage"] - ori["coverage"]) <= 3 * math.hypot(_cov_se(ls), _cov_se(ori))
    rows.append(
        Row(
            "Study 1 (Fig. 3, §4.1): the Laplace sanitizer's CP approaches the nominal 0.95 (that of MS and Ori) as ε grows",
            "→ 0.95",
            f"CP at ln ε = {top}: {min(covs):.3f}–{max(covs):.3f} over the 9 scenarios (Ori's {min(oris):.3f}–{max(oris):.3f}); "
            f"within 3 SE of Ori's in {hits} of 9",
            _verdict(hits, 9),
            "|CP(LS) − CP(Ori)| ≤ 3 SE per scenario at the largest ε",
            "The benchmark's LS releases the thresholded noisy count s* itself, as the paper does (the default record release of "
            "laplace-sanitizer now does the same: records=replicate). Where Ori's Wald interval under-covers (n = 40, θ = 0.1), so does LS.",
            cmd,
        )
    )
    redraw = [_at(res1[key(n, theta)]["LS-redraw"], top) for n, theta in SCENARIOS1 if n == 1000]
    expected = 2 * stats.norm.cdf(Z / math.sqrt(2)) - 1
    rows.append(
        Row(
            "Departure (option): laplace-sanitizer --option records=redraw draws n records from Binomial(n, s*/n) on top of s*",
            "releases s* (CP → 0.95)",
            f"CP at ln ε = {top}, n = 1000: "
            + ", ".join(f"{r['coverage']:.3f} ± {_cov_se(r):.3f}" for r in redraw)
            + f" (θ = {', '.join(map(str, THETAS))}); the doubled variance predicts 2Φ(1.96/√2) − 1 = {expected:.3f}",
            "differs",
            "CP against 0.95, SE from the repetitions",
            "What: a second, multinomial layer of noise keeps the row count at n. Why offered: a release of exactly n rows. Cost: the "
            "variance of a count doubles at large ε and a Wald interval under-covers. The paper's behaviour is the default, records=replicate.",
            cmd,
        )
    )
    dip = [_at(res1[key(n, theta)]["LS-dipsy"], top) for n, theta in SCENARIOS1]
    dip_use = [_at(res1[key(n, theta)]["LS-dipsy"], -5)["usable"] for n, theta in SCENARIOS1]
    rows.append(
        Row(
            "Departure: the paper's Laplace sanitizer noises the count of ones s only, with n public (§4.1)",
            "s* = s + Lap(1/ε), n public",
            f"laplace-sanitizer (add/remove, records=replicate) noises both cells: CP at ln ε = {top} "
            f"{min(r['coverage'] for r in dip):.3f}–{max(r['coverage'] for r in dip):.3f}; usable at ln ε = −5 "
            f"{min(dip_use):.3f}–{max(dip_use):.3f} (paper's form: see the Table 1 rows)",
            "differs",
            "the release's form",
            "What: dipsy's sanitizer adds noise to every cell of the table (here n − s too) and does not treat n as known; its noise is the "
            "exact discrete Laplace (Canonne, Kamath & Steinke 2020), the paper's the continuous one. Why: a table of any width, and "
            "floating-point safety (Mironov 2012). The benchmark's LS column is the paper's form (noise on s, n public) with dipsy's sampler; "
            "LS-dipsy is dipsy's release. For the paper's form with dipsy: the noisy count of a one-column release under substitution.",
            cmd,
        )
    )

    # supplementary Table 1, Laplace sanitizer
    miss, total = [], 0
    for (n, theta), paper in zip(SCENARIOS1, TABLE1_LS):
        for le, p in zip(TABLE1_LOG_EPS, paper):
            d = _at(res1[key(n, theta)]["LS"], le)["usable"]
            total += 1
            if abs(d - p) > 3 * max(_share_se(p, d, r1), 1 / PAPER_REPS):
                miss.append(f"n = {n}, θ = {theta}, ln ε = {le}: paper {p:.4f}, dipsy {d:.4f}")
    rows.append(
        Row(
            "Supp. Table 1: share of usable repeats of the Laplace sanitizer, 9 scenarios × ln ε = −10…−5 (usable: 0 < s* < n)",
            "54 printed values",
            f"{total - len(miss)} of {total} within 3 SE" + (f"; off: {'; '.join(miss)}" if miss else ""),
            _verdict(total - len(miss), total),
            "|dipsy − paper| ≤ 3 SE (binomial SE of both simulations; the paper's at 5000 repetitions)",
            "The table does not print n and θ; its rows fit n = 40, 100, 1000 within θ = 0.1, 0.25, 0.5 (METHODS.md §2.3).",
            cmd,
        )
    )
    paper = TABLE1_LS[2][4:]
    dip6 = [_at(res1[key(1000, 0.1)]["LS"], le)["usable"] for le in (-6, -5)]
    exact = [usable_probability(1000, 0.1, math.exp(le)) for le in (-6, -5)]
    fits = [
        brentq(lambda t, le=le, p=p: usable_probability(1000, t, math.exp(le)) - p, 0.01, 0.5) for le, p in zip((-6, -5), paper)
    ]
    rows.append(
        Row(
            "Supp. Table 1, θ = 0.1, n = 1000 at ln ε = −6, −5",
            f"{paper[0]:.4f} / {paper[1]:.4f}",
            f"{dip6[0]:.4f} / {dip6[1]:.4f} (exact at θ = 0.1: {exact[0]:.4f} / {exact[1]:.4f})",
            "differs",
            "3 SE, and the exact usable probability",
            f"The paper's two values fit θ = {fits[0]:.3f} and {fits[1]:.3f} (solving the exact usable probability for θ), not 0.1: the row "
            f"was probably simulated at another θ or n, which the source does not print; {total - len(miss)} of the {total} cells agree.",
            cmd,
        )
    )

    # supplementary Table 1, the multiple-set methods; the usability rule
    names = ("modips-thr", "modips-trunc", "MD", "DP-prior")
    labels = ("modips-thresholding", "modips-truncation", "MD", "DP-prior")
    for j, (name, label) in enumerate(zip(names, labels)):
        cells, hits, text = 0, 0, []
        for (n, theta), printed in zip(SCENARIOS1, TABLE1_MULTI):
            if j >= len(printed):
                continue
            for le, p in zip((-10, -9), printed[j]):
                d = _at(res1[key(n, theta)][name], le)["usable"]
                cells += 1
                hits += abs(d - p) <= 3 * max(_share_se(p, d, r1), 1 / PAPER_REPS)
                text.append(f"{d:.4f}")
        paper_text = " ".join(f"{p:.4f}" for printed in TABLE1_MULTI if j < len(printed) for p in printed[j])
        note = "usable: the combined variance exists (T > 0), the paper's rule (default)."
        if name == "modips-trunc":
            alt = [
                f"{_at(res1[key(n, theta)]['modips-trunc (paper scale)'], le)['usable']:.4f}"
                for (n, theta), printed in zip(SCENARIOS1, TABLE1_MULTI)
                if j < len(printed)
                for le in (-10, -9)
            ]
            note += (
                " dipsy's truncation runs at twice the paper's noise scale (its departure row); at the paper's scale: "
                + " ".join(alt)
            )
        rows.append(
            Row(
                f"Supp. Table 1: usable share of {label}, ln ε = −10, −9 (rows 1–{4 if j == 0 else 3})",
                paper_text,
                " ".join(text),
                _verdict(hits, cells),
                "|dipsy − paper| ≤ 3 SE",
                note,
                cmd,
            )
        )
    strict = [_at(res1[key(n, theta)]["modips-thr"], -10)["usable_every_set"] for n, theta in SCENARIOS1[:3]]
    strict_t = [_at(res1[key(n, theta)]["modips-trunc"], -10)["usable_every_set"] for n, theta in SCENARIOS1[:3]]
    ms_loss = {s: 1 - res1[s]["MS"][0]["usable_every_set"] for s in res1}
    worst = max(ms_loss, key=ms_loss.get)
    rows.append(
        Row(
            "Alternative rule (--usable every-set): a repeat is usable when every set has 0 < θ̂ < 1",
            "modips-thr 0.9996 0.9994 …",
            f"modips-thr at ln ε = −10 (rows 1–3): {' '.join(f'{x:.4f}' for x in strict)}; modips-trunc "
            f"{' '.join(f'{x:.4f}' for x in strict_t)}; it discards {ms_loss[worst]:.0%} of MS repeats at {worst}",
            "differs",
            "against supp. Table 1",
            "The paper does not print its rule; only 'the combined variance exists' reproduces Table 1, so it is the benchmark's default "
            "(--usable variance). every-set, dipsy's former rule, also computes the summaries on a selected subset.",
            cmd,
        )
    )

    # modips-truncation against thresholding, and at twice the scale
    ranges = (("ln ε ≤ −5", lambda le: le <= -5), ("−4 ≤ ln ε ≤ 0", lambda le: -4 <= le <= 0), ("ln ε > 0", lambda le: le > 0))
    bias_wins = bias_cells = 0
    by_range = []
    for label, inside in ranges:
        wins = cells = 0
        for n, theta in SCENARIOS1:
            for le in (x for x in LOG_EPSILONS if inside(x)):
                thr = _at(res1[key(n, theta)]["modips-thr"], le)
                tp = _at(res1[key(n, theta)]["modips-trunc (paper scale)"], le)
                cells += 1
                wins += tp["rmse"] > thr["rmse"]
                bias_cells += 1
                bias_wins += abs(tp["bias"]) > abs(thr["bias"])
        by_range.append((label, wins, cells))
    rows.append(
        Row(
            "Study 1 (§4.1, Fig. 2): modips-truncation is more biased than modips-thresholding ('as expected'; Liu 2016a)",
            "truncation more biased",
            f"at the paper's noise scale: |bias| larger in {bias_wins} of {bias_cells} (scenario, ε) cells",
            "agrees" if bias_wins > bias_cells / 2 else "differs",
            "sign of the |bias| difference, majority of cells",
            "Plotted as 'modips-trunc (paper scale)' (dipsy's truncation at budget 2ε, i.e. noise scale 10/ε as the paper's).",
            cmd,
        )
    )
    rows.append(
        Row(
            "Study 1 (§4.1, Fig. 2): modips-truncation has slightly larger RMSE than modips-thresholding",
            "truncation > thresholding",
            "at the paper's noise scale, RMSE larger in " + "; ".join(f"{w} of {c} cells at {label}" for label, w, c in by_range),
            "agrees"
            if all(w > c / 2 for _, w, c in by_range)
            else "partly"
            if any(w > c / 2 for _, w, c in by_range)
            else "differs",
            "sign of the RMSE difference, majority of cells, by range of ε",
            "At the smallest ε thresholding puts s* at 0 or n (θ̂ near 0 or 1) while truncation spreads it over [0, n]: a smaller RMSE "
            "for the same bias. The paper's statement names the (θ, n) it holds for, which the source lost.",
            cmd,
        )
    )
    wins_dipsy = cells = 0
    ratios = []
    for n, theta in SCENARIOS1:
        for le in (x for x in LOG_EPSILONS if x <= 0):
            thr = _at(res1[key(n, theta)]["modips-thr"], le)["rmse"]
            tp = _at(res1[key(n, theta)]["modips-trunc (paper scale)"], le)["rmse"]
            td = _at(res1[key(n, theta)]["modips-trunc"], le)["rmse"]
            cells += 1
            wins_dipsy += td > thr
            ratios.append(td / tp)
    ratios_mid = [
        _at(res1[key(n, theta)]["modips-trunc"], le)["rmse"] / _at(res1[key(n, theta)]["modips-trunc (paper scale)"], le)["rmse"]
        for n, theta in SCENARIOS1
        for le in (-2, -1, 0)
    ]
    rows.append(
        Row(
            "Departure: modips-truncation's noise scale (paper: Lap(10/ε) per set, then truncation to [0, n])",
            "scale 10/ε",
            f"scale 20/ε: RMSE {float(np.median(ratios)):.2f}× the paper-scale run's (median over the {cells} (scenario, "
            f"ln ε ≤ 0) cells; {float(np.median(ratios_mid)):.2f}× at −2 ≤ ln ε ≤ 0, max {max(ratios_mid):.2f}×); larger than "
            f"thresholding's in {wins_dipsy} of {cells}",
            "differs",
            "RMSE ratio at equal ε",
            "What: dipsy doubles the Laplace scale under truncation. Why: sampling the Laplace truncated to [0, n] renormalises by a "
            "data-dependent mass, so at scale 10/ε one set is only ~2(ε/10)-DP (dipsy.methods.modips.noise, eqs. N4–N6); doubling keeps "
            "ε. So dipsy's truncation at ε is the paper's at ε/2; both are plotted. The paper's behaviour is not offered (it is not ε-DP).",
            cmd,
        )
    )
    n_bad = 0
    for n, theta in SCENARIOS1:
        dp, ori = _at(res1[key(n, theta)]["DP-prior"], top), _at(res1[key(n, theta)]["Ori"], top)
        n_bad += abs(dp["coverage"] - ori["coverage"]) > 3 * math.hypot(_cov_se(dp), _cov_se(ori))
    rows.append(
        Row(
            "Study 1 (§4.1): the DP-prior's CP does not approach the nominal level as ε grows (its model is fixed, no uncertainty)",
            "does not approach 0.95",
            f"CP at ln ε = {top} more than 3 SE from Ori's in {n_bad} of 9 scenarios",
            _verdict(n_bad, 9),
            "|CP(DP-prior) − CP(Ori)| > 3 SE at the largest ε",
            "At small n the prior a = 1/(e^(ε/n) − 1) is small at the largest ε of "
            "the grid, so the DP-prior is close to Ori there; the paper's grid upper end is not printed.",
            cmd,
        )
    )

    # study 2
    dips2 = ("modips-split", "modips-nonsplit", "PH", "SH")

    def cells2(bounds, estimand):
        for scen, methods in res2[bounds][estimand].items():
            sigma = float(scen.split("sigma=")[1])
            for i, le in enumerate(LOG_EPSILONS2):
                yield scen, sigma, le, {m: methods[m][i] for m in methods}

    neg = pos = total = 0
    for _, _, _, by in cells2("asymmetric", "mu"):
        for m in dips2:
            r = by[m]
            total += 1
            pos += r["bias"] > 0
            neg += r["bias"] < -3 * r["sd"] / math.sqrt(max(r["n_usable"], 1))
    rows.append(
        Row(
            "Study 2 (Figs 4–5): with bounds not symmetric about μ (the left closer) the bias of μ is positive in all cases",
            "positive everywhere",
            f"positive in {pos} of {total} (method, scenario, ε) cells; significantly negative (< −3 SE) in {neg}",
            "agrees" if neg == 0 else "partly",
            "no cell with bias < −3 SE",
            f"Bounds chosen: {BOUNDS2['asymmetric']} σ (the paper's are not printed; METHODS.md §2.3). Where the noise is small the bias "
            "is within its SE of 0, so 'positive' cannot hold cell by cell.",
            cmd,
        )
    )
    worse = []
    for m in dips2:
        big = {b: max(abs(by[m]["bias"]) / sigma for _, sigma, _, by in cells2(b, "mu")) for b in BOUNDS2}
        worse.append(f"{m} {big['symmetric']:.3f} vs {big['asymmetric']:.3f}")
    smaller = sum(float(w.split()[1]) < float(w.split()[3]) for w in worse)
    rows.append(
        Row(
            "Study 2, symmetric bounds (Supp. Figs 4–7): minimal bias on μ in all dips approaches",
            "minimal bias",
            "largest |bias|/σ, symmetric vs asymmetric bounds: " + "; ".join(worse),
            _verdict(smaller, len(dips2)),
            "smaller with symmetric bounds, per method",
            f"Symmetric bounds chosen: {BOUNDS2['symmetric']} σ.",
            cmd,
        )
    )
    for estimand, a, b, claim in (
        ("mu", "modips-split", "modips-nonsplit", "Study 2 (§4.2): for μ, modips-split slightly better than non-split"),
        ("sigma2", "modips-nonsplit", "modips-split", "Study 2 (Supp. Figs 8–9): for σ², non-split slightly better than split"),
    ):
        wins = cells = 0
        for _, _, _, by in cells2("asymmetric", estimand):
            cells += 1
            wins += by[a]["rmse"] < by[b]["rmse"]
        rows.append(
            Row(
                claim,
                f"{a} better",
                f"RMSE({a}) < RMSE({b}) in {wins} of {cells} (scenario, ε) cells",
                "agrees" if wins > cells / 2 else "differs",
                "sign of the RMSE difference, majority of cells",
                "σ²: per set q = s*², u = 2 s*⁴/(n − 1) (normal theory; the paper's per-set variance is not printed)."
                if estimand == "sigma2"
                else "",
                cmd,
            )
        )
    wins = cells = 0
    for _, _, le, by in cells2("asymmetric", "sigma2"):
        if le <= 0:
            cells += 1
            wins += min(by["modips-split"]["rmse"], by["modips-nonsplit"]["rmse"]) < min(by["PH"]["rmse"], by["SH"]["rmse"])
    rows.append(
        Row(
            "Study 2 (Supp. Figs 8–9): for σ², modips better (smaller RMSE) than the histogram approaches at smaller ε",
            "modips better",
            f"better modips < better histogram in {wins} of {cells} (scenario, ln ε ≤ 0) cells",
            "agrees" if wins > cells / 2 else "differs",
            "sign of the RMSE difference, majority of cells",
            "",
            cmd,
        )
    )
    wins = cells = 0
    for _, _, _, by in cells2("symmetric", "mu"):
        cells += 1
        wins += min(by["PH"]["rmse"], by["SH"]["rmse"]) < min(by["modips-split"]["rmse"], by["modips-nonsplit"]["rmse"])
    rows.append(
        Row(
            "Study 2, symmetric bounds: for μ the histogram approaches are more precise (smaller RMSE) than modips",
            "histograms more precise",
            f"better histogram < better modips in {wins} of {cells} (scenario, ε) cells",
            "agrees" if wins > cells / 2 else "differs",
            "sign of the RMSE difference, majority of cells",
            "",
            cmd,
        )
    )
    rows.append(
        Row(
            "Departure: histogram bins by Scott's rule h = 3.49 s n^(−1/3) (median 7, 10, 21 bins for the three n)",
            "Scott's rule on the data",
            f"data-independent equal bins, K = {', '.join(str(BINS[n]) for n in NS2)}",
            "differs",
            "design",
            "What: the benchmark fixes K at the paper's medians. Why: Scott's rule reads the confidential s without charging for it "
            "(DESIGN.md: never read the domain off confidential data). For the paper's behaviour: compute K from public facts and pass "
            "--option bins=K to perturbed-histogram or smoothed-histogram.",
            cmd,
        )
    )

    # study 3
    def cells3(names):
        for e in names:
            for i, le in enumerate(LOG_EPSILONS3):
                yield e, le, {m: res3[e][m][i] for m in res3[e]}

    marg = [name for name, _, _ in MARGINALS]
    means = [e for e in res3 if e.startswith("mean y")]

    def share(names, test, lo=None):
        hits = cells = 0
        for _e, le, by in cells3(names):
            if lo is None or le <= lo:
                cells += 1
                hits += bool(test(by))
        return hits, cells

    def nominal(r):
        return r["coverage"] >= 0.95 - 3 * _cov_se(r)

    h, c = share(marg, lambda by: by["modips"]["rmse"] < by["PH"]["rmse"])
    rows.append(
        Row(
            "Study 3 (Fig. 6): for the 6 marginal probabilities modips beats the perturbed histogram (smaller bias and RMSE)",
            "modips better",
            f"RMSE(modips) < RMSE(PH) in {h} of {c} (probability, ε) cells",
            "agrees" if h > c / 2 else "differs",
            "sign of the RMSE difference, majority of cells",
            "modips splits each set's ε/10 over 6 components, so the counts get ε/60 (noise scale 60/ε); the PH gives them "
            "half, ε/20. The paper's mixture sensitivities are not printed (METHODS.md §7).",
            cmd,
        )
    )
    h, c = share(marg, lambda by: nominal(by["modips"]))
    h2, c2 = share(marg, lambda by: not nominal(by["PH"]), LOG_EPSILONS3[1])
    rows.append(
        Row(
            "Study 3 (Fig. 6): modips' CP for the marginal probabilities at or above 0.95; the PH under-covers at small ε",
            "modips ≥ 0.95; PH under",
            f"modips nominal in {h} of {c} cells; PH below 0.95 − 3 SE in {h2} of {c2} cells at ln ε ≤ {LOG_EPSILONS3[1]}",
            "agrees" if h == c and h2 else "partly" if h > c / 2 or h2 else "differs",
            "CP ≥ 0.95 − 3 SE",
            "",
            cmd,
        )
    )
    h, c = share(means, lambda by: by["PH"]["rmse"] < by["modips"]["rmse"])
    rows.append(
        Row(
            "Study 3 (Fig. 6, Supp. Figs 10–11): for the 24 cell means of y1 and of y2 the PH is more precise than modips",
            "PH smaller RMSE",
            f"RMSE(PH) < RMSE(modips) in {h} of {c} (cell mean, ε) cells",
            "agrees" if h > c / 2 else "differs",
            "sign of the RMSE difference, majority of cells",
            "All 48 cell means are in study3.json; the plots show their median.",
            cmd,
        )
    )
    h, c = share(means, lambda by: nominal(by["modips"]))
    rows.append(
        Row(
            "Study 3: modips' CP for the cell means at or above the nominal 0.95",
            "≥ 0.95",
            f"nominal (≥ 0.95 − 3 SE) in {h} of {c} (cell mean, ε) cells",
            _verdict(h, c),
            "CP ≥ 0.95 − 3 SE",
            "",
            cmd,
        )
    )
    cov_names = (*COVARIANCE,)
    h, c = share(cov_names, lambda by: by["modips"]["rmse"] < by["PH"]["rmse"])
    rows.append(
        Row(
            "Study 3 (Supp. Figs 10–11): for Σ (σ1², σ2², σ12) modips has much smaller bias and RMSE than the PH",
            "modips better, all 3",
            f"RMSE(modips) < RMSE(PH) in {h} of {c} (component, ε) cells",
            _verdict(h, c),
            "every cell",
            "Per-set variances of S: (m4 − S²)/(n − K), the paper's σ⁴(2 + κ)/n form with sample moments.",
            cmd,
        )
    )
    best = {e: max(res3[e]["PH"], key=lambda r: r["coverage"]) for e in cov_names}
    under = sum(not nominal(r) for r in best.values())
    last = {e: res3[e]["PH"][-1] for e in cov_names}
    rows.append(
        Row(
            "Study 3: the PH under-covers Σ severely in all 3 components and never reaches 0.95 (discretisation)",
            "never reaches 0.95",
            "PH's best CP over ε: "
            + ", ".join(f"{e} {r['coverage']:.3f} (ln ε = {r['log_epsilon']})" for e, r in best.items())
            + f"; at ln ε = {LOG_EPSILONS3[-1]}: "
            + ", ".join(f"{e} {r['coverage']:.3f}" for e, r in last.items()),
            _verdict(under, 3),
            "best CP < 0.95 − 3 SE, per component",
            "Uniform draws inside the bins (here 2σ wide) inflate the variances: at the largest ε their bias is "
            + ", ".join(f"{last[e]['bias']:+.3f}" for e in COVARIANCE[:2])
            + " (truths "
            + ", ".join(f"{sd**2:g}" for sd in SIG3)
            + "); the covariance's bias is "
            + f"{last['sigma12']['bias']:+.3f} against a mean interval width of "
            f"{last['sigma12']['width']:.3f}, so it is covered. The paper's Scott bins (16–49 per cell) differ.",
            cmd,
        )
    )
    h, c = share(cov_names, lambda by: nominal(by["modips"]))
    rows.append(
        Row(
            "Study 3: modips delivers nominal CP for Σ (at all ε for the variances, from some ε on for the covariance)",
            "nominal",
            f"nominal (≥ 0.95 − 3 SE) in {h} of {c} (component, ε) cells",
            _verdict(h, c) if h < c else "agrees",
            "CP ≥ 0.95 − 3 SE",
            "",
            cmd,
        )
    )
    lo_e, hi_e = LOG_EPSILONS3[0], LOG_EPSILONS3[-1]
    text = "; ".join(
        f"{m} {empty3[m][0]['empty_cells']:.2f} (ln ε = {lo_e}) – {empty3[m][-1]['empty_cells']:.2f} (ln ε = {hi_e})"
        for m in empty3
    )
    rows.append(
        Row(
            "Supp. Table 5: average number of empty cells (of 24) in a synthetic set",
            "not in the recovered source",
            text,
            "not reproduced",
            "—",
            "The source text ends inside supplementary Table 1; Table 5's values are lost, so "
            "dipsy's are shown without a comparison.",
            cmd,
        )
    )
    rows.append(
        Row(
            "Departure: study 3's design (n, cell parameters of supp. Table 3, bounds, Scott's 2-D bins of 16–49 per cell)",
            "n and Table 3 not printed",
            f"n = {N3}; π spans [0.007, 0.076]; μ_k1 ~ U(−2, 2), μ_k2 ~ U(−4, 4); σ = {SIG3}, ρ = {RHO}; "
            f"box {LOWER3.tolist()}–{UPPER3.tolist()}; {HBINS} × {HBINS} data-independent bins per cell",
            "differs",
            "design",
            "What and why: the paper's values are not recovered (METHODS.md §2.3, §7); bins data-independent for the reason of study 2; "
            "modips' cell statistics are sums, not means, because (c1 − c0)/n_k is not a global sensitivity (dipsy.methods.modips.models).",
            cmd,
        )
    )
    rows.append(
        Row(
            f"Scale: {PAPER_REPS} repetitions per scenario (§4)",
            str(PAPER_REPS),
            f"study 1: {args.reps1}; studies 2 and 3: {args.reps}",
            "differs" if min(args.reps1, args.reps) < PAPER_REPS else "agrees",
            "count",
            f"Sized for the shared machine; the paper's size: --reps1 {PAPER_REPS} --reps {PAPER_REPS} (hours of CPU).",
            cmd,
        )
    )
    return rows


def plot3(results3: dict, metric: str, path: Path) -> None:
    """Study 3 on a 3 × 4 grid: the 6 marginal probabilities, the 24 cell means of y1 and of y2 (median over
    cells, as the paper's box plots summarise them), σ1², σ2², σ12 and ρ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = {name: results3[name] for name, _, _ in MARGINALS}
    panels |= {
        "y1 cell means (median of 24)": cell_summary(results3, 1),
        "y2 cell means (median of 24)": cell_summary(results3, 2),
    }
    panels |= {name: results3[name] for name in (*COVARIANCE, "rho")}
    fig, axes = plt.subplots(3, 4, figsize=(16, 10), sharex=True, constrained_layout=True)
    for ax, (title, methods) in zip(axes.ravel(), panels.items()):
        for name, series in methods.items():
            ax.plot([r["log_epsilon"] for r in series], [r[metric] for r in series], marker=".", label=name)
        if metric == "coverage":
            ax.axhline(0.95, color="grey", lw=0.8, ls="--")
        ax.set_title(title, fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("ln ε")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Study 3 (mixed, n = {N3}): {metric} by ln ε")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps1", type=int, default=1000, help="repetitions of study 1 (the paper's: 5000)")
    parser.add_argument("--reps", type=int, default=40, help="repetitions of studies 2 and 3 (the paper's: 5000)")
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument(
        "--usable", choices=USABLE, default="variance", help="what makes a repetition usable (default: the paper's)"
    )
    parser.add_argument("--out", type=Path, default=OUT, metavar="DIR", help=f"folder for the JSON and PNG files (default {OUT})")
    parser.add_argument("--no-record", action="store_true", help="do not write the fidelity table (development runs)")
    parser.add_argument(
        "--rows-only",
        action="store_true",
        help="simulate nothing: re-derive the fidelity rows from the study*.json a previous run wrote to --out",
    )
    args = parser.parse_args()
    out = args.out
    if args.rows_only:
        d1, d2, d3 = (json.loads((out / f"study{k}.json").read_text()) for k in (1, 2, 3))
        args.reps1, args.reps, args.seed = d1["reps"], d2["reps"], d1["seed"]
        record("S-003", TITLE, fidelity_rows(d1["results"], d2["results"], d3["results"], d3["empty_cells"], args))
        print(f"wrote docs/benchmarks/fidelity/S-003.json and docs/benchmarks/fidelity.md from the run in {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    rand = Randomness.from_seed(args.seed)
    head = {"reps": args.reps1, "seed": args.seed, "usable": args.usable}

    results = {f"n={n}, theta={theta}": study1_scenario(n, theta, args.reps1, rand, args.usable) for n in NS for theta in THETAS}
    (out / "study1.json").write_text(json.dumps({**head, "results": results}, indent=1) + "\n")
    for metric in ("bias", "rmse", "coverage", "width", "usable"):
        plot(results, metric, out / f"study1_{metric}.png")
    print(f"study 1 (binary), {args.reps1} repetitions; results in {out}")
    shown = (-8, -4, 0, 4)
    print(f"{'scenario':20}{'method':28}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown) + "   (RMSE  coverage)")
    for scenario, methods in results.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(f"{scenario:20}{name:28}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown))

    results2 = {b: {} for b in BOUNDS2}
    for bounds in BOUNDS2:
        for n in NS2:
            for sigma in SIGMAS:
                for estimand, methods in study2_scenario(n, sigma, args.reps, rand, bounds).items():
                    results2[bounds].setdefault(estimand, {})[f"n={n}, sigma={sigma}"] = methods
    (out / "study2.json").write_text(
        json.dumps({**head, "reps": args.reps, "bounds": BOUNDS2, "results": results2}, indent=1) + "\n"
    )
    for bounds, by_estimand in results2.items():
        for estimand, res in by_estimand.items():
            for metric in ("bias", "rmse", "coverage", "width"):
                plot(
                    res,
                    metric,
                    out / f"study2_{bounds}_{estimand}_{metric}.png",
                    NS2,
                    SIGMAS,
                    "n={n}, sigma={c}",
                    "σ",
                    f"Study 2 (normal, {estimand}, {bounds} bounds)",
                )
    print(f"\nstudy 2 (normal), {args.reps} repetitions; results in {out}")
    shown2 = (-2, 0, 2, 4)
    for bounds, by_estimand in results2.items():
        for estimand, res in by_estimand.items():
            print(f"\n{bounds} bounds, {estimand}")
            print(f"{'scenario':20}{'method':16}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown2) + "   (RMSE  coverage)")
            for scenario, methods in res.items():
                for name, rows in methods.items():
                    by = {r["log_epsilon"]: r for r in rows}
                    print(f"{scenario:20}{name:16}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown2))

    results3, empty3 = study3_scenario(args.reps, rand)
    (out / "study3.json").write_text(
        json.dumps({**head, "reps": args.reps, "n": N3, "results": results3, "empty_cells": empty3}, indent=1) + "\n"
    )
    for metric in ("bias", "rmse", "coverage", "width"):
        plot3(results3, metric, out / f"study3_{metric}.png")
    print(f"\nstudy 3 (mixed, n = {N3}), {args.reps} repetitions; results in {out}")
    shown3 = (0, 2, 4, 6)
    print(f"{'estimand':30}{'method':8}" + "".join(f"{'ln ε = ' + str(e):>22}" for e in shown3) + "   (bias  RMSE  coverage)")
    summary3 = {name: results3[name] for name, _, _ in MARGINALS}
    summary3 |= {"y1 cell means (median)": cell_summary(results3, 1), "y2 cell means (median)": cell_summary(results3, 2)}
    summary3 |= {name: results3[name] for name in (*COVARIANCE, "rho")}
    for estimand, methods in summary3.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(
                f"{estimand:30}{name:8}"
                + "".join(f"{by[e]['bias']:>9.3f}{by[e]['rmse']:>7.3f} {by[e]['coverage']:>5.2f}" for e in shown3)
            )
    print("\nsupplementary Table 5: average empty cells (of 24) per set")
    for name, rows in empty3.items():
        print(f"{name:8}" + "".join(f"  ln ε = {r['log_epsilon']}: {r['empty_cells']:.2f}" for r in rows))

    if not args.no_record:
        record("S-003", TITLE, fidelity_rows(results, results2, results3, empty3, args))
        print("\nwrote docs/benchmarks/fidelity/S-003.json and docs/benchmarks/fidelity.md")


if __name__ == "__main__":
    main()
