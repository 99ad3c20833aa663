"""What the count methods share: a model that releases cell counts, as a table or as records.

Every count method (Dirichlet-multinomial, beta-binomial, DP-prior, gamma-Poisson, Laplace
sanitizer) ends in a vector of counts over the cells of the full cross-tabulation of the
released columns. Released as a table, those counts are written cell by cell; released as
records, each cell is repeated as often as its count, decoded and shuffled — post-processing of
the counts, so it costs no privacy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Column, Domain
from ..privacy.rng import Randomness
from .base import Model


@dataclass(frozen=True, eq=False)
class CountModel(Model):
    """The released counts over ``shape`` cells of ``columns`` (C order): one measured vector per
    set in ``outputs`` (a posterior draw, or a noisy table), turned into records by post-processing."""

    columns: tuple[str, ...]
    shape: tuple[int, ...]
    outputs: tuple[Any, ...]

    @property
    def sets(self) -> int:
        return len(self.outputs)

    def counts(self, k: int, rand: Randomness) -> np.ndarray:
        """Set ``k``'s vector of cell counts (flat, C order): the measured one, by default."""
        return self.outputs[k]

    def table(self, k: int, rand: Randomness) -> np.ndarray:
        """The counts of a table release (the draw, unless the method measures a noisy table)."""
        return self.counts(k, rand)

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray]:
        return counts_to_codes(self.counts(k, rand), self.columns, self.shape, rand.numpy)


def counts_to_codes(counts: np.ndarray, columns: tuple[str, ...], shape: tuple[int, ...], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Records from cell counts: each occupied cell repeated by its count, then shuffled."""
    occupied = np.flatnonzero(counts)
    cells = np.repeat(occupied, counts[occupied])
    rng.shuffle(cells)
    return dict(zip(columns, np.unravel_index(cells, shape)))


def cells_frame(counts: np.ndarray, domain: Domain) -> pd.DataFrame:
    """A tidy table: one row per cell, a column per domain column (its category or bin), ``count``.

    >>> d = Domain.from_sizes({"a": 2, "b": 2})
    >>> cells_frame(np.array([3, 0, 1, 2]), d).to_dict("list")
    {'a': [0, 0, 1, 1], 'b': [0, 1, 0, 1], 'count': [3, 0, 1, 2]}
    """
    codes = np.unravel_index(np.arange(counts.size), domain.shape())
    frame = {c.name: cell_labels(c)[k] for c, k in zip(domain.columns, codes)}
    frame["count"] = counts
    return pd.DataFrame(frame)


def cell_labels(column: Column) -> np.ndarray:
    """What each code of a column stands for: the category, the integer, or its bin ``[lo, hi)``."""
    if column.is_categorical:
        return np.asarray(column.categories, dtype=None if column.numeric_categories else object)
    if column.bins is None:
        return np.arange(int(column.lower), int(column.upper) + 1)
    edges = column.bins
    last = len(edges) - 2
    return np.asarray([f"[{edges[k]:g}, {edges[k + 1]:g}{']' if k == last else ')'}" for k in range(last + 1)], dtype=object)


def describe_cells(domain: Domain) -> dict[str, Any]:
    """The cells of a table release, for release.json: each column's categories or bins, in order."""
    return {
        "order": "C order: the first column varies slowest",
        "columns": {c.name: [str(x) for x in cell_labels(c)] for c in domain.columns},
    }
