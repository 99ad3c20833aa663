r"""Measurements: the one place where a release's privacy is both stated and spent.

A :class:`Measurement` is a frozen value made of

- a :class:`Query` against the engine — a contingency table, the valid values of some columns, a
  statistic computed from them — which says *what* is read;
- a :class:`Mechanism` — the noise (its distribution and scale) or the posterior draw, with its
  sensitivity and its privacy map (:attr:`Mechanism.cost`: the budget it spends) — which says
  *how* it is randomised;
- the typed neighbouring :class:`~dipsy.privacy.relation.Relation` under which the sensitivity, and
  so the cost, holds.

The same object states the spend and adds the noise: a method never computes a noise scale
anywhere else (the constructors ``for_budget`` turn a budget into a scale; the cost is computed
back from the scale). Only a :class:`~dipsy.privacy.session.Session` runs a measurement, after
charging its cost.

Privacy maps (each mechanism's docstring holds its proof or the citation):

============================  ============================================  =====================
mechanism                     released                                      cost
============================  ============================================  =====================
:class:`DiscreteLaplace`      ``q(x) + Z``, ``P(Z = z) ∝ exp(−|z|/s)``       ε = Δ₁/s
:class:`DiscreteGaussian`     ``q(x) + Z``, ``P(Z = z) ∝ exp(−z²/2σ²)``      ρ = Δ₂²/(2σ²)
:class:`Laplace`              ``q(x) + Lap(s)`` (floats)                    ε = Δ₁/s
:class:`PosteriorDraw`        a draw from a posterior (predictive)          proven per method
:class:`DeclaredPublic`       values declared public, as they are           0 (see the class)
pseudo-posterior draws        draws from a risk-weighted pseudo posterior   local ε_x = 2Δ_{α,x},
                              (:mod:`dipsy.methods.pseudo_posterior`)       computed from the data
============================  ============================================  =====================

The audit's broken variants (:meth:`Mechanism.weakened`) halve the noise or the prior while the
statement still claims the original cost: the audit (:mod:`dipsy.audit`) must catch them. It
compares each measurement's cost with the privacy loss of its mechanism between the answers on two
neighbouring data sets, :meth:`Mechanism.privacy_loss` (:mod:`dipsy.privacy.loss`): exact from
the output laws where they are known, each override's docstring saying why.
"""

from __future__ import annotations

import contextvars
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar, TypeVar

import numpy as np

from ..domain import Domain
from ..errors import PrivacyError
from .budget import ZCDP, Budget, PureDP, positive
from .loss import PrivacyLoss, discrete_gaussian_factor, discrete_laplace_factor, laplace_factor, shifts
from .relation import Relation
from .rng import Randomness
from .samplers import discrete_gaussian, discrete_laplace, laplace, to_fraction

#: σ² of the discrete Gaussian is rounded up to a multiple of 1/DENOMINATOR: exact, cheap for the
#: sampler, and costing at most a relative 1/(DENOMINATOR·σ²) of the budget.
DENOMINATOR = 1024

#: The measurement being run, if any (the spy tests check that every noise draw happens inside one).
ACTIVE: contextvars.ContextVar[Measurement | None] = contextvars.ContextVar("dipsy_active_measurement", default=None)


# -- queries ------------------------------------------------------------------------------------


class Query(ABC):
    """What a measurement reads from the confidential data, through the engine only."""

    @abstractmethod
    def answer(self, engine: Any) -> Any:
        """The exact answer (private: it never leaves the measurement un-noised)."""

    @abstractmethod
    def describe(self) -> str:
        """The query in words, for the statement and the spends' labels."""


@dataclass(frozen=True)
class Table(Query):
    """The dense contingency table (flat int64 counts, C order) of ``columns``; over ``domain``'s
    bins when given (the same columns and bounds, other bins: see ``Engine.rebinned``)."""

    columns: tuple[str, ...]
    domain: Domain | None = None

    def answer(self, engine: Any) -> np.ndarray:
        source = engine if self.domain is None else engine.rebinned(self.domain)
        try:
            return np.asarray(source.contingency(self.columns, form="dense").counts, dtype=np.int64)
        finally:
            if source is not engine and hasattr(source, "close"):
                source.close()

    def describe(self) -> str:
        return f"the counts of the {' × '.join(self.columns)} table" if self.columns else "the number of rows"


@dataclass(frozen=True)
class Total(Query):
    """The number of valid rows, as a length-1 vector."""

    def answer(self, engine: Any) -> np.ndarray:
        return np.array([engine.num_rows()], dtype=np.int64)

    def describe(self) -> str:
        return "the number of rows"


@dataclass(frozen=True)
class Statistic(Query):
    """A statistic computed by ``compute(engine)`` — e.g. sums of clipped values, or dependency
    scores from two-way tables. Its sensitivity is proven where ``compute`` is defined."""

    name: str
    compute: Callable[[Any], Any] = field(compare=False)

    def answer(self, engine: Any) -> Any:
        return self.compute(engine)

    def describe(self) -> str:
        return self.name


# -- mechanisms ---------------------------------------------------------------------------------


class Mechanism(ABC):
    """Randomises a query's answer; declares what that costs (its privacy map)."""

    #: Whether the noise comes from an exact sampler (integer arithmetic on exact uniform integers,
    #: :mod:`dipsy.privacy.samplers`); False for floating-point draws (NumPy's gamma, multinomial,
    #: Laplace), whose guarantee is for the ideal distribution (Mironov 2012's caveat).
    exact: ClassVar[bool] = True
    #: Whether the cost is a function of the data, known only after the run (a local guarantee,
    #: :class:`~dipsy.privacy.budget.LocalDP`): the session then charges it after the read, and
    #: only under a local total — never in a DP release.
    data_dependent: ClassVar[bool] = False

    @property
    @abstractmethod
    def cost(self) -> Budget:
        """The budget one run spends, under the measurement's relation."""

    @abstractmethod
    def randomise(self, answer: Any, rand: Randomness) -> Any:
        """The released value."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The noise, as ``release.json`` states it (distribution, scale, variance)."""

    def measured(self, output: Any) -> Mechanism:
        """A data-dependent mechanism with its cost filled in from its ``output`` (see
        :attr:`data_dependent`); every other mechanism's cost is fixed beforehand."""
        return self

    def weakened(self, factor: float) -> Mechanism:
        """The same mechanism with ``factor`` times its noise scale (or prior strength; 0.5: half
        the noise) — the audit's broken variants only; the cost it states is *not* updated."""
        raise NotImplementedError(f"{type(self).__name__} has no weakened variant")

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss | None:
        """The privacy loss between this mechanism's output laws on the answers ``a`` and ``b``
        (:mod:`dipsy.privacy.loss`), for the audit; None where no law is at hand (the audit then
        samples :meth:`randomise`). Each override proves its computation in its docstring."""
        return None


def discrete_laplace_variance(scale: Fraction | float) -> float:
    """Variance of the discrete Laplace with ``P(z) ∝ exp(-|z|/scale)``: ``2q/(1 − q)²``, ``q = e^{−1/scale}``.

    >>> round(discrete_laplace_variance(Fraction(1)), 6)
    1.841347
    """
    q = math.exp(-1 / float(scale))
    return 2 * q / (1 - q) ** 2


@dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    r"""Exact discrete Laplace noise on an integer vector of L1 sensitivity Δ₁: ε = Δ₁/scale.

    Proof: ``P(z)/P(z + d) = exp(|d|/s)`` at most, and the shifts of neighbouring answers add up to
    Δ₁ over the coordinates, so every output's probability changes by at most ``exp(Δ₁/s)``
    (Ghosh, Roughgarden & Sundararajan 2009; Canonne, Kamath & Steinke 2020, §4). Drawn exactly
    (:func:`dipsy.privacy.samplers.discrete_laplace`), so Mironov's (2012) attack does not apply.

    >>> DiscreteLaplace.for_budget(PureDP(0.5), 2).scale, DiscreteLaplace.for_budget(PureDP(0.5), 2).cost
    (Fraction(4, 1), PureDP(epsilon=0.5))
    """

    scale: Fraction
    sensitivity: Fraction = Fraction(1)

    @classmethod
    def for_budget(cls, budget: PureDP, sensitivity: Any = 1) -> DiscreteLaplace:
        return cls.for_epsilon(budget.epsilon, sensitivity)

    @classmethod
    def for_epsilon(cls, epsilon: Any, sensitivity: Any = 1) -> DiscreteLaplace:
        """Scale Δ₁/ε exactly, for an ε given as a number, its text or a Fraction (ε/7 stays exact)."""
        return cls(to_fraction(sensitivity) / to_fraction(epsilon), to_fraction(sensitivity))

    @property
    def cost(self) -> PureDP:
        return PureDP(float(self.sensitivity / self.scale))

    def randomise(self, answer: Any, rand: Randomness) -> np.ndarray:
        counts = np.asarray(answer, dtype=np.int64)
        return counts + discrete_laplace(self.scale, counts.shape, rand)

    def describe(self) -> dict[str, Any]:
        v = discrete_laplace_variance(self.scale)
        return {
            "distribution": "discrete Laplace: P(e = z) proportional to exp(-|z| / scale)",
            "scale": str(self.scale),
            "scale_value": float(self.scale),
            "sensitivity": str(self.sensitivity),
            "variance": v,
            "sd": math.sqrt(v),
        }

    def weakened(self, factor: float) -> DiscreteLaplace:
        return replace(self, scale=self.scale * to_fraction(factor))

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss:
        """Exact: the coordinates are independent, each a :func:`~dipsy.privacy.loss.discrete_laplace_factor`
        of its shift; the pure loss is ``‖a − b‖₁/scale``, attained.

        >>> DiscreteLaplace(Fraction(1, 2)).privacy_loss([0, 1], [1, 0]).epsilon
        4.0
        """
        return PrivacyLoss(tuple(discrete_laplace_factor(int(d), float(self.scale), k) for d, k in shifts(a, b).items()))


@dataclass(frozen=True)
class DiscreteGaussian(Mechanism):
    r"""Exact discrete Gaussian noise on an integer vector of L2 sensitivity Δ₂: ρ = Δ₂²/(2σ²)-zCDP.

    Canonne, Kamath & Steinke 2020, Theorem 4 and its multivariate form (the same ρ as the
    continuous Gaussian mechanism, Bun & Steinke 2016, Lemma 2.5; METHODS.md §0.4). Given ρ,
    :meth:`for_budget` takes the least σ² on the 1/1024 grid with ``Δ²/(2σ²) <= ρ`` — rounded *up*,
    so the noise is never smaller than the budget allows. When one individual owns up to θ rows
    of a table, Δ₂ = θ (all their rows in one cell is the worst case; METHODS.md §0.1).

    >>> DiscreteGaussian.for_budget(ZCDP(0.5)).sigma2, DiscreteGaussian.for_budget(ZCDP(0.5)).cost
    (Fraction(1, 1), ZCDP(rho=0.5))
    """

    sigma2: Fraction
    sensitivity: Fraction = Fraction(1)

    @classmethod
    def for_budget(cls, budget: ZCDP, sensitivity: Any = 1) -> DiscreteGaussian:
        rho, delta = positive("rho", budget.rho), to_fraction(sensitivity)
        exact = delta**2 / (2 * Fraction(rho))
        return cls(Fraction(math.ceil(exact * DENOMINATOR), DENOMINATOR), delta)

    @property
    def sd(self) -> float:
        return math.sqrt(self.sigma2)

    @property
    def cost(self) -> ZCDP:
        return ZCDP(float(self.sensitivity**2 / (2 * self.sigma2)))

    def randomise(self, answer: Any, rand: Randomness) -> np.ndarray:
        counts = np.asarray(answer, dtype=np.int64)
        return counts + discrete_gaussian(self.sigma2, counts.shape, rand)

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "discrete Gaussian: P(e = z) proportional to exp(-z² / (2 σ²))",
            "sigma2": str(self.sigma2),
            "variance": float(self.sigma2),
            "sd": self.sd,
            "sensitivity": str(self.sensitivity),
        }

    def weakened(self, factor: float) -> DiscreteGaussian:
        return replace(self, sigma2=self.sigma2 * to_fraction(factor) ** 2)

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss:
        """Exact in ρ: independent coordinates, each a :func:`~dipsy.privacy.loss.discrete_gaussian_factor`
        of its integer shift, so ρ = ``‖a − b‖₂²/(2σ²)``, attained at α = 2.

        >>> round(DiscreteGaussian(Fraction(1)).privacy_loss([0, 0], [1, 1]).rho, 9)
        1.0
        """
        return PrivacyLoss(tuple(discrete_gaussian_factor(int(d), float(self.sigma2), k) for d, k in shifts(a, b).items()))


@dataclass(frozen=True)
class Laplace(Mechanism):
    r"""Laplace noise on a real vector of L1 sensitivity Δ₁: ε = Δ₁/scale (Dwork, McSherry, Nissim
    & Smith 2006). Floating-point noise: for real-valued statistics only (Mironov's caveat,
    :func:`dipsy.privacy.samplers.laplace`).

    >>> Laplace.for_budget(PureDP(2.0), 3.0).cost
    PureDP(epsilon=2.0)
    """

    scale: float
    sensitivity: float = 1.0
    exact: ClassVar[bool] = False

    @classmethod
    def for_budget(cls, budget: PureDP, sensitivity: float) -> Laplace:
        return cls(sensitivity / budget.epsilon, float(sensitivity))

    @property
    def cost(self) -> PureDP:
        return PureDP(self.sensitivity / self.scale)

    def randomise(self, answer: Any, rand: Randomness) -> np.ndarray:
        values = np.asarray(answer, dtype=float)
        return values + laplace(self.scale, values.shape, rand)

    def describe(self) -> dict[str, Any]:
        return {
            "distribution": "Laplace (continuous)",
            "scale": self.scale,
            "sensitivity": self.sensitivity,
            "variance": 2 * self.scale**2,
            "sd": math.sqrt(2) * self.scale,
        }

    def weakened(self, factor: float) -> Laplace:
        return replace(self, scale=self.scale * factor)

    def privacy_loss(self, a: Any, b: Any) -> PrivacyLoss:
        """Exact in ε (``‖a − b‖₁/scale``, attained), binned below in ρ and δ:
        independent coordinates, each a :func:`~dipsy.privacy.loss.laplace_factor`.

        >>> Laplace(0.5).privacy_loss([0.0, 0.25], [0.5, 0.0]).epsilon
        1.5
        """
        return PrivacyLoss(tuple(laplace_factor(d, self.scale, k) for d, k in shifts(a, b).items()))


@dataclass(frozen=True)
class PosteriorDraw(Mechanism):
    r"""A draw from a posterior (predictive) given the exact answer: ``draw(answer, strength, rand)``.

    Its privacy map is method-specific and proven where the method defines it; the method states
    ``epsilon`` and ``bound(strength)``, the exact worst-case log ratio at this prior strength —
    which must not exceed ``epsilon`` (checked here, so a plan can never state less than its draw
    costs). ``strength`` is the prior's size (α, a, …): :meth:`weakened` shrinks it.
    """

    name: str
    epsilon: float
    strength: float
    draw: Callable[[Any, float, Randomness], Any] = field(compare=False)
    bound: Callable[[float], float] = field(compare=False)
    details: tuple[tuple[str, Any], ...] = ()
    exact: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.bound(self.strength) > self.epsilon * (1 + 1e-9):
            raise ValueError(
                f"{self.name}: a prior of {self.strength:g} gives ε = {self.bound(self.strength):g}, "
                f"more than the {self.epsilon:g} stated"
            )

    @property
    def cost(self) -> PureDP:
        return PureDP(self.epsilon)

    def randomise(self, answer: Any, rand: Randomness) -> Any:
        return self.draw(answer, self.strength, rand)

    def describe(self) -> dict[str, Any]:
        return {"distribution": self.name, "prior": self.strength, **dict(self.details)}

    def weakened(self, factor: float) -> PosteriorDraw:
        # bypasses the check on purpose: the broken variant states a cost it does not have
        broken = object.__new__(PosteriorDraw)
        for f in ("name", "epsilon", "draw", "bound", "details"):
            object.__setattr__(broken, f, getattr(self, f))
        object.__setattr__(broken, "strength", self.strength * factor)
        return broken


@dataclass(frozen=True)
class DeclaredPublic(Mechanism):
    r"""No noise: the ``columns`` the statement declares public, released as they are (cost zero).

    This is not a privacy mechanism but a declaration, made visible: a method that repeats some
    columns of the confidential records (the random decision trees labelling the records' own
    public columns, the pseudo-posterior's predictors) reads them through this measurement, so the
    read is listed in the statement beside the noisy ones. Its cost is zero *because* the
    guarantee is stated for neighbouring data sets that agree on these values: the measurement's
    relation must name every one of ``columns`` as public (:class:`Measurement` refuses it
    otherwise), and the release path refuses a relation whose public columns the domain does not
    declare ``role: public`` (:meth:`dipsy.methods.base.Synthesizer.check_roles`). ``columns`` is empty
    when only ``n`` is shown, which a relation that fixes ``n`` makes public.

    >>> DeclaredPublic(PureDP(0.0), ("age",)).cost
    PureDP(epsilon=0.0)
    """

    zero: Budget
    columns: tuple[str, ...] = ()

    @property
    def cost(self) -> Budget:
        return self.zero

    def randomise(self, answer: Any, rand: Randomness) -> Any:
        return answer

    def describe(self) -> dict[str, Any]:
        return {"distribution": "none: declared public and released as they are", "columns": list(self.columns)}

    def weakened(self, factor: float) -> DeclaredPublic:
        return self  # there is no noise to weaken


# -- the measurement ----------------------------------------------------------------------------

_Q = TypeVar("_Q", bound=Query)
_M = TypeVar("_M", bound=Mechanism)


@dataclass(frozen=True)
class Measurement:
    """One noisy measurement: query + mechanism + relation. Its ``cost`` is its mechanism's.

    >>> from dipsy.privacy.relation import ADD_REMOVE
    >>> m = Measurement("noisy table", Table(("x",)), DiscreteLaplace.for_budget(PureDP(1.0)), ADD_REMOVE)
    >>> m.cost
    PureDP(epsilon=1.0)
    """

    label: str
    query: Query
    mechanism: Mechanism
    relation: Relation
    #: The one synthetic set (0-based) this measurement serves; None for one every set uses. The
    #: statement's per-set guarantee composes what each set uses (:func:`dipsy.methods.base.build_statement`).
    set_index: int | None = None
    #: Whether the noisy answer itself is released beside the records (``release.json``'s
    #: ``published``): post-processing of a charged output, free (Dwork & Roth 2014, Prop. 2.1), and
    #: stated with the measurement. The declared analyses' tables are, for noise-aware intervals.
    published: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.mechanism, DeclaredPublic):
            if not set(self.mechanism.columns) <= set(self.relation.public):
                hidden = sorted(set(self.mechanism.columns) - set(self.relation.public))
                raise PrivacyError(
                    f"{self.label!r} releases {', '.join(hidden)} as they are, and its relation ({self.relation}) "
                    "does not leave them public",
                    "state the measurement under a relation that names them public",
                )
            if not self.mechanism.columns and not self.relation.fixes_n:
                raise PrivacyError(
                    f"{self.label!r} shows n, and its relation ({self.relation}) does not fix n",
                    "state it under a relation whose neighbours have the same rows",
                )

    @property
    def cost(self) -> Budget:
        return self.mechanism.cost

    def query_as(self, kind: type[_Q]) -> _Q:
        """The query, checked to be a ``kind`` (how a method's ``fit`` reads back the plan it made)."""
        if not isinstance(self.query, kind):
            raise PrivacyError(
                f"{self.label!r} measures a {type(self.query).__name__}, not the {kind.__name__} its method planned",
                "fit a plan with the method that made it",
            )
        return self.query

    def mechanism_as(self, kind: type[_M]) -> _M:
        """The mechanism, checked to be a ``kind`` (how a method reads back the noise it planned)."""
        if not isinstance(self.mechanism, kind):
            raise PrivacyError(
                f"{self.label!r} runs a {type(self.mechanism).__name__}, not the {kind.__name__} its method planned",
                "fit a plan with the method that made it",
            )
        return self.mechanism

    def run(self, engine: Any, rand: Randomness, answers: dict | None = None) -> Any:
        """Read and randomise. Only :meth:`dipsy.privacy.session.Session.measure` calls this.

        ``answers`` caches the exact answers of tables and totals within one session, so m sets
        measured from one table read it once (reading is no privacy event; each measurement's
        noise is its own).
        """
        token = ACTIVE.set(self)
        try:
            cache = answers if isinstance(self.query, (Table, Total)) else None
            if cache is not None and self.query in cache:
                answer = cache[self.query]
            else:
                answer = self.query.answer(engine)
                if cache is not None:
                    cache[self.query] = answer
            return self.mechanism.randomise(answer, rand)
        finally:
            ACTIVE.reset(token)

    def describe(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "query": self.query.describe(),
            "relation": self.relation.to_dict(),
            "noise": {**self.mechanism.describe(), "exact_sampler": self.mechanism.exact},
            **self.cost.to_dict(),
            **({"set": self.set_index + 1} if self.set_index is not None else {}),
            **({"published": "its noisy answer, beside the records"} if self.published else {}),
        }
