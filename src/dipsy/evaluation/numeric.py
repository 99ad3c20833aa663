"""Distances between the distributions of integer and numeric columns.

The ECDF utility statistics of Hu, Savitsky & Williams (METHODS.md §3.2; verified against
``Risk_Efficient_Bayesian_Synthesis/Rcode/calculate_ECDF.R``): pool the original and synthetic
values, evaluate both empirical CDFs at every pooled value (duplicates included), and report

- ``U_m = max |F_orig - F_syn|``, the largest gap (it equals the two-sample Kolmogorov-Smirnov
  statistic), and
- ``U_a = mean (F_orig - F_syn)^2``, the average squared gap;

each per synthetic set and averaged over the m sets. Smaller is better; both are 0 for identical
samples.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..domain import Domain
from ..errors import DataError
from .marginals import encode_valid, shared_domain

#: Quantile levels reported for every integer or numeric column.
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def ecdf_distances(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``(U_m, U_a)`` between samples ``x`` (original) and ``y`` (synthetic).

    Both ECDFs are right-continuous, ``F_x(t) = #{x_i <= t} / n_x``, evaluated at every value
    of the pooled sample ``(x, y)`` (Hu et al.; METHODS.md §3.2).

    Parameters
    ----------
    x, y
        One-dimensional samples without missing values, each non-empty.

    Returns
    -------
    tuple of float
        ``U_m = max |F_x - F_y|`` and ``U_a = mean (F_x - F_y)^2`` over the pooled points.

    Examples
    --------
    Pooled points 1, 2, 2, 3: F_x = 1/2, 1, 1, 1 and F_y = 0, 1/2, 1/2, 1, so the gaps are
    1/2, 1/2, 1/2, 0:

    >>> ecdf_distances(np.array([1, 2]), np.array([2, 3]))
    (0.5, 0.1875)
    """
    x = np.sort(np.asarray(x, dtype=float).ravel())
    y = np.sort(np.asarray(y, dtype=float).ravel())
    if x.size == 0 or y.size == 0:
        raise ValueError("an ECDF needs at least one value in each sample")
    pooled = np.concatenate([x, y])
    diff = np.searchsorted(x, pooled, side="right") / x.size - np.searchsorted(y, pooled, side="right") / y.size
    return float(np.abs(diff).max()), float(np.mean(diff**2))


def numeric_summary(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> dict[str, Any]:
    """ECDF distances, KS statistics, means and quantiles of every integer/numeric column.

    Parameters
    ----------
    original
        The confidential data.
    tables
        The m synthetic sets of one release.
    domain
        The public domain; its ``integer`` and ``numeric`` columns present in the original and
        every set are summarised (rows that do not match the domain are left out).

    Returns
    -------
    dict
        One entry per column: ``{"U_m", "U_a", "ks", "ks_pvalue"}`` (lists, one value per set),
        ``"U_m_mean"``, ``"U_a_mean"`` (averages over sets, as Hu et al. report),
        ``"mean_original"``, ``"mean_synthetic"`` (per set), ``"quantiles"`` (the levels of
        :data:`QUANTILES`), ``"quantiles_original"`` and ``"quantiles_synthetic"`` (per set, a list
        of quantiles each), ``"n_original"``, ``"n_synthetic"``. Empty when the domain has no such
        column.
    """
    domain = shared_domain(original, tables, domain)
    numeric = [c.name for c in domain.columns if c.kind in ("integer", "numeric")]
    if not numeric:
        return {}
    domain = domain.project(numeric)
    frames = [original, *tables]
    labels = ["original"] + [f"synthetic set {k}" for k in range(1, len(tables) + 1)]
    values = [_values(f, domain, what) for f, what in zip(frames, labels)]
    out: dict[str, Any] = {}
    for name in numeric:
        x, ys = values[0][name], [v[name] for v in values[1:]]
        ecdf = [ecdf_distances(x, y) for y in ys]
        with warnings.catch_warnings():
            # SciPy warns when the exact p-value fails and it falls back to the asymptotic one,
            # which is the right p-value for these sample sizes anyway.
            warnings.simplefilter("ignore", RuntimeWarning)
            ks = [stats.ks_2samp(x, y) for y in ys]
        out[name] = {
            "U_m": [u for u, _ in ecdf],
            "U_a": [a for _, a in ecdf],
            "U_m_mean": float(np.mean([u for u, _ in ecdf])),
            "U_a_mean": float(np.mean([a for _, a in ecdf])),
            "ks": [float(k.statistic) for k in ks],
            "ks_pvalue": [float(k.pvalue) for k in ks],
            "mean_original": float(x.mean()),
            "mean_synthetic": [float(y.mean()) for y in ys],
            "quantiles": list(QUANTILES),
            "quantiles_original": [float(q) for q in np.quantile(x, QUANTILES)],
            "quantiles_synthetic": [[float(q) for q in np.quantile(y, QUANTILES)] for y in ys],
            "n_original": int(x.size),
            "n_synthetic": [int(y.size) for y in ys],
        }
    return out


def _values(frame: pd.DataFrame, domain: Domain, what: str) -> dict[str, np.ndarray]:
    """Values of the columns of ``domain`` over the rows of ``frame`` that match it."""
    _, valid = encode_valid(frame, domain, what)
    if not valid.any():
        raise DataError(f"the {what} has no row that matches the domain", "check the data against the domain")
    return {n: pd.to_numeric(frame[n][valid]).to_numpy(dtype=float) for n in domain.names}
