r"""The session: the only holder of the confidential engine during a release.

A method's ``fit`` gets a :class:`Session`, never the engine. ``session.measure(m)``

1. refuses a measurement the plan did not budget: it must be one of the plan's own measurement
   objects (each runs once), or, for an adaptive method, fit within the plan's declared adaptive
   total (a *privacy filter*: Rogers, Roth, Ullman & Vadhan 2016; Whitehouse et al. 2023 — the
   filter's guarantee is the declared total whatever order or choice of measurements the method
   makes, since each step is admitted only while the composed total stays within it);
2. refuses a measurement under another neighbouring relation than the release's;
3. charges the accountant (which refuses to pass the declared total);
4. only then reads the engine and randomises the answer (:meth:`Measurement.run`).

A mechanism whose cost is a function of the data (:attr:`Measurement.mechanism.data_dependent`:
the pseudo-posterior mechanism's local ε_x = 2Δ_{α,x}) cannot be charged before it runs. It is
admitted only in a session whose total is a local guarantee (:class:`~dipsy.privacy.budget.LocalDP`,
never a DP one); it runs, then its measured cost is charged, and a cost past the total (the ceiling
the operator gave) discards the output: nothing is released. Its statement is local, not DP.

What comes back is the noisy answer; everything the method does with it afterwards is
post-processing. :attr:`Session.ran` lists the measurements that ran: the release's statement is
computed from them (:func:`dipsy.methods.base.build_statement`), never written beside them.

``tamper`` exists for the audit (:mod:`dipsy.audit`) only: it replaces each measurement just
before it runs, after its charge, and the session charges and lists the original. The audit swaps
in a weakened mechanism (half the noise, half the prior) while the statement still claims the
original cost, to show it catches a broken release; a mechanism that notes each answer before it
draws, exactly as the original does; or a query that answers what it answered on another data set
(the replay).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..errors import BudgetError, PrivacyError
from .accountant import Accountant, Spend
from .budget import Budget, LocalDP
from .measurement import Measurement
from .relation import Relation
from .rng import Randomness


class Session:
    """Runs the measurements of one release against ``engine``, charging each first.

    Parameters
    ----------
    engine
        The confidential data (held privately: methods never see it).
    total
        The declared total of the plan: the sum of its measurements' costs and its adaptive part.
    relation
        The release's neighbouring relation; every measurement must be under it.
    rand
        The run's randomness.
    planned
        The plan's own measurements; each may run once.
    adaptive
        Whether measurements built during ``fit`` may run within what ``total`` leaves.
    """

    def __init__(
        self,
        engine: Any,
        total: Budget,
        relation: Relation,
        rand: Randomness,
        planned: Sequence[Measurement] = (),
        adaptive: bool = False,
        tamper: Callable[[Measurement], Measurement] | None = None,
    ) -> None:
        self._engine = engine
        self._accountant = Accountant(total)
        self.relation = relation
        self._rand = rand
        self._planned = list(planned)
        self._adaptive = adaptive
        self._tamper = tamper
        self._ran: list[Measurement] = []
        self._published: list[tuple[Measurement, Any]] = []
        self._answers: dict = {}
        self._domain = None

    @property
    def domain(self):
        """The public domain of the columns in scope."""
        return self._domain if self._engine is None else self._engine.domain

    @property
    def ran(self) -> tuple[Measurement, ...]:
        return tuple(self._ran)

    @property
    def published(self) -> tuple[tuple[Measurement, Any], ...]:
        """The measurements marked :attr:`~Measurement.published` that ran, each with its noisy answer."""
        return tuple(self._published)

    @property
    def spends(self) -> tuple[Spend, ...]:
        return self._accountant.spends

    @property
    def spent(self) -> Budget:
        return self._accountant.spent

    def remaining(self) -> Budget:
        return self._accountant.remaining()

    def measure(self, m: Measurement) -> Any:
        """Charge ``m``'s cost, then read and randomise; refuse anything the plan did not budget."""
        if self._engine is None:
            raise PrivacyError(
                "this session is closed: every measurement of the release has run",
                "measure inside fit(); sampling is post-processing only",
            )
        if m.relation != self.relation:
            raise PrivacyError(
                f"{m.label!r} is private under {m.relation}, the release under {self.relation}",
                "build every measurement under the plan's relation",
            )
        planned = next((k for k, p in enumerate(self._planned) if p is m), None)
        if planned is None and not self._adaptive:
            raise PrivacyError(
                f"{m.label!r} was not budgeted by the plan (or has run already)",
                "declare every measurement in plan(), or declare an adaptive total",
            )
        local = m.mechanism.data_dependent  # its cost is known only once it has run: charged after
        if local and not isinstance(self._accountant.budget, LocalDP):
            raise PrivacyError(
                f"{m.label!r} has a cost computed from the data, which only a local guarantee may have",
                "a DP release charges every measurement before it reads",
            )
        if not local:
            self._charge(m, "would pass the plan's declared total ({})", "declare a larger adaptive total, or measure less")
        if planned is not None:
            del self._planned[planned]
        self.report(f"measuring {m.label}", len(self._ran) + 1, len(self._ran) + 1 + len(self._planned))
        run = self._tamper(m) if self._tamper is not None and not local else m
        out = run.run(self._engine, self._rand, self._answers)
        if local:
            m = replace(m, mechanism=m.mechanism.measured(out))
            self._charge(
                m,
                "measured a local guarantee past the ceiling the release was given ({}); nothing was released",
                "raise --epsilon (the largest ε_x to release), or weight the records down more (e.g. option target=)",
            )
        self._ran.append(m)
        if m.published:
            self._published.append((m, out))
        return out

    def _charge(self, m: Measurement, problem: str, fix: str) -> None:
        try:
            self._accountant.spend(m.label, m.cost)
        except BudgetError as e:
            raise PrivacyError(f"{m.label!r} " + problem.format(e.problem), fix) from None

    #: Told of long steps during ``fit`` (a progress display): what, how far, out of how many.
    reporter: Callable[[str, int, int], None] | None = None

    def report(self, what: str, done: int = 0, total: int = 0) -> None:
        if self.reporter is not None:
            self.reporter(what, done, total)

    def close(self) -> None:
        """Drop the engine and every exact answer: nothing more can be measured (the public domain stays)."""
        self._domain = getattr(self._engine, "domain", None)
        self._engine = None
        self._answers.clear()
