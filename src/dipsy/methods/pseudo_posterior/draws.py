"""One release of the pseudo-posterior mechanism: steps 1–6 of :mod:`.mechanism`, in order.

Kept apart from :mod:`.mechanism`, whose fit, risks and weights it composes, because the range
standards' bound (:mod:`.range_bound`) is built on those too: each of the two modules imports
:mod:`.mechanism`, and neither the other.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from ...errors import DipsyError
from .mechanism import Fit, Outcome, Sampler, check_fit, database_bound, outside_probability, record_risk, thin, weights
from .range_bound import check_range_options, move_bound


def release_draws(
    sampler: Sampler,
    m: int,
    key: Any,
    standard: str = "adp",
    a: float | None = None,
    b: float | None = None,
    rule: str = "linear",
    c: float = 1.0,
    g: float = 0.0,
    reweight: bool = False,
    target: float | None = None,
    check: bool = True,
    unweighted: Fit | None = None,
    eq3: str = "scaled",
) -> Outcome:
    """Steps 1–6 of the module: fit, weigh, refit, bound, thin.

    ``unweighted`` reuses an unweighted fit of the same sampler (the benchmark compares standards on
    one data set); ``check`` refuses fits that did not converge (:func:`check_fit`). ``eq3`` is the
    form of S-001 eq. (3) the truncated standard's comparison figure ``Outcome.delta_printed`` takes
    (:func:`.mechanism.database_bound`); the stated Δ under a range, the bound of a move, does not
    depend on it.
    """
    span: tuple[float, float] | None = None  # the sensitive range (a, b): set for every standard but adp
    if standard != "adp":
        if a is None or b is None:
            raise DipsyError(f"the {standard} standard needs a sensitive range", "pass range=a,b with a < 1 < b")
        span = (a, b)
        check_range_options(sampler.model, sampler.log_response, reweight)
    k1, k2 = jax.random.split(key)
    unweighted = unweighted if unweighted is not None else sampler.fit(np.ones(len(sampler.y)), k1)
    warnings = check_fit(unweighted, "unweighted") if check else []
    F0 = sampler.log_likelihood(unweighted)
    L0 = sampler.log_range_mass(unweighted, *span) if span is not None else None
    risk = record_risk(standard, F0, L0)
    alpha = weights(risk, rule, c, g)
    if target is not None:
        alpha = weights(risk, rule, c, g, raise_to=target / 2.0)
    elif reweight:
        alpha = weights(risk, rule, c, g, raise_to=float(np.max(alpha * risk)))
    lam = outside_probability(L0) if standard == "averaged" and L0 is not None else None
    effective = lam + (1.0 - lam) * alpha if lam is not None else alpha
    weighted = sampler.fit(effective, k2)
    warnings += check_fit(weighted, "weighted") if check else []
    F1 = sampler.log_likelihood(weighted)
    L1 = sampler.log_range_mass(weighted, *span) if standard == "truncated" and span is not None else None
    delta, per = database_bound(standard, alpha, F1, L1, lam, eq3)
    seconds = {"unweighted_fit": unweighted.seconds, "weighted_fit": weighted.seconds}
    delta_printed, worst = None, None
    # Every standard but adp (span and L0 are set together). S-001's figure bounds a censoring
    # neighbour; the range's own neighbour moves the value.
    if span is not None and L0 is not None:
        delta_printed = delta
        raise_to = target / 2.0 if target is not None else None
        moved = move_bound(sampler, standard, *span, unweighted, weighted, F0, L0, F1, risk, lam, effective, rule, c, g, raise_to)
        delta, per, worst, seconds["move_bound"] = moved.epsilon / 2.0, moved.per_record / 2.0, moved.record, moved.seconds
    delta_adp = float(np.max(np.abs(effective * F1))) if standard != "adp" else delta
    if not math.isfinite(delta):
        raise DipsyError(
            "the Lipschitz bound is infinite: some record has zero likelihood under a posterior draw",
            "check the response against the model (e.g. zeros for a lognormal), or give that record weight 0",
        )
    picked = thin(weighted.size, m)
    return Outcome(
        standard,
        delta,
        delta_adp,
        alpha,
        effective,
        {k: v[picked] for k, v in weighted.draws.items()},
        unweighted,
        weighted,
        per,
        tuple(warnings),
        lam,
        seconds,
        delta_printed,
        worst,
        eq3 if standard == "truncated" else None,
    )
