"""Noisy tables released beside the records: the published answers of charged measurements.

A measurement marked :attr:`~dipsy.privacy.measurement.Measurement.published` is a noisy
contingency table whose answer the release carries as it is (``release.json``'s ``published``):
post-processing of an output already charged and stated (Dwork & Roth 2014, Prop. 2.1), so it
costs nothing more, and its noise is what the statement says it is. The marginal methods publish
the tables of the domain's declared analyses, from which :mod:`dipsy.noise_aware` computes
intervals that count the DP noise.

Each table keeps, per column, the value each code stands for: a category, an integer, a bin's
midpoint (a binned column's cells are its bins), and ``None`` for a missing state, so that a reader
needs neither the domain nor the codec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain import Domain
from ..domain.columns import Column
from ..errors import DipsyError
from .measurement import DiscreteGaussian, Measurement, Table


@dataclass(frozen=True, eq=False)
class PublishedTable:
    """One published noisy table: ``counts`` over the product of ``values`` (C order, one axis per column).

    >>> from dipsy.domain import Domain
    >>> t = PublishedTable("y × x", ("y", "x"), ((0, 1), (0, 1, 2)), np.arange(6.0).reshape(2, 3), 4.0, 0)
    >>> PublishedTable.from_dict(t.to_dict()).counts.tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """

    label: str
    columns: tuple[str, ...]
    #: Per column, what each code stands for (None: a missing state).
    values: tuple[tuple[Any, ...], ...]
    counts: np.ndarray
    #: The variance of each cell's noise (the discrete Gaussian's σ²: within 10⁻⁹ of it for σ ≥ 1).
    variance: float
    #: The synthetic set (0-based) the measurement served; None for all sets.
    set_index: int | None = None

    @classmethod
    def of(cls, m: Measurement, answer: Any, domain: Domain) -> PublishedTable:
        """The table ``m`` measured (a :class:`Table` under a discrete Gaussian) and its noisy ``answer``."""
        query = m.query_as(Table)
        if query.domain is not None:
            domain = query.domain
        noise = m.mechanism_as(DiscreteGaussian)
        values = tuple(code_values(domain[c]) for c in query.columns)
        counts = np.asarray(answer, dtype=float).reshape(tuple(len(v) for v in values))
        return cls(m.label, tuple(query.columns), values, counts, float(noise.sigma2), m.set_index)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "columns": list(self.columns),
            "values": [list(v) for v in self.values],
            "counts": self.counts.tolist(),
            "noise_variance": self.variance,
            **({"set": self.set_index + 1} if self.set_index is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PublishedTable:
        try:
            values = tuple(tuple(v) for v in d["values"])
            counts = np.asarray(d["counts"], dtype=float)
            if counts.shape != tuple(len(v) for v in values):
                raise ValueError(f"counts of shape {counts.shape} for values of {[len(v) for v in values]}")
            set_index = int(d["set"]) - 1 if "set" in d else None
            return cls(str(d["label"]), tuple(d["columns"]), values, counts, float(d["noise_variance"]), set_index)
        except (KeyError, TypeError, ValueError) as e:
            raise DipsyError(
                f"a published table in release.json is malformed ({e})", "read a release.json written by dipsy"
            ) from None


def code_values(column: Column) -> tuple[Any, ...]:
    """What each code of ``column`` stands for in a published table: its categories, its integers,
    its bins' midpoints, then None per missing state.

    >>> code_values(Column("x", "integer", lower=1, upper=3)), code_values(Column("z", "numeric", lower=0, upper=4, bins=(0, 1, 4)))
    ((1, 2, 3), (0.5, 2.5))
    """
    values: list[Any]
    if column.is_categorical:
        values = [_plain(c) for c in column.levels]
    elif column.bins is None:
        lower, upper = column.bounds
        values = list(range(int(lower), int(upper) + 1))
    else:
        edges = np.asarray(column.bins, dtype=float)
        values = [float(v) for v in (edges[:-1] + edges[1:]) / 2]
    return tuple(values + [None] * column.n_states)


def _plain(x: Any) -> Any:
    """A category as JSON writes it (NumPy scalars as Python's)."""
    return x.item() if isinstance(x, np.generic) else x


__all__ = ["PublishedTable", "code_values"]
