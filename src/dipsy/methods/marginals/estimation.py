r"""The estimation seam: a graphical model fitted to noisy marginals (Private-PGM), behind one function.

:func:`estimate` turns noisy marginals — each a count table with the standard deviation of its
noise — into a :class:`GraphicalModel`, the distribution that best explains them: Private-PGM
(McKenna, Sheldon & Miklau, ICML 2019, "Graphical-model based estimation and inference for
differential privacy"), which minimises

.. math::  L(\mu) = \sum_i \frac{1}{2\sigma_i^2} \lVert \mu_{C_i} - y_i \rVert_2^2

over the marginals μ of a Markov random field whose cliques cover the measured ones, by mirror
descent on its potentials (ibid., Algorithm 1) with an Armijo line search, in NumPy
(:mod:`.descent`, over the junction trees of :mod:`.junction`): no compiler starts, and memory
is the cliques' tables a few times over.

What comes back is dipsy's own small frozen value, held in NumPy: the junction tree's cliques, their
marginals, the fitted total, and the potentials and step size (for a warm start). It projects onto any set of
attributes (:meth:`GraphicalModel.project`) and draws records i.i.d. from the distribution
(:meth:`GraphicalModel.sample`) along the junction tree's conditionals: each root clique from its
marginal, then every other clique's new attributes given its separator with its parent. That is an
exact draw from the model (the junction-tree factorisation ``p(x) = Π_C μ_C(x_C) / Π_S μ_S(x_S)``;
Lauritzen & Spiegelhalter 1988), unlike mbi 1.1's default rounding sampler, which ties together the
columns that share a parent.

Everything here is post-processing of noisy measurements: it reads no data and spends nothing.

>>> m = estimate({"a": 2, "b": 3}, [NoisyMarginal(("a", "b"), np.array([[10., 20., 30.], [5., 5., 30.]]), 1.0)],
...              iterations=2000)
>>> np.round(m.project(("b",))).tolist()
[15.0, 25.0, 60.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import DipsyError
from ...privacy.rng import Randomness
from .descent import mirror_descent
from .junction import JunctionTree, broadcast_shape, parents_first, sum_axes

#: Bytes per cell of a model's tables (float64), for sizes given in megabytes (AIM's MAX_SIZE).
CELL_BYTES = 8


@dataclass(frozen=True, eq=False)
class NoisyMarginal:
    """One noisy marginal: counts over ``attrs`` (C order, axes in the order of ``attrs``) and the
    standard deviation ``sigma`` of the noise added to each count.

    >>> NoisyMarginal(("a",), np.array([3.0, 4.0]), 2.0).counts.shape
    (2,)
    """

    attrs: tuple[str, ...]
    counts: np.ndarray
    sigma: float

    def __post_init__(self) -> None:
        if len(set(self.attrs)) != len(self.attrs) or not self.attrs:
            raise ValueError(f"a marginal needs distinct attributes, got {self.attrs}")
        if not (self.sigma > 0 and math.isfinite(self.sigma)):
            raise ValueError(f"sigma must be finite and > 0, got {self.sigma}")


# -- the value ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GraphicalModel:
    """A fitted distribution over named attributes, as a junction tree of clique marginals.

    ``cliques[k]`` are attribute indices (domain order, ascending), ``marginals[k]`` its table of
    probabilities (axes in that order), ``parents[k]`` the index of its parent clique in the tree
    (``-1`` for a root: a forest when the attributes fall into independent groups); ``order`` lists
    the cliques parents first. ``total`` is the fitted number of records. ``potentials`` are the
    fitted log-potentials over the measured cliques and ``step`` the descent's last step size (for a
    warm start); ``steps`` the steps the fit took.

    >>> g = GraphicalModel.independent({"a": 2, "b": 2}, [np.array([.5, .5]), np.array([.9, .1])], 10.0)
    >>> g.project(("b", "a")).tolist(), g.size()
    ([[4.5, 4.5], [0.5, 0.5]], 4)
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    cliques: tuple[tuple[int, ...], ...]
    marginals: tuple[np.ndarray, ...]
    parents: tuple[int, ...]
    total: float
    potentials: tuple[tuple[tuple[str, ...], np.ndarray], ...] = field(default=(), repr=False)
    step: float = 0.0
    steps: int = 0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def order(self) -> tuple[int, ...]:
        """The cliques, each after its parent (breadth first from the roots)."""
        return tuple(parents_first(self.parents))

    @classmethod
    def independent(cls, sizes: Mapping[str, int], tables: Sequence[np.ndarray], total: float) -> GraphicalModel:
        """The product of one-way distributions (each normalised here)."""
        tables = tuple(np.asarray(t, dtype=float) / np.sum(t) for t in tables)
        d = len(sizes)
        return cls(
            tuple(sizes), tuple(int(s) for s in sizes.values()), tuple((a,) for a in range(d)), tables, (-1,) * d, float(total)
        )

    def size(self) -> int:
        """Cells of the junction tree's clique tables (AIM's model size is this × 8 bytes)."""
        return int(sum(m.size for m in self.marginals))

    def index(self, attrs: Sequence[str]) -> tuple[int, ...]:
        where = {n: i for i, n in enumerate(self.names)}
        try:
            return tuple(where[a] for a in attrs)
        except KeyError as err:
            raise ValueError(f"no attribute {err.args[0]!r} in this model") from None

    def project(self, attrs: Sequence[str]) -> np.ndarray:
        """The model's marginal counts over ``attrs`` (axes in the order given; they sum to ``total``).

        When no clique holds all of ``attrs``, the marginal is a sum over the smallest subtree of
        the junction tree that covers them: its top clique's marginal times the others'
        conditionals given their separators, contracted by ``opt_einsum``.
        """
        idx = self.index(attrs)
        if len(set(idx)) != len(idx):
            raise ValueError(f"attributes repeat: {tuple(attrs)}")
        key = tuple(sorted(idx))
        if key not in self._cache:
            self._cache[key] = self._project(key) * self.total
        out = self._cache[key]
        perm = [key.index(a) for a in idx]
        return np.transpose(out, perm) if perm != sorted(perm) else out.copy()

    def _project(self, attrs: tuple[int, ...]) -> np.ndarray:
        import opt_einsum

        if not attrs:
            return np.array(1.0)
        wanted = set(attrs)
        holder = min(
            (k for k, c in enumerate(self.cliques) if wanted <= set(c)), key=lambda k: self.marginals[k].size, default=None
        )
        if holder is not None:
            return _sum_to(self.marginals[holder], self.cliques[holder], attrs)
        nodes = self._cover(wanted)
        operands: list[Any] = []
        for k in nodes:
            # an attribute no other clique of the subtree holds, and not wanted, is summed out first
            # (the reduced tables recur across the many marginals a selection round projects)
            others = wanted.union(*(self.cliques[j] for j in nodes if j != k))
            keep = tuple(a for a in self.cliques[k] if a in others)
            operands += [self._reduced(k, self.parents[k] not in nodes, keep), list(keep)]
        symbols = sorted({a for k in nodes for a in self.cliques[k]})
        rename = {a: opt_einsum.get_symbol(i) for i, a in enumerate(symbols)}
        spec = ",".join("".join(rename[a] for a in operands[i + 1]) for i in range(0, len(operands), 2))
        spec += "->" + "".join(rename[a] for a in attrs)
        return _contract(spec, operands[0::2])

    def _reduced(self, k: int, top: bool, keep: tuple[int, ...]) -> np.ndarray:
        """Clique ``k``'s marginal (``top``) or conditional given its separator, summed to ``keep``."""
        key = ("reduced", k, top, keep)
        if key not in self._cache:
            table = self.marginals[k] if top else self._conditional(k)
            self._cache[key] = _sum_to(table, self.cliques[k], keep)
        return self._cache[key]

    def _cover(self, wanted: set[int]) -> list[int]:
        """The cliques of a small subtree (per tree of the forest) covering ``wanted``: the paths
        between the highest clique holding each attribute, then leaves that add nothing pruned."""
        depth = self._depths()
        chosen = set()
        for a in wanted:
            chosen.add(min((k for k, c in enumerate(self.cliques) if a in c), key=lambda k: depth[k]))
        nodes = set()
        by_root: dict[int, set[int]] = {}
        for k in chosen:
            by_root.setdefault(self._root(k), set()).add(k)
        for group in by_root.values():
            # climb from every chosen clique to the group's lowest common ancestor
            frontier = set(group)
            nodes |= frontier
            while len(frontier) > 1:
                deepest = max(frontier, key=lambda k: depth[k])
                frontier.discard(deepest)
                up = self.parents[deepest]
                nodes.add(up)
                frontier.add(up)
        # prune leaves of the subtree whose wanted attributes all sit in their neighbour
        changed = True
        while changed and len(nodes) > 1:
            changed = False
            for k in sorted(nodes):
                nbrs = [j for j in nodes if j != k and (self.parents[j] == k or self.parents[k] == j)]
                mine = wanted & set(self.cliques[k])
                if len(nbrs) == 1 and mine <= set(self.cliques[nbrs[0]]):
                    nodes.discard(k)
                    changed = True
                    break
                if not nbrs and not mine:
                    nodes.discard(k)
                    changed = True
                    break
        return sorted(nodes, key=lambda k: depth[k])

    def _depths(self) -> list[int]:
        if "depth" not in self._cache:
            depth = [0] * len(self.cliques)
            for k in self.order:
                depth[k] = 0 if self.parents[k] < 0 else depth[self.parents[k]] + 1
            self._cache["depth"] = depth
        return self._cache["depth"]

    def _root(self, k: int) -> int:
        while self.parents[k] >= 0:
            k = self.parents[k]
        return k

    def separator(self, k: int) -> tuple[int, ...]:
        """Clique ``k``'s attributes shared with its parent (empty for a root)."""
        p = self.parents[k]
        return () if p < 0 else tuple(a for a in self.cliques[k] if a in self.cliques[p])

    def _conditional(self, k: int) -> np.ndarray:
        """``μ_C / μ_S``: clique ``k``'s table given its separator (0 where the separator has no mass)."""
        key = ("conditional", k)
        if key not in self._cache:
            clique, table = self.cliques[k], self.marginals[k]
            sep = self.separator(k)
            margin = _sum_to(table, clique, sep)
            shape = [table.shape[i] if a in sep else 1 for i, a in enumerate(clique)]
            margin = margin.reshape(shape)
            with np.errstate(divide="ignore", invalid="ignore"):
                self._cache[key] = np.where(margin > 0, table / np.where(margin > 0, margin, 1.0), 0.0)
        return self._cache[key]

    def sample(self, n: int, rand: Randomness) -> dict[str, np.ndarray]:
        """``n`` records drawn i.i.d. from the model: codes per attribute (int64).

        Along the junction tree, parents first: a root clique's cells from its marginal, then each
        clique's attributes outside its separator from its conditional given the separator's
        values already drawn. Every record is an independent draw from
        ``Π_C μ_C / Π_S μ_S`` (post-processing; floating-point uniforms from ``rand.numpy``).
        """
        rng = rand.numpy
        codes = np.zeros((len(self.names), n), dtype=np.int64)
        for k in self.order:
            clique, table = self.cliques[k], self.marginals[k]
            sep = self.separator(k)
            rest = tuple(a for a in clique if a not in sep)
            if not rest:
                continue
            shape = [self.sizes[a] for a in sep + rest]
            joint = np.transpose(table, [clique.index(a) for a in sep + rest]).reshape(
                math.prod(shape[: len(sep)]), math.prod(shape[len(sep) :])
            )
            rows = np.ravel_multi_index(tuple(codes[a] for a in sep), shape[: len(sep)]) if sep else np.zeros(n, dtype=np.int64)
            cells = _categorical_rows(joint, rows, rng)
            for a, v in zip(rest, np.unravel_index(cells, shape[len(sep) :])):
                codes[a] = v
        return {name: codes[a] for a, name in enumerate(self.names)}


def _contract(spec: str, operands: Sequence[np.ndarray]) -> np.ndarray:
    """The einsum ``spec`` of ``operands``, two at a time in ``opt_einsum``'s greedy order, each pair
    by :func:`_pair`.

    The order depends on the spec and the shapes alone, so it is worked out once per pair of them
    (:func:`_order`): a selection round projects about a thousand candidates, and the next round
    over the same junction tree asks for the same contractions (on the ACS excerpt, 35,257 of them
    in a release were 15,351 distinct; finding each order had taken a third of the choosing).

    >>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 2, 2)
    >>> np.allclose(_contract("ab,bcd->dca", [a, b]), np.einsum("ab,bcd->dca", a, b))
    True
    >>> c = np.arange(4.0).reshape(2, 2)
    >>> np.allclose(_contract("ab,bcd,da->c", [a, b, c]), np.einsum("ab,bcd,da->c", a, b, c))
    True
    """
    if len(operands) == 2:
        return _pair(spec, *operands)
    tables = list(operands)
    for positions, step in _order(spec, tuple(t.shape for t in operands)):
        picked = [tables.pop(i) for i in positions]  # positions descend, as opt_einsum lists them
        tables.append(_pair(step, *picked) if len(picked) == 2 else np.einsum(step, *picked))
    (out,) = tables
    return np.asarray(out)


@lru_cache(maxsize=1 << 14)
def _order(spec: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[tuple[tuple[int, ...], str], ...]:
    """opt_einsum's greedy contraction order for ``spec`` over tables of ``shapes``: each step's
    operand positions and its own einsum spec."""
    import opt_einsum

    _, info = opt_einsum.contract_path(spec, *shapes, optimize="greedy", shapes=True)
    return tuple((tuple(positions), step) for positions, _, step, *_ in info.contraction_list)


def _pair(step: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One einsum step ``"ij,jk->ik"`` of two tables as a batched matrix product: indices in both
    and kept are the batch, in both and not kept are summed, the rest are each table's own rows or
    columns (an index neither keeps nor shares is summed first). NumPy's einsum runs these steps
    of a selection round's projections (a product over shared indices, some summed) in its own
    loops; ``matmul`` halved the time of the ACS excerpt's 816 three-way projections. The axes and
    shapes of each step come from :func:`_pair_plan`, worked out once per step and shapes.

    >>> a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(30.0).reshape(3, 2, 5)
    >>> np.allclose(_pair("xyz,ywv->vyx", a, b), np.einsum("xyz,ywv->vyx", a, b))
    True
    """
    drop_a, drop_b, perm_a, three_a, perm_b, three_b, shape, perm_out = _pair_plan(step, a.shape, b.shape)
    x = np.transpose(sum_axes(a, drop_a), perm_a).reshape(three_a)
    y = np.transpose(sum_axes(b, drop_b), perm_b).reshape(three_b)
    return np.transpose(np.matmul(x, y).reshape(shape), perm_out)


@lru_cache(maxsize=1 << 14)
def _pair_plan(step: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> tuple:
    """For :func:`_pair`: the axes each table sums alone, the transposes and 3-axis shapes that make
    the step a batched ``matmul``, the product's shape and the transpose to the step's output."""
    inputs, out = step.split("->")
    left, right = inputs.split(",")
    drop_a = tuple(i for i, c in enumerate(left) if c not in right + out)
    drop_b = tuple(i for i, c in enumerate(right) if c not in left + out)
    size = {c: n for i, (c, n) in enumerate(zip(left, shape_a)) if i not in drop_a}
    size |= {c: n for i, (c, n) in enumerate(zip(right, shape_b)) if i not in drop_b}
    left, right = "".join(c for c in left if c in size), "".join(c for c in right if c in size)
    batch = [c for c in left if c in right and c in out]
    summed = [c for c in left if c in right and c not in out]
    own_a, own_b = [c for c in left if c not in right], [c for c in right if c not in left]
    cells = lambda ids: math.prod(size[c] for c in ids)  # noqa: E731
    order = batch + own_a + own_b
    return (
        drop_a,
        drop_b,
        [left.index(c) for c in batch + own_a + summed],
        (cells(batch), cells(own_a), cells(summed)),
        [right.index(c) for c in batch + summed + own_b],
        (cells(batch), cells(summed), cells(own_b)),
        tuple(size[c] for c in order),
        [order.index(c) for c in out],
    )


def _sum_to(table: np.ndarray, clique: Sequence[int], attrs: Sequence[int]) -> np.ndarray:
    """``table`` over ``clique`` summed to ``attrs`` (a subset), axes in the order of ``attrs``."""
    drop = tuple(i for i, a in enumerate(clique) if a not in attrs)
    out = sum_axes(table, drop)
    kept = [a for a in clique if a in attrs]
    return np.transpose(out, [kept.index(a) for a in attrs]) if kept != list(attrs) else out


def _categorical_rows(weights: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each entry of ``rows``, a column drawn with probabilities ∝ ``weights[row]`` (one uniform each).

    Vectorised inverse-CDF: row r's normalised CDF is shifted to ``[r, r + 1]`` and all rows are
    searched at once; a row of zero weight (never reached by a draw from the model itself, but
    possible through rounding) is drawn uniformly.
    """
    w = np.clip(np.asarray(weights, dtype=float), 0.0, None)
    mass = w.sum(axis=1, keepdims=True)
    w = np.where(mass > 0, w, 1.0)
    cdf = np.cumsum(w, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    cdf += np.arange(len(w))[:, None]
    u = rng.random(len(rows))
    flat = np.searchsorted(cdf.ravel(), rows + u, side="right")
    return np.minimum(flat - rows * w.shape[1], w.shape[1] - 1)


# -- estimation -----------------------------------------------------------------------------------


def _canonical(names: tuple[str, ...], attrs: Sequence[str]) -> tuple[str, ...]:
    where = {n: i for i, n in enumerate(names)}
    return tuple(sorted(attrs, key=where.__getitem__))


def estimate(
    sizes: Mapping[str, int],
    measurements: Sequence[NoisyMarginal],
    known_total: float | None = None,
    iterations: int = 1000,
    warm: GraphicalModel | None = None,
    zeros: Sequence[tuple[tuple[str, ...], np.ndarray]] = (),
    tol: float | None = None,
) -> GraphicalModel:
    r"""Private-PGM: the graphical model that best fits ``measurements`` (mirror descent, :mod:`.descent`).

    Parameters
    ----------
    sizes
        Every attribute's number of values, in domain order (attributes no measurement touches are
        uniform in the model).
    measurements
        The noisy marginals; each weighs ``1/σ²`` in the squared loss (the Gaussian noise's negative
        log-likelihood, up to a constant).
    known_total
        The number of records, when public; else the minimum-variance combination of the
        measurements' noisy totals, ``Σ_i T_i/v_i / Σ_i 1/v_i`` with ``T_i`` a table's sum and
        ``v_i = cells_i σ_i²`` its variance, and at least 1.
    iterations
        The most mirror-descent steps.
    warm
        A model fitted to a subset of these measurements: its potentials and step size start the
        descent (AIM's warm start, McKenna et al. 2022, Algorithm 1).
    zeros
        Structural zeros: ``(attributes, forbidden)`` pairs, ``forbidden`` a boolean table over the
        attributes (axes in their order) of the cells the model must give no mass (the domain's edit
        rules, public). Each is a factor of ``0``/``−∞`` in log space over its attributes, folded into
        the potentials at every step of the descent and in the model returned: the descent minimises
        ``L(μ)`` over the distributions of the graphical model that are 0 on those cells, and the
        model's junction tree gains their attribute sets as cliques. The fitted potentials kept for
        a warm start leave them out (every fit folds them in again).
    tol
        Stop once 50 steps in a row, twice, gain at most this share of the loss (None: run every step).
    """
    if not measurements:
        raise ValueError("estimation needs at least one measurement")
    names = tuple(sizes)
    where = {n: i for i, n in enumerate(names)}
    shape = tuple(int(sizes[n]) for n in names)
    merged = _merged(names, sizes, measurements)
    total = float(known_total) if known_total is not None else minimum_variance_total(merged)
    index = lambda attrs: tuple(where[a] for a in attrs)  # noqa: E731 - attributes in domain order already
    fit = mirror_descent(
        shape,
        [(index(c), y, sigma) for c, y, sigma in merged],
        total,
        iterations,
        warm=[(index(c), v) for c, v in warm.potentials] if warm is not None else (),
        step=warm.step if warm is not None else None,
        zeros=[(index(c), f) for c, f in _zeros(names, zeros)],
        tol=tol,
    )
    potentials = tuple((tuple(names[a] for a in c), v) for c, v in fit.potentials)
    return _model(names, fit.tree, fit.marginals, total, potentials, fit.step, fit.steps)


def minimum_variance_total(merged: Sequence[tuple[tuple[str, ...], np.ndarray, float]]) -> float:
    """The inverse-variance mean of the tables' sums (each sum's variance: cells × σ²), at least 1.

    >>> round(minimum_variance_total([(("a",), np.array([4.0, 6.0]), 1.0), (("b",), np.array([5.0, 9.0, 6.0]), 2.0)]), 3)
    11.429
    """
    weights = np.array([1.0 / (np.size(y) * s**2) for _, y, s in merged])
    sums = np.array([float(np.sum(y)) for _, y, _ in merged])
    return max(1.0, float(np.sum(weights * sums) / np.sum(weights)))


def _zeros(
    names: tuple[str, ...], zeros: Sequence[tuple[tuple[str, ...], np.ndarray]]
) -> tuple[tuple[tuple[str, ...], np.ndarray], ...]:
    """The structural zeros that forbid some cell, each over its attributes in domain order."""
    out = []
    for attrs, forbidden in zeros:
        mask = np.asarray(forbidden, dtype=bool)
        if not mask.any():
            continue
        canon = _canonical(names, attrs)
        out.append((canon, np.transpose(mask, [tuple(attrs).index(a) for a in canon])))
    return tuple(out)


def _merged(
    names: tuple[str, ...], sizes: Mapping[str, int], measurements: Sequence[NoisyMarginal]
) -> list[tuple[tuple[str, ...], np.ndarray, float]]:
    """The measurements of each clique combined by inverse variance: ``ȳ = Σ y_i/σ_i² / Σ 1/σ_i²``,
    ``σ̄ = (Σ 1/σ_i²)^(-1/2)``. The squared loss changes by a constant only (the same minimiser and
    gradient), and so does the minimum-variance total. Cliques in domain order."""
    merged: dict[tuple[str, ...], list] = {}
    for m in measurements:
        clique = _canonical(names, m.attrs)
        counts = np.asarray(m.counts, dtype=float).reshape([sizes[a] for a in m.attrs])
        counts = np.transpose(counts, [m.attrs.index(a) for a in clique])
        w = 1.0 / m.sigma**2
        if clique in merged:
            merged[clique][0] += w * counts
            merged[clique][1] += w
        else:
            merged[clique] = [w * counts, w]
    return [(clique, acc / w, float(w**-0.5)) for clique, (acc, w) in merged.items()]


def from_potentials(
    sizes: Mapping[str, int],
    potentials: Sequence[tuple[tuple[str, ...], np.ndarray]],
    total: float,
    zeros: Sequence[tuple[tuple[str, ...], np.ndarray]] = (),
) -> GraphicalModel:
    """The :class:`GraphicalModel` of log-potentials over cliques of attribute names (axes in each
    clique's order): the junction tree over them (:class:`.junction.JunctionTree`), calibrated by
    sum-product message passing in log space. ``zeros`` (attributes and a boolean table of
    forbidden cells) are factors of ``−∞`` on those cells and ``0`` elsewhere, whose attribute sets
    join the cliques; the model keeps only ``potentials`` for a warm start.

    >>> g = from_potentials({"a": 2, "b": 2}, [(("a", "b"), np.log([[1., 3.], [2., 2.]]))], 8.0)
    >>> g.project(("b",)).tolist()
    [3.0, 5.0]
    >>> from_potentials({"a": 2, "b": 2}, [(("a",), np.zeros(2))], 8.0, [(("a", "b"), np.eye(2, dtype=bool))]).project(("a", "b")).tolist()
    [[0.0, 4.0], [4.0, 0.0]]
    """
    names = tuple(sizes)
    where = {n: i for i, n in enumerate(names)}
    factors = [*potentials, *((cl, np.where(np.asarray(f, dtype=bool), -np.inf, 0.0)) for cl, f in zeros)]
    canon = [_canonical(names, cl) for cl, _ in factors]
    tree = JunctionTree.over(tuple(int(sizes[n]) for n in names), [tuple(where[a] for a in c) for c in canon])
    log = [np.zeros(tree.shape(k)) for k in range(len(tree.cliques))]
    for (cl, values), c in zip(factors, canon):
        attrs = tuple(where[a] for a in c)
        k = tree.host(attrs)
        table = np.transpose(np.asarray(values, dtype=float), [cl.index(a) for a in c])
        log[k] = log[k] + table.reshape(broadcast_shape(tree.sizes, attrs, tree.cliques[k]))
    return _model(names, tree, tree.calibrate(log), total, tuple((tuple(cl), np.asarray(v, dtype=float)) for cl, v in potentials))


def _model(
    names: tuple[str, ...],
    tree: JunctionTree,
    marginals: Sequence[np.ndarray],
    total: float,
    potentials: tuple[tuple[tuple[str, ...], np.ndarray], ...],
    step: float = 0.0,
    steps: int = 0,
) -> GraphicalModel:
    """The value of a calibrated tree; refused when the structural zeros leave no record possible."""
    if any(not np.isfinite(m).all() for m in marginals):
        raise DipsyError(
            "the edit rules forbid every record of the model (every cell of a clique is a structural zero)",
            "check the domain's rules against each other (dipsy domain check lists them); remove the rule that "
            "contradicts the others",
        )
    return GraphicalModel(names, tree.sizes, tree.cliques, tuple(marginals), tree.parents, float(total), potentials, step, steps)


__all__ = ["CELL_BYTES", "GraphicalModel", "NoisyMarginal", "estimate", "from_potentials"]
