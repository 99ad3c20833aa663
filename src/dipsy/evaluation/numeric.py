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

The yardsticks (:func:`numeric_yardsticks`; the verdict reads them, :func:`dipsy.evaluation.verdicts.numeric`).
Beside the binning floor each column gets two numbers a steward can reach without the release:

- **the sampling floor**: U_m of a resample of the original (with replacement) as large as a
  synthetic set, the mean of :data:`~.yardsticks.DRAWS` seeded draws, and the relative mean shift
  such a resample makes, as its root mean square ``sd(x) / (|mean(x)| sqrt(rows))`` (exact for a
  resample, so no draw is needed: twice it is two standard errors);
- **one-way histogram at the same budget**: what a release that keeps nothing of the other
  columns gets for this one: the column's histogram over the domain's public bins (or its integers)
  measured with the noise :func:`~.yardsticks.per_column_noise` gives each one-way table of the
  independent baseline (the release's per-set budget split over the columns), negative counts set
  to 0, ``rows`` values drawn from it and placed uniformly inside their bins as a synthesizer
  decodes them; U_m and |relative mean shift|, each the mean of :data:`~.yardsticks.DRAWS` draws.
  A numeric column without bins has no histogram and gets none.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Mapping, Sequence
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
from .yardsticks import DRAWS, per_column_noise

#: Quantile levels reported for every integer or numeric column.
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: Bins listed per column in the floor's account of its mean shift, largest share first.
FLOOR_BINS = 3
#: At most this many cells in a column's one-way histogram yardstick (an integer column of wider
#: range gets none, as a numeric column without bins).
MAX_HISTOGRAM = 10**6
#: Resamples behind a column's sampling floor of U_m (each costs one count of the values, no sort).
FLOOR_DRAWS = 5


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


def numeric_summary(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    seed: int = 0,
    privacy: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
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
        Seed of the binning floor's redraw (:func:`redraw_in_bins`) and of the yardsticks' draws.
    privacy
        The release's privacy statement, whose per-set budget the one-way histogram yardstick
        spends (:func:`numeric_yardsticks`); without it, exact one-way tables.

    Returns
    -------
    dict
        One entry per column: ``{"U_m", "U_a", "ks", "ks_pvalue"}`` (lists, one value per set),
        ``"U_m_mean"``, ``"U_a_mean"`` (averages over sets, as Hu et al. report),
        ``"mean_original"``, ``"mean_synthetic"`` (per set), ``"quantiles"`` (the levels of
        :data:`QUANTILES`), ``"quantiles_original"`` and ``"quantiles_synthetic"`` (per set, a list
        of quantiles each), ``"n_original"``, ``"n_synthetic"``; for a column with bins,
        ``"floor"`` (see :func:`binning_floor`), else None; ``"yardsticks"`` (see
        :func:`numeric_yardsticks`). Empty when the domain has no such column.
    """
    domain = shared_domain(original, tables, domain)
    noise = per_column_noise(domain, privacy or {})  # the independent baseline's, over every column
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
            "yardsticks": numeric_yardsticks(x, round(float(np.mean([y.size for y in ys]))), domain[name], noise, seed),
        }
    return out


def numeric_yardsticks(
    x: np.ndarray, rows: int, column: Column, noise: Mapping[str, Any] | None, seed: int = 0
) -> dict[str, Any]:
    """The sampling floor and the one-way histogram yardstick of one column (module docstring).

    Parameters
    ----------
    x
        The original values of the column (numbers only).
    rows
        The values a synthetic set holds (their mean over sets).
    column
        The column, for its bins (or integers).
    noise
        Each one-way table's noise (:func:`~.yardsticks.per_column_noise`), or None for exact tables.
    seed
        With the column's name, seeds the draws: ``numpy.random.default_rng([seed, 7, crc32(name)])``.

    Returns
    -------
    dict
        ``"rows"``, ``"draws"``; ``"floor"``: ``{"U_m", "mean_shift"}`` of a resample of ``rows``;
        ``"independent"``: ``{"U_m", "mean_shift"}`` of the one-way histogram (None for a numeric
        column without bins, or of more than :data:`MAX_HISTOGRAM` cells) and ``"noise"``. Mean shifts are relative to the original mean
        (None when it is 0) and unsigned.

    >>> c = Column("x", "numeric", lower=0, upper=10, bins=(0, 5, 10))
    >>> y = numeric_yardsticks(np.array([2.0, 2.0, 6.0, 6.0]), 4, c, None)  # sd 2, mean 4: SE 1 is 25 % of it
    >>> y["floor"]["mean_shift"], y["noise"]
    (0.25, None)
    """
    rng = np.random.default_rng([seed, 7, zlib.crc32(column.name.encode("utf-8"))])
    rows = max(int(rows), 1)
    mean = float(x.mean())
    rel = (lambda v: float(abs(v) / abs(mean))) if mean != 0 else (lambda v: None)
    # a resample holds the original's values only: both ECDFs step at those, so U_m is the largest
    # gap of the cumulated counts over them (no sort per draw)
    values, which = np.unique(x, return_inverse=True)
    cdf = np.cumsum(np.bincount(which, minlength=values.size)) / x.size
    gaps = [
        np.abs(cdf - np.cumsum(np.bincount(which[rng.integers(0, x.size, rows)], minlength=values.size)) / rows).max()
        for _ in range(FLOOR_DRAWS)
    ]
    floor_um = float(np.sqrt(np.mean(np.square(gaps))))
    floor = {"U_m": floor_um, "mean_shift": rel(float(x.std()) / np.sqrt(rows))}
    independent = None
    size = (column.value_size or 0) if column.encodable else 0
    if 0 < size <= MAX_HISTOGRAM:
        codes = encode_column(pd.Series(x), column).codes
        counts = np.bincount(codes[(codes >= 0) & (codes < size)], minlength=size).astype(float)
        plain = replace(column, missing=None)
        ums, shifts = [], []
        for _ in range(DRAWS):
            noisy = counts
            if noise:
                draw = rng.normal if noise["kind"] == "gaussian" else rng.laplace
                noisy = np.maximum(counts + draw(0.0, noise["scale"], size), 0.0)
            share = noisy / noisy.sum() if noisy.sum() > 0 else np.full(size, 1.0 / size)
            drawn = decode_column(rng.choice(size, rows, p=share), plain, rng).astype(float)
            ums.append(_gap(values, cdf, drawn))
            shifts.append(float(drawn.mean()) - mean)
        shift = [rel(v) for v in shifts]
        independent = {
            "U_m": float(np.mean(ums)),
            "mean_shift": float(np.mean([v for v in shift if v is not None])) if mean != 0 else None,
        }
    return {"rows": rows, "draws": DRAWS, "floor": floor, "independent": independent, "noise": dict(noise) if noise else None}


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


def _gap(values: np.ndarray, cdf: np.ndarray, y: np.ndarray) -> float:
    """U_m of :func:`ecdf_distances` between the original, given by its distinct ``values`` (sorted)
    and its ECDF ``cdf`` at them, and ``y``: both ECDFs step only at their own distinct values, so
    the largest gap is found over those (few, for a discrete column).

    >>> _gap(np.array([1.0, 2.0]), np.array([0.5, 1.0]), np.array([3.0, 2.0])) == ecdf_distances(np.array([1, 2]), np.array([2, 3]))[0]
    True
    """
    other, counts = np.unique(y, return_counts=True)
    points = np.union1d(values, other)
    at = lambda v, c: np.concatenate([[0.0], c])[np.searchsorted(v, points, side="right")]  # noqa: E731 - an ECDF at points
    return float(np.abs(at(values, cdf) - at(other, np.cumsum(counts) / y.size)).max())


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
