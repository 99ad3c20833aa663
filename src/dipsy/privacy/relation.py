r"""Neighbouring relations as values, and the group-privacy rule that converts a spend between them.

A guarantee is only as exact as its neighbouring relation. dipsy knows three kinds:

- **substitute** one record: neighbouring data sets have the same number of rows ``n`` and differ
  in the values of one row (so ``n`` may be, and often is, published);
- **add/remove** one individual who owns at most θ rows (θ = 1: one record): neighbouring data
  sets differ by the presence of all the rows of one individual;
- **substitute-values**: the same rows, with the same values of the columns the release declares
  public, differing in the other (sensitive) values of one row — the relation of a release that
  repeats some columns of every record as they are (``rdt`` labelling the records' own public
  columns). It is set by the method, never chosen on the command line.

A relation is a small frozen value (:class:`Relation`), written machine-readably into
``release.json`` beside its prose and kept with every spend in the ledger.

Converting a spend
------------------
A mechanism that is private under relation ``R`` is private under ``R'`` when every ``R'``
neighbour pair is joined by a path of at most ``k`` ``R``-steps: then the group-privacy bound for
groups of ``k`` applies (:func:`group_factor` gives ``k``, :func:`group_privacy` the budget):

- add/remove (θ) → substitute one record: ``k = 2`` (a substitution is one removal and one
  addition, each of one row, which an individual of ≤ θ rows covers);
- add/remove (θ_f) → add/remove (θ_t): ``k = ⌈θ_t/θ_f⌉`` (an individual of θ_t rows is at most
  that many groups of ≤ θ_f rows); θ_f ≥ θ_t gives ``k = 1``: an individual-level spend covers
  the record level;
- substitute → add/remove: **refused**. Substitution neighbours have the same ``n``; a
  mechanism may publish ``n`` exactly (the Dirichlet-multinomial does), and then no ε bounds it
  under add/remove.
- substitute → substitute-values: ``k = 1`` (its neighbours are substitution neighbours), and
  add/remove (θ) → substitute-values: ``k = 2``, as to substitute;
- substitute-values → anything else: **refused**. Such a release shows the declared columns of
  every record exactly; no ε bounds a change in them, or a record's presence.

Group privacy for ``k`` steps: ε-DP ⇒ kε-DP (Dwork & Roth 2014, Thm 2.2); ρ-zCDP ⇒ k²ρ-zCDP (Bun &
Steinke 2016, Prop. 1.9); (ε, δ)-DP ⇒ (kε, k e^{(k−1)ε} δ)-DP (Vadhan 2017, Lemma 2.2, by induction
along the path x₀, …, x_k: ``P[M(x₀) ∈ S] <= e^{kε} P[M(x_k) ∈ S] + δ Σ_{j<k} e^{jε}`` and the sum is
at most ``k e^{(k−1)ε}``).

>>> SUBSTITUTE.name, ADD_REMOVE.name, individual(7).name
('substitute', 'add-remove', 'add-remove')
>>> group_factor(ADD_REMOVE, SUBSTITUTE), group_factor(individual(3), individual(7))
(2, 3)
>>> from dipsy.privacy.budget import PureDP
>>> convert(PureDP(1.0), ADD_REMOVE, SUBSTITUTE)
PureDP(epsilon=2.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import BudgetError, DipsyError
from .budget import ZCDP, ApproxDP, Budget, PureDP

KINDS = ("substitute", "add-remove", "substitute-values")
#: The kinds in which neighbours have the same rows (and so the same n).
SAME_ROWS = ("substitute", "substitute-values")


@dataclass(frozen=True)
class Relation:
    """A neighbouring relation: ``kind`` ("substitute" or "add-remove") and θ, the most rows one
    individual may own (θ = 1: one record; substitution is of one record only).

    >>> Relation("add-remove", 7).to_dict()
    {'kind': 'add-remove', 'unit': 'individual', 'theta': 7}
    """

    kind: str
    theta: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DipsyError(f"unknown neighbouring relation {self.kind!r}", f"use one of {', '.join(KINDS)}")
        if isinstance(self.theta, bool) or not isinstance(self.theta, int) or self.theta < 1:
            raise DipsyError(f"θ must be a whole number >= 1, got {self.theta!r}", "e.g. theta=1")
        if self.kind in SAME_ROWS and self.theta != 1:
            raise DipsyError("substitution is of one record only (θ = 1)", "use add-remove for individuals of several rows")

    @property
    def name(self) -> str:
        """The name on the command line: ``substitute`` or ``add-remove``."""
        return self.kind

    @property
    def unit(self) -> str:
        return "record" if self.theta == 1 else "individual"

    @property
    def fixes_n(self) -> bool:
        """Whether neighbours have the same number of rows (so ``n`` may be treated as public)."""
        return self.kind in SAME_ROWS

    def describe(self) -> str:
        """The relation in words, as ``release.json``'s ``neighbouring`` gives it."""
        if self.kind == "substitute-values":
            return ("substitute one record's sensitive values: neighbouring data sets have the same rows and the same "
                    "values of the columns the release declares public, and differ in the other values of one row")
        if self.kind == "substitute":
            return ("substitute one record: neighbouring data sets have the same number of rows n "
                    "and differ in the values of one row")
        if self.theta == 1:
            return "add/remove one record: neighbouring data sets differ by the presence of one row"
        return (f"add/remove one individual: neighbouring data sets differ by all the rows of one individual, "
                f"who owns at most θ = {self.theta} rows")

    def __str__(self) -> str:
        return self.kind if self.theta == 1 else f"{self.kind} (θ = {self.theta})"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "unit": self.unit, "theta": self.theta}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Relation":
        return cls(d["kind"], int(d.get("theta", 1)))


SUBSTITUTE = Relation("substitute")
ADD_REMOVE = Relation("add-remove")
SUBSTITUTE_VALUES = Relation("substitute-values")


def individual(theta: int) -> Relation:
    """Add/remove one individual who owns at most θ rows (θ = 1: one record)."""
    return Relation("add-remove", theta)


def parse(name: str) -> Relation:
    """A record-level relation from its command-line name (substitute-values is set by a method).

    >>> parse("add-remove") == ADD_REMOVE
    True
    """
    for r in (SUBSTITUTE, ADD_REMOVE):
        if r.name == name:
            return r
    raise DipsyError(f"unknown neighbouring relation {name!r}", "use substitute or add-remove")


def group_factor(spent: Relation, target: Relation) -> int | None:
    """How many ``spent``-neighbour steps cover one ``target`` step; None if no number does.

    >>> group_factor(SUBSTITUTE, SUBSTITUTE_VALUES), group_factor(ADD_REMOVE, SUBSTITUTE_VALUES), group_factor(SUBSTITUTE_VALUES, SUBSTITUTE)
    (1, 2, None)
    """
    if spent.kind == "substitute-values":
        return 1 if target.kind == "substitute-values" else None
    if target.kind in SAME_ROWS:
        return 1 if spent.kind == "substitute" else 2
    if spent.kind == "substitute":
        return None
    return math.ceil(target.theta / spent.theta)


def group_privacy(budget: Budget, k: int) -> Budget:
    """The guarantee of a ``budget`` mechanism for groups of ``k`` neighbour steps (see module)."""
    if k == 1:
        return budget
    if isinstance(budget, PureDP):
        return PureDP(k * budget.epsilon)
    if isinstance(budget, ZCDP):
        return ZCDP(k * k * budget.rho)
    if isinstance(budget, ApproxDP):
        delta = k * math.exp((k - 1) * budget.epsilon) * budget.delta
        if not delta < 1:
            raise BudgetError(f"group privacy for {k} steps turns {budget} into δ >= 1", "state the cap in the release's own relation")
        return ApproxDP(k * budget.epsilon, delta)
    raise BudgetError(f"no group-privacy rule for {budget!r}", "use ε-DP, ρ-zCDP or (ε, δ)-DP")


def convert(budget: Budget, spent: Relation, target: Relation) -> Budget:
    """``budget``, spent under ``spent``, as a guarantee under ``target``; or :class:`BudgetError`."""
    k = group_factor(spent, target)
    if k is None and spent.kind == "substitute-values":
        raise BudgetError(
            f"a release private under '{spent.describe()}' cannot count under '{target.describe()}'"
            " (it shows the columns it declares public exactly, for every record)",
            "state this data set's cap under substitute-values, or give the release a separate public targets file",
        )
    if k is None:
        raise BudgetError(
            f"a release private under '{spent.describe()}' cannot count under '{target.describe()}'"
            " (it may publish the number of rows n exactly, which no ε bounds under add/remove)",
            "state this data set's cap under substitution, or release under add/remove",
        )
    return group_privacy(budget, k)
