r"""Random decision trees as small frozen values: their structure, routing and leaf distributions.

A tree here is public: its structure is grown from public inputs only — a public *structure file*
and a public seed (the Duke variant, S-004 §3, ``constructNode``) or the public domain and a seed
alone (Jagannathan, Pillaipakkamnatt & Wright 2012; METHODS.md §5.1). Confidential data only ever
meet a tree through its leaves' noisy label counts (:mod:`.synthesizer`), so nothing here reads
them.

Attributes enter a tree as *features*, one float column each of a matrix ``M`` (rows × attributes):

- a categorical attribute (or a binned numeric one in the Duke variant) as its *group*: the
  category's code mapped through a public grouping (S-004's collapsing: rare categories pooled,
  adjacent bins merged), one child per group;
- a numeric attribute in the Jagannathan variant as its value, split at a threshold drawn
  uniformly inside the node's interval (which starts at the public bounds), two children.

Nodes are stored breadth first, so every parent comes before its children and a reversed pass
sums children into parents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import DipsyError

#: The most nodes one tree may have: a random structure of fixed depth over many categories grows
#: as their product, and a tree this large has almost no records per leaf anyway.
MAX_NODES = 1_000_000


@dataclass(frozen=True, eq=False)
class Tree:
    """One tree's structure over ``attributes`` (the columns of the feature matrix).

    ``attribute[v]`` is the attribute split at node ``v`` (−1 at a leaf); its children are
    ``first[v] + g`` for group ``g`` (categorical) or ``first[v] + [x >= threshold[v]]``
    (numeric: ``threshold`` is NaN at categorical splits). ``support[v]`` is the node's
    (weighted) count in the structure file, NaN for a random structure.
    """

    attributes: tuple[str, ...]
    attribute: np.ndarray
    threshold: np.ndarray
    first: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    support: np.ndarray

    @property
    def nodes(self) -> int:
        return len(self.attribute)

    @property
    def leaves(self) -> np.ndarray:
        """The leaf nodes, in node order (leaf ``k`` of the measurement is ``leaves[k]``)."""
        return np.flatnonzero(self.attribute < 0)

    def route(self, features: np.ndarray) -> np.ndarray:
        """The node (a leaf) each row of ``features`` reaches: one gather per level.

        >>> t = grow_random(("a",), [2], [False], [(0, 1)], depth=1, rand=np.random.default_rng(0))
        >>> t.route(np.array([[0.0], [1.0], [1.0]])).tolist()
        [1, 2, 2]
        """
        node = np.zeros(len(features), dtype=np.int64)
        rows = np.arange(len(features))
        while True:
            a = self.attribute[node]
            inner = a >= 0
            if not inner.any():
                return node
            r, v, a = rows[inner], node[inner], a[inner]
            x = features[r, a]
            t = self.threshold[v]
            step = np.where(np.isnan(t), x, (x >= t).astype(float))
            node[inner] = self.first[v] + step.astype(np.int64)

    def summary(self) -> dict:
        """Public facts for release.json: size, depth and how often each attribute splits."""
        used = self.attribute[self.attribute >= 0]
        return {
            "nodes": int(self.nodes),
            "leaves": int(len(self.leaves)),
            "depth": int(self.depth.max()),
            "splits": {self.attributes[a]: int((used == a).sum()) for a in np.unique(used)},
        }


class _Builder:
    """Nodes appended breadth first."""

    def __init__(self) -> None:
        self.attribute: list[int] = []
        self.threshold: list[float] = []
        self.first: list[int] = []
        self.parent: list[int] = []
        self.depth: list[int] = []
        self.support: list[float] = []

    def add(self, parent: int, depth: int, support: float) -> int:
        if len(self.attribute) >= MAX_NODES:
            raise DipsyError(
                f"a tree would have more than {MAX_NODES:,} nodes",
                "lower the depth, raise n_b, or collapse categories (collapse=, coarsen=)",
            )
        self.attribute.append(-1)
        self.threshold.append(np.nan)
        self.first.append(-1)
        self.parent.append(parent)
        self.depth.append(depth)
        self.support.append(support)
        return len(self.attribute) - 1

    def done(self, attributes: Sequence[str]) -> Tree:
        return Tree(
            tuple(attributes),
            np.array(self.attribute, dtype=np.int64),
            np.array(self.threshold, dtype=float),
            np.array(self.first, dtype=np.int64),
            np.array(self.parent, dtype=np.int64),
            np.array(self.depth, dtype=np.int64),
            np.array(self.support, dtype=float),
        )


def _pick(candidates: list[int], weights: np.ndarray, rand: np.random.Generator) -> int:
    p = weights[candidates] / weights[candidates].sum()
    return int(candidates[rand.choice(len(candidates), p=p)])


def grow_public(
    attributes: Sequence[str],
    groups: Sequence[int],
    weights: Sequence[float],
    structure: np.ndarray,
    weight: float,
    n_b: float,
    depth: int,
    rand: np.random.Generator,
) -> Tree:
    """The Duke variable-depth tree (S-004 §3, ``constructNode``), from public counts only.

    A node whose structure-file count (rows × ``weight``) is at least ``n_b`` and whose depth is
    below ``depth`` splits on an attribute not yet used on its path, drawn with probabilities
    proportional to ``weights``; it gets one child per group of that attribute. Otherwise it is a
    leaf. ``structure`` holds the structure file's features (groups), one row per public record.

    >>> s = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    >>> t = grow_public(("a", "b"), [2, 2], [1.0, 1.0], s, 1.0, 2, 6, np.random.default_rng(0))
    >>> t.nodes, len(t.leaves), t.support.tolist()[:3]
    (7, 4, [4.0, 2.0, 2.0])
    """
    w = np.asarray(weights, dtype=float)
    b = _Builder()
    b.add(-1, 0, len(structure) * weight)
    rows = [np.arange(len(structure))]
    used: list[frozenset[int]] = [frozenset()]
    v = 0
    while v < len(b.attribute):
        candidates = [a for a in range(len(attributes)) if a not in used[v] and w[a] > 0]
        if b.support[v] >= n_b and b.depth[v] < depth and candidates:
            a = _pick(candidates, w, rand)
            b.attribute[v], b.first[v] = a, len(b.attribute)
            here = structure[rows[v], a]
            for g in range(groups[a]):
                child = rows[v][here == g]
                b.add(v, b.depth[v] + 1, len(child) * weight)
                rows.append(child)
                used.append(used[v] | {a})
        rows[v] = None  # type: ignore[call-overload]  # the node's rows are no longer needed
        v += 1
    return b.done(attributes)


def grow_random(
    attributes: Sequence[str],
    groups: Sequence[int],
    numeric: Sequence[bool],
    bounds: Sequence[tuple[float, float]],
    depth: int,
    rand: np.random.Generator,
    weights: Sequence[float] | None = None,
) -> Tree:
    """Jagannathan et al.'s data-independent random tree of fixed ``depth`` (METHODS.md §5.1).

    Each node above ``depth`` splits on an attribute drawn (with ``weights``, default equal) from
    the categorical ones not used on its path and the numeric ones (which may be reused); a
    categorical split has one child per group, a numeric one splits at a point drawn uniformly
    in the node's interval of that attribute (the public bounds, narrowed by earlier splits on
    the path). A node with no attribute left is a leaf.
    """
    w = np.ones(len(attributes)) if weights is None else np.asarray(weights, dtype=float)
    b = _Builder()
    b.add(-1, 0, np.nan)
    used: list[frozenset[int]] = [frozenset()]
    ranges: list[dict[int, tuple[float, float]]] = [
        {a: (bounds[a][0], bounds[a][1]) for a in range(len(attributes)) if numeric[a]}
    ]
    v = 0
    while v < len(b.attribute):
        candidates = [a for a in range(len(attributes)) if (numeric[a] or a not in used[v]) and w[a] > 0]
        if b.depth[v] < depth and candidates:
            a = _pick(candidates, w, rand)
            b.attribute[v], b.first[v] = a, len(b.attribute)
            if numeric[a]:
                low, high = ranges[v][a]
                cut = float(rand.uniform(low, high))
                b.threshold[v] = cut
                for part in ((low, cut), (cut, high)):
                    b.add(v, b.depth[v] + 1, np.nan)
                    used.append(used[v])
                    ranges.append({**ranges[v], a: part})
            else:
                for _ in range(groups[a]):
                    b.add(v, b.depth[v] + 1, np.nan)
                    used.append(used[v] | {a})
                    ranges.append(ranges[v])
        v += 1
    return b.done(attributes)


#: A node's noisy total must exceed this many standard deviations of its noise to give its own
#: distribution (else its parent's is used): below it, the distribution is mostly noise.
SIGNAL = 2.0


def project(counts: np.ndarray) -> np.ndarray:
    """Each row onto {y >= 0, Σ y = max(Σ x, 0)}: ``max(x − θ, 0)`` with one θ per row (PrivSyn's
    norm_sub; the Euclidean projection onto a scaled simplex). Unlike clamping negatives to 0, it
    keeps the noisy total, so a rare label is not inflated by the noise on the other labels.

    >>> project(np.array([[5.0, -1.0, 2.0], [-3.0, -1.0, 1.0]])).tolist()
    [[4.5, 0.0, 1.5], [0.0, 0.0, 0.0]]
    """
    x = np.asarray(counts, dtype=float)
    total = np.maximum(x.sum(axis=1, keepdims=True), 0.0)
    desc = -np.sort(-x, axis=1)
    k = np.arange(1, x.shape[1] + 1)
    theta = (np.cumsum(desc, axis=1) - total) / k
    last = (desc > theta).sum(axis=1, keepdims=True)  # how many stay positive (at least 1)
    t = np.take_along_axis(theta, np.maximum(last, 1) - 1, axis=1)
    return np.where(total > 0, np.maximum(x - t, 0.0), 0.0)


def leaf_distributions(tree: Tree, noisy: np.ndarray, leaf_min: float, sd: float = 0.0) -> np.ndarray:
    """Label proportions per leaf from its noisy counts (leaves × labels): post-processing only.

    1. Every node's noisy counts are the sums of its leaves' (unbiased: each cell's noise has mean 0).
    2. A node *qualifies* when its structure-file count is at least ``leaf_min`` (always, for a
       random structure) and its noisy total exceeds :data:`SIGNAL` standard deviations of its
       noise (``sd`` per cell, so ``sd·sqrt(cells)`` for the total); a leaf uses its nearest
       qualifying node, itself or an ancestor (S-004 leaves the handling of small leaves open).
    3. That node's counts are projected onto non-negative counts of the same total (:func:`project`)
       and normalised; a root with nothing left gives the uniform distribution.

    >>> t = grow_public(("a",), [2], [1.0], np.array([[0.0], [1.0], [1.0]]), 1.0, 1, 1, np.random.default_rng(0))
    >>> leaf_distributions(t, np.array([[3, -2], [0, 0]]), leaf_min=0).tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    """
    return distributions_and_sources(tree, noisy, leaf_min, sd)[0]


def distributions_and_sources(tree: Tree, noisy: np.ndarray, leaf_min: float, sd: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`leaf_distributions`, and for each leaf the node whose counts it took (itself, or the
    nearest qualifying ancestor): post-processing of the noisy counts and the public structure, so
    how many leaves kept their own is public (release.json states it; see ``TreesModel.choices``).

    >>> t = grow_public(("a",), [2], [1.0], np.array([[0.0], [1.0], [1.0]]), 1.0, 1, 1, np.random.default_rng(0))
    >>> distributions_and_sources(t, np.array([[3, -2], [0, 0]]), leaf_min=0)[1].tolist()
    [1, 0]
    """
    labels = noisy.shape[1]
    counts = np.zeros((tree.nodes, labels))
    cells = np.zeros(tree.nodes)
    leaves = tree.leaves
    counts[leaves] = noisy
    cells[leaves] = labels
    for v in range(tree.nodes - 1, 0, -1):  # breadth first: children after parents
        counts[tree.parent[v]] += counts[v]
        cells[tree.parent[v]] += cells[v]
    totals = counts.sum(axis=1)
    own = (totals > SIGNAL * sd * np.sqrt(cells)) & (totals > 0) & ~(tree.support < leaf_min)  # NaN support never falls short
    use = np.zeros(tree.nodes, dtype=np.int64)
    for v in range(1, tree.nodes):
        use[v] = v if own[v] else use[tree.parent[v]]
    chosen = project(counts[use[leaves]])
    sums = chosen.sum(axis=1, keepdims=True)
    return np.where(sums > 0, chosen / np.where(sums > 0, sums, 1), 1 / labels), use[leaves]
