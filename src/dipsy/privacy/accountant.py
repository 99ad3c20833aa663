"""The accountant: records every spend with a label and refuses to pass its budget."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BudgetError
from .budget import Budget


@dataclass(frozen=True)
class Spend:
    """One charge against the budget: what it paid for, and how much."""

    label: str
    budget: Budget

    def to_dict(self) -> dict:
        return {"label": self.label, **self.budget.to_dict()}


class Accountant:
    """Spends under sequential composition, never more than ``budget`` in total.

    The check comes before the record: a refused spend leaves the accountant unchanged. Spends of
    another definition than the budget's are added in the budget's own by the valid compositions
    of :func:`dipsy.privacy.composition.total_as` (e.g. discrete Laplace ε-DP spends and discrete
    Gaussian ρ-zCDP spends under one (ε, δ) budget), or refused.

    >>> from dipsy.privacy.budget import PureDP
    >>> acc = Accountant(PureDP(1.0))
    >>> _ = acc.spend("set 1 of 2", PureDP(0.5))
    >>> _ = acc.spend("set 2 of 2", PureDP(0.5))
    >>> acc.spent
    PureDP(epsilon=1.0)
    >>> acc.spend("one more", PureDP(0.1))
    Traceback (most recent call last):
    ...
    dipsy.errors.BudgetError: 'one more' would spend ε = 0.1 with ε = 0 left of ε = 1; nothing was spent; give the release a larger budget, or spend less
    """

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._spends: list[Spend] = []
        self._spent: Budget = type(budget).zero()
        self._budgets: list[Budget] = []

    @property
    def spends(self) -> tuple[Spend, ...]:
        return tuple(self._spends)

    @property
    def spent(self) -> Budget:
        return self._spent

    def remaining(self) -> Budget:
        return type(self.budget)(
            **{k: max(v - getattr(self._spent, k), 0.0) for k, v in self.budget.to_dict().items() if k != "definition"}
        )

    def spend(self, label: str, budget: Budget) -> Spend:
        """Record ``budget`` under ``label``, or raise :class:`BudgetError` and record nothing."""
        from .composition import total_as  # composition imports this module's neighbours

        after = total_as(self.budget, [*self._budgets, budget])
        if after.exceeds(self.budget):
            raise BudgetError(
                f"{label!r} would spend {budget} with {self.remaining()} left of {self.budget}; nothing was spent",
                "give the release a larger budget, or spend less",
            )
        spend = Spend(label, budget)
        self._spends.append(spend)
        self._budgets.append(budget)
        self._spent = after
        return spend
