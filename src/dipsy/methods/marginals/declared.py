"""The declared analyses' marginals, measured before data-driven selection (issue: valid inference
for the analyses users declare).

A domain's ``analyses:`` (:mod:`dipsy.domain.analyses`) name the regressions a release must
serve. A marginal method that honours them measures, first and at a share of each set's budget
the steward can see and set (option ``analysis_share``), the two-way marginal of each analysis's
response with each column its terms name (:func:`~dipsy.domain.analyses.declared_pairs`), and,
for an analysis naming two or more columns besides its response, its whole table
(:func:`declared_tables`: the sufficient statistic of its model, published for its noise-aware
intervals, :mod:`dipsy.noise_aware`); its
data-driven steps (selection, rounds) spend the rest as before. The pairs and their noise depend
on the public domain alone, so these are ordinary planned measurements: listed in the statement,
charged like any other, and the plan's total is unchanged (the shares of the rest are scaled by
``1 − analysis_share``).

Within the share, pair i gets ``ρ_i ∝ c_i^{2/3}`` (c_i its cells: PrivSyn's eq. 1, the split that
minimises the summed expected squared error, :func:`.selection.allocate`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


#: The most cells of an analysis's whole table (the response and every column its terms name) that
#: is measured for it: its noise-aware intervals need it, and past this each cell's count is
#: mostly noise at any budget a survey release has.
MAX_TABLE_CELLS = 5000


def declared_tables(domain: Domain) -> tuple[tuple[str, ...], ...]:
    """The whole tables of the declared analyses that name two or more columns besides the response
    (response first, the others as written), each once, when it has at most :data:`MAX_TABLE_CELLS`
    cells. An analysis of one column on another needs none: its pair is its table. A function of
    the public domain alone.

    >>> from dipsy.domain.analyses import Analysis
    >>> import dataclasses
    >>> d = Domain.from_sizes({"y": 10, "e": 6, "s": 2, "r": 1000})
    >>> declared_tables(dataclasses.replace(d, analyses=(Analysis("y ~ e"), Analysis("y ~ e * s"), Analysis("y ~ e + r"))))
    (('y', 'e', 's'),)
    """
    tables: list[tuple[str, ...]] = []
    for a in domain.analyses:
        columns = a.columns
        if len(columns) > 2 and columns not in tables and math.prod(domain.shape(list(columns))) <= MAX_TABLE_CELLS:
            tables.append(columns)
    return tuple(tables)


def declared_split(domain: Domain, rho: float) -> list[tuple[tuple[str, ...], float]]:
    """Each declared pair (:func:`~dipsy.domain.analyses.declared_pairs`), then each declared
    analysis's whole table (:func:`declared_tables`), with its ρ: ``rho`` split ∝ cells^(2/3)
    over them all (none without analyses).

    >>> d = Domain.from_sizes({"y": 2, "a": 2, "b": 16})
    >>> from dipsy.domain.analyses import Analysis
    >>> import dataclasses
    >>> [(p, round(r, 4)) for p, r in declared_split(dataclasses.replace(d, analyses=(Analysis("y ~ a + C(b)"),)), 1.0)]
    [(('y', 'a'), 0.0881), (('y', 'b'), 0.3524), (('y', 'a', 'b'), 0.5595)]
    >>> [(p, round(r, 4)) for p, r in declared_split(dataclasses.replace(d, analyses=(Analysis("y ~ C(b)"),)), 1.0)]
    [(('y', 'b'), 1.0)]
    """
    measured: list[tuple[str, ...]] = [*declared_pairs(domain.analyses), *declared_tables(domain)]
    if not measured:
        return []
    cells = [float(math.prod(domain.shape(list(p)))) for p in measured]
    return list(zip(measured, (float(r) for r in allocate(cells, rho))))


def counted(split: Sequence[tuple[tuple[str, ...], Any]]) -> str:
    """How many pairs and whole tables a split holds, in words.

    >>> counted([(("y", "x"), 0.5), (("y", "z"), 0.2), (("y", "x", "z"), 0.3)]), counted([(("y", "x"), 1.0)])
    ('2 pairs, 1 whole table', '1 pairs')
    """
    tables = sum(1 for columns, _ in split if len(columns) > 2)
    return f"{len(split) - tables} pairs" + (f", {tables} whole table{'s' if tables > 1 else ''}" if tables else "")


def declared_label(columns: tuple[str, ...]) -> str:
    """A declared measurement in the statement's words.

    >>> declared_label(("y", "x")), declared_label(("y", "e", "s"))
    ('declared analysis: two-way marginal y × x', 'declared analysis: the whole y × e × s table')
    """
    joined = " × ".join(columns)
    return (
        f"declared analysis: two-way marginal {joined}" if len(columns) == 2 else f"declared analysis: the whole {joined} table"
    )


__all__ = [
    "ANALYSIS_SHARE",
    "MAX_TABLE_CELLS",
    "analysis_share",
    "analysis_share_option",
    "counted",
    "declared_label",
    "declared_split",
    "declared_tables",
]
