r"""Junction trees over attribute cliques, and the exact marginals of a log-linear model over one.

A graphical model whose factors live on cliques of attributes is summed efficiently over a
junction tree: the maximal cliques of a triangulation of the factors' graph, joined so that every
attribute's cliques form a connected subtree (the running-intersection property). This module
builds that tree in NumPy and calibrates it.

- :func:`elimination_cliques` triangulates by greedy elimination: at each step the attribute whose
  neighbourhood, itself included, has the fewest cells; ties go to the first in domain order. The
  elimination cliques' maximal members are the triangulated graph's maximal cliques (Koller &
  Friedman 2009, Thm 9.6). :func:`model_size` counts their cells; AIM's model-size filter uses it.
- :meth:`JunctionTree.over` joins those cliques by a maximum-weight spanning tree whose weight is
  the number of attributes two cliques share. Any such tree of a chordal graph's maximal cliques
  is a junction tree (Jensen & Jensen 1994). Cliques that share nothing stay in separate trees of
  a forest.
- :meth:`JunctionTree.calibrate` runs two-pass sum-product message passing (Koller & Friedman
  2009, §10.2), messages in log space, one exponential per cell. It returns every clique's exact
  marginal of ``p(x) ∝ exp(Σ_f θ_f(x_f))``, each factor placed in a clique that holds it. A factor may hold
  ``−∞`` (a structural zero).

Everything here is arithmetic on public shapes and on noisy outputs: it reads no data.

>>> t = JunctionTree.over((2, 3, 2), [(0, 1), (1, 2)])
>>> t.cliques, t.parents
(((0, 1), (1, 2)), (-1, 0))
>>> [np.round(m, 3).tolist() for m in t.calibrate([np.zeros((2, 3)), np.zeros((3, 2))])][1]
[[0.167, 0.167], [0.167, 0.167], [0.167, 0.167]]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np


def elimination_cliques(sizes: Sequence[int], cliques: Iterable[Iterable[int]]) -> list[tuple[int, ...]]:
    """The maximal cliques of the greedy triangulation of ``cliques`` (attribute indices) over
    every attribute of ``sizes``, each ascending, in the order they were eliminated.

    >>> elimination_cliques([2, 3, 4], [(0, 1), (1, 2), (0, 2)])
    [(0, 1, 2)]
    >>> elimination_cliques([2, 2, 2], [(0, 1)])
    [(2,), (0, 1)]
    """
    return [tuple(_bits(m)) for m in _elimination(tuple(int(s) for s in sizes), _masks(cliques))]


def model_size(sizes: Sequence[int], cliques: Iterable[Iterable[int]]) -> int:
    """Cells of the junction tree over ``cliques`` (attribute indices): AIM's model size, × 8 bytes.

    Computed on bitmasks because AIM asks it for every candidate in every round. When the
    cliques' edges form one tree over all the attributes, its maximal cliques are those edges;
    otherwise they are :func:`elimination_cliques`.

    >>> model_size([2, 3, 4], [(0, 1), (1, 2)]), model_size([2, 3, 4], [(0, 1), (1, 2), (0, 2)])
    (18, 24)
    """
    sizes = tuple(int(s) for s in sizes)
    masks = _masks(cliques)
    # a clique of three or more attributes holds a cycle: only pairs and single attributes can be a tree
    if all(m.bit_count() <= 2 for m in masks):
        edges = {(a, b) for m in masks if m.bit_count() == 2 for a, b in [_bits(m)]}
        if edges and len(edges) == len(sizes) - 1 and _connected(len(sizes), edges):
            return sum(sizes[a] * sizes[b] for a, b in edges)
    cells_of = _cells_counter(sizes)
    return sum(cells_of(m) for m in _elimination(sizes, masks))


def _masks(cliques: Iterable[Iterable[int]]) -> set[int]:
    masks = {sum(1 << a for a in set(c)) for c in cliques}
    masks.discard(0)
    return masks


def _elimination(sizes: tuple[int, ...], masks: set[int]) -> list[int]:
    """Greedy elimination over all ``len(sizes)`` attributes; its maximal cliques, as bitmasks.

    Each attribute's neighbourhood (the union of the cliques that hold it) is kept as it changes:
    eliminating ``b`` merges the cliques holding ``b`` into their union less ``b``, so an attribute
    of that union gains the union and loses ``b``, and no other attribute's changes (none of its
    cliques holds ``b``)."""
    cells_of = _cells_counter(sizes)
    near = [0] * len(sizes)  # an attribute in no clique: 0, costing 1 (mbi's order: such attributes go first)
    for m in masks:
        for a in _bits(m):
            near[a] |= m
    unmarked = list(range(len(sizes)))
    eliminated: list[int] = []
    for _ in range(len(sizes)):
        best = min(unmarked, key=lambda a: cells_of(near[a]))  # the first of equal ones, in domain order
        bit, union = 1 << best, near[best]
        unmarked.remove(best)
        rest = union & ~bit
        for a in _bits(rest):
            near[a] = (near[a] & ~bit) | rest
        eliminated.append(union | bit)
    unique = list(dict.fromkeys(eliminated))
    return [m for m in unique if not any(o != m and o & m == m for o in unique)]


def _bits(mask: int) -> list[int]:
    return [a for a in range(mask.bit_length()) if mask >> a & 1]


def _connected(d: int, edges: set[tuple[int, int]]) -> bool:
    seen, stack = {0}, [0]
    adjacent: dict[int, list[int]] = {}
    for a, b in edges:
        adjacent.setdefault(a, []).append(b)
        adjacent.setdefault(b, []).append(a)
    while stack:
        for b in adjacent.get(stack.pop(), []):
            if b not in seen:
                seen.add(b)
                stack.append(b)
    return len(seen) == d


@lru_cache(maxsize=64)
def _cells_counter(sizes: tuple[int, ...]):
    """A memoised ``mask -> Π sizes`` for one domain."""

    @lru_cache(maxsize=1 << 18)
    def cells(mask: int) -> int:
        return math.prod(sizes[a] for a in _bits(mask))

    return cells


@dataclass(frozen=True, eq=False)
class JunctionTree:
    """A junction forest: ``cliques[k]`` ascending attribute indices, ``parents[k]`` its parent
    clique (``-1`` for a root), ``order`` the cliques parents first (breadth first from the roots).

    >>> JunctionTree.over((2, 2, 2, 2), [(0, 1), (2, 3)]).parents
    (-1, -1)
    """

    sizes: tuple[int, ...]
    cliques: tuple[tuple[int, ...], ...]
    parents: tuple[int, ...]
    order: tuple[int, ...]
    _plan: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def over(cls, sizes: Sequence[int], cliques: Iterable[Iterable[int]]) -> JunctionTree:
        """The junction tree of the greedy triangulation of ``cliques``, covering every attribute."""
        sizes = tuple(int(s) for s in sizes)
        nodes = elimination_cliques(sizes, cliques)
        # Kruskal's maximum spanning forest on shared attributes (pairs sharing none are not joined);
        # ties broken by clique order, so the tree is a function of its inputs
        pairs = sorted(
            ((len(set(a) & set(b)), i, j) for i, a in enumerate(nodes) for j, b in enumerate(nodes) if i < j),
            key=lambda p: (-p[0], p[1], p[2]),
        )
        group = list(range(len(nodes)))

        def find(i: int) -> int:
            while group[i] != i:
                group[i] = group[group[i]]
                i = group[i]
            return i

        adjacent: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
        for shared, i, j in pairs:
            if shared and find(i) != find(j):
                group[find(i)] = find(j)
                adjacent[i].append(j)
                adjacent[j].append(i)
        parents = [-2] * len(nodes)
        order: list[int] = []
        for root in range(len(nodes)):
            if parents[root] != -2:
                continue
            parents[root] = -1
            queue = [root]
            while queue:
                k = queue.pop(0)
                order.append(k)
                for c in sorted(adjacent[k]):
                    if parents[c] == -2:
                        parents[c] = k
                        queue.append(c)
        return cls(sizes, tuple(nodes), tuple(parents), tuple(order))

    def shape(self, k: int) -> tuple[int, ...]:
        return tuple(self.sizes[a] for a in self.cliques[k])

    def separator(self, k: int) -> tuple[int, ...]:
        """Clique ``k``'s attributes shared with its parent (empty for a root)."""
        p = self.parents[k]
        return () if p < 0 else tuple(a for a in self.cliques[k] if a in self.cliques[p])

    def host(self, attrs: Iterable[int]) -> int:
        """The smallest clique holding every attribute of ``attrs`` (one always does for a factor's)."""
        wanted = set(attrs)
        holders = [k for k, c in enumerate(self.cliques) if wanted <= set(c)]
        if not holders:
            raise ValueError(f"no clique of this tree holds the attributes {sorted(wanted)}")
        return min(holders, key=lambda k: (math.prod(self.shape(k)), k))

    def children(self) -> dict[int, list[int]]:
        return children(self.parents)

    def calibrate(self, log_factors: Sequence[np.ndarray]) -> list[np.ndarray]:
        r"""Every clique's marginal of ``p ∝ exp(Σ_k log_factors[k])`` (each array over clique k,
        axes ascending; ``−∞`` allowed), as probabilities summing to 1 over each tree of the forest.

        Sum-product message passing in log space (Koller & Friedman 2009, Alg. 10.2). Upward,
        ``m_{k→p}(s) = log Σ_{x_k \ s} exp(β_k)`` with ``β_k = ψ_k + Σ_{c child of k} m_{c→k}``,
        computed as ``log Σ E_k + t_k(s)`` from ``E_k = exp(β_k − t_k(s))``: one shift ``t_k`` for
        the whole table when its entries lie within :data:`ONE_SHIFT_RANGE` of each other, else each
        separator value's slice shifted by its own largest entry, so no message loses precision
        however far apart the potentials lie (fitted potentials on Adult reach ±1,300; one shift
        underflows past ~745). Downward, parents first, the message to a child divides the parent's
        calibrated marginal on the separator by the child's own message (the Hugin form, ibid. §10.3):
        ``m_{p→k}(s) = log Σ_{x_p \ s} exp(β_p − m_{k→p}) = log μ_p(s) + log Z_p − m_{k→p}(s)``, since
        ``m_{k→p}`` depends on ``s`` alone; ``μ_p`` is the parent's marginal, already computed, so a
        message costs a sum over the parent's table and no exponential. The child's marginal is then
        ``μ_k ∝ exp(β_k + m_{p→k}) = E_k · exp(g_k(s) − max g_k)`` with ``g_k = t_k + m_{p→k}``, a
        table over the separator: the ``E_k`` kept from the upward pass times a factor per slice, so
        each cell takes one exponential per calibration. Within a slice ``E_k`` keeps every cell
        within ~1e-308 of the slice's largest, and a slice whose factor underflows has probability
        below ~1e-308: cells lost either way are 0 in the marginals returned. A tree whose every
        cell is ``−∞`` has no distribution: its cliques come back as ``nan``. The clique tables of
        the upward pass live in buffers of the tree's, reused by the next calibration (a calibration
        keeps none of them: each marginal returned is a new array).
        """
        plan = self._messages()
        scratch = plan.setdefault("scratch", {})
        # upward: each clique's belief β_k (its factor plus its children's messages) and
        # E_k = exp(β_k − top_k(s)), shifted per separator value s by that slice's largest entry;
        # the message up is log Σ E_k + top_k
        shifted: list[np.ndarray] = [np.empty(0)] * len(log_factors)
        tops: list[np.ndarray] = [np.empty(0)] * len(log_factors)
        sums: list[np.ndarray] = [np.empty(0)] * len(log_factors)
        up: dict[int, np.ndarray] = {}
        for k in reversed(self.order):
            belief = np.asarray(log_factors[k], dtype=float)
            below = plan["children"].get(k, [])
            if below:  # summed into a buffer of the tree's, reused at every call
                buffer = _buffer(scratch, ("belief", k), belief.shape)
                np.add(belief, widened(up[below[0]], buffer.shape), out=buffer)
                for c in below[1:]:
                    buffer += widened(up[c], buffer.shape)
                belief = buffer
            axes, shape = plan["up"][k] if self.parents[k] >= 0 else (tuple(range(belief.ndim)), ())
            e = _buffer(scratch, ("shifted", k), belief.shape)
            high, low = float(belief.max()), float(belief.min())
            if np.isfinite(low) and high - low < ONE_SHIFT_RANGE:  # every exp(β − high) a normal float
                top = np.full((1,) * belief.ndim, high)
                np.subtract(belief, high, out=e)
            else:  # each slice by its own largest entry
                top = max_axes(belief, axes)
                top = np.where(np.isfinite(top), top, 0.0).reshape([1 if i in axes else n for i, n in enumerate(belief.shape)])
                np.subtract(belief, widened(top, e.shape), out=e)
            np.exp(e, out=e)
            # each separator value's Σ E_k (the whole table's for a root): the message up, and later
            # the normalising constant of the marginal without another pass over the clique
            sums[k] = sum_axes(e, axes)
            shifted[k], tops[k] = e, top
            if self.parents[k] >= 0:
                with np.errstate(divide="ignore"):
                    up[k] = (np.log(sums[k]) + top.reshape(np.delete(top.shape, axes))).reshape(shape)
        # downward, parents first: β_k + m_{p→k} = log E_k + g_k(s) with g_k = top_k + m_{p→k}, so
        # the marginal is E_k · exp(g_k − max g_k), normalised: a product, no second exponential
        out: list[np.ndarray] = [np.empty(0)] * len(log_factors)
        log_z = [0.0] * len(log_factors)
        for k in self.order:
            p = self.parents[k]
            g = tops[k]
            if p >= 0:
                axes, shape = plan["down"][k]
                own = up[k].reshape(shape)  # the separator's values in the same order in both cliques
                with np.errstate(divide="ignore", invalid="ignore"):
                    down = np.log(sum_axes(out[p], axes)).reshape(shape) + log_z[p] - own
                g = np.where(np.isneginf(own) | np.isnan(down), -np.inf, g + down)
            high = float(g.max())
            if not np.isfinite(high):
                out[k], log_z[k] = np.full(shifted[k].shape, np.nan), np.nan
                continue
            factor = np.exp(g - high)
            total = float((factor.reshape(sums[k].shape) * sums[k]).sum())  # Σ_s f(s) Σ_{x∈s} E_k(x)
            if not total > 0:
                out[k], log_z[k] = np.full(shifted[k].shape, np.nan), np.nan
                continue
            out[k], log_z[k] = np.multiply(shifted[k], widened(factor / total, shifted[k].shape)), high + math.log(total)
        return out

    def _messages(self) -> dict:
        """For each clique: the axes summed and the shape of its message up and of its parent's down."""
        if not self._plan:
            up, down = {}, {}
            for k, p in enumerate(self.parents):
                if p < 0:
                    continue
                clique, parent = self.cliques[k], self.cliques[p]
                sep = self.separator(k)
                up[k] = (
                    tuple(i for i, a in enumerate(clique) if a not in sep),
                    tuple(self.sizes[a] if a in sep else 1 for a in parent),
                )
                down[k] = (
                    tuple(i for i, a in enumerate(parent) if a not in sep),
                    tuple(self.sizes[a] if a in sep else 1 for a in clique),
                )
            self._plan.update(up=up, down=down, children=self.children())
        return self._plan


#: A table broadcast across a larger one is first laid out over the larger one's trailing axes until
#: they hold this many cells, so that NumPy's inner loop runs over that many contiguous cells: over a
#: message whose last axes are of size 2, adding it to a 1.8-million-cell clique took 5–10 ms, 2 ms
#: once widened.
INNER_CELLS = 512


def widened(small: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``small`` (broadcastable to ``shape``, of as many axes) laid out in full over the trailing axes
    of ``shape`` that hold at least :data:`INNER_CELLS` cells, or over as many of them as keep that
    copy within a quarter of ``shape``'s cells; ``small`` itself when no such copy lengthens the
    inner loop. Adding either to a table of ``shape`` gives the same.

    A separator interleaved with a clique's other axes is why the fallback pays: an ACS clique of
    shape (20, 2, 7, 3, 13, 11, 9, 3) whose separator leaves out the 13 and the 9 gets its per-slice
    shift and factor laid over the last three axes (297 cells, 8 % of the table), where the whole
    tail of 512 cells would have copied the table.

    >>> widened(np.arange(2.0).reshape(1, 2), (300, 2)).shape, widened(np.ones((1, 64, 1)), (100, 64, 8)).shape
    ((1, 2), (1, 64, 8))
    >>> small = np.arange(660.0).reshape(20, 1, 11, 1, 3)
    >>> wide = widened(small, (20, 13, 11, 9, 3))
    >>> wide.shape, np.array_equal(np.zeros((20, 13, 11, 9, 3)) + wide, np.zeros((20, 13, 11, 9, 3)) + small)
    ((20, 1, 11, 9, 3), True)
    """
    n, total = len(shape), math.prod(shape)
    cells, tail, best = 1, 0, 0
    while tail < n and cells < INNER_CELLS:
        tail += 1
        cells *= shape[n - tail]
        if 4 * math.prod(small.shape[: n - tail]) * cells <= total:
            best = tail
    if not best or small.shape[n - best :] == tuple(shape[n - best :]):
        return small
    return np.ascontiguousarray(np.broadcast_to(small, small.shape[: n - best] + tuple(shape[n - best :])))


def _buffer(scratch: dict, key: tuple, shape: tuple[int, ...]) -> np.ndarray:
    """A float array of ``shape`` kept in ``scratch`` under ``key`` and handed out again at the next call."""
    out = scratch.get(key)
    if out is None or out.shape != shape:
        out = scratch[key] = np.empty(shape)
    return out


def children(parents: Sequence[int]) -> dict[int, list[int]]:
    """Each node's children, in index order; the roots (parent ``-1``) under ``-1``."""
    out: dict[int, list[int]] = {}
    for k, p in enumerate(parents):
        out.setdefault(p, []).append(k)
    return out


def parents_first(parents: Sequence[int]) -> list[int]:
    """The nodes breadth first from the roots, so every node comes after its parent.

    >>> parents_first([2, -1, 1])
    [1, 2, 0]
    """
    below = children(parents)
    out, queue = [], list(below.get(-1, []))
    while queue:
        k = queue.pop(0)
        out.append(k)
        queue += below.get(k, [])
    return out


def broadcast_shape(sizes: Sequence[int], attrs: Sequence[int], clique: Sequence[int]) -> list[int]:
    """The shape that lays a table over ``attrs`` (ascending, within ``clique``) across ``clique``.

    >>> broadcast_shape((2, 3, 4), (0, 2), (0, 1, 2))
    [2, 1, 4]
    """
    return [sizes[a] if a in attrs else 1 for a in clique]


#: Axes this short are summed by adding their slices: NumPy's own reduction over a short axis
#: inside a large table runs an inner loop per few elements (a size-2 axis of a 362,880-cell
#: table: 8 ms by ``sum``, 1.8 ms by slices).
SHORT_AXIS = 16
#: Tables of at most this many cells are reduced by NumPy in one call.
SMALL_TABLE = 1 << 14
#: An axis followed by at most this many cells is summed by a matrix product (:func:`_adder`).
SHORT_TAIL = 8


@lru_cache(maxsize=256)
def _adder(n: int, after: int) -> np.ndarray:
    """The ``(n·after) × after`` 0/1 matrix that sums ``n`` consecutive blocks of ``after`` cells.

    >>> _adder(2, 2).astype(int).tolist()
    [[1, 0], [0, 1], [1, 0], [0, 1]]
    """
    return np.tile(np.eye(after), (n, 1))


def sum_axes(table: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``table.sum(axis=axes)``, fast for the tables of a junction tree.

    NumPy sums several axes at once by strided passes that can be forty times slower than summing
    them one at a time, the largest first (the table shrinks most at the first pass). A run of
    trailing axes is one contiguous reduction; a short axis is summed by adding its slices.

    >>> t = np.arange(24.0).reshape(2, 3, 4)
    >>> all(np.array_equal(sum_axes(t, a), t.sum(axis=a)) for a in [(0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)])
    True
    """
    return _reduce(table, axes, np.add)


def max_axes(table: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``table.max(axis=axes)``, by :func:`sum_axes`'s passes.

    >>> max_axes(np.arange(24.0).reshape(2, 3, 4), (0, 2)).tolist()
    [15.0, 19.0, 23.0]
    """
    return _reduce(table, axes, np.maximum)


def _reduce(table: np.ndarray, axes: Sequence[int], ufunc: np.ufunc) -> np.ndarray:
    if not axes:
        return table
    if table.size <= SMALL_TABLE:  # the passes below cost more in Python than they save
        return ufunc.reduce(table, axis=tuple(axes))
    axes = sorted(axes)
    d = table.ndim
    if axes == list(range(d - len(axes), d)) and math.prod(table.shape[a] for a in axes) > SHORT_AXIS:
        return ufunc.reduce(table.reshape(table.shape[: d - len(axes)] + (-1,)), axis=-1)
    left = list(range(d))
    for axis in sorted(axes, key=lambda a: -table.shape[a]):
        i = left.index(axis)
        left.remove(axis)
        n = table.shape[i]
        after = math.prod(table.shape[i + 1 :])
        if ufunc is np.add and 1 < after <= SHORT_TAIL:
            # an axis before a few cells: NumPy's reduction, or adding its slices, would loop over
            # those few at a time; one matrix product with the 0/1 matrix that adds the axis's slices
            # reads the table once (a 99-value axis before 2 cells of a 320,760-cell table: 2.5 ms →
            # 0.06 ms; a 9-value axis before 3 cells of a 3.2-million-cell one: 24 ms → 1.9 ms)
            rows = table.reshape(math.prod(table.shape[:i]), n * after)
            table = (rows @ _adder(n, after)).reshape(table.shape[:i] + table.shape[i + 1 :])
            continue
        if n > SHORT_AXIS or i == 0:
            table = ufunc.reduce(table, axis=i)
            continue
        at: list[Any] = [slice(None)] * table.ndim
        at[i] = 0
        out = table[tuple(at)].copy()
        for j in range(1, n):
            at[i] = j
            ufunc(out, table[tuple(at)], out=out)
        table = out
    return table


#: Within this range of a table's entries one shift for the whole table loses no precision: e^-700
#: is still a normal float (they end near e^-708), so every summand keeps its 53 bits.
ONE_SHIFT_RANGE = 700.0


__all__ = [
    "JunctionTree",
    "broadcast_shape",
    "children",
    "elimination_cliques",
    "max_axes",
    "model_size",
    "parents_first",
    "sum_axes",
]
