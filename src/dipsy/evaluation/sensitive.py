r"""How well synthetic sensitive columns keep their relation to the public ones (S-004 §6).

For a release that adds synthetic sensitive columns (sex, race) to public ones (the random decision
trees), S-004 judges utility by

(a) joint-category proportions, confidential against synthetic: every cell of the sensitive ×
    public tables, on a scatter with the Pearson correlation (S-004 Fig. 3b), and here also the
    total variation distance of each table, ½ Σ |p − q|;
(b) slopes and correlations of indicator pairs (Figs. 3c, 3d): for ``X = 1[A = a]`` and
    ``Y = 1[B = b]``, ``β₁ = cov/(p_x(1 − p_x))`` and ``r = β₁ sqrt(p_x(1 − p_x)/(p_y(1 − p_y)))``
    (:mod:`.relationships`), for the pairs that involve a sensitive column;
(c) a logistic regression of each binary sensitive column (S-004: female) on the public columns
    (Figs. 10–14), its coefficients confidential against synthetic.

Like the rest of the evaluation this reads the confidential data and is not private: it is the
data steward's evidence before publishing.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..domain import Domain
from ..errors import DipsyError
from .marginals import encode_valid
from .relationships import indicator_relationships

#: Predictor levels rarer than this share of the original, or past the LEVELS most common, are
#: pooled for the regression: a level absent from a synthetic set would make the terms differ, rare
#: levels separate (and the fit then fails to converge), and S-004's models have a few predictors.
RARE = 0.02
LEVELS = 8


def sensitive_utility(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain,
                      sensitive: Sequence[str], public: Sequence[str] | None = None,
                      rule: str | None = None, seed: int = 0) -> dict[str, Any]:
    """S-004's utility outputs for the ``sensitive`` columns against the ``public`` ones (default: the rest).

    Returns
    -------
    dict
        ``"sensitive"``, ``"public"``; ``"tables"``: per table (S × P, S × S', and all sensitive
        columns × P) its ``columns`` and ``tvd`` per set; ``"proportions"``: the cells of the
        joint tables of all sensitive columns with each public one — ``original``, ``synthetic``
        (per set) and ``r`` per set; ``"indicators"``: the indicator pairs with a sensitive
        column (as :func:`~.relationships.indicator_relationships`) and the correlation of
        synthetic with original slopes and correlations; ``"logit"``: per sensitive column,
        the regression comparison or the reason it could not be made.
    """
    sensitive = [s for s in sensitive if s in domain]
    public = [c for c in (public or domain.names) if c in domain and c not in sensitive]
    if not sensitive or not public:
        raise DipsyError("the sensitive-attribute evaluation needs a sensitive and a public column of the domain",
                         "pass --sensitive with columns of the release")
    names = [*public, *sensitive]
    codes = [encode_valid(original, domain.project(names), "the original")[0]]
    codes += [encode_valid(t, domain.project(names), f"synthetic set {k}")[0] for k, t in enumerate(tables, 1)]
    sizes = dict(zip(names, domain.shape(names)))

    groups = [(s, p) for s in sensitive for p in public] + list(combinations(sensitive, 2))
    if len(sensitive) > 1:
        groups += [(*sensitive, p) for p in public]
    out_tables, cells_o, cells_s = [], [], [[] for _ in tables]
    for cols in groups:
        shares = [_shares(c, cols, sizes) for c in codes]
        out_tables.append({"columns": list(cols), "tvd": [0.5 * float(np.abs(s - shares[0]).sum()) for s in shares[1:]]})
        if len(cols) == len(sensitive) + 1 and cols[-1] in public and set(cols[:-1]) == set(sensitive):
            cells_o.append(shares[0])
            for k, s in enumerate(shares[1:]):
                cells_s[k].append(s)
    o = np.concatenate(cells_o)
    synthetic = [np.concatenate(c) for c in cells_s]
    return {
        "sensitive": list(sensitive),
        "public": list(public),
        "tables": sorted(out_tables, key=lambda t: -float(np.mean(t["tvd"]))),
        "tvd_mean": {"2-way": _mean_tvd(out_tables, 2), f"{len(sensitive) + 1}-way": _mean_tvd(out_tables, len(sensitive) + 1)},
        "proportions": {"columns": [f"{' × '.join(sensitive)} × {p}" for p in public], "original": o.tolist(),
                        "synthetic": [s.tolist() for s in synthetic], "r": [_pearson(o, s) for s in synthetic]},
        "indicators": _indicators(original, tables, domain, sensitive, public, seed),
        "logit": {s: _logit(original, tables, domain, s, public, rule) if domain[s].size == 2 else
                  {"response": s, "error": "a column of more than two categories (S-004 models the binary one, female)"}
                  for s in sensitive},
    }


def _shares(codes: dict[str, np.ndarray], cols: Sequence[str], sizes: dict[str, int]) -> np.ndarray:
    shape = tuple(sizes[c] for c in cols)
    flat = np.ravel_multi_index(tuple(codes[c] for c in cols), shape)
    counts = np.bincount(flat, minlength=math.prod(shape)).astype(float)
    return counts / max(counts.sum(), 1.0)


def _mean_tvd(tables: list[dict], width: int) -> float:
    values = [np.mean(t["tvd"]) for t in tables if len(t["columns"]) == width]
    return float(np.mean(values)) if values else math.nan


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _indicators(original, tables, domain, sensitive, public, seed) -> dict[str, Any]:
    """Indicator pairs of each sensitive column with each other column (all pairs, none sampled)."""
    pairs = []
    for s in sensitive:
        for other in [*public, *sensitive[sensitive.index(s) + 1:]]:
            found = indicator_relationships(original, tables, domain.project([s, other]), max_pairs=10**9, seed=seed)
            pairs += found["pairs"]
    out: dict[str, Any] = {"pairs": pairs}
    for key in ("slope", "corr"):
        o = np.array([p[f"{key}_original"] for p in pairs], dtype=float)
        for k in range(len(tables)):
            s = np.array([p[f"{key}_synthetic"][k] for p in pairs], dtype=float)
            ok = np.isfinite(o) & np.isfinite(s)
            out.setdefault(f"{key}_r", []).append(_pearson(o[ok], s[ok]) if ok.sum() > 2 else math.nan)
            out.setdefault(f"{key}_mean_abs_diff", []).append(float(np.abs(o[ok] - s[ok]).mean()) if ok.any() else math.nan)
    return out


def response_level(original: pd.DataFrame, column: str) -> Any:
    """The category modelled: the rarer of a binary column's two, else the most common but one."""
    counts = original[column].value_counts()
    return counts.index[-1] if len(counts) == 2 else counts.index[min(1, len(counts) - 1)]


def _logit(original, tables, domain, column, public, rule) -> dict[str, Any]:
    """1[column = level] on the public columns as categories; rare levels pooled, as decided on the original."""
    from . import regression  # the evaluation's own comparison of one model on both

    level = response_level(original, column)
    safe = {p: f"x{k}" for k, p in enumerate(public)}
    keep = {p: set(original[p].value_counts(normalize=True).loc[lambda v: v >= RARE].index[:LEVELS]) for p in public}

    def frame(data: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame({"y": (data[column] == level).astype(float)})
        for p in public:
            out[safe[p]] = data[p].where(data[p].isin(keep[p]), "other").astype(str)
        return out

    formula = "y ~ " + " + ".join(f"C({safe[p]})" for p in public)
    try:
        result = regression(formula, frame(original), [frame(t) for t in tables], rule, model="logit")
    except Exception as e:  # noqa: BLE001 — a model that cannot be compared is reported, never fatal
        why = getattr(e, "problem", None) or str(e).splitlines()[0] if str(e) else type(e).__name__
        return {"response": f"{column} = {level}", "error": why}
    for c in result["coefficients"]:
        for p, x in safe.items():
            c["term"] = c["term"].replace(f"C({x})", p)
    return {"response": f"{column} = {level}", "predictors": list(public), "pooled_below": RARE, "levels_kept": LEVELS,
            "formula": f"1[{column} = {level}] ~ " + " + ".join(f"C({p})" for p in public), **{k: v for k, v in result.items() if k != "formula"}}
