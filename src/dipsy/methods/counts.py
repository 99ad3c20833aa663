"""What the count methods share: a model that releases cell counts, as a table or as records.

Every count method (Dirichlet-multinomial, beta-binomial, DP-prior, gamma-Poisson, Laplace
sanitizer) ends in a vector of counts over the cells of the full cross-tabulation of the
released columns. Released as a table, those counts are written cell by cell; released as
records, each cell is repeated as often as its count, decoded and shuffled — post-processing of
the counts, so it costs no privacy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Column, Domain
from ..domain.codec import state_values
from ..errors import DipsyError
from ..privacy.rng import Randomness
from .base import CHUNK_ROWS, Model, concatenated


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
        return concatenated(self.chunks(k, rand))

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray]]:
        return counts_to_chunks(self.counts(k, rand), self.columns, self.shape, rand.numpy, rows)


def counts_to_codes(
    counts: np.ndarray, columns: tuple[str, ...], shape: tuple[int, ...], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Records from cell counts: each occupied cell repeated by its count, then shuffled."""
    occupied = np.flatnonzero(counts)
    cells = np.repeat(occupied, counts[occupied])
    rng.shuffle(cells)
    return dict(zip(columns, np.unravel_index(cells, shape)))


#: NumPy's multivariate hypergeometric draws from fewer than this many items.
HYPERGEOMETRIC_LIMIT = 10**9


def counts_to_chunks(
    counts: np.ndarray, columns: tuple[str, ...], shape: tuple[int, ...], rng: np.random.Generator, rows: int = CHUNK_ROWS
) -> Iterator[dict[str, np.ndarray]]:
    """The records of :func:`counts_to_codes`, in chunks of ``rows``: never more than a chunk in memory.

    A uniformly shuffled list of the records, cut into consecutive chunks, has as its first chunk
    a multivariate hypergeometric draw of ``rows`` records from the counts, in uniform order, and
    so on from what remains: each chunk is drawn so (``method="marginals"``, whose cost does not
    grow with the counts) and shuffled. The last chunk takes what remains without a draw, so a
    set of at most ``rows`` records is exactly :func:`counts_to_codes`'s.

    >>> rng = np.random.default_rng(0)
    >>> parts = list(counts_to_chunks(np.array([3, 0, 4]), ("a",), (3,), rng, rows=3))
    >>> [len(p["a"]) for p in parts], np.bincount(np.concatenate([p["a"] for p in parts])).tolist()
    ([3, 3, 1], [3, 0, 4])
    """
    remaining = np.asarray(counts, dtype=np.int64).copy()
    left = int(remaining.sum())
    if left > rows and left >= HYPERGEOMETRIC_LIMIT:
        raise DipsyError(
            f"a set of {left:,} records is more than can be drawn in chunks (at most {HYPERGEOMETRIC_LIMIT - 1:,})",
            "release the table of counts (--release table), or several smaller sets",
        )
    while True:
        if left <= rows:
            yield counts_to_codes(remaining, columns, shape, rng)
            return
        take = rng.multivariate_hypergeometric(remaining, rows, method="marginals")
        remaining -= take
        left -= rows
        yield counts_to_codes(take, columns, shape, rng)


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
    """What each code of a column stands for: the category, the integer, or its bin ``[lo, hi)``;
    then each missing state's value, as records decode it (its code as written, or None: empty)."""
    values = _value_labels(column)
    if column.missing is None:
        return values
    out = np.empty(len(values) + column.n_states, dtype=object)
    out[:] = [*values.tolist(), *state_values(column).tolist()]
    return out


def _value_labels(column: Column) -> np.ndarray:
    if column.is_categorical:
        return np.asarray(column.categories, dtype=None if column.numeric_categories else object)
    if column.bins is None:  # an integer column (a numeric one without bins has no codes)
        assert column.lower is not None and column.upper is not None, "Column checks every integer column's bounds"
        return np.arange(int(column.lower), int(column.upper) + 1)
    edges = column.bins
    last = len(edges) - 2
    return np.asarray([f"[{edges[k]:g}, {edges[k + 1]:g}{']' if k == last else ')'}" for k in range(last + 1)], dtype=object)


def describe_cells(domain: Domain) -> dict[str, Any]:
    """The cells of a table release, for release.json: each column's categories or bins, in order,
    then its missing states (``missing: LABEL (CODE)``, or ``(empty)``).

    >>> from dipsy.domain.missing import Missing
    >>> d = Domain((Column("r", "categorical", categories=(1, 2), missing=Missing(empty="skipped", codes=((-8, "refused"),))),))
    >>> describe_cells(d)["columns"]["r"]
    ['1', '2', 'missing: skipped (empty)', 'missing: refused (-8)']
    """
    return {
        "order": "C order: the first column varies slowest",
        "columns": {c.name: _cell_texts(c) for c in domain.columns},
    }


def _cell_texts(column: Column) -> list[str]:
    texts = [str(x) for x in _value_labels(column)]
    if column.missing is not None:
        texts += [
            f"missing: {label} ({'empty' if value is None else value})"
            for label, value in zip(column.missing.labels, column.missing.values)
        ]
    return texts
