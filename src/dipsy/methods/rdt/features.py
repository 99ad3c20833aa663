"""How records become a tree's feature matrix: codes, bins and the public groupings (collapsing).

A grouping maps an attribute's codes to the children of a split. It is decided from public inputs
only — the domain, and counts in the public structure file — as S-004's two collapsing methods do:
``coarsen`` merges runs of adjacent codes (pay in $10,000 or $25,000 units: coarser bins), and
``collapse`` pools the categories that have fewer than k structure-file records into one child
(agencies with < 500 records, occupations with < 200).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...engine import Records


def grouping(size: int, coarsen: int = 1, support: np.ndarray | None = None, least: float = 0.0) -> np.ndarray:
    """Code → group: runs of ``coarsen`` adjacent codes merged, then the groups whose ``support``
    (public counts per code) is below ``least`` pooled into one group, numbered last.

    >>> grouping(5, coarsen=2).tolist()
    [0, 0, 1, 1, 2]
    >>> grouping(4, support=np.array([50, 3, 40, 1]), least=10).tolist()
    [0, 2, 1, 2]
    """
    groups = np.arange(size) // coarsen
    if support is None or least <= 0:
        return groups
    per_group = np.bincount(groups, weights=np.asarray(support, dtype=float), minlength=groups.max() + 1)
    rare = per_group < least
    if rare.sum() < 2:  # pooling a single group changes nothing
        return groups
    kept = np.flatnonzero(~rare)
    relabel = np.full(len(per_group), len(kept))
    relabel[kept] = np.arange(len(kept))
    return relabel[groups]


@dataclass(frozen=True, eq=False)
class Features:
    """The feature columns of one sensitive column's trees: each a grouping, or raw (numeric
    attributes of a random structure, split at thresholds)."""

    columns: tuple[str, ...]
    groupings: tuple[np.ndarray | None, ...]  # None: the raw value

    @property
    def sizes(self) -> list[int]:
        """Children of a categorical split on each column (0 for raw ones)."""
        return [0 if g is None else int(g.max()) + 1 for g in self.groupings]

    def matrix(self, codes: Mapping[str, np.ndarray], rows: int) -> np.ndarray:
        """Rows × columns: the group of each code, or the raw value."""
        out = np.empty((rows, len(self.columns)), dtype=float)
        for j, (name, g) in enumerate(zip(self.columns, self.groupings)):
            out[:, j] = codes[name] if g is None else g[codes[name]]
        return out

    def inputs(self, records: Records) -> dict[str, np.ndarray]:
        """What :meth:`matrix` reads, from records: codes, or raw values."""
        return {
            name: records.numbers[name] if g is None else records.codes[name] for name, g in zip(self.columns, self.groupings)
        }

    def describe(self) -> dict:
        """The public groupings, for release.json (only the columns whose codes are merged)."""
        return {name: g.tolist() for name, g in zip(self.columns, self.groupings) if g is not None and int(g.max()) + 1 < len(g)}
