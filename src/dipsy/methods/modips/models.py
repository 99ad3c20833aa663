r"""The four modips models: sufficient statistics, their sensitivities and bounds, posteriors, records.

Bowen & Liu (S-003 §4.1–4.3; ``METHODS.md`` §2.2–2.3) name the models and quote some
sensitivities (marked [R]/[NR] in METHODS.md). Every sensitivity and bound below is **derived
here** (not copied from the paper, whose formulas were lost), proved in this docstring and checked
by property tests in ``tests/test_modips.py`` (no pair of neighbours exceeds it; a pair attains it).

Neighbouring relation: **substitution** — neighbouring data sets have the same ``n`` and differ in
the values of one record; ``n`` is public. Bowen & Liu use removal of one record for most of their
paper, but their sensitivities ``(c1 - c0)/n`` for a mean presuppose a known ``n``, and so do the
posteriors (``Beta(s + α, n - s + β)``); substitution with ``n`` public is the relation under which
those numbers are global sensitivities. The multinomial model is also offered under add/remove
(``n`` then not public).

Notation: ``w = c1 - c0`` is the width of a numeric column's public bounds ``[c0, c1]``; ``⌊·⌋``,
``⌈·⌉`` floor and ceiling.

Bernoulli (Bowen & Liu study 1)
-------------------------------
One column with two categories; ``x_i = 1`` for the second category. ``s = Σ x_i``.

(B1) Substituting one record changes ``s`` by at most 1, attained by ``0 → 1``: ``Δ = 1``.
(B2) Bounds ``[0, n]``. Integer: exact discrete Laplace.
(B3) Prior ``Beta(α, β)`` (default ``α = β = 1/3``, Kerman's 2011 neutral prior, as Bowen & Liu);
     posterior ``θ | s ~ Beta(s + α, n - s + β)``; modips draws ``θ* ~ Beta(s* + α, n - s* + β)``
     and ``x*_i ~ Bernoulli(θ*)``, ``i = 1..n``.
(B4) Truncation (eq. N5) is exact with one coordinate moving by 1 (``s = 0 → 1``).

Normal (study 2)
----------------
One numeric column in ``[c0, c1]``, ``n >= 2``; ``x̄ = Σ x_i/n``, ``s² = Σ (x_i - x̄)²/(n - 1)``.

(M1) ``Δ_x̄ = w/n``: substituting ``a`` by ``b`` moves ``x̄`` by ``(b - a)/n``.
(M2) ``Δ_s² = w²/n`` (for the ``1/(n-1)`` variance the posterior uses; for the ``1/n`` variance it
     would be ``w²(n-1)/n²``). Let ``ȳ, SS_r`` be the mean and sum of squares of the ``n - 1``
     records the neighbours share. Adding ``a`` to them gives ``SS = SS_r + (n-1)/n (a - ȳ)²``, so
     ``SS - SS' = (n-1)/n [(a - ȳ)² - (b - ȳ)²]``, of size at most ``(n-1)/n w²`` because both
     squares lie in ``[0, w²]``; dividing by ``n - 1`` gives ``w²/n``. Attained: ``n - 1`` records
     at ``c0`` and the last at ``c1`` versus at ``c0`` (``s²`` from ``w²/n`` to 0).
(M3) The same pair moves ``x̄`` by ``w/n``: the L1 sensitivity of ``(x̄, s²)`` is exactly
     ``w/n + w²/n``, the non-split scale of eq. N2 (Bowen & Liu's ``Σ_j Δ_j``) is tight.
(M4) Bounds: ``x̄ ∈ [c0, c1]``; ``s² ∈ [0, V]`` with ``V = w² ⌊n/2⌋⌈n/2⌉ / (n(n - 1))``: the sum of
     squares is convex in each ``x_i``, so it is largest at corners, where ``k`` records at ``c1``
     give ``w² k(n - k)/n``. (Bowen & Liu's ``w²/4`` bounds the ``1/n`` variance; the ``1/(n-1)``
     one can pass it, e.g. ``n = 2``: ``w²/2``.)
(M5) Prior ``p(μ, σ²) ∝ 1/σ²``: ``σ² | x ~ Inv-χ²(n - 1, s²)``, i.e. ``(n - 1) s²/χ²_{n-1}``, and
     ``μ | σ², x ~ N(x̄, σ²/n)``; modips uses ``(x̄*, s²*)``. Records: ``N(μ*, σ²*)`` truncated to
     ``[c0, c1]`` (the law of redrawing until in bounds, drawn by inverting its CDF) — a function
     of ``θ*`` only: post-processing, free. If ``s²* = 0`` every record is ``μ*`` clipped to the
     bounds.
(M6) Truncation (N5) is exact per component: both statistics sit at their lower bound when all
     records are at ``c0`` and one neighbour moves each by its full sensitivity.

Multinomial
-----------
One or more categorical columns; ``y_k`` the count of cell ``k`` of their cross-tabulation (``K``
cells).

(C1) Substitution moves one record between cells: ``-1`` in one, ``+1`` in another, L1
     sensitivity ``Δ = 2``; add/remove changes one cell by 1, ``Δ = 1``. Both attained.
(C2) Bounds ``[0, n]`` under substitution, ``[0, ∞)`` under add/remove (``n`` private).
(C3) Posterior ``Dirichlet(y + α)`` (default ``α = 1/3``); modips draws
     ``θ* ~ Dirichlet(y* + α)`` and ``n`` records (add/remove: ``n* = Σ_k y*_k``, a function of the
     noisy counts — biased upwards by thresholding empty cells; exact in expectation only for
     large counts) from ``Multinomial(θ*)``.
(C4) Truncation (N5): two coordinates move by 1 under substitution (one when adding/removing);
     exact, attained with every record in one cell (``n → n - 1`` and ``0 → 1``, both at a bound).

Mixed (study 3)
---------------
Categorical columns whose cross-tabulation has ``K >= 2`` cells, and ``p >= 1`` numeric columns
``y = (y_1..y_p)`` in the box ``Π_j [a_j, b_j]`` (Bowen & Liu: ``p = 2``), bivariate (p-variate)
normal within each cell with a common covariance ``Σ``. Centre ``c_j = (a_j + b_j)/2``.
Sufficient statistics (given the priors below), in ``1 + p + p(p+1)/2`` components (6 for
``p = 2``, as in Bowen & Liu):

* counts ``n_k``: as (C1) — ``Δ = 2``, bounds ``[0, n]``;
* centred cell sums ``T_kj = Σ_{i in k} (y_ij - c_j)``, one component per ``j``:
  (X1) ``Δ = w_j``. A record that stays in its cell moves ``T_kj`` by ``|y' - y| <= w_j``; one
  that moves from cell ``k`` to ``k'`` moves ``T_kj`` by ``|y - c| <= w_j/2`` and ``T_k'j`` by
  ``|y' - c| <= w_j/2``. Attained (``a_j → b_j``). Uncentred sums would have ``2 max(|a_j|, |b_j|)
  >= w_j``. Bounds ``[-n w_j/2, n w_j/2]``.
  *Why sums, not means*: a cell mean's sensitivity depends on the cell's count — moving the only
  record of a cell changes its mean by up to ``w_j`` — so the ``(c1 - c0)/n_k`` of Bowen & Liu is
  a local, data-dependent sensitivity, not a global one, and noise calibrated to it is not DP.
  The sums have the global sensitivity ``w_j`` whatever the counts; the means are then
  post-processed: ``ȳ*_kj = c_j + T*_kj/n*_k``, clipped to ``[a_j, b_j]``.
  Truncation: at most two coordinates move, by ``d1 + d2 <= w_j``; since ``log Z`` is concave,
  the loss is at most ``2 h(w_j/2)`` (an upper bound, not attained: a cell sum at its bound
  needs every record in that cell).
* pooled within-cell sums of squares and cross-products ``W = Σ_k Σ_{i in k} (y_i - ȳ_k)(y_i - ȳ_k)ᵀ``
  (shift-invariant), one component per entry ``W_jj`` and ``W_jl`` (``j < l``). Only the cells the
  record leaves and enters change. Removing ``y`` from a cell of ``a`` records (mean of the others
  ``ȳ``) changes its cross-products by ``-(a-1)/a (y - ȳ)(y - ȳ)ᵀ``; adding ``y'`` to a cell of
  ``c`` others (mean ``ȳ'``) by ``+c/(c+1) (y' - ȳ')(y' - ȳ')ᵀ``, with ``a >= 1``, ``a + c <= n``.
  (W1) ``Δ_jj = w_j² (n - 1)/n``: the two changes have opposite signs, each at most
  ``w_j² max((a-1)/a, c/(c+1)) <= w_j² (n-1)/n``; attained by moving one record of a cell whose
  ``n - 1`` others sit at ``a_j`` from ``b_j`` to an empty cell. (A record staying in its cell:
  as (M2), ``(n-1)/n w_j²``.)
  (W2) ``Δ_jl = w_j w_l (2 - 1/⌊(n+1)/2⌋ - 1/⌈(n+1)/2⌉)`` for ``j ≠ l``: the products
  ``(y - ȳ)_j (y - ȳ)_l`` can have either sign, so the two changes can add:
  ``w_j w_l ((a-1)/a + c/(c+1)) = w_j w_l (2 - 1/a - 1/(c+1))``, largest when ``a`` and ``c + 1``
  split ``n + 1`` evenly. Attained: ``a - 1`` records at ``(a_j, b_l)`` and the mover at
  ``(b_j, a_l)`` in one cell, ``c`` records at ``(a_j, a_l)`` in another which the mover joins at
  ``(b_j, b_l)``. (A record staying in its cell moves ``W_jl`` by at most ``(n-1)/n w_j w_l``,
  which is no more.) So the covariance entry's sensitivity is about **twice** the variances'.
  Dividing by ``n - K`` gives the pooled covariance matrix's: ``Δ_jj/(n - K)``, ``Δ_jl/(n - K)``.
  (W3) Bounds: ``W_jj ∈ [0, n w_j²/4]`` (each cell's sum of squares is at most ``n_k w_j²/4``),
  ``|W_jl| <= sqrt(W_jj W_ll) <= n w_j w_l/4``.
  Truncation: one coordinate, ``h(Δ)`` (attained for ``W_jj`` at 0).

Posterior (noninformative ``p(μ_1..μ_K, Σ) ∝ |Σ|^{-(p+1)/2}``, ``Dirichlet(α)`` on the cell
probabilities ``π``; Gelman et al., BDA3 §3.6 for one cell, pooled over cells):
``π ~ Dirichlet(n_k + α)``, ``Σ ~ Inv-Wishart(n - K, W)``, ``μ_k | Σ ~ N(ȳ_k, Σ/n_k)``. With the
sanitized statistics (all post-processing of the noisy release): ``W*``'s off-diagonals are
clipped to ``|W*_jl| <= sqrt(W*_jj W*_ll)`` and its eigenvalues (in units of ``w_j w_l``) floored
at ``1e-9 n`` so that it is a valid scale matrix; a cell with ``n*_k = 0`` gets one pseudo-record
at the centre of the box (``ȳ*_k = c``, ``Σ/1``) — a convention, since its mean is otherwise
unidentified. Records: ``n`` cells from ``Multinomial(π*)``, then ``y ~ N(μ*_k, Σ*)`` truncated to
the box — redrawn up to 100 rounds, then (for records still outside, which happens only when
``μ*_k`` lies far outside the box) 50 sweeps of the Gibbs sampler of the truncated normal, which
approximates that law. Both are post-processing.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ...domain import Column
from ...domain.codec import decode_column
from ...errors import DipsyError
from ..base import MAX_PRIOR
from .noise import Component, exact

#: Rejection rounds before the Gibbs fallback, and its sweeps (mixed model records).
REJECTION_ROUNDS = 100
GIBBS_SWEEPS = 50
#: Eigenvalue floor of the noisy W, in units of w_j w_l, times n.
EIGEN_FLOOR = 1e-9


# --------------------------------------------------------------------------------------------
# Sensitivities and bounds (the components of each model)
# --------------------------------------------------------------------------------------------


def bernoulli_components(n: int) -> list[Component]:
    """(B1–B2): ``s = Σ x``, ``Δ = 1``, bounds ``[0, n]``."""
    return [Component("s (records in the second category)", 1, Fraction(1), 0, n, True)]


def variance_bound(n: int, lower: float, upper: float) -> float:
    """(M4) the largest ``1/(n-1)`` sample variance of ``n`` values in ``[lower, upper]``.

    >>> variance_bound(2, 0.0, 1.0), variance_bound(4, 0.0, 2.0)
    (0.5, 1.3333333333333333)
    """
    w = exact(upper) - exact(lower)
    return float(w * w * (n // 2) * ((n + 1) // 2) / (n * (n - 1)))


def normal_components(n: int, lower: float, upper: float) -> list[Component]:
    """(M1–M4): mean ``Δ = w/n`` in ``[c0, c1]``; variance ``Δ = w²/n`` in ``[0, V]``."""
    w = exact(upper) - exact(lower)
    return [
        Component("mean", 1, w / n, float(lower), float(upper), False),
        Component("variance (1/(n-1))", 1, w * w / n, 0.0, variance_bound(n, lower, upper), False),
    ]


def multinomial_components(n: int | None, cells: int) -> list[Component]:
    """(C1–C2): counts, ``Δ = 2`` and bounds ``[0, n]`` (substitution, ``n`` given) or ``Δ = 1`` and ``[0, ∞)``."""
    if n is None:
        return [Component("cell counts", cells, Fraction(1), 0, math.inf, True, moved=1, step=Fraction(1))]
    return [Component("cell counts", cells, Fraction(2), 0, n, True, moved=2, step=Fraction(1))]


def cross_product_sensitivity(n: int, wj: Fraction, wl: Fraction) -> Fraction:
    """(W2) L1 sensitivity of a pooled cross-product ``W_jl``, ``j ≠ l`` (``K >= 2`` cells).

    >>> cross_product_sensitivity(3, Fraction(1), Fraction(1))
    Fraction(1, 1)
    """
    a, b = (n + 1) // 2, (n + 2) // 2
    return wj * wl * max(2 - Fraction(1, a) - Fraction(1, b), Fraction(n - 1, n))


def mixed_components(n: int, cells: int, lower: np.ndarray, upper: np.ndarray, names: tuple[str, ...]) -> list[Component]:
    """Counts, centred sums per numeric column (X1), pooled ``W_jj`` (W1) and ``W_jl`` (W2), with bounds (W3)."""
    w = [exact(u) - exact(lo) for lo, u in zip(lower.tolist(), upper.tolist())]
    p = len(w)
    out = [Component("cell counts", cells, Fraction(2), 0, n, True, moved=2, step=Fraction(1))]
    for j in range(p):
        half = float(n * w[j] / 2)
        out.append(Component(f"cell sums of {names[j]} (centred)", cells, w[j], -half, half, False, moved=2, step=w[j] / 2))
    for j in range(p):
        out.append(
            Component(
                f"pooled sum of squares of {names[j]}", 1, w[j] * w[j] * (n - 1) / n, 0.0, float(n * w[j] * w[j] / 4), False
            )
        )
    for j in range(p):
        for k in range(j + 1, p):
            top = float(n * w[j] * w[k] / 4)
            out.append(
                Component(
                    f"pooled cross-products of {names[j]} and {names[k]}",
                    1,
                    cross_product_sensitivity(n, w[j], w[k]),
                    -top,
                    top,
                    False,
                )
            )
    return out


# --------------------------------------------------------------------------------------------
# Sufficient statistics (sorted first: the result depends on the multiset of records only, so
# every engine gives the same bits whatever its row order — design rule 6)
# --------------------------------------------------------------------------------------------


def normal_statistics(x: np.ndarray) -> tuple[float, float]:
    """``(x̄, s²)`` with the ``1/(n-1)`` variance.

    >>> normal_statistics(np.array([1.0, 3.0, 2.0]))
    (2.0, 1.0)
    """
    x = np.sort(np.asarray(x, dtype=float))
    mean = float(x.sum() / x.size)
    d = x - mean
    return mean, float(np.dot(d, d) / (x.size - 1))


def mixed_statistics(cells: np.ndarray, y: np.ndarray, n_cells: int, centre: np.ndarray) -> list[np.ndarray]:
    """Counts ``(K,)``, centred sums ``(K,)`` per numeric column, then ``W_jj`` and ``W_jl`` (``j < l``) as 0-d arrays.

    >>> s = mixed_statistics(np.array([0, 0, 1]), np.array([[0., 1.], [2., 3.], [5., 5.]]), 2, np.zeros(2))
    >>> [a.tolist() for a in s]
    [[2, 1], [2.0, 5.0], [4.0, 5.0], 2.0, 2.0, 2.0]
    """
    cells = np.asarray(cells, dtype=np.int64)
    y = np.asarray(y, dtype=float).reshape(cells.size, -1)
    order = np.lexsort(tuple(y[:, j] for j in range(y.shape[1] - 1, -1, -1)) + (cells,))
    cells, y = cells[order], y[order] - centre
    counts = np.bincount(cells, minlength=n_cells)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    occupied = counts > 0
    sums = np.zeros((n_cells, y.shape[1]))
    if cells.size:
        sums[occupied] = np.add.reduceat(y, starts[occupied], axis=0)
    means = np.divide(sums, counts[:, None], out=np.zeros_like(sums), where=counts[:, None] > 0)
    dev = y - means[cells]
    p = y.shape[1]
    out: list[np.ndarray] = [counts.astype(np.int64)] + [sums[:, j].copy() for j in range(p)]
    out += [np.asarray(float(np.dot(dev[:, j], dev[:, j]))) for j in range(p)]
    out += [np.asarray(float(np.dot(dev[:, j], dev[:, k]))) for j in range(p) for k in range(j + 1, p)]
    return out


# --------------------------------------------------------------------------------------------
# Posterior draws (any leading shape: one set, or reps × m sets in the vectorised functions)
# --------------------------------------------------------------------------------------------


def draw_beta(s: np.ndarray, n: int, prior: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    """(B3) ``θ* ~ Beta(s* + α, n - s* + β)``."""
    s = np.asarray(s, dtype=float)
    return rng.beta(s + prior[0], n - s + prior[1])


def draw_normal(mean: np.ndarray, var: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(M5) ``σ²* = (n - 1) s²*/χ²_{n-1}``, ``μ* ~ N(x̄*, σ²*/n)``."""
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(var, dtype=float))
    sigma2 = (n - 1) * var / rng.chisquare(n - 1, mean.shape)
    mu = mean + np.sqrt(sigma2 / n) * rng.standard_normal(mean.shape)
    return mu, sigma2


def draw_dirichlet(counts: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """(C3) ``θ* ~ Dirichlet(y* + α)`` over the last axis (normalised gammas)."""
    g = rng.standard_gamma(np.asarray(counts, dtype=float) + alpha)
    total = g.sum(axis=-1, keepdims=True)
    # gammas with tiny shapes can all underflow to 0; the limit of the normalised draw is then uniform
    return np.divide(g, total, out=np.full(g.shape, 1 / g.shape[-1]), where=total > 0)


def inverse_wishart(df: float, scale: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draws from ``Inv-Wishart(df, scale)`` for a stack of ``(…, p, p)`` scales (Bartlett).

    If ``scale = L Lᵀ`` and ``W0 ~ Wishart(df, I)`` then ``L W0⁻¹ Lᵀ ~ Inv-Wishart(df, scale)``;
    ``W0 = A Aᵀ`` with ``A`` lower triangular, ``A_ii² ~ χ²(df - i)``, ``A_ij ~ N(0, 1)`` below the
    diagonal (Bartlett 1933). Mean ``scale/(df - p - 1)``.
    """
    scale = np.asarray(scale, dtype=float)
    p = scale.shape[-1]
    lead = scale.shape[:-2]
    a = np.tril(rng.standard_normal(lead + (p, p)), -1)
    idx = np.arange(p)
    a[..., idx, idx] = np.sqrt(rng.chisquare(df - idx, lead + (p,)))
    b = np.linalg.cholesky(scale) @ np.swapaxes(np.linalg.inv(a), -1, -2)
    return b @ np.swapaxes(b, -1, -2)


def repair_scatter(w: np.ndarray, width: np.ndarray, n: int) -> np.ndarray:
    """A noisy pooled ``W`` (or a stack ``(…, p, p)``) made a valid scale matrix: Cauchy–Schwarz on the
    off-diagonals, eigenvalue floor.

    Post-processing of the noisy release (module docstring, mixed model).
    """
    w = np.asarray(w, dtype=float)
    scale = np.outer(width, width)
    d = np.sqrt(np.clip(np.diagonal(w, axis1=-2, axis2=-1), 0, None))
    dd = d[..., :, None] * d[..., None, :]
    w = np.clip(w, -dd, dd)
    unit = w / scale
    vals, vecs = np.linalg.eigh((unit + np.swapaxes(unit, -1, -2)) / 2)
    unit = (vecs * np.maximum(vals, EIGEN_FLOOR * n)[..., None, :]) @ np.swapaxes(vecs, -1, -2)
    return unit * scale


def draw_mixed(
    stats: list[np.ndarray], n: int, lower: np.ndarray, upper: np.ndarray, alpha: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(π*, μ*, Σ*)`` from (sanitized) mixed statistics, for any leading shape ``L`` (module docstring).

    ``stats`` as :func:`mixed_statistics` gives them: counts ``L + (K,)``, ``p`` centred sums
    ``L + (K,)``, then ``W_jj`` and ``W_jl`` (``j < l``) of shape ``L``. Returns ``π*`` ``L + (K,)``,
    ``μ*`` ``L + (K, p)`` and ``Σ*`` ``L + (p, p)``. Post-processing only: cell means from the sums,
    clipped to the box, an empty cell one pseudo-record at the centre, ``W`` repaired
    (:func:`repair_scatter`), then ``π* ~ Dirichlet(n* + α)``, ``Σ* ~ Inv-Wishart(n - K, W*)``,
    ``μ*_k ~ N(ȳ*_k, Σ*/n*_k)``.
    """
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    p = lower.size
    centre, width = (lower + upper) / 2, upper - lower
    counts = np.asarray(stats[0], dtype=float)
    k = counts.shape[-1]
    sums = np.stack([np.asarray(v, dtype=float) for v in stats[1 : 1 + p]], axis=-1)
    seen = counts >= 1
    weight = np.where(seen, counts, 1.0)
    means = np.where(seen[..., None], centre + sums / weight[..., None], centre)
    means = np.clip(means, lower, upper)
    w = np.zeros(counts.shape[:-1] + (p, p))
    for j in range(p):
        w[..., j, j] = stats[1 + p + j]
    rest = iter(stats[1 + 2 * p :])
    for j in range(p):
        for l in range(j + 1, p):
            w[..., j, l] = w[..., l, j] = next(rest)
    w = repair_scatter(w, width, n)
    pi = draw_dirichlet(counts, alpha, rng)
    sigma = inverse_wishart(n - k, w, rng)
    chol = np.linalg.cholesky(sigma)
    z = rng.standard_normal(counts.shape + (p,))
    mu = means + np.einsum("...kj,...ij->...ki", z, chol) / np.sqrt(weight)[..., None]
    return pi, mu, sigma


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


def truncated_normal(mu: np.ndarray, sd: np.ndarray, lower: float, upper: float, rng: np.random.Generator) -> np.ndarray:
    """``N(mu, sd²)`` truncated to ``[lower, upper]`` (the law of redrawing until in bounds); ``sd = 0``: clip."""
    mu, sd = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(sd, dtype=float))
    out = np.clip(mu, lower, upper).astype(float)
    pos = sd > 0
    if pos.any():
        a, b = (lower - mu[pos]) / sd[pos], (upper - mu[pos]) / sd[pos]
        from scipy import stats  # here: scipy.stats takes half a second to import, and the CLI's start waits

        out[pos] = np.clip(stats.truncnorm.rvs(a, b, loc=mu[pos], scale=sd[pos], random_state=rng), lower, upper)
    return out


def truncated_mvn(
    means: np.ndarray, cov: np.ndarray, lower: np.ndarray, upper: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One draw per row of ``means`` from ``N(mean, cov)`` truncated to the box (module docstring)."""
    n, p = means.shape
    chol = np.linalg.cholesky(cov)
    out = np.empty((n, p))
    pending = np.arange(n)
    for _ in range(REJECTION_ROUNDS):
        if not pending.size:
            return out
        y = means[pending] + rng.standard_normal((pending.size, p)) @ chol.T
        ok = np.all((y >= lower) & (y <= upper), axis=1)
        out[pending[ok]] = y[ok]
        pending = pending[~ok]
    if pending.size:  # Gibbs sampler of the truncated normal, from the box point nearest the mean
        prec = np.linalg.inv(cov)
        mu = means[pending]
        y = np.clip(mu, lower, upper)
        for _ in range(GIBBS_SWEEPS):
            for j in range(p):
                others = [k for k in range(p) if k != j]
                m = mu[:, j] - (y[:, others] - mu[:, others]) @ prec[j, others] / prec[j, j]
                y[:, j] = truncated_normal(m, np.full(m.shape, 1 / math.sqrt(prec[j, j])), lower[j], upper[j], rng)
        out[pending] = y
    return out


def value_column(values: np.ndarray, column: Column) -> np.ndarray:
    """Numeric draws as the column holds them: floats, rounded for an integer column (post-processing)."""
    return np.round(values) if column.kind == "integer" else np.asarray(values, dtype=float)


def records_from_cells(
    cells: np.ndarray, columns: tuple[Column, ...], shape: tuple[int, ...], rng: np.random.Generator
) -> dict[str, Any]:
    """The categorical columns of records from flat cell indices (C order)."""
    codes = np.unravel_index(np.asarray(cells, dtype=np.int64), shape)
    return {c.name: decode_column(k, c, rng) for c, k in zip(columns, codes)}


def frame(columns: dict[str, Any], order: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({name: columns[name] for name in order})


def prior_numbers(value: Any) -> tuple[float, ...]:
    """The numbers ``prior=`` gives (fractions allowed; empty when one is not a number), with any
    past :data:`~dipsy.methods.base.MAX_PRIOR` refused: checked as the option is read, before the
    model (which says how many it takes) is known.

    >>> prior_numbers("1/3,2")
    (0.3333333333333333, 2.0)
    """
    parts = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    try:
        exact = [Fraction(str(v).strip()) for v in parts]
    except (ValueError, ZeroDivisionError):
        return ()
    if any(x > MAX_PRIOR for x in exact):  # compared exactly: 1e400 is past the floats
        raise DipsyError(
            f"option prior={str(value)[:40]} holds a number more than the {MAX_PRIOR:g} it may be",
            f"give prior= at most {MAX_PRIOR:g} (a larger prior swamps the data), e.g. prior=1/3",
        )
    return tuple(float(x) for x in exact)


def parse_prior(value: Any, model: str) -> tuple[float, ...]:
    """``prior=`` as the model needs it: Beta ``(α, β)`` ("a,b" or one number for both) or Dirichlet ``α``.

    >>> parse_prior("1/3", "bernoulli"), parse_prior("0.5,2", "bernoulli"), parse_prior(1, "mixed")
    ((0.3333333333333333, 0.3333333333333333), (0.5, 2.0), (1.0,))
    """
    if model == "normal":
        raise DipsyError("model=normal has no prior option (it uses p(μ, σ²) ∝ 1/σ²)", "leave out the prior option")
    nums = prior_numbers(value)
    ok = len(nums) in ((1, 2) if model == "bernoulli" else (1,)) and all(math.isfinite(x) and x > 0 for x in nums)
    if not ok:
        form = "a positive number (α = β) or 'a,b'" if model == "bernoulli" else "one positive number (a flat Dirichlet α)"
        raise DipsyError(f"option prior={value!r} is not valid for model={model}", f"give {form}, e.g. prior=1/3")
    if model == "bernoulli" and len(nums) == 1:
        nums = nums * 2
    return nums
