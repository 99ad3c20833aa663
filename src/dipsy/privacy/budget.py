"""Privacy budgets: small frozen values that compose by addition and are never mutated.

Three worst-case definitions are designed in, and one local one (:class:`LocalDP`, never mixed with them):

- :class:`PureDP` — ε-differential privacy (Dwork, McSherry, Nissim & Smith 2006):
  ``Pr[M(x) ∈ S] <= e^ε Pr[M(x') ∈ S]`` for all neighbours x, x' and all sets S.
- :class:`ApproxDP` — (ε, δ)-differential privacy: the same with ``+ δ`` on the right.
- :class:`ZCDP` — ρ-zero-concentrated DP (Bun & Steinke 2016, Def. 1.1):
  ``D_α(M(x) || M(x')) <= ρ α`` for every Rényi order α > 1.

Basic sequential composition holds in each: ε's add (Dwork et al. 2006), (ε, δ)'s add componentwise
(Dwork, Kenthapadi et al. 2006), ρ's add (Bun & Steinke 2016, Lemma 1.7). Conversions between
definitions arrive with the methods that need them; until then, mixing definitions is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from ..errors import BudgetError, DipsyError

#: The ε a release may have, in total: below 1e-6 the noise swamps any data, above 1e4 there is
#: no privacy to speak of, and floats misbehave at both ends (e^ε overflows, ε/m underflows).
EPSILON_RANGE = (1e-6, 1e4)
#: The ρ of a ρ-zCDP budget, likewise.
RHO_RANGE = (1e-6, 1e4)

#: Relative slack when comparing a sum of spends with a budget: it absorbs the float rounding of
#: ε/m added m times, and is far below any difference that matters for privacy.
TOLERANCE = 1e-9


def positive(name: str, value: Any, flag: str | None = None) -> float:
    """``value`` as a finite float > 0, or a :class:`DipsyError` naming the parameter.

    >>> positive("epsilon", "0.5")
    0.5
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not math.isfinite(x) or x <= 0:
        how = f"pass {flag} with" if flag else "give"
        raise DipsyError(f"{name} must be a finite number > 0, got {value!r}", f"{how} a positive number, e.g. 1.0")
    return x


@dataclass(frozen=True)
class Budget:
    """Base of the budget types; subclasses are frozen dataclasses of non-negative floats."""

    definition: ClassVar[str] = ""

    def __add__(self, other: Budget) -> Budget:
        self._same(other)
        return type(self)(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def scaled(self, factor: float) -> Budget:
        """The budget times ``factor`` (e.g. 1/m for one of m sets under sequential composition)."""
        return type(self)(**{f.name: getattr(self, f.name) * factor for f in fields(self)})

    def exceeds(self, cap: Budget) -> bool:
        """Whether this budget is larger than ``cap`` in any component (beyond :data:`TOLERANCE`)."""
        self._same(cap)
        return any(getattr(self, f.name) > getattr(cap, f.name) * (1 + TOLERANCE) for f in fields(self))

    def to_dict(self) -> dict[str, Any]:
        return {"definition": self.definition, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Budget:
        kind = BUDGET_TYPES.get(d.get("definition", ""))
        if kind is None:
            raise BudgetError(f"unknown privacy definition {d.get('definition')!r}", f"use one of {sorted(BUDGET_TYPES)}")
        return kind(**{f.name: d[f.name] for f in fields(kind)})

    @staticmethod
    def largest(budgets: list[Budget]) -> Budget:
        """The componentwise largest of ``budgets`` (of one definition): a bound that each of them meets.

        >>> Budget.largest([ApproxDP(1.0, 1e-9), ApproxDP(0.5, 1e-8)])
        ApproxDP(epsilon=1.0, delta=1e-08)
        """
        first = budgets[0]
        for b in budgets[1:]:
            first._same(b)
        return type(first)(**{f.name: max(getattr(b, f.name) for b in budgets) for f in fields(first)})

    @classmethod
    def zero(cls) -> Budget:
        return cls(**{f.name: 0.0 for f in fields(cls)})

    def _same(self, other: Budget) -> None:
        if type(other) is not type(self):
            raise BudgetError(
                f"cannot compare or add a {other.definition} budget to a {self.definition} one",
                "keep one privacy definition per data set (conversions come with zCDP support)",
            )

    def _check(self, name: str, value: float, upper: float = math.inf) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < upper):
            raise BudgetError(f"{name} must be a number in [0, {upper}), got {value!r}", f"give a valid {name}")


@dataclass(frozen=True)
class PureDP(Budget):
    """ε-DP.

    >>> PureDP(0.5) + PureDP(0.25)
    PureDP(epsilon=0.75)
    >>> PureDP(1.0).scaled(1 / 4)
    PureDP(epsilon=0.25)
    """

    definition: ClassVar[str] = "pure-DP"
    epsilon: float

    def __post_init__(self) -> None:
        self._check("epsilon", self.epsilon)

    def __str__(self) -> str:
        return f"ε = {self.epsilon:g}"


@dataclass(frozen=True)
class ApproxDP(Budget):
    """(ε, δ)-DP."""

    definition: ClassVar[str] = "approximate-DP"
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        self._check("epsilon", self.epsilon)
        self._check("delta", self.delta, 1.0)

    def __str__(self) -> str:
        return f"ε = {self.epsilon:g}, δ = {self.delta:g}"


@dataclass(frozen=True)
class ZCDP(Budget):
    """ρ-zCDP."""

    definition: ClassVar[str] = "zCDP"
    rho: float

    def __post_init__(self) -> None:
        self._check("rho", self.rho)

    def __str__(self) -> str:
        return f"ρ = {self.rho:g}"


@dataclass(frozen=True)
class LocalDP(Budget):
    r"""A local guarantee ε_x: the ε-DP inequality for *this* data set x and its neighbours only.

    ``Pr[M(x) ∈ S] <= e^{ε_x} Pr[M(y) ∈ S]`` (and the reverse) for every y made from x by the
    release's neighbouring step — not for every pair of neighbouring data sets. It is what the
    pseudo-posterior mechanism gives (Savitsky, Williams & Hu 2022: ε_x = 2Δ_{α,x}, computed from
    the data; asymptotic DP as n grows). It is *not* worst-case DP: it never counts against a DP cap
    (:func:`dipsy.privacy.composition.total_as` refuses it there) and the ledger records it apart.
    Local guarantees for the same x compose by adding their ε_x (the density-ratio bounds multiply).

    >>> LocalDP(1.5) + LocalDP(0.5)
    LocalDP(epsilon=2.0)
    """

    definition: ClassVar[str] = "local"
    epsilon: float

    def __post_init__(self) -> None:
        self._check("epsilon", self.epsilon)

    def __str__(self) -> str:
        return f"local ε_x = {self.epsilon:g}"


BUDGET_TYPES: dict[str, type[Budget]] = {b.definition: b for b in (PureDP, ApproxDP, ZCDP, LocalDP)}

_B = TypeVar("_B", bound=Budget)


def of_kind(budget: Budget, kind: type[_B]) -> _B:
    """``budget``, checked to be a ``kind``: how a method reads the amounts of its own definition
    from a spent or remaining total.

    >>> of_kind(ZCDP(0.5), ZCDP).rho
    0.5
    """
    if not isinstance(budget, kind):
        raise BudgetError(f"{budget} is not a {kind.definition} budget", "give the budget in the method's definition")
    return budget
