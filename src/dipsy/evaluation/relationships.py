"""Relationships between columns: indicator slopes and correlations, numeric correlations.

The Duke variable-depth RDT report (METHODS.md §5.2) judges synthetic categorical data by the
pairwise slopes and correlations of indicator vectors: for a category ``a`` of column ``A`` and
a category ``b`` of another column ``B``, ``X = 1[A = a]``, ``Y = 1[B = b]``, the OLS slope of
``Y`` on ``X`` and the Pearson correlation, related by

    r = beta_1 * sqrt(P(X=1) (1 - P(X=1)) / (P(Y=1) (1 - P(Y=1)))).

For indicators both are functions of three proportions, ``p_x = P(X=1)``, ``p_y = P(Y=1)`` and
``p_xy = P(X=1, Y=1)``: ``cov = p_xy - p_x p_y``, ``beta_1 = cov / (p_x (1 - p_x))`` and
``r = cov / sqrt(p_x (1 - p_x) p_y (1 - p_y))``. They are read off the 2-way contingency table of
the two columns (one ``np.bincount`` per column pair), which costs O(n) per column pair rather
than the O(n K^2) of a Gram matrix over all K indicators.

A column with two categories gives two indicators that mirror each other (``1[B = b'] = 1 -
1[B = b]``): their slopes and correlations with any third indicator are the same numbers with the
sign flipped. Both would count every relationship twice in the means and, placed symmetrically
about 0, inflate any correlation taken over the pairs. Such a column keeps one indicator, its
rarer category in the original (the later one on a tie), as a logistic regression models the
rarer outcome.

The sampling floor. Every pair also carries its slope and correlation (``..._resample``; None
where an indicator is constant in a resample) in :data:`~.yardsticks.DRAWS` seeded resamples of
the original (with replacement) as large as a synthetic set: what the original's own records, drawn again, make of it. The verdict
(:func:`dipsy.evaluation.verdicts.relationships`) counts how many material relationships those
resamples lose by the rule it applies to the release (``"floor"`` of :func:`relationships_section`);
a release that keeps no joint structure loses them all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from .marginals import encode_valid, shared_domain
from .missing import value_numbers
from .yardsticks import DRAWS


def relationships_section(
    original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain, seed: int = 0
) -> dict[str, Any]:
    """The relationships section of the evaluation: ``"indicators"``
    (:func:`indicator_relationships`), ``"numeric"`` (:func:`numeric_correlations`) and
    ``"floor"``, what resamples of the original as large as a set lose of the material relationships
    (:func:`dipsy.evaluation.verdicts.relationship_floor`: ``{"material", "lost", "lost_by_draw",
    "rows", "draws"}``, or None without a material relationship)."""
    from .verdicts import relationship_floor  # the verdict's own rule, so the floor counts as it does

    out: dict[str, Any] = {
        "indicators": indicator_relationships(original, tables, domain, seed=seed),
        "numeric": numeric_correlations(original, tables, domain, seed=seed),
    }
    return out | {"floor": relationship_floor(out)}


def indicator_relationships(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    max_pairs: int = 300,
    seed: int = 0,
    one_per_binary: bool = True,
) -> dict[str, Any]:
    """Slopes and correlations of category indicators, original against each synthetic set.

    Parameters
    ----------
    original
        The confidential data.
    tables
        The m synthetic sets of one release.
    domain
        The public domain; its categorical and ordinal columns present everywhere are used.
    max_pairs
        At most this many indicator pairs, drawn without replacement by
        ``numpy.random.default_rng(seed).choice`` from all pairs (sorted, as below).
    seed
        Seed of that draw.
    one_per_binary
        Keep one indicator of a column with exactly two categories in the original (its rarer
        one), since the other mirrors it (see the module's notes); ``False`` keeps both.

    Returns
    -------
    dict
        ``"pairs"``: a list of ``{"x", "y", "corr_original", "corr_synthetic", "slope_original",
        "slope_synthetic"}`` (``x`` and ``y`` as ``"column=category"``; synthetic values one per
        set, NaN where an indicator is constant in that set) and ``"corr_resample"``,
        ``"slope_resample"`` (in each resample of the module's notes, seeded by
        ``numpy.random.default_rng([seed, 11])``); ``"corr_mean_abs_diff"`` and
        ``"slope_mean_abs_diff"``, the mean of ``|synthetic - original|`` over pairs and sets
        (NaN values skipped), and the same per set (``"..._per_set"``); ``"indicators"``,
        ``"pairs_available"``, ``"pairs_used"``, ``"mirrors_dropped"``; ``"resample"``: ``{"rows", "draws"}``.

    Notes
    -----
    Indicators are the categories with ``0 < P < 1`` in the original, in domain order and then
    category order; pairs join indicators of different columns, ``x`` from the earlier column,
    so each slope is of the later column's indicator on the earlier one's.
    """
    domain = shared_domain(original, tables, domain)
    cats = [c.name for c in domain.columns if c.is_categorical]
    nan_per_set = [math.nan] * len(tables)
    empty = {
        "pairs": [],
        "corr_mean_abs_diff": math.nan,
        "slope_mean_abs_diff": math.nan,
        "corr_mean_abs_diff_per_set": nan_per_set,
        "slope_mean_abs_diff_per_set": list(nan_per_set),
        "indicators": 0,
        "pairs_available": 0,
        "pairs_used": 0,
        "mirrors_dropped": 0,
    }
    if len(cats) < 2:
        return empty
    domain = domain.project(cats)
    sizes = dict(zip(cats, domain.shape()))
    codes = [encode_valid(original, domain, "original")[0]]
    codes += [encode_valid(t, domain, f"synthetic set {k}")[0] for k, t in enumerate(tables, 1)]

    n = len(codes[0][cats[0]])
    col_list: list[int] = []
    code_list: list[int] = []
    mirrors = 0
    for k, name in enumerate(cats):
        counts = np.bincount(codes[0][name], minlength=sizes[name])
        keep = np.flatnonzero((counts > 0) & (counts < n))
        if one_per_binary and len(keep) == 2:
            # Two categories share every record: the rarer one's indicator (the later on a tie).
            keep = keep[[0]] if counts[keep[0]] < counts[keep[1]] else keep[[1]]
            mirrors += 1
        col_list += [k] * len(keep)
        code_list += keep.tolist()
    col_of, code_of = np.array(col_list, dtype=np.int64), np.array(code_list, dtype=np.int64)
    i, j = np.triu_indices(len(col_of), 1)
    different = col_of[i] != col_of[j]
    i, j = i[different], j[different]
    available = len(i)
    if available > max_pairs:
        pick = np.sort(np.random.default_rng(seed).choice(available, size=max_pairs, replace=False))
        i, j = i[pick], j[pick]
    if len(i) == 0:
        return empty | {"indicators": len(col_of), "mirrors_dropped": mirrors}

    moments = [_indicator_moments(c, cats, sizes, col_of[i], code_of[i], col_of[j], code_of[j]) for c in codes]
    corr = np.array([m[0] for m in moments])  # (1 + m, pairs); row 0 is the original
    slope = np.array([m[1] for m in moments])
    # the sampling floor: the same pairs in resamples of the original as large as a set
    rows = _rows([len(c[cats[0]]) for c in codes[1:]])
    rng = np.random.default_rng([seed, 11])  # apart from the pairs' draw above
    picks = [rng.integers(0, n, rows) for _ in range(DRAWS)] if n else []
    again = [
        _indicator_moments({c: codes[0][c][p] for c in cats}, cats, sizes, col_of[i], code_of[i], col_of[j], code_of[j])
        for p in picks
    ]
    corr_re = np.array([m[0] for m in again]).reshape(len(again), len(i))
    slope_re = np.array([m[1] for m in again]).reshape(len(again), len(i))
    texts = {c.name: c.category_texts + (c.missing.texts if c.missing is not None else ()) for c in domain.columns}
    labels = [f"{cats[c]}={texts[cats[c]][v]}" for c, v in zip(col_of, code_of)]
    pairs = [
        {
            "x": labels[a],
            "y": labels[b],
            "corr_original": float(corr[0, p]),
            "corr_synthetic": [float(v) for v in corr[1:, p]],
            "slope_original": float(slope[0, p]),
            "slope_synthetic": [float(v) for v in slope[1:, p]],
            "corr_resample": _finite(corr_re[:, p]),
            "slope_resample": _finite(slope_re[:, p]),
        }
        for p, (a, b) in enumerate(zip(i, j))
    ]
    corr_diff, slope_diff = np.abs(corr[1:] - corr[0]), np.abs(slope[1:] - slope[0])
    return {
        "pairs": pairs,
        "corr_mean_abs_diff": _nanmean(corr_diff),
        "slope_mean_abs_diff": _nanmean(slope_diff),
        "corr_mean_abs_diff_per_set": [_nanmean(d) for d in corr_diff],
        "slope_mean_abs_diff_per_set": [_nanmean(d) for d in slope_diff],
        "indicators": len(col_of),
        "pairs_available": available,
        "pairs_used": len(pairs),
        "mirrors_dropped": mirrors,
        "resample": {"rows": rows, "draws": len(picks)},
    }


def numeric_correlations(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain, seed: int = 0) -> dict[str, Any]:
    """Pearson correlations between integer/numeric columns, original against each set.

    Returns
    -------
    dict
        ``"columns"``; ``"original"`` (matrix as nested lists) and ``"synthetic"`` (one matrix per
        set); ``"pairs"``: ``{"x", "y", "corr_original", "corr_synthetic", "corr_resample"}`` for
        every pair of columns (``corr_resample``: in :data:`~.yardsticks.DRAWS` resamples of the
        original as large as a set, seeded by ``numpy.random.default_rng([seed, 13])``);
        ``"resample"`` (``{"rows", "draws"}``); ``"mean_abs_diff"`` over pairs and sets and
        ``"mean_abs_diff_per_set"``. A correlation with a constant column is NaN (and skipped in
        the means).
    """
    domain = shared_domain(original, tables, domain)
    names = [c.name for c in domain.columns if c.kind in ("integer", "numeric")]
    if len(names) < 2:
        return {
            "columns": names,
            "original": [],
            "synthetic": [],
            "pairs": [],
            "mean_abs_diff": math.nan,
            "mean_abs_diff_per_set": [math.nan] * len(tables),
        }
    domain = domain.project(names)
    frames = [original, *tables]
    whats = ["original"] + [f"synthetic set {k}" for k in range(1, len(tables) + 1)]
    values = [_numeric_matrix(f, domain, w) for f, w in zip(frames, whats)]
    mats = np.array([_corr(v) for v in values])
    # the sampling floor: resamples of the original's complete cases as large as a set's
    rows, n = _rows([len(v) for v in values[1:]]), len(values[0])
    rng = np.random.default_rng([seed, 13])
    again = np.array([_corr(values[0][rng.integers(0, n, rows)]) for _ in range(DRAWS if n else 0)])
    i, j = np.triu_indices(len(names), 1)
    diff = np.abs(mats[1:, i, j] - mats[0, i, j])
    return {
        "columns": names,
        "original": mats[0].tolist(),
        "synthetic": [m.tolist() for m in mats[1:]],
        "pairs": [
            {
                "x": names[a],
                "y": names[b],
                "corr_original": float(mats[0, a, b]),
                "corr_synthetic": [float(v) for v in mats[1:, a, b]],
                "corr_resample": _finite(again[:, a, b]) if len(again) else [],
            }
            for a, b in zip(i, j)
        ],
        "resample": {"rows": rows, "draws": len(again)},
        "mean_abs_diff": _nanmean(diff),
        "mean_abs_diff_per_set": [_nanmean(d) for d in diff],
    }


def _indicator_moments(
    codes: dict[str, np.ndarray],
    cats: list[str],
    sizes: dict[str, int],
    col_x: np.ndarray,
    code_x: np.ndarray,
    col_y: np.ndarray,
    code_y: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Correlation and slope (Y on X) of each indicator pair in one table."""
    n = max(len(codes[cats[0]]), 1)
    # Every column's category shares end to end; a (column, code) pair indexes it at offset + code.
    share = np.concatenate([np.bincount(codes[name], minlength=sizes[name]) / n for name in cats])
    offset = np.concatenate([[0], np.cumsum([sizes[name] for name in cats])[:-1]])
    p_x, p_y = share[offset[col_x] + code_x], share[offset[col_y] + code_y]
    p_xy = np.empty(len(col_x))
    for a, b in {(int(a), int(b)) for a, b in zip(col_x, col_y)}:  # one 2-way table per column pair
        size_b = sizes[cats[b]]
        joint = np.bincount(codes[cats[a]] * size_b + codes[cats[b]], minlength=sizes[cats[a]] * size_b) / n
        here = (col_x == a) & (col_y == b)
        p_xy[here] = joint[code_x[here] * size_b + code_y[here]]
    cov = p_xy - p_x * p_y
    var_x, var_y = p_x * (1 - p_x), p_y * (1 - p_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.where((var_x > 0) & (var_y > 0), cov / np.sqrt(var_x * var_y), np.nan)
        slope = np.where(var_x > 0, cov / var_x, np.nan)
    return corr, slope


def _numeric_matrix(frame: pd.DataFrame, domain: Domain, what: str) -> np.ndarray:
    """The valid rows' numbers, one column each; rows in a declared missing state of any column
    left out (complete cases: a state is no number)."""
    _, valid = encode_valid(frame, domain, what)
    values = np.column_stack([value_numbers(frame[c.name][valid], c) for c in domain.columns])
    return values[~np.isnan(values).any(axis=1)] if any(c.missing is not None for c in domain.columns) else values


def _corr(values: np.ndarray) -> np.ndarray:
    """Pearson correlation matrix; NaN in the rows and columns of constant columns."""
    centred = values - values.mean(axis=0)
    cov = centred.T @ centred / max(len(values), 1)
    sd = np.sqrt(np.diag(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = cov / np.outer(sd, sd)
    out[~np.isfinite(out)] = np.nan
    return out


def _finite(values: np.ndarray) -> list[float | None]:
    """Resample values as a list, None where an indicator or column is constant in a resample (so
    that two seeded runs compare equal)."""
    return [float(v) if np.isfinite(v) else None for v in values]


def _rows(sizes: Sequence[int]) -> int:
    """The rows of a resample: a synthetic set's, their mean over sets (at least 1)."""
    return max(int(round(float(np.mean(sizes)))), 1) if sizes else 1


def _nanmean(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else math.nan
