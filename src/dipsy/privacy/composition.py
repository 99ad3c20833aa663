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
A local guarantee (:class:`~dipsy.privacy.budget.LocalDP`) adds only to local ones: any DP budget or
cap refuses it, and a local total refuses DP spends (they are different statements).

:func:`total_under` first moves every spend into the cap's neighbouring relation by group privacy
(:func:`dipsy.privacy.relation.convert`), then adds them by :func:`total_as`;
:func:`conversion_table` lists what one spend of each kind counts as under each kind of cap.

>>> from dipsy.privacy.budget import ApproxDP, PureDP, ZCDP
>>> total_as(ZCDP(1.0), [PureDP(1.0), ZCDP(0.25)])
ZCDP(rho=0.75)
>>> round(total_as(ApproxDP(10, 1e-6), [PureDP(1.0), ZCDP(0.5)]).epsilon, 3)
6.222
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import BudgetError, DipsyError
from .budget import EPSILON_RANGE, RHO_RANGE, ZCDP, ApproxDP, Budget, LocalDP, PureDP, positive
from .conversions import approx_to_zcdp, zcdp_to_epsilon
from .relation import ADD_REMOVE, SUBSTITUTE, Relation, convert, group_factor, group_privacy, individual


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
    for name, value, (lo, hi) in (("epsilon", epsilon, EPSILON_RANGE), ("rho", rho, RHO_RANGE)):
        if value is not None and not lo <= positive(name, value, f"--{name}") <= hi:
            raise DipsyError(
                f"{name} must lie between {lo:g} and {hi:g}, got {value}",
                f"pass --{name} within that range (a smaller one gives noise that swamps the data, a larger one no privacy)",
            )
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
            raise DipsyError(
                "this method is ρ-zCDP: it needs --rho, or --epsilon with --delta",
                "e.g. --epsilon 1 --delta 1e-9 (δ well below 1/n)",
            )
        return ZCDP(approx_to_zcdp(positive("epsilon", epsilon, "--epsilon"), delta)), delta
    if definition == "local":
        if given - {"epsilon"}:
            raise DipsyError(
                "this method's guarantee is local (ε_x computed from the data): it takes at most --epsilon, "
                "the largest ε_x it may release",
                "leave out --delta and --rho",
            )
        # No ceiling given: the largest ε a budget may state (the release reports its own ε_x).
        return LocalDP(EPSILON_RANGE[1] if epsilon is None else positive("epsilon", epsilon, "--epsilon")), None
    if definition == "approximate-DP":
        if rho is not None or epsilon is None or delta is None:
            raise DipsyError("this method is (ε, δ)-DP: it needs --epsilon and --delta", "e.g. --epsilon 1 --delta 1e-9")
        return ApproxDP(positive("epsilon", epsilon, "--epsilon"), delta), delta
    raise DipsyError(f"unknown privacy definition {definition!r}", "use pure-DP, zCDP or approximate-DP")


def _epsilon(b: Budget) -> float:
    """The ε of an ε-DP, (ε, δ) or local budget (:func:`total_as` has refused the kinds it cannot add)."""
    if not isinstance(b, (PureDP, ApproxDP, LocalDP)):
        raise BudgetError(f"{b!r} states no ε to add", "report this bug")
    return b.epsilon


def total_as(cap: Budget, budgets: Iterable[Budget]) -> Budget:
    """The sum of ``budgets`` in the definition of ``cap`` (see the module's rules).

    Raises :class:`BudgetError` when a spend cannot be expressed in that definition, or when the
    approximate-DP spends leave no δ for the zCDP ones.
    """
    budgets = list(budgets)
    kinds = {type(b) for b in budgets}
    if isinstance(cap, LocalDP) or LocalDP in kinds:
        if not isinstance(cap, LocalDP) or kinds - {LocalDP}:
            raise BudgetError(
                "a local guarantee (ε_x for this data set only, e.g. the pseudo-posterior mechanism's) is not "
                "worst-case differential privacy and never counts against a DP budget or cap",
                "keep local-guarantee releases apart: the ledger records them without counting them",
            )
        return LocalDP(sum(_epsilon(b) for b in budgets))
    if isinstance(cap, PureDP):
        if kinds - {PureDP}:
            raise BudgetError(
                "this data set's cap is pure ε-DP, and a zCDP or (ε, δ) release cannot count against it",
                "set an (ε, δ) cap with --budget-cap EPSILON,DELTA",
            )
        return PureDP(sum(_epsilon(b) for b in budgets))
    if isinstance(cap, ZCDP):
        if ApproxDP in kinds:
            raise BudgetError(
                "this data set's cap is ρ-zCDP, and an (ε, δ) release cannot count against it",
                "set an (ε, δ) cap with --budget-cap EPSILON,DELTA",
            )
        return ZCDP(sum(b.rho if isinstance(b, ZCDP) else _epsilon(b) ** 2 / 2 for b in budgets))
    if isinstance(cap, ApproxDP):
        epsilon = sum(_epsilon(b) for b in budgets if not isinstance(b, ZCDP))
        delta = sum(b.delta for b in budgets if isinstance(b, ApproxDP))
        rho = sum(b.rho for b in budgets if isinstance(b, ZCDP))
        if rho == 0:
            return ApproxDP(epsilon, delta)
        left = cap.delta - delta
        if left <= 0:
            raise BudgetError(
                f"the (ε, δ) spends use δ = {delta:g} of the cap's {cap.delta:g}, leaving none for the zCDP ones",
                "raise the cap's δ, or spend less δ",
            )
        return ApproxDP(epsilon + zcdp_to_epsilon(rho, left), cap.delta)
    raise BudgetError(f"unknown cap {cap!r}", "give the cap as ε, 'ε,δ' or 'rho=ρ'")


def composed_total(budgets: Iterable[Budget], delta: float | None = None) -> Budget | None:
    """One total of DP spends made under one relation, in the least definition that expresses them
    all; None when no single total exists (ρ-zCDP and (ε, δ) spends with no ``delta`` to convert at).

    - ε-DP spends only: ε's add (ε-DP);
    - with ρ-zCDP spends and no (ε, δ) ones: ε-DP counts as ε²/2 and ρ's add (ρ-zCDP);
    - with (ε, δ) spends and no zCDP ones: ε-DP counts as (ε, 0) and both add ((ε, δ)-DP);
    - with both: the zCDP part is added as ρ and stated as (ε(Σρ, δ), δ)-DP at ``delta`` (the δ a
      release stated its ρ at; Canonne, Kamath & Steinke 2020), then everything adds by basic
      composition — :func:`total_as`'s rules under an (ε, δ) cap whose δ is Σδ_i + ``delta``.

    >>> composed_total([PureDP(0.5), ApproxDP(2.5, 1e-9)])
    ApproxDP(epsilon=3.0, delta=1e-09)
    >>> composed_total([PureDP(1.0), ZCDP(0.5)])
    ZCDP(rho=1.0)
    """
    budgets = list(budgets)
    kinds = {type(b) for b in budgets}
    if not budgets or LocalDP in kinds:
        raise BudgetError("a composed DP total needs DP spends only", "keep local guarantees apart")
    if kinds == {PureDP}:
        return total_as(PureDP(1.0), budgets)
    if ApproxDP not in kinds:
        return total_as(ZCDP(1.0), budgets)
    spent_delta = sum(b.delta for b in budgets if isinstance(b, ApproxDP))
    if ZCDP not in kinds:
        return total_as(ApproxDP(1.0, 0.5), budgets)  # (the cap's amounts are not used: only its definition)
    if delta is None or not spent_delta + delta < 1:
        return None
    return total_as(ApproxDP(1.0, spent_delta + delta), budgets)


def relate(budget: Budget, spent: Relation | None, target: Relation) -> Budget:
    """``budget``, spent under the relation ``spent``, as a guarantee under ``target``.

    Parameters
    ----------
    budget
        The spend, in its own definition.
    spent
        The relation it was spent under; None when the ledger did not record it (a ledger written
        before relations were kept), which is taken as the worst case (see Notes).
    target
        The relation of the cap it counts against.

    Returns
    -------
    Budget
        The spend's guarantee under ``target``, in its own definition.

    Raises
    ------
    BudgetError
        When no group-privacy factor covers the step: substitute → add/remove, and an unrecorded
        relation under an add/remove cap.

    Notes
    -----
    Group privacy for ``k`` neighbour steps (``k`` from :func:`dipsy.privacy.relation.group_factor`:
    add/remove → substitute ``k = 2``; θ_f → θ_t ``k = ⌈θ_t/θ_f⌉``):

    - ε-DP ⇒ kε-DP (Dwork & Roth 2014, Thm 2.2);
    - ρ-zCDP ⇒ k²ρ-zCDP (Bun & Steinke 2016, Prop. 1.9);
    - (ε, δ)-DP ⇒ (kε, k e^{(k−1)ε} δ)-DP (Vadhan 2017, Lemma 2.2).

    An unrecorded relation may have been substitute (then nothing covers an add/remove step:
    refused) or add/remove of any θ (then a substitution is ``k = 2`` steps, the largest factor
    any relation needs): under a substitute cap it counts twice, by the rules above.

    >>> relate(PureDP(1.0), None, SUBSTITUTE), relate(ZCDP(0.1), individual(3), SUBSTITUTE)
    (PureDP(epsilon=2.0), ZCDP(rho=0.4))
    """
    if spent is None:
        if target.kind != "substitute":
            raise BudgetError(
                "a spend recorded before the ledger kept neighbouring relations may have been made under substitution, "
                f"and cannot count against a cap under '{target}'",
                "state this data set's cap under substitution (the old spends count twice there), or use a new dataset id",
            )
        return group_privacy(budget, 2)
    return convert(budget, spent, target)


def total_under(cap: Budget, relation: Relation, spends: Iterable[tuple[Budget, Relation | None]]) -> Budget:
    """The total of ``spends`` (budget, relation spent under) in ``cap``'s definition under ``relation``.

    Each spend is moved into ``relation`` by :func:`relate` (group privacy, per spend), then all
    are added in ``cap``'s definition by :func:`total_as` (sequential composition under one
    relation). Raises :class:`BudgetError` when a spend can be neither converted nor expressed.

    >>> total_under(PureDP(2.0), SUBSTITUTE, [(PureDP(1.0), ADD_REMOVE), (PureDP(1.0), SUBSTITUTE)])
    PureDP(epsilon=3.0)
    """
    return total_as(cap, [relate(b, r, relation) for b, r in spends])


#: The conversion table's axes: relations, one spend of each definition, and the caps' definitions
#: (the amounts of a cap do not matter here; an (ε, δ) cap's δ does: zCDP converts at it).
TABLE_RELATIONS = (SUBSTITUTE, ADD_REMOVE, individual(3))
TABLE_SPENDS = (PureDP(1.0), ZCDP(0.1), ApproxDP(1.0, 1e-9))
TABLE_CAPS = (PureDP(100.0), ZCDP(100.0), ApproxDP(100.0, 1e-6))


@dataclass(frozen=True)
class ConversionRow:
    """What one spend counts as against one kind of cap: ``result``, or ``refusal`` (why not)."""

    spend_relation: Relation
    cap_relation: Relation
    k: int | None
    spend: Budget
    cap_definition: str
    result: Budget | None
    refusal: str | None = None

    def cell(self) -> str:
        """The result as the printed table shows it (refusals marked as in :data:`LEGEND`)."""
        return _short(self.result) if self.result is not None else f"refused {self.refusal}"


#: The marks of refused cells in the printed table.
LEGEND = {
    "†": "substitute → add/remove: no group-privacy factor (the release may publish n exactly)",
    "‡": "the spend cannot be expressed in the cap's definition ((ε, δ) or ρ under a pure cap; (ε, δ) under a zCDP cap)",
}


def conversion_table() -> list[ConversionRow]:
    """Every spend relation × cap relation × spend definition × cap definition, converted or refused.

    Computed by :func:`total_under` itself, one spend at a time, against the caps of
    :data:`TABLE_CAPS` (an (ε, δ) cap at δ = 1e-6). Print it with :func:`format_conversion_table`.

    >>> [r.cell() for r in conversion_table()[27:30]]  # add/remove ε = 1 under substitute caps: k = 2
    ['ε = 2', 'ρ = 2', '(2, 0)']
    """
    rows = []
    for spent in TABLE_RELATIONS:
        for target in TABLE_RELATIONS:
            for spend in TABLE_SPENDS:
                for cap in TABLE_CAPS:
                    k = group_factor(spent, target)
                    try:
                        result, why = total_under(cap, target, [(spend, spent)]), None
                    except BudgetError:
                        result, why = None, "†" if k is None else "‡"
                    rows.append(ConversionRow(spent, target, k, spend, cap.definition, result, why))
    return rows


def format_conversion_table(rows: Iterable[ConversionRow] | None = None) -> str:
    """The conversion table in Markdown: a line per (spend relation, cap relation), a column per
    (spend, cap definition), then the legend of refusals.
    """
    rows = list(conversion_table() if rows is None else rows)
    names = {"pure-DP": "pure", "zCDP": "zCDP", "approximate-DP": "(ε, δ)"}
    columns = list(dict.fromkeys((r.spend, r.cap_definition) for r in rows))
    head = ["spent under", "cap under", "k"] + [f"{_short(spend)} → {names[cap]}" for spend, cap in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for pair in dict.fromkeys((r.spend_relation, r.cap_relation) for r in rows):
        cells = {(r.spend, r.cap_definition): r for r in rows if (r.spend_relation, r.cap_relation) == pair}
        k = next(iter(cells.values())).k
        lines.append(
            "| "
            + " | ".join([str(pair[0]), str(pair[1]), "—" if k is None else str(k)] + [cells[c].cell() for c in columns])
            + " |"
        )
    lines += ["", "(ε, δ) caps at δ = 1e-6: zCDP converts at the cap's δ (CKS 2020)."]
    lines += [f"{mark} {text}" for mark, text in LEGEND.items()]
    return "\n".join(lines)


def _short(b: Budget) -> str:
    if isinstance(b, ApproxDP):
        return f"({b.epsilon:.4g}, {b.delta:.4g})"
    return f"ρ = {b.rho:.4g}" if isinstance(b, ZCDP) else f"ε = {_epsilon(b):.4g}"


def parse_cap(text: str | float | Budget) -> Budget:
    """A cap from the command line: ``"2"`` (ε-DP), ``"2,1e-6"`` ((ε, δ)-DP), ``"rho=0.5"`` (zCDP), or
    ``"local=8"`` (the cap of a data set's local-guarantee releases: their ε_x may add up to 8).

    >>> parse_cap("2,1e-6"), parse_cap("rho=0.5"), parse_cap(3), parse_cap("local=8")
    (ApproxDP(epsilon=2.0, delta=1e-06), ZCDP(rho=0.5), PureDP(epsilon=3.0), LocalDP(epsilon=8.0))
    """
    if isinstance(text, Budget):
        return text
    if not isinstance(text, str):
        return PureDP(positive("budget cap", text, "--budget-cap"))
    match = re.fullmatch(r"\s*(rho|local)\s*=\s*(\S+)\s*", text)
    if match and match.group(1) == "local":
        return LocalDP(positive("local cap ε", match.group(2), "--budget-cap"))
    if match:
        return ZCDP(positive("budget cap ρ", match.group(2), "--budget-cap"))
    parts = text.split(",")
    if len(parts) == 2:
        return ApproxDP(positive("budget cap ε", parts[0], "--budget-cap"), _delta(parts[1]))
    if len(parts) == 1:
        return PureDP(positive("budget cap", parts[0], "--budget-cap"))
    raise DipsyError(f"cannot read the budget cap {text!r}", "write it as 2 (ε), 2,1e-6 (ε, δ), rho=0.5 or local=8")


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
