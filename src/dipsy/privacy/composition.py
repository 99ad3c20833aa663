r"""Budgets across privacy definitions: what a run may spend, and what a data set has spent.

:func:`requested_budget` turns what a user gives — ε; ε and δ; or ρ — into the budget a method
spends in its own definition. A zCDP method given (ε, δ) gets the largest ρ whose guarantee
converts to (ε, δ)-DP (Canonne, Kamath & Steinke 2020, via :mod:`.conversions`).

:func:`total_as` adds a data set's spends, which may mix definitions across releases, in the
definition of its cap, by these valid compositions:

- ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4), and ε-DP is (ε, 0)-DP;
- ρ's add (Bun & Steinke 2016, Lemma 1.7); (ε, δ)'s add componentwise (basic composition,
  Dwork, Kenthapadi et al. 2006, and for pure and approximate DP mixed, Dwork & Roth 2014 Thm 3.16);
- under an (E, D) cap, all zCDP spends are first added as ρ and converted once, at the δ the cap
  leaves after the approximate-DP spends, ``δ_z = D − Σ δ_i``: the total is
  ``(Σ ε_i + ε(Σρ, δ_z), D)`` — the zCDP part converted at its own δ, then basic composition.

(ε, δ) spends cannot be expressed as zCDP or as pure DP; a cap in those definitions refuses them.

>>> from dipsy.privacy.budget import ApproxDP, PureDP, ZCDP
>>> total_as(ZCDP(1.0), [PureDP(1.0), ZCDP(0.25)])
ZCDP(rho=0.75)
>>> round(total_as(ApproxDP(10, 1e-6), [PureDP(1.0), ZCDP(0.5)]).epsilon, 3)
6.222
"""

from __future__ import annotations

import re
from typing import Iterable

from ..errors import BudgetError, DipsyError
from .budget import ZCDP, ApproxDP, Budget, PureDP, positive
from .conversions import approx_to_zcdp, zcdp_to_epsilon


def requested_budget(definition: str, epsilon=None, delta=None, rho=None) -> tuple[Budget, float | None]:
    """The budget a method of ``definition`` spends, and the δ its statement is also given at.

    Parameters
    ----------
    definition
        The method's privacy definition: ``"pure-DP"``, ``"zCDP"`` or ``"approximate-DP"``.
    epsilon, delta, rho
        What the user gave (numbers or their text); None where not given.

    >>> round(requested_budget("zCDP", epsilon=1, delta=1e-9)[0].rho, 5)  # Bun–Steinke's inverse: 0.01178
    0.01497
    >>> requested_budget("pure-DP", epsilon="0.5")
    (PureDP(epsilon=0.5), None)
    """
    given = {k for k, v in {"epsilon": epsilon, "delta": delta, "rho": rho}.items() if v is not None}
    if delta is not None:
        delta = _delta(delta)
    if definition == "pure-DP":
        if given - {"epsilon"}:
            raise DipsyError("this method is ε-DP (pure): it takes --epsilon only", "leave out --delta and --rho")
        return PureDP(positive("epsilon", epsilon, "--epsilon")), None
    if definition == "zCDP":
        if rho is not None:
            if epsilon is not None:
                raise DipsyError("give either --rho or --epsilon with --delta, not both", "leave one of them out")
            return ZCDP(positive("rho", rho, "--rho")), delta
        if epsilon is None or delta is None:
            raise DipsyError("this method is ρ-zCDP: it needs --rho, or --epsilon with --delta",
                             "e.g. --epsilon 1 --delta 1e-9 (δ well below 1/n)")
        return ZCDP(approx_to_zcdp(positive("epsilon", epsilon, "--epsilon"), delta)), delta
    if definition == "approximate-DP":
        if rho is not None or epsilon is None or delta is None:
            raise DipsyError("this method is (ε, δ)-DP: it needs --epsilon and --delta", "e.g. --epsilon 1 --delta 1e-9")
        return ApproxDP(positive("epsilon", epsilon, "--epsilon"), delta), delta
    raise DipsyError(f"unknown privacy definition {definition!r}", "use pure-DP, zCDP or approximate-DP")


def total_as(cap: Budget, budgets: Iterable[Budget]) -> Budget:
    """The sum of ``budgets`` in the definition of ``cap`` (see the module's rules).

    Raises :class:`BudgetError` when a spend cannot be expressed in that definition, or when the
    approximate-DP spends leave no δ for the zCDP ones.
    """
    budgets = list(budgets)
    kinds = {type(b) for b in budgets}
    if isinstance(cap, PureDP):
        if kinds - {PureDP}:
            raise BudgetError("this data set's cap is pure ε-DP, and a zCDP or (ε, δ) release cannot count against it",
                              "set an (ε, δ) cap with --budget-cap EPSILON,DELTA")
        return PureDP(sum(b.epsilon for b in budgets))
    if isinstance(cap, ZCDP):
        if ApproxDP in kinds:
            raise BudgetError("this data set's cap is ρ-zCDP, and an (ε, δ) release cannot count against it",
                              "set an (ε, δ) cap with --budget-cap EPSILON,DELTA")
        return ZCDP(sum(b.rho if isinstance(b, ZCDP) else b.epsilon**2 / 2 for b in budgets))
    if isinstance(cap, ApproxDP):
        epsilon = sum(b.epsilon for b in budgets if not isinstance(b, ZCDP))
        delta = sum(b.delta for b in budgets if isinstance(b, ApproxDP))
        rho = sum(b.rho for b in budgets if isinstance(b, ZCDP))
        if rho == 0:
            return ApproxDP(epsilon, delta)
        left = cap.delta - delta
        if left <= 0:
            raise BudgetError(f"the (ε, δ) spends use δ = {delta:g} of the cap's {cap.delta:g}, leaving none for the zCDP ones",
                              "raise the cap's δ, or spend less δ")
        return ApproxDP(epsilon + zcdp_to_epsilon(rho, left), cap.delta)
    raise BudgetError(f"unknown cap {cap!r}", "give the cap as ε, 'ε,δ' or 'rho=ρ'")


def parse_cap(text: str | float | Budget) -> Budget:
    """A cap from the command line: ``"2"`` (ε-DP), ``"2,1e-6"`` ((ε, δ)-DP) or ``"rho=0.5"`` (zCDP).

    >>> parse_cap("2,1e-6"), parse_cap("rho=0.5"), parse_cap(3)
    (ApproxDP(epsilon=2.0, delta=1e-06), ZCDP(rho=0.5), PureDP(epsilon=3.0))
    """
    if isinstance(text, Budget):
        return text
    if not isinstance(text, str):
        return PureDP(positive("budget cap", text, "--budget-cap"))
    match = re.fullmatch(r"\s*rho\s*=\s*(\S+)\s*", text)
    if match:
        return ZCDP(positive("budget cap ρ", match.group(1), "--budget-cap"))
    parts = text.split(",")
    if len(parts) == 2:
        return ApproxDP(positive("budget cap ε", parts[0], "--budget-cap"), _delta(parts[1]))
    if len(parts) == 1:
        return PureDP(positive("budget cap", parts[0], "--budget-cap"))
    raise DipsyError(f"cannot read the budget cap {text!r}", "write it as 2 (ε), 2,1e-6 (ε, δ) or rho=0.5")


def statement_epsilon(rho: float, delta: float) -> float:
    """The ε at which ρ-zCDP is stated as (ε, δ)-DP in a release (CKS 2020, the tighter conversion)."""
    return zcdp_to_epsilon(rho, delta)


def _delta(value) -> float:
    try:
        d = float(value)
    except (TypeError, ValueError):
        d = float("nan")
    if isinstance(value, bool) or not 0 < d < 1:
        raise DipsyError(f"delta must lie in (0, 1), got {value!r}", "pass --delta with e.g. 1e-9 (well below 1/n)")
    return d
