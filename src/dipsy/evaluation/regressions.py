"""One regression fitted on the original and on each synthetic set, compared term by term.

Used by :func:`dipsy.evaluation.evaluate` (``--formula``) and by the sensitive-attribute section
(:mod:`.sensitive`), which fits one logistic regression per sensitive column.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .. import inference
from ..errors import DipsyError
from ..inference import fit, interval_overlap


def regression(formula: str, original: pd.DataFrame, tables: list[pd.DataFrame], rule: str | None, model: str = "ols") -> dict:
    """The same regression on the original and on each set, combined by the release's rule.

    Per term: the original estimate with its interval; the combined synthetic estimate, variance,
    degrees of freedom and interval; the interval overlap of Karr et al. (2006); and the
    standardised difference (q̄ - β) / se(β). What statsmodels warns of while fitting (a fit that did
    not converge, a perfect separation) is kept under ``warnings``, one line each, not printed.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        base = fit(formula, original, model)
        n_ratio = float(np.mean([len(t) for t in tables])) / len(original)
        synthetic = inference.regression(tables, formula, rule or "reiter2003-partial", model, n_ratio=n_ratio)
    combined = synthetic.combined
    terms = list(base.params.index)
    if list(synthetic.terms) != terms:
        raise DipsyError(
            f"the synthetic sets give terms {list(synthetic.terms)}, the original {terms}",
            "use categories present in every set, or a simpler formula",
        )
    ci = base.conf_int(0.05)
    overlap = interval_overlap(ci[0].to_numpy(), ci[1].to_numpy(), combined.lower, combined.upper)
    rows = []
    for k, term in enumerate(terms):
        rows.append(
            {
                "term": term,
                "original": {
                    "estimate": float(base.params.iloc[k]),
                    "se": float(base.bse.iloc[k]),
                    "lower": float(ci.iloc[k, 0]),
                    "upper": float(ci.iloc[k, 1]),
                },
                "synthetic": {
                    "estimate": float(combined.estimate[k]),
                    "variance": float(combined.variance[k]),
                    "df": float(combined.df[k]),
                    "lower": float(combined.lower[k]),
                    "upper": float(combined.upper[k]),
                },
                "ci_overlap": float(overlap[k]),
                "std_diff": float((combined.estimate[k] - base.params.iloc[k]) / base.bse.iloc[k]),
            }
        )
    seen = sorted({str(w.message).splitlines()[0] for w in caught if str(w.message)})
    return {"formula": formula, "model": model, "rule": combined.rule, "coefficients": rows} | (
        {"warnings": seen} if seen else {}
    )
