r"""The audit's cases: for every registered method, a worst-case neighbouring pair and its options.

Each pair is a worst case under the method's *own* relation: one record moved out of a cell that
holds it alone (substitution), or one record more (add/remove), on a domain of a few cells, so
that every measurement's query moves as far as its sensitivity allows. The audit
(:mod:`dipsy.audit.runner`) shows how far: an honest measurement at a worst-case pair has a loss
*equal* to its stated cost. The claims (ε = 2, ρ = 0.5) are small enough that a sampled bound
(Clopper–Pearson on 20,000 draws, ceiling 7.9) can exceed them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..domain import Column, Domain


@dataclass(frozen=True)
class Case:
    """A worst-case neighbouring pair ``data``, ``neighbour`` for one method, and how to run it.

    ``kwargs`` are :func:`dipsy.synthesize`'s (``options`` naming ``files`` by their keys: public
    input files, written to a temporary folder for the run); ``why`` says why the pair is a worst case.
    """

    method: str
    domain: Domain
    data: pd.DataFrame
    neighbour: pd.DataFrame
    kwargs: dict[str, Any]
    why: str
    files: dict[str, pd.DataFrame] = field(default_factory=dict)


def _frame(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns)


BINARY = Domain.from_sizes({"x": 2})
CATEGORICAL = Domain((Column("x", "categorical", categories=(0, 1)),))
MOVED = (_frame(x=[0]), _frame(x=[1]))  # n = 1: the record moves from cell 0 to cell 1
ADDED = (_frame(x=[1]), _frame(x=[0, 1]))  # one record more, in cell 0
NUMERIC = Domain((Column("v", "numeric", lower=0.0, upper=1.0, bins=(0.0, 0.5, 1.0)),))
PAIRS = Domain.from_sizes({"x": 2, "y": 2})

#: Methods the audit does not run, and why: only local guarantees (definition ``local``), which
#: claim no worst-case bound for the audit to refute — their ε_x holds for one data set, computed
#: from it.
NOT_AUDITED = {
    "pseudo-posterior": "local, asymptotic guarantee (ε_x = 2Δ computed from the data set): no worst-case claim to refute",
}

CASES: dict[str, Case] = {
    c.method: c
    for c in (
        Case(
            "dirichlet-multinomial",
            BINARY,
            *MOVED,
            {"epsilon": 2.0},
            "n = 1 moves cells: P(y* = (1, 0)) has the ratio (n + α)/α = e^ε exactly (S-000 eq. 11)",
        ),
        Case("beta-binomial", CATEGORICAL, *MOVED, {"epsilon": 2.0}, "as the Dirichlet-multinomial, I = 2"),
        Case("dp-prior", BINARY, *MOVED, {"epsilon": 2.0}, "n = 1 moves cells: the ratio ((1 + a)/a)^n = e^ε is attained"),
        Case(
            "gamma-poisson",
            BINARY,
            *MOVED,
            {"epsilon": 2.0, "options": {"exposures": "exposures.csv"}},
            "the smallest-exposure cell loses its only event",
            {"exposures.csv": _frame(x=[0, 1], exposure=[1.0, 4.0])},
        ),
        Case(
            "laplace-sanitizer",
            BINARY,
            *ADDED,
            {"epsilon": 2.0, "release": "table", "options": {"post": "raw"}, "neighbouring": "add-remove"},
            "add/remove one record in cell 0: the table moves by Δ₁ = 1",
        ),
        Case(
            "perturbed-histogram",
            NUMERIC,
            _frame(v=[0.7]),
            _frame(v=[0.2, 0.7]),
            {"epsilon": 2.0},
            "add/remove one value in the first bin: the bin counts and the total each move by 1",
        ),
        Case(
            "smoothed-histogram",
            NUMERIC,
            _frame(v=[0.2]),
            _frame(v=[0.7]),
            {"epsilon": 2.0},
            "n = 1; the value moves from the first bin to the second",
        ),
        Case(
            "exponential-ecdf",
            NUMERIC,
            _frame(v=[0.2, 0.7]),
            _frame(v=[0.7, 0.7]),
            {"epsilon": 2.0},
            "n = 2; one value crosses the middle grid point",
        ),
        Case(
            "modips",
            BINARY,
            *MOVED,
            {"epsilon": 2.0, "options": {"model": "multinomial"}},
            "n = 1; the record moves: both cell counts move, each to the other bound",
        ),
        Case(
            "privsyn",
            PAIRS,
            _frame(x=[1], y=[1]),
            _frame(x=[0, 1], y=[0, 1]),
            {"rho": 0.5, "delta": 1e-6, "options": {"iterations": 5}},
            "add/remove one record in the cell (0, 0): every marginal moves by 1",
        ),
        Case(
            "mst",
            Domain.from_sizes({"x": 2, "y": 2, "z": 2}),
            _frame(x=[1], y=[1], z=[1]),
            _frame(x=[0, 1], y=[0, 1], z=[0, 1]),
            {"rho": 0.5, "delta": 1e-6},
            "add/remove one record in the cell (0, 0, 0); three columns, so two edge choices run",
        ),
        Case(
            "aim",
            PAIRS,
            _frame(x=[1], y=[1]),
            _frame(x=[0, 1], y=[0, 1]),
            {"rho": 0.5, "delta": 1e-6, "options": {"rounds": 2, "iterations": 1, "final_iterations": 1}},
            "add/remove one record in the cell (0, 0); two nominal rounds, so one adaptive round",
        ),
        Case(
            "dpsyn",
            PAIRS,
            _frame(x=[1], y=[1]),
            _frame(x=[0, 1], y=[0, 1]),
            {
                "epsilon": 2.0,
                "delta": 1e-6,
                "options": {"public": "public.csv", "least": 10, "multiple": 1, "pool": 200, "iterations": 5},
            },
            "add/remove one record in the cell (0, 0); a public file of the same domain",
            {"public.csv": _frame(x=[0, 1, 1, 0], y=[1, 0, 1, 1])},
        ),
        Case(
            "rdt",
            PAIRS,
            _frame(x=[1], y=[1]),
            _frame(x=[0, 1], y=[0, 1]),
            {
                "epsilon": 2.0,
                "neighbouring": "add-remove",
                "options": {
                    "sensitive": "y",
                    "structure": "structure.csv",
                    "targets": "targets.csv",
                    "trees": 1,
                    "n_b": 1,
                    "depth": 1,
                    "leaf_min": 0,
                    "structure_seed": 0,
                },
            },
            "add/remove one record in the leaf x = 0 (label 0); fifty public targets in that leaf read its noisy distribution",
            {"structure.csv": _frame(x=[0, 0, 1, 1], y=[0, 1, 0, 1]), "targets.csv": _frame(x=[0] * 50)},
        ),
    )
}
