"""The value object the marginal-based methods pass around: one marginal's cell counts.

>>> m = Marginal((0, 2), np.arange(6.0).reshape(2, 3), rho=0.5)
>>> m.total, m.project((2,)).counts.tolist()
(15.0, [3.0, 5.0, 7.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Marginal:
    """Counts over the cells of ``attributes`` (column indices in domain order, ascending).

    ``counts`` is dense, C-ordered, of shape ``(sizes[a] for a in attributes)``, float (noisy
    counts may be fractional or negative until post-processed). ``rho`` is the zCDP budget its
    noise cost — the weight it gets in consistency — and ``inf`` for an exact (public) marginal.
    """

    attributes: tuple[int, ...]
    counts: np.ndarray
    rho: float = float("inf")

    def __post_init__(self) -> None:
        if tuple(sorted(set(self.attributes))) != tuple(self.attributes):
            raise ValueError(f"attributes must be distinct and ascending, got {self.attributes}")
        if np.ndim(self.counts) != len(self.attributes):
            raise ValueError(f"counts have {np.ndim(self.counts)} axes for {len(self.attributes)} attributes")

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    @property
    def cells(self) -> int:
        return int(self.counts.size)

    def project(self, attributes: tuple[int, ...]) -> Marginal:
        """The marginal over a subset of this one's attributes (summing the others out)."""
        missing = set(attributes) - set(self.attributes)
        if missing:
            raise ValueError(f"attributes {sorted(missing)} are not in this marginal")
        drop = tuple(i for i, a in enumerate(self.attributes) if a not in attributes)
        return Marginal(tuple(attributes), self.counts.sum(axis=drop), self.rho)

    def with_counts(self, counts: np.ndarray) -> Marginal:
        return Marginal(self.attributes, counts, self.rho)


def exact_counts(engine, attributes: tuple[int, ...]) -> np.ndarray:
    """The engine's dense count table over ``attributes`` (domain indices), shaped by their sizes.

    Exact: for an engine of public data only (dpsyn's public data set). Confidential tables are
    read through a session's measurements (:class:`~dipsy.privacy.measurement.Table`), never here.
    """
    names = [engine.domain.names[a] for a in attributes]
    table = engine.contingency(names, form="dense")
    return table.counts.reshape(table.shape).astype(np.int64)


def independent_records(noisy_one_way: tuple[np.ndarray, ...], n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``n`` records, each column drawn independently from its noisy one-way counts clipped at 0
    (uniformly when all are ≤ 0): the marginal methods' fallback when the noisy total says
    nothing (tiny or empty data). Post-processing of noisy counts only.

    >>> [c.tolist() for c in independent_records((np.array([-3.0, 5.0]), np.array([0.0, 0.0])), 2, np.random.default_rng(0))][0]
    [1, 1]
    """
    out = []
    for noisy in noisy_one_way:
        w = np.maximum(np.asarray(noisy, dtype=float), 0.0)
        p = w / w.sum() if w.sum() > 0 else np.full(len(w), 1 / len(w))
        out.append(rng.choice(len(w), size=n, p=p).astype(np.int64))
    return out
