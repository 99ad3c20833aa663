r"""Random decision trees that synthesize sensitive columns beside public ones (S-004; METHODS.md §5).

The use (S-004 §2): an agency publishes the non-sensitive columns of every record (age, education,
occupation…) and adds synthetic values of the sensitive ones (sex, then race) whose joint
distribution with the public columns follows the confidential data.

Data roles
----------
- the confidential records (the data file): public and sensitive columns;
- the *structure file* (``structure=PATH``): public records used only to decide the trees' splits
  (S-004's SD, a public synthetic file); or ``structure=random``: no file, Jagannathan et al.'s
  data-independent random structure;
- the *targets* (``targets=PATH``): public records to label; by default the confidential records'
  own public columns (S-004's BD), which the release then repeats as they are.

Algorithm
---------
For each sensitive column ``S_j`` in order, an ensemble of ``E`` trees over the public columns and
``S_1 … S_{j−1}`` (race trees split on sex). S-004 §2 synthesizes Sex for the confidential records
and substitutes it for their confidential Sex before it counts the Race leaves; so does
``condition_on=synthetic`` (the default): the leaf counts of ``S_j`` route each confidential record
by a synthetic ``S_1 … S_{j−1}`` drawn from those columns' released models (:mod:`.sequential`), and
the targets are routed by their own synthetic values. ``condition_on=confidential`` routes the leaf
counts by the confidential ``S_1 … S_{j−1}`` instead (the targets still by their synthetic ones): a
departure from S-004 that keeps the association of ``S_j`` with the earlier sensitive columns beyond
what the public columns carry (under S-004's way the synthetic sex of a record depends on its public
columns only, so the synthetic race depends on the synthetic sex only through them).

1. *Structure* (:mod:`.trees`), from public inputs only: the Duke variable-depth tree splits a node
   while its structure-file count is ≥ ``n_b`` and its depth < ``depth``, on an attribute drawn
   with ``weights`` from those unused on its path, one child per (collapsed) category; or the
   random tree of fixed depth. Its randomness comes from ``structure_seed`` — public, recorded.
2. *Leaves*: the counts of ``S_j``'s labels among the confidential records reaching each leaf,
   plus exact discrete Laplace noise of scale ``Δ/ε_tree`` on every (leaf, label) cell.
3. *Post-processing*: every node's noisy counts are the sums of its leaves'; a leaf below
   ``leaf_min`` structure records, or whose noisy total is within two noise sds of 0, takes its
   nearest qualifying ancestor's counts; those are projected onto non-negative counts of the same
   total (PrivSyn's norm_sub) and normalised (:func:`.trees.leaf_distributions`).
4. *Synthesis*: each target follows its branch in every tree; its label is drawn from the average of
   the E leaf distributions (``combine=average``) or from one tree drawn at random
   (``combine=random-tree``).

Privacy
-------
Definition ε-DP. One tree's query is the histogram of (leaf, label) over the confidential records:
every record reaches exactly one leaf, so the cells are disjoint and one record changes the
histogram by Δ₁ = 1 under add/remove (one count up or down) and Δ₁ = 2 under substitution (one
down, one up — also when the record's sex moves it to another leaf of a race tree). Exact discrete
Laplace noise of scale Δ₁/ε_tree makes one tree ε_tree-DP (:class:`~dipsy.privacy.measurement.
DiscreteLaplace`: Ghosh et al. 2009; parallel composition over the leaves, McSherry 2009); the
``m × S × E`` trees compose sequentially: ε = m·S·E·ε_tree (basic composition, Dwork & Roth 2014,
Thm 3.16; S-004 says only that trees come "with additional ϵ consumption", in its "Effect of
Ensemble Size").

With ``condition_on=synthetic`` a tree of ``S_j`` (j > 1) is chosen adaptively: its query routes
records by synthetic earlier values drawn from the *outputs* of the earlier columns' trees (and a key
independent of the data). Its leaf counts are still a function of the confidential data — their
public values and ``S_j`` — and for every fixed value of those outputs and of the key they have the
same Δ₁ (1 under add/remove, 2 under substitution: the lemma of :mod:`.sequential`, by numbering
equal records within their class), so given the earlier outputs the tree is ε_tree-DP. Pure
ε-DP mechanisms chosen adaptively compose to the sum of their ε's (Dwork, Rothblum & Vadhan 2010,
k-fold adaptive composition, whose bound for δ = 0 is kε; McSherry 2009, Thm 1, for PINQ's
adaptively chosen queries), so the release is again ε = m·S·E·ε_tree-DP — the same total, not a
larger one: the earlier columns' outputs are released anyway and the routing is post-processing of
them. With ``condition_on=confidential`` the composition is non-adaptive (Dwork & Roth Thm 3.16). The structure reads no confidential data (it is a function of public files and a public
seed, so it is public itself and release.json describes it), and everything after the noise is
post-processing.

When the targets are the confidential records' own public columns, those values are released as
they are: each must be declared ``role: public`` in the domain (else the release is refused before
anything is read), the statement declares them public, and the release's relation is
*substitute-values* over exactly those columns (:mod:`dipsy.privacy.relation`) — neighbouring data
sets have the same rows and public values and differ in one record's sensitive values (Δ₁ = 2); the
ledger never counts such a release under substitute, add/remove, or substitute-values over other
public columns that leave one of these out. A record's presence is then visible in the release, so
add/remove is refused unless ``targets=PATH`` names a separate public file.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...domain import MAX_CODES, Column, Domain
from ...domain.codec import decode_column, repeated_column
from ...engine import Records, engine_for
from ...errors import DipsyError
from ...privacy.budget import PureDP
from ...privacy.measurement import DeclaredPublic, DiscreteLaplace, Measurement, Query, Statistic, discrete_laplace_variance
from ...privacy.relation import ADD_REMOVE, SUBSTITUTE, substitute_values
from ...privacy.rng import Randomness
from ...privacy.samplers import to_fraction
from ...privacy.session import Session
from ..base import MAX_ROWS, Model, Option, Plan, Synthesizer, real, whole
from .features import Features, grouping
from .sequential import Earlier, draw, probabilities
from .trees import Tree, distributions_and_sources, grow_public, grow_random

logger = logging.getLogger(__name__)

COMBINE = ("average", "random-tree")
#: What a later sensitive column's leaf counts route records by on the earlier sensitive columns:
#: S-004 §2's synthesized values (default), or the confidential ones (the earlier dipsy behaviour).
CONDITION = ("synthetic", "confidential")
#: S-004's defaults: n_B = 1000, six node attributes (depth 6), five trees.
DEFAULTS = {"n_b": 1000, "depth": 6, "trees": 5, "leaf_min": 100}
#: The most trees per sensitive column: 20 times S-004's five. Each costs its share of ε (the
#: m × S × E trees compose), so at a hundred a tree's leaf counts are mostly noise; and each is grown
#: and counted in turn, so 10⁶ would run for days.
MAX_TREES = 100
#: The most trees of a release, m × S × E: each is grown and its leaves counted over every record in
#: turn (a second or so on large data), so this is about an hour's work.
MAX_TREES_IN_ALL = 2000
#: The deepest tree: a Duke tree splits each attribute once on a path, so it is never deeper than
#: its attributes (S-004 uses 6); a random tree may split a numeric attribute at every level, and
#: from depth 20 its 2^depth leaves pass the :data:`~.trees.MAX_NODES` a tree may have.
MAX_DEPTH = 20
#: The largest attribute sampling weight: weights are relative, so a million to one already makes
#: an attribute all but certain; beyond the floats' range they would overflow their sum.
MAX_WEIGHT = 1e6
#: The seed range of ``structure_seed``: a signed 64-bit integer, as release.json readers hold it.
MAX_SEED = 2**63 - 1


# -- options ------------------------------------------------------------------------------------


def _names(option: str):
    def parse(value: Any) -> tuple[str, ...]:
        names = tuple(x.strip() for x in (value.split(",") if isinstance(value, str) else value) if str(x).strip())
        if not names or len(set(names)) < len(names):
            raise DipsyError(f"option {option} must name distinct columns, got {value!r}", f"e.g. {option}=sex,race")
        return names

    return parse


def _pairs(option: str, least: float, most: float, integer: bool = False):
    """``col:number,...`` (e.g. ``weights=occupation:60,age:1``), each number from ``least`` to ``most``."""

    def parse(value: Any) -> dict[str, float]:
        items = value.items() if isinstance(value, Mapping) else (x.rsplit(":", 1) for x in str(value).split(",") if x.strip())
        out = {}
        for item in items:
            try:
                name, number = item
                x = float(number)
                ok = x >= least and np.isfinite(x) and (not integer or x == int(x))
            except (TypeError, ValueError, OverflowError):
                ok = False
            if ok and x > most:
                raise DipsyError(
                    f"option {option} gives {str(name).strip()!r} the number {x:g}, more than the {most:g} it may be",
                    f"give {option}= numbers at most {most:g}",
                )
            if not ok:
                raise DipsyError(
                    f"option {option} must be column:number pairs with numbers >= {least:g}, got {str(value)[:60]!r}",
                    f"e.g. {option}=occupation:{60 if option == 'weights' else 200}",
                )
            out[str(name).strip()] = int(x) if integer else x
        return out

    return parse


def _structure(value: Any) -> Path | str:
    if str(value) == "random":
        return "random"
    path = Path(str(value)).expanduser()
    if not path.is_file():
        raise DipsyError(
            f"the structure file {str(path)!r} does not exist", "pass structure=PATH of public records, or structure=random"
        )
    return path


def _bounds(column: Column) -> tuple[float, float]:
    """A numeric or integer column's public bounds, as declared (the domain requires both)."""
    assert column.lower is not None and column.upper is not None, "Column checks every non-categorical column's bounds"
    return column.lower, column.upper


def _targets(value: Any) -> Path:
    path = Path(str(value)).expanduser()
    if not path.is_file():
        raise DipsyError(f"the targets file {str(path)!r} does not exist", "pass targets=PATH of the public records to label")
    return path


def _choice(value: Any) -> str:
    if value not in COMBINE:
        raise DipsyError(f"option combine={value!r} is unknown", f"use one of {', '.join(COMBINE)}")
    return value


def _condition(value: Any) -> str:
    if value not in CONDITION:
        raise DipsyError(f"option condition_on={value!r} is unknown", f"use one of {', '.join(CONDITION)}")
    return value


def draw_key(run_seed: int | None) -> int:
    """The key of the earlier columns' synthetic draws inside the leaf counts (:mod:`.sequential`):
    fresh from the operating system, or in a seeded test run derived from its seed. It is never
    recorded; the guarantee holds for every key (the sensitivity lemma of :mod:`.sequential`).

    >>> draw_key(7) == draw_key(7) != draw_key(8)
    True
    """
    if run_seed is None:
        return int.from_bytes(os.urandom(8), "big")
    return int(np.random.SeedSequence([run_seed, 0x5EC]).generate_state(1, np.uint64)[0])


def structure_seed(run_seed: int | None) -> int:
    """The trees' structure seed when ``structure_seed=`` is not given: fresh from the operating
    system, or — in a seeded test run — derived from the run's seed, so the run is reproducible
    (a stream of its own, not the noise's).

    >>> structure_seed(7) == structure_seed(7) != structure_seed(8)
    True
    """
    if run_seed is None:
        return int.from_bytes(os.urandom(8), "big") >> 1
    return int(np.random.SeedSequence([run_seed, 0x7D7]).generate_state(1, np.uint64)[0] >> np.uint64(1))


# -- the leaf measurement -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LeafCounts(Query):
    """The (leaf, label) histogram of one tree over the confidential records (flat, C order).

    Each record reaches exactly one leaf: the cells are disjoint and a record counts once (the
    sensitivity argument of the module docstring).
    """

    name: str
    tree: Tree
    features: Features
    label: str
    #: With ``condition_on=synthetic``: the earlier sensitive columns (routed by synthetic values drawn
    #: from their released models, :mod:`.sequential`), the set and this column's place; else None.
    earlier: Earlier | None = None
    set_index: int = 0
    sensitive: tuple[str, ...] = ()

    def answer(self, engine: Any) -> np.ndarray:
        domain = engine.domain
        j = self.sensitive.index(self.label) if self.earlier is not None else 0
        if j == 0:  # the first sensitive column, or condition_on=confidential: the values as they are
            records = engine.records(tuple(dict.fromkeys((*self.features.columns, self.label))))
            inputs = self.features.inputs(records)
        else:  # S-004 §2: the earlier sensitive columns' confidential values are never read
            assert self.earlier is not None
            public = tuple(c for c in self.features.columns if c not in self.sensitive)
            records = engine.records(tuple(dict.fromkeys((*public, self.label))))
            given = {c: g for c, g in zip(self.features.columns, self.features.groupings) if c in public}
            inputs = Features(tuple(given), tuple(given.values())).inputs(records)
            inputs |= self.earlier.synthesize(self.set_index, j, inputs, records.codes[self.label], domain, self.sensitive)
        labels = records.codes[self.label]
        rows = len(labels)
        leaf = np.searchsorted(self.tree.leaves, self.tree.route(self.features.matrix(inputs, rows)))
        size = domain[self.label].size
        return np.bincount(leaf * size + labels, minlength=len(self.tree.leaves) * size).astype(np.int64)

    def describe(self) -> str:
        return self.name


# -- the method -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Roles:
    """Which columns are public (targets, split attributes) and which sensitive (synthesized, in order)."""

    public: tuple[str, ...]
    sensitive: tuple[str, ...]


class RandomDecisionTrees(Synthesizer):
    """Duke variable-depth random decision trees (S-004) or Jagannathan et al.'s; ε-DP."""

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "rdt"
    summary = (
        "Random decision trees: synthetic sensitive columns for public records; structure from a public file "
        "(Duke) or at random (Jagannathan), exact discrete Laplace leaf counts; ε-DP, E trees cost E·ε_tree"
    )
    definition = "pure-DP"
    relations = (SUBSTITUTE, ADD_REMOVE)
    neighbours_note = (
        "substitute-values over the public columns when it labels the records' own (each must be declared "
        "role: public); substitute or add-remove with targets=PATH"
    )
    keep_private = "name it in sensitive= (synthesized), or pass targets=PATH (a public file of records to label)"
    options = (
        Option(
            "sensitive",
            _names("sensitive"),
            "the sensitive columns to synthesize, in order (e.g. sex,race); default the domain's sensitive-role columns",
        ),
        Option("public", _names("public"), "the public columns (split attributes, released as the targets'); default the others"),
        Option(
            "structure",
            _structure,
            "PATH of public records that decide the splits, or 'random' (Jagannathan et al.) (required)",
            public_file=True,
        ),
        Option(
            "targets",
            _targets,
            "PATH of public records to label (default: the confidential records' own public columns)",
            public_file=True,
        ),
        Option("trees", whole("trees", 1, MAX_TREES, 5), "trees per sensitive column (default 5; each costs its share of ε)"),
        Option(
            "n_b", whole("n_b", 1, MAX_ROWS, 1000), "a node splits while its structure-file count is at least n_b (default 1000)"
        ),
        Option(
            "depth",
            whole("depth", 1, MAX_DEPTH, 6),
            "largest depth (default 6); with structure=random the fixed depth (default half the attributes)",
        ),
        Option(
            "leaf_min",
            whole("leaf_min", 0, MAX_ROWS, 100),
            "a leaf with fewer structure-file records takes its parent's distribution (default 100)",
        ),
        Option("weights", _pairs("weights", 0.0, MAX_WEIGHT), "attribute sampling weights, e.g. occupation:60 (default 1 each)"),
        Option(
            "collapse",
            _pairs("collapse", 1.0, MAX_ROWS),
            "pool categories with fewer structure-file records, e.g. occupation:200,workclass:500",
        ),
        Option(
            "coarsen",
            _pairs("coarsen", 1.0, MAX_CODES, integer=True),
            "merge runs of adjacent codes, e.g. hours-per-week:4 (coarser bins)",
        ),
        Option(
            "structure_weight",
            real("structure_weight", 0.0, MAX_ROWS, open_low=True, example=10),
            "confidential records each structure record stands for (default 1; a 10% public sample: 10)",
        ),
        Option(
            "structure_seed",
            whole("structure_seed", 0, MAX_SEED, 2024),
            "seed of the trees' structure: public, recorded (default fresh; in a seeded run, from --seed)",
        ),
        Option("combine", _choice, "average (the trees' leaf distributions averaged, default) or random-tree"),
        Option(
            "condition_on",
            _condition,
            "synthetic (default, S-004 §2: a later column's leaf counts route records by "
            "synthetic values of the earlier sensitive columns) or confidential (by their confidential values)",
        ),
    )

    # -- what is public, and what is measured --------------------------------------------------------

    def roles(self, domain: Domain) -> Roles:
        """The public and sensitive columns, checked against the domain (before anything is read).

        The options ``sensitive=`` and ``public=`` choose them; without ``sensitive=``, the columns
        the domain declares ``role: public`` are the public ones and the others the sensitive ones.
        A column named sensitive must not be declared public. When the targets are the records'
        own public columns, every public column is released as it is, so each must be declared
        ``role: public`` in the domain: :meth:`plan`'s relation names them, and the release path
        refuses a relation whose public columns the domain does not declare public
        (:meth:`dipsy.methods.base.Synthesizer.check_roles`).
        """
        s = self.settings
        unknown = [c for c in (*s.get("sensitive", ()), *s.get("public", ())) if c not in domain]
        if unknown:
            raise DipsyError(
                f"rdt names the column {unknown[0]!r}, which is not among the released columns {list(domain.names)}",
                "name columns of the domain (and of --columns, if given)",
            )
        both = set(s.get("sensitive", ())) & set(s.get("public", ()))
        if both:
            raise DipsyError(f"the column {sorted(both)[0]!r} is named both sensitive and public", "name each column once")
        declared_public = tuple(c.name for c in domain.columns if c.role == "public")
        if "sensitive" in s:
            sensitive = s["sensitive"]
        elif declared_public:
            sensitive = tuple(c.name for c in domain.columns if c.role == "sensitive" and c.name not in s.get("public", ()))
        else:
            raise DipsyError(
                "rdt needs to know which columns are sensitive",
                "pass --option sensitive=COL[,COL] (in the order to synthesize), or declare the public columns "
                "role: public in the domain file",
            )
        declared = [c for c in sensitive if domain[c].role == "public"]
        if declared:
            raise DipsyError(
                f"the column {declared[0]!r} is named sensitive, and the domain declares it public",
                "fix its role in the domain file, or leave it out of sensitive=",
            )
        public = s.get("public") or tuple(c for c in domain.names if c not in sensitive)
        rest = [c for c in domain.names if c not in public and c not in sensitive]
        if rest:
            raise DipsyError(
                f"the column {rest[0]!r} is neither public nor sensitive",
                "name it in sensitive=, or pass --columns with just the public and sensitive ones",
            )
        if not sensitive or not public:
            raise DipsyError("rdt needs at least one public and one sensitive column", "see --option public= and sensitive=")
        for c in sensitive:
            col = domain[c]
            if not col.encodable:
                raise DipsyError(f"the sensitive column {c!r} has no categories or bins", "give it bins in the domain file")
        return Roles(tuple(public), tuple(sensitive))

    def repeated_columns(self, domain: Domain) -> tuple[str, ...]:
        """The public columns when the targets are the records' own (released as they are); else none."""
        return () if "targets" in self.settings else self.roles(domain).public

    def plan(self, n: int | None, domain: Domain) -> Plan:
        s = self.settings
        roles = self.roles(domain)
        if "structure" not in s:
            raise DipsyError(
                "rdt needs a structure",
                "pass --option structure=PATH (public records that decide the splits) or structure=random",
            )
        own = "targets" not in s
        if own and self.relation == ADD_REMOVE:
            raise DipsyError(
                "with the confidential records' own public columns as targets, the release shows every record: "
                "add/remove neighbours would differ in it",
                "pass --neighbouring substitute (the guarantee then protects the sensitive columns), or targets=PATH of a public file",
            )
        if own:  # the records' own public columns are released as they are: neighbours agree on them
            self.relation = substitute_values(roles.public)
        random = s["structure"] == "random"
        trees = self.sets * len(roles.sensitive) * s.get("trees", DEFAULTS["trees"])
        if trees > MAX_TREES_IN_ALL:  # before any file is read or tree grown
            raise DipsyError(
                f"rdt would grow {trees:,} trees ({self.sets} set(s) × {len(roles.sensitive)} sensitive column(s) × "
                f"{s.get('trees', DEFAULTS['trees'])} trees), more than the {MAX_TREES_IN_ALL:,} a release may have",
                "lower trees= or --sets (each tree also costs its share of ε)",
            )
        self._check_numeric(roles, domain, random)
        if not own:
            self.targets = _read_public(s["targets"], domain.project(roles.public), "targets", strict=True)
        structure = (
            None
            if random
            else _read_public(s["structure"], domain.project(_candidates(roles, len(roles.sensitive) - 1)), "structure")
        )
        self.structure_weight_ = _structure_weight(s.get("structure_weight"), n, structure)
        seed = s["structure_seed"] if "structure_seed" in s else structure_seed(self.seed)
        rand = np.random.default_rng(seed)
        m, S, E = self.sets, len(roles.sensitive), s.get("trees", DEFAULTS["trees"])
        epsilon_tree = to_fraction(self.budget.epsilon) / (m * S * E)
        sensitivity = 1 if self.relation == ADD_REMOVE else 2
        noise = DiscreteLaplace.for_epsilon(epsilon_tree, sensitivity)

        measurements: list[Measurement] = []
        if own:
            values = Statistic(
                f"the values of the public columns {', '.join(roles.public)} of every record",
                lambda engine: engine.records(roles.public),
            )
            measurements.append(
                Measurement(
                    f"{self.name}: the public columns of every record, released as they are (declared public)",
                    values,
                    DeclaredPublic(PureDP(0.0), roles.public),
                    self.relation,
                )
            )
        self.features = tuple(self._features(roles, j, domain, structure, random) for j in range(S))
        sequential = S > 1 and s.get("condition_on", "synthetic") == "synthetic"
        self.earlier = Earlier(draw_key(self.seed), self.features, s.get("combine", "average")) if sequential else None
        for k in range(m):
            for j, label in enumerate(roles.sensitive):
                for t in range(E):
                    tree = self._grow(self.features[j], domain, structure, random, rand)
                    where = f"{label} tree {t + 1} of {E}" + (f", set {k + 1} of {m}" if m > 1 else "")
                    routed = (
                        f", records routed by synthetic {', '.join(roles.sensitive[:j])} (S-004 §2)"
                        if j and self.earlier is not None
                        else ""
                    )
                    query = LeafCounts(
                        f"the {label} label counts in each of the {len(tree.leaves)} leaves of {where}{routed}",
                        tree,
                        self.features[j],
                        label,
                        self.earlier if j else None,
                        k,
                        roles.sensitive,
                    )
                    measurements.append(
                        Measurement(
                            f"{self.name}: {where}: leaf counts, discrete Laplace scale {noise.scale}",
                            query,
                            noise,
                            self.relation,
                            self.set_index(k),
                        )
                    )
        self.roles_ = roles
        narrowed = (
            (
                f"the columns declared public, which the release repeats for every record as they are, are "
                f"{', '.join(roles.public)}: the guarantee covers the sensitive columns {', '.join(roles.sensitive)}"
            )
            if own
            else ""
        )
        return Plan(
            tuple(measurements),
            self.relation,
            self._public(n, roles, own, random),
            self._mechanism(random),
            self._composition(m, S, E, sensitivity),
            self._parameters(roles, random, seed, epsilon_tree, sensitivity, measurements, n, own),
            narrowed=narrowed,
        )

    def fit(self, session: Session, plan: Plan) -> TreesModel:
        s, roles = self.settings, self.roles_
        E, S = s.get("trees", DEFAULTS["trees"]), len(roles.sensitive)
        targets, trees, done, _ = self.measure(session, plan)
        dists = [d for d, _ in done]
        own = [int((sources == tree.leaves).sum()) for tree, (_, sources) in zip(trees, done)]
        shape = lambda xs: tuple(
            tuple(tuple(xs[(k * S + j) * E + t] for t in range(E)) for j in range(S)) for k in range(self.sets)
        )  # noqa: E731
        if targets is None:
            raise DipsyError("rdt has no targets to label: fit the plan this synthesizer made", "call plan before fit")
        return TreesModel(
            session.domain,
            roles,
            self.features,
            shape(trees),
            shape(dists),
            targets,
            s.get("combine", "average"),
            self.sets,
            shape(own),
        )

    def measure(
        self, session: Session, plan: Plan
    ) -> tuple[Any, list[Tree], list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
        """Run the plan's measurements in order (set by set, column by column: S-004 §2) and post-process
        each tree's noisy counts as it comes; with ``condition_on=synthetic``, each column's finished
        model is handed to the later columns' leaf queries (:class:`.sequential.Earlier`) before they run.

        Returns the targets (or None), the trees, their (distributions, sources), and the noisy counts.
        """
        s, roles = self.settings, self.roles_
        trees: list[Tree] = []
        done: list[tuple[np.ndarray, np.ndarray]] = []
        noisy: list[np.ndarray] = []
        targets = getattr(self, "targets", None)
        leaf_min = 0 if s["structure"] == "random" else s.get("leaf_min", DEFAULTS["leaf_min"])
        E, S = s.get("trees", DEFAULTS["trees"]), len(roles.sensitive)
        sd = math.sqrt(
            discrete_laplace_variance(plan.measurements[-1].mechanism_as(DiscreteLaplace).scale)
        )  # one scale for every tree
        earlier = getattr(self, "earlier", None)
        for m in plan.measurements:
            out = session.measure(m)
            if isinstance(m.mechanism, DeclaredPublic):
                targets = out
                continue
            tree = m.query_as(LeafCounts).tree
            trees.append(tree)
            noisy.append(out)
            done.append(distributions_and_sources(tree, out.reshape(len(tree.leaves), -1), leaf_min, sd))
            if earlier is not None and len(trees) % E == 0:  # column j of set k is complete: later columns may read it
                k, j = divmod(len(trees) // E - 1, S)
                earlier.add(k, j, tuple(trees[-E:]), tuple(d for d, _ in done[-E:]))
        return targets, trees, done, noisy

    # -- the plan's parts -----------------------------------------------------------------------------

    def _check_numeric(self, roles: Roles, domain: Domain, random: bool) -> None:
        for c in (*roles.public, *roles.sensitive):
            col = domain[c]
            if col.size is None:  # numeric without bins: public, split at thresholds, a state has no cell
                col.refuse_missing(
                    f"{self.name} (which splits a numeric column without bins at thresholds of its values)",
                    "give the column bins in the domain file (its states then split as cells of their own), or leave it out",
                )
        for c in roles.public:
            col = domain[c]
            if not col.is_categorical and col.bins is None and not random and col.kind != "integer":
                raise DipsyError(
                    f"the public column {c!r} is numeric without bins: a Duke tree has one child per bin",
                    "give it bins in the domain file, or use structure=random (threshold splits)",
                )
        for option in ("collapse", "coarsen", "weights"):
            for c in self.settings.get(option, {}):
                if c not in roles.public and c not in roles.sensitive[:-1]:
                    raise DipsyError(
                        f"option {option} names {c!r}, which is no split attribute", f"name public columns {list(roles.public)}"
                    )
                if random and option != "weights" and not domain[c].is_categorical:
                    raise DipsyError(
                        f"option {option} names the numeric column {c!r}, which a random structure splits at thresholds",
                        "collapse categorical columns only with structure=random",
                    )
        if random and "collapse" in self.settings:
            raise DipsyError(
                "collapse= counts records in the structure file, and structure=random has none", "use coarsen= instead"
            )

    def _features(self, roles: Roles, j: int, domain: Domain, structure: Records | None, random: bool) -> Features:
        s = self.settings
        columns = _candidates(roles, j)
        groupings: list[np.ndarray | None] = []
        for c in columns:
            col = domain[c]
            if random and not col.is_categorical and c in roles.public and col.missing is None:
                # threshold splits on the public values; an earlier sensitive column splits by its codes (targets
                # carry synthetic codes), and so does a column with missing states (a state has no value to compare)
                groupings.append(None)
                continue
            size = col.size
            assert size is not None, "roles and _check_numeric refuse a column without codes here"
            support = None
            if "collapse" in s and c in s["collapse"]:
                assert structure is not None, (
                    "_check_numeric refuses collapse= with structure=random, the only plan without a structure"
                )
                support = np.bincount(structure.codes[c], minlength=size) * self.structure_weight_
            groupings.append(grouping(size, s.get("coarsen", {}).get(c, 1), support, s.get("collapse", {}).get(c, 0)))
        return Features(columns, tuple(groupings))

    def _grow(
        self, features: Features, domain: Domain, structure: Records | None, random: bool, rand: np.random.Generator
    ) -> Tree:
        s = self.settings
        weights = [s.get("weights", {}).get(c, 1.0) for c in features.columns]
        if random:
            numeric = [g is None for g in features.groupings]
            bounds = [_bounds(domain[c]) if g is None else (0, 0) for c, g in zip(features.columns, features.groupings)]
            depth = s.get("depth", max(1, len(features.columns) // 2))
            return grow_random(features.columns, features.sizes, numeric, bounds, depth, rand, weights)
        assert structure is not None, "the plan reads a structure unless structure=random"
        matrix = features.matrix(features.inputs(structure), structure.rows)
        return grow_public(
            features.columns,
            features.sizes,
            weights,
            matrix,
            self.structure_weight_,
            s.get("n_b", DEFAULTS["n_b"]),
            s.get("depth", DEFAULTS["depth"]),
            rand,
        )

    def _public(self, n: int | None, roles: Roles, own: bool, random: bool) -> tuple[str, ...]:
        out = list(self.public(n))
        if own:
            out.append(
                f"the values of the public columns {', '.join(roles.public)} of every record: the release repeats them as "
                f"they are, as the records to label (the agency publishes them; S-004's BD file). The guarantee therefore "
                f"protects the sensitive columns {', '.join(roles.sensitive)}: neighbouring data sets differ in the "
                f"sensitive values of one record"
            )
        else:
            out.append("the targets file (public records to label; recorded by name and SHA-256 under options)")
        out.append(
            "the trees' structure: from the domain and the recorded structure_seed only"
            if random
            else "the structure file (public records that decide the splits; recorded by name and SHA-256 under options), "
            "and the trees' structure grown from it, its rows weighted by the recorded structure_weight (given, or n "
            "over its rows where n is public), with the recorded structure_seed"
        )
        return tuple(out)

    def _mechanism(self, random: bool) -> str:
        how = (
            "Jagannathan, Pillaipakkamnatt & Wright (2012) random decision trees of fixed depth, structure drawn without data"
            if random
            else "Duke variable-depth random decision trees (S-004): splits decided on structure-file counts only"
        )
        return (
            f"{how}; each tree's (leaf, label) counts of the confidential records get exact discrete Laplace noise; "
            "a leaf below leaf_min structure records or with a noisy total within two noise sds of 0 takes its nearest "
            "qualifying ancestor's summed counts, projected onto non-negative counts of the same total; each target's label "
            "drawn from the trees' leaf distributions (post-processing); "
            + (
                "a later sensitive column's leaf counts route the records by synthetic values of the earlier ones, drawn from "
                "their released trees (S-004 §2)"
                if self.settings.get("condition_on", "synthetic") == "synthetic"
                else "a later sensitive column's leaf counts route the records by the confidential values of the earlier ones"
            )
        )

    def _composition(self, m: int, S: int, E: int, sensitivity: int) -> str:
        sets = f" × {m} sets" if m > 1 else ""
        return (
            f"parallel composition over each tree's disjoint leaves (a record reaches one leaf: L1 sensitivity {sensitivity}); "
            f"sequential over the {E} trees of each of the {S} sensitive column(s){sets}"
            + (
                " (adaptive: a later column's trees route records by draws from the earlier columns' released trees)"
                if S > 1 and self.settings.get("condition_on", "synthetic") == "synthetic"
                else ""
            )
            + f": ε = {m * S * E} · ε_tree"
        )

    def _parameters(
        self,
        roles: Roles,
        random: bool,
        seed: int,
        epsilon_tree: Fraction,
        sensitivity: int,
        measurements: list[Measurement],
        n: int | None,
        own: bool,
    ) -> dict[str, Any]:
        s = self.settings
        trees = [m.query.tree.summary() for m in measurements if isinstance(m.query, LeafCounts)]
        out = {
            "sensitive": list(roles.sensitive),
            "public_columns": list(roles.public),
            "structure": "random" if random else "public file",
            "targets": "the confidential records' public columns" if own else "targets file",
            "trees_per_column": s.get("trees", DEFAULTS["trees"]),
            "epsilon_per_tree": float(epsilon_tree),
            "epsilon_per_tree_exact": str(epsilon_tree),
            "sensitivity": sensitivity,
            "depth": s.get("depth", "half the attributes" if random else DEFAULTS["depth"]),
            "structure_seed": seed,
            "combine": s.get("combine", "average"),
            "condition_on": s.get("condition_on", "synthetic") if len(roles.sensitive) > 1 else "no earlier sensitive column",
            "groupings": {label: f.describe() for label, f in zip(roles.sensitive, self.features) if f.describe()},
            "trees": trees,
        }
        if not random:
            out |= {
                "n_b": s.get("n_b", DEFAULTS["n_b"]),
                "leaf_min": s.get("leaf_min", DEFAULTS["leaf_min"]),
                "structure_weight": self.structure_weight_,
                "structure_weight_from": "given" if "structure_weight" in s else "n / structure rows" if n else "default 1",
            }
        if n is not None:
            out["n"] = n
        stumps = [
            label
            for label in roles.sensitive
            if all(
                len(m.query.tree.leaves) == 1 for m in measurements if isinstance(m.query, LeafCounts) and m.query.label == label
            )
        ]
        if stumps:
            out["warnings"] = [stump_warning(stumps, random, out)]
            logger.warning("rdt: %s", out["warnings"][0])
        return out


def _structure_weight(given: float | None, n: int | None, structure: Records | None) -> float:
    """The confidential records each structure record stands for: as given; else n over the
    structure file's rows where n is public (the relation fixes it); else 1."""
    if given is not None:
        return float(given)
    if n and structure is not None and structure.rows:
        return n / structure.rows
    return 1.0


def stump_warning(stumps: list[str], random: bool, parameters: dict) -> str:
    """What the release says when every tree of a sensitive column is a single leaf: the column is
    drawn from its overall distribution, independently of every other column.

    >>> print(stump_warning(["sex"], False, {"n_b": 1000, "structure_weight": 1.0}))
    every tree of sex is a single leaf, so it is drawn from its overall distribution, independently of the other columns: the structure file's rows × structure_weight (1) stay below n_b = 1000 at the root; lower n_b, raise structure_weight, or give a larger structure file
    """
    why = (
        "the random structure has depth 0"
        if random
        else f"the structure file's rows × structure_weight ({parameters['structure_weight']:g}) stay below n_b = "
        f"{parameters['n_b']:g} at the root; lower n_b, raise structure_weight, or give a larger structure file"
    )
    return (
        f"every tree of {', '.join(stumps)} is a single leaf, so it is drawn from its overall distribution, "
        f"independently of the other columns: {why}"
    )


def _candidates(roles: Roles, j: int) -> tuple[str, ...]:
    """The split attributes of sensitive column j's trees: the public columns and the earlier sensitive ones."""
    return roles.public + roles.sensitive[:j]


def _read_public(path: Path, domain: Domain, what: str, strict: bool = False) -> Records:
    """A public file's values against the domain (its rows outside the domain dropped, or, for the
    targets, refused): public data, read freely and before anything is charged."""
    try:  # in memory: public files are read whole, and small ones at once (no DuckDB start-up per file)
        frame = pd.read_parquet(path) if path.suffix in (".parquet", ".pq") else pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise DipsyError(
            f"cannot read the {what} file {path.name!r} ({str(e).splitlines()[0] if str(e) else type(e).__name__})",
            "pass a CSV or Parquet file",
        ) from None
    engine = engine_for(frame, domain, on_invalid="error" if strict else "drop")
    try:
        rows = engine.num_rows()
        if rows < 1:
            raise DipsyError(f"the {what} file has no rows that match the domain", "check it against the domain")
        return engine.records(domain.names)
    finally:
        getattr(engine, "close", lambda: None)()


# -- the model --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TreesModel(Model):
    """The trees (public), their leaf distributions (post-processed noisy counts) and the targets."""

    domain: Domain
    roles: Roles
    features: tuple[Features, ...]
    trees: tuple  # [set][sensitive column][tree]
    distributions: tuple  # the same nesting: leaves × labels each
    targets: Records
    combine: str
    charged: int
    #: Per tree (same nesting): how many leaves kept their own distribution (post-processing).
    own_leaves: tuple = ()

    @property
    def sets(self) -> int:
        return self.charged

    def exchangeable(self) -> tuple[str, ...] | None:
        """None: row ``i`` labels record ``i`` of the targets (its public columns as they are), so a
        rejected row is redrawn in its place (:mod:`dipsy.methods.enforce`)."""
        return None

    def choices(self) -> dict[str, Any]:
        """The trees of each sensitive column, summarised for release.json.

        Only public quantities and post-processing of noisy ones: the structure (trees, depth,
        leaves, which attributes split how often) is grown from public inputs and a public seed;
        how many leaves kept their own distribution, rather than an ancestor's, follows from the
        noisy leaf counts and the structure file's public counts. No true count appears.
        """
        summary = {}
        for j, label in enumerate(self.roles.sensitive):
            trees = [t for k in range(self.sets) for t in self.trees[k][j]]
            splits: dict[str, int] = {}
            for tree in trees:
                for name, times in tree.summary()["splits"].items():
                    splits[name] = splits.get(name, 0) + times
            summary[label] = {
                "trees": len(trees),
                "split_attributes": list(self.features[j].columns),
                "splits": dict(sorted(splits.items(), key=lambda item: (-item[1], item[0]))),
                "depth_per_tree": [int(t.depth.max()) for t in trees],
                "leaves_per_tree": [int(len(t.leaves)) for t in trees],
            }
            if self.own_leaves:
                summary[label]["leaves_with_own_distribution"] = [n for k in range(self.sets) for n in self.own_leaves[k][j]]
        return {"tree_summary": summary}

    def sample(self, k: int, rand: Randomness) -> pd.DataFrame:
        rows = self.targets.rows
        codes = {c: self.targets.codes[c] for c in self.roles.public if c in self.targets.codes}
        raw = self.targets.numbers
        for j, label in enumerate(self.roles.sensitive):
            self.report(f"labelling {label}", j + 1, len(self.roles.sensitive))
            f = self.features[j]
            inputs = {c: raw[c] if g is None else codes[c] for c, g in zip(f.columns, f.groupings)}
            matrix = f.matrix(inputs, rows)
            trees = self.trees[k][j]
            pick = None if self.combine == "average" else rand.numpy.integers(0, len(trees), rows)
            p = probabilities(trees, self.distributions[k][j], matrix, self.combine, pick)
            codes[label] = draw(p, rand.numpy.random(rows))
        out = {}
        for c in self.domain.names:
            col = self.domain[c]
            if c in self.roles.sensitive or col.is_categorical:
                out[c] = decode_column(codes[c], col, rand.numpy)
            else:  # public numbers as they are, and their missing states
                out[c] = repeated_column(raw[c], self.targets.states.get(c), col)
        return pd.DataFrame(out)
