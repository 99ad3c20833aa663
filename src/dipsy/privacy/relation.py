r"""Neighbouring relations as values, and the group-privacy rule that converts a spend between them.

A guarantee is only as exact as its neighbouring relation, and a relation is only exact when it
names what it leaves public. dipsy knows these kinds:

- **substitute** one record: neighbouring data sets have the same number of rows ``n`` and differ
  in the values of one row (so ``n`` may be, and often is, published);
- **add/remove** one individual who owns at most θ rows (θ = 1: one record): neighbouring data
  sets differ by the presence of all the rows of one individual;
- **substitute-values** with the public columns ``P``: the same rows, with the same values of the
  columns in ``P``, differing in the other values of one row — the relation of a release that
  repeats the columns ``P`` of every record as they are (``rdt`` labelling the records' own
  public columns). ``P`` is part of the value: substitute-values over ``{education, race}`` and
  over ``{education, sex}`` are different relations, and together the two releases show every
  record's education, race and sex.
- the **local** relations of the pseudo-posterior mechanism, whose guarantee holds for this data
  set x and its neighbours only (:class:`~dipsy.privacy.budget.LocalDP`): **response-removed**
  (one record's ``response`` removed from the likelihood, the other records' weights held fixed;
  ``n`` and the columns ``P`` — the predictors, released as they are — stay) and
  **response-in-range** (one record's ``response`` moved anywhere within ``[a·y, b·y]`` of its
  value ``y``, ``within = (a, b)``, every weight recomputed as the mechanism would; ``n`` and ``P``
  stay).

A relation is a small frozen value (:class:`Relation`), written machine-readably into
``release.json`` beside its prose and kept, whole, with every spend in the ledger. Relations are
set by the method from what it releases; only substitute and add/remove are chosen on the
command line.

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
  under add/remove;
- substitute → substitute-values(P): ``k = 1`` (its neighbours are substitution neighbours), and
  add/remove (θ) → substitute-values(P): ``k = 2``, as to substitute;
- substitute-values(P) → substitute-values(P'): ``k = 1`` when ``P ⊆ P'`` (neighbours that agree
  on ``P'`` agree on ``P``, so they are substitute-values(P) neighbours); **refused** otherwise: a
  release under ``P`` shows the columns of ``P \ P'`` exactly, which ``P'``-neighbours may change;
- substitute-values → substitute or add/remove: **refused**. Such a release shows the declared
  columns of every record exactly; no ε bounds a change in them, or a record's presence;
- a local relation converts only to itself (``k = 1``): a local ε_x is a bound for one neighbour
  notion of one data set, and nothing relates it to another.

Group privacy for ``k`` steps: ε-DP ⇒ kε-DP (Dwork & Roth 2014, Thm 2.2); ρ-zCDP ⇒ k²ρ-zCDP (Bun &
Steinke 2016, Prop. 1.9); (ε, δ)-DP ⇒ (kε, k e^{(k−1)ε} δ)-DP (Vadhan 2017, Lemma 2.2, by induction
along the path x₀, …, x_k: ``P[M(x₀) ∈ S] <= e^{kε} P[M(x_k) ∈ S] + δ Σ_{j<k} e^{jε}`` and the sum is
at most ``k e^{(k−1)ε}``).

>>> SUBSTITUTE.name, ADD_REMOVE.name, individual(7).name
('substitute', 'add-remove', 'add-remove')
>>> group_factor(ADD_REMOVE, SUBSTITUTE), group_factor(individual(3), individual(7))
(2, 3)
>>> group_factor(substitute_values(["race"]), substitute_values(["race", "sex"])), group_factor(substitute_values(["sex"]), substitute_values(["race"]))
(1, None)
>>> from dipsy.privacy.budget import PureDP
>>> convert(PureDP(1.0), ADD_REMOVE, SUBSTITUTE)
PureDP(epsilon=2.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import BudgetError, DipsyError
from .budget import ZCDP, ApproxDP, Budget, PureDP

KINDS = ("substitute", "add-remove", "substitute-values", "response-removed", "response-in-range")
#: The kinds in which neighbours have the same rows (and so the same n).
SAME_ROWS = ("substitute", "substitute-values", "response-removed", "response-in-range")
#: The local kinds: a guarantee for this data set and its neighbours only (the pseudo-posterior's).
LOCAL = ("response-removed", "response-in-range")
#: The kinds whose value includes the columns they leave public (which neighbours share).
WITH_PUBLIC = ("substitute-values", *LOCAL)


@dataclass(frozen=True)
class Relation:
    """A neighbouring relation: its ``kind``, θ (the most rows one individual may own; θ = 1: one
    record), the columns it leaves ``public`` (on which neighbours agree), and for the local kinds
    the ``response`` whose value changes and the range factors ``within = (a, b)``.

    ``public`` is kept sorted, so a relation is equal to another exactly when they are the same
    relation.

    >>> Relation("add-remove", 7).to_dict()
    {'kind': 'add-remove', 'unit': 'individual', 'theta': 7}
    >>> substitute_values(["sex", "age"]).to_dict()
    {'kind': 'substitute-values', 'unit': 'record', 'theta': 1, 'public': ['age', 'sex']}
    """

    kind: str
    theta: int = 1
    public: tuple[str, ...] = ()
    response: str = ""
    within: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DipsyError(f"unknown neighbouring relation {self.kind!r}", f"use one of {', '.join(KINDS)}")
        if isinstance(self.theta, bool) or not isinstance(self.theta, int) or self.theta < 1:
            raise DipsyError(f"θ must be a whole number >= 1, got {self.theta!r}", "e.g. theta=1")
        if self.kind in SAME_ROWS and self.theta != 1:
            raise DipsyError("substitution is of one record only (θ = 1)", "use add-remove for individuals of several rows")
        public = tuple(sorted({str(c) for c in self.public}))
        object.__setattr__(self, "public", public)
        if self.kind not in WITH_PUBLIC and public:
            raise DipsyError(
                f"a {self.kind} relation leaves no column public", "use substitute-values for a release that repeats columns"
            )
        if self.kind == "substitute-values" and not public:
            raise DipsyError("a substitute-values relation names the columns it leaves public", "with none, it is substitute")
        if (self.kind in LOCAL) != bool(self.response):
            raise DipsyError(
                f"a {self.kind} relation {'needs' if self.kind in LOCAL else 'has no'} response column",
                "name the column whose value the neighbours change (local relations only)",
            )
        if (self.kind == "response-in-range") != (self.within is not None):
            raise DipsyError("a response-in-range relation, and only it, has the range factors (a, b)", "give within=(a, b)")
        if self.within is not None:
            a, b = (float(x) for x in self.within)
            if not 0 < a < 1 < b < float("inf"):
                raise DipsyError(f"the range factors must be 0 < a < 1 < b, got {self.within!r}", "e.g. within=(0.6, 1.2)")
            object.__setattr__(self, "within", (a, b))

    @property
    def name(self) -> str:
        """The kind's name (on the command line: ``substitute`` or ``add-remove``)."""
        return self.kind

    @property
    def unit(self) -> str:
        return "record" if self.theta == 1 else "individual"

    @property
    def fixes_n(self) -> bool:
        """Whether neighbours have the same number of rows (so ``n`` may be treated as public)."""
        return self.kind in SAME_ROWS

    @property
    def local(self) -> bool:
        """Whether the relation is local to one data set (a guarantee that is not worst-case DP)."""
        return self.kind in LOCAL

    def describe(self) -> str:
        """The relation in words, as ``release.json``'s ``neighbouring`` gives it."""
        listed = ", ".join(self.public)
        if self.kind == "substitute-values":
            return (
                "substitute one record's sensitive values: neighbouring data sets have the same rows and the same "
                f"values of the columns the release declares public ({listed}), and differ in the other values of one row"
            )
        if self.kind in LOCAL:
            stay = f"n and the columns {listed} stay as they are" if self.public else "n stays as it is"
            if self.kind == "response-removed":
                change = f"one record's {self.response} removed from the likelihood, the other records' weights held fixed"
            else:
                assert self.within is not None, "__post_init__: a response-in-range relation has its range factors"
                a, b = self.within
                change = (
                    f"one record's {self.response} moved anywhere within [{a:g}·y, {b:g}·y] of its value y, every "
                    "record's weight recomputed for it as the mechanism computes weights"
                )
            return f"local to this data set: its neighbours are the data sets with {change}; {stay}"
        if self.kind == "substitute":
            return (
                "substitute one record: neighbouring data sets have the same number of rows n and differ in the values of one row"
            )
        if self.theta == 1:
            return "add/remove one record: neighbouring data sets differ by the presence of one row"
        return (
            f"add/remove one individual: neighbouring data sets differ by all the rows of one individual, "
            f"who owns at most θ = {self.theta} rows"
        )

    def __str__(self) -> str:
        text = self.kind if self.theta == 1 else f"{self.kind} (θ = {self.theta})"
        if self.kind in LOCAL:
            text += f" of {self.response}" + (f" within [{self.within[0]:g}·y, {self.within[1]:g}·y]" if self.within else "")
        if self.public:
            text += f" (public: {', '.join(self.public)})"
        return text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "unit": self.unit, "theta": self.theta}
        if self.public:
            out["public"] = list(self.public)
        if self.response:
            out["response"] = self.response
        if self.within is not None:
            out["within"] = list(self.within)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Relation:
        within = d.get("within")
        return cls(
            d["kind"],
            int(d.get("theta", 1)),
            tuple(d.get("public", ())),
            d.get("response", ""),
            None if within is None else (float(within[0]), float(within[1])),
        )


SUBSTITUTE = Relation("substitute")
ADD_REMOVE = Relation("add-remove")


def individual(theta: int) -> Relation:
    """Add/remove one individual who owns at most θ rows (θ = 1: one record)."""
    return Relation("add-remove", theta)


def substitute_values(public: Iterable[str]) -> Relation:
    """Substitute one record's values other than those of the ``public`` columns (which every record keeps)."""
    return Relation("substitute-values", public=tuple(public))


def parse(name: str) -> Relation:
    """A record-level relation from its command-line name (the others are set by a method).

    >>> parse("add-remove") == ADD_REMOVE
    True
    """
    for r in (SUBSTITUTE, ADD_REMOVE):
        if r.name == name:
            return r
    raise DipsyError(f"unknown neighbouring relation {name!r}", "use substitute or add-remove")


def group_factor(spent: Relation, target: Relation) -> int | None:
    """How many ``spent``-neighbour steps cover one ``target`` step; None if no number does.

    >>> sv = substitute_values(["a"])
    >>> group_factor(SUBSTITUTE, sv), group_factor(ADD_REMOVE, sv), group_factor(sv, SUBSTITUTE)
    (1, 2, None)
    """
    if spent.local or target.local:
        return 1 if spent == target else None
    if spent.kind == "substitute-values":
        return 1 if target.kind == "substitute-values" and set(spent.public) <= set(target.public) else None
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
            raise BudgetError(
                f"group privacy for {k} steps turns {budget} into δ >= 1", "state the cap in the release's own relation"
            )
        return ApproxDP(k * budget.epsilon, delta)
    raise BudgetError(f"no group-privacy rule for {budget!r}", "use ε-DP, ρ-zCDP or (ε, δ)-DP")


def convert(budget: Budget, spent: Relation, target: Relation) -> Budget:
    """``budget``, spent under ``spent``, as a guarantee under ``target``; or :class:`BudgetError`."""
    k = group_factor(spent, target)
    if k is None:
        raise BudgetError(
            f"a release private under {spent} cannot count under {target} ({why_not(spent, target)})", fix_for(spent, target)
        )
    return group_privacy(budget, k)


def fix_for(spent: Relation, target: Relation) -> str:
    """What to do when a spend under ``spent`` cannot count under ``target`` (a refusal's fix)."""
    if spent.local or target.local:
        return (
            "keep to the local cap's relation (the same response, range and predictors), or raise the question with the "
            "data steward: local guarantees of different neighbour notions do not add up"
        )
    if spent.kind == "substitute-values" and target.kind == "substitute-values":
        both = ", ".join(sorted(set(spent.public) | set(target.public)))
        return (
            f"state the cap under substitute-values with the public columns {both} (it then covers both releases: "
            "every one of those columns is published), or release without repeating the others"
        )
    if spent.kind == "substitute-values":
        return "state this data set's cap under substitute-values (substitute spends count there once, add/remove ones twice)"
    return "state this data set's cap under substitution (add/remove spends count twice there), or release under add/remove"


def why_not(spent: Relation, target: Relation) -> str:
    """Why a spend under ``spent`` cannot count under ``target`` (when :func:`group_factor` is None)."""
    if spent.local or target.local:
        return "a local guarantee holds for one neighbour notion of one data set and converts to no other relation"
    if spent.kind == "substitute-values":
        shown = [c for c in spent.public if c not in target.public]
        if target.kind == "substitute-values":
            return f"it shows {', '.join(shown)} exactly for every record, which the other relation's neighbours may change"
        return "it shows the columns it declares public exactly, for every record"
    return "it may publish the number of rows n exactly, which no ε bounds under add/remove"
