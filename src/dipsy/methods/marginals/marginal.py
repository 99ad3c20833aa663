"""The value object the marginal-based methods pass around: one marginal's cell counts.

>>> m = Marginal((0, 2), np.arange(6.0).reshape(2, 3), rho=0.5)
>>> m.total, m.project((2,)).counts.tolist()
(15.0, [3.0, 5.0, 7.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from ...domain.rules import RuleCells

#: Structural zeros: ``(attributes, forbidden)``, attribute indices ascending and a boolean table
#: over their codes (axes in that order) of the cells no record may hold.
Zeros: TypeAlias = tuple[tuple[tuple[int, ...], np.ndarray], ...]


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


def rule_zeros(cells: Sequence[RuleCells], names: Sequence[str], maps: Sequence[np.ndarray] | None = None) -> Zeros:
    """The edit rules' forbidden cells as structural zeros over the columns' codes, or over merged
    codes when ``maps`` (``maps[a][v]``: the merged code of column ``a``'s value ``v``) merged rare
    values: a merged cell is forbidden only when every combination of values it holds is.

    >>> from dipsy.domain.rules import Rule
    >>> rule = Rule.from_dict({"name": "r", "forbidden": {"columns": ["b", "a"], "combinations": [[0, 1], [1, 1]]}})
    >>> from dipsy.domain.columns import Column
    >>> cells = RuleCells(rule, rule.forbidden({c: Column(c, "integer", lower=0, upper=1) for c in "ab"}))
    >>> [(attrs, f.astype(int).tolist()) for attrs, f in rule_zeros([cells], ["a", "b"])]
    [((0, 1), [[0, 0], [1, 1]])]
    >>> rule_zeros([cells], ["a", "b"], [np.array([0, 0]), np.array([0, 1])])  # a's values merged: nothing whole
    ()
    """
    out = []
    for rule in cells:
        where = [list(names).index(c) for c in rule.columns]
        order = np.argsort(where)
        attrs = tuple(int(where[i]) for i in order)
        forbidden = np.transpose(rule.forbidden, order)
        if maps is not None:
            allowed = np.zeros(tuple(int(np.max(maps[a])) + 1 for a in attrs), dtype=bool)
            np.logical_or.at(allowed, np.ix_(*[np.asarray(maps[a], dtype=np.int64) for a in attrs]), ~forbidden)
            forbidden = ~allowed
        if forbidden.any():
            out.append((attrs, forbidden))
    return tuple(out)


def held_at_zero(marginals: Sequence[Marginal], zeros: Zeros) -> list[Marginal]:
    """Each marginal whose attributes hold a rule's with that rule's forbidden cells set to 0 and
    its other cells scaled to keep its total (so the marginals keep one total); the others as
    they are. Post-processing of noisy counts with the public rules.

    >>> m = Marginal((0, 1), np.array([[4.0, 2.0], [1.0, 3.0]]))
    >>> held_at_zero([m, Marginal((0,), np.array([6.0, 4.0]))], (((0, 1), np.array([[False, True], [False, False]])),))[0].counts.tolist()
    [[5.0, 0.0], [1.25, 3.75]]
    """
    out = []
    for m in marginals:
        counts = None
        for attrs, forbidden in zeros:
            if set(attrs) <= set(m.attributes):
                counts = np.array(m.counts, dtype=float) if counts is None else counts
                shape = [forbidden.shape[attrs.index(a)] if a in attrs else 1 for a in m.attributes]
                counts[np.broadcast_to(forbidden.reshape(shape), counts.shape)] = 0.0
        if counts is None:
            out.append(m)
            continue
        kept = counts.sum()
        if kept > 0:
            counts *= m.total / kept
        out.append(Marginal(m.attributes, counts, m.rho))
    return out


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
