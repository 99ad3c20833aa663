r"""Each measurement's privacy loss on the worst-case pair, against the cost it states.

For a measurement that ran (:class:`~dipsy.audit.record.Recorded`), let ``a`` and ``b`` be the
exact answers of its query on D and on D', and ``P``, ``Q`` the laws of the mechanism that ran on
them. Everything measured before it is fixed on this run (an adaptive method built the query and
the mechanism from those outputs), so ``P`` and ``Q`` are its laws *given* the run so far. The
stated cost of a measurement is a privacy map: it bounds the loss for every pair of neighbours and
every history (that is what the composition theorems the accountant applies assume: Dwork & Roth
2014, Thm 3.16; Bun & Steinke 2016, Lemma 2.3; Rogers, Roth, Ullman & Vadhan 2016 for the
filter). So a loss between ``P`` and ``Q`` above the stated cost refutes it, in its currency:

- **exact**, where the mechanism has its laws (:meth:`~dipsy.privacy.measurement.Mechanism.privacy_loss`;
  the discrete and continuous Laplace, the discrete Gaussian, the exponential mechanisms, the
  smoothed histogram's draw, modips's count sanitizer, and their compositions): ε for a pure-DP
  cost, ρ (sup over α of ``D_α/α``) for a zCDP cost, ``δ(ε)`` for an (ε, δ) cost — each exact or
  a lower bound (:mod:`dipsy.privacy.loss`), with no sampling error: the *ceiling* of the
  procedure is +∞;
- **sampled**, where no law is at hand (the posterior draws): the mechanism is run ``draws`` times
  on each answer; one half of the draws picks the event ``{feature >= t}`` or ``{feature <= t}``
  (a coordinate of the output, or the difference of two) and the direction with the largest
  empirical bound, the other half estimates it, and the bound is

      ε_lower = log((CP_lower(k₁, N) − δ) / CP_upper(k₀, N)),

  Clopper & Pearson (1934) intervals at ``α/2`` each, so the bound holds with probability
  ``1 − α`` (α = 0.05): an (ε, δ)-DP mechanism has ``P(E) <= e^ε Q(E) + δ`` for every event
  (Ding, Wang, Wang, Zhang & Kifer 2018; Jagielski, Ullman & Oprea 2020). Choosing the event on
  other draws keeps the estimate unbiased. Its ceiling, the largest bound ``N`` draws can give
  (``k₁ = N``, ``k₀ = 0``), is :func:`ceiling`: 7.9 at 20,000 draws (N = 10,000).

A check is *flagged* when the loss found exceeds the cost stated by more than the budgets'
relative :data:`~dipsy.privacy.budget.TOLERANCE` (float rounding: an honest measurement at a
worst-case pair attains its cost exactly), and *testable* when its ceiling exceeds the cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..methods.marginals.sets import Composed
from ..privacy.budget import TOLERANCE, ZCDP, ApproxDP, Budget, PureDP
from ..privacy.loss import PrivacyLoss
from ..privacy.measurement import Mechanism
from ..privacy.rng import Randomness
from .record import Recorded

#: The family-wise error of a sampled bound: each Clopper–Pearson interval at α/2.
ALPHA = 0.05
#: Draws of a sampled mechanism on each of the two answers (the default).
DRAWS = 20_000
#: Above this many output coordinates only the coordinates are events, not their differences.
PAIRED = 32
#: At most this many thresholds per feature (quantiles of the pooled draws when there are more values).
THRESHOLDS = 256


@dataclass(frozen=True)
class Check:
    """A privacy loss found, against the cost stated for it.

    ``measure`` names the currency (``ε``, ``ρ``, ``δ(ε = …)``); ``ceiling`` is the largest value
    the procedure could report (+inf when exact); ``how`` says how it was found.
    """

    label: str
    measure: str
    found: float
    stated: float
    ceiling: float
    how: str

    @property
    def flagged(self) -> bool:
        """The loss found refutes the cost stated."""
        return self.found > self.stated * (1 + TOLERANCE)

    @property
    def testable(self) -> bool:
        """The procedure could have refuted the cost stated."""
        return self.ceiling > self.stated * (1 + TOLERANCE)

    @property
    def ratio(self) -> float:
        """found / stated (0 when nothing is stated and nothing found)."""
        if self.stated > 0:
            return self.found / self.stated
        return math.inf if self.found > 0 else 0.0


def lower_bound(k1: int, k0: int, n: int, delta: float = 0.0, alpha: float = ALPHA) -> float:
    """``log((CP_lower(k₁) − δ)/CP_upper(k₀))`` at α/2 each (−inf when the numerator is not positive).

    >>> round(lower_bound(500, 50, 1000), 3)
    1.969
    """
    return float(_lower_bounds(np.array([k1]), np.array([k0]), n, delta, alpha)[0])


def ceiling(draws: int, delta: float = 0.0) -> float:
    """The largest sampled bound on ``draws`` draws of each answer (half of them estimate it).

    >>> round(ceiling(20_000), 2)
    7.9
    """
    n = draws - draws // 2
    return lower_bound(n, 0, n, delta)


def _lower_bounds(k1: np.ndarray, k0: np.ndarray, n: int, delta: float, alpha: float = ALPHA) -> np.ndarray:
    low = np.where(k1 > 0, stats.beta.ppf(alpha / 2, np.maximum(k1, 1), n - k1 + 1), 0.0)
    high = np.where(k0 < n, stats.beta.ppf(1 - alpha / 2, k0 + 1, np.maximum(n - k0, 1)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(low - delta > 0, np.log(np.maximum(low - delta, 1e-300) / high), -np.inf)


def checks(record: Recorded, draws: int = DRAWS, seed: int = 0) -> list[Check]:
    """The loss of ``record``'s mechanism against its stated cost; for a :class:`Composed`
    measurement (several parts charged as one), each part against its own cost too."""
    m = record.measurement
    out = [check(m.label, m.cost, record.ran, record.answer, record.neighbour, draws, seed)]
    if isinstance(m.mechanism, Composed):
        assert isinstance(record.ran, Composed), "a Composed measurement runs a Composed mechanism (weakened or not)"
        for k, (label, stated, ran) in enumerate(zip(m.mechanism.labels, m.mechanism.parts, record.ran.parts)):
            out.append(
                check(f"{m.label} / {label}", stated.cost, ran, record.answer[k], record.neighbour[k], draws, seed + k + 1)
            )
    return out


def check(label: str, cost: Budget, mechanism: Mechanism, a: Any, b: Any, draws: int = DRAWS, seed: int = 0) -> Check:
    """``mechanism``'s loss between the answers ``a`` and ``b``, against ``cost``: exact where it
    has its laws, else sampled."""
    loss = mechanism.privacy_loss(a, b)
    if loss is not None:
        return exact(label, cost, loss)
    return sampled(label, cost, mechanism, a, b, draws, seed)


def exact(label: str, cost: Budget, loss: PrivacyLoss) -> Check:
    """The exact loss (or its lower bound, :mod:`dipsy.privacy.loss`) in ``cost``'s currency."""
    if isinstance(cost, PureDP):
        return Check(label, "ε", loss.epsilon, cost.epsilon, math.inf, "exact")
    if isinstance(cost, ZCDP):
        return Check(label, "ρ", loss.rho, cost.rho, math.inf, "exact")
    if isinstance(cost, ApproxDP):
        return Check(
            label, f"δ(ε = {cost.epsilon:.4g})", loss.delta(cost.epsilon * (1 + TOLERANCE)), cost.delta, math.inf, "exact"
        )
    raise ValueError(f"{label}: the audit has no check for a {cost.definition} cost")


def sampled(label: str, cost: Budget, mechanism: Mechanism, a: Any, b: Any, draws: int = DRAWS, seed: int = 0) -> Check:
    """A Clopper–Pearson lower bound on ε from ``draws`` runs of ``mechanism`` on each answer."""
    if isinstance(cost, PureDP):
        delta = 0.0
    elif isinstance(cost, ApproxDP):
        delta = cost.delta
    else:  # a bound on ε says nothing against a ρ without a conversion the audit does not make
        raise ValueError(f"{label}: no exact loss for a {cost.definition} cost, and sampling bounds ε only")
    rand = Randomness.from_seed(seed)
    first = np.array([_flat(mechanism.randomise(a, rand)) for _ in range(draws)])
    second = np.array([_flat(mechanism.randomise(b, rand)) for _ in range(draws)])
    found, event = _bound(first, second, delta)
    return Check(
        label, "ε", found, cost.epsilon, ceiling(draws, delta), f"Clopper–Pearson (95 %), {draws:,} draws of each: {event}"
    )


def _flat(output: Any) -> np.ndarray:
    """A mechanism's output (an array, a number, or a tuple or list of them) as one float vector."""
    if isinstance(output, (tuple, list)):
        return np.concatenate([_flat(x) for x in output]) if output else np.zeros(0)
    return np.ravel(np.asarray(output, dtype=float))


def _features(x: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Each coordinate, and the difference of every two (a substitution moves two at once)."""
    k = x.shape[1]
    out = [(f"output {i}", x[:, i]) for i in range(k)]
    if k <= PAIRED:
        out += [(f"output {i} − output {j}", x[:, i] - x[:, j]) for i in range(k) for j in range(i + 1, k)]
    return out


def _counts(values: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How many ``values`` are ``>= t`` and ``<= t``, for each threshold ``t``."""
    s = np.sort(values)
    return len(s) - np.searchsorted(s, thresholds, "left"), np.searchsorted(s, thresholds, "right")


def _bound(first: np.ndarray, second: np.ndarray, delta: float) -> tuple[float, str]:
    """Pick the event and its direction on the first half of the draws, bound it on the second."""
    half = len(first) // 2
    n, m = half, len(first) - half
    best = -math.inf
    choice: tuple[str, str, float, str] | None = None
    for (name, fa), (_, fb) in zip(_features(first[:half]), _features(second[:half])):
        pooled = np.concatenate([fa, fb])
        thresholds = np.unique(pooled)
        if thresholds.size > THRESHOLDS:
            thresholds = np.unique(np.quantile(pooled, np.linspace(0, 1, THRESHOLDS)))
        (a_ge, a_le), (b_ge, b_le) = _counts(fa, thresholds), _counts(fb, thresholds)
        for op, ka, kb in ((">=", a_ge, b_ge), ("<=", a_le, b_le)):
            for direction, k1, k0 in (("D over D'", ka, kb), ("D' over D", kb, ka)):
                bounds = _lower_bounds(k1, k0, n, delta)
                i = int(np.argmax(bounds))
                if choice is None or bounds[i] > best:
                    best, choice = bounds[i], (name, op, thresholds[i], direction)
    if choice is None:
        raise ValueError("the draws have no output to compare")
    name, op, t, direction = choice
    index = [f for f, _ in _features(first[:1])].index(name)
    fa, fb = _features(first[half:])[index][1], _features(second[half:])[index][1]
    hits_a, hits_b = (int((fa >= t).sum()), int((fb >= t).sum())) if op == ">=" else (int((fa <= t).sum()), int((fb <= t).sum()))
    top, bottom = (hits_a, hits_b) if direction == "D over D'" else (hits_b, hits_a)
    return lower_bound(top, bottom, m, delta), f"{name} {op} {t:g} ({direction})"


def composed(records: list[Recorded], found: list[list[Check]], total: Budget) -> Check:
    r"""The measurements' losses composed, against the statement's total.

    The exact losses compose as independent outputs (:class:`~dipsy.privacy.loss.PrivacyLoss`
    ``+``): the loss of these very measurements run as a fixed sequence on (D, D') — for an
    adaptive method, one of the sequences its privacy filter admits, so within the total if the
    filter's guarantee holds (Rogers, Roth, Ullman & Vadhan 2016). A sampled measurement adds its
    bound to a pure ε (the maximum log ratio of a product is the sum of the factors'; each bound
    holds at 95 %, so the sum at ``1 − 0.05 k`` for ``k`` of them, by the union bound), and is left
    out of a ρ or a δ (leaving a factor out only lowers them: a lower bound still).
    """
    loss = PrivacyLoss()
    bounds = []
    for record, mine in zip(records, found):
        exact_loss = record.ran.privacy_loss(record.answer, record.neighbour)
        if exact_loss is None:
            bounds.append(mine[0])
        else:
            loss = loss + exact_loss
    how = "exact" if not bounds else f"exact, and {len(bounds)} sampled"
    if isinstance(total, PureDP):
        top = sum(c.ceiling for c in bounds) + loss.epsilon if bounds else math.inf
        return Check("all measurements", "ε", loss.epsilon + sum(max(c.found, 0.0) for c in bounds), total.epsilon, top, how)
    how = "exact" if not bounds else f"exact ({len(bounds)} sampled left out: a lower bound)"
    if isinstance(total, ZCDP):
        return Check("all measurements", "ρ", loss.rho, total.rho, math.inf, how)
    if isinstance(total, ApproxDP):
        return Check(
            "all measurements",
            f"δ(ε = {total.epsilon:.4g})",
            loss.delta(total.epsilon * (1 + TOLERANCE)),
            total.delta,
            math.inf,
            how,
        )
    raise ValueError(f"the audit has no check for a {total.definition} total")
