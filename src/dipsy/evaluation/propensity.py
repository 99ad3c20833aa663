"""Propensity-score mean squared error (pMSE): can a classifier tell synthetic from original?

Stack the original (label 0) and one synthetic set (label 1), fit a classifier of the label on
the columns, and measure how far the fitted propensities ``p_i`` stray from the share of
synthetic rows ``c = n_syn / N`` (Woo, Reiter, Oganian & Karr 2009, J. Privacy and
Confidentiality 1(1); Snoke, Raab, Nowok, Dibben & Slavkovic 2018, JRSS-A 181(3) 663-688)::

    pMSE = (1/N) sum_i (p_i - c)^2.

pMSE alone depends on the model; Snoke et al. compare it with its expectation when both samples
come from the same distribution. For logistic regression with ``k`` parameters (intercept
included) that null is analytic (Snoke et al. 2018, Sec. 2.2)::

    E[pMSE] = (k - 1) (1 - c)^2 c / N,    SD[pMSE] = sqrt(2 (k - 1)) (1 - c)^2 c / N;

for CART it is estimated by refitting on permuted labels. Reported: the pMSE, the null mean
and SD, the standardised pMSE ``(pMSE - mean) / SD`` (about N(0, 1)-sized when indistinguishable,
large when not) and the ratio ``pMSE / mean`` (about 1 when indistinguishable).

Features: categorical and ordinal columns one-hot over the categories present in the stacked
data, the first dropped (the intercept holds it); integer and numeric columns standardised by
the stacked mean and SD; constant features are dropped (they carry no parameter). Each side is
subsampled (seeded, without replacement) to at most ``max_rows`` rows so a census-sized table is
scored in seconds; the rows used are reported.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from ..domain import Domain
from ..errors import DataError
from .marginals import encode_valid, shared_domain

MODELS = ("logistic", "cart")
#: Rows per side at most (original and synthetic), drawn without replacement.
MAX_ROWS = 20_000
#: A very weak L2 penalty: it keeps the coefficients finite when a category occurs on one side
#: only (separation), and otherwise matches the unpenalised MLE that the analytic null assumes.
LOGISTIC_C = 1e6
LOGISTIC_MAX_ITER = 1000
#: Newton-Cholesky converges in a few steps when rows far outnumber features (one-hot designs);
#: past this many features its O(N p^2) Hessian costs more than L-BFGS.
NEWTON_MAX_FEATURES = 1000
#: CART complexity: leaves hold at least this share of the stacked rows (rpart-like coarseness).
MIN_LEAF_FRACTION = 0.01

CART_CAVEAT = (
    "CART has no analytic null distribution of the pMSE: its null mean and SD come from refitting "
    "the same tree on permuted labels, and depend on the tree's complexity (by default leaves of at "
    "least 1% of the stacked rows; see min_samples_leaf). A standardised pMSE near 0 means the sets "
    "are indistinguishable at that complexity, not indistinguishable in general; a finer tree, or "
    "another classifier, may still tell them apart (Snoke, Raab, Nowok, Dibben & Slavkovic 2018)."
)


def pmse(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    domain: Domain,
    model: str = "logistic",
    seed: int = 0,
    permutations: int = 20,
    max_rows: int = MAX_ROWS,
    min_leaf_fraction: float = MIN_LEAF_FRACTION,
) -> dict[str, Any]:
    """The pMSE of one synthetic set against the original, with its null and standardisation.

    Parameters
    ----------
    original, synthetic
        The confidential data and one synthetic set.
    domain
        The public domain; the columns present in both frames are the classifier's features.
    model
        ``"logistic"`` (main effects, analytic null) or ``"cart"`` (a decision tree with leaves
        of at least ``min_leaf_fraction`` of the stacked rows; permutation null).
    seed
        Seed of the subsamples, the permutations and the tree's tie-breaking.
    permutations
        Label permutations refitted for the CART null.
    max_rows
        Rows per side at most.
    min_leaf_fraction
        CART complexity: ``min_samples_leaf = ceil(min_leaf_fraction * N)``.

    Returns
    -------
    dict
        ``"model"``, ``"pmse"``, ``"null_mean"``, ``"null_sd"``, ``"standardised"``, ``"ratio"``,
        ``"null"`` (``"analytic"`` or ``"permutation"``), ``"c"``, ``"rows_used"``
        (``{"original", "synthetic"}``); logistic adds ``"parameters"`` (k) and ``"converged"``,
        CART adds ``"min_samples_leaf"``, ``"permutations"`` and ``"caveat"``.
    """
    if model not in MODELS:
        raise DataError(f"unknown pMSE model {model!r}", f"use one of {', '.join(MODELS)}")
    rng = np.random.default_rng(seed)
    x, y, rows = _design(original, synthetic, domain, rng, max_rows)
    if model == "logistic":
        return _logistic(x, y) | {"rows_used": rows}
    return _cart(x, y, rng, seed, permutations, min_leaf_fraction) | {"rows_used": rows}


def pmse_all(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    seed: int = 0,
    permutations: int = 20,
    max_rows: int = MAX_ROWS,
) -> dict[str, Any]:
    """Logistic and CART pMSE of every synthetic set (the same numbers :func:`pmse` gives).

    Returns
    -------
    dict
        ``"logistic"`` and ``"cart"``: ``{"pmse", "null_mean", "null_sd", "standardised",
        "ratio"}`` as lists (one value per set) and their means ``"pmse_mean"``,
        ``"standardised_mean"``; logistic adds ``"parameters"`` and ``"converged"`` (lists), CART
        ``"min_samples_leaf"`` (list) and ``"permutations"``. Also ``"rows_used"`` (per set,
        ``{"original", "synthetic"}``), ``"max_rows"`` and ``"caveat"`` (:data:`CART_CAVEAT`).
    """
    per_model: dict[str, list[dict[str, Any]]] = {"logistic": [], "cart": []}
    rows_used = []
    for table in tables:
        rng = np.random.default_rng(seed)  # as pmse(..., seed=seed): same draws for every set
        x, y, rows = _design(original, table, domain, rng, max_rows)
        rows_used.append(rows)
        per_model["logistic"].append(_logistic(x, y))
        per_model["cart"].append(_cart(x, y, rng, seed, permutations, MIN_LEAF_FRACTION))
    out: dict[str, Any] = {}
    for name, results in per_model.items():
        keys = ["pmse", "null_mean", "null_sd", "standardised", "ratio"]
        keys += ["parameters", "converged"] if name == "logistic" else ["min_samples_leaf"]
        out[name] = {k: [r[k] for r in results] for k in keys}
        out[name]["pmse_mean"] = float(np.mean(out[name]["pmse"]))
        out[name]["standardised_mean"] = float(np.mean(out[name]["standardised"]))
    out["cart"]["permutations"] = permutations
    out.update(rows_used=rows_used, max_rows=max_rows, caveat=CART_CAVEAT)
    return out


def _design(
    original: pd.DataFrame, synthetic: pd.DataFrame, domain: Domain, rng: np.random.Generator, max_rows: int
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Feature matrix, labels (0 original, 1 synthetic) and the rows used per side."""
    domain = shared_domain(original, [synthetic], domain)
    parts = []
    for frame, what in ((original, "original"), (synthetic, "synthetic set")):
        if len(frame) > max_rows:
            frame = frame.iloc[np.sort(rng.choice(len(frame), size=max_rows, replace=False))]
        codes, valid = encode_valid(frame, domain, what)
        parts.append((frame.loc[valid] if not valid.all() else frame, codes))
    n0, n1 = (len(p[0]) for p in parts)
    if n0 == 0 or n1 == 0:
        raise DataError("the original or the synthetic set has no row that matches the domain",
                        "check the data against the domain")
    features = []
    for column in domain.columns:
        if column.is_categorical:
            codes = np.concatenate([p[1][column.name] for p in parts])
            levels, inverse = np.unique(codes, return_inverse=True)
            features.append((inverse.ravel()[:, None] == np.arange(1, len(levels))).astype(float))
        else:
            v = np.concatenate([pd.to_numeric(p[0][column.name]).to_numpy(dtype=float) for p in parts])
            sd = v.std()
            if sd > 0:
                features.append(((v - v.mean()) / sd)[:, None])
    x = np.hstack(features) if features else np.empty((n0 + n1, 0))
    y = np.repeat(np.array([0, 1]), [n0, n1])
    return x, y, {"original": n0, "synthetic": n1}


def _logistic(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    n, c = len(y), float(y.mean())
    k = x.shape[1] + 1
    converged = True
    if x.shape[1] == 0:
        p = np.full(n, c)  # the intercept-only fit
    else:
        solver = "newton-cholesky" if x.shape[1] <= NEWTON_MAX_FEATURES else "lbfgs"
        # A tight tolerance: the pMSE is a small number, and a loosely converged fit shifts it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported as "converged" instead
            fit = LogisticRegression(C=LOGISTIC_C, solver=solver, tol=1e-8, max_iter=LOGISTIC_MAX_ITER).fit(x, y)
        p = fit.predict_proba(x)[:, 1]
        converged = bool(np.max(fit.n_iter_) < LOGISTIC_MAX_ITER)
    scale = (1 - c) ** 2 * c / n  # Snoke et al. (2018): null of a k-parameter logistic pMSE
    stats = _standardise(_score(p, c), (k - 1) * scale, math.sqrt(2 * (k - 1)) * scale)
    return {"model": "logistic", "null": "analytic", "c": c, "parameters": k, "converged": converged} | stats


def _cart(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator, seed: int, permutations: int, min_leaf_fraction: float
) -> dict[str, Any]:
    if permutations < 2:
        raise DataError(f"the CART null needs at least 2 permutations, got {permutations}", "pass permutations >= 2")
    n, c = len(y), float(y.mean())
    leaf = max(1, math.ceil(min_leaf_fraction * n))
    x = np.asfortranarray(x, dtype=np.float32)  # the trees' own layout, converted once, not per fit

    def fitted(labels: np.ndarray) -> float:
        if x.shape[1] == 0:
            return 0.0
        tree = DecisionTreeClassifier(min_samples_leaf=leaf, random_state=seed).fit(x, labels)
        return _score(tree.predict_proba(x)[:, 1], c)

    observed = fitted(y)
    null = np.array([fitted(rng.permutation(y)) for _ in range(permutations)])
    stats = _standardise(observed, float(null.mean()), float(null.std(ddof=1)))
    return {"model": "cart", "null": "permutation", "c": c, "min_samples_leaf": leaf, "permutations": permutations,
            "caveat": CART_CAVEAT} | stats


def _score(p: np.ndarray, c: float) -> float:
    return float(np.mean((p - c) ** 2))


def _standardise(value: float, mean: float, sd: float) -> dict[str, float]:
    return {
        "pmse": value,
        "null_mean": mean,
        "null_sd": sd,
        "standardised": (value - mean) / sd if sd > 0 else math.nan,
        "ratio": value / mean if mean > 0 else math.nan,
    }
