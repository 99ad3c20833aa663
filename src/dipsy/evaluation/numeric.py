"""Distances between the distributions of integer and numeric columns.

The ECDF utility statistics of Hu, Savitsky & Williams (METHODS.md §3.2; verified against
``Risk_Efficient_Bayesian_Synthesis/Rcode/calculate_ECDF.R``): pool the original and synthetic
values, evaluate both empirical CDFs at every pooled value (duplicates included), and report

- ``U_m = max |F_orig - F_syn|``, the largest gap (it equals the two-sample Kolmogorov-Smirnov
  statistic), and
- ``U_a = mean (F_orig - F_syn)^2``, the average squared gap;

each per synthetic set and averaged over the m sets. Smaller is better; both are 0 for identical
samples.

The binning floor. A synthesizer that sees a numeric column through the domain's bins releases
values drawn uniformly inside each bin (:func:`dipsy.domain.codec.decode_column`), so even a
perfect one cannot beat the original with each value redrawn uniformly inside its own bin. For
every binned column that redraw (:func:`redraw_in_bins`, seeded) gets the same statistics as a
synthetic set, and the mean shift it causes is split by bin: a bin of ``n_b`` rows whose original
values average ``x̄_b`` moves the mean by ``n_b (m_b - x̄_b) / n`` in expectation, ``m_b`` being
the bin's uniform mean (its midpoint; for integer bins the midpoint of its least and greatest
integer). A wide top bin of a skewed column (CE Income: 250k-1M) moves the mean by a large share
on its own. The evaluation is the steward's and reads the original values, so this is fine here;
it is not something a release could publish.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..domain import Column, Domain
from ..domain.codec import decode_column, encode_column
from ..errors import DataError
from .marginals import encode_valid, shared_domain
from .missing import value_numbers

#: Quantile levels reported for every integer or numeric column.
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: Bins listed per column in the floor's account of its mean shift, largest share first.
FLOOR_BINS = 3


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


def numeric_summary(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain, seed: int = 0) -> dict[str, Any]:
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
    seed
        Seed of the binning floor's redraw (:func:`redraw_in_bins`).

    Returns
    -------
    dict
        One entry per column: ``{"U_m", "U_a", "ks", "ks_pvalue"}`` (lists, one value per set),
        ``"U_m_mean"``, ``"U_a_mean"`` (averages over sets, as Hu et al. report),
        ``"mean_original"``, ``"mean_synthetic"`` (per set), ``"quantiles"`` (the levels of
        :data:`QUANTILES`), ``"quantiles_original"`` and ``"quantiles_synthetic"`` (per set, a list
        of quantiles each), ``"n_original"``, ``"n_synthetic"``; for a column with bins,
        ``"floor"`` (see :func:`binning_floor`), else None. Empty when the domain has no such
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
    redrawn = _values(redraw_in_bins(original, domain, seed), domain, "original")
    out: dict[str, Any] = {}
    for name in numeric:
        x, ys = values[0][name], [v[name] for v in values[1:]]
        if x.size == 0 or any(y.size == 0 for y in ys):
            continue  # every row in a missing state somewhere: no number to compare
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
            "floor": binning_floor(x, redrawn[name], domain[name], seed),
        }
    return out


def redraw_in_bins(frame: pd.DataFrame, domain: Domain, seed: int = 0) -> pd.DataFrame:
    """``frame`` with each value of a binned integer/numeric column redrawn uniformly inside its bin.

    The draw is the one a synthesizer makes when it decodes a bin (:func:`~dipsy.domain.codec.decode_column`),
    each column's from its own generator, ``numpy.random.default_rng([seed, 3, crc32(name)])``, so
    a column's redraw is the same whichever other columns are redrawn with it (the report redraws
    one column for its plot, the metrics all of them); values outside the domain are kept as they
    are. Other columns are unchanged.

    >>> d = Domain((Column("x", "numeric", lower=0, upper=10, bins=(0, 5, 10)),))
    >>> y = redraw_in_bins(pd.DataFrame({"x": [1.0, 9.0]}), d)["x"]
    >>> bool(0 <= y[0] < 5 and 5 <= y[1] <= 10)
    True
    """
    out = frame.copy()
    for column in domain.columns:
        if column.kind not in ("integer", "numeric") or column.bins is None or column.name not in frame:
            continue
        # Its own stream, apart from the metrics' subsamples and from the other columns.
        rng = np.random.default_rng([seed, 3, zlib.crc32(column.name.encode("utf-8"))])
        values = frame[column.name].reset_index(drop=True)
        codes = encode_column(values, column).codes
        inside = (codes >= 0) & (codes < (column.value_size or 0))  # values in a bin: not a missing state
        drawn = decode_column(np.where(inside, codes, 0), replace(column, missing=None), rng).astype(float)
        if column.missing is None:
            out[column.name] = np.where(inside, drawn, pd.to_numeric(values, errors="coerce").to_numpy(dtype=float))
        else:  # a state is kept as it is (a code such as .a is no number): the metrics leave it out
            out[column.name] = pd.Series(drawn).where(inside, values).set_axis(frame.index)
    return out


def binning_floor(x: np.ndarray, redrawn: np.ndarray, column: Column, seed: int = 0) -> dict[str, Any] | None:
    """The statistics of the original redrawn inside its bins, and where its mean shift comes from.

    Parameters
    ----------
    x
        The original values of the column.
    redrawn
        The same rows redrawn uniformly inside their bins (:func:`redraw_in_bins`).
    column
        The column; None is returned when it has no bins.
    seed
        Recorded with the result, so the report can redraw the same values for its plots.

    Returns
    -------
    dict or None
        ``"mean"``, ``"quantiles"`` (at :data:`QUANTILES`), ``"U_m"``, ``"U_a"``, ``"ks"`` of the
        redraw against the original; ``"mean_shift"`` (relative, of this draw) and
        ``"expected_mean_shift"`` (relative, its expectation over draws); ``"bins"``: the
        :data:`FLOOR_BINS` bins that move the mean most, each ``{"bin", "lower", "upper",
        "rows", "mean_original", "mean_uniform", "shift"}`` (``shift`` relative to the
        original mean, in expectation); ``"seed"``. Relative shifts are None when the original
        mean is 0.
    """
    if column.bins is None or x.size == 0:
        return None
    codes = encode_column(pd.Series(x), column).codes
    size = len(column.bins) - 1
    ok = (codes >= 0) & (codes < size)  # x holds numbers only; a state's code would lie past the bins
    if column.kind == "integer":
        low, high = column.integer_bin_ranges()
        low, high = low.astype(float), high.astype(float)
    else:
        edges = np.asarray(column.bins, dtype=float)
        low, high = edges[:-1], edges[1:]
    uniform = (low + high) / 2  # the mean of a uniform draw inside each bin
    rows = np.bincount(codes[ok], minlength=size)
    sums = np.bincount(codes[ok], weights=x[ok], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        bin_means = np.where(rows > 0, sums / np.maximum(rows, 1), np.nan)
    moved = np.where(rows > 0, rows * (uniform - np.nan_to_num(bin_means)), 0.0) / x.size  # per bin, in the column's units
    mean = float(x.mean())
    rel = (lambda v: float(v / abs(mean))) if mean != 0 else (lambda v: None)
    um, ua = ecdf_distances(x, redrawn)
    order = [int(b) for b in np.argsort(-np.abs(moved), kind="stable")[:FLOOR_BINS] if rows[b] > 0]
    return {
        "mean": float(redrawn.mean()),
        "quantiles": [float(q) for q in np.quantile(redrawn, QUANTILES)],
        "U_m": um,
        "U_a": ua,
        "ks": um,  # the two-sample KS statistic is U_m (see ecdf_distances)
        "mean_shift": rel(float(redrawn.mean()) - mean),
        "expected_mean_shift": rel(float(moved.sum())),
        "bins": [
            {
                "bin": b,
                "lower": float(low[b]),
                "upper": float(high[b]),
                "rows": int(rows[b]),
                "mean_original": float(bin_means[b]),
                "mean_uniform": float(uniform[b]),
                "shift": rel(float(moved[b])),
            }
            for b in order
        ],
        "seed": seed,
    }


def _values(frame: pd.DataFrame, domain: Domain, what: str) -> dict[str, np.ndarray]:
    """Values of the columns of ``domain`` over the rows of ``frame`` that match it, each column's
    without its rows in a declared missing state (a state is no number: :func:`.missing.value_numbers`)."""
    _, valid = encode_valid(frame, domain, what)
    if not valid.any():
        raise DataError(f"the {what} has no row that matches the domain", "check the data against the domain")
    out = {}
    for column in domain.columns:
        v = value_numbers(frame[column.name][valid], column)
        out[column.name] = v[~np.isnan(v)] if column.missing is not None else v
    return out
