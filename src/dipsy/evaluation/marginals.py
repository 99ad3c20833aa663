"""Distances between the k-way marginals of the original and of each synthetic set.

A marginal over columns ``S`` is the contingency table of ``S``, normalised to proportions; the
distance between two marginals is their total variation distance (TVD),
``0.5 * sum_cells |p - q|``. Summaries follow the NIST 2020 Differential Privacy Temporal Map
challenge: its k-marginal score is ``(2 - mean L1) * 500 = 1000 * (1 - mean TVD)`` over column
pairs (SDNist sprint 2, ``sdnist/kmarginal.py`` @df99d2a; METHODS.md §4.1), in [0, 1000], 1000 for
identical marginals. The score of random subsamples of the original is reported beside it, as
the yardstick of what a non-private sample of that size would reach.

The evaluation reads the confidential original: it is for the data steward, and not private.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain, encode_frame, valid_rows
from ..errors import DataError

logger = logging.getLogger(__name__)

#: Fractions of the original drawn (without replacement) for the k-marginal baselines.
BASELINE_FRACTIONS = (0.01, 0.05, 0.10, 0.25, 0.50)


def marginal_tvd(p_counts: np.ndarray, q_counts: np.ndarray) -> float:
    """Total variation distance between two count arrays over the same cells.

    ``TVD = 0.5 * sum_i |p_i / sum(p) - q_i / sum(q)|``, in [0, 1]; half the L1 distance that
    SDNist's k-marginal score averages (METHODS.md §4.1).

    Parameters
    ----------
    p_counts, q_counts
        Non-negative counts (any shape, the same for both), each with a positive total.

    >>> marginal_tvd(np.array([3, 1]), np.array([1, 1]))
    0.25
    >>> marginal_tvd(np.array([5, 0]), np.array([0, 2]))
    1.0
    """
    p, q = np.asarray(p_counts, dtype=float), np.asarray(q_counts, dtype=float)
    if p.shape != q.shape:
        raise ValueError(f"the count arrays have shapes {p.shape} and {q.shape}; they must cover the same cells")
    if p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("a count array has no mass; a marginal needs at least one record")
    return float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())


def shared_domain(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> Domain:
    """The domain's columns present in the original and in every synthetic set (domain order)."""
    if len(tables) == 0:
        raise DataError("there is no synthetic set to evaluate", "pass the m synthetic tables of a release")
    frames = [original, *tables]
    names = [n for n in domain.names if all(n in f.columns for f in frames)]
    if not names:
        raise DataError(
            "the original and the synthetic sets share no column of the domain",
            "evaluate a release against the data it was made from",
        )
    return domain.project(names)


def encode_valid(frame: pd.DataFrame, domain: Domain, what: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Codes of the rows of ``frame`` that match ``domain``, and the mask of those rows.

    Rows that do not match (missing, wrong type, outside the domain) should not occur in data
    that was synthesised or checked against the domain; they are dropped with a warning rather
    than failing the whole evaluation. Numeric columns without bins get code ``-1``.
    """
    encoded, report = encode_frame(frame, domain)
    if report.missing_columns:
        report.raise_if_invalid()
    valid = valid_rows(encoded, len(frame))
    if not valid.all():
        logger.warning("%s: %s; those rows are left out of the metrics", what, report.summary())
    return {name: e.codes[valid] for name, e in encoded.items()}, valid


def kway_marginals(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    three_way: int = 64,
    seed: int = 0,
    repeated: Sequence[str] = (),
) -> dict[str, Any]:
    """TVD of every 1-way and 2-way marginal and of a seeded sample of 3-way marginals.

    Parameters
    ----------
    original
        The confidential data.
    tables
        The m synthetic sets of one release.
    domain
        The public domain; only its encodable columns (numeric ones need bins) that are in the
        original and in every set are used.
    three_way
        At most this many 3-way marginals, drawn without replacement by
        ``numpy.random.default_rng(seed).choice`` from the lexicographically sorted list of
        column triples (domain order). The same generator then draws the baseline subsamples.
    seed
        Seed of those draws.
    repeated
        Columns the release repeats as they are (its relation's public columns): a pair of two of
        them is the original's own, and lifts the whole-file score without anything synthesized.

    Returns
    -------
    dict
        ``"1-way"``, ``"2-way"``, ``"3-way"``: each ``{"mean_tvd", "worst_tvd", "worst_columns",
        "count", "marginals"}``, where ``marginals`` lists ``{"columns", "tvd"}`` (TVD per set),
        ``mean_tvd`` is the mean over marginals of the mean over sets and ``worst_*`` the marginal
        with the largest mean over sets; the 3-way entry adds ``"available"`` (all triples).
        ``"k_marginal_score"``: ``{"score", "per_set", "baselines"}``, the SDNist score
        ``1000 * (1 - mean 2-way TVD)`` (mean over sets, and per set), and for each fraction in
        :data:`BASELINE_FRACTIONS` ``{"fraction", "rows", "score"}`` of a random subsample of the
        original scored against the full original. Undefined values (fewer than 2 or 3 columns)
        are NaN. With ``repeated`` columns among the scored ones and some synthesized ones,
        ``"synthesized"``: ``{"repeated", "pairs", "score", "per_set", "baselines"}``, the same
        score over the pairs that hold a synthesized column.

    Notes
    -----
    Counts come from one ``np.bincount`` per marginal over the flat cell index of every record
    of every table at once. When the cross-tabulation has more cells than twice the records,
    the flat index is first compressed to the occupied cells with ``np.unique``; cells empty in
    every table add nothing to a TVD, so the distances are exact.
    """
    domain = shared_domain(original, tables, domain)
    cols = [c for c in domain.columns if c.encodable]
    if not cols:
        raise DataError(
            "no column of the domain can be counted (numeric columns need bins)",
            "give numeric columns 'bins:' in the domain file",
        )
    domain = domain.project([c.name for c in cols])
    names, sizes = list(domain.names), dict(zip(domain.names, domain.shape()))
    codes = [encode_valid(original, domain, "original")[0]]
    codes += [encode_valid(t, domain, f"synthetic set {k}")[0] for k, t in enumerate(tables, 1)]
    n_orig = len(codes[0][names[0]])
    if n_orig == 0 or any(len(c[names[0]]) == 0 for c in codes[1:]):
        raise DataError("the original or a synthetic set has no row that matches the domain", "check the data against the domain")

    rng = np.random.default_rng(seed)
    available = math.comb(len(names), 3)
    pick = (
        np.sort(rng.choice(available, size=min(three_way, available), replace=False))
        if available
        else np.empty(0, dtype=np.int64)
    )
    # The i-th triple of the sorted list, found without listing all C(K, 3) of them.
    chosen = [tuple(names[k] for k in nth_combination(len(names), 3, int(i))) for i in pick]
    # Baseline subsamples are appended as extra groups of rows of the original, so one bincount
    # per pair counts the original, every set and every subsample.
    subs = [rng.choice(n_orig, size=max(1, round(f * n_orig)), replace=False) for f in BASELINE_FRACTIONS]
    groups = len(codes) + len(subs)
    stacked = {n: np.concatenate([c[n] for c in codes] + [codes[0][n][s] for s in subs]) for n in names}
    group = np.repeat(np.arange(groups), [len(c[names[0]]) for c in codes] + [len(s) for s in subs])
    main = len(group) - sum(len(s) for s in subs)  # rows of the original and the sets

    def tvds(columns: tuple[str, ...], with_subsamples: bool = False) -> np.ndarray:
        rows, present = (slice(None), groups) if with_subsamples else (slice(0, main), len(codes))
        counts = _group_counts([stacked[n][rows] for n in columns], [sizes[n] for n in columns], group[rows], present)
        prop = counts / counts.sum(axis=1, keepdims=True)
        return 0.5 * np.abs(prop[1:] - prop[0]).sum(axis=1)  # against the original, row 0

    out: dict[str, Any] = {}
    out["1-way"] = _summary([(n,) for n in names], [tvds((n,)) for n in names])
    pairs = list(combinations(names, 2))
    pair_tvd = np.array([tvds(p, with_subsamples=True) for p in pairs]).reshape(len(pairs), groups - 1)
    m = len(codes) - 1
    out["2-way"] = _summary(pairs, list(pair_tvd[:, :m]))
    out["3-way"] = _summary(chosen, [tvds(t) for t in chosen]) | {"available": available}
    score = 1000.0 * (1.0 - pair_tvd.mean(axis=0)) if pairs else np.full(groups - 1, np.nan)
    out["k_marginal_score"] = {
        "score": float(score[:m].mean()),
        "per_set": [float(s) for s in score[:m]],
        "baselines": [
            {"fraction": f, "rows": int(len(s)), "score": float(v)} for f, s, v in zip(BASELINE_FRACTIONS, subs, score[m:])
        ],
    }
    kept = [c for c in names if c in set(repeated)]
    synthesized = [k for k, p in enumerate(pairs) if not set(p) <= set(kept)]
    if kept and synthesized:
        part = 1000.0 * (1.0 - pair_tvd[synthesized].mean(axis=0))
        out["synthesized"] = {
            "repeated": kept,
            "pairs": len(synthesized),
            "score": float(part[:m].mean()),
            "per_set": [float(v) for v in part[:m]],
            "baselines": [
                {"fraction": f, "rows": int(len(s)), "score": float(v)} for f, s, v in zip(BASELINE_FRACTIONS, subs, part[m:])
            ],
        }
    return out


def _group_counts(codes: list[np.ndarray], sizes: list[int], group: np.ndarray, groups: int) -> np.ndarray:
    """Counts per group (rows) of every cell of the cross-tabulation of ``codes`` (columns)."""
    flat, cells = codes[0].astype(np.int64), sizes[0]
    limit = max(2 * len(flat), 1)
    for c, size in zip(codes[1:], sizes[1:]):
        if cells > limit:
            # Keep the flat index small (and far from int64 overflow): only occupied cells matter.
            flat, cells = _compress(flat)
        flat, cells = flat * size + c, cells * size
    if cells > limit:
        flat, cells = _compress(flat)
    return np.bincount(group * cells + flat, minlength=groups * cells).reshape(groups, cells).astype(float)


def nth_combination(n: int, k: int, index: int) -> list[int]:
    """The ``index``-th k-subset of ``range(n)`` in lexicographic order (as itertools lists them).

    >>> from itertools import combinations
    >>> all(nth_combination(5, 3, i) == list(c) for i, c in enumerate(combinations(range(5), 3)))
    True
    """
    out, first = [], 0
    for slot in range(k, 0, -1):
        # Skip whole blocks of subsets that start with ``first`` while the index lies beyond them.
        while index >= (block := math.comb(n - first - 1, slot - 1)):
            index -= block
            first += 1
        out.append(first)
        first += 1
    return out


def _compress(flat: np.ndarray) -> tuple[np.ndarray, int]:
    cells, inverse = np.unique(flat, return_inverse=True)
    return inverse.ravel().astype(np.int64), max(len(cells), 1)


def _summary(columns: Sequence[tuple[str, ...]], tvd: list[np.ndarray]) -> dict[str, Any]:
    """Mean, worst and per-marginal TVDs of one order of marginals."""
    if not columns:
        return {"mean_tvd": math.nan, "worst_tvd": math.nan, "worst_columns": [], "count": 0, "marginals": []}
    means = np.array([t.mean() for t in tvd])
    worst = int(np.argmax(means))
    return {
        "mean_tvd": float(means.mean()),
        "worst_tvd": float(means[worst]),
        "worst_columns": list(columns[worst]),
        "count": len(columns),
        "marginals": [{"columns": list(c), "tvd": [float(v) for v in t]} for c, t in zip(columns, tvd)],
    }
