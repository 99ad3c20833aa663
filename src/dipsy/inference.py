r"""Combining rules: inference from m synthetic sets (``METHODS.md`` §2.4).

With estimates ``q_l`` and their estimated variances ``u_l`` from each of the m sets,

    q̄ = (1/m) Σ q_l,    b = Σ (q_l - q̄)² / (m - 1),    ū = (1/m) Σ u_l.

``reiter2003-partial`` — partial synthesis (Reiter 2003, Survey Methodology 29:181–188), the rule
Bowen & Liu use for every multiply released DP synthesizer (S-003 eqs. 8–10; Liu 2016 proves it
applies to modips):

    T_p = ū + b/m,    ν_p = (m - 1) (1 + m ū / b)².

``rrr2003-full`` — full synthesis (Raghunathan, Reiter & Rubin 2003, J. Official Statistics
19:1–16), with Reiter's (2002) non-negative adjustment when ``T_f <= 0``:

    T_f = (1 + 1/m) b - ū,    ν_f = (m - 1) (1 - m ū / ((m + 1) b))²,
    T_f* = (n_syn / n) ū  if T_f <= 0.

``single`` — one set: ``q`` with its own variance ``u`` and the model's own reference distribution.

Intervals: ``q̄ ± t_{ν, (1+level)/2} sqrt(T)`` (normal when ν is infinite, i.e. ``b = 0``).

>>> c = combine([[1.0], [2.0], [3.0]], [[0.5], [0.5], [0.5]])
>>> float(c.estimate[0]), float(c.variance[0]), round(float(c.df[0]), 4)
(2.0, 0.8333333333333333, 12.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .errors import DipsyError
from .formula import design as formula_design

if TYPE_CHECKING:
    import pandas as pd

RULES = ("reiter2003-partial", "rrr2003-full", "single")


@dataclass(frozen=True)
class Combined:
    """Combined point estimates, variances, degrees of freedom and intervals, one per estimand."""

    rule: str
    estimate: np.ndarray
    variance: np.ndarray
    df: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    between: np.ndarray
    within: np.ndarray


def combine(
    estimates: np.ndarray,
    variances: np.ndarray,
    rule: str = "reiter2003-partial",
    level: float = 0.95,
    n_ratio: float = 1.0,
    single_df: float = np.inf,
) -> Combined:
    """Combine per-set estimates ``(m, k)`` and variances ``(m, k)`` by ``rule``.

    ``n_ratio`` is n_syn / n, used only by the full-synthesis adjustment; ``single_df`` is the
    reference t distribution's degrees of freedom for one set (the model's own; normal by default).
    """
    q = np.atleast_2d(np.asarray(estimates, dtype=float))
    u = np.atleast_2d(np.asarray(variances, dtype=float))
    if q.shape != u.shape:
        raise DipsyError(f"{q.shape[0]} sets of estimates but variances of shape {u.shape}", "give one variance per estimate")
    if rule not in RULES:
        raise DipsyError(f"unknown combining rule {rule!r}", f"use one of {', '.join(RULES)}")
    m = q.shape[0]
    qbar, ubar = q.mean(axis=0), u.mean(axis=0)
    if rule == "single" or m == 1:
        if m != 1:
            raise DipsyError(f"the 'single' rule takes one set, not {m}", "use reiter2003-partial or rrr2003-full")
        total, df, b = ubar, np.full_like(qbar, single_df), np.zeros_like(qbar)
        rule = "single"
    else:
        b = q.var(axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if rule == "reiter2003-partial":
                total = ubar + b / m
                df = np.where(b > 0, (m - 1) * (1 + m * ubar / b) ** 2, np.inf)
            else:
                raw = (1 + 1 / m) * b - ubar
                total = np.where(raw > 0, raw, n_ratio * ubar)
                df = np.where(b > 0, (m - 1) * (1 - m * ubar / ((m + 1) * b)) ** 2, np.inf)
    crit = np.where(np.isinf(df), stats.norm.ppf((1 + level) / 2), stats.t.ppf((1 + level) / 2, np.where(np.isinf(df), 1, df)))
    half = crit * np.sqrt(total)
    return Combined(rule, qbar, total, df, qbar - half, qbar + half, b, ubar)


def interval_overlap(lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray) -> np.ndarray:
    """Karr, Kohnen, Oganian, Reiter & Sanil (2006): the average share of each interval covered by the other.

    ``J = ((min(U1, U2) - max(L1, L2)) / (U1 - L1) + (min(U1, U2) - max(L1, L2)) / (U2 - L2)) / 2``;
    1 for identical intervals, ≤ 0 for disjoint ones.

    >>> float(interval_overlap(0.0, 2.0, 1.0, 3.0))
    0.5
    """
    inner = np.minimum(hi1, hi2) - np.maximum(lo1, lo2)
    return 0.5 * (inner / (np.asarray(hi1) - lo1) + inner / (np.asarray(hi2) - lo2))


@dataclass(frozen=True)
class Estimates:
    """Combined estimates of named estimands (e.g. regression terms)."""

    terms: tuple[str, ...]
    combined: Combined

    def table(self) -> pd.DataFrame:
        """One row per term: estimate, variance, df, interval."""
        import pandas as pd

        c = self.combined
        return pd.DataFrame(
            {"estimate": c.estimate, "variance": c.variance, "df": c.df, "lower": c.lower, "upper": c.upper},
            index=pd.Index(self.terms, name="term"),
        )


def mean(tables: list[pd.DataFrame], column: str, rule: str = "reiter2003-partial", level: float = 0.95) -> Estimates:
    """The mean of ``column``: per set ``q = x̄``, ``u = s²/n``, combined by ``rule``."""
    q = np.array([[t[column].mean()] for t in tables])
    u = np.array([[t[column].var(ddof=1) / len(t)] for t in tables])
    return Estimates((f"mean({column})",), combine(q, u, _rule(rule, tables), level, single_df=len(tables[0]) - 1))


def proportion(
    tables: list[pd.DataFrame], column: str, value: object, rule: str = "reiter2003-partial", level: float = 0.95
) -> Estimates:
    """The share of ``column == value``: per set ``q = p̂``, ``u = p̂(1 - p̂)/n`` (Bowen & Liu, S-003)."""
    p = np.array([[float((t[column] == value).mean())] for t in tables])
    u = p * (1 - p) / np.array([[len(t)] for t in tables])
    return Estimates((f"P({column} = {value})",), combine(p, u, _rule(rule, tables), level))


def regression(
    tables: list[pd.DataFrame],
    formula: str,
    rule: str = "reiter2003-partial",
    model: str = "ols",
    level: float = 0.95,
    n_ratio: float = 1.0,
) -> Estimates:
    """Coefficients of a formula (``ols`` or ``logit``, :mod:`dipsy.formula`) fitted to each set, combined by ``rule``.

    A term missing from a set (a category that set lacks) combines as NaN.

    >>> import pandas as pd
    >>> sets = [pd.DataFrame({"x": [0.0, 1, 2, 3], "y": [1.0, 3, 5, 7.5]})] * 2
    >>> regression(sets, "y ~ x").table()["estimate"].round(2).tolist()
    [0.9, 2.15]
    """
    fits = [fit(formula, t, model) for t in tables]
    terms = tuple(fits[0].params.index)
    q = np.array([f.params.reindex(terms).to_numpy() for f in fits])
    u = np.array([f.bse.reindex(terms).to_numpy() ** 2 for f in fits])
    single_df = float(fits[0].df_resid) if model == "ols" else np.inf
    return Estimates(terms, combine(q, u, _rule(rule, tables), level, n_ratio, single_df))


def fit(formula: str, data: pd.DataFrame, model: str = "ols"):  # noqa: ANN201 (a statsmodels results object)
    """Fit ``formula`` by OLS or logistic regression, with a clear error for a bad formula.

    The formula is read by :mod:`dipsy.formula` (a grammar, never evaluated as Python) and its
    design matrix, with patsy's column names, is fitted by statsmodels' array API.
    """
    if model not in ("ols", "logit"):
        raise DipsyError(f"unknown regression model {model!r}", "use ols or logit")
    response, design = formula_design(formula, data, binary=model == "logit")
    return fit_design(
        response, design, model, f"cannot fit {formula!r}", "write the formula over the released columns, e.g. 'y ~ x + C(group)'"
    )


def fit_design(response: Any, design: Any, model: str, problem: str, fix: str) -> Any:
    """statsmodels' OLS or logit fit of ``response`` on ``design``; a model it cannot fit (no rows, a
    singular matrix: statsmodels raises many types) is a DipsyError, ``problem: its first line``."""
    import statsmodels.api as sm

    try:
        return sm.OLS(response, design).fit() if model == "ols" else sm.Logit(response, design).fit(disp=0)
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DipsyError(f"{problem}: {first}", fix) from None


def _rule(rule: str, tables: list) -> str:
    return "single" if len(tables) == 1 else rule
