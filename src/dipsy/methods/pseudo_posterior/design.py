"""The design matrix of the pseudo-posterior's regression, scaled by public bounds only.

Terms are column names, or ``log(col)`` for a positive numeric column. A numeric term is centred on
the middle of its *public* bounds and divided by their half-width (a ``log`` term on the log of
the bounds, the lower one at least 1): the priors (:mod:`.models`) then mean the same on every
data set, as the guarantee needs — scaling by the data's own mean and sd would make the prior a
function of the confidential data. A categorical term gets a 0/1 column per category but the first
(the baseline), and one per declared missing state (each state a level of its own, as the domain
codes it). A numeric term with declared missing states gets a 0/1 column per state beside its
value, which is 0 (the centre of the bounds) where a record is in a state: the missing-indicator
design, in which the state's coefficient is the state's own mean shift. What the design holds is a
function of each record's public predictors and the public domain only, as before. An intercept
comes first.

>>> from dipsy.domain import Domain
>>> from dipsy.engine import Records
>>> d = Domain.from_dict({"columns": {"u": {"kind": "categorical", "categories": [1, 2, 3]},
...                                    "x": {"kind": "numeric", "lower": 0, "upper": 10, "missing": {"empty": "not asked"}}}})
>>> t = terms("u,log(x)", d)
>>> [x.label for x in t]
['u=2', 'u=3', 'log(x)', 'x=not asked']
>>> matrix(t, Records({"x": np.array([1.0, 10.0, np.nan])}, {"u": np.array([0, 2, 1])}, {"x": np.array([-1, -1, 0])})).tolist()
[[1.0, 0.0, 0.0, -1.0, 0.0], [1.0, 0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0, 1.0]]
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...domain import Domain
from ...engine import Records
from ...errors import DataError, DipsyError


@dataclass(frozen=True)
class Term:
    """One design column: ``column`` as a category indicator (``level``: its code), a numeric
    column's missing-state indicator (``state``: its index), or its value, scaled or logged."""

    column: str
    label: str
    level: int | None = None
    state: int | None = None
    log: bool = False
    centre: float = 0.0
    half: float = 1.0

    def values(self, records: Records) -> np.ndarray:
        if self.level is not None:
            return (records.codes[self.column] == self.level).astype(float)
        if self.state is not None:
            return (records.states[self.column] == self.state).astype(float)
        x = np.asarray(records.numbers[self.column], dtype=float)
        present = ~np.isnan(x)  # NaN: the record is in a missing state, which its own terms carry
        if self.log:
            if np.any(x[present] <= 0):
                raise DataError(
                    f"the predictor log({self.column}) needs values > 0, and some records have {self.column} <= 0",
                    f"use {self.column} without log(), or give those records a positive value",
                )
            x = np.log(np.where(present, x, 1.0))
        return np.where(present, (x - self.centre) / self.half, 0.0)


def terms(spec: str | list[str], domain: Domain) -> tuple[Term, ...]:
    """The design's terms from ``"a,log(b),c"`` (or a list), checked against the public domain."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    out: list[Term] = []
    for name in names:
        match = re.fullmatch(r"log\((.+)\)", name)
        column = match.group(1).strip() if match else name
        if column not in domain.names:
            raise DipsyError(f"the predictor {column!r} is not a column in scope", f"use some of {', '.join(domain.names)}")
        col = domain[column]
        if col.is_categorical:
            if match:
                raise DipsyError(f"log() of the categorical column {column!r}", f"use {column} as it is")
            assert col.categories is not None, "Column checks every categorical column's categories"
            levels = [*col.categories, *(col.missing.labels if col.missing is not None else ())]  # the codes' order
            out += [Term(column, f"{column}={c}", level=k) for k, c in enumerate(levels) if k > 0]
            continue
        assert col.lower is not None and col.upper is not None, "Column checks every non-categorical column's bounds"
        lo, hi = float(col.lower), float(col.upper)
        if match:
            if hi <= 1:
                raise DipsyError(
                    f"log({column}) needs public bounds reaching above 1, got [{lo:g}, {hi:g}]", f"use {column} as it is"
                )
            lo, hi = math.log(max(lo, 1.0)), math.log(hi)
        out.append(Term(column, name, log=bool(match), centre=(lo + hi) / 2, half=max((hi - lo) / 2, 1e-12)))
        if col.missing is not None:
            out += [Term(column, f"{column}={label}", state=s) for s, label in enumerate(col.missing.labels)]
    return tuple(out)


def matrix(design: Sequence[Term], records: Records) -> np.ndarray:
    """The n × (1 + terms) design matrix, intercept first."""
    return np.column_stack([np.ones(records.rows)] + [t.values(records) for t in design])
