r"""m independent sets for the marginal methods: per-set plans, one charge per set's adaptive part.

``privsyn`` and ``dpsyn`` with ``--sets m`` make every set from its own complete run of the
method's measurements at the per-set share of the budget (privsyn ρ/m, dpsyn (ε/m, δ/m)), so
the between-set variance of an estimate carries the noise of the measurements and the
randomness of the synthesis, and Reiter's (2003) partial-synthesis rule combines them
(:mod:`dipsy.inference`). This module holds what the two share:

- :class:`SetsPlan` — a :class:`~dipsy.methods.base.Plan` whose adaptive part is declared *per
  set*: the ledger reserves one spend per set before any read, the session's filter bounds
  their total;
- :class:`Parts` and :class:`Composed` — the adaptive measurements of one set (the marginals its
  own noisy outputs chose) run as **one** measurement, charged exactly its set's declared share.
  Each part keeps its own query, noise and cost, listed in the statement; the charge is the
  share, which the parts' composition is checked (at construction) to stay within;
- :class:`SetsModel` — the m per-set models; set k is drawn from set k's measurements only.

Why one charge per set's adaptive part. Every measurement of set k carries ``set_index = k``,
and the statement's per-set line is the largest over the sets of what each set's measurements
compose to (:func:`dipsy.methods.base.per_set_guarantee`). Charged measurement by measurement,
the sets would not spend the same: σ² is rounded up on a grid, differently for the marginals each
set chose, and dpsyn's sets may fall in different regimes (one with a Gaussian part and δ, one
without); under an (ε, δ) cap the accountant would convert the zCDP parts of all sets *jointly*
(:func:`~dipsy.privacy.composition.total_as`), a total that says nothing of one set's own (ε, δ).
The per-set line would still be true, but it would differ from the share the plan declared and
the ledger reserved for each set before any read. Charging each set's adaptive part at exactly
its declared share makes every set spend its share, composed by the rule of its definition (ρ's
add; (ε, δ)'s add), so the statement, the plan and the ledger say the same per set. The cost is a
statement that may be slightly looser than the measurements' sum (what the rounding saved, or a
δ a set without a Gaussian did not use) — never tighter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import DipsyError, PrivacyError
from ...privacy import Budget, Spend
from ...privacy.composition import total_as
from ...privacy.loss import PrivacyLoss
from ...privacy.measurement import Measurement, Mechanism, Query
from ...privacy.rng import Randomness
from ...privacy.session import Session
from ..base import CHUNK_ROWS, Model, Plan


@dataclass(frozen=True)
class SetsPlan(Plan):
    """A plan of m sets whose adaptive part is declared set by set.

    ``adaptive`` is the total the session's filter admits (the sum of the sets' shares);
    ``adaptive_sets`` is each set's spend, as the ledger reserves it before any read. With no
    ``adaptive_sets`` the plan is a :class:`~dipsy.methods.base.Plan`.
    """

    adaptive_sets: tuple[Spend, ...] = ()

    @property
    def spends(self) -> tuple[Spend, ...]:
        if not self.adaptive_sets:
            return super().spends
        fixed = tuple(Spend(m.label, m.cost) for m in self.measurements if not m.mechanism.data_dependent)
        return fixed + self.adaptive_sets

    def declared_parts(self) -> list[tuple[Budget, int | None]]:
        """As :meth:`Plan.declared_parts`, each set's adaptive share tagged with its set."""
        if not self.adaptive_sets:
            return super().declared_parts()
        fixed = [(m.cost, m.set_index) for m in self.measurements if not m.mechanism.data_dependent]
        return fixed + [(s.budget, k) for k, s in enumerate(self.adaptive_sets)]


@dataclass(frozen=True)
class Parts(Query):
    """Several queries read together: the tuple of their exact answers (never released as such).

    >>> from dipsy.privacy.measurement import Table, Total
    >>> Parts((Total(), Table(("a", "b")))).describe()
    'the number of rows; the counts of the a × b table'
    """

    queries: tuple[Query, ...]

    def answer(self, engine: Any) -> tuple:
        return tuple(q.answer(engine) for q in self.queries)

    def describe(self) -> str:
        return "; ".join(q.describe() for q in self.queries)


@dataclass(frozen=True)
class Composed(Mechanism):
    r"""Each part's own mechanism on its own answer; the cost stated is ``stated``.

    **Privacy map.** Part i is a mechanism of cost ``c_i`` on its query, all under the same
    neighbouring relation; their joint release costs the composition of the ``c_i`` — ρ's add
    (Bun & Steinke 2016, Lemma 1.7), ε's and (ε, δ)'s add (Dwork & Roth 2014, Thm 3.16), and zCDP
    parts under an (ε, δ) statement are added as ρ and converted once at the δ it leaves (Canonne,
    Kamath & Steinke 2020, §2.3), exactly :func:`~dipsy.privacy.composition.total_as`'s rules. The
    constructor refuses a ``stated`` cost below that composition, so what is stated always bounds
    the parts' cost (it may exceed it: a bound is a valid guarantee).

    >>> from dipsy.privacy import ZCDP
    >>> from dipsy.privacy.measurement import DiscreteGaussian
    >>> g = DiscreteGaussian.for_budget(ZCDP(0.25))
    >>> Composed((g, g), ZCDP(0.5), ("a", "b")).cost
    ZCDP(rho=0.5)
    >>> Composed((g, g), ZCDP(0.4), ("a", "b"))
    Traceback (most recent call last):
    ...
    dipsy.errors.PrivacyError: the parts compose to ρ = 0.5, more than the ρ = 0.4 stated; report this bug
    """

    parts: tuple[Mechanism, ...]
    stated: Budget
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.parts) != len(self.labels) or not self.parts:
            raise ValueError("one label per part, and at least one part")
        composed = total_as(self.stated, [p.cost for p in self.parts])
        if composed.exceeds(self.stated):
            raise PrivacyError(f"the parts compose to {composed}, more than the {self.stated} stated", "report this bug")

    @property
    def exact(self) -> bool:  # type: ignore[override]  # a class constant elsewhere; here it depends on the parts
        return all(p.exact for p in self.parts)

    @property
    def cost(self) -> Budget:
        return self.stated

    def randomise(self, answer: Any, rand: Randomness) -> tuple:
        # in the parts' order: the same draws as measuring them one by one
        return tuple(p.randomise(a, rand) for p, a in zip(self.parts, answer))

    def describe(self) -> dict[str, Any]:
        composed = total_as(self.stated, [p.cost for p in self.parts])
        return {
            "distribution": "each part's own noise on its own query (listed in 'parts'), charged as one measurement",
            "composition": (
                f"the parts compose to {composed}; the cost charged is the set's declared share, {self.stated}, which bounds it"
            ),
            "parts": [{"label": label, **p.describe(), **p.cost.to_dict()} for label, p in zip(self.labels, self.parts)],
        }

    def weakened(self, factor: float) -> Composed:
        # the audit's broken variant: weaker parts, the same stated cost (bypasses the check on purpose)
        broken = object.__new__(Composed)
        for name in ("stated", "labels"):
            object.__setattr__(broken, name, getattr(self, name))
        object.__setattr__(broken, "parts", tuple(p.weakened(factor) for p in self.parts))
        return broken

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss | None:
        """The parts' losses composed (independent draws on their own answers: the factors of the
        product, :mod:`dipsy.privacy.loss`); None if a part has none."""
        losses = [p.privacy_loss(x, y) for p, x, y in zip(self.parts, a, b)]
        known = [loss for loss in losses if loss is not None]
        return None if len(known) != len(losses) else sum(known, PrivacyLoss())


def measure_parts(
    session: Session, parts: list[Measurement], charge: tuple[str, Budget] | None = None, set_index: int | None = None
) -> list:
    """Run ``parts`` through ``session``: one by one (``charge`` None), or as one measurement
    labelled ``charge[0]`` and charged ``charge[1]`` (:class:`Composed`) serving set ``set_index``.
    The outputs, in order."""
    if not parts:
        return []
    if charge is None:
        return [session.measure(m) for m in parts]
    label, stated = charge
    relations = {m.relation for m in parts}
    if len(relations) != 1:
        raise PrivacyError("the parts of one measurement must share a neighbouring relation", "report this bug")
    one = Measurement(
        label,
        Parts(tuple(m.query for m in parts)),
        Composed(tuple(m.mechanism for m in parts), stated, tuple(m.label for m in parts)),
        parts[0].relation,
        set_index,
    )
    return list(session.measure(one))


@dataclass(frozen=True, eq=False)
class SetsModel(Model):
    """The per-set models of m independent runs: set k is set k's model's one set (post-processing).

    ``choices`` are the per-set models' choices, each key once with ``_per_set`` appended and a
    list of m values (every one public: a function of that set's noisy outputs).
    """

    parts: tuple[Model, ...]

    def __post_init__(self) -> None:
        if len(self.parts) < 2 or any(p.sets != 1 for p in self.parts):
            raise DipsyError("a model of m sets holds m >= 2 one-set models", "report this bug")

    @property
    def sets(self) -> int:
        return len(self.parts)

    def choices(self) -> dict:
        each = [p.choices() for p in self.parts]
        return {f"{key}_per_set": [c.get(key) for c in each] for key in dict.fromkeys(k for c in each for k in c)}

    def sample(self, k: int, rand: Randomness) -> Any:
        return self._part(k).sample(0, rand)

    def exchangeable(self) -> tuple[str, ...] | None:
        return self.parts[0].exchangeable()

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Any:
        return self._part(k).chunks(0, rand, rows)

    def _part(self, k: int) -> Model:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < self.sets:
            raise PrivacyError(
                f"set {k!r} was not charged: this model holds sets 0..{self.sets - 1}",
                "plan the release with more sets (each costs its share of the budget)",
            )
        part = self.parts[k]
        object.__setattr__(part, "reporter", self.reporter)  # a progress display hears the set's steps
        return part


def set_slices(total: int, sets: int) -> list[slice]:
    """The plan's measurements of each set, ``total`` of them in set-major order.

    >>> set_slices(6, 3)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 6, None)]
    """
    if total % sets:
        raise DipsyError(f"{total} planned measurements do not split into {sets} sets", "report this bug")
    per = total // sets
    return [slice(k * per, (k + 1) * per) for k in range(sets)]


__all__ = ["Composed", "Parts", "SetsModel", "SetsPlan", "measure_parts", "set_slices"]
