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
  stay ε-DP), so ``modips-trunc`` at ε is Bowen & Liu's truncation at ε/2;
- ``LS``: the Laplace sanitizer, s* = s + discrete Laplace(1/ε) (removal, Δ = 1) thresholded to
  [0, n], one set of n records from Binomial(n, s*/n) (dipsy's ``laplace-sanitizer``, add/remove).

Per method and ε: bias and RMSE of the point estimate, coverage and mean width of the 95 % interval,
and the share of usable repetitions (every set has 0 < θ̂ < 1, so a variance exists); averages are
over the usable repetitions. Where the paper's values were not recovered (METHODS.md marks them
[NR]) this script chooses: n ∈ {40, 100, 1000} (consistent with the bin counts of study 2),
θ ∈ {0.1, 0.25, 0.5}, ln ε ∈ {−10, −9, …, 4}.

Study 2 — normal data (the mean): Ori, MS, modips split and non-split (thresholding), the perturbed
histogram (10 sets) and the smoothed histogram (one set, the least δ); design choices at
``study2_scenario``.

Study 3 — mixed data (three categorical variables, K = 24 cells, bivariate normal (y1, y2) within
cells, n = 2000): Ori, MS, modips (mixed model, split budget over 6 components, thresholding) and the
np-dips comparator (Laplace sanitizer on the counts + perturbed 2-D histograms per cell); estimands
three marginal proportions, the mean of y1 in three cells and the within-cell correlation ρ; design
choices at ``study3_scenario`` (the comment block above ``N3``).

Writes ``study{1,2,3}.json`` and one PNG per study and metric into ``--out`` (default
``build/bench/bowen_liu``). ``--reps 5000`` is the paper's scale; the default is small enough for a minute
or two.

Usage: python benchmarks/bowen_liu.py [--reps 200] [--seed 2016] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

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
PRIOR = 1 / 3  # Kerman's (2011) neutral Beta prior, as Bowen & Liu cite
Z = 1.959963984540054


def wald(s: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """One set: θ̂ = s/n with variance θ̂(1 − θ̂)/n and a normal interval."""
    q = s / n
    half = Z * np.sqrt(q * (1 - q) / n)
    return {"estimate": q, "lower": q - half, "upper": q + half, "usable": (s > 0) & (s < n)}


def multiple(s_sets: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """m sets (reps, m): per set q = s/n, u = q(1 − q)/n, combined by Reiter's (2003) rule."""
    q = s_sets / n
    u = q * (1 - q) / n
    c = combine(q.T, u.T, "reiter2003-partial")
    usable = np.all((s_sets > 0) & (s_sets < n), axis=1)
    return {"estimate": c.estimate, "lower": c.lower, "upper": c.upper, "usable": usable}


def study1_scenario(n: int, theta: float, reps: int, rand: Randomness) -> dict[str, list[dict]]:
    rng = rand.numpy
    s = rng.binomial(n, theta, reps)
    rows: dict[str, list[dict]] = {name: [] for name in ("Ori", "MS", "MD", "modips-thr", "modips-trunc", "DP-prior", "LS")}
    ms_theta = rng.beta(s[:, None] + PRIOR, n - s[:, None] + PRIOR, (reps, SETS))
    static = {"Ori": wald(s, n), "MS": multiple(rng.binomial(n, ms_theta), n)}
    for log_eps in LOG_EPSILONS:
        eps = math.exp(log_eps)
        results = dict(static)
        a = minimum_alpha(n, eps / SETS)
        md_theta = rng.beta(s[:, None] + a, n - s[:, None] + a, (reps, SETS))
        results["MD"] = multiple(rng.binomial(n, md_theta), n)
        for name, post in (("modips-thr", "threshold"), ("modips-trunc", "truncation")):
            theta_star = bernoulli_sets(s, n, eps, SETS, post, rand, reps)
            results[name] = multiple(rng.binomial(n, theta_star), n)
        prior = minimum_prior(n, eps)
        results["DP-prior"] = wald(rng.binomial(n, (s + prior) / (n + 2 * prior)), n)
        noisy = np.clip(s + discrete_laplace(1 / eps, reps, rand), 0, n)
        results["LS"] = wald(rng.binomial(n, noisy / n), n)
        for name, r in results.items():
            rows[name].append(summarise(r, theta, log_eps))
    return rows


# -- study 2: normal data -------------------------------------------------------------------------------------
#
# x_i ~ N(0, σ²) truncated to public bounds that are not symmetric about the mean (the left one is
# closer, as in the paper): [-3σ, 4.3σ], a range of 7.3σ; bins data-independent, K = 7, 10, 21 for
# n = 40, 100, 1000 (the paper's median Scott bin counts; Scott's rule itself reads the data).
# Estimand: the mean μ. Per set q = x̄*, u = s*²/n.

NS2 = (40, 100, 1000)
SIGMAS = (1.0, 3.0, 5.0)
BINS = {40: 7, 100: 10, 1000: 21}
LOG_EPSILONS2 = tuple(range(-4, 7))


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


def mean_sets(values: np.ndarray) -> dict[str, np.ndarray]:
    """Sets (reps, m, n): q = x̄*, u = s*²/n, combined by Reiter's rule (one set: its own t interval)."""
    n = values.shape[-1]
    q, u = values.mean(axis=-1), values.var(axis=-1, ddof=1) / n
    rule = "reiter2003-partial" if q.shape[1] > 1 else "single"
    c = combine(q.T, u.T, rule, single_df=n - 1)
    return {"estimate": c.estimate, "lower": c.lower, "upper": c.upper, "usable": np.isfinite(c.variance)}


def study2_scenario(n: int, sigma: float, reps: int, rand: Randomness) -> dict[str, list[dict]]:
    rng = rand.numpy
    lower, upper = -3 * sigma, 4.3 * sigma
    x = truncated_normal(np.zeros(()), np.full((), sigma**2), lower, upper, (reps, n), rng)
    truth = float(__import__("scipy").stats.truncnorm.mean(-3, 4.3, scale=sigma))
    xbar, s2 = x.mean(axis=1), x.var(axis=1, ddof=1)
    edges = np.linspace(lower, upper, BINS[n] + 1)
    counts = np.stack(
        [np.bincount(np.clip(np.searchsorted(edges[1:-1], row, side="right"), 0, BINS[n] - 1), minlength=BINS[n]) for row in x]
    )
    sigma2_ms = (n - 1) * s2[:, None] / rng.chisquare(n - 1, (reps, SETS))
    mu_ms = rng.normal(xbar[:, None], np.sqrt(sigma2_ms / n))
    static = {
        "Ori": mean_sets(x[:, None, :]),
        "MS": mean_sets(rng.normal(mu_ms[..., None], np.sqrt(sigma2_ms)[..., None], (reps, SETS, n))),
    }
    rows: dict[str, list[dict]] = {k: [] for k in ("Ori", "MS", "modips-split", "modips-nonsplit", "PH", "SH")}
    for log_eps in LOG_EPSILONS2:
        eps = math.exp(log_eps)
        results = dict(static)
        for name, budget in (("modips-split", "split"), ("modips-nonsplit", "non-split")):
            mu, sig2 = normal_sets(xbar, s2, n, lower, upper, eps, SETS, budget, "threshold", rand, reps)
            sig2 = np.maximum(sig2, 1e-12 * sigma**2)
            results[name] = mean_sets(truncated_normal(mu[..., None], sig2[..., None], lower, upper, (reps, SETS, n), rng))
        noisy = counts[:, None, :] + discrete_laplace(SETS / eps, (reps, SETS, BINS[n]), rand)
        noisy = np.maximum(noisy, 0).astype(float)
        noisy[noisy.sum(axis=-1) == 0] = 1.0  # an all-zero table: uniform over the bins
        results["PH"] = mean_sets(from_cells(noisy, edges, n, rng))
        share = np.diff(edges) / (upper - lower)
        delta = least_delta(n, eps, float(share.min()))
        p = (1 - delta) * counts / n + delta * share
        results["SH"] = mean_sets(from_cells(p[:, None, :], edges, n, rng))
        for name, r in results.items():
            rows[name].append(summarise(r, truth, log_eps))
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
# Estimands (per set q, u; Reiter's rule over sets; Ori is one set):
# - P(A = a1), P(B = b1), P(C = c1): q = p̂, u = p̂(1 − p̂)/n;
# - the mean of y1 in the least, a middling and the most probable cell: q = ȳ_k1, u = s²_k1/n_k
#   (t with n_k − 1 df for Ori; a set is unusable if n_k < 2);
# - ρ, the pooled within-cell correlation r = W12/√(W11 W22): combined on Fisher's z = atanh r with
#   u = 1/(n − K − 2) (W has n − K degrees of freedom; the 1/(n − 3) of a plain correlation with n − 1
#   replaced by n − K), the estimate and interval mapped back by tanh.
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
    """Per set (rows of ``cells`` ``(R, n)``): counts ``(R, K)``, centred sums of y1, y2 ``(R, K)``, W11, W22, W12 ``(R,)``."""
    r = cells.shape[0]
    g = (np.arange(r)[:, None] * K3 + cells).ravel()
    yc = (y - (LOWER3 + UPPER3) / 2).reshape(-1, 2)
    counts = np.bincount(g, minlength=r * K3)
    sums = [np.bincount(g, yc[:, j], r * K3) for j in range(2)]
    means = [np.divide(s, counts, out=np.zeros_like(s), where=counts > 0) for s in sums]
    dev = [yc[:, j] - means[j][g] for j in range(2)]
    w = [np.bincount(g // K3, a * b, r) for a, b in ((dev[0], dev[0]), (dev[1], dev[1]), (dev[0], dev[1]))]
    cross = np.bincount(g, dev[0] ** 2, r * K3)  # per-cell sum of squares of y1
    return [counts.reshape(r, K3), sums[0].reshape(r, K3), sums[1].reshape(r, K3), *w, cross.reshape(r, K3)]


def study3_estimates(stats: list[np.ndarray], reps: int, cells_shown: tuple[int, ...]) -> dict[str, dict[str, np.ndarray]]:
    """Every estimand's combined inference from the per-set statistics of ``reps × m`` sets."""
    counts, sum1, _, w11, w22, w12, ss1 = stats
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
        return {"estimate": c.estimate, "lower": c.lower, "upper": c.upper, "usable": ok & np.isfinite(c.variance)}

    out = {}
    shape = counts.reshape(-1, *LEVELS)
    for name, axes in (("P(A=a1)", (2, 3)), ("P(B=b1)", (1, 3)), ("P(C=c1)", (1, 2))):
        p = shape.sum(axis=axes)[:, 0] / n
        out[name] = pool(p, p * (1 - p) / n, usable=(p > 0) & (p < 1))
    centre = (LOWER3[0] + UPPER3[0]) / 2
    for k in cells_shown:
        nk = counts[:, k].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = centre + sum1[:, k] / nk
            u = ss1[:, k] / (nk - 1) / nk
        out[f"mean y1, cell {k}"] = pool(q, u, df=nk - 1, usable=nk >= 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.arctanh(np.clip(w12 / np.sqrt(w11 * w22), -1 + 1e-12, 1 - 1e-12))
    r = pool(z, np.full(z.shape, 1 / (n - K3 - 2)))
    out["rho"] = {k: (np.tanh(v) if k != "usable" else v) for k, v in r.items()}
    return out


def study3_scenario(reps: int, rand: Randomness) -> dict[str, dict[str, list[dict]]]:
    """{estimand: {method: [summarise(...) per ln ε]}} for study 3."""
    rng = rand.numpy
    pi, mu, sigma = study3_design()
    cells_shown = (int(np.argmin(pi)), int(np.argsort(pi)[K3 // 2]), int(np.argmax(pi)))
    truths = {
        "P(A=a1)": pi.reshape(LEVELS)[0].sum(),
        "P(B=b1)": pi.reshape(LEVELS)[:, 0].sum(),
        "P(C=c1)": pi.reshape(LEVELS)[..., 0].sum(),
    }
    truths |= {f"mean y1, cell {k}": mu[k, 0] for k in cells_shown} | {"rho": RHO}
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
    static = {
        "Ori": study3_estimates(ori, reps, cells_shown),
        "MS": study3_estimates(from_posterior(*draw_mixed(exact, N3, LOWER3, UPPER3, PRIOR, rng)), reps, cells_shown),
    }
    rows: dict[str, dict[str, list[dict]]] = {e: {k: [] for k in ("Ori", "MS", "modips", "PH")} for e in truths}
    for log_eps in LOG_EPSILONS3:
        eps = math.exp(log_eps)
        results = dict(static)
        results["modips"] = study3_estimates(
            from_posterior(*mixed_sets(model_stats, N3, LOWER3, UPPER3, eps, SETS, "split", "threshold", rand)), reps, cells_shown
        )
        scale = 2 * SETS / eps
        noisy_counts = (
            np.maximum(ori[0][:, None, :] + discrete_laplace(scale, (reps, SETS, K3), rand), 0).reshape(-1, K3).astype(float)
        )
        noisy_counts[noisy_counts.sum(axis=1) == 0] = 1.0
        noisy_hist = np.maximum(hist[:, None, :] + discrete_laplace(scale, (reps, SETS, hist.shape[1]), rand), 0)
        c = draw_cells(noisy_counts, N3, rng)
        results["PH"] = study3_estimates(
            cell_statistics(c, histogram_records(c, noisy_hist.reshape(reps * SETS, K3, -1), rng)), reps, cells_shown
        )
        for name, by_estimand in results.items():
            for e, r in by_estimand.items():
                rows[e][name].append(summarise(r, float(truths[e]), log_eps))
    return rows


def summarise(r: dict[str, np.ndarray], truth: float, log_eps: float) -> dict:
    ok = r["usable"]
    est, lo, hi = r["estimate"][ok], r["lower"][ok], r["upper"][ok]
    nan = float("nan")
    return {
        "log_epsilon": log_eps,
        "usable": float(ok.mean()),
        "bias": float(np.mean(est - truth)) if ok.any() else nan,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--out", type=Path, default=OUT, metavar="DIR", help=f"folder for the JSON and PNG files (default {OUT})")
    args = parser.parse_args()
    out = args.out
    rand = Randomness.from_seed(args.seed)
    results = {f"n={n}, theta={theta}": study1_scenario(n, theta, args.reps, rand) for n in NS for theta in THETAS}
    out.mkdir(parents=True, exist_ok=True)
    (out / "study1.json").write_text(json.dumps({"reps": args.reps, "seed": args.seed, "results": results}, indent=1) + "\n")
    for metric in ("bias", "rmse", "coverage", "width"):
        plot(results, metric, out / f"study1_{metric}.png")
    results2 = {f"n={n}, sigma={sigma}": study2_scenario(n, sigma, args.reps, rand) for n in NS2 for sigma in SIGMAS}
    (out / "study2.json").write_text(json.dumps({"reps": args.reps, "seed": args.seed, "results": results2}, indent=1) + "\n")
    for metric in ("bias", "rmse", "coverage", "width"):
        plot(results2, metric, out / f"study2_{metric}.png", NS2, SIGMAS, "n={n}, sigma={c}", "σ", "Study 2 (normal, mean)")
    print(f"study 1 (binary), {args.reps} repetitions; results in {out}")
    shown = (-8, -4, 0, 4)
    print(f"{'scenario':20}{'method':10}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown) + "   (RMSE  coverage)")
    for scenario, methods in results.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(f"{scenario:20}{name:10}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown))
    print(f"\nstudy 2 (normal, the mean); results in {out}")
    shown2 = (-2, 0, 2, 4)
    print(f"{'scenario':20}{'method':16}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown2) + "   (RMSE  coverage)")
    for scenario, methods in results2.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(f"{scenario:20}{name:16}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown2))
    results3 = study3_scenario(args.reps, rand)
    (out / "study3.json").write_text(
        json.dumps({"reps": args.reps, "seed": args.seed, "n": N3, "results": results3}, indent=1) + "\n"
    )
    for metric in ("bias", "rmse", "coverage", "width"):
        plot(results3, metric, out / f"study3_{metric}.png", (N3,), tuple(results3), "{c}", "", "Study 3 (mixed)", (18, 3.6))
    print(f"\nstudy 3 (mixed, n = {N3}); results in {out}")
    shown3 = (0, 2, 4, 6)
    print(f"{'estimand':20}{'method':8}" + "".join(f"{'ln ε = ' + str(e):>22}" for e in shown3) + "   (bias  RMSE  coverage)")
    for estimand, methods in results3.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(
                f"{estimand:20}{name:8}"
                + "".join(f"{by[e]['bias']:>9.3f}{by[e]['rmse']:>7.3f} {by[e]['coverage']:>5.2f}" for e in shown3)
            )


if __name__ == "__main__":
    main()
