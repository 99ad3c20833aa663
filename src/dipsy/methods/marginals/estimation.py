r"""The estimation seam: a graphical model fitted to noisy marginals (Private-PGM), behind one function.

:func:`estimate` turns noisy marginals — each a count table with the standard deviation of its
noise — into a :class:`GraphicalModel`, the distribution that best explains them: Private-PGM
(McKenna, Sheldon & Miklau, ICML 2019, "Graphical-model based estimation and inference for
differential privacy"), which minimises

.. math::  L(\mu) = \sum_i \frac{1}{2\sigma_i^2} \lVert \mu_{C_i} - y_i \rVert_2^2

over the marginals μ of a Markov random field whose cliques cover the measured ones, by mirror
descent on its potentials (ibid., Algorithm 1) with an Armijo line search. The work is done by mbi
2.0 (``mbi.estimation.MirrorDescent``, JAX); nothing else in dipsy imports mbi, so another
estimator can replace it here.

What comes back is dipsy's own small frozen value, held in NumPy: the junction tree's cliques, their
marginals, the fitted total, and the potentials (for a warm start). It projects onto any set of
attributes (:meth:`GraphicalModel.project`) and draws records i.i.d. from the distribution
(:meth:`GraphicalModel.sample`) along the junction tree's conditionals: each root clique from its
marginal, then every other clique's new attributes given its separator with its parent. That is an
exact draw from the model (the junction-tree factorisation ``p(x) = Π_C μ_C(x_C) / Π_S μ_S(x_S)``;
Lauritzen & Spiegelhalter 1988), unlike mbi 1.1's default rounding sampler, which ties together the
columns that share a parent.

Everything here is post-processing of noisy measurements: it reads no data and spends nothing.
JAX runs on the CPU in 64-bit floats (inside this module's calls only; the process's JAX settings
are left as they are), and mbi's import-time warnings are silenced.

>>> m = estimate({"a": 2, "b": 3}, [NoisyMarginal(("a", "b"), np.array([[10., 20., 30.], [5., 5., 30.]]), 1.0)],
...              iterations=200)                                              # doctest: +SKIP
>>> np.round(m.project(("b",)))                                                # doctest: +SKIP
array([15., 25., 60.])
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import DipsyError
from ...privacy.rng import Randomness

logger = logging.getLogger(__name__)

#: Bytes per cell of a model's tables (float64), for sizes given in megabytes (AIM's MAX_SIZE).
CELL_BYTES = 8
#: Compiled descents kept before a grown model's estimation drops them (memory: tens of MB each).
KEEP_COMPILED = 4


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


def _jax() -> tuple[Any, Any]:
    """jax and mbi, imported quietly; a clear error when they are missing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mbi warns at import about float32 and the compilation cache
            import jax
            import mbi
            import mbi.estimation  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the installation
        raise DipsyError(
            f"estimating a graphical model needs JAX and mbi 2.0, which cannot be imported ({err})",
            "run 'make .venv/.installed-stamp' (it installs the project's dependencies, mbi==2.0.0 among them)",
        ) from None
    for name in ("jax._src.xla_bridge", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)  # "no GPU found" and similar notices
    return jax, mbi


@contextlib.contextmanager
def _cpu64():
    """JAX on the CPU in float64, for the calls inside this block only."""
    jax, _ = _jax()
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        yield


# -- the value ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GraphicalModel:
    """A fitted distribution over named attributes, as a junction tree of clique marginals.

    ``cliques[k]`` are attribute indices (domain order, ascending), ``marginals[k]`` its table of
    probabilities (axes in that order), ``parents[k]`` the index of its parent clique in the tree
    (``-1`` for a root: a forest when the attributes fall into independent groups); ``order`` lists
    the cliques parents first. ``total`` is the fitted number of records. ``potentials`` are the
    fitted log-potentials over the measured cliques (for a warm start).

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
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def order(self) -> tuple[int, ...]:
        """The cliques, each after its parent (breadth first from the roots)."""
        return tuple(_parents_first(_children(self.parents)))

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
            parent = self.parents[k]
            table = self.marginals[k] if parent not in nodes else self._conditional(k)
            operands += [table, list(self.cliques[k])]
        symbols = sorted({a for k in nodes for a in self.cliques[k]})
        rename = {a: opt_einsum.get_symbol(i) for i, a in enumerate(symbols)}
        spec = ",".join("".join(rename[a] for a in operands[i + 1]) for i in range(0, len(operands), 2))
        spec += "->" + "".join(rename[a] for a in attrs)
        return np.asarray(opt_einsum.contract(spec, *operands[0::2], optimize="greedy"))

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


def _children(parents: Sequence[int]) -> dict[int, list[int]]:
    """Each node's children, in index order; the roots (parent ``-1``) under ``-1``."""
    children: dict[int, list[int]] = {}
    for k, p in enumerate(parents):
        children.setdefault(p, []).append(k)
    return children


def _parents_first(children: Mapping[int, list[int]]) -> list[int]:
    """The nodes breadth first from the roots, so every node comes after its parent."""
    out, queue = [], list(children.get(-1, []))
    while queue:
        k = queue.pop(0)
        out.append(k)
        queue += children.get(k, [])
    return out


def _sum_to(table: np.ndarray, clique: Sequence[int], attrs: Sequence[int]) -> np.ndarray:
    """``table`` over ``clique`` summed to ``attrs`` (a subset), axes in the order of ``attrs``."""
    drop = tuple(i for i, a in enumerate(clique) if a not in attrs)
    out = table.sum(axis=drop) if drop else table
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
) -> GraphicalModel:
    r"""Private-PGM: the graphical model that best fits ``measurements`` (mirror descent, mbi 2.0).

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
        measurements' noisy totals (mbi's ``minimum_variance_unbiased_total``).
    iterations
        Mirror-descent steps (mbi runs them in blocks of 50).
    warm
        A model fitted to a subset of these measurements: its potentials start the descent (AIM's
        warm start, McKenna et al. 2022, Algorithm 1).
    zeros
        Structural zeros: ``(attributes, forbidden)`` pairs, ``forbidden`` a boolean table over the
        attributes (axes in their order) of the cells the model must give no mass (the domain's edit
        rules, public). Each is a factor of ``0``/``−∞`` in log space over its attributes, folded into
        the potentials at every step of the descent and in the model returned (mbi's ``Constraint``):
        the descent minimises ``L(μ)`` over the distributions of the graphical model that are 0 on
        those cells, and the model's junction tree gains their attribute sets as cliques. The
        fitted potentials kept for a warm start leave them out (every fit folds them in again).
    """
    if not measurements:
        raise ValueError("estimation needs at least one measurement")
    names = tuple(sizes)
    jax, mbi = _jax()
    from mbi.clique_vector import CliqueVector
    from mbi.factor import Factor

    domain = mbi.Domain(names, [int(sizes[n]) for n in names])
    zeros = _zeros(names, zeros)
    with _cpu64():
        constraints = tuple(mbi.Constraint(domain.project(attrs), invalid=np.argwhere(forbidden)) for attrs, forbidden in zeros)
        lms = [
            mbi.LinearMeasurement(jax.numpy.asarray(y.ravel()), clique, stddev=sigma)
            for clique, y, sigma in _merged(names, sizes, measurements)
        ]
        start = None
        if warm is not None and warm.potentials:
            tables = {cl: Factor(domain.project(cl), jax.numpy.asarray(v)) for cl, v in warm.potentials}
            start = CliqueVector(domain, tuple(tables), tables)
            step = mbi.estimation.Estimator._multi_step
            compiled = getattr(step, "_cache_size", lambda: KEEP_COMPILED)()
            if set(tables) != set(maximal(tuple(m.clique for m in lms))) and compiled >= KEEP_COMPILED:
                # a grown model: the programs compiled for earlier structures will hardly run again (AIM's
                # model only grows) and each holds tens of megabytes; a few small ones are kept for reuse
                step.clear_cache()
        fitted = _descent(tuple((n, int(sizes[n])) for n in names)).estimate(
            domain, lms, known_total=known_total, iters=max(int(iterations), 1), warm_start=start, constraints=constraints
        )
        potentials = tuple((tuple(cl), np.asarray(fitted.potentials[cl].values, dtype=float)) for cl in fitted.potentials.cliques)
        total = float(fitted.total)
    return from_potentials(sizes, potentials, total, zeros)


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


def maximal(cliques: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The cliques not contained in another (mbi's loss is defined over these)."""
    unique = list(dict.fromkeys(cliques))
    return [c for c in unique if not any(set(c) < set(o) for o in unique)]


@lru_cache(maxsize=64)
def _descent(sizes: tuple[tuple[str, int], ...]) -> Any:
    """mbi's mirror descent (``mbi.estimation.MirrorDescent``, its Armijo step rule unchanged), with
    the first marginals and the returned model computed here in NumPy instead of by mbi's jitted
    belief propagation: only the descent's own steps are compiled, once per model structure
    (compilation, not iteration, is what a new AIM round mostly costs)."""
    import dataclasses

    jax, mbi = _jax()
    from mbi.clique_vector import CliqueVector
    from mbi.estimation import MirrorDescent, MirrorDescentState
    from mbi.factor import Factor
    from mbi.markov_random_field import MarkovRandomField

    @dataclasses.dataclass(frozen=True)
    class Descent(MirrorDescent):
        def _init(self, domain, loss_fn, known_total, *, warm_start=None, constraints=()):
            cliques = tuple(loss_fn.cliques)
            potentials = warm_start.expand(cliques) if warm_start is not None else CliqueVector.zeros(domain, cliques)
            zeros = [(tuple(c.domain.attributes), ~np.isfinite(np.asarray(c.potential.values))) for c in constraints]
            model = from_potentials(dict(sizes), [(cl, np.asarray(potentials[cl].values)) for cl in cliques], known_total, zeros)
            mu = CliqueVector(
                domain, cliques, {cl: Factor(domain.project(cl), jax.numpy.asarray(model.project(cl))) for cl in cliques}
            )
            alpha = 2.0 / (loss_fn.lipschitz * known_total)  # as mbi's own _init
            return MirrorDescentState(mu, potentials, alpha, jax.numpy.asarray(np.inf))  # the loss is recomputed each step

        def _finalize(self, state, known_total, constraints=()):
            return MarkovRandomField(potentials=state.potentials, marginals=state.mu, total=known_total)

    return Descent()


def _merged(
    names: tuple[str, ...], sizes: Mapping[str, int], measurements: Sequence[NoisyMarginal]
) -> list[tuple[tuple[str, ...], np.ndarray, float]]:
    """The measurements of each clique combined by inverse variance: ``ȳ = Σ y_i/σ_i² / Σ 1/σ_i²``,
    ``σ̄ = (Σ 1/σ_i²)^(-1/2)``. The squared loss changes by a constant only (the same minimiser and
    gradient), and so does the minimum-variance total; one term per clique keeps mbi's compiled
    program the same when a clique is measured again. Cliques in domain order."""
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
    clique's order): mbi's junction tree over them, calibrated by two-pass sum-product message
    passing in log space (Koller & Friedman 2009, ch. 10), in NumPy. ``zeros`` (attributes and a
    boolean table of forbidden cells) are factors of ``−∞`` on those cells and ``0`` elsewhere,
    whose attribute sets join the cliques; the model keeps only ``potentials`` for a warm start.

    >>> g = from_potentials({"a": 2, "b": 2}, [(("a", "b"), np.log([[1., 3.], [2., 2.]]))], 8.0)
    >>> g.project(("b",)).tolist()
    [3.0, 5.0]
    >>> from_potentials({"a": 2, "b": 2}, [(("a",), np.zeros(2))], 8.0, [(("a", "b"), np.eye(2, dtype=bool))]).project(("a", "b")).tolist()
    [[0.0, 4.0], [4.0, 0.0]]
    """
    from scipy.special import logsumexp

    _, mbi = _jax()
    names = tuple(sizes)
    where = {n: i for i, n in enumerate(names)}
    domain = mbi.Domain(names, [int(sizes[n]) for n in names])
    factors = [*potentials, *((cl, np.where(np.asarray(f, dtype=bool), -np.inf, 0.0)) for cl, f in zeros)]
    tree = _junction_tree(domain, tuple(_canonical(names, cl) for cl, _ in factors)) if factors else [((n,), None) for n in names]
    nodes = [cl for cl, _ in tree]
    index = {cl: k for k, cl in enumerate(nodes)}
    parents = [-1 if p is None else index[p] for _, p in tree]
    cliques = [tuple(where[a] for a in cl) for cl in nodes]
    shapes = [tuple(int(sizes[a]) for a in cl) for cl in nodes]
    log = [np.zeros(shape) for shape in shapes]
    for cl, values in factors:
        canon = _canonical(names, cl)
        k = next(j for j, node in enumerate(nodes) if set(canon) <= set(node))
        table = np.transpose(np.asarray(values, dtype=float), [cl.index(a) for a in canon])
        log[k] = log[k] + _spread(table, tuple(where[a] for a in canon), cliques[k])
    seps = [() if p < 0 else tuple(a for a in cliques[k] if a in cliques[p]) for k, p in enumerate(parents)]
    up: dict[int, np.ndarray] = {}  # message from k to its parent, over their separator
    down: dict[int, np.ndarray] = {}  # message from k's parent to k
    children = _children(parents)
    order = _parents_first(children)

    def gathered(k: int, skip: int | None = None) -> np.ndarray:
        out = log[k].copy()
        for c in children.get(k, []):
            if c != skip:
                out = out + _spread(up[c], seps[c], cliques[k])
        if k in down:
            out = out + _spread(down[k], seps[k], cliques[k])
        return out

    def summed(table: np.ndarray, clique: tuple[int, ...], sep: tuple[int, ...]) -> np.ndarray:
        axes = tuple(i for i, a in enumerate(clique) if a not in sep)
        return logsumexp(table, axis=axes) if axes else table

    for k in reversed(order):
        if parents[k] >= 0:
            up[k] = summed(gathered(k), cliques[k], seps[k])
    for k in order:
        for c in children.get(k, []):
            down[c] = summed(gathered(k, skip=c), cliques[k], seps[c])
    marginals = []
    for k in range(len(nodes)):
        b = gathered(k)
        top = logsumexp(b)
        if not np.isfinite(top):
            raise DipsyError(
                "the edit rules forbid every record of the model (every cell of a clique is a structural zero)",
                "check the domain's rules against each other (dipsy domain check lists them); remove the rule that "
                "contradicts the others",
            )
        b = np.exp(b - top)
        marginals.append(b / b.sum())
    return GraphicalModel(
        names,
        tuple(int(sizes[n]) for n in names),
        tuple(cliques),
        tuple(marginals),
        tuple(parents),
        float(total),
        tuple((tuple(cl), np.asarray(v, dtype=float)) for cl, v in potentials),
    )


def _spread(table: np.ndarray, attrs: tuple[int, ...], clique: tuple[int, ...]) -> np.ndarray:
    """``table`` over ``attrs`` (a subset of ``clique``, both ascending) shaped to broadcast over ``clique``."""
    shape = [table.shape[attrs.index(a)] if a in attrs else 1 for a in clique]
    return np.asarray(table).reshape(shape)


def _junction_tree(domain: Any, cliques: tuple[tuple[str, ...], ...]) -> list[tuple[tuple[str, ...], tuple[str, ...] | None]]:
    """The junction tree (a forest) of ``cliques`` as mbi builds it: (clique, parent or None), parents first."""
    import networkx as nx
    from mbi import junction_tree

    tree, _ = junction_tree.make_junction_tree(domain, cliques)
    out: list[tuple[tuple[str, ...], tuple[str, ...] | None]] = []
    for component in sorted(nx.connected_components(tree), key=lambda c: min(c)):
        root = min(component)
        out.append((root, None))
        for parent, child in nx.bfs_edges(tree, root):
            out.append((child, parent))
    return out


def model_size(sizes: Sequence[int], cliques: Iterable[Iterable[int]]) -> int:
    """Cells of the junction tree mbi 2.0 builds over ``cliques`` (attribute indices; AIM's model size).

    The same tree as ``mbi.junction_tree.make_junction_tree`` (so the same number as its
    ``hypothetical_model_size``, which gives megabytes: cells × 8 / 2²⁰), computed on bitmasks
    because AIM asks it for every candidate in every round: when the attributes and the cliques'
    edges form one tree, its edges are the cliques; otherwise the greedy elimination order (at each
    step the attribute whose neighbourhood, itself included, has the fewest cells; ties to the
    first in domain order), whose elimination cliques' maximal members are the triangulated
    graph's maximal cliques (elimination cliques of a perfect elimination order; Koller & Friedman
    2009, ch. 9).

    >>> model_size([2, 3, 4], [(0, 1), (1, 2)]), model_size([2, 3, 4], [(0, 1), (1, 2), (0, 2)])
    (18, 24)
    """
    d = len(sizes)
    masks = {sum(1 << a for a in c) for c in cliques}
    masks.discard(0)
    cells_of = _cells_counter(tuple(int(s) for s in sizes))
    edges = {(a, b) for m in masks for a in _bits(m) for b in _bits(m) if a < b}
    if edges and len(edges) == d - 1 and _connected(d, edges):
        return sum(int(sizes[a]) * int(sizes[b]) for a, b in edges)
    hyper = list(masks)
    unmarked = list(range(d))
    eliminated: list[int] = []
    for _ in range(d):
        best, best_cost, best_union = -1, None, 0
        for a in unmarked:
            bit = 1 << a
            union = 0
            for m in hyper:
                if m & bit:
                    union |= m
            cost = cells_of(union)
            if best_cost is None or cost < best_cost:
                best, best_cost, best_union = a, cost, union
        bit = 1 << best
        unmarked.remove(best)
        hyper = [m for m in hyper if not m & bit]
        rest = best_union & ~bit
        if rest:
            hyper.append(rest)
        eliminated.append(best_union | bit)
    maximal = [m for m in set(eliminated) if not any(o != m and o & m == m for o in eliminated)]
    return sum(cells_of(m) for m in maximal)


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


__all__ = ["CELL_BYTES", "GraphicalModel", "NoisyMarginal", "estimate", "model_size"]
