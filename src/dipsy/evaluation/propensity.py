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

The logistic model, the headline, adds pairwise interactions to those main effects, as synthpop's
``utility.gen`` does by default (``maxorder = 1``; the choice of model is Snoke et al.'s point): a
main-effects model only sees each column's own distribution, so a release that keeps every
marginal and breaks every relationship (each column shuffled on its own) scores as well as the
original's own subsample. An interaction is the product of an interaction feature of one column
with one of another column: a categorical column contributes the indicators of its
``INTERACTION_LEVELS - 1`` most common categories in the stacked data (the most common, the
reference, omitted; rarer ones pooled with it), a numeric column its standardised value; numeric
columns also get their square. The design is bounded at :data:`MAX_DESIGN_COLUMNS` columns
(synthpop's ``max.params``): if all pairs do not fit, fewer categories per column enter the
interactions, down to one; if they still do not fit, a seeded sample of column pairs does. The
analytic null uses the rank of the design (products can repeat a main effect when a category
occurs only with another), so ``k`` is the number of free parameters.

CART sees the main-effect features and finds interactions by splitting; its permutation null
depends on its complexity, and with leaves of 1 % of the rows on a table of a thousand records it
barely tells an independent-columns release from a good one, so it is shown beside the headline,
not as it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

from ..domain import Domain
from ..domain.codec import states
from ..errors import DataError
from .marginals import encode_valid, shared_domain
from .missing import value_numbers
from .numeric import redraw_in_bins

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
#: Columns of the logistic design at most (main effects, interactions and squares), as synthpop's
#: ``utility.gen`` bounds its logit model (``max.params = 400``): every pair of columns fits, by one
#: indicator each for the 16 columns of the ACS example, by three for the 7 of Adult's; and the
#: (sparse) fit takes seconds on 40,000 rows.
MAX_DESIGN_COLUMNS = 400
#: Categories per categorical column in the interactions, the reference included (so at most three
#: indicators): the common categories carry most of a relationship, and K^2 products per pair of
#: columns would exhaust the bound on the first pair of wide columns.
INTERACTION_LEVELS = 4
#: The model whose pMSE the report and the verdict lead with.
HEADLINE = "logistic"

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
    interactions: bool = True,
) -> dict[str, Any]:
    """The pMSE of one synthetic set against the original, with its null and standardisation.

    Parameters
    ----------
    original, synthetic
        The confidential data and one synthetic set.
    domain
        The public domain; the columns present in both frames are the classifier's features.
    model
        ``"logistic"`` (main effects and pairwise interactions, analytic null) or ``"cart"`` (a
        decision tree with leaves of at least ``min_leaf_fraction`` of the stacked rows;
        permutation null).
    seed
        Seed of the subsamples, the permutations and the tree's tie-breaking.
    permutations
        Label permutations refitted for the CART null.
    max_rows
        Rows per side at most.
    min_leaf_fraction
        CART complexity: ``min_samples_leaf = ceil(min_leaf_fraction * N)``.
    interactions
        Logistic only: add the pairwise interactions (default); ``False`` fits main effects only.

    Returns
    -------
    dict
        ``"model"``, ``"pmse"``, ``"null_mean"``, ``"null_sd"``, ``"standardised"``, ``"ratio"``,
        ``"null"`` (``"analytic"`` or ``"permutation"``), ``"c"``, ``"rows_used"``
        (``{"original", "synthetic"}``); logistic adds ``"parameters"`` (k, the rank of the
        design with the intercept), ``"converged"`` and ``"design"`` (see :func:`logistic_design`),
        CART adds ``"min_samples_leaf"``, ``"permutations"`` and ``"caveat"``.
    """
    if model not in MODELS:
        raise DataError(f"unknown pMSE model {model!r}", f"use one of {', '.join(MODELS)}")
    rng = np.random.default_rng(seed)
    features, y, rows = _features(original, synthetic, domain, rng, max_rows)
    if model == "logistic":
        x, design = logistic_design(features, seed, interactions)
        return _logistic(x, y) | {"design": design, "rows_used": rows}
    return _cart(_main(features, len(y)), y, rng, seed, permutations, min_leaf_fraction) | {"rows_used": rows}


def pmse_all(
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    domain: Domain,
    seed: int = 0,
    permutations: int = 20,
    max_rows: int = MAX_ROWS,
) -> dict[str, Any]:
    """Logistic and CART pMSE of every synthetic set (the same numbers :func:`pmse` gives), and
    the logistic pMSE of the original against itself with every column shuffled on its own.

    That independent-columns version keeps every one-way distribution and no relationship
    between columns: it is the yardstick of a release that learnt nothing but the marginals, as
    the subsamples are for the k-marginal score.

    Returns
    -------
    dict
        ``"logistic"`` and ``"cart"``: ``{"pmse", "null_mean", "null_sd", "standardised",
        "ratio"}`` as lists (one value per set) and their means ``"pmse_mean"``,
        ``"standardised_mean"``; logistic adds ``"parameters"``, ``"converged"`` and ``"design"``
        (lists), CART ``"min_samples_leaf"`` (list) and ``"permutations"``. ``"independent"``: the
        logistic ``{"pmse", "null_mean", "null_sd", "standardised", "ratio", "parameters",
        "seed"}`` of the independent-columns version; ``"floor"``: the same of the original with
        its binned numeric values redrawn inside their bins (:func:`.numeric.redraw_in_bins`),
        what a perfect synthesizer of those bins would score, or None without such a column.
        Also ``"headline"`` (:data:`HEADLINE`), ``"rows_used"`` (per set, ``{"original",
        "synthetic"}``), ``"max_rows"``, ``"max_design_columns"`` and ``"caveat"``
        (:data:`CART_CAVEAT`).
    """
    per_model: dict[str, list[dict[str, Any]]] = {"logistic": [], "cart": []}
    rows_used = []
    for table in tables:
        rng = np.random.default_rng(seed)  # as pmse(..., seed=seed): same draws for every set
        features, y, rows = _features(original, table, domain, rng, max_rows)
        rows_used.append(rows)
        x, design = logistic_design(features, seed)
        per_model["logistic"].append(_logistic(x, y) | {"design": design})
        per_model["cart"].append(_cart(_main(features, len(y)), y, rng, seed, permutations, MIN_LEAF_FRACTION))
    out: dict[str, Any] = {}
    for name, results in per_model.items():
        keys = ["pmse", "null_mean", "null_sd", "standardised", "ratio"]
        keys += ["parameters", "converged", "design"] if name == "logistic" else ["min_samples_leaf"]
        out[name] = {k: [r[k] for r in results] for k in keys}
        out[name]["pmse_mean"] = float(np.mean(out[name]["pmse"]))
        out[name]["standardised_mean"] = float(np.mean(out[name]["standardised"]))
    out["cart"]["permutations"] = permutations
    out["independent"] = independent_baseline(original, domain, seed, max_rows)
    out["floor"] = floor_baseline(original, domain, seed, max_rows)
    out.update(
        headline=HEADLINE, rows_used=rows_used, max_rows=max_rows, max_design_columns=MAX_DESIGN_COLUMNS, caveat=CART_CAVEAT
    )
    return out


def independent_columns(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``frame`` with each column shuffled on its own (seeded): the same marginals, independent columns.

    >>> f = pd.DataFrame({"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]})
    >>> g = independent_columns(f, seed=1)
    >>> sorted(g["a"]) == [1, 2, 3, 4] and list(g.columns) == ["a", "b"]
    True
    """
    rng = np.random.default_rng([seed, 1])  # its own stream: not the subsamples' draws
    return pd.DataFrame({c: frame[c].to_numpy()[rng.permutation(len(frame))] for c in frame.columns})


def independent_baseline(original: pd.DataFrame, domain: Domain, seed: int = 0, max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """The headline (logistic) pMSE of ``original`` against :func:`independent_columns` of it."""
    return _baseline(original, independent_columns(original, seed), domain, seed, max_rows)


def floor_baseline(original: pd.DataFrame, domain: Domain, seed: int = 0, max_rows: int = MAX_ROWS) -> dict[str, Any] | None:
    """The headline pMSE of ``original`` against itself redrawn inside its numeric bins; None
    when no integer or numeric column of ``domain`` (present in ``original``) has bins."""
    if not any(c.kind in ("integer", "numeric") and c.bins is not None and c.name in original for c in domain.columns):
        return None
    return _baseline(original, redraw_in_bins(original, domain, seed), domain, seed, max_rows)


def _baseline(original: pd.DataFrame, other: pd.DataFrame, domain: Domain, seed: int, max_rows: int) -> dict[str, Any]:
    result = pmse(original, other, domain, "logistic", seed=seed, max_rows=max_rows)
    keys = ("pmse", "null_mean", "null_sd", "standardised", "ratio", "parameters")
    return {k: result[k] for k in keys} | {"seed": seed}


def _features(
    original: pd.DataFrame, synthetic: pd.DataFrame, domain: Domain, rng: np.random.Generator, max_rows: int
) -> tuple[list[_Column], np.ndarray, dict[str, int]]:
    """Each column's features, the labels (0 original, 1 synthetic) and the rows used per side."""
    domain = shared_domain(original, [synthetic], domain)
    parts = []
    for frame, what in ((original, "original"), (synthetic, "synthetic set")):
        if len(frame) > max_rows:
            frame = frame.iloc[np.sort(rng.choice(len(frame), size=max_rows, replace=False))]
        codes, valid = encode_valid(frame, domain, what)
        parts.append((frame.loc[valid] if not valid.all() else frame, codes))
    n0, n1 = (len(p[0]) for p in parts)
    if n0 == 0 or n1 == 0:
        raise DataError(
            "the original or the synthetic set has no row that matches the domain", "check the data against the domain"
        )
    features = []
    for column in domain.columns:
        if column.is_categorical:
            stacked = np.concatenate([p[1][column.name] for p in parts])
            levels, inverse = np.unique(stacked, return_inverse=True)
            inverse = inverse.ravel()
            if len(levels) > 1:
                # Levels by frequency in the stacked data (ties: domain order); the most common is
                # the interactions' reference, the next ones enter them.
                common = np.argsort(-np.bincount(inverse), kind="stable")
                features.append(
                    _Column(column.name, (inverse[:, None] == np.arange(1, len(levels))).astype(float), inverse, common[1:])
                )
        elif column.missing is None:
            v = np.concatenate([pd.to_numeric(p[0][column.name]).to_numpy(dtype=float) for p in parts])
            sd = v.std()
            if sd > 0:
                z = (v - v.mean()) / sd
                features.append(_Column(column.name, z[:, None], None, None))
        else:  # a state is no number: z of the values (0 in a state) and an indicator per state
            v = np.concatenate([value_numbers(p[0][column.name], column) for p in parts])
            state = np.concatenate([states(p[0][column.name], column) for p in parts])
            present = ~np.isnan(v)
            main = []
            sd = v[present].std() if present.any() else 0.0
            if sd > 0:
                main.append(np.where(present, (v - v[present].mean()) / sd, 0.0))
            for s in range(column.n_states):
                if 0 < (state == s).sum() < len(state):
                    main.append((state == s).astype(float))
            if main:
                features.append(_Column(column.name, np.column_stack(main), None, None))
    y = np.repeat(np.array([0, 1]), [n0, n1])
    return features, y, {"original": n0, "synthetic": n1}


@dataclass(frozen=True)
class _Column:
    """One column's main-effect features; for a categorical one, its level of each row and its
    non-reference levels, most common first (the candidates for interactions)."""

    name: str
    main: np.ndarray
    levels: np.ndarray | None
    common: np.ndarray | None

    def interaction(self, indicators: int) -> np.ndarray:
        """The column's features in interactions: up to ``indicators`` category indicators, or z."""
        if self.levels is None or self.common is None:  # both or neither
            return self.main
        return (self.levels[:, None] == self.common[:indicators]).astype(float)


def _main(features: Sequence[_Column], n: int) -> np.ndarray:
    return np.hstack([f.main for f in features]) if features else np.empty((n, 0))


def logistic_design(
    features: Sequence[_Column], seed: int = 0, interactions: bool = True, max_columns: int = MAX_DESIGN_COLUMNS
) -> tuple[sparse.csr_matrix, dict[str, Any]]:
    """The logistic model's design: main effects, squares of numeric columns, pairwise interactions.

    Main effects always enter, whatever their number. The rest of the bound ``max_columns`` goes
    to interactions with the most categories per column (at most ``INTERACTION_LEVELS - 1``
    indicators) for which every pair of columns fits; with one indicator per column and still too
    many pairs, a sample of pairs drawn by ``numpy.random.default_rng([seed, 2])`` fills it.

    Returns
    -------
    tuple
        The matrix, sparse (indicators and their products are mostly 0: the fit and the rank
        then cost a fraction of the dense ones), with the columns constant in the stacked data
        dropped; and ``{"main", "squares", "interactions", "indicators_per_column", "pairs",
        "pairs_available", "columns", "max_columns", "description"}``.
    """
    n = len(features[0].main) if features else 0
    main = _main(features, n)
    numeric = [f for f in features if f.levels is None]
    blocks = [sparse.csr_matrix(main)]
    design = {
        "main": main.shape[1],
        "squares": 0,
        "interactions": 0,
        "indicators_per_column": 0,
        "pairs": 0,
        "pairs_available": math.comb(len(features), 2),
        "max_columns": max_columns,
    }
    if interactions and features:
        room = max_columns - main.shape[1]
        squares = [sparse.csr_matrix(f.main**2) for f in numeric][: max(room, 0)]
        blocks += squares
        room -= len(squares)
        pairs = list(combinations(range(len(features)), 2))
        chosen, width = [], 0
        for width in range(INTERACTION_LEVELS - 1, 0, -1):
            sizes = [f.interaction(width).shape[1] for f in features]
            if sum(sizes[a] * sizes[b] for a, b in pairs) <= room:
                chosen = pairs
                break
        else:
            width = 1
            if room > 0 and pairs:
                pick = np.random.default_rng([seed, 2]).choice(len(pairs), size=min(room, len(pairs)), replace=False)
                chosen = [pairs[i] for i in np.sort(pick)]
        inter = [f.interaction(width) for f in features]
        for a, b in chosen:
            # One pair at a time, made sparse at once: a dense 40,000 x 400 design would be 128 MB.
            blocks.append(sparse.csr_matrix((inter[a][:, :, None] * inter[b][:, None, :]).reshape(n, -1)))
        design.update(
            squares=len(squares),
            indicators_per_column=width if chosen else 0,
            pairs=len(chosen),
            interactions=sum(blk.shape[1] for blk in blocks[1 + len(squares) :]),
        )
    x = sparse.hstack(blocks, format="csr")
    if x.shape[1]:
        mean = np.asarray(x.mean(axis=0)).ravel()
        var = np.asarray(x.multiply(x).mean(axis=0)).ravel() - mean**2
        # A product that never occurs (or always) carries no parameter.
        x = x[:, np.flatnonzero(var > 1e-12 * np.maximum(1.0, mean**2))]
    design["columns"] = x.shape[1]
    design["description"] = _describe(design)
    return x, design


def _describe(design: Mapping[str, Any]) -> str:
    """One sentence on the logistic model, for the report."""
    size = f"{design['columns']} design columns, at most {design['max_columns']}"
    squares = ", squares of numeric columns" if design["squares"] else ""
    if not design["pairs"]:
        why = (
            " (no room left for interactions under the bound)"
            if design["pairs_available"] and design["max_columns"] <= design["main"]
            else ""
        )
        return f"logistic regression on main effects{squares} only{why}: {size}"
    width = design["indicators_per_column"]
    cats = (
        "the indicator of its second most common category"
        if width == 1
        else f"the indicators of its {width} most common categories after the first"
    )
    pairs = (
        f"all {design['pairs']} pairs of columns"
        if design["pairs"] == design["pairs_available"]
        else f"{design['pairs']} of the {design['pairs_available']} pairs of columns (a seeded sample: all would exceed the bound)"
    )
    return (
        f"logistic regression on main effects{squares} and the pairwise interactions of {pairs} "
        f"(a categorical column enters them by {cats}, a numeric one by its standardised value): {size}"
    )


def _logistic(x: np.ndarray | sparse.spmatrix, y: np.ndarray) -> dict[str, Any]:
    n, c = len(y), float(y.mean())
    converged = True
    # One BLAS thread: the sparse products are single-threaded anyway, and the dense work left is
    # p x p (a Cholesky per Newton step, the eigenvalues of the rank), where OpenBLAS's threads
    # only wait on each other - up to a second per call on a busy two-core machine.
    with threadpool_limits(1, user_api="blas"):
        k = _rank(x) + 1
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
    return {
        "model": "cart",
        "null": "permutation",
        "c": c,
        "min_samples_leaf": leaf,
        "permutations": permutations,
        "caveat": CART_CAVEAT,
    } | stats


def _rank(x: np.ndarray | sparse.spmatrix) -> int:
    """Rank of the design's columns beside the intercept: the free parameters of the null.

    From the eigenvalues of the correlation matrix, built as E[x xᵀ] − E[x] E[x]ᵀ (which keeps
    a sparse design sparse) and scaled by the SDs: an exact linear dependence (a product equal
    to a main effect, indicators that add up to another) gives an eigenvalue at rounding level,
    far under the 1e-9 of the largest kept here.
    """
    if x.shape[1] == 0:
        return 0
    n = x.shape[0]
    gram = x.T @ x
    gram = gram.toarray() if sparse.issparse(gram) else np.asarray(gram)
    mean = np.asarray(x.mean(axis=0)).ravel()
    cov = gram / n - np.outer(mean, mean)
    sd = np.sqrt(np.clip(np.diag(cov), 0, None))
    sd[sd == 0] = 1.0
    eig = np.linalg.eigvalsh(cov / np.outer(sd, sd))
    return int(np.sum(eig > 1e-9 * max(eig.max(), 1e-300)))


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
