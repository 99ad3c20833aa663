"""The declared analyses' marginals, measured before data-driven selection (issue: valid inference
for the analyses users declare).

A domain's ``analyses:`` (:mod:`dipsy.domain.analyses`) name the regressions a release must
serve. A marginal method that honours them measures, first and at a share of each set's budget
the steward can see and set (option ``analysis_share``), the two-way marginal of each analysis's
response with each column its terms name (:func:`~dipsy.domain.analyses.declared_pairs`); its
data-driven steps (selection, rounds) spend the rest as before. The pairs and their noise depend
on the public domain alone, so these are ordinary planned measurements: listed in the statement,
charged like any other, and the plan's total is unchanged (the shares of the rest are scaled by
``1 − analysis_share``).

Within the share, pair i gets ``ρ_i ∝ c_i^{2/3}`` (c_i its cells: PrivSyn's eq. 1, the split that
minimises the summed expected squared error, :func:`.selection.allocate`).
"""

from __future__ import annotations

from typing import Any

from ...domain import Domain
from ...domain.analyses import declared_pairs
from ..base import real
from .selection import allocate

#: Share of each set's budget the declared analyses' marginals take when the domain declares
#: analyses and the option is not given: enough that a slope's pair is measured with about the
#: noise a chosen marginal gets, leaving selection most of the budget.
ANALYSIS_SHARE = 0.25

analysis_share_option = real("analysis_share", 0.0, 0.9, example=0.25)


def analysis_share(settings: dict[str, Any], domain: Domain) -> float:
    """The share the declared analyses take: the option, else :data:`ANALYSIS_SHARE` when the
    domain (as released: :meth:`Domain.project` keeps the analyses whose columns are all kept)
    declares analyses with a pair to measure, else 0."""
    if not declared_pairs(domain.analyses):
        return 0.0
    return float(settings.get("analysis_share", ANALYSIS_SHARE))


def declared_split(domain: Domain, rho: float) -> list[tuple[tuple[str, str], float]]:
    """Each declared pair with its ρ, ``rho`` split ∝ cells^(2/3) (none without analyses).

    >>> d = Domain.from_sizes({"y": 2, "a": 2, "b": 16})
    >>> from dipsy.domain.analyses import Analysis
    >>> import dataclasses
    >>> d = dataclasses.replace(d, analyses=(Analysis("y ~ a + C(b)"),))
    >>> [(p, round(r, 4)) for p, r in declared_split(d, 1.0)]
    [(('y', 'a'), 0.2), (('y', 'b'), 0.8)]
    """
    pairs = declared_pairs(domain.analyses)
    if not pairs:
        return []
    cells = [float(domain.shape(list(p))[0] * domain.shape(list(p))[1]) for p in pairs]
    return list(zip(pairs, (float(r) for r in allocate(cells, rho))))


__all__ = ["ANALYSIS_SHARE", "analysis_share", "analysis_share_option", "declared_split"]
