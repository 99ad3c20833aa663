"""Declared analyses: the regressions a data steward expects the release to support.

A domain's top-level ``analyses:`` list names the questions analysts will ask of a release, each a
regression written in dipsy's formula grammar (:mod:`dipsy.formula`, read by a parser and never
run as Python) and, optionally, its model::

    analyses:
      - formula: Expenditure ~ Income + C(UrbanRural)      # model: ols (a numeric response)
      - formula: UrbanRural ~ Income + C(Race)             # model: logit (a two-category response)
      - {formula: "np.log(Income) ~ C(Race)", model: ols}

``model`` is ``ols`` or ``logit``; without it, a logit when the response is a column of two
categories (a categorical or ordinal column with two, or an integer column of two values), else
OLS. A logit models the *second* of the response's two categories (the domain's order) against the
first. ``dipsy evaluate`` fits every declared analysis to the original and to each synthetic set
and compares them term by term (:mod:`dipsy.evaluation.regressions`); a domain without analyses
gets default models chosen from the domain alone.

Checks, when the domain loads (each a :class:`~dipsy.errors.DomainError` naming the analysis and
the fix): a formula the grammar cannot read, a column the domain does not list, a model that is
neither ``ols`` nor ``logit``, a logit whose response is not a column of two categories, OLS of a
categorical response, and arithmetic (``I()``, ``log()``) on a categorical column.

Privacy
-------
An analysis is public input, like the categories and bounds it names: declared from public
knowledge (the analyses a survey is published for), never read off the confidential data. It
spends nothing by itself. It says which comparisons the evaluation (which reads the confidential
original, for the steward's eyes) reports first, and a marginal method that honours it measures the
marginals it needs first, at a share of the budget the release states
(:mod:`dipsy.methods.marginals.declared`): a choice made from public input, like any other
measurement of a plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import DipsyError, DomainError
from ..formula import Column as FormulaColumn
from ..formula import Expression, Formula, Function, Negative, Operation, parse
from .columns import Column

#: The fields of an analysis in a domain file.
FIELDS = ("formula", "model")
#: The models an analysis may name.
MODELS = ("ols", "logit")
#: How an analysis is written, for the fix of a malformed one.
SYNTAX = (
    "write each analysis as '- formula: y ~ x1 + C(x2)' with an optional 'model: ols' or 'model: logit' "
    "(see 'Declared analyses' in docs/guides/domain.md)"
)


@dataclass(frozen=True)
class Analysis:
    """A regression declared in the domain: ``formula`` (dipsy's grammar) and ``model`` (``"ols"``,
    ``"logit"``, or None: chosen from the response by :meth:`model_for`).

    The same declaration steers the evaluation (which models ``dipsy evaluate`` compares) and can
    steer what a marginal method measures (:attr:`columns`: the columns the analysis needs together).

    >>> a = Analysis.from_dict({"formula": "Expenditure ~ Income + C(UrbanRural)"})
    >>> a.columns, a.response, a.to_dict()
    (('Expenditure', 'Income', 'UrbanRural'), 'Expenditure', {'formula': 'Expenditure ~ Income + C(UrbanRural)'})
    >>> Analysis("y ~ x", "probit")
    Traceback (most recent call last):
    ...
    dipsy.errors.DomainError: analysis 'y ~ x' has model 'probit'; write model: ols or model: logit (or leave it out: logit for a response of two categories, else ols)
    """

    formula: str
    model: str | None = None
    parsed: Formula = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"analysis {self.formula!r}" if isinstance(self.formula, str) else "an analysis"
        if not isinstance(self.formula, str) or not self.formula.strip():
            raise DomainError(f"{where} has no formula text", SYNTAX)
        if self.model is not None and self.model not in MODELS:
            raise DomainError(
                f"{where} has model {self.model!r}",
                "write model: ols or model: logit (or leave it out: logit for a response of two categories, else ols)",
            )
        try:
            parsed = parse(self.formula)
        except DipsyError as e:
            raise DomainError(f"{where}: {e.problem}", e.fix) from None
        object.__setattr__(self, "parsed", parsed)

    # -- the file's form --------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, spec: Any, index: int | None = None) -> Analysis:
        """An analysis from its entry in a domain file: ``{formula: ..., model: ...}``, or the
        formula alone as text."""
        where = f"analysis {index}" if index is not None else "an analysis"
        if isinstance(spec, str):
            spec = {"formula": spec}
        if not isinstance(spec, Mapping):
            raise DomainError(f"{where} is a {type(spec).__name__}, not a mapping", SYNTAX)
        unknown = [str(k) for k in spec if k not in FIELDS]
        if unknown:
            raise DomainError(f"{where} has unknown field(s) {', '.join(map(repr, unknown))}", SYNTAX)
        formula, model = spec.get("formula"), spec.get("model")
        if not isinstance(formula, str) or not formula.strip():
            raise DomainError(f"{where} has no formula (text such as 'y ~ x1 + C(x2)')", SYNTAX)
        if model is not None and not isinstance(model, str):
            raise DomainError(f"{where} ({formula!r}) has model {model!r}", "write model: ols or model: logit")
        try:
            return cls(formula.strip(), model)
        except DomainError as e:
            own = f"analysis {formula.strip()!r}"
            problem = e.problem.replace(own, f"{where} ({formula.strip()!r})", 1) if own in e.problem else f"{where}: {e.problem}"
            raise DomainError(problem, e.fix) from None

    def to_dict(self) -> dict[str, Any]:
        """The analysis's entry in a domain file (``model`` only when declared)."""
        return {"formula": self.formula} | ({"model": self.model} if self.model is not None else {})

    # -- what it names ----------------------------------------------------------------------------

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the formula names, the response's first, each once, in the order written."""
        found: list[str] = []
        for factor in (self.parsed.response, *(f for t in self.parsed.terms for f in t.factors)):
            for name in _names(factor.expression):
                if name not in found:
                    found.append(name)
        return tuple(found)

    @property
    def response(self) -> str:
        """The response's column (the first the response names)."""
        return _names(self.parsed.response.expression)[0]

    def model_for(self, columns: Mapping[str, Column]) -> str:
        """The model: the declared one, else a logit for a response of two categories, else OLS."""
        return chosen_model(self.parsed, columns, self.model)

    def check(self, columns: Mapping[str, Column], where: str | None = None) -> None:
        """Refuse an analysis the domain cannot carry (see the module's docstring)."""
        where = where or f"analysis {self.formula!r}"
        absent = [c for c in self.columns if c not in columns]
        if absent:
            shown = ", ".join(list(columns)[:8]) + (", ..." if len(columns) > 8 else "")
            raise DomainError(
                f"{where} names the column(s) {', '.join(map(repr, absent))}, which the domain does not list",
                f'name columns of the domain ({shown}), quoting an odd name as Q("name"), or remove the analysis',
            )
        for factor in (self.parsed.response, *(f for t in self.parsed.terms for f in t.factors)):
            if isinstance(factor.expression, FormulaColumn):
                continue
            for name in _names(factor.expression):
                if columns[name].is_categorical:
                    raise DomainError(
                        f"{where}: {factor.name} computes with {name!r}, which the domain declares {columns[name].kind}",
                        f"arithmetic and functions take integer or numeric columns; for a categorical one write C({name})",
                    )
        response = columns[self.response]
        bare = isinstance(self.parsed.response.expression, FormulaColumn)
        model = self.model_for(columns)
        if model == "logit" and not (bare and two_categories(response)):
            what = (
                f"has {len(response.levels)} categories"
                if response.is_categorical
                else f"is {response.kind}" + ("" if bare else f" (and the response is {self.parsed.response.name})")
            )
            raise DomainError(
                f"{where}: a logit models one of two categories, and the response {self.response!r} {what}",
                "respond with a column of two categories, or write model: ols for a numeric response",
            )
        if model == "ols" and response.is_categorical:
            raise DomainError(
                f"{where}: OLS needs a numeric response, and {self.response!r} is {response.kind}",
                "respond with an integer or numeric column, or with a column of two categories and model: logit "
                "(one category against the rest: a 0/1 integer column)",
            )

    def text(self, columns: Mapping[str, Column]) -> str:
        """The analysis in words: its formula and model (``Expenditure ~ Income (ols)``)."""
        return f"{self.formula} ({self.model_for(columns)})"


def chosen_model(formula: Formula, columns: Mapping[str, Column], model: str | None = None) -> str:
    """``model`` when given; else a logit when the response is a column (bare or ``C()``) of two
    categories (:func:`two_categories`), else OLS."""
    if model is not None:
        return model
    e = formula.response.expression
    return "logit" if isinstance(e, FormulaColumn) and e.name in columns and two_categories(columns[e.name]) else "ols"


def two_categories(column: Column) -> bool:
    """Whether a column holds two values a logit can model one against the other: a categorical or
    ordinal column of two categories, or an integer column without bins of two values.

    >>> two_categories(Column("x", "categorical", categories=("no", "yes")))
    True
    >>> two_categories(Column("x", "integer", lower=0, upper=1)), two_categories(Column("x", "integer", lower=0, upper=2))
    (True, False)
    """
    if column.is_categorical:
        return len(column.levels) == 2
    if column.kind == "integer" and column.bins is None:
        lower, upper = column.bounds
        return float(upper) - float(lower) == 1
    return False


def _names(e: Expression) -> list[str]:
    """The columns an expression names, in the order written."""
    if isinstance(e, FormulaColumn):
        return [e.name]
    if isinstance(e, Negative):
        return _names(e.operand)
    if isinstance(e, Function):
        return _names(e.argument)
    if isinstance(e, Operation):
        return _names(e.left) + [n for n in _names(e.right) if n not in _names(e.left)]
    return []


def check_analyses(analyses: Any, columns: Mapping[str, Column]) -> None:
    """Refuse analyses that are not a tuple of :class:`Analysis`, one declared twice, or one the
    columns cannot carry (:meth:`Analysis.check`)."""
    if not isinstance(analyses, tuple) or not all(isinstance(a, Analysis) for a in analyses):
        raise DomainError("the domain's analyses are not a tuple of Analysis", "build them with Analysis.from_dict")
    seen: list[tuple[str, str | None]] = []
    for i, a in enumerate(analyses, start=1):
        key = (a.formula, a.model)
        if key in seen:
            raise DomainError(f"analysis {i} ({a.formula!r}) is declared twice", "give each analysis once")
        seen.append(key)
        a.check(columns, f"analysis {i} ({a.formula!r})")


def declared_pairs(analyses: Any) -> tuple[tuple[str, str], ...]:
    """The two-way marginals the declared ``analyses`` need: each analysis's response with each
    column its terms name (a slope of y on x is a function of the y × x table given the rest), in
    the order declared, each pair once. Public: a function of the domain alone.

    >>> declared_pairs([Analysis("y ~ a + C(b)"), Analysis("y ~ b + I(a * c)")])
    (('y', 'a'), ('y', 'b'), ('y', 'c'))
    """
    pairs: list[tuple[str, str]] = []
    for a in analyses:
        for x in a.columns[1:]:
            if x != a.response and (a.response, x) not in pairs and (x, a.response) not in pairs:
                pairs.append((a.response, x))
    return tuple(pairs)


__all__ = ["Analysis", "check_analyses", "chosen_model", "declared_pairs", "two_categories"]
