r"""A distribution on a spanning tree of attributes, from consistent one- and two-way marginals.

MST (McKenna, Miklau & Sheldon 2021, JPC 11(3)) measures every one-way marginal and the
two-way marginals of the d − 1 edges of a spanning tree T. mbi then fits a graphical model to the
measurements by mirror descent. When the measured pairs form a tree the fit has a closed form:
once the marginals are mutually consistent (every edge's two-way agrees with its endpoints'
one-ways), the distribution of maximum entropy with those marginals is the tree distribution

.. math::  P(x) \;=\; \frac{\prod_{(i,j) \in T} P(x_i, x_j)}{\prod_{i} P(x_i)^{\deg(i) - 1}}
           \;=\; P(x_r) \prod_{(p \to c)} P(x_c \mid x_p),

the second form rooted at any attribute r, each edge directed away from it (Chow & Liu 1968; the
factorisation of a decomposable model over its junction tree, whose cliques are the edges and
separators the attributes, Lauritzen 1996, "Graphical Models", on decomposable models). It has
every edge's two-way exactly, and makes two
attributes not joined by an edge independent given the path between them: no association beyond
the tree is invented.

:class:`TreeDistribution` holds that factorisation — the root's one-way and one conditional table
per edge, each row of an edge's two-way divided by its row total — and gives its exact marginals
(:meth:`~TreeDistribution.marginal`, by contracting the factors) and i.i.d. records drawn along the
tree (:meth:`~TreeDistribution.sample`: the root from its one-way, then each attribute given its
parent). Everything here reads noisy (post-processed) marginals only: no privacy cost.

>>> ab = Marginal((0, 1), np.array([[30.0, 10.0], [0.0, 60.0]]))
>>> bc = Marginal((1, 2), np.array([[15.0, 15.0], [70.0, 0.0]]))
>>> t = TreeDistribution.from_marginals([2, 2, 2], [ab, bc])
>>> t.marginal((0, 2)).round(3).tolist()   # a and c dependent only through b
[[0.25, 0.15], [0.6, 0.0]]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .marginal import Marginal


@dataclass(frozen=True, eq=False)
class TreeDistribution:
    """``P(x) = P(x_root) Π_c P(x_c | x_parent(c))`` over attributes ``0..d−1`` of ``sizes``.

    ``order`` lists ``(child, parent)`` so that every parent comes before its children (breadth
    first from ``root``); ``conditionals[c]`` is the ``(sizes[parent], sizes[c])`` table of
    ``P(x_c | x_parent)`` (rows sum to 1); ``root_p`` is ``P(x_root)``.
    """

    sizes: tuple[int, ...]
    root: int
    root_p: np.ndarray
    order: tuple[tuple[int, int], ...]
    conditionals: dict[int, np.ndarray]

    @classmethod
    def from_marginals(
        cls, sizes: Sequence[int], edges: Sequence[Marginal], root_counts: np.ndarray | None = None, root: int = 0
    ) -> TreeDistribution:
        """The tree distribution of consistent non-negative two-way marginals on a spanning tree.

        Parameters
        ----------
        sizes
            The number of values of each attribute.
        edges
            One two-way :class:`Marginal` per edge, ``d − 1`` of them, forming a spanning tree of
            ``0..d−1`` (refused otherwise), non-negative and consistent on shared attributes.
        root_counts
            The root's one-way counts; default: the projection of an edge at the root (the two
            agree when the marginals are consistent).
        root
            The attribute the factorisation starts from (any root gives the same distribution).

        A row of an edge's two-way whose total is 0 is a parent value of probability 0 under the
        model; its conditional is set to the child's one-way (projected from the same two-way), so
        it is defined, and it is never used by the model's own draws up to the consistency
        tolerance.
        """
        d = len(sizes)
        if len(edges) != d - 1:
            raise ValueError(f"a spanning tree of {d} attributes has {d - 1} edges, not {len(edges)}")
        adjacent: dict[int, list[tuple[int, Marginal]]] = {a: [] for a in range(d)}
        for m in edges:
            if len(m.attributes) != 2:
                raise ValueError(f"an edge is a two-way marginal, not one over {m.attributes}")
            a, b = m.attributes
            adjacent[a].append((b, m))
            adjacent[b].append((a, m))
        order, conditionals, seen = [], {}, {root}
        queue = deque([root])
        while queue:
            p = queue.popleft()
            for c, m in adjacent[p]:
                if c in seen:
                    continue
                seen.add(c)
                table = np.maximum(np.asarray(m.counts, dtype=float), 0.0)
                table = table if m.attributes == (p, c) else table.T  # rows: the parent's values
                conditionals[c] = _rows_normalised(table)
                order.append((c, p))
                queue.append(c)
        if len(seen) != d:
            raise ValueError("the edges do not connect every attribute: they are not a spanning tree")
        if root_counts is None:
            first = adjacent[root][0][1] if adjacent[root] else None
            root_counts = np.ones(sizes[root]) if first is None else first.project((root,)).counts
        w = np.maximum(np.asarray(root_counts, dtype=float), 0.0)
        root_p = w / w.sum() if w.sum() > 0 else np.full(sizes[root], 1.0 / sizes[root])
        return cls(tuple(int(s) for s in sizes), root, root_p, tuple(order), conditionals)

    def parents(self) -> dict[int, int]:
        return dict(self.order)

    def marginal(self, attributes: Sequence[int]) -> np.ndarray:
        """The exact marginal distribution over ``attributes`` (in the order given).

        The attributes' paths to the root form a subtree holding the root; summing out every
        attribute off that subtree leaves its factors unchanged (each conditional sums to 1 over
        its child), so the marginal is the contraction of the root's one-way and the subtree's
        conditionals, summed over the subtree's other attributes (``np.einsum``, leaves first).
        """
        attributes = [int(a) for a in attributes]
        parent = self.parents()
        keep = set()
        for a in attributes:
            while a not in keep:
                keep.add(a)
                if a == self.root:
                    break
                a = parent[a]
        label = {a: k for k, a in enumerate(sorted(keep))}  # einsum's sublists take small integers
        operands: list = [self.root_p, [label[self.root]]]
        for c, p in self.order:
            if c in keep:
                operands += [self.conditionals[c], [label[p], label[c]]]
        return np.einsum(*operands, [label[a] for a in attributes], optimize="greedy")

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. records (an ``(n, d)`` int64 array of codes) drawn along the tree.

        The root from ``P(x_root)``; then, parents first, each attribute from its conditional row
        at the record's parent value, by inversion: with the rows' cumulative sums laid end to end,
        row ``v`` shifted by ``v`` (so the whole is non-decreasing), the child of a record with
        parent value ``v`` and uniform ``u`` is the first cell past ``v + u`` — one
        ``searchsorted`` for all records, no loop over records or values.
        """
        out = np.empty((n, len(self.sizes)), dtype=np.int64)
        out[:, self.root] = rng.choice(self.sizes[self.root], size=n, p=self.root_p)
        for c, p in self.order:
            table = self.conditionals[c]
            cum = np.cumsum(table, axis=1)
            cum[:, -1] = 1.0  # rows sum to one up to rounding: make each row end exactly there
            offsets = np.arange(table.shape[0], dtype=float)[:, None]
            flat = (cum + offsets).ravel()
            parent = out[:, p]
            idx = np.searchsorted(flat, parent + rng.random(n), side="right")
            out[:, c] = np.minimum(idx - parent * table.shape[1], table.shape[1] - 1)
        return out


def _rows_normalised(table: np.ndarray) -> np.ndarray:
    """Each row over its total; a row of total 0 becomes the column totals' distribution (uniform
    if those are 0 too)."""
    rows = table.sum(axis=1, keepdims=True)
    columns = table.sum(axis=0)
    fallback = columns / columns.sum() if columns.sum() > 0 else np.full(table.shape[1], 1.0 / table.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(rows > 0, table / np.where(rows > 0, rows, 1.0), fallback[None, :])
    return out


__all__ = ["TreeDistribution"]
